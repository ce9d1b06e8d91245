//! Users' SCRAM credentials where Kafka keeps them in ZooKeeper mode: in the user's
//! configuration node, `/config/users/<user>` (the name sanitized as for quotas), one key per
//! mechanism —
//!
//! ```text
//! {"version":1,"config":{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=4096"}}
//! ```
//!
//! — announced to every broker with a `users/<user>` change notice.

use std::collections::BTreeMap;

use super::client_quotas::{desanitize, sanitize};
use super::{ZkClient, ZkError, entity_config};
use crate::security::{ScramCredential, ScramMechanism};

/// A user's credentials by mechanism.
pub type UserCredentials = BTreeMap<ScramMechanism, ScramCredential>;

fn node(user: &str) -> String {
    format!("/config/users/{}", sanitize(user))
}

fn credentials_of(user: &str, config: &BTreeMap<String, String>) -> UserCredentials {
    let mut out = BTreeMap::new();
    for m in ScramMechanism::ALL {
        if let Some(text) = config.get(m.name()) {
            match ScramCredential::parse(text) {
                Ok(c) => {
                    out.insert(m, c);
                }
                // The text is a credential, never shown; the reason says which part is bad.
                Err(e) => log::warn!("user {user}: unreadable {} credential: {e}", m.name()),
            }
        }
    }
    out
}

/// One user's credentials; empty when it has none.
pub fn read(zk: &ZkClient, user: &str) -> Result<UserCredentials, ZkError> {
    Ok(credentials_of(user, &entity_config::read(zk, &node(user))?))
}

/// Every user with a credential.
pub fn read_all(zk: &ZkClient) -> Result<BTreeMap<String, UserCredentials>, ZkError> {
    let users = match zk.get_children("/config/users") {
        Ok(u) => u,
        Err(ZkError::NoNode) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut out = BTreeMap::new();
    for u in users {
        if u == super::client_quotas::DEFAULT {
            continue;
        }
        let user = desanitize(&u);
        let creds = credentials_of(
            &user,
            &entity_config::read(zk, &format!("/config/users/{u}"))?,
        );
        if !creds.is_empty() {
            out.insert(user, creds);
        }
    }
    Ok(out)
}

/// Sets and removes credentials of one user (the node's other keys stay), and announces the
/// change to every broker. Returns the mechanisms of `delete` that the user did not have.
pub fn alter(
    zk: &ZkClient,
    user: &str,
    set: &[(ScramMechanism, ScramCredential)],
    delete: &[ScramMechanism],
) -> Result<Vec<ScramMechanism>, ZkError> {
    let missing = entity_config::update(zk, &node(user), |config| {
        let mut missing = Vec::new();
        for m in delete {
            if config.remove(m.name()).is_none() {
                missing.push(*m);
            }
        }
        for (m, c) in set {
            config.insert(m.name().to_owned(), c.to_kafka_string());
        }
        missing
    })?;
    super::topic_config::notify(zk, &format!("users/{}", sanitize(user)))?;
    Ok(missing)
}

/// Whether a change notice's `entity_path` names a user's own node (not a user's client).
pub fn is_user_path(entity_path: &str) -> bool {
    entity_path
        .strip_prefix("users/")
        .is_some_and(|rest| !rest.contains('/'))
}
