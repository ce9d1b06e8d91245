//! Dynamic broker configuration (KIP-226): values an operator sets while the cluster runs, in
//! two layers over `server.properties` — one broker's (`/config/brokers/<id>`) and every
//! broker's (`/config/brokers/<default>`). Precedence is Kafka's `DynamicBrokerConfig`:
//! per-broker dynamic > cluster-default dynamic > `server.properties` > the built-in default.
//! The configuration a broker runs with is its file's map with the layers laid over it, read
//! by the same `BrokerConfig::from_map` as at start, so a dynamic value passes every check a
//! file's value does; only keys the table marks `dynamic` may be in a layer.

use std::collections::BTreeMap;

use super::keys::{self, Key};
use super::{BrokerConfig, ConfigError, Props};
use crate::security::password_encoder::{self as encoder, PasswordEncoder};

/// The dynamic layers: key → value as stored in ZooKeeper.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// `/config/brokers/<default>`.
    pub default: BTreeMap<String, String>,
    /// `/config/brokers/<id>` of this broker.
    pub broker: BTreeMap<String, String>,
}

/// Where a key's value comes from, Kafka's `ConfigSource` for a broker resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    DynamicBroker,
    DynamicDefault,
    Static,
    Default,
}

/// One value a key could take, from one source: DescribeConfigs' synonyms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: &'static str,
    pub value: Option<String>,
    pub source: Source,
}

/// The `ssl.` keys a listener's TLS is rebuilt from when they change (Kafka's
/// `SslConfigs.RECONFIGURABLE_CONFIGS`, and the two that allow a new certificate to name
/// itself differently): dynamic per listener and per broker only.
const LISTENER_SSL: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
];

/// Whether `name` is a per-listener key that may be set dynamically: a listener's TLS
/// keystore or truststore, or one of its JAAS entries.
pub fn dynamic_listener_key(name: &str) -> Option<&'static str> {
    let (_, key) = keys::listener_key(name)?;
    (LISTENER_SSL.contains(&key) || key.ends_with("sasl.jaas.config")).then_some(key)
}

/// Whether the value of a layer's key is a secret, stored encrypted.
pub fn is_secret(name: &str) -> bool {
    match keys::listener_key(name) {
        Some((_, key)) => keys::listener_key_is_secret(key),
        None => keys::find(name).is_some_and(|k| k.sensitive),
    }
}

/// Whether `value` may be stored for `name` in a dynamic layer: a key of the table that the
/// broker applies while it runs, or a listener's keystore, truststore or JAAS entry, with a
/// value its row accepts. The message names the key, in Kafka's words where it has them.
pub fn check(name: &str, value: &str) -> Result<(), String> {
    if let Some(key) = dynamic_listener_key(name) {
        return match keys::find(key) {
            Some(row) => row.check_as(name, value),
            None => Ok(()),
        };
    }
    let key = keys::find(name).ok_or_else(|| {
        if keys::listener_key(name).is_some() {
            format!("Cannot update these configs dynamically: {name}")
        } else {
            format!("unknown broker configuration key `{name}`")
        }
    })?;
    if LISTENER_SSL.contains(&name) {
        return Err(format!(
            "These security configs can be dynamically updated only per-listener using the listener prefix: {name}"
        ));
    }
    if !key.dynamic {
        return Err(format!("Cannot update these configs dynamically: {name}"));
    }
    key.check(value)
}

/// Whether `name` may be set for every broker at once, Kafka's rule: a listener's keystore,
/// truststore and JAAS entries belong to one broker.
pub fn check_default(name: &str) -> Result<(), String> {
    match dynamic_listener_key(name) {
        Some(_) => Err(format!(
            "Cannot update these configs at default cluster level, broker id must be specified: {name}"
        )),
        None => Ok(()),
    }
}

/// `password.encoder.*`: how secrets are stored; `None` without a secret.
pub(super) fn read_password_encoder(p: &mut Props) -> Result<Option<PasswordEncoder>, ConfigError> {
    let secret: String = p.get("password.encoder.secret")?;
    let old_secret: String = p.get("password.encoder.old.secret")?;
    let factory: String = p.get("password.encoder.keyfactory.algorithm")?;
    let _cipher: String = p.get("password.encoder.cipher.algorithm")?;
    let key_length: usize = p.get("password.encoder.key.length")?;
    let iterations: u32 = p.get("password.encoder.iterations")?;
    Ok((!secret.is_empty()).then(|| PasswordEncoder {
        secret,
        old_secret: Some(old_secret).filter(|s| !s.is_empty()),
        key_factory: if factory == encoder::PBKDF2_SHA256 {
            encoder::PBKDF2_SHA256
        } else {
            encoder::PBKDF2_SHA512
        },
        key_length,
        iterations,
    }))
}

