//! Authentication's parts that do no I/O: the SASL mechanisms gregor serves (PLAIN and
//! SCRAM-SHA-256/512, both sides of each exchange), Kafka's JAAS text, and who a connection
//! acts as (`Principal`). The network layer carries the tokens (`SaslHandshake`,
//! `SaslAuthenticate`); the broker keeps the credentials.

pub mod acl;
pub mod jaas;
pub mod password_encoder;
pub mod scram;
pub mod scram_client;
pub mod scram_server;
pub mod tls;

use std::collections::BTreeMap;

use subtle::ConstantTimeEq;

pub use scram::{Refused, ScramCredential, ScramMechanism, Step};

/// The user a connection acts as, as Kafka's `KafkaPrincipal` `User:<name>`; a connection
/// on a listener without SASL is `User:ANONYMOUS`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    pub name: String,
}

pub const ANONYMOUS: &str = "ANONYMOUS";

impl Principal {
    pub fn anonymous() -> Principal {
        Principal::user(ANONYMOUS)
    }

    pub fn user(name: &str) -> Principal {
        Principal {
            name: name.to_owned(),
        }
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "User:{}", self.name)
    }
}

/// A SASL mechanism gregor serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
}

impl Mechanism {
    pub const ALL: [Mechanism; 3] = [
        Mechanism::Plain,
        Mechanism::Scram(ScramMechanism::Sha256),
        Mechanism::Scram(ScramMechanism::Sha512),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(s) => s.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// How a client side authenticates: not at all, or with SASL as a user.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum ClientLogin {
    #[default]
    None,
    Sasl {
        mechanism: Mechanism,
        user: String,
        password: String,
    },
}

impl std::fmt::Debug for ClientLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientLogin::None => write!(f, "None"),
            // Never the password.
            ClientLogin::Sasl {
                mechanism, user, ..
            } => write!(f, "Sasl({} as {user})", mechanism.name()),
        }
    }
}

/// Where a server exchange finds the credentials it checks.
pub trait Credentials {
    /// PLAIN: whether `password` is `user`'s (compared in constant time).
    fn plain_matches(&self, user: &str, password: &[u8]) -> bool;
    /// SCRAM: the user's credential under `mech`.
    fn scram(&self, user: &str, mech: ScramMechanism) -> Option<ScramCredential>;
}

/// PLAIN's users from a JAAS entry: `user_<name>="<password>"`.
pub fn plain_matches(users: &BTreeMap<String, String>, user: &str, password: &[u8]) -> bool {
    users
        .get(user)
        .is_some_and(|p| bool::from(p.as_bytes().ct_eq(password)))
}

/// The server side of one authentication.
pub enum ServerExchange {
    Plain,
    /// Boxed: it holds the exchange's messages and the credential between the two steps.
    Scram(Box<scram_server::ScramServer>),
}

impl ServerExchange {
    pub fn new(m: Mechanism) -> ServerExchange {
        match m {
            Mechanism::Plain => ServerExchange::Plain,
            Mechanism::Scram(s) => {
                ServerExchange::Scram(Box::new(scram_server::ScramServer::new(s)))
            }
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        match self {
            ServerExchange::Plain => Mechanism::Plain,
            ServerExchange::Scram(s) => Mechanism::Scram(s.mechanism()),
        }
    }

    /// Takes the client's next token.
    pub fn step(&mut self, token: &[u8], creds: &dyn Credentials) -> Result<Step, Refused> {
        match self {
            ServerExchange::Plain => plain_step(token, creds),
            ServerExchange::Scram(s) => {
                let mech = s.mechanism();
                s.step(token, &|user| creds.scram(user, mech))
            }
        }
    }
}

/// PLAIN (RFC 4616): `[authzid] NUL authcid NUL password`, one token, answered empty.
fn plain_step(token: &[u8], creds: &dyn Credentials) -> Result<Step, Refused> {
    let mut parts = token.split(|b| *b == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused::from("malformed PLAIN token"));
    };
    let user = std::str::from_utf8(user).map_err(|_| Refused::from("PLAIN user not UTF-8"))?;
    if user.is_empty() {
        return Err(Refused::from("PLAIN token without a user name"));
    }
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return Err(Refused::from(
            "client requested an authorization id different from its user name",
        ));
    }
    if !creds.plain_matches(user, password) {
        return Err(Refused::from("invalid credentials"));
    }
    Ok(Step::Done {
        token: Vec::new(),
        user: user.to_owned(),
    })
}

