//! kafka-python (the PyPI release, with its default settings) against a 3-broker cluster:
//! it sends format v2 batches (idempotent, acks=all), uncompressed, gzip and xerial-framed
//! snappy, and reads them back with an assign()-based consumer.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::run_with_deadline;

#[test]
fn kafka_python_produces_and_consumes_with_its_defaults() {
    let c = Cluster::start("kafka-python", 3, &[]);
    c.create_topic("py", 2, 3);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/kafka_python_roundtrip.py"
    );
    let bootstrap = format!("127.0.0.1:{}", c.brokers[&1].port);
    let mut cmd = common::python();
    cmd.args([script, &bootstrap, "py", "2"]);
    let (ok, out, err) = run_with_deadline(&mut cmd, "", Duration::from_secs(120));
    assert!(
        ok,
        "kafka-python (installed by scripts/test.sh) failed:\n{out}\n{err}"
    );
    assert_eq!(out.trim(), "ok 150");
}
