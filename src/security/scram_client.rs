//! The client side of SCRAM, for gregor's own clients and its brokers' inter-broker
//! connections.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use subtle::ConstantTimeEq;

use super::scram::{ScramMechanism, attributes, escape_name, random_bytes};

/// The client side, for gregor's own clients and its brokers' inter-broker connections.
pub struct ScramClient {
    mech: ScramMechanism,
    user: String,
    password: String,
    client_nonce: String,
    /// The server signature to expect, once the final message is sent.
    expect: Option<Vec<u8>>,
}

impl ScramClient {
    pub fn new(mech: ScramMechanism, user: &str, password: &str) -> ScramClient {
        ScramClient {
            mech,
            user: user.to_owned(),
            password: password.to_owned(),
            client_nonce: B64.encode(random_bytes(18)),
            expect: None,
        }
    }

    pub(crate) fn client_first_bare(&self) -> String {
        format!("n={},r={}", escape_name(&self.user), self.client_nonce)
    }

    pub fn first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare()).into_bytes()
    }

    /// The client-final message answering the server-first one.
    pub fn last(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(server_first).map_err(|_| "server-first not UTF-8")?;
        let attrs = attributes(text).map_err(|e| e.reason)?;
        let (nonce, salt, iterations) = match attrs.as_slice() {
            [("r", r), ("s", s), ("i", i), ..] => (*r, *s, *i),
            _ => return Err("malformed SCRAM server-first message".into()),
        };
        if !nonce.starts_with(&self.client_nonce) {
            return Err("the server's nonce does not extend ours".into());
        }
        let salt = B64.decode(salt).map_err(|_| "salt is not base64")?;
        let iterations: i32 = iterations.parse().map_err(|_| "bad iteration count")?;
        self.mech.check_iterations(iterations)?;
        let salted = self
            .mech
            .salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = self.mech.hmac(&salted, b"Client Key");
        let stored_key = self.mech.hash(&client_key);
        let without_proof = format!("c={},r={nonce}", B64.encode("n,,"));
        let auth = format!("{},{text},{without_proof}", self.client_first_bare());
        let signature = self.mech.hmac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = self.mech.hmac(&salted, b"Server Key");
        self.expect = Some(self.mech.hmac(&server_key, auth.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server proves it knows the credential too.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final).map_err(|_| "server-final not UTF-8")?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!("the server refused: {e}"));
        }
        let v = text
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v.split(',').next().unwrap_or("")).ok())
            .ok_or("malformed SCRAM server-final message")?;
        match &self.expect {
            Some(e) if bool::from(e.ct_eq(&v)) => Ok(()),
            _ => Err("the server's signature is wrong".into()),
        }
    }
}
