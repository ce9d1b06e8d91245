//! Format v2 through real clients against a 3-broker cluster (replication factor 3): records
//! with keys, headers and timestamps produced with every codec and read back intact by
//! librdkafka (kcat, confluent-kafka), kafka-python and aiokafka with their defaults, and by
//! the official Java client (kafka-clients 4.3.0, idempotent by default); and v2 data read by
//! a 0.8 client through down-conversion. scripts/test.sh installs every client.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::java::JavaProgram;
use common::{kcat, run_with_deadline};

fn roundtrip(client: &str, codecs: &str) {
    let c = Cluster::start(&format!("modern-{client}"), 3, &[]);
    c.create_topic("v2", 1, 3);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/modern_roundtrip.py"
    );
    let bootstrap = format!("127.0.0.1:{}", c.brokers[&1].port);
    let mut cmd = common::python();
    cmd.args([script, client, &bootstrap, "v2", codecs]);
    let (ok, out, err) = run_with_deadline(&mut cmd, "", Duration::from_secs(180));
    assert!(
        ok,
        "{client} (installed by scripts/test.sh) failed:\n{out}\n{err}"
    );
    let n = codecs.split(',').count() * 20;
    assert_eq!(out.trim(), format!("ok {n}"));
}

#[test]
fn confluent_kafka_writes_and_reads_format_v2_with_every_codec() {
    roundtrip("confluent", "none,gzip,snappy,lz4,zstd");
}

#[test]
fn kafka_python_writes_and_reads_format_v2_idempotently_by_default() {
    roundtrip("kafka-python", "none,gzip,snappy");
}

#[test]
fn aiokafka_writes_and_reads_format_v2_with_every_codec() {
    roundtrip("aiokafka", "none,gzip,snappy,lz4,zstd");
}

#[test]
fn kcat_writes_headers_and_a_08_client_reads_v2_data_down_converted() {
    let c = Cluster::start("modern-kcat", 3, &[]);
    c.create_topic("kc", 1, 3);
    let b = format!("127.0.0.1:{}", c.brokers[&2].port);
    kcat(
        &[
            "-P", "-b", &b, "-t", "kc", "-p", "0", "-K", ":", "-H", "h1=x", "-H", "h2=y", "-z",
            "lz4",
        ],
        "a:one\nb:two\nc:three\n",
    );
    let out = kcat(
        &[
            "-C",
            "-b",
            &b,
            "-t",
            "kc",
            "-e",
            "-q",
            "-f",
            "%o %k %s %h\\n",
        ],
        "",
    );
    assert_eq!(
        out,
        "0 a one h1=x,h2=y\n1 b two h1=x,h2=y\n2 c three h1=x,h2=y\n"
    );
    // A 0.8 client (no ApiVersions, Fetch v0): the same messages in format 0, headers dropped.
    let old = kcat(
        &[
            "-C",
            "-b",
            &b,
            "-t",
            "kc",
            "-e",
            "-q",
            "-o",
            "1",
            "-X",
            "api.version.request=false",
            "-X",
            "broker.version.fallback=0.8.2",
            "-f",
            "%o %k %s\\n",
        ],
        "",
    );
    assert_eq!(old, "1 b two\n2 c three\n");
}

/// Produces, reads by assign() and by timestamp, then consumes in a group and commits.
#[test]
fn the_java_client_produces_and_consumes_with_its_defaults() {
    let program = JavaProgram::compile("ProduceConsume");
    let c = Cluster::start("modern-java", 3, &[]);
    for (topic, codec) in [
        ("j-none", "none"),
        ("j-lz4", "lz4"),
        ("j-zstd", "zstd"),
        ("j-snappy", "snappy"),
    ] {
        c.create_topic(topic, 1, 3);
        let bootstrap = format!("127.0.0.1:{}", c.brokers[&3].port);
        let (ok, out, err) =
            program.run(&[&bootstrap, topic, "5", codec], Duration::from_secs(120));
        assert!(ok, "the Java client failed with {codec}:\n{out}\n{err}");
        let lines: Vec<&str> = out.lines().collect();
        let sent: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("sent"))
            .collect();
        assert_eq!(
            sent,
            ["sent 0 0", "sent 0 1", "sent 0 2", "sent 0 3", "sent 0 4"],
            "{out}"
        );
        let got: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("got"))
            .collect();
        let want: Vec<String> = (0..5)
            .map(|i| {
                format!(
                    "got {i} k{i} {codec}{i} {} h=x{i}",
                    1_700_000_000_000i64 + i
                )
            })
            .collect();
        assert_eq!(got, want, "{out}");
        assert!(lines.contains(&"for_time 2"), "{out}");
        assert!(lines.contains(&"group 5 committed 5"), "{out}");
    }
}
