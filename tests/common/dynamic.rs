//! Dynamic broker configuration through the tools an operator uses: Apache Kafka 4.4's own
//! `kafka-configs` and confluent-kafka's AdminClient (`tests/clients/broker_configs.py`), and
//! kazoo reading what is stored in ZooKeeper.

use std::time::Duration;

use super::cluster::Cluster;
use super::wait_until;

pub const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";

/// Runs kafka-configs, which must succeed; its output.
pub fn configs(c: &Cluster, args: &[&str]) -> String {
    let (ok, out, err) = super::java::run_kafka_tool(CONFIGS, &c.bootstrap(), args);
    assert!(ok, "kafka-configs {args:?}:\n{out}\n{err}");
    out
}

/// Runs kafka-configs, which must fail; what it said.
pub fn configs_refused(c: &Cluster, args: &[&str]) -> String {
    let (ok, out, err) = super::java::run_kafka_tool(CONFIGS, &c.bootstrap(), args);
    assert!(!ok, "kafka-configs {args:?} succeeded:\n{out}");
    format!("{out}\n{err}")
}

pub fn broker_args(entity: &str) -> Vec<&str> {
    if entity.is_empty() {
        vec!["--entity-type", "brokers", "--entity-default"]
    } else {
        vec!["--entity-type", "brokers", "--entity-name", entity]
    }
}

/// `kafka-configs --alter` on a broker, or the defaults when `entity` is empty: `change` is
/// `--add-config` or `--delete-config`.
pub fn alter_config(c: &Cluster, entity: &str, change: &str, what: &str) -> String {
    let args = [&broker_args(entity)[..], &["--alter", change, what]].concat();
    configs(c, &args)
}

/// `kafka-configs --alter --add-config` on a broker (or the defaults), which must be refused:
/// what the tool said.
pub fn add_config_refused(c: &Cluster, entity: &str, pairs: &str) -> String {
    let args = [
        &broker_args(entity)[..],
        &["--alter", "--add-config", pairs],
    ]
    .concat();
    configs_refused(c, &args)
}

pub fn add_config(c: &Cluster, entity: &str, pairs: &str) -> String {
    alter_config(c, entity, "--add-config", pairs)
}

pub fn delete_config(c: &Cluster, entity: &str, keys: &str) -> String {
    alter_config(c, entity, "--delete-config", keys)
}

/// confluent-kafka's view of `keys` of broker `id` ("" for the defaults): value, source,
/// read-only and sensitive flags of each.
pub fn describe(c: &Cluster, id: &str, keys: &[&str]) -> serde_json::Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/broker_configs.py"
    );
    let mut cmd = super::python();
    cmd.args([script, "describe", &c.bootstrap(), id])
        .args(keys);
    let (ok, out, err) = super::run_with_deadline(&mut cmd, "", Duration::from_secs(60));
    assert!(ok, "broker_configs.py describe failed:\n{out}\n{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out:?}: {e}\n{err}"))
}

/// confluent-kafka's IncrementalAlterConfigs SET: "ok" or "error: …".
pub fn alter(c: &Cluster, id: &str, args: &[&str]) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/broker_configs.py"
    );
    let mut cmd = super::python();
    cmd.args([script, "alter", &c.bootstrap(), id]).args(args);
    let (ok, out, err) = super::run_with_deadline(&mut cmd, "", Duration::from_secs(60));
    assert!(ok, "broker_configs.py alter failed:\n{out}\n{err}");
    out.trim().to_owned()
}

/// (value, source) of `key` at broker `id`.
pub fn value_and_source(c: &Cluster, id: i32, key: &str) -> (String, String) {
    let d = describe(c, &id.to_string(), &[key]);
    let e = &d[key];
    (
        e["value"].as_str().unwrap_or("null").to_owned(),
        e["source"].as_str().unwrap().to_owned(),
    )
}

/// Waits until every broker of `ids` reports `key` as `value` from `source`.
pub fn wait_reported(c: &Cluster, ids: &[i32], key: &str, value: &str, source: &str) {
    for &id in ids {
        wait_until(
            Duration::from_secs(30),
            &format!("broker {id} to report {key}={value} from {source}"),
            || value_and_source(c, id, key) == (value.to_owned(), source.to_owned()),
        );
    }
}

/// The data of the ZooKeeper node `path`, as kazoo (ZooKeeper's Python client) reads it.
pub fn zk_node(c: &Cluster, path: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/zk_read.py");
    let mut cmd = super::python();
    cmd.args([script, &c.zk_connect, path]);
    let (ok, out, err) = super::run_with_deadline(&mut cmd, "", Duration::from_secs(60));
    assert!(ok, "zk_read.py {path} failed:\n{out}\n{err}");
    out
}
