//! `--command-config FILE`: the client properties Kafka's tools read to reach a secured
//! listener — `security.protocol`; for SASL `sasl.mechanism` and `sasl.jaas.config` with the
//! login's `username` and `password`; for TLS `ssl.truststore.location` (PEM), and
//! `ssl.keystore.location` with `ssl.key.password` where the listener wants a client
//! certificate, and `ssl.endpoint.identification.algorithm`. Other client keys are ignored,
//! as they configure what gregor's tools do not have.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gregor::config::parse_properties;
use gregor::network::ClientSecurity;
use gregor::security::jaas;
use gregor::security::tls::{Pem, TlsSettings};
use gregor::security::{ClientLogin, Mechanism};

pub fn read(path: &Path) -> Result<ClientSecurity, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let props = parse_properties(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let login = login(&props)?;
    let tls = match props
        .get("security.protocol")
        .map(|p| p.to_uppercase())
        .as_deref()
    {
        Some("SSL" | "SASL_SSL") => Some(gregor::network::tls::client_config(&tls(&props))?),
        _ => None,
    };
    Ok(ClientSecurity { tls, login })
}

/// The client side's TLS settings.
fn tls(props: &BTreeMap<String, String>) -> TlsSettings {
    let file = |k: &str| {
        props
            .get(k)
            .filter(|v| !v.is_empty())
            .map(|v| Pem::File(PathBuf::from(v)))
    };
    let keystore = file("ssl.keystore.location");
    TlsSettings {
        key: keystore.clone(),
        chain: keystore,
        key_password: props.get("ssl.key.password").cloned(),
        trust: file("ssl.truststore.location"),
        protocols: vec!["TLSv1.2".into(), "TLSv1.3".into()],
        verify_hostname: props
            .get("ssl.endpoint.identification.algorithm")
            .is_none_or(|a| a.eq_ignore_ascii_case("https")),
        ..Default::default()
    }
}

fn login(props: &BTreeMap<String, String>) -> Result<ClientLogin, String> {
    let protocol = props
        .get("security.protocol")
        .map_or("PLAINTEXT".to_owned(), |p| p.to_uppercase());
    match protocol.as_str() {
        "PLAINTEXT" | "SSL" => return Ok(ClientLogin::None),
        "SASL_PLAINTEXT" | "SASL_SSL" => {}
        p => return Err(format!("security.protocol={p} is not a security protocol")),
    }
    let name = props.get("sasl.mechanism").map_or("GSSAPI", String::as_str);
    let mechanism = Mechanism::from_name(&name.to_uppercase()).ok_or_else(|| {
        format!("sasl.mechanism={name} is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
    })?;
    let text = props
        .get("sasl.jaas.config")
        .ok_or("SASL needs sasl.jaas.config with username and password")?;
    let (user, password) = jaas::parse("sasl.jaas.config", text)?
        .login()
        .ok_or("sasl.jaas.config needs username and password")?;
    Ok(ClientLogin::Sasl {
        mechanism,
        user,
        password,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kafkas_client_properties() {
        let props = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(login(&props(&[])).unwrap(), ClientLogin::None);
        let l = login(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"pw\";",
            ),
        ]))
        .unwrap();
        assert!(matches!(l, ClientLogin::Sasl { ref user, .. } if user == "admin"));
        assert!(
            login(&props(&[("security.protocol", "SASL_PLAINTEXT")]))
                .unwrap_err()
                .contains("GSSAPI")
        );
        assert!(
            login(&props(&[("security.protocol", "TLS")]))
                .unwrap_err()
                .contains("TLS")
        );
    }
}