/// `layer` as stored in ZooKeeper: each secret encrypted. A secret cannot be stored without
/// `password.encoder.secret`, as in Kafka.
pub fn encode_secrets(
    layer: &BTreeMap<String, String>,
    encoder: Option<&PasswordEncoder>,
) -> Result<BTreeMap<String, String>, String> {
    layer
        .iter()
        .map(|(k, v)| {
            if !is_secret(k) {
                return Ok((k.clone(), v.clone()));
            }
            let e = encoder.ok_or_else(|| {
                format!("`{k}` is a secret, stored encrypted with `password.encoder.secret`, which this broker does not have: set it in every broker's server.properties")
            })?;
            Ok((k.clone(), e.encode(v)))
        })
        .collect()
}

/// A layer as read from ZooKeeper with its secrets decrypted; a secret that cannot be (no
/// encoder, another secret, a damaged value) is left out with an error logged. The flag says
/// whether any was stored under `password.encoder.old.secret`.
pub fn decode_secrets(
    layer: BTreeMap<String, String>,
    encoder: Option<&PasswordEncoder>,
    what: &str,
) -> (BTreeMap<String, String>, bool) {
    let mut old = false;
    let decoded = layer
        .into_iter()
        .filter_map(|(k, v)| {
            if !is_secret(&k) {
                return Some((k, v));
            }
            let Some(e) = encoder else {
                log::error!(
                    "dynamic broker configuration {what}: `{k}` ignored: it is a secret and this broker has no `password.encoder.secret`"
                );
                return None;
            };
            match e.decode(&v) {
                Ok((plain, under_old)) => {
                    old |= under_old;
                    Some((k, plain))
                }
                Err(err) => {
                    log::error!("dynamic broker configuration {what}: `{k}` ignored: {}", err.0);
                    None
                }
            }
        })
        .collect();
    (decoded, old)
}

/// A layer without what `check` refuses (a value written to ZooKeeper by other means, or by a
/// version that allowed it), each dropped key logged.
pub fn accepted(layer: BTreeMap<String, String>, what: &str) -> BTreeMap<String, String> {
    layer
        .into_iter()
        .filter(|(k, v)| match check(k, v) {
            Ok(()) => true,
            Err(e) => {
                log::warn!("dynamic broker configuration {what}: ignored: {e}");
                false
            }
        })
        .collect()
}

impl BrokerConfig {
    /// This configuration with `layers` laid over its file; an error names the key whose
    /// value the whole does not accept.
    pub fn with_dynamic(&self, layers: &Layers) -> Result<BrokerConfig, ConfigError> {
        let mut map = self.file.clone();
        map.extend(layers.default.clone());
        map.extend(layers.broker.clone());
        let mut c = BrokerConfig::from_map(map)?;
        c.file = self.file.clone();
        c.dynamic = layers.clone();
        Ok(c)
    }

    /// Each value `key` could take, in Kafka's order: the per-broker layer, the defaults
    /// layer, the file, then the built-in defaults, and within each the key before the keys
    /// that stand in for it when it is unset (`log.retention.hours` for `log.retention.ms`).
    /// Secrets carry no value.
    pub fn synonyms(&self, key: &Key) -> Vec<Synonym> {
        let names = keys::synonyms(key.name);
        let mut out = Vec::new();
        let layers: [(&BTreeMap<String, String>, Source); 3] = [
            (&self.dynamic.broker, Source::DynamicBroker),
            (&self.dynamic.default, Source::DynamicDefault),
            (&self.file, Source::Static),
        ];
        for (map, source) in layers {
            for &name in &names {
                if let Some(v) = map.get(name) {
                    out.push(Synonym {
                        name,
                        value: Some(v.clone()).filter(|_| !key.sensitive),
                        source,
                    });
                }
            }
        }
        for &name in &names {
            let default = keys::find(name).and_then(Key::default_text);
            if let Some(v) = default.filter(|_| !key.sensitive) {
                out.push(Synonym {
                    name,
                    value: Some(v.to_owned()),
                    source: Source::Default,
                });
            }
        }
        out
    }

