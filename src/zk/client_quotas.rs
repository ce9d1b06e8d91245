//! Client quotas in Kafka's ZooKeeper layout (KIP-55, KIP-612): one node per entity,
//! `{"version":1,"config":{"producer_byte_rate":"1048576"}}`, at
//!
//! - `/config/users/<user>/clients/<client-id>`, `/config/users/<user>`,
//! - `/config/clients/<client-id>`,
//! - `/config/ips/<ip>`,
//!
//! with `<default>` standing for "every other", user and client id URL-encoded as Kafka's
//! `Sanitizer` does, and a change announced as `{"version":2,"entity_path":"clients/slow"}`
//! under `/config/changes` (`topic_config::notify`), the notices every broker follows.

use std::collections::BTreeMap;

use super::entity_config::children;
use super::{ZkClient, entity_config};
use crate::zk::ZkError;

/// The name Kafka's layout gives the default entity of a kind.
pub const DEFAULT: &str = "<default>";

/// The quota keys per entity kind, as Kafka's `QuotaConfig` names them.
pub const CLIENT_KEYS: &[&str] = &[
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
];
pub const IP_KEYS: &[&str] = &["connection_creation_rate"];

/// One entity: a user, a client id, both, or an address; `Some(None)` is the kind's default.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QuotaEntity {
    pub user: Option<Option<String>>,
    pub client_id: Option<Option<String>>,
    pub ip: Option<Option<String>>,
}

impl QuotaEntity {
    /// From the (entity type, name) pairs of the admin APIs; the error says what is wrong
    /// with the combination.
    pub fn from_parts(parts: &[(String, Option<String>)]) -> Result<QuotaEntity, String> {
        let mut e = QuotaEntity::default();
        for (kind, name) in parts {
            let slot = match kind.as_str() {
                "user" => &mut e.user,
                "client-id" => &mut e.client_id,
                "ip" => &mut e.ip,
                other => return Err(format!("unknown quota entity type `{other}`")),
            };
            if slot.replace(name.clone()).is_some() {
                return Err(format!("entity type `{kind}` given twice"));
            }
        }
        if e.ip.is_some() && (e.user.is_some() || e.client_id.is_some()) {
            return Err("an ip entity cannot be combined with a user or a client id".into());
        }
        if e == QuotaEntity::default() {
            return Err("an entity needs a user, a client id or an ip".into());
        }
        if let Some(Some(ip)) = &e.ip
            && ip.parse::<std::net::IpAddr>().is_err()
        {
            return Err(format!("`{ip}` is not an IP address"));
        }
        Ok(e)
    }

    /// The (entity type, name) pairs, as the admin APIs answer them.
    pub fn parts(&self) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        for (kind, v) in [
            ("user", &self.user),
            ("client-id", &self.client_id),
            ("ip", &self.ip),
        ] {
            if let Some(name) = v {
                out.push((kind.to_owned(), name.clone()));
            }
        }
        out
    }

    /// The keys this kind of entity takes.
    pub fn keys(&self) -> &'static [&'static str] {
        if self.ip.is_some() {
            IP_KEYS
        } else {
            CLIENT_KEYS
        }
    }

    /// Its path under `/config`, which is also a change notice's `entity_path`.
    pub fn entity_path(&self) -> String {
        let name = |n: &Option<String>| n.as_deref().map_or(DEFAULT.to_owned(), sanitize);
        match (&self.user, &self.client_id, &self.ip) {
            (Some(u), Some(c), _) => format!("users/{}/clients/{}", name(u), name(c)),
            (Some(u), None, _) => format!("users/{}", name(u)),
            (None, Some(c), _) => format!("clients/{}", name(c)),
            (None, None, Some(ip)) => format!("ips/{}", ip.as_deref().unwrap_or(DEFAULT)),
            (None, None, None) => String::new(),
        }
    }
}

/// Kafka's `Sanitizer`: URL encoding where only letters, digits, `.`, `-` and `_` stay as they
/// are (a space is `%20`, `*` is `%2A`), so any user or client id is one path element.
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of `sanitize`; a name that is not valid percent-encoding is kept as it is.
pub fn desanitize(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| {
            std::str::from_utf8(h)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        });
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| name.to_owned())
}

fn from_path_name(n: &str) -> Option<String> {
    (n != DEFAULT).then(|| desanitize(n))
}

fn node(entity: &QuotaEntity) -> String {
    format!("/config/{}", entity.entity_path())
}

