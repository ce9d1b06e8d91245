//! SASL on gregor's listeners, through real clients: kcat and confluent-kafka (librdkafka) and
//! the Java client 4.3 authenticate with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on a
//! SASL_PLAINTEXT listener; the brokers replicate and the controller commands them over a
//! SASL inter-broker listener as a SCRAM user written into ZooKeeper before any broker ran
//! (`gregor configs --zookeeper`, Kafka's way); users are made through the AdminClient,
//! Kafka's own `kafka-configs` and `gregor configs`. Wrong passwords, unknown users, unserved
//! mechanisms and requests before authentication are refused, nothing is appended for them,
//! and everyone else is served; a deleted credential stops new connections on every broker.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::cluster::Cluster;
use common::java::{JavaProgram, run_kafka_tool};
use common::prometheus::scrape;
use common::secure::{kcat_as, read_args, sasl_client};
use common::{free_port, gregor_cli, gregor_ok, run_with_deadline, wait_until};
use gregor::protocol::header::{self, RequestHeader};
use gregor::protocol::sasl::{SaslHandshakeRequest, SaslHandshakeResponse};
use gregor::protocol::{ErrorCode, decode_body, encode_body};

const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;
const BROKER_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";"#;

/// A cluster whose brokers each have a PLAINTEXT listener (the test's own helpers use it)
/// and a SASL_PLAINTEXT one, which is also the inter-broker listener: replication and the
/// controller's commands authenticate with SCRAM-SHA-512 as `broker`.
struct Secured {
    c: Cluster,
    sasl: Vec<SocketAddr>,
}

