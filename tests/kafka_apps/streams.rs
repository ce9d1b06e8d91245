//! Kafka Streams against gregor: a word count (`tests/clients/streams/WordCount.java`, Kafka
//! Streams 4.4.0, at_least_once) whose repartition and changelog topics Streams creates itself,
//! on a broker with small segments and an eager cleaner so that the changelog is compacted
//! while the test runs. Its counts stay right through a kill -9 of the broker, and through a
//! kill -9 of the Streams instance once it had committed, after which a new instance rebuilds
//! its store from the compacted changelog and counts on from there. At `exactly_once_v2` (its
//! producers transactional, its offsets committed in their transactions), a word count killed
//! with kill -9 in the middle of its input emits, as read_committed sees it, each count of
//! each word exactly once.

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
        Self::start_with(program, &[bootstrap, APP, "words", "counts", state_dir])
    }

    /// `WordCount` with these arguments (`state_dir` the fifth).
    fn start_with(program: &JavaProgram, args: &[&str]) -> Instance {
        let state_dir = args[4];
        let mut cmd = program.command(args);
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

/// Each word's counts in the order `read_committed` reads them from `topic`.
fn committed_counts(bootstrap: &str, topic: &str) -> BTreeMap<String, Vec<u64>> {
    let out = kcat(
        &[
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-e",
            "-q",
            "-X",
            "isolation.level=read_committed",
            "-f",
            "%k %s\n",
        ],
        "",
    );
    let mut m: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (k, v) in out.lines().filter_map(|l| l.split_once(' ')) {
        m.entry(k.to_owned()).or_default().push(v.parse().unwrap());
    }
    m
}

#[test]
fn an_exactly_once_word_count_emits_each_count_once_through_a_kill_9() {
    let program = JavaProgram::compile_against(
        "tests/clients/streams",
        "target/streams",
        "kafka-streams-4.4.0.jar",
        "WordCount",
    );
    let cluster = Cluster::start(
        "streams-eos",
        1,
        &[
            ("transaction.state.log.replication.factor", "1"),
            ("transaction.state.log.num.partitions", "4"),
        ],
    );
    let b = cluster.bootstrap();
    cluster.create_topic("eos-words", 2, 1);
    cluster.create_topic("eos-counts", 2, 1);
    cluster.wait_all_led("eos-words");
    cluster.wait_all_led("eos-counts");
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap();
    let args = [
        b.as_str(),
        "eos-count",
        "eos-words",
        "eos-counts",
        dir,
        "exactly_once_v2",
    ];

    let first = Instance::start_with(&program, &args);
    first.wait_running();
    for n in 0..6 {
        gregor_ok(
            &["produce", "-b", &b, "--topic", "eos-words", "--acks", "all"],
            &batch(n),
        );
    }
    // Killed once some counts are committed, the rest of its input not all processed.
    let mut seen = BTreeMap::new();
    wait_until(Duration::from_secs(120), "some counts committed", || {
        seen = committed_counts(&b, "eos-counts");
        seen.get("alpha").is_some_and(|c| c.len() >= 20)
    });
    first.kill9();
    let second = Instance::start_with(&program, &args);
    second.wait_running();
    let want = expected(6);
    let mut got = BTreeMap::new();
    let done = poll_until(Duration::from_secs(120), Duration::from_millis(300), || {
        got = committed_counts(&b, "eos-counts");
        want.iter()
            .all(|(w, n)| got.get(w).and_then(|c| c.last()) == Some(n))
    });
    assert!(
        done,
        "final counts: want {want:?}, got {got:?}\n{}",
        streams_log(dir)
    );
    // Each count of each word once, in order: no count repeated by the killed instance's
    // uncommitted work, none skipped.
    for (word, n) in &want {
        let counts = &got[word];
        let exact: Vec<u64> = (1..=*n).collect();
        assert_eq!(counts, &exact, "{word}");
    }
    drop(second);
}
