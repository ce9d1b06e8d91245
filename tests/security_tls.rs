//! TLS on gregor's listeners (rustls), through real clients: kcat and confluent-kafka
//! (librdkafka with OpenSSL) and the Java client 4.3 over SSL and SASL_SSL, with PEM
//! keystores (an encrypted PKCS#8 key with `ssl.key.password`) and truststores as KIP-651
//! reads them; brokers replicating and the controller commanding over a SASL_SSL
//! inter-broker listener; a client certificate's subject as the principal (mutual TLS). A
//! plaintext client on a TLS port, a TLS client on a plaintext port, a certificate from
//! another CA, an expired one and a handshake left half done are each refused with a log
//! line naming why, while everyone else is served.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::certs::Certs;
use common::cluster::Cluster;
use common::java::JavaProgram;
use common::prometheus::scrape;
use common::secure::{kcat_with, read_args, sasl_client_env};
use common::{free_port, gregor_ok, run_with_deadline, wait_until};

const PLAIN_JAAS: &str =
    r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_dave="dave-secret";"#;
const BROKER_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";"#;

/// Brokers with a PLAINTEXT listener (the test's helpers), an SSL one asking for client
/// certificates, and a SASL_SSL one that is also the inter-broker listener (SCRAM-SHA-512).
struct Secured {
    c: Cluster,
    ssl: Vec<SocketAddr>,
    sasl_ssl: Vec<SocketAddr>,
    certs: Certs,
}

fn addrs(ports: &[u16]) -> Vec<SocketAddr> {
    ports
        .iter()
        .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
        .collect()
}

