//! The server side of SCRAM (RFC 5802): client-first → server-first → client-final →
//! server-final, checking the client's proof against the stored key in constant time.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use subtle::ConstantTimeEq;

use super::scram::{
    Refused, ScramCredential, ScramMechanism, Step, attributes, random_bytes, unescape_name,
};

/// The server side of one SCRAM exchange: client-first → server-first → client-final →
/// server-final.
pub struct ScramServer {
    mech: ScramMechanism,
    state: ServerState,
}

enum ServerState {
    AwaitFirst,
    AwaitFinal {
        user: String,
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        credential: ScramCredential,
    },
    Finished,
}

impl ScramServer {
    pub fn new(mech: ScramMechanism) -> ScramServer {
        ScramServer {
            mech,
            state: ServerState::AwaitFirst,
        }
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mech
    }

    /// Takes the client's next token; `lookup` gives the credential of a user under this
    /// mechanism.
    pub fn step(
        &mut self,
        token: &[u8],
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
    ) -> Result<Step, Refused> {
        let msg =
            std::str::from_utf8(token).map_err(|_| Refused::new("SCRAM message not UTF-8"))?;
        match std::mem::replace(&mut self.state, ServerState::Finished) {
            ServerState::AwaitFirst => self.client_first(msg, lookup),
            ServerState::AwaitFinal {
                user,
                gs2_header,
                client_first_bare,
                server_first,
                nonce,
                credential,
            } => {
                let auth = Exchanged {
                    gs2_header,
                    client_first_bare,
                    server_first,
                    nonce,
                };
                self.client_final(msg, &auth, &credential)
                    .map(|token| Step::Done { token, user })
            }
            ServerState::Finished => Err(Refused::new("SCRAM exchange already finished")),
        }
    }

    fn client_first(
        &mut self,
        msg: &str,
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
    ) -> Result<Step, Refused> {
        // gs2-header: a channel-binding flag (`n`, or `y`: the client could but thinks we
        // cannot), an optional authorization id, then the bare message.
        let (flag, rest) = msg
            .split_once(',')
            .ok_or_else(|| Refused::new("malformed SCRAM client-first message"))?;
        let (authzid, bare) = rest
            .split_once(',')
            .ok_or_else(|| Refused::new("malformed SCRAM client-first message"))?;
        if flag != "n" && flag != "y" {
            return Err(Refused::new("SCRAM channel binding is not supported"));
        }
        let attrs = attributes(bare)?;
        let (user, nonce) = match attrs.as_slice() {
            [("n", user), ("r", nonce), extensions @ ..] => {
                // Delegation tokens (`tokenauth=true`) are not served.
                if extensions.iter().any(|(k, _)| *k == "tokenauth") {
                    return Err(Refused::new("delegation tokens are not supported"));
                }
                (*user, *nonce)
            }
            _ => return Err(Refused::new("malformed SCRAM client-first message")),
        };
        let user = unescape_name(user).ok_or_else(|| Refused::new("malformed SCRAM user name"))?;
        if nonce.is_empty() {
            return Err(Refused::new("empty SCRAM client nonce"));
        }
        if let Some(a) = authzid.strip_prefix("a=") {
            if unescape_name(a).as_deref() != Some(user.as_str()) {
                return Err(Refused::new(
                    "client requested an authorization id different from its user name",
                ));
            }
        } else if !authzid.is_empty() {
            return Err(Refused::new("malformed SCRAM authorization id"));
        }
        let credential = lookup(&user).ok_or_else(|| {
            Refused::new(format!(
                "no {} credential for user {user}",
                self.mech.name()
            ))
        })?;
        let nonce = format!("{nonce}{}", B64.encode(random_bytes(18)));
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let out = server_first.clone().into_bytes();
        self.state = ServerState::AwaitFinal {
            user,
            gs2_header: format!("{flag},{authzid},"),
            client_first_bare: bare.to_owned(),
            server_first,
            nonce,
            credential,
        };
        Ok(Step::Challenge(out))
    }

