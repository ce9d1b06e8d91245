//! The `ssl.` keys of an SSL or SASL_SSL listener, each set for all listeners or for one as
//! `listener.name.<l>.ssl.…` (the listener's own value first), read into `TlsSettings`.
//! Only PEM keystores and truststores are served (KIP-651); a JKS or PKCS12 setting is
//! refused by name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::keys;
use super::{ConfigError, Props};
use crate::security::tls::{ClientAuth, Pem, PrincipalRules, TlsSettings};

/// The global `ssl.` keys as the file gives them (unset ones absent).
pub(super) struct GlobalSsl(BTreeMap<&'static str, String>);

/// Reads every `ssl.` key of the table (so each is accounted for, set or not).
pub(super) fn read_global(p: &mut Props) -> Result<GlobalSsl, ConfigError> {
    let mut given = BTreeMap::new();
    for k in keys::BROKER.iter().filter(|k| k.name.starts_with("ssl.")) {
        if let Some(v) = p.take(k.name)? {
            given.insert(k.name, v);
        }
    }
    Ok(GlobalSsl(given))
}

/// One TLS listener's settings: `own` are its `listener.name.<l>.ssl.` values.
pub(super) fn settings(
    listener: &str,
    own: &BTreeMap<&'static str, String>,
    global: &GlobalSsl,
) -> Result<TlsSettings, ConfigError> {
    let prefix = format!("listener.name.{}.", listener.to_lowercase());
    // The listener's own value, else the global one, else the table's default; with the
    // name of the key it came from, for errors.
    let get = |k: &'static str| -> Result<(String, String), ConfigError> {
        let row = keys::find(k).expect("an ssl. key of the table");
        let (name, v) = match (own.get(k), global.0.get(k)) {
            (Some(v), _) => (format!("{prefix}{k}"), v.clone()),
            (None, Some(v)) => (k.to_owned(), v.clone()),
            (None, None) => (k.to_owned(), row.default_text().unwrap_or("").to_owned()),
        };
        row.check_as(&name, &v).map_err(ConfigError)?;
        Ok((name, v))
    };
    let set = |k: &'static str| -> Result<Option<String>, ConfigError> {
        Ok(Some(get(k)?.1).filter(|v| !v.is_empty()))
    };
    for k in ["ssl.keystore.password", "ssl.truststore.password"] {
        if set(k)?.is_some() {
            return Err(ConfigError(format!(
                "listener {listener}: `{}` is for JKS or PKCS12 stores, which gregor does not read; a PEM key's password is `ssl.key.password`",
                get(k)?.0
            )));
        }
    }
    let (key, chain) = match (
        set("ssl.keystore.location")?,
        set("ssl.keystore.key")?,
        set("ssl.keystore.certificate.chain")?,
    ) {
        (Some(path), None, None) => {
            let f = Pem::File(PathBuf::from(path));
            (f.clone(), f)
        }
        (None, Some(key), Some(chain)) => (Pem::Inline(key), Pem::Inline(chain)),
        (None, None, None) => {
            return Err(ConfigError(format!(
                "listener {listener} is TLS but has no keystore: set `ssl.keystore.location`, or `ssl.keystore.key` with `ssl.keystore.certificate.chain`"
            )));
        }
        _ => {
            return Err(ConfigError(format!(
                "listener {listener}: give `ssl.keystore.location`, or both `ssl.keystore.key` and `ssl.keystore.certificate.chain`, not a mix"
            )));
        }
    };
    let trust = match (
        set("ssl.truststore.location")?,
        set("ssl.truststore.certificates")?,
    ) {
        (Some(path), None) => Some(Pem::File(PathBuf::from(path))),
        (None, Some(text)) => Some(Pem::Inline(text)),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(ConfigError(format!(
                "listener {listener}: give `ssl.truststore.location` or `ssl.truststore.certificates`, not both"
            )));
        }
    };
    let client_auth = match get("ssl.client.auth")?.1.as_str() {
        "required" => ClientAuth::Required,
        "requested" => ClientAuth::Requested,
        _ => ClientAuth::None,
    };
    if client_auth != ClientAuth::None && trust.is_none() {
        return Err(ConfigError(format!(
            "listener {listener} asks clients for certificates (`ssl.client.auth`) but trusts none: set `ssl.truststore.location`"
        )));
    }
    let list = |k: &'static str| -> Result<Vec<String>, ConfigError> {
        Ok(get(k)?
            .1
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    };
    let protocols = list("ssl.enabled.protocols")?;
    if let Some(p) = protocols
        .iter()
        .find(|p| *p != "TLSv1.2" && *p != "TLSv1.3")
    {
        return Err(ConfigError(format!(
            "listener {listener}: `ssl.enabled.protocols` names {p}; gregor serves TLSv1.2 and TLSv1.3"
        )));
    }
    if protocols.is_empty() {
        return Err(ConfigError(format!(
            "listener {listener}: `ssl.enabled.protocols` is empty"
        )));
    }
    let (name, algorithm) = get("ssl.endpoint.identification.algorithm")?;
    let verify_hostname = match algorithm.to_lowercase().as_str() {
        "https" => true,
        "" => false,
        other => {
            return Err(ConfigError(format!(
                "`{name}` is `{other}`; it may be `https` or empty"
            )));
        }
    };
    Ok(TlsSettings {
        key: Some(key),
        chain: Some(chain),
        key_password: set("ssl.key.password")?,
        trust,
        client_auth,
        protocols,
        cipher_suites: list("ssl.cipher.suites")?,
        verify_hostname,
        principal_rules: PrincipalRules::parse(&get("ssl.principal.mapping.rules")?.1)
            .map_err(ConfigError)?,
        allow_dn_changes: get("ssl.allow.dn.changes")?.1 == "true",
        allow_san_changes: get("ssl.allow.san.changes")?.1 == "true",
    })
}

