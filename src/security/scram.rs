//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them (KIP-84): no
//! SASLprep, no channel binding, user names with `,` and `=` escaped as `=2C` and `=3D`,
//! 4096 to 16384 iterations, and credentials kept as Kafka's `ScramCredentialUtils` writes
//! them: `salt=…,stored_key=…,server_key=…,iterations=4096` (standard base64).
//!
//! The server checks the client's proof itself: it recovers the client key from the proof
//! and the stored key's signature, hashes it, and compares the hash with the stored key in
//! constant time (`scram_server`); `scram_client` is the other side. Nothing here does I/O;
//! the caller moves the tokens.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The two SCRAM mechanisms, with the codes of Kafka's `ScramMechanism` (the user-credential
/// APIs carry them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.code() == code)
    }

    pub(super) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    pub(super) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes a key of any length, so neither `new_from_slice` can fail.
        match self {
            ScramMechanism::Sha256 => {
                let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = <Hmac<Sha512> as KeyInit>::new_from_slice(key).expect("any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// Hi(password, salt, i) of RFC 5802: PBKDF2 with this mechanism's HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let rounds = iterations.max(1) as u32;
        match self {
            ScramMechanism::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, &mut out);
                out
            }
            ScramMechanism::Sha512 => {
                let mut out = vec![0; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, rounds, &mut out);
                out
            }
        }
    }

    /// Why `iterations` is not acceptable for a credential, if it is not.
    pub fn check_iterations(self, iterations: i32) -> Result<(), String> {
        if iterations < MIN_ITERATIONS {
            Err(format!(
                "Too few iterations: {iterations} (at least {MIN_ITERATIONS})"
            ))
        } else if iterations > MAX_ITERATIONS {
            Err(format!(
                "Too many iterations: {iterations} (at most {MAX_ITERATIONS})"
            ))
        } else {
            Ok(())
        }
    }
}

/// What the broker keeps of a password: never the password, nor anything a client could
/// replay (the stored key is a hash of the client key).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScramCredential(iterations={})", self.iterations)
    }
}

impl ScramCredential {
    /// From a salted password (what AlterUserScramCredentials carries).
    pub fn from_salted_password(
        mech: ScramMechanism,
        salt: &[u8],
        salted: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = mech.hmac(salted, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mech.hash(&client_key),
            server_key: mech.hmac(salted, b"Server Key"),
            iterations,
        }
    }

    /// From a password, with a fresh random salt.
    pub fn from_password(mech: ScramMechanism, password: &str, iterations: i32) -> ScramCredential {
        let salt = random_bytes(24);
        let salted = mech.salted_password(password.as_bytes(), &salt, iterations);
        ScramCredential::from_salted_password(mech, &salt, &salted, iterations)
    }

    /// Kafka's text form, as `/config/users/<user>` holds it.
    pub fn to_kafka_string(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key),
            self.iterations
        )
    }

    pub fn parse(text: &str) -> Result<ScramCredential, String> {
        let mut fields = std::collections::BTreeMap::new();
        for part in text.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| "a SCRAM credential field is not key=value".to_owned())?;
            fields.insert(k, v);
        }
        let bytes = |k: &str| -> Result<Vec<u8>, String> {
            let v = fields
                .get(k)
                .ok_or_else(|| format!("the SCRAM credential has no {k}"))?;
            B64.decode(v)
                .map_err(|_| format!("the credential's {k} is not base64"))
        };
        let iterations = fields
            .get("iterations")
            .and_then(|i| i.parse().ok())
            .ok_or_else(|| "the SCRAM credential has no iterations".to_owned())?;
        Ok(ScramCredential {
            salt: bytes("salt")?,
            stored_key: bytes("stored_key")?,
            server_key: bytes("server_key")?,
            iterations,
        })
    }
}

/// `n` random bytes from the operating system.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0; n];
    getrandom::fill(&mut b).expect("the operating system's random source");
    b
}

/// A SCRAM user name: `=2C` is `,` and `=3D` is `=`; any other `=` is malformed.
pub fn unescape_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

pub fn escape_name(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// Why an authentication failed: `reason` for the broker's log (never a secret), and the
/// message the client is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub reason: String,
}

impl Refused {
    pub(super) fn new(reason: impl Into<String>) -> Refused {
        Refused {
            reason: reason.into(),
        }
    }
}

/// A step of a server exchange.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this and wait for the client's next token.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; send this last token.
    Done { token: Vec<u8>, user: String },
}

/// `key=value` attributes of a SCRAM message, in order.
pub(super) fn attributes(msg: &str) -> Result<Vec<(&str, &str)>, Refused> {
    msg.split(',')
        .map(|a| {
            a.split_once('=')
                .filter(|(k, _)| k.len() == 1)
                .ok_or_else(|| Refused::new("malformed SCRAM message"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_credential_text_round_trips() {
        let c = ScramCredential::from_password(ScramMechanism::Sha512, "pw", 8192);
        let text = c.to_kafka_string();
        assert!(text.starts_with("salt=") && text.ends_with(",iterations=8192"));
        assert_eq!(ScramCredential::parse(&text).unwrap(), c);
        assert!(ScramCredential::parse("salt=x").is_err());
        assert!(!format!("{c:?}").contains(&B64.encode(&c.stored_key)));
    }

    #[test]
    fn names_escape_as_rfc5802_says() {
        assert_eq!(escape_name("a,b=c"), "a=2Cb=3Dc");
        assert_eq!(unescape_name("a=2Cb=3Dc").unwrap(), "a,b=c");
        assert_eq!(unescape_name("a=2"), None);
        assert_eq!(unescape_name("a=41"), None);
    }
}