/// Where a connection on a SASL listener is in its authentication (KIP-43, KIP-152).
#[derive(Default)]
pub enum SaslSession {
    /// Waiting for SaslHandshake.
    #[default]
    AwaitHandshake,
    /// A mechanism is chosen; its tokens come wrapped in SaslAuthenticate requests, or bare
    /// and size-prefixed after a v0 handshake (`raw`).
    Exchanging { exchange: ServerExchange, raw: bool },
}

impl std::fmt::Debug for SaslSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaslSession::AwaitHandshake => write!(f, "AwaitHandshake"),
            SaslSession::Exchanging { exchange, raw } => {
                write!(f, "Exchanging({}, raw={raw})", exchange.mechanism().name())
            }
        }
    }
}

/// The client side of one authentication (gregor's own clients, inter-broker connections).
pub enum ClientExchange {
    Plain { user: String, password: String },
    Scram(scram_client::ScramClient),
}

impl ClientExchange {
    pub fn new(m: Mechanism, user: &str, password: &str) -> ClientExchange {
        match m {
            Mechanism::Plain => ClientExchange::Plain {
                user: user.to_owned(),
                password: password.to_owned(),
            },
            Mechanism::Scram(s) => {
                ClientExchange::Scram(scram_client::ScramClient::new(s, user, password))
            }
        }
    }

    /// The first token.
    pub fn first(&self) -> Vec<u8> {
        match self {
            ClientExchange::Plain { user, password } => {
                let mut t = vec![0];
                t.extend_from_slice(user.as_bytes());
                t.push(0);
                t.extend_from_slice(password.as_bytes());
                t
            }
            ClientExchange::Scram(s) => s.first(),
        }
    }

    /// The answer to the server's `n`th token (n = 1, 2, …): `Some(next token)`, or `None`
    /// when the exchange is complete on this side.
    pub fn answer(&mut self, n: usize, server: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match (self, n) {
            (ClientExchange::Plain { .. }, 1) => Ok(None),
            (ClientExchange::Scram(s), 1) => s.last(server).map(Some),
            (ClientExchange::Scram(s), 2) => s.verify(server).map(|_| None),
            _ => Err("the server sent more than the mechanism has".into()),
        }
    }
}

impl From<&str> for Refused {
    fn from(reason: &str) -> Refused {
        Refused {
            reason: reason.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Users(BTreeMap<String, String>);

    impl Credentials for Users {
        fn plain_matches(&self, user: &str, password: &[u8]) -> bool {
            plain_matches(&self.0, user, password)
        }
        fn scram(&self, _: &str, _: ScramMechanism) -> Option<ScramCredential> {
            None
        }
    }

    #[test]
    fn plain_checks_the_password_and_the_authorization_id() {
        let users = Users([("alice".to_owned(), "pw".to_owned())].into());
        let step = |t: &[u8]| ServerExchange::new(Mechanism::Plain).step(t, &users);
        let ok = ClientExchange::new(Mechanism::Plain, "alice", "pw").first();
        assert_eq!(
            step(&ok).unwrap(),
            Step::Done {
                token: vec![],
                user: "alice".into()
            }
        );
        assert!(step(b"alice\0alice\0pw").is_ok());
        for bad in [
            &b"\0alice\0pX"[..],
            b"\0bob\0pw",
            b"bob\0alice\0pw",
            b"\0alice",
            b"\0alice\0pw\0x",
            b"\0\0pw",
        ] {
            assert!(step(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mechanisms_have_kafkas_names() {
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Some(m));
        }
        assert_eq!(Mechanism::from_name("GSSAPI"), None);
    }
}