/// An entity's quotas; empty when it has none.
pub fn read(zk: &ZkClient, entity: &QuotaEntity) -> Result<BTreeMap<String, f64>, ZkError> {
    read_node(zk, &node(entity))
}

/// The node's quota keys (a user's node also holds its SCRAM credentials, which are not).
fn read_node(zk: &ZkClient, path: &str) -> Result<BTreeMap<String, f64>, ZkError> {
    Ok(entity_config::read(zk, path)?
        .into_iter()
        .filter(|(k, _)| is_quota_key(k))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
        .collect())
}

fn is_quota_key(k: &str) -> bool {
    CLIENT_KEYS.contains(&k) || IP_KEYS.contains(&k)
}

/// Writes (replacing) an entity's quotas, keeping the node's other keys, and announces the
/// change to every broker.
pub fn write(
    zk: &ZkClient,
    entity: &QuotaEntity,
    quotas: &BTreeMap<String, f64>,
) -> Result<(), ZkError> {
    entity_config::update(zk, &node(entity), |config| {
        config.retain(|k, _| !is_quota_key(k));
        config.extend(quotas.iter().map(|(k, v)| (k.clone(), v.to_string())));
    })?;
    super::topic_config::notify(zk, &entity.entity_path())
}

/// An entity and its quotas by key.
pub type Quotas = (QuotaEntity, BTreeMap<String, f64>);

/// Every entity with quotas, in path order.
pub fn read_all(zk: &ZkClient) -> Result<Vec<Quotas>, ZkError> {
    let mut out = Vec::new();
    let mut add = |entity: QuotaEntity, path: &str| -> Result<(), ZkError> {
        let quotas = read_node(zk, path)?;
        if !quotas.is_empty() {
            out.push((entity, quotas));
        }
        Ok(())
    };
    for c in children(zk, "/config/clients")? {
        let e = QuotaEntity {
            client_id: Some(from_path_name(&c)),
            ..Default::default()
        };
        add(e, &format!("/config/clients/{c}"))?;
    }
    for u in children(zk, "/config/users")? {
        let user = Some(from_path_name(&u));
        let e = QuotaEntity {
            user: user.clone(),
            ..Default::default()
        };
        add(e, &format!("/config/users/{u}"))?;
        for c in children(zk, &format!("/config/users/{u}/clients"))? {
            let e = QuotaEntity {
                user: user.clone(),
                client_id: Some(from_path_name(&c)),
                ..Default::default()
            };
            add(e, &format!("/config/users/{u}/clients/{c}"))?;
        }
    }
    for ip in children(zk, "/config/ips")? {
        let e = QuotaEntity {
            ip: Some((ip != DEFAULT).then_some(ip.clone())),
            ..Default::default()
        };
        add(e, &format!("/config/ips/{ip}"))?;
    }
    Ok(out)
}

/// Whether a change notice's `entity_path` names a quota entity.
pub fn is_quota_path(entity_path: &str) -> bool {
    ["users/", "clients/", "ips/"]
        .iter()
        .any(|p| entity_path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_as_kafka_does_and_back() {
        assert_eq!(sanitize("slow-client_1.a"), "slow-client_1.a");
        assert_eq!(sanitize("CN=a b*"), "CN%3Da%20b%2A");
        assert_eq!(desanitize("CN%3Da%20b%2A"), "CN=a b*");
        assert_eq!(desanitize("100%"), "100%");
    }

    #[test]
    fn entity_paths_follow_kafkas_layout() {
        let parts = |p: &[(&str, Option<&str>)]| {
            QuotaEntity::from_parts(
                &p.iter()
                    .map(|(k, v)| (k.to_string(), v.map(str::to_owned)))
                    .collect::<Vec<_>>(),
            )
        };
        let e = parts(&[("user", Some("alice")), ("client-id", None)]).unwrap();
        assert_eq!(e.entity_path(), "users/alice/clients/<default>");
        let e = parts(&[("client-id", Some("a b"))]).unwrap();
        assert_eq!(e.entity_path(), "clients/a%20b");
        assert_eq!(
            parts(&[("ip", None)]).unwrap().entity_path(),
            "ips/<default>"
        );
        assert!(parts(&[("ip", Some("nope"))]).unwrap_err().contains("nope"));
        assert!(
            parts(&[("ip", None), ("user", None)])
                .unwrap_err()
                .contains("ip")
        );
        assert!(parts(&[("group", None)]).unwrap_err().contains("group"));
        assert!(parts(&[]).is_err());
    }
}