    /// Where `key`'s value comes from: the first of its synonyms.
    pub fn source(&self, key: &Key) -> Source {
        self.synonyms(key)
            .first()
            .map_or(Source::Default, |s| s.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_properties;

    fn file(extra: &str) -> BrokerConfig {
        let text =
            format!("broker.id=1\nlog.dirs=/tmp/x\nzookeeper.connect=127.0.0.1:2181/g\n{extra}");
        BrokerConfig::from_map(parse_properties(&text).unwrap()).unwrap()
    }

    fn layer(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_most_specific_layer_wins_and_names_its_source() {
        let c = file("log.retention.bytes=100\n");
        let retention_bytes = keys::find("log.retention.bytes").unwrap();
        assert_eq!(c.source(retention_bytes), Source::Static);
        let mut layers = Layers {
            default: layer(&[("log.retention.bytes", "200")]),
            broker: BTreeMap::new(),
        };
        let d = c.with_dynamic(&layers).unwrap();
        assert_eq!(d.log_retention_bytes, Some(200));
        assert_eq!(d.source(retention_bytes), Source::DynamicDefault);
        layers.broker = layer(&[("log.retention.bytes", "300")]);
        let b = c.with_dynamic(&layers).unwrap();
        assert_eq!(b.log_retention_bytes, Some(300));
        let s = b.synonyms(retention_bytes);
        let seen: Vec<_> = s.iter().map(|s| (s.value.as_deref(), s.source)).collect();
        assert_eq!(
            seen,
            [
                (Some("300"), Source::DynamicBroker),
                (Some("200"), Source::DynamicDefault),
                (Some("100"), Source::Static),
                (Some("-1"), Source::Default),
            ]
        );
        // Back to the file once the layers are empty.
        let s = b.with_dynamic(&Layers::default()).unwrap();
        assert_eq!(s.log_retention_bytes, Some(100));
    }

    #[test]
    fn secrets_are_stored_encrypted_and_only_with_an_encoder() {
        let c = file("password.encoder.secret=enc-secret\npassword.encoder.iterations=1024\n");
        let enc = c.password_encoder.as_ref().unwrap();
        let layer = layer(&[
            ("listener.name.ssl.ssl.key.password", "key-pass"),
            ("log.retention.bytes", "5"),
        ]);
        let stored = encode_secrets(&layer, Some(enc)).unwrap();
        assert_eq!(stored["log.retention.bytes"], "5");
        assert!(!stored["listener.name.ssl.ssl.key.password"].contains("key-pass"));
        assert_eq!(
            decode_secrets(stored.clone(), Some(enc), "t"),
            (layer.clone(), false)
        );
        // Without the secret nothing is stored, and a stored one is left out.
        let e = encode_secrets(&layer, None).unwrap_err();
        assert!(e.contains("password.encoder.secret"), "{e}");
        let (read, _) = decode_secrets(stored, None, "t");
        assert_eq!(read.keys().collect::<Vec<_>>(), ["log.retention.bytes"]);
        assert!(file("").password_encoder.is_none());
        assert!(format!("{enc:?}").find("enc-secret").is_none());
    }

    #[test]
    fn a_retention_in_hours_stands_in_for_milliseconds() {
        let c = file("");
        let ms = keys::find("log.retention.ms").unwrap();
        assert_eq!(c.source(ms), Source::Default);
        let d = c
            .with_dynamic(&Layers {
                default: layer(&[("log.retention.hours", "2")]),
                broker: BTreeMap::new(),
            })
            .unwrap();
        assert_eq!(d.log_retention, Some(std::time::Duration::from_secs(7200)));
        let s = d.synonyms(ms);
        assert_eq!(
            (s[0].name, s[0].source),
            ("log.retention.hours", Source::DynamicDefault)
        );
        assert_eq!(s.last().unwrap().value.as_deref(), Some("168"));
    }

    #[test]
    fn only_dynamic_keys_with_good_values_may_be_stored() {
        assert!(check("log.retention.bytes", "1000").is_ok());
        let e = check("broker.id", "7").unwrap_err();
        assert_eq!(e, "Cannot update these configs dynamically: broker.id");
        assert!(check("log.dirs", "/x").unwrap_err().contains("log.dirs"));
        assert!(
            check("log.retention.byte", "1")
                .unwrap_err()
                .contains("unknown")
        );
        let e = check("log.retention.bytes", "lots").unwrap_err();
        assert!(
            e.contains("log.retention.bytes") && e.contains("number"),
            "{e}"
        );
        // A listener's keystore per listener and per broker; unprefixed, Kafka's words.
        assert!(check("listener.name.ssl.ssl.keystore.location", "/k.pem").is_ok());
        assert!(check("listener.name.sasl_ssl.plain.sasl.jaas.config", "x").is_ok());
        let e = check("ssl.keystore.location", "/k.pem").unwrap_err();
        assert!(e.starts_with("These security configs can be dynamically updated only per-listener using the listener prefix"), "{e}");
        assert!(check("listener.name.ssl.ssl.client.auth", "required").is_err());
        let e = check_default("listener.name.ssl.ssl.key.password").unwrap_err();
        assert!(e.contains("broker id must be specified"), "{e}");
        assert!(check_default("log.retention.bytes").is_ok());
        let kept = accepted(
            layer(&[("broker.id", "3"), ("min.insync.replicas", "2")]),
            "t",
        );
        assert_eq!(kept, layer(&[("min.insync.replicas", "2")]));
    }
}
