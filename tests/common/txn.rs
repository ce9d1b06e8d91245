//! `tests/clients/txn_client.py` (confluent-kafka's transactional producer and read_committed
//! reader) as the transaction tests call it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{python, run_with_deadline};

/// Runs `txn_client.py` with `args` (under 180 s); its stdout.
pub fn txn_client(args: &[&str]) -> String {
    let mut cmd = python();
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/txn_client.py"
    ))
    .args(args);
    let (ok, out, err) = run_with_deadline(&mut cmd, "", Duration::from_secs(180));
    assert!(ok, "txn_client {args:?}: {out}\n{err}");
    out
}

/// Each partition's values in offset order, as a consumer at `isolation` reads them, after
/// checking it reached every partition's end.
pub fn read_partitions(
    bootstrap: &str,
    topic: &str,
    isolation: &str,
) -> BTreeMap<i32, Vec<String>> {
    let out = txn_client(&["read", bootstrap, topic, isolation]);
    assert_eq!(out.lines().last(), Some("end"), "{isolation}: {out}");
    let mut parts: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for l in out.lines().filter_map(|l| l.strip_prefix("rec ")) {
        let mut f = l.splitn(3, ' ');
        let p = f.next().unwrap().parse().unwrap();
        let value = f.nth(1).unwrap().to_owned();
        parts.entry(p).or_default().push(value);
    }
    parts
}

/// `PREFIX-0` … `PREFIX-(n-1)`.
pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}
