//! Named listeners (KIP-103) in Kafka's formats: `listeners=CLIENT://host:port,REPLICATION://…`,
//! `advertised.listeners` by the same names, `listener.security.protocol.map=CLIENT:PLAINTEXT,…`
//! and `inter.broker.listener.name` (or Kafka's older `security.inter.broker.protocol`).
//! Every protocol Kafka knows is served: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL.

use std::collections::BTreeMap;

use super::{ConfigError, Props};

/// The security protocols Kafka knows.
const PROTOCOLS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// One named endpoint: where a listener binds, or what it registers for others to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    /// 0 binds a free port (tests); the bound port is what gets registered.
    pub port: u16,
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.name, self.host, self.port)
    }
}

/// The broker's listeners, resolved and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listeners {
    /// What to bind, in the order configured.
    pub bind: Vec<Listener>,
    /// What to register, one per bound listener (same order and names); a listener left out
    /// of `advertised.listeners` registers its bound address.
    pub advertised: Vec<Listener>,
    /// The listener brokers and the controller dial each other on.
    pub inter_broker: String,
    /// Each listener's security protocol, for the registration and the authenticator.
    pub protocols: BTreeMap<String, String>,
}

impl Listeners {
    /// Whether broker-to-broker traffic has a listener of its own, so that requests only
    /// brokers send can be refused everywhere else.
    pub fn separate_inter_broker(&self) -> bool {
        self.bind.len() > 1
    }
}

/// Reads the four listener keys, or 0.8's `host.name` + `port` (one PLAINTEXT listener).
pub(super) fn read(p: &mut Props) -> Result<Listeners, ConfigError> {
    let host_name = p.take("host.name")?;
    let port = p.take("port")?;
    let map = protocol_map(&p.get::<String>("listener.security.protocol.map")?)?;
    let bind = match p.take("listeners")? {
        Some(l) => parse_list("listeners", &l, &map)?,
        None => {
            let port = match port {
                None => 9092,
                Some(v) => v
                    .parse()
                    .map_err(|_| ConfigError(format!("bad value `{v}` for `port`")))?,
            };
            let host = host_name
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "127.0.0.1".into());
            vec![Listener {
                name: "PLAINTEXT".into(),
                host,
                port,
            }]
        }
    };
    let advertised_given = match p.take("advertised.listeners")? {
        Some(l) => parse_list("advertised.listeners", &l, &map)?,
        None => Vec::new(),
    };
    for a in &advertised_given {
        if !bind.iter().any(|b| b.name == a.name) {
            return Err(ConfigError(format!(
                "`advertised.listeners` names {}, which is not in `listeners`",
                a.name
            )));
        }
    }
    let advertised: Vec<Listener> = bind
        .iter()
        .map(|b| {
            advertised_given
                .iter()
                .find(|a| a.name == b.name)
                .unwrap_or(b)
                .clone()
        })
        .collect();
    let by_protocol = p.take("security.inter.broker.protocol")?;
    let named = p.take("inter.broker.listener.name")?;
    if named.is_some() && by_protocol.is_some() {
        return Err(ConfigError(
            "set `inter.broker.listener.name` or `security.inter.broker.protocol`, not both".into(),
        ));
    }
    let inter_broker = match named.or(by_protocol.map(|n| n.to_uppercase())) {
        Some(n) if bind.iter().any(|b| b.name == n) => n,
        Some(n) => {
            return Err(ConfigError(format!(
                "the inter-broker listener is {n}, which is not a listener in `listeners`"
            )));
        }
        // Kafka's default is the listener named PLAINTEXT; a single listener is unambiguous.
        None if bind.len() == 1 => bind[0].name.clone(),
        None if bind.iter().any(|b| b.name == "PLAINTEXT") => "PLAINTEXT".into(),
        None => {
            return Err(ConfigError(
                "several listeners and none named PLAINTEXT: set `inter.broker.listener.name`"
                    .into(),
            ));
        }
    };
    let protocols = bind
        .iter()
        .map(|b| (b.name.clone(), map[&b.name].clone()))
        .collect();
    let joined = |ls: &[Listener]| {
        ls.iter()
            .map(Listener::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    p.derived("listeners", joined(&bind));
    p.derived("advertised.listeners", joined(&advertised));
    p.derived("inter.broker.listener.name", inter_broker.clone());
    p.derived("security.inter.broker.protocol", map[&inter_broker].clone());
    Ok(Listeners {
        bind,
        advertised,
        inter_broker,
        protocols,
    })
}

/// `NAME:PROTOCOL,…`.
fn protocol_map(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let key = "listener.security.protocol.map";
    let mut map = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, proto) = entry
            .split_once(':')
            .ok_or_else(|| ConfigError(format!("`{key}` entry `{entry}` is not NAME:PROTOCOL")))?;
        let (name, proto) = (name.trim().to_uppercase(), proto.trim().to_uppercase());
        if !PROTOCOLS.contains(&proto.as_str()) {
            return Err(ConfigError(format!(
                "`{key}` maps {name} to {proto}, which is not a security protocol (one of {})",
                PROTOCOLS.join(", ")
            )));
        }
        if map.insert(name.clone(), proto).is_some() {
            return Err(ConfigError(format!("`{key}` names {name} twice")));
        }
    }
    Ok(map)
}

