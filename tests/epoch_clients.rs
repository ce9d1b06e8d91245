//! Real consumers across a leader change, now that Metadata advertises leader epochs: each
//! reads a partition by assign() from offset 0 with offset resets off while its leader is
//! killed -9; it must validate its position with the new leader (KIP-320: OffsetForLeaderEpoch,
//! Fetch with `current_leader_epoch`) and go on reading — every value once, in order.
//! librdkafka (confluent-kafka), kafka-python and the Java client; scripts/test.sh installs them.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::java::JavaProgram;
use common::{die_with_parent, wait_until};
use crossbeam_channel::{Receiver, unbounded};
use gregor::network::BlockingChannel;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};

const HALF: usize = 30;

/// Kills the consumer if the test fails before it exits.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Produce v7 of one record, acks=all, retried until acknowledged by the current leader.
fn produce(c: &Cluster, value: &str) {
    let set = common::one_record_batch(value);
    wait_until(
        Duration::from_secs(40),
        &format!("{value} to be acknowledged"),
        || {
            let leader = c.leader("t", 0);
            if leader < 0 || !c.is_running(leader) {
                return false;
            }
            let Ok(mut chan) =
                BlockingChannel::connect(c.addr(leader), "t", Duration::from_secs(10))
            else {
                return false;
            };
            let r = chan.send::<ProduceResponse>(
                0,
                7,
                &ProduceSets {
                    acks: -1,
                    timeout_ms: 10_000,
                    topics: &[("t", vec![(0, &set[..])])],
                },
            );
            matches!(r, Ok(r) if r.topics[0].1[0].error_code == 0)
        },
    );
}

fn take_lines(lines: &Receiver<String>, n: usize, got: &mut Vec<String>, who: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => got.push(l),
            Err(_) => panic!("{who} printed {} of {n} values: {got:?}", got.len()),
        }
    }
}

fn follows_a_leader_change(name: &str, consumer: impl FnOnce(&str) -> Command) {
    let mut c = Cluster::start(name, 3, &[("min.insync.replicas", "2")]);
    c.create_topic("t", 1, 3);
    for i in 0..HALF {
        produce(&c, &format!("v{i}"));
    }
    let mut cmd = consumer(&c.bootstrap());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = Running(cmd.spawn().expect("spawn the consumer"));
    let stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let (tx, lines) = unbounded();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut got = Vec::new();
    take_lines(&lines, HALF, &mut got, name);
    let first = c.leader("t", 0);
    c.kill9(first);
    c.wait_leader_serving("t", 0, |l| l != first);
    for i in HALF..2 * HALF {
        produce(&c, &format!("v{i}"));
    }
    take_lines(&lines, 2 * HALF, &mut got, name);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "{name} did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = errors.join().unwrap();
    assert!(status.success(), "{name} failed: {err}");
    let want: Vec<String> = (0..2 * HALF).map(|i| format!("v{i}")).collect();
    assert_eq!(got, want, "{name}: every value once, in order");
}

fn python_consumer(client: &'static str) -> impl FnOnce(&str) -> Command {
    move |bootstrap| {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/follow_leader_change.py"
        );
        let mut cmd = common::python();
        cmd.args([script, client, bootstrap, "t", &(2 * HALF).to_string()]);
        cmd
    }
}

#[test]
fn librdkafka_consumes_across_a_leader_change() {
    follows_a_leader_change("epoch-librdkafka", python_consumer("confluent"));
}

#[test]
fn kafka_python_consumes_across_a_leader_change() {
    follows_a_leader_change("epoch-kafka-python", python_consumer("kafka-python"));
}

#[test]
fn the_java_client_consumes_across_a_leader_change() {
    let program = JavaProgram::compile("FollowLeaderChange");
    follows_a_leader_change("epoch-java", |bootstrap| {
        program.command(&[bootstrap, "t", &(2 * HALF).to_string()])
    });
}
