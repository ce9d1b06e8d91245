//! Kafka Connect against gregor: a distributed worker (Apache Kafka 4.3.1's, the jars
//! scripts/test.sh installs under `target/connect`) keeps its configs, source offsets and
//! statuses in its three internal topics — which it creates itself, compacted, and refuses to
//! run on otherwise — joins its group (Connect's own group protocol), and runs the file
//! source and sink connectors of `connect-file`: a file copied through a topic arrives whole,
//! and after the worker is stopped, more lines are written and the worker is started again,
//! the copy goes on from where it stood, each line exactly once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::common::cluster::Cluster;
use crate::common::{die_with_parent, exit_or_kill, free_port, poll_until, wait_until};

/// A worker process, stopped (SIGTERM, as `connect-distributed.sh`'s stop) when dropped.
struct Worker {
    child: Option<Child>,
}

impl Worker {
    fn start(dir: &Path) -> Worker {
        let jars = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/connect");
        assert!(
            jars.join("connect-runtime-4.3.1.jar").exists(),
            "Kafka Connect is missing from {}: scripts/test.sh installs it",
            jars.display()
        );
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(dir.join("worker.log"))
            .unwrap();
        let mut cmd = Command::new("java");
        cmd.arg("-Xmx384m")
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                dir.join("log4j2.properties").display()
            ))
            .arg("-cp")
            .arg(format!("{}/*", jars.display()))
            .arg("org.apache.kafka.connect.cli.ConnectDistributed")
            .arg(dir.join("worker.properties"))
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        die_with_parent(&mut cmd);
        Worker {
            child: Some(cmd.spawn().expect("java")),
        }
    }

    /// A graceful stop: the worker commits its tasks' offsets and leaves its group.
    fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: a signal to our own child, not yet reaped.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            exit_or_kill(&mut child, Duration::from_secs(60));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// One HTTP/1.1 request to the worker's REST port: (status, body); `None` when nobody answers.
fn http(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((status, body.to_owned()))
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn append_lines(path: &Path, range: std::ops::Range<u32>) {
    let mut f = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for i in range {
        writeln!(f, "line-{i}").unwrap();
    }
}

/// The connector `name` and its one task are RUNNING.
fn running(port: u16, name: &str) -> bool {
    http(port, "GET", &format!("/connectors/{name}/status"), "")
        .is_some_and(|(s, b)| s == 200 && b.matches("\"state\":\"RUNNING\"").count() == 2)
}

/// The worker's settings: internal topics of one replica (one broker), source offsets flushed
/// every second, and no wait for a departed worker's return before its work is handed out
/// again (`scheduled.rebalance.max.delay.ms`, 5 minutes by default).
fn write_settings(dir: &Path, bootstrap: &str, port: u16) {
    let worker = format!(
        "bootstrap.servers={bootstrap}\n\
         group.id=gregor-connect\n\
         key.converter=org.apache.kafka.connect.storage.StringConverter\n\
         value.converter=org.apache.kafka.connect.storage.StringConverter\n\
         config.storage.topic=connect-configs\n\
         offset.storage.topic=connect-offsets\n\
         status.storage.topic=connect-status\n\
         config.storage.replication.factor=1\n\
         offset.storage.replication.factor=1\n\
         status.storage.replication.factor=1\n\
         offset.storage.partitions=5\n\
         offset.flush.interval.ms=1000\n\
         scheduled.rebalance.max.delay.ms=0\n\
         plugin.discovery=only_scan\n\
         listeners=http://127.0.0.1:{port}\n"
    );
    std::fs::write(dir.join("worker.properties"), worker).unwrap();
    let log4j = "rootLogger.level=WARN\n\
                 rootLogger.appenderRef.stdout.ref=STDOUT\n\
                 appender.stdout.type=Console\n\
                 appender.stdout.name=STDOUT\n\
                 appender.stdout.layout.type=PatternLayout\n\
                 appender.stdout.layout.pattern=[%d] %p %m (%c)%n\n\
                 logger.herder.name=org.apache.kafka.connect.runtime.distributed\n\
                 logger.herder.level=INFO\n";
    std::fs::write(dir.join("log4j2.properties"), log4j).unwrap();
}

fn wait_for_copy(out: &Path, input: &Path, dir: &Path) {
    let done = poll_until(Duration::from_secs(120), Duration::from_millis(200), || {
        lines(out).len() >= lines(input).len()
    });
    let log = std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default();
    assert!(
        done,
        "{} of {} lines copied; worker log:\n{log}",
        lines(out).len(),
        lines(input).len()
    );
}

#[test]
fn a_distributed_worker_copies_a_file_exactly_once_through_a_restart() {
    let cluster = Cluster::start("connect", 1, &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().to_owned();
    let port = free_port();
    write_settings(&dir, &cluster.bootstrap(), port);
    let (input, out) = (dir.join("in.txt"), dir.join("out.txt"));
    append_lines(&input, 0..1000);

    let worker = Worker::start(&dir);
    wait_until(Duration::from_secs(120), "the worker's REST port", || {
        http(port, "GET", "/", "").is_some_and(|(s, b)| s == 200 && b.contains("kafka_cluster_id"))
    });
    let source = format!(
        r#"{{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","file":"{}","topic":"lines","tasks.max":"1"}}"#,
        input.display()
    );
    let sink = format!(
        r#"{{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":"{}","topics":"lines","tasks.max":"1"}}"#,
        out.display()
    );
    for (name, config) in [("source", &source), ("sink", &sink)] {
        let (status, body) = http(port, "PUT", &format!("/connectors/{name}/config"), config)
            .expect("the worker answers");
        assert!(status == 201 || status == 200, "{name}: {status} {body}");
    }
    wait_until(Duration::from_secs(60), "both connectors running", || {
        running(port, "source") && running(port, "sink")
    });
    wait_for_copy(&out, &input, &dir);
    assert_eq!(lines(&out), lines(&input));

    // Stopped, more written meanwhile, started again: on from the offsets it committed.
    worker.stop();
    append_lines(&input, 1000..2500);
    let _worker = Worker::start(&dir);
    wait_for_copy(&out, &input, &dir);
    assert_eq!(
        lines(&out),
        lines(&input),
        "each line exactly once, in order"
    );
    assert!(running(port, "source") && running(port, "sink"));
}
