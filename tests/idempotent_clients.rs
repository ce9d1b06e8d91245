//! librdkafka's idempotent producer (confluent-kafka, `enable.idempotence=true`, acks=all)
//! while the partition's leader is killed with -9, comes back, and the next leader is paused
//! past its session: every acknowledged message is in the log exactly once, at the offset it
//! was acknowledged with, in the order it was sent, and no message is there twice. Cutting a
//! leader off the network needs the namespaces of the network-fault issue.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::cluster::Cluster;
use common::{die_with_parent, kcat, wait_until};
use parking_lot::Mutex;

const TOPIC: &str = "idem";

#[test]
fn librdkafka_idempotent_producer_survives_leader_kill_and_pause_exactly_once() {
    let mut c = Cluster::start("idem-rdkafka", 3, &[("min.insync.replicas", "2")]);
    c.create_topic(TOPIC, 1, 3);
    c.wait_all_led(TOPIC);
    let bootstrap = c.bootstrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/idempotent_producer.py"
    );
    let mut cmd = common::python();
    cmd.args([script, &bootstrap, TOPIC])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().expect("python3");
    let mut stdin = child.stdin.take().unwrap();
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            l.lock().push(line);
        }
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
        wait_until(Duration::from_secs(90), what, || {
            acked() >= want || lines.lock().iter().any(|l| l.starts_with("fatal"))
        });
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
    let _ = stdin.write_all(b"stop\n");
    drop(stdin);
    wait_until(Duration::from_secs(180), "the producer to finish", || {
        lines.lock().iter().any(|l| l.starts_with("done "))
    });
    let _ = child.wait();

    let lines = lines.lock().clone();
    let bad: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("fatal") || l.starts_with("fail"))
        .collect();
    assert!(bad.is_empty(), "the producer reported errors: {bad:?}");
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
            Some((o.parse().ok()?, v.strip_prefix('m')?.parse().ok()?))
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
        "duplicated or reordered: {:?}",
        values.windows(2).find(|w| w[0] >= w[1])
    );
    // Every acknowledged message, at the offset it was acknowledged with.
    let at: std::collections::HashMap<i64, usize> = stored.iter().copied().collect();
    for (i, offset) in &acks {
        assert_eq!(at.get(offset), Some(i), "m{i} acknowledged at {offset}");
    }
    assert!(acks.len() >= 1800, "only {} acknowledged", acks.len());
}
