//! A listener's security settings changed while the broker runs (KIP-226): a TLS keystore
//! rotated with Kafka 4.4's own `kafka-configs` is what a new `openssl s_client` sees while
//! a connection opened before keeps its own, a keystore rewritten in place is read again when
//! it is set anew, a certificate naming another subject is refused, and a PLAIN listener's
//! JAAS entry gains a user kcat then logs in as. Secrets are stored encrypted with
//! `password.encoder.secret`: kazoo reads only their encrypted form, DescribeConfigs no value.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::certs::Certs;
use common::cluster::Cluster;
use common::dynamic::*;
use common::secure::kcat_as;
use common::{free_port, run_with_deadline, wait_until};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const DAVE: &str =
    r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_dave="dave-secret";"#;
const DAVE_AND_ERIN: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_dave="dave-secret" user_erin="erin-secret";"#;

/// One broker with a PLAINTEXT listener (the tools'), an SSL one and a SASL_PLAINTEXT one.
struct Listeners {
    c: Cluster,
    ssl: SocketAddr,
    sasl: SocketAddr,
    certs: Certs,
}

fn start(name: &str) -> Listeners {
    let certs = Certs::new();
    let keystore = certs.issue("broker", "/O=gregor/CN=broker", "ca", 30, Some("key-pass"));
    let (ssl, sasl) = (free_port(), free_port());
    let c = Cluster::start_prepared(
        name,
        1,
        &[
            ("ssl.keystore.location", &keystore),
            ("ssl.key.password", "key-pass"),
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN",
            ),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", DAVE),
            ("password.encoder.secret", "the-encoder-secret"),
        ],
        move |_| {
            vec![(
                "listeners".to_owned(),
                format!(
                    "PLAINTEXT://127.0.0.1:{{port}},SSL://127.0.0.1:{ssl},SASL_PLAINTEXT://127.0.0.1:{sasl}"
                ),
            )]
        },
        |_| {},
    );
    Listeners {
        c,
        ssl: SocketAddr::from(([127, 0, 0, 1], ssl)),
        sasl: SocketAddr::from(([127, 0, 0, 1], sasl)),
        certs,
    }
}

/// The certificate of `<name>.pem`, DER.
fn der(certs: &Certs, name: &str) -> Vec<u8> {
    CertificateDer::from_pem_file(certs.path(&format!("{name}.pem")))
        .unwrap()
        .to_vec()
}

/// The SHA-256 fingerprint of the certificate a new `openssl s_client` is served.
fn served_fingerprint(addr: SocketAddr) -> String {
    let script = format!(
        "openssl s_client -connect {addr} -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256"
    );
    let (_, out, _) = run_with_deadline(
        Command::new("bash").args(["-c", &script]),
        "",
        Duration::from_secs(30),
    );
    out.trim().to_owned()
}

