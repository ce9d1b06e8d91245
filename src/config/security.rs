//! Who may connect, in Kafka's keys: each SASL listener's mechanisms
//! (`sasl.enabled.mechanisms`, or `listener.name.<l>.sasl.enabled.mechanisms`), PLAIN's users
//! from the listener's JAAS entry (`listener.name.<l>.plain.sasl.jaas.config`), and how this
//! broker logs in on a SASL inter-broker listener (`sasl.mechanism.inter.broker.protocol`
//! with the `username` and `password` of that listener's entry for the mechanism). SCRAM's
//! users are not here: they live in ZooKeeper (`/config/users/<user>`). Each SSL and SASL_SSL
//! listener's TLS settings (`tls`), which on the inter-broker listener are also the broker's
//! own when it dials another.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::tls;
use super::{ConfigError, Listeners, Props};
use crate::security::jaas::{self, JaasConfig};
use crate::security::tls::TlsSettings;
use crate::security::{ClientLogin, Mechanism};

/// How one SASL listener authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslListener {
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users and their passwords (a secret; never logged).
    pub plain_users: PlainUsers,
}

/// PLAIN's users from a JAAS entry; its `Debug` shows the names only.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PlainUsers(pub BTreeMap<String, String>);

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Security {
    /// The SASL settings of each listener whose protocol is SASL_PLAINTEXT (by name).
    pub sasl: BTreeMap<String, Arc<SaslListener>>,
    /// The TLS settings of each SSL and SASL_SSL listener (by name).
    pub tls: BTreeMap<String, TlsSettings>,
    /// How this broker authenticates when it dials another's inter-broker listener.
    pub inter_broker_login: ClientLogin,
    /// ACLs, when `authorizer.class.name` turns them on.
    pub authorizer: Option<AuthorizerConfig>,
    /// `connections.max.reauth.ms` when positive: how long a SASL login lasts (KIP-368).
    pub max_reauth: Option<std::time::Duration>,
}

/// `super.users` and `allow.everyone.if.no.acl.found`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthorizerConfig {
    pub super_users: Vec<String>,
    pub allow_if_no_acl: bool,
}

/// The authorizer classes Kafka 2.x names for ZooKeeper-kept ACLs.
const AUTHORIZERS: [&str; 2] = [
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
];

fn authorizer(p: &mut Props) -> Result<Option<AuthorizerConfig>, ConfigError> {
    let class = p.get::<String>("authorizer.class.name")?;
    let supers = p.get::<String>("super.users")?;
    let allow_if_no_acl = p.get::<bool>("allow.everyone.if.no.acl.found")?;
    if class.is_empty() {
        return Ok(None);
    }
    if !AUTHORIZERS.contains(&class.as_str()) {
        return Err(ConfigError(format!(
            "`authorizer.class.name` is {class}; gregor serves {}",
            AUTHORIZERS.join(" (or ") + ")"
        )));
    }
    let mut super_users = Vec::new();
    for s in supers.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        match s.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {
                super_users.push(s.to_owned())
            }
            _ => {
                return Err(ConfigError(format!(
                    "`super.users` names `{s}`, which is not a principal (`User:admin`)"
                )));
            }
        }
    }
    Ok(Some(AuthorizerConfig {
        super_users,
        allow_if_no_acl,
    }))
}

impl Security {
    pub fn listener(&self, name: &str) -> Option<&Arc<SaslListener>> {
        self.sasl.get(name)
    }

    /// The TLS settings this broker dials other brokers with, when the inter-broker listener
    /// is a TLS one.
    pub fn inter_broker_tls(&self, inter_broker: &str) -> Option<&TlsSettings> {
        self.tls.get(inter_broker)
    }
}

fn jaas_key(listener: &str, mech: Mechanism) -> String {
    format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_lowercase(),
        mech.name().to_lowercase()
    )
}

fn mechanisms(key: &str, text: &str) -> Result<Vec<Mechanism>, ConfigError> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = Mechanism::from_name(&name.to_uppercase()).ok_or_else(|| {
            ConfigError(format!(
                "`{key}` names {name}, which gregor does not serve (it serves {})",
                Mechanism::ALL.map(Mechanism::name).join(", ")
            ))
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(ConfigError(format!("`{key}` names no mechanism")));
    }
    Ok(out)
}