#[cfg(test)]
mod tests {
    use super::super::security::Security;
    use super::*;

    fn read_from(pairs: &[(&str, &str)]) -> Result<Security, ConfigError> {
        let mut p = Props::of(pairs);
        let l = super::super::listeners::read(&mut p)?;
        super::super::security::read(&mut p, &l)
    }

    #[test]
    fn a_listeners_own_ssl_keys_win_over_the_global_ones() {
        let s = read_from(&[
            (
                "listeners",
                "SSL://:9093,EXTERNAL://:9094,PLAINTEXT://:9092",
            ),
            (
                "listener.security.protocol.map",
                "SSL:SSL,EXTERNAL:SSL,PLAINTEXT:PLAINTEXT",
            ),
            ("ssl.keystore.location", "/etc/gregor/broker.pem"),
            ("ssl.key.password", "pw"),
            (
                "listener.name.external.ssl.keystore.location",
                "/etc/gregor/external.pem",
            ),
            ("listener.name.external.ssl.client.auth", "required"),
            ("ssl.truststore.location", "/etc/gregor/ca.pem"),
            ("ssl.enabled.protocols", "TLSv1.3"),
            ("ssl.endpoint.identification.algorithm", ""),
        ])
        .unwrap();
        let internal = &s.tls["SSL"];
        assert_eq!(
            internal.key,
            Some(Pem::File("/etc/gregor/broker.pem".into()))
        );
        assert_eq!(internal.client_auth, ClientAuth::None);
        assert_eq!(internal.protocols, ["TLSv1.3"]);
        assert!(!internal.verify_hostname);
        let external = &s.tls["EXTERNAL"];
        assert_eq!(
            external.chain,
            Some(Pem::File("/etc/gregor/external.pem".into()))
        );
        assert_eq!(external.client_auth, ClientAuth::Required);
        assert_eq!(external.key_password.as_deref(), Some("pw"));
        assert!(!s.tls.contains_key("PLAINTEXT"));
        assert!(!format!("{s:?}").contains("pw\""));
    }

    #[test]
    fn mistakes_are_named() {
        let ssl = ("listeners", "SSL://:9093");
        let ks = ("ssl.keystore.location", "/k.pem");
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[ssl], "has no keystore"),
            (
                &[ssl, ks, ("ssl.keystore.type", "JKS")],
                "must be one of PEM",
            ),
            (&[ssl, ks, ("ssl.keystore.password", "x")], "JKS or PKCS12"),
            (&[ssl, ("ssl.keystore.key", "k")], "not a mix"),
            (&[ssl, ks, ("ssl.client.auth", "required")], "trusts none"),
            (&[ssl, ks, ("ssl.enabled.protocols", "TLSv1.1")], "TLSv1.1"),
            (
                &[ssl, ks, ("ssl.endpoint.identification.algorithm", "ldap")],
                "`https` or empty",
            ),
            (
                &[ssl, ks, ("ssl.principal.mapping.rules", "RULE:x")],
                "RULE:pattern",
            ),
            (
                &[
                    ("listeners", "PLAINTEXT://:9092"),
                    ("listener.name.plaintext.ssl.keystore.location", "/k"),
                ],
                "has no TLS",
            ),
        ];
        for (pairs, expect) in cases {
            let e = read_from(pairs).unwrap_err();
            assert!(e.0.contains(expect), "{pairs:?}: {e}");
        }
    }
}