fn fingerprint(certs: &Certs, name: &str) -> String {
    let path = certs.path(&format!("{name}.pem"));
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection trusting the test CA, handshake done.
fn tls_connect(certs: &Certs, addr: SocketAddr) -> TlsStream {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(certs.ca()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut s = rustls::StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    s
}

/// Sends ApiVersions v0 on `s` and reads the answer: whether it came, for correlation id 7.
fn api_versions_answered(s: &mut TlsStream) -> bool {
    let client = b"held";
    let mut body = vec![0, 18, 0, 0, 0, 0, 0, 7, 0, client.len() as u8];
    body.extend_from_slice(client);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    if s.write_all(&frame).and_then(|_| s.flush()).is_err() {
        return false;
    }
    let mut size = [0u8; 4];
    if s.read_exact(&mut size).is_err() {
        return false;
    }
    let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut answer).is_ok() && answer[..4] == [0, 0, 0, 7]
}

fn set_keystore(l: &Listeners, keystore: &str, password: &str) -> String {
    let pairs = format!(
        "listener.name.ssl.ssl.keystore.location={keystore},listener.name.ssl.ssl.key.password={password}"
    );
    add_config(&l.c, "1", &pairs)
}

#[test]
fn a_keystore_rotated_with_kafka_configs_is_served_to_new_connections_without_a_restart() {
    let mut l = start("dyn-tls");
    let held = &mut tls_connect(&l.certs, l.ssl);
    let first = held.conn.peer_certificates().unwrap()[0].to_vec();
    assert_eq!(first, der(&l.certs, "broker"));
    assert_eq!(served_fingerprint(l.ssl), fingerprint(&l.certs, "broker"));

    // The same subject with a new key under a new password.
    let rotated = l
        .certs
        .issue("rotated", "/O=gregor/CN=broker", "ca", 30, Some("new-pass"));
    let out = set_keystore(&l, &rotated, "new-pass");
    assert!(
        out.contains("Completed updating config for broker 1."),
        "{out}"
    );
    let want = fingerprint(&l.certs, "rotated");
    wait_until(
        Duration::from_secs(30),
        "the rotated certificate served",
        || served_fingerprint(l.ssl) == want,
    );
    // The connection opened before keeps going, on the certificate it started with.
    assert!(api_versions_answered(held));
    assert_eq!(held.conn.peer_certificates().unwrap()[0].to_vec(), first);

    // Stored in Kafka's layout, the password encrypted: kazoo sees no trace of it.
    let node = zk_node(&l.c, "/config/brokers/1");
    assert!(node.contains(&rotated), "{node}");
    assert!(!node.contains("new-pass"), "{node}");
    assert!(node.contains("encryptedPassword:"), "{node}");
    // Nor does DescribeConfigs: the key is there, sensitive, without a value.
    let key = "listener.name.ssl.ssl.key.password";
    let d = describe(&l.c, "1", &[key, "listener.name.ssl.ssl.keystore.location"]);
    assert_eq!(d[key]["value"], serde_json::Value::Null, "{d}");
    assert_eq!(d[key]["sensitive"], true, "{d}");
    assert_eq!(d[key]["source"], "DYNAMIC_BROKER_CONFIG", "{d}");
    assert_eq!(
        d["listener.name.ssl.ssl.keystore.location"]["value"], rotated,
        "{d}"
    );
    let out = configs(&l.c, &[&broker_args("1")[..], &["--describe"]].concat());
    assert!(
        out.contains("listener.name.ssl.ssl.key.password=null sensitive=true"),
        "{out}"
    );
    assert!(!l.c.log_of(1).contains("new-pass"));

    // A certificate for another subject is refused by name, and nothing is written.
    let other = l
        .certs
        .issue("other", "/O=gregor/CN=someone-else", "ca", 30, None);
    let said = add_config_refused(
        &l.c,
        "1",
        &format!("listener.name.ssl.ssl.keystore.location={other}"),
    );
    assert!(said.contains("DistinguishedName does not match"), "{said}");
    assert_eq!(zk_node(&l.c, "/config/brokers/1"), node);
    // A keystore is one broker's: not a cluster-wide default.
    let said = add_config_refused(
        &l.c,
        "",
        &format!("listener.name.ssl.ssl.keystore.location={rotated}"),
    );
    assert!(said.contains("broker id must be specified"), "{said}");

    // The keystore file rewritten in place and set again: read again, as Kafka does.
    let third = l
        .certs
        .issue("third", "/O=gregor/CN=broker", "ca", 30, Some("new-pass"));
    std::fs::copy(&third, &rotated).unwrap();
    set_keystore(&l, &rotated, "new-pass");
    let want = fingerprint(&l.certs, "third");
    wait_until(
        Duration::from_secs(30),
        "the rewritten keystore served",
        || served_fingerprint(l.ssl) == want,
    );

    // Kept across a restart, with `password.encoder.secret` changed meanwhile: the broker
    // reads its stored password with the old secret and stores it again under the new one...
    let before = zk_node(&l.c, "/config/brokers/1");
    l.c.terminate(1);
    l.c.set_config("password.encoder.secret", "the-new-encoder-secret");
    l.c.set_config("password.encoder.old.secret", "the-encoder-secret");
    l.c.restart(1);
    let serving = || served_fingerprint(l.ssl) == want;
    wait_until(
        Duration::from_secs(60),
        "the restarted broker serving",
        serving,
    );
    wait_until(Duration::from_secs(30), "the secret stored again", || {
        zk_node(&l.c, "/config/brokers/1") != before
    });
    // ...so that once the old secret is gone, it still starts with the certificate.
    l.c.terminate(1);
    l.c.set_config("password.encoder.old.secret", "");
    l.c.restart(1);
    wait_until(
        Duration::from_secs(60),
        "serving without the old secret",
        serving,
    );
}

#[test]
fn a_plain_listeners_jaas_entry_gains_a_user_without_a_restart() {
    let l = start("dyn-jaas");
    let bootstrap = l.sasl.to_string();
    let list = ["-L", "-m", "20"];
    let (ok, _, _) = kcat_as(&bootstrap, "PLAIN", "dave", "dave-secret", &list, "");
    assert!(ok, "dave logs in");
    let (ok, _, _) = kcat_as(&bootstrap, "PLAIN", "erin", "erin-secret", &list, "");
    assert!(!ok, "erin is not a user yet");
    let key = "listener.name.sasl_plaintext.plain.sasl.jaas.config";
    let said = alter(&l.c, "1", &[&format!("{key}={DAVE_AND_ERIN}")]);
    assert_eq!(said, "ok");
    wait_until(Duration::from_secs(30), "erin to log in", || {
        kcat_as(&bootstrap, "PLAIN", "erin", "erin-secret", &list, "").0
    });
    let node = zk_node(&l.c, "/config/brokers/1");
    assert!(
        !node.contains("erin-secret") && node.contains("encryptedPassword:"),
        "{node}"
    );
    let d = describe(&l.c, "1", &[key]);
    assert_eq!(d[key]["value"], serde_json::Value::Null, "{d}");
    assert_eq!(d[key]["sensitive"], true, "{d}");
    assert!(!l.c.log_of(1).contains("erin-secret"));
}