    fn client_final(
        &self,
        msg: &str,
        ex: &Exchanged,
        credential: &ScramCredential,
    ) -> Result<Vec<u8>, Refused> {
        let (without_proof, proof) = msg
            .rsplit_once(",p=")
            .ok_or_else(|| Refused::new("SCRAM client-final message has no proof"))?;
        let attrs = attributes(without_proof)?;
        let (binding, nonce) = match attrs.as_slice() {
            [("c", c), ("r", r), ..] => (*c, *r),
            _ => return Err(Refused::new("malformed SCRAM client-final message")),
        };
        if binding != B64.encode(&ex.gs2_header) {
            return Err(Refused::new(
                "SCRAM channel binding does not match the first message",
            ));
        }
        // RFC 5802 wants the server-first nonce echoed. librdkafka before 2.6 (Debian's kcat
        // among them) sends its own nonce in front of it, and Kafka accepts any final nonce
        // that ends with the server's; so does gregor. The proof still covers the message as
        // sent, and our random part is in it, so a replay is not possible.
        if !nonce.ends_with(&ex.nonce) {
            return Err(Refused::new("SCRAM nonce does not match"));
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| Refused::new("SCRAM proof is not base64"))?;
        let auth_message = format!(
            "{},{},{without_proof}",
            ex.client_first_bare, ex.server_first
        );
        let signature = self
            .mech
            .hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(Refused::new("invalid credentials"));
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        let computed = self.mech.hash(&client_key);
        if !bool::from(computed.ct_eq(&credential.stored_key)) {
            return Err(Refused::new("invalid credentials"));
        }
        let server_signature = self
            .mech
            .hmac(&credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

struct Exchanged {
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::scram_client::ScramClient;

    /// RFC 7677's example exchange (user "user", password "pencil").
    #[test]
    fn rfc7677_sha256_example_verifies_and_is_answered_with_its_signature() {
        let mech = ScramMechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = mech.salted_password(b"pencil", &salt, 4096);
        let cred = ScramCredential::from_salted_password(mech, &salt, &salted, 4096);
        let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let server = ScramServer {
            mech,
            state: ServerState::Finished,
        };
        let ex = Exchanged {
            gs2_header: "n,,".into(),
            client_first_bare: bare.into(),
            server_first: format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
            nonce: nonce.into(),
        };
        let last = format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        let answer = server.client_final(&last, &ex, &cred).unwrap();
        assert_eq!(
            answer,
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec()
        );
        // One bit of the proof changed: refused.
        let bad = format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVU=");
        assert_eq!(
            server.client_final(&bad, &ex, &cred).unwrap_err().reason,
            "invalid credentials"
        );
    }

    fn exchange(mech: ScramMechanism, stored_pw: &str, client_pw: &str) -> Result<String, String> {
        let cred = ScramCredential::from_password(mech, stored_pw, 4096);
        let lookup = |u: &str| (u == "a,b=c").then(|| cred.clone());
        let mut client = ScramClient::new(mech, "a,b=c", client_pw);
        let mut server = ScramServer::new(mech);
        let Step::Challenge(first) = server
            .step(&client.first(), &lookup)
            .map_err(|e| e.reason)?
        else {
            return Err("done too early".into());
        };
        let last = client.last(&first)?;
        match server.step(&last, &lookup).map_err(|e| e.reason)? {
            Step::Done { token, user } => client.verify(&token).map(|_| user),
            Step::Challenge(_) => Err("no end".into()),
        }
    }

    /// librdkafka before 2.6 puts its own nonce in front of the server's in the final
    /// message; Kafka accepts that, and so must we. A nonce without ours is refused.
    #[test]
    fn a_final_nonce_with_the_clients_prefixed_is_accepted_as_kafka_does() {
        let mech = ScramMechanism::Sha256;
        let cred = ScramCredential::from_password(mech, "pw", 4096);
        let lookup = |_: &str| Some(cred.clone());
        let mut client = ScramClient::new(mech, "u", "pw");
        for (prefix, ok) in [("", true), ("cnonce", true)] {
            let mut server = ScramServer::new(mech);
            let Step::Challenge(first) = server.step(&client.first(), &lookup).unwrap() else {
                panic!()
            };
            let text = String::from_utf8(first.clone()).unwrap();
            let nonce = text.split(',').next().unwrap().trim_start_matches("r=");
            let last = String::from_utf8(client.last(&first).unwrap()).unwrap();
            let last = last.replace(&format!("r={nonce}"), &format!("r={prefix}{nonce}"));
            // The proof covers the message as sent: recompute it over the altered message.
            let (without, _) = last.rsplit_once(",p=").unwrap();
            let salted = mech.salted_password(b"pw", &cred.salt, 4096);
            let client_key = mech.hmac(&salted, b"Client Key");
            let auth = format!("{},{text},{without}", client.client_first_bare());
            let sig = mech.hmac(&mech.hash(&client_key), auth.as_bytes());
            let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(k, s)| k ^ s).collect();
            let msg = format!("{without},p={}", B64.encode(proof));
            assert_eq!(server.step(msg.as_bytes(), &lookup).is_ok(), ok, "{prefix}");
        }
        let mut server = ScramServer::new(mech);
        let Step::Challenge(first) = server.step(&client.first(), &lookup).unwrap() else {
            panic!()
        };
        let last = String::from_utf8(client.last(&first).unwrap()).unwrap();
        let forged = last.replacen(",r=", ",r=x", 1);
        let cut = forged.rsplit_once(",p=").unwrap().0.len() - 3;
        let forged = format!("{}{}", &forged[..cut], &forged[cut + 1..]);
        assert!(server.step(forged.as_bytes(), &lookup).is_err());
    }

    #[test]
    fn both_mechanisms_authenticate_the_right_password_only() {
        for mech in ScramMechanism::ALL {
            assert_eq!(exchange(mech, "s3cret", "s3cret").unwrap(), "a,b=c");
            assert_eq!(
                exchange(mech, "s3cret", "guess").unwrap_err(),
                "invalid credentials"
            );
        }
    }

    #[test]
    fn malformed_client_first_messages_are_refused() {
        let cred = ScramCredential::from_password(ScramMechanism::Sha256, "pw", 4096);
        let lookup = |_: &str| Some(cred.clone());
        for msg in [
            "",
            "p=tls-unique,,n=u,r=x",
            "n,,r=x,n=u",
            "n,,n=u,r=",
            "n,,n=a=2,r=x",
            "n,a=other,n=u,r=x",
            "n,,n=u,r=x,tokenauth=true",
        ] {
            let mut s = ScramServer::new(ScramMechanism::Sha256);
            assert!(s.step(msg.as_bytes(), &lookup).is_err(), "{msg}");
        }
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert!(s.step(b"n,,n=nobody,r=x", &|_| None).is_err());
    }
}