pub(super) fn read(p: &mut Props, listeners: &Listeners) -> Result<Security, ConfigError> {
    let global = p.get::<String>("sasl.enabled.mechanisms")?;
    let inter_mech = p.get::<String>("sasl.mechanism.inter.broker.protocol")?;
    let global_ssl = tls::read_global(p)?;
    let authorizer = authorizer(p)?;
    let reauth_ms: u64 = p.get("connections.max.reauth.ms")?;
    let mut per_listener: BTreeMap<String, BTreeMap<&'static str, String>> = BTreeMap::new();
    for (listener, key, value) in p.take_listener_keys() {
        let full = format!("listener.name.{}.{key}", listener.to_lowercase());
        match listeners.protocols.get(&listener).map(String::as_str) {
            None => {
                return Err(ConfigError(format!(
                    "`{full}` names listener {listener}, which is not in `listeners`"
                )));
            }
            Some(proto) if key.starts_with("ssl.") && !proto.ends_with("SSL") => {
                return Err(ConfigError(format!(
                    "`{full}`: listener {listener} is {proto}, which has no TLS"
                )));
            }
            Some(proto) if !key.starts_with("ssl.") && !proto.starts_with("SASL_") => {
                return Err(ConfigError(format!(
                    "`{full}`: listener {listener} is {proto}, which has no SASL"
                )));
            }
            Some(_) => {}
        }
        per_listener.entry(listener).or_default().insert(key, value);
    }
    let mut security = Security {
        authorizer,
        max_reauth: (reauth_ms > 0).then(|| std::time::Duration::from_millis(reauth_ms)),
        ..Default::default()
    };
    let mut entries: BTreeMap<(String, Mechanism), JaasConfig> = BTreeMap::new();
    for (name, proto) in &listeners.protocols {
        let own = per_listener.remove(name).unwrap_or_default();
        if proto.ends_with("SSL") {
            security
                .tls
                .insert(name.clone(), tls::settings(name, &own, &global_ssl)?);
        }
        if !proto.starts_with("SASL_") {
            continue;
        }
        let mechs = match own.get("sasl.enabled.mechanisms") {
            Some(text) => {
                let key = format!(
                    "listener.name.{}.sasl.enabled.mechanisms",
                    name.to_lowercase()
                );
                mechanisms(&key, text)?
            }
            None => mechanisms("sasl.enabled.mechanisms", &global)?,
        };
        for m in Mechanism::ALL {
            let key = jaas_key(name, m);
            let suffix = key
                .rsplit_once(&format!("{}.", name.to_lowercase()))
                .map(|x| x.1);
            let Some(text) = suffix.and_then(|s| own.get(s)) else {
                continue;
            };
            let entry = jaas::parse(&key, text).map_err(ConfigError)?;
            let want = match m {
                Mechanism::Plain => jaas::PLAIN_MODULE,
                Mechanism::Scram(_) => jaas::SCRAM_MODULE,
            };
            if entry.module != want {
                return Err(ConfigError(format!(
                    "`{key}` names login module {}; {} needs {want}",
                    entry.module,
                    m.name()
                )));
            }
            entries.insert((name.clone(), m), entry);
        }
        let plain_users = match entries.get(&(name.clone(), Mechanism::Plain)) {
            Some(e) => e.plain_users(),
            None if mechs.contains(&Mechanism::Plain) => {
                return Err(ConfigError(format!(
                    "listener {name} enables PLAIN, whose users `{}` must give",
                    jaas_key(name, Mechanism::Plain)
                )));
            }
            None => BTreeMap::new(),
        };
        security.sasl.insert(
            name.clone(),
            Arc::new(SaslListener {
                mechanisms: mechs,
                plain_users: PlainUsers(plain_users),
            }),
        );
    }
    let inter = &listeners.inter_broker;
    if let Some(l) = security.sasl.get(inter) {
        let key = "sasl.mechanism.inter.broker.protocol";
        let m = Mechanism::from_name(&inter_mech).ok_or_else(|| {
            ConfigError(format!(
                "`{key}` is {inter_mech}, which gregor does not serve; the inter-broker listener {inter} needs one of {}",
                Mechanism::ALL.map(Mechanism::name).join(", ")
            ))
        })?;
        if !l.mechanisms.contains(&m) {
            return Err(ConfigError(format!(
                "`{key}` is {inter_mech}, which the inter-broker listener {inter} does not enable"
            )));
        }
        let (user, password) = entries
            .get(&(inter.clone(), m))
            .and_then(JaasConfig::login)
            .ok_or_else(|| {
                ConfigError(format!(
                    "the broker's own login on {inter} needs `username` and `password` in `{}`",
                    jaas_key(inter, m)
                ))
            })?;
        security.inter_broker_login = ClientLogin::Sasl {
            mechanism: m,
            user,
            password,
        };
    }
    Ok(security)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::ScramMechanism;

    fn read_from(pairs: &[(&str, &str)]) -> Result<Security, ConfigError> {
        let mut p = Props::of(pairs);
        let l = super::super::listeners::read(&mut p)?;
        read(&mut p, &l)
    }

    const PLAIN_USERS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-pw\" user_admin=\"admin-pw\" user_alice=\"alice-pw\";";

    #[test]
    fn a_sasl_listener_in_kafkas_keys() {
        let s = read_from(&[
            ("listeners", "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093"),
            ("inter.broker.listener.name", "SASL_PLAINTEXT"),
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                PLAIN_USERS,
            ),
            (
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            ),
        ])
        .unwrap();
        let l = s.listener("SASL_PLAINTEXT").unwrap();
        assert_eq!(
            l.mechanisms,
            [Mechanism::Plain, Mechanism::Scram(ScramMechanism::Sha512)]
        );
        assert_eq!(l.plain_users.0["alice"], "alice-pw");
        assert!(s.listener("PLAINTEXT").is_none());
        assert_eq!(
            s.inter_broker_login,
            ClientLogin::Sasl {
                mechanism: Mechanism::Plain,
                user: "admin".into(),
                password: "admin-pw".into()
            }
        );
        assert!(!format!("{s:?}").contains("-pw"));
        // A listener's own list wins.
        let s = read_from(&[
            ("listeners", "SASL_PLAINTEXT://:9093"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "SCRAM-SHA-256"),
            ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256"),
            (
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"b\" password=\"c\";",
            ),
        ])
        .unwrap();
        assert_eq!(
            s.listener("SASL_PLAINTEXT").unwrap().mechanisms,
            [Mechanism::Scram(ScramMechanism::Sha256)]
        );
    }

    #[test]
    fn mistakes_are_named() {
        let sasl = ("listeners", "SASL_PLAINTEXT://:9093");
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[sasl], "GSSAPI, which gregor does not serve"),
            (
                &[sasl, ("sasl.enabled.mechanisms", "PLAIN")],
                "enables PLAIN",
            ),
            (
                &[
                    sasl,
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
                ],
                "does not enable",
            ),
            (
                &[
                    sasl,
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256"),
                ],
                "needs `username` and `password`",
            ),
            (
                &[
                    ("listeners", "PLAINTEXT://:9092"),
                    ("listener.name.plaintext.sasl.enabled.mechanisms", "PLAIN"),
                ],
                "has no SASL",
            ),
            (
                &[
                    sasl,
                    ("listener.name.other.sasl.enabled.mechanisms", "PLAIN"),
                ],
                "not in `listeners`",
            ),
            (
                &[
                    sasl,
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    (
                        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required user_a=\"secret\";",
                    ),
                ],
                "needs org.apache.kafka.common.security.plain.PlainLoginModule",
            ),
        ];
        for (pairs, expect) in cases {
            let e = read_from(pairs).unwrap_err();
            assert!(e.0.contains(expect), "{pairs:?}: {e}");
            assert!(!e.0.contains("secret"), "{e}");
        }
        // An unknown per-listener key is refused as any unknown key is.
        assert!(
            Props::new([("listener.name.a.ssl.nonsense".to_string(), "x".to_string())].into())
                .is_err()
        );
    }
}
