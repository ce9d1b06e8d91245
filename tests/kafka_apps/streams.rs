//! Kafka Streams against gregor: a word count (`tests/clients/streams/WordCount.java`, Kafka
//! Streams 4.4.0, at_least_once) whose repartition and changelog topics Streams creates itself,
//! on a broker with small segments and an eager cleaner so that the changelog is compacted
//! while the test runs. Its counts stay right through a kill -9 of the broker, and through a
//! kill -9 of the Streams instance once it had committed, after which a new instance rebuilds
//! its store from the compacted changelog and counts on from there.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::cluster::Cluster;
use crate::common::java::JavaProgram;
use crate::common::{committed_offsets, die_with_parent, gregor_ok, kcat, poll_until, wait_until};

const APP: &str = "wordcount";

/// Streams' warnings and errors, and its state changes, to stderr (the instance's log file).
const LOG4J: &str = "rootLogger.level=WARN\n\
                     rootLogger.appenderRef.err.ref=ERR\n\
                     appender.err.type=Console\n\
                     appender.err.name=ERR\n\
                     appender.err.target=SYSTEM_ERR\n\
                     appender.err.layout.type=PatternLayout\n\
                     appender.err.layout.pattern=[%d] %p %m (%c)%n\n\
                     logger.streams.name=org.apache.kafka.streams\n\
                     logger.streams.level=INFO\n";

/// A running word count, its stdout's lines arriving on `lines`.
struct Instance {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Instance {
    fn start(program: &JavaProgram, bootstrap: &str, state_dir: &str) -> Instance {
        let mut cmd = program.command(&[bootstrap, APP, "words", "counts", state_dir]);
        let dir = std::path::Path::new(state_dir);
        std::fs::write(dir.join("log4j2.properties"), LOG4J).unwrap();
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(dir.join("streams.log"))
            .unwrap();
        cmd.env("LOG4J_CONFIGURATION_FILE", dir.join("log4j2.properties"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("java");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        Instance { child, lines }
    }

    fn wait_running(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l == "state RUNNING" => return,
                Ok(l) if l == "state ERROR" => panic!("the Streams instance failed"),
                Ok(_) => {}
                Err(e) => panic!("no RUNNING state from the Streams instance: {e}"),
            }
        }
    }

    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of batch `n`: lines whose words each batch repeats a known number of times.
fn batch(n: usize) -> String {
    (0..50)
        .map(|i| format!("alpha beta{} gamma-{} Alpha\n", i % 5, n))
        .collect()
}

/// word → count over batches `0..n`, as `batch` writes them.
fn expected(n: usize) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for b in 0..n {
        for line in batch(b).lines() {
            for w in line.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                if !w.is_empty() {
                    *m.entry(w.to_owned()).or_default() += 1;
                }
            }
        }
    }
    m
}

/// The latest count of each word in the output topic.
fn counts(bootstrap: &str) -> BTreeMap<String, u64> {
    let out = kcat(
        &[
            "-C", "-b", bootstrap, "-t", "counts", "-e", "-q", "-f", "%k %s\n",
        ],
        "",
    );
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect()
}

fn produce(bootstrap: &str, n: usize) {
    gregor_ok(
        &[
            "produce", "-b", bootstrap, "--topic", "words", "--acks", "all",
        ],
        &batch(n),
    );
}

fn wait_counts(bootstrap: &str, n: usize, state_dir: &str) {
    let want = expected(n);
    let mut last = BTreeMap::new();
    let ok = poll_until(Duration::from_secs(120), Duration::from_millis(300), || {
        last = counts(bootstrap);
        last == want
    });
    assert!(
        ok,
        "counts after {n} batches: want {want:?}, got {last:?}; the instances logged:\n{}",
        streams_log(state_dir)
    );
}

/// The end of what the instances logged, for a failure's message.
fn streams_log(state_dir: &str) -> String {
    let log = std::fs::read_to_string(std::path::Path::new(state_dir).join("streams.log"))
        .unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(60).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

#[test]
fn a_word_count_keeps_its_counts_through_broker_and_instance_kills() {
    let program = JavaProgram::compile_against(
        "tests/clients/streams",
        "target/streams",
        "kafka-streams-4.4.0.jar",
        "WordCount",
    );
    let mut cluster = Cluster::start(
        "streams",
        1,
        &[
            // Small, so that the changelog rolls and is cleaned; above the instance's producer
            // batches (2 KiB): a batch larger than a segment is refused (RECORD_LIST_TOO_LARGE),
            // in Kafka too.
            ("log.segment.bytes", "4096"),
            ("log.cleaner.backoff.ms", "100"),
            ("log.cleaner.min.cleanable.ratio", "0.01"),
        ],
    );
    let b = cluster.bootstrap();
    cluster.create_topic("words", 2, 1);
    cluster.create_topic("counts", 2, 1);
    cluster.wait_all_led("words");
    cluster.wait_all_led("counts");
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();

    let first = Instance::start(&program, &b, state_dir);
    first.wait_running();
    produce(&b, 0);
    wait_counts(&b, 1, state_dir);

    // The broker killed and back: Streams carries on.
    cluster.kill9(1);
    cluster.restart(1);
    cluster.wait_all_led("words");
    produce(&b, 1);
    wait_counts(&b, 2, state_dir);

    // Killed once its input offsets are committed; a new instance restores the store from
    // the changelog, compacted meanwhile, and counts on.
    let ends: Vec<(i32, i64)> = (0..2)
        .map(|p| {
            let l = cluster.client(1).list_offsets("words", p, -1).1;
            (p, l[0])
        })
        .collect();
    wait_until(
        Duration::from_secs(60),
        "the input offsets committed",
        || committed_offsets(&b, APP, "words") == ends,
    );
    wait_until(Duration::from_secs(60), "a clean of the changelog", || {
        cluster.log_of(1).lines().any(|l| {
            l.contains("[wordcount-counts-changelog-") && l.contains("cleaned up to offset")
        })
    });
    first.kill9();
    let second = Instance::start(&program, &b, state_dir);
    second.wait_running();
    produce(&b, 2);
    wait_counts(&b, 3, state_dir);
    drop(second);
}
