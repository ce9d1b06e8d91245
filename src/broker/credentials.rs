//! What the broker checks a SASL client against: SCRAM credentials read from ZooKeeper
//! (`zk::scram_credentials`) at start and again on every `users/<user>` change notice, and
//! each SASL listener's PLAIN users from its JAAS entry. A credential changed or deleted
//! through any broker is so in force on every broker within a ZooKeeper round trip, for the
//! next connection that authenticates (a connection already authenticated stays so, as in
//! Kafka without `connections.max.reauth.ms`).
//!
//! It also counts authentications per listener and mechanism, under the names of Kafka's
//! socket-server metrics.

use std::collections::{BTreeMap, HashMap};

use parking_lot::{Mutex, RwLock};
use prometheus::proto::MetricFamily;

use crate::config::security::SaslListener;
use crate::metrics::Family;
use crate::security::{Credentials, Mechanism, ScramCredential, ScramMechanism, plain_matches};
use crate::zk::scram_credentials::{self, UserCredentials};
use crate::zk::{ZkClient, ZkError};

#[derive(Default)]
pub struct CredentialCache {
    scram: RwLock<HashMap<String, UserCredentials>>,
    /// (listener, mechanism, succeeded) → count.
    outcomes: Mutex<BTreeMap<(String, &'static str, bool), u64>>,
}

impl CredentialCache {
    /// Reads every user's credentials again.
    pub fn reload(&self, zk: &ZkClient) -> Result<(), ZkError> {
        let all = scram_credentials::read_all(zk)?;
        *self.scram.write() = all.into_iter().collect();
        Ok(())
    }

    /// Takes one user's credentials as just written here, before the notice comes back.
    pub fn put_user(&self, user: &str, creds: UserCredentials) {
        let mut s = self.scram.write();
        if creds.is_empty() {
            s.remove(user);
        } else {
            s.insert(user.to_owned(), creds);
        }
    }

    pub fn scram(&self, user: &str, mech: ScramMechanism) -> Option<ScramCredential> {
        self.scram.read().get(user)?.get(&mech).cloned()
    }

    /// What a listener checks clients against.
    pub fn for_listener<'a>(&'a self, listener: &'a SaslListener) -> ListenerCredentials<'a> {
        ListenerCredentials {
            cache: self,
            listener,
        }
    }

    pub fn count(&self, listener: &str, mech: Mechanism, ok: bool) {
        *self
            .outcomes
            .lock()
            .entry((listener.to_owned(), mech.name(), ok))
            .or_default() += 1;
    }

    /// `kafka_server_socket_server_metrics_{successful,failed}_authentication_total`, with
    /// each TLS listener's failed handshakes (`tls_failures`) as the failures of mechanism
    /// `TLS`, as Kafka counts a failed SSL handshake a failed authentication.
    pub fn families(&self, out: &mut Vec<MetricFamily>, tls_failures: &[(String, u64)]) {
        let mut outcomes = self.outcomes.lock().clone();
        for (listener, n) in tls_failures {
            outcomes.insert((listener.clone(), "TLS", false), *n);
        }
        for (ok, name, help) in [
            (
                true,
                "kafka_server_socket_server_metrics_successful_authentication_total",
                "Successful SASL authentications, per listener and mechanism",
            ),
            (
                false,
                "kafka_server_socket_server_metrics_failed_authentication_total",
                "Failed SASL authentications, per listener and mechanism",
            ),
        ] {
            let mut f = Family::counter(name, help);
            let mut any = false;
            for ((listener, mech, _), n) in outcomes.iter().filter(|((_, _, o), _)| *o == ok) {
                f.add(&[("listener", listener), ("mechanism", mech)], *n as f64);
                any = true;
            }
            if any {
                out.push(f.done());
            }
        }
    }
}

pub struct ListenerCredentials<'a> {
    cache: &'a CredentialCache,
    listener: &'a SaslListener,
}

impl Credentials for ListenerCredentials<'_> {
    fn plain_matches(&self, user: &str, password: &[u8]) -> bool {
        plain_matches(&self.listener.plain_users.0, user, password)
    }

    fn scram(&self, user: &str, mech: ScramMechanism) -> Option<ScramCredential> {
        self.cache.scram(user, mech)
    }
}