fn joined(a: &[SocketAddr]) -> String {
    a.iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl Secured {
    fn start(name: &str, n: i32, client_auth: &str) -> Secured {
        let certs = Certs::new();
        let keystore = certs.issue("broker", "/O=gregor/CN=broker", "ca", 30, Some("key-pass"));
        let ssl: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let sasl_ssl: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let (own_ssl, own_sasl) = (ssl.clone(), sasl_ssl.clone());
        let ca = certs.ca();
        let c = Cluster::start_prepared(
            name,
            n,
            &[
                ("ssl.keystore.location", &keystore),
                ("ssl.key.password", "key-pass"),
                ("ssl.truststore.location", &ca),
                ("listener.name.ssl.ssl.client.auth", client_auth),
                ("inter.broker.listener.name", "SASL_SSL"),
                (
                    "sasl.enabled.mechanisms",
                    "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                ),
                ("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS),
                ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
                (
                    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
                    BROKER_JAAS,
                ),
                ("metrics.listener", "127.0.0.1:0"),
            ],
            move |id| {
                let i = (id - 1) as usize;
                vec![(
                    "listeners".to_owned(),
                    format!(
                        "PLAINTEXT://127.0.0.1:{{port}},SSL://127.0.0.1:{},SASL_SSL://127.0.0.1:{}",
                        own_ssl[i], own_sasl[i]
                    ),
                )]
            },
            |zk| {
                gregor_ok(
                    &[
                        "configs",
                        "--zookeeper",
                        zk,
                        "--alter",
                        "--add-config",
                        "SCRAM-SHA-512=[password=broker-secret]",
                        "--entity-type",
                        "users",
                        "--entity-name",
                        "broker",
                    ],
                    "",
                );
            },
        );
        Secured {
            c,
            ssl: addrs(&ssl),
            sasl_ssl: addrs(&sasl_ssl),
            certs,
        }
    }

    /// Makes a SCRAM user (`config` in kafka-configs' syntax) through the SASL_SSL listener,
    /// logged in as the brokers' own user.
    fn add_user(&self, user: &str, config: &str) {
        let admin = std::env::temp_dir().join(format!(
            "tls-admin-{}-{user}.properties",
            std::process::id()
        ));
        std::fs::write(
            &admin,
            format!(
                "security.protocol=SASL_SSL\nssl.truststore.location={}\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={BROKER_JAAS}\n",
                self.certs.ca()
            ),
        )
        .unwrap();
        let args = [
            "configs",
            "-b",
            &joined(&self.sasl_ssl),
            "--command-config",
            admin.to_str().unwrap(),
            "--alter",
            "--add-config",
            config,
            "--entity-type",
            "users",
            "--entity-name",
            user,
        ];
        gregor_ok(&args, "");
        let _ = std::fs::remove_file(admin);
    }

    /// librdkafka's settings for the SSL listener, with a client certificate if given.
    fn ssl_props(&self, keystore: Option<&str>) -> Vec<(String, String)> {
        let mut p = vec![
            ("security.protocol".to_owned(), "SSL".to_owned()),
            ("ssl.ca.location".to_owned(), self.certs.ca()),
        ];
        if let Some(k) = keystore {
            p.push(("ssl.certificate.location".to_owned(), k.to_owned()));
            p.push(("ssl.key.location".to_owned(), k.to_owned()));
        }
        p
    }
}

fn kcat(
    bootstrap: &str,
    props: &[(String, String)],
    args: &[&str],
    stdin: &str,
) -> (bool, String, String) {
    let props: Vec<(&str, &str)> = props
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    kcat_with(bootstrap, &props, args, stdin)
}

#[test]
fn clients_over_ssl_and_sasl_ssl_are_served_and_brokers_replicate_over_tls() {
    let s = Secured::start("tls-clients", 3, "requested");
    let c = &s.c;
    c.create_topic("t", 1, 3);
    wait_until(
        Duration::from_secs(30),
        "the ISR to hold all three replicas (over SASL_SSL)",
        || c.state("t", 0).is_some_and(|st| st.isr.len() == 3),
    );
    let ssl = joined(&s.ssl);
    let sasl_ssl = joined(&s.sasl_ssl);

    // SSL without a client certificate (requested, not required): User:ANONYMOUS.
    let props = s.ssl_props(None);
    let (ok, _, err) = kcat(&ssl, &props, &["-P", "-t", "t", "-p", "0"], "anon\n");
    assert!(ok, "kcat over SSL: {err}");

    // Mutual TLS: the certificate's subject, as X500Principal writes it, is the user, which
    // a quota on that user shows (the quota is far above what is produced).
    let alice = s
        .certs
        .issue("alice", "/O=gregor/OU=test/CN=alice", "ca", 30, None);
    gregor_ok(
        &[
            "configs",
            "-b",
            &c.bootstrap(),
            "--alter",
            "--add-config",
            "producer_byte_rate=1000000000",
            "--entity-type",
            "users",
            "--entity-name",
            "CN=alice,OU=test,O=gregor",
        ],
        "",
    );
    let props = s.ssl_props(Some(&alice));
    wait_until(
        Duration::from_secs(30),
        "alice's quota to show her principal",
        || {
            let (ok, _, _) = kcat(&ssl, &props, &["-P", "-t", "t", "-p", "0"], "alice\n");
            ok && (1..=3).any(|id| {
                scrape(c.metrics_addr(id))
                    .samples
                    .keys()
                    .any(|(n, labels)| {
                        n == "kafka_server_produce_byte_rate"
                            && labels
                                .iter()
                                .any(|(k, v)| k == "user" && v == "CN=alice,OU=test,O=gregor")
                    })
            })
        },
    );

    // SASL_SSL with SCRAM: a user made through the broker over TLS itself.
    s.add_user(
        "bob",
        "SCRAM-SHA-256=[password=bob-secret],SCRAM-SHA-512=[password=bob-secret]",
    );
    let bob = vec![
        ("security.protocol".to_owned(), "SASL_SSL".to_owned()),
        ("ssl.ca.location".to_owned(), s.certs.ca()),
        ("sasl.mechanisms".to_owned(), "SCRAM-SHA-256".to_owned()),
        ("sasl.username".to_owned(), "bob".to_owned()),
        ("sasl.password".to_owned(), "bob-secret".to_owned()),
    ];
    wait_until(
        Duration::from_secs(20),
        "bob to log in on every broker",
        || {
            s.sasl_ssl
                .iter()
                .all(|a| kcat(&a.to_string(), &bob, &["-L"], "").0)
        },
    );
    let (ok, _, err) = kcat(&sasl_ssl, &bob, &["-P", "-t", "t", "-p", "0"], "bob\n");
    assert!(ok, "kcat over SASL_SSL: {err}");
    let (ok, out, err) = kcat(&sasl_ssl, &bob, &read_args("t"), "");
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().filter(|l| *l != "alice").collect::<Vec<_>>(),
        ["anon", "bob"]
    );
    // Each mechanism over SASL_SSL: PLAIN (the listener's JAAS user) and SCRAM-SHA-512.
    for (mech, user, pw) in [
        ("PLAIN", "dave", "dave-secret"),
        ("SCRAM-SHA-512", "bob", "bob-secret"),
    ] {
        let props = vec![
            ("security.protocol".to_owned(), "SASL_SSL".to_owned()),
            ("ssl.ca.location".to_owned(), s.certs.ca()),
            ("sasl.mechanisms".to_owned(), mech.to_owned()),
            ("sasl.username".to_owned(), user.to_owned()),
            ("sasl.password".to_owned(), pw.to_owned()),
        ];
        let (ok, _, err) = kcat(&sasl_ssl, &props, &["-P", "-t", "t", "-p", "0"], "more\n");
        assert!(ok, "kcat {mech} over SASL_SSL: {err}");
    }
    // confluent-kafka over SSL alone (no SASL): a group and admin calls as User:ANONYMOUS.
    let env = [("SECURITY_PROTOCOL", "SSL"), ("SSL_CA", &s.certs.ca())];
    let out = sasl_client_env(
        &env,
        &ssl,
        "NONE",
        "-",
        "-",
        &["roundtrip", "ssl-t", "ssl-group", "10"],
    );
    assert!(out.contains("consumed 10"), "{out}");

    // confluent-kafka over SASL_SSL: produce, a group, admin calls.
    let env = [("SECURITY_PROTOCOL", "SASL_SSL"), ("SSL_CA", &s.certs.ca())];
    let out = sasl_client_env(
        &env,
        &sasl_ssl,
        "SCRAM-SHA-512",
        "bob",
        "bob-secret",
        &["roundtrip", "t", "bob-group", "20"],
    );
    assert!(
        out.contains("consumed 20") && out.contains("created-topic t-admin"),
        "{out}"
    );

    // The Java client 4.3 over SASL_SSL with SCRAM-SHA-512 and a PEM truststore.
    c.create_topic("java", 1, 3);
    let props = std::env::temp_dir().join(format!("tls-java-{}.properties", std::process::id()));
    std::fs::write(
        &props,
        format!(
            "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"bob-secret\";\n",
            s.certs.ca()
        ),
    )
    .unwrap();
    let program = JavaProgram::compile("ProduceConsume");
    let mut java = program.command(&[&sasl_ssl, "java", "5", "lz4"]);
    java.env("CLIENT_PROPERTIES", &props);
    let (ok, out, err) = run_with_deadline(&mut java, "", Duration::from_secs(180));
    assert!(ok, "Java over SASL_SSL:\n{out}\n{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("got ")).count(),
        5,
        "{out}"
    );
    let _ = std::fs::remove_file(props);

    // DescribeConfigs (Kafka 4.4's own kafka-configs) shows the key's password as a
    // sensitive null, never its value.
    let (ok, out, err) = common::java::run_kafka_tool(
        "org.apache.kafka.tools.ConfigCommand",
        &c.bootstrap(),
        &[
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        ],
    );
    assert!(ok, "kafka-configs --describe: {out}\n{err}");
    assert!(
        out.contains("ssl.key.password=null sensitive=true"),
        "{out}"
    );
    assert!(
        !out.contains("key-pass"),
        "a secret in DescribeConfigs: {out}"
    );
}

/// An idempotent acks=all producer over SASL_SSL keeps every acknowledged message when the
/// partition's leader is killed (kill -9) in the middle.
#[test]
fn a_killed_leader_under_acks_all_over_sasl_ssl_loses_nothing() {
    let mut s = Secured::start("tls-kill", 3, "none");
    s.c.create_topic("k", 1, 3);
    wait_until(Duration::from_secs(30), "a full ISR", || {
        s.c.state("k", 0).is_some_and(|st| st.isr.len() == 3)
    });
    let sasl_ssl = joined(&s.sasl_ssl);
    s.add_user("carol", "SCRAM-SHA-512=[password=carol-secret]");
    let ca = s.certs.ca();
    let (bootstrap, ca2) = (sasl_ssl.clone(), ca.clone());
    let producer = std::thread::spawn(move || {
        let env = [("SECURITY_PROTOCOL", "SASL_SSL"), ("SSL_CA", ca2.as_str())];
        sasl_client_env(
            &env,
            &bootstrap,
            "SCRAM-SHA-512",
            "carol",
            "carol-secret",
            &["produce-acked", "k", "3000"],
        )
    });
    let leader = s.c.leader("k", 0);
    wait_until(
        Duration::from_secs(60),
        "the producer to be under way",
        || {
            let (_, offsets) = s.c.client(leader).list_offsets("k", 0, -1);
            offsets.first().is_some_and(|o| *o > 300)
        },
    );
    s.c.kill9(leader);
    let acked: Vec<String> = producer
        .join()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("acked ").map(str::to_owned))
        .collect();
    s.c.restart(leader);
    assert!(acked.len() > 300, "only {} acknowledged", acked.len());
    let props = [
        ("security.protocol", "SASL_SSL"),
        ("ssl.ca.location", ca.as_str()),
        ("sasl.mechanisms", "SCRAM-SHA-512"),
        ("sasl.username", "carol"),
        ("sasl.password", "carol-secret"),
    ];
    s.c.wait_all_led("k");
    let mut out = String::new();
    wait_until(
        Duration::from_secs(60),
        "the partition to be read back",
        || {
            let args = read_args("k");
            let (ok, read, _) = kcat_with(&sasl_ssl, &props, &args, "");
            out = read;
            ok
        },
    );
    let read: std::collections::HashSet<&str> = out.lines().collect();
    let lost: Vec<&String> = acked
        .iter()
        .filter(|v| !read.contains(v.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged messages lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

/// Connects and sends `bytes`, then says whether the broker closed the connection within
/// `limit` (a read returning end of file or an error other than a timeout).
fn closed_within(addr: SocketAddr, bytes: &[u8], limit: Duration) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let _ = s.write_all(bytes);
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn bad_tls_clients_are_refused_with_the_reason_and_others_are_served() {
    let s = Secured::start("tls-refusals", 1, "required");
    let c = &s.c;
    c.create_topic("t", 1, 1);
    let ssl = s.ssl[0];
    let alice = s.certs.issue("alice", "/O=gregor/CN=alice", "ca", 30, None);
    let good = s.ssl_props(Some(&alice));
    let (ok, _, err) = kcat(
        &ssl.to_string(),
        &good,
        &["-P", "-t", "t", "-p", "0"],
        "kept\n",
    );
    assert!(ok, "{err}");

    // A handshake left half done (a ClientHello's first bytes) holds a thread until the
    // deadline, and meanwhile others are served.
    let half = std::thread::spawn(move || {
        closed_within(ssl, &[22, 3, 1, 0, 200, 1, 0, 0], Duration::from_secs(30))
    });
    // A certificate from another CA, an expired one, none at all (required here).
    let stranger = s
        .certs
        .issue("mallory", "/O=evil/CN=mallory", "other-ca", 30, None);
    let expired = s.certs.issue("old", "/O=gregor/CN=old", "ca", -1, None);
    for (what, props) in [
        ("another CA's certificate", s.ssl_props(Some(&stranger))),
        ("an expired certificate", s.ssl_props(Some(&expired))),
        ("no certificate", s.ssl_props(None)),
    ] {
        let (ok, _, _) = kcat(
            &ssl.to_string(),
            &props,
            &["-P", "-t", "t", "-p", "0", "-X", "message.timeout.ms=5000"],
            "refused\n",
        );
        assert!(!ok, "{what} was let in");
    }
    // A plaintext client on the TLS port, a TLS client on the plaintext port.
    let api_versions = [0u8, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    assert!(closed_within(ssl, &api_versions, Duration::from_secs(5)));
    let plain = c.addr(1);
    let (ok, _, _) = kcat(&plain.to_string(), &good, &["-L", "-m", "5"], "");
    assert!(!ok, "a TLS client got an answer from a plaintext listener");

    let (ok, out, err) = kcat(&ssl.to_string(), &good, &read_args("t"), "");
    assert!(ok, "a good client was not served meanwhile: {err}");
    assert_eq!(out.trim(), "kept", "a refused client appended");
    assert!(
        half.join().unwrap(),
        "a half-done handshake was never closed"
    );

    let log = c.log_of(1);
    for why in [
        "not a TLS handshake (a plaintext client on a TLS listener?)",
        "a TLS handshake on a listener without TLS",
        "TLS handshake not finished within",
        "UnknownIssuer",
        "Expired",
    ] {
        assert!(log.contains(why), "no log line says `{why}`");
    }
    let failed: f64 = scrape(c.metrics_addr(1))
        .samples
        .iter()
        .filter(|((n, l), _)| {
            n == "kafka_server_socket_server_metrics_failed_authentication_total"
                && l.iter().any(|(k, v)| k == "mechanism" && v == "TLS")
        })
        .map(|(_, v)| v)
        .sum();
    assert!(failed >= 4.0, "failed TLS handshakes counted: {failed}");
    assert!(!log.contains("key-pass"), "the key's password was logged");
}

/// `scripts/cluster.sh --secure` brings up SASL_SSL with an admin user and ACLs, and the
/// client settings it prints work with kcat; the script stops it again.
#[test]
fn the_cluster_script_brings_up_a_secure_cluster() {
    let home = tempfile::tempdir().unwrap();
    let (zk_port, port) = (free_port(), free_port());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh");
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(script)
            .args(args)
            .env("GREGOR_HOME", home.path())
            .env("GREGOR_BIN", env!("CARGO_BIN_EXE_gregor"))
            .env("ZK_PORT", zk_port.to_string())
            .env("BASE_PORT", port.to_string())
            .env("METRICS_BASE_PORT", "off");
        run_with_deadline(&mut cmd, "", Duration::from_secs(120))
    };
    /// Stops the cluster however the test ends.
    type Run<'a> = &'a dyn Fn(&[&str]) -> (bool, String, String);
    struct Stop<'a>(Run<'a>);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = (self.0)(&["stop"]);
        }
    }
    let _stop = Stop(&run);
    let (ok, out, err) = run(&["--secure", "start", "1"]);
    assert!(ok, "cluster.sh --secure start 1:\n{out}\n{err}");
    assert!(
        out.contains("kcat -b 127.0.0.1:") && out.contains("SASL_SSL"),
        "{out}"
    );
    let tls = home.path().join("tls");
    let password = std::fs::read_to_string(tls.join("admin.password")).unwrap();
    let ca = tls.join("ca.pem").display().to_string();
    let props = [
        ("security.protocol", "SASL_SSL"),
        ("ssl.ca.location", ca.as_str()),
        ("sasl.mechanisms", "SCRAM-SHA-512"),
        ("sasl.username", "admin"),
        ("sasl.password", password.trim()),
    ];
    let bootstrap = format!("127.0.0.1:{port}");
    wait_until(
        Duration::from_secs(30),
        "the secure broker to take a produce",
        || {
            kcat_with(
                &bootstrap,
                &props,
                &["-P", "-t", "secure", "-X", "message.timeout.ms=5000"],
                "hello\n",
            )
            .0
        },
    );
    let (ok, out, err) = kcat_with(
        &bootstrap,
        &props,
        &["-C", "-t", "secure", "-o", "beginning", "-e", "-f", "%s\n"],
        "",
    );
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l == "hello"), "{out}");
    // The tools' properties file works too, and an unknown user is refused.
    let client = home.path().join("client.properties").display().to_string();
    let described = gregor_ok(
        &[
            "configs",
            "-b",
            &bootstrap,
            "--command-config",
            &client,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "admin",
        ],
        "",
    );
    assert!(
        described.contains("SCRAM-SHA-512=iterations=8192"),
        "{described}"
    );
    let mut stranger = props;
    stranger[3] = ("sasl.username", "nobody");
    assert!(!kcat_with(&bootstrap, &stranger, &["-L", "-m", "5"], "").0);
}