/// `NAME://host:port,…`: names unique and mapped to PLAINTEXT; an empty host is 127.0.0.1.
fn parse_list(
    key: &str,
    text: &str,
    map: &BTreeMap<String, String>,
) -> Result<Vec<Listener>, ConfigError> {
    let mut out: Vec<Listener> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, rest) = entry.split_once("://").ok_or_else(|| {
            ConfigError(format!("`{key}` entry `{entry}` is not NAME://host:port"))
        })?;
        let name = name.to_uppercase();
        map.get(&name).ok_or_else(|| {
            ConfigError(format!(
                "`{key}` names listener {name}, which `listener.security.protocol.map` does not map"
            ))
        })?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| ConfigError(format!("`{key}` entry `{entry}` has no port")))?;
        let port: u16 = port
            .parse()
            .map_err(|_| ConfigError(format!("bad port in `{key}` entry `{entry}`")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = if host.is_empty() { "127.0.0.1" } else { host };
        if out.iter().any(|l| l.name == name) {
            return Err(ConfigError(format!("`{key}` names listener {name} twice")));
        }
        if port != 0 && out.iter().any(|l| l.port == port && l.host == host) {
            return Err(ConfigError(format!(
                "`{key}` binds {host}:{port} for two listeners"
            )));
        }
        out.push(Listener {
            name,
            host: host.to_owned(),
            port,
        });
    }
    if out.is_empty() {
        return Err(ConfigError(format!("`{key}` names no listener")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_from(pairs: &[(&str, &str)]) -> Result<Listeners, ConfigError> {
        read(&mut Props::of(pairs))
    }

    #[test]
    fn named_listeners_in_kafkas_format() {
        let l = read_from(&[
            (
                "listeners",
                "CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
            ),
            (
                "listener.security.protocol.map",
                "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
            ),
            ("inter.broker.listener.name", "REPLICATION"),
            ("advertised.listeners", "CLIENT://broker1.example:19092"),
        ])
        .unwrap();
        assert_eq!(l.bind.len(), 2);
        assert_eq!(l.inter_broker, "REPLICATION");
        assert!(l.separate_inter_broker());
        assert_eq!(
            l.advertised[0].to_string(),
            "CLIENT://broker1.example:19092"
        );
        assert_eq!(l.advertised[1].to_string(), "REPLICATION://127.0.0.1:9093");
    }

    #[test]
    fn legacy_and_single_listeners() {
        let l = read_from(&[("port", "9999")]).unwrap();
        assert_eq!(l.bind[0].to_string(), "PLAINTEXT://127.0.0.1:9999");
        assert_eq!(l.inter_broker, "PLAINTEXT");
        assert!(!l.separate_inter_broker());
        let l = read_from(&[
            ("listeners", "EXTERNAL://:9092"),
            ("listener.security.protocol.map", "EXTERNAL:PLAINTEXT"),
        ])
        .unwrap();
        assert_eq!(l.inter_broker, "EXTERNAL");
        let l = read_from(&[
            ("listeners", "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093"),
            ("security.inter.broker.protocol", "sasl_plaintext"),
        ])
        .unwrap();
        assert_eq!(l.inter_broker, "SASL_PLAINTEXT");
        assert_eq!(l.protocols["SASL_PLAINTEXT"], "SASL_PLAINTEXT");
    }

    #[test]
    fn mistakes_are_named() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("listeners", "127.0.0.1:9092")], "NAME://host:port"),
            (&[("listeners", "CLIENT://127.0.0.1:9092")], "does not map"),
            (&[("listeners", "PLAINTEXT://a:1,PLAINTEXT://a:2")], "twice"),
            (
                &[
                    ("listeners", "PLAINTEXT://a:1"),
                    ("inter.broker.listener.name", "REPLICATION"),
                ],
                "REPLICATION, which is not a listener",
            ),
            (
                &[
                    ("listeners", "PLAINTEXT://a:1"),
                    ("inter.broker.listener.name", "PLAINTEXT"),
                    ("security.inter.broker.protocol", "PLAINTEXT"),
                ],
                "not both",
            ),
            (
                &[
                    ("listeners", "PLAINTEXT://a:1"),
                    ("advertised.listeners", "PLAINTEXT://b:2,EXTRA://c:3"),
                    (
                        "listener.security.protocol.map",
                        "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
                    ),
                ],
                "not in `listeners`",
            ),
            (
                &[
                    ("listeners", "A://a:1,B://a:2"),
                    ("listener.security.protocol.map", "A:PLAINTEXT,B:PLAINTEXT"),
                ],
                "inter.broker.listener.name",
            ),
            (
                &[("listener.security.protocol.map", "A:TLS")],
                "not a security protocol",
            ),
        ];
        for (pairs, expect) in cases {
            let e = read_from(pairs).unwrap_err();
            assert!(e.0.contains(expect), "{pairs:?}: {e}");
        }
    }
}
