//! Idempotent producers (acks=all) while the partition's leader is killed with -9, comes back,
//! and the next leader is paused past its session: every acknowledged message is in the log
//! exactly once, at the offset it was acknowledged with, in the order it was sent, no message
//! is there twice, and the producer never hits a fatal error. Once with librdkafka
//! (confluent-kafka), once with the Java client (Apache Kafka's own `VerifiableProducer`).
//! Cutting a leader off the network needs the namespaces of the network-fault issue.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::cluster::Cluster;
use common::{die_with_parent, kcat, wait_until};
use parking_lot::Mutex;

const TOPIC: &str = "idem";

/// A producer under test: how to start it, how to ask it to stop, and its output read as
/// `ack I OFFSET` / `fail I WHY` / `fatal WHY` / `done` lines (I: the message's number; its
/// value is that number after `value_prefix`).
struct ProducerUnderTest {
    name: &'static str,
    command: Command,
    translate: fn(&str) -> Option<String>,
    stop: fn(&mut Child),
    value_prefix: &'static str,
}

#[test]
fn librdkafka_idempotent_producer_survives_leader_kill_and_pause_exactly_once() {
    survives_leader_kill_and_pause("idem-rdkafka", |bootstrap| {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/idempotent_producer.py"
        );
        let mut command = common::python();
        command.args([script, bootstrap, TOPIC]);
        ProducerUnderTest {
            name: "librdkafka",
            command,
            // The script speaks the test's lines already.
            translate: |l| Some(l.to_owned()),
            stop: |child| {
                use std::io::Write;
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(b"stop\n");
                }
            },
            value_prefix: "m",
        }
    });
}

#[test]
fn java_idempotent_producer_survives_leader_kill_and_pause_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("producer.properties");
    // The Java client's defaults but for a request timeout as short as the librdkafka run's,
    // so that requests parked on the paused leader are given up within the test's time.
    std::fs::write(
        &config,
        "enable.idempotence=true\nacks=all\nretries=2147483647\nlinger.ms=1\nrequest.timeout.ms=5000\n\
         delivery.timeout.ms=120000\nretry.backoff.ms=50\nmetadata.max.age.ms=5000\n",
    )
    .unwrap();
    survives_leader_kill_and_pause("idem-java", |bootstrap| {
        let mut command = common::java::kafka_tool("org.apache.kafka.tools.VerifiableProducer");
        command
            .args(["--bootstrap-server", bootstrap, "--topic", TOPIC])
            .args(["--max-messages", "-1", "--throughput", "500"])
            .arg("--producer.config")
            .arg(&config);
        ProducerUnderTest {
            name: "the Java client",
            command,
            translate: verifiable_producer_line,
            // SIGTERM: its shutdown hook closes the producer, which waits for every message.
            stop: |child| {
                // SAFETY: signalling our own child process.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            },
            value_prefix: "",
        }
    });
}

/// VerifiableProducer's JSON lines as the test's: `producer_send_success` with its value (the
/// message's number) and offset, `producer_send_error` with the exception's class, and
/// `shutdown_complete`. The Java client has no separate fatal state for an idempotent
/// producer: a sequence it cannot recover from fails the messages (`fail`).
fn verifiable_producer_line(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    match v["name"].as_str()? {
        "producer_send_success" => Some(format!(
            "ack {} {}",
            v["value"].as_str()?,
            v["offset"].as_i64()?
        )),
        "producer_send_error" => Some(format!(
            "fail {} {}",
            v["value"].as_str().unwrap_or("?"),
            v["exception"].as_str().unwrap_or("?").replace(' ', "_")
        )),
        "shutdown_complete" => Some("done".into()),
        _ => None,
    }
}

fn survives_leader_kill_and_pause(name: &str, producer: impl FnOnce(&str) -> ProducerUnderTest) {
    let mut c = Cluster::start(name, 3, &[("min.insync.replicas", "2")]);
    c.create_topic(TOPIC, 1, 3);
    c.wait_all_led(TOPIC);
    let bootstrap = c.bootstrap();
    let ProducerUnderTest {
        name: client,
        mut command,
        translate,
        stop,
        value_prefix,
    } = producer(&bootstrap);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    die_with_parent(&mut command);
    let mut child = command.spawn().expect("the producer");
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(line) = translate(&line) {
                l.lock().push(line);
            }
        }
        l.lock().push("exited".into());
    });
    let acked = || {
        lines
            .lock()
            .iter()
            .filter(|l| l.starts_with("ack "))
            .count()
    };
    let progress = |what: &str, more: usize| {
        let want = acked() + more;
        let ended = |l: &String| l.starts_with("fatal") || l == "exited";
        wait_until(Duration::from_secs(90), what, || {
            acked() >= want || lines.lock().iter().any(ended)
        });
        assert!(
            !lines.lock().iter().any(|l| l == "exited"),
            "{client} exited early (its errors are above)"
        );
    };

    progress("the first acknowledgements", 500);
    let first = c.leader(TOPIC, 0);
    c.kill9(first);
    c.wait_leader_serving(TOPIC, 0, |l| l != first);
    progress("acknowledgements after the kill", 500);
    c.restart(first);
    let second = c.leader(TOPIC, 0);
    c.pause(second);
    c.wait_leader_serving(TOPIC, 0, |l| l != second);
    progress("acknowledgements while the old leader is paused", 500);
    c.resume(second);
    progress("acknowledgements after the resume", 300);
    stop(&mut child);
    wait_until(Duration::from_secs(180), "the producer to finish", || {
        lines.lock().iter().any(|l| l.starts_with("done"))
    });
    let _ = child.wait();

    let lines = lines.lock().clone();
    let bad: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("fatal") || l.starts_with("fail"))
        .collect();
    assert!(bad.is_empty(), "{client} reported errors: {bad:?}");
    let acks: Vec<(usize, i64)> = lines
        .iter()
        .filter_map(|l| {
            let mut w = l.strip_prefix("ack ")?.split(' ');
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    let leader = c.wait_leader_serving(TOPIC, 0, |_| true);
    let addr = format!("127.0.0.1:{}", c.brokers[&leader].port);
    let log = kcat(
        &[
            "-C",
            "-b",
            &addr,
            "-t",
            TOPIC,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%o %s\\n",
        ],
        "",
    );
    let stored: Vec<(i64, usize)> = log
        .lines()
        .filter_map(|l| {
            let (o, v) = l.split_once(' ')?;
            Some((o.parse().ok()?, v.strip_prefix(value_prefix)?.parse().ok()?))
        })
        .collect();
    assert_eq!(
        stored.len(),
        log.lines().count(),
        "unreadable lines in {log}"
    );
    // No message twice, and in the order sent.
    let values: Vec<usize> = stored.iter().map(|(_, v)| *v).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "{client}: duplicated or reordered: {:?}",
        values.windows(2).find(|w| w[0] >= w[1])
    );
    // Every acknowledged message, at the offset it was acknowledged with.
    let at: std::collections::HashMap<i64, usize> = stored.iter().copied().collect();
    for (i, offset) in &acks {
        assert_eq!(
            at.get(offset),
            Some(i),
            "{client}: message {i} acknowledged at {offset}"
        );
    }
    assert!(acks.len() >= 1800, "only {} acknowledged", acks.len());
}