impl Secured {
    fn start(name: &str, n: i32) -> Secured {
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let own_ports = ports.clone();
        let c = Cluster::start_prepared(
            name,
            n,
            &[
                ("inter.broker.listener.name", "SASL_PLAINTEXT"),
                (
                    "sasl.enabled.mechanisms",
                    "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                ),
                ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
                (
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    PLAIN_JAAS,
                ),
                (
                    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config",
                    BROKER_JAAS,
                ),
                ("metrics.listener", "127.0.0.1:0"),
            ],
            move |id| {
                vec![(
                    "listeners".to_owned(),
                    format!(
                        "PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{}",
                        own_ports[(id - 1) as usize]
                    ),
                )]
            },
            |zk| {
                // The brokers' own user, before any broker runs.
                let out = gregor_ok(
                    &[
                        "configs",
                        "--zookeeper",
                        zk,
                        "--alter",
                        "--add-config",
                        "SCRAM-SHA-512=[iterations=4096,password=broker-secret]",
                        "--entity-type",
                        "users",
                        "--entity-name",
                        "broker",
                    ],
                    "",
                );
                assert!(
                    out.contains("Completed updating config for user broker."),
                    "{out}"
                );
            },
        );
        let sasl = ports
            .iter()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
            .collect();
        Secured { c, sasl }
    }

    fn bootstrap(&self) -> String {
        self.sasl
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The end offset of partition 0 of `topic`, asked over the plaintext listener.
fn end_offset(c: &Cluster, topic: &str) -> i64 {
    let leader = c.leader(topic, 0);
    let (error, offsets) = c.client(leader).list_offsets(topic, 0, -1);
    assert_eq!(error, 0);
    offsets[0]
}

#[test]
fn clients_authenticate_with_each_mechanism_and_brokers_replicate_over_sasl() {
    let s = Secured::start("sasl-clients", 3);
    let c = &s.c;
    let bootstrap = s.bootstrap();
    c.create_topic("t", 1, 3);
    // Replication over the SASL inter-broker listener: every follower joins the ISR.
    wait_until(
        Duration::from_secs(30),
        "the ISR to hold all three replicas",
        || c.state("t", 0).is_some_and(|s| s.isr.len() == 3),
    );

    // PLAIN, from the listener's JAAS users.
    let (ok, _, err) = kcat_as(
        &bootstrap,
        "PLAIN",
        "alice",
        "alice-secret",
        &["-P", "-t", "t", "-p", "0"],
        "a1\na2\n",
    );
    assert!(ok, "kcat PLAIN produce: {err}");

    // SCRAM-SHA-256: a user made through confluent-kafka's AdminClient, logged in as the
    // broker user (any authenticated user may, until ACLs).
    let out = sasl_client(
        &bootstrap,
        "SCRAM-SHA-512",
        "broker",
        "broker-secret",
        &["create-user", "bob", "SCRAM-SHA-256", "bob-secret"],
    );
    assert!(out.contains("created bob"), "{out}");
    // SCRAM-SHA-512: a user made by Kafka 4.4's own kafka-configs over SASL.
    let admin_props =
        std::env::temp_dir().join(format!("sasl-admin-{}.properties", std::process::id()));
    std::fs::write(
        &admin_props,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={BROKER_JAAS}\n"
        ),
    )
    .unwrap();
    let props = admin_props.to_str().unwrap();
    let (ok, out, err) = run_kafka_tool(
        "org.apache.kafka.tools.ConfigCommand",
        &bootstrap,
        &[
            "--command-config",
            props,
            "--alter",
            "--add-config",
            "SCRAM-SHA-512=[iterations=8192,password=carol-secret]",
            "--entity-type",
            "users",
            "--entity-name",
            "carol",
        ],
    );
    assert!(ok, "kafka-configs: {out}\n{err}");
    // gregor configs reads them back through the same SASL login.
    let described = gregor_ok(
        &[
            "configs",
            "-b",
            &bootstrap,
            "--command-config",
            props,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "carol",
        ],
        "",
    );
    assert!(
        described.contains(
            "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192"
        ),
        "{described}"
    );
    let users = sasl_client(
        &bootstrap,
        "SCRAM-SHA-256",
        "bob",
        "bob-secret",
        &["describe-users"],
    );
    for want in [
        "user bob SCRAM_SHA_256:8192",
        "user broker SCRAM_SHA_512:4096",
        "user carol SCRAM_SHA_512:8192",
    ] {
        assert!(users.contains(want), "{want} in {users}");
    }

    // Each mechanism produces and reads through kcat.
    for (mech, user, pw) in [
        ("SCRAM-SHA-256", "bob", "bob-secret"),
        ("SCRAM-SHA-512", "carol", "carol-secret"),
    ] {
        wait_until(
            Duration::from_secs(20),
            "the new user to log in on every broker",
            || {
                s.sasl
                    .iter()
                    .all(|a| kcat_as(&a.to_string(), mech, user, pw, &["-L"], "").0)
            },
        );
        let (ok, _, err) = kcat_as(
            &bootstrap,
            mech,
            user,
            pw,
            &["-P", "-t", "t", "-p", "0"],
            &format!("{user}\n"),
        );
        assert!(ok, "kcat {mech} produce: {err}");
    }
    let (ok, out, err) = kcat_as(
        &bootstrap,
        "SCRAM-SHA-512",
        "carol",
        "carol-secret",
        &read_args("t"),
        "",
    );
    assert!(ok, "kcat consume: {err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["a1", "a2", "bob", "carol"]
    );

    // confluent-kafka: produce, a consumer group with commits, admin calls.
    let out = sasl_client(
        &bootstrap,
        "SCRAM-SHA-256",
        "bob",
        "bob-secret",
        &["roundtrip", "t", "bob-group", "20"],
    );
    assert!(
        out.contains("produced 20") && out.contains("consumed 20"),
        "{out}"
    );
    assert!(out.contains("created-topic t-admin"), "{out}");

    // The Java client 4.3 with SCRAM-SHA-512.
    c.create_topic("java", 1, 3);
    let java_props =
        std::env::temp_dir().join(format!("sasl-java-{}.properties", std::process::id()));
    std::fs::write(
        &java_props,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"carol\" password=\"carol-secret\";\n",
    )
    .unwrap();
    let program = JavaProgram::compile("ProduceConsume");
    let mut java = program.command(&[&bootstrap, "java", "5", "none"]);
    java.env("CLIENT_PROPERTIES", &java_props);
    let (ok, out, err) = run_with_deadline(&mut java, "", Duration::from_secs(180));
    assert!(ok, "Java ProduceConsume over SASL:\n{out}\n{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("got ")).count(),
        5,
        "{out}"
    );

    // Successful authentications are counted per listener and mechanism.
    let mut counted = std::collections::BTreeSet::new();
    for id in 1..=3 {
        for ((name, labels), v) in scrape(c.metrics_addr(id)).samples {
            if name == "kafka_server_socket_server_metrics_successful_authentication_total"
                && v > 0.0
            {
                counted.extend(
                    labels
                        .into_iter()
                        .filter(|(k, _)| k == "mechanism")
                        .map(|(_, m)| m),
                );
            }
        }
    }
    assert_eq!(
        counted.into_iter().collect::<Vec<_>>(),
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    );
    // No password reached a broker's log.
    for id in 1..=3 {
        let log = c.log_of(id);
        for secret in [
            "alice-secret",
            "bob-secret",
            "carol-secret",
            "broker-secret",
        ] {
            assert!(!log.contains(secret), "broker {id} logged a password");
        }
    }
    let _ = std::fs::remove_file(admin_props);
    let _ = std::fs::remove_file(java_props);
}

/// Sends one request frame and reads one answer; `None` when the broker closed instead.
fn exchange(sock: &mut TcpStream, key: i16, version: i16, body: &[u8]) -> Option<Vec<u8>> {
    let mut frame = Vec::new();
    RequestHeader {
        api_key: key,
        api_version: version,
        correlation_id: 7,
        client_id: Some("raw"),
    }
    .encode(&mut frame);
    frame.extend_from_slice(body);
    let mut out = (frame.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&frame);
    sock.write_all(&out).ok()?;
    let mut size = [0u8; 4];
    sock.read_exact(&mut size).ok()?;
    let mut answer = vec![0; i32::from_be_bytes(size) as usize];
    sock.read_exact(&mut answer).ok()?;
    Some(answer[4..].to_vec())
}

fn closed(sock: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(sock.read(&mut b), Ok(0) | Err(_))
}

#[test]
fn wrong_logins_and_early_requests_are_refused_and_nothing_is_appended() {
    let s = Secured::start("sasl-refusals", 1);
    let c = &s.c;
    let sasl = s.sasl[0];
    let bootstrap = sasl.to_string();
    c.create_topic("t", 1, 1);
    let (ok, _, err) = kcat_as(
        &bootstrap,
        "PLAIN",
        "alice",
        "alice-secret",
        &["-P", "-t", "t", "-p", "0"],
        "kept\n",
    );
    assert!(ok, "{err}");
    let before = end_offset(c, "t");
    assert_eq!(before, 1);

    // Wrong password, unknown user (each mechanism): refused, nothing appended.
    for (mech, user, pw) in [
        ("PLAIN", "alice", "wrong"),
        ("PLAIN", "mallory", "x"),
        ("SCRAM-SHA-256", "broker", "broker-secret"),
        ("SCRAM-SHA-512", "broker", "wrong"),
        ("SCRAM-SHA-512", "mallory", "x"),
    ] {
        let (ok, _, err) = kcat_as(
            &bootstrap,
            mech,
            user,
            pw,
            &["-P", "-t", "t", "-p", "0", "-X", "message.timeout.ms=5000"],
            "refused\n",
        );
        assert!(!ok, "{mech} as {user} was let in");
        assert!(
            err.contains("Authentication failed") || err.contains("SASL"),
            "{mech} {user}: {err}"
        );
    }

    // A mechanism the listener does not serve: UNSUPPORTED_SASL_MECHANISM, the served list,
    // and the connection closed.
    let mut sock = TcpStream::connect(sasl).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut body = Vec::new();
    encode_body(
        &SaslHandshakeRequest {
            mechanism: "GSSAPI".into(),
        },
        &mut body,
        header::SASL_HANDSHAKE,
        1,
    );
    let answer = exchange(&mut sock, header::SASL_HANDSHAKE, 1, &body).expect("an answer");
    let hs: SaslHandshakeResponse = decode_body(&answer, header::SASL_HANDSHAKE, 1).unwrap();
    assert_eq!(hs.error_code, ErrorCode::UnsupportedSaslMechanism.code());
    assert_eq!(hs.mechanisms, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
    assert!(closed(&mut sock));

    // A request before authenticating: the connection is closed without an answer; ApiVersions
    // is answered first, as clients ask it before the handshake.
    let mut sock = TcpStream::connect(sasl).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(exchange(&mut sock, header::API_VERSIONS, 0, &[]).is_some());
    // Produce v3: no transactional id, acks 1, 30 s, no topics.
    let produce = [0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30, 0, 0, 0, 0];
    assert!(
        exchange(&mut sock, header::PRODUCE, 3, &produce).is_none(),
        "a Produce before authentication was answered"
    );
    assert!(closed(&mut sock));
    let mut sock = TcpStream::connect(sasl).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(exchange(&mut sock, header::METADATA, 1, &[0, 0, 0, 0]).is_none());

    assert_eq!(end_offset(c, "t"), before, "a refused client appended");
    // Everyone else is still served.
    let (ok, out, err) = kcat_as(
        &bootstrap,
        "PLAIN",
        "alice",
        "alice-secret",
        &read_args("t"),
        "",
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "kept");

    // Failures are counted.
    let failed: f64 = scrape(c.metrics_addr(1))
        .samples
        .iter()
        .filter(|((n, _), _)| n == "kafka_server_socket_server_metrics_failed_authentication_total")
        .map(|(_, v)| v)
        .sum();
    assert!(failed >= 5.0, "failed authentications counted: {failed}");

    // A deleted credential stops new connections.
    gregor_ok(
        &[
            "configs",
            "-b",
            &c.bootstrap(),
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=dave-secret]",
            "--entity-type",
            "users",
            "--entity-name",
            "dave",
        ],
        "",
    );
    wait_until(Duration::from_secs(20), "dave to log in", || {
        kcat_as(
            &bootstrap,
            "SCRAM-SHA-256",
            "dave",
            "dave-secret",
            &["-L"],
            "",
        )
        .0
    });
    gregor_ok(
        &[
            "configs",
            "-b",
            &c.bootstrap(),
            "--alter",
            "--delete-config",
            "SCRAM-SHA-256",
            "--entity-type",
            "users",
            "--entity-name",
            "dave",
        ],
        "",
    );
    let (ok, _, err) = kcat_as(
        &bootstrap,
        "SCRAM-SHA-256",
        "dave",
        "dave-secret",
        &["-L", "-m", "5"],
        "",
    );
    assert!(!ok, "a deleted user logged in");
    assert!(err.contains("Authentication failed"), "{err}");
    // Deleting it again is refused by name.
    let (ok, _, err) = gregor_cli(
        &[
            "configs",
            "-b",
            &c.bootstrap(),
            "--alter",
            "--delete-config",
            "SCRAM-SHA-256",
            "--entity-type",
            "users",
            "--entity-name",
            "dave",
        ],
        "",
    );
    assert!(!ok && err.contains("does not exist"), "{err}");
    let log = c.log_of(1);
    for secret in ["alice-secret", "broker-secret", "dave-secret", "wrong"] {
        assert!(!log.contains(secret), "the broker logged `{secret}`");
    }
}

/// KIP-368: with `connections.max.reauth.ms` a login lasts that long. librdkafka (confluent-
/// kafka) is told so and authenticates again on its connections, so producing for several
/// lifetimes never has a connection closed; gregor's own channel, which does not, has its
/// connection closed at its first request after the session ended.
#[test]
fn a_login_that_expires_is_renewed_by_the_client_or_its_connection_closed() {
    let port = free_port();
    let c = Cluster::start(
        "sasl-reauth",
        1,
        &[
            (
                "listeners",
                &format!("PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{port}"),
            ),
            ("sasl.enabled.mechanisms", "PLAIN"),
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                PLAIN_JAAS,
            ),
            ("connections.max.reauth.ms", "1500"),
        ],
    );
    let bootstrap = format!("127.0.0.1:{port}");
    c.create_topic("t", 1, 1);
    let out = sasl_client(
        &bootstrap,
        "PLAIN",
        "alice",
        "alice-secret",
        &["produce-for", "t", "6"],
    );
    assert!(out.contains("produced"), "{out}");
    assert!(
        !c.log_of(1).contains("SASL session expired"),
        "librdkafka's connection outlived its session without authenticating again"
    );
    // A client that does not authenticate again is cut off once its session is over.
    let login = gregor::security::ClientLogin::Sasl {
        mechanism: gregor::security::Mechanism::Plain,
        user: "alice".into(),
        password: "alice-secret".into(),
    };
    let security = gregor::network::ClientSecurity { tls: None, login };
    let mut chan = gregor::network::BlockingChannel::connect_to(
        &bootstrap,
        "no-reauth",
        Duration::from_secs(10),
        &security,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let metadata = gregor::protocol::metadata::MetadataRequest {
        topics: Some(vec!["t".into()]),
        allow_auto_topic_creation: false,
    };
    wait_until(
        Duration::from_secs(20),
        "the expired session's connection to close",
        || {
            chan.send::<gregor::protocol::metadata::MetadataResponse>(
                gregor::protocol::header::METADATA,
                1,
                &metadata,
            )
            .is_err()
        },
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "closed before its session ended"
    );
    wait_until(Duration::from_secs(10), "the broker to say why", || {
        c.log_of(1).contains("SASL session expired")
    });
}
