//! Transactions in the chaos run: confluent-kafka's transactional producer
//! (`tests/clients/txn_chaos.py`) writes transactions of five records to their own topic
//! throughout the faults, committing most and aborting every fifth; after the run a
//! read_committed reader must see every committed transaction whole and once, no aborted one,
//! and each transaction whose end the producer could not know all or not at all.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use crate::common::tell_and_wait;
use crate::common::txn::read_partitions;

/// The transactional producer's topic.
pub const TXN_TOPIC: &str = "chaos-txn";
/// Records per transaction.
const RECORDS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    Aborted,
    Unknown,
}

pub struct TxnWorkload {
    child: Child,
    reader: Option<JoinHandle<()>>,
    pub outcomes: Arc<Mutex<BTreeMap<u64, Outcome>>>,
}

impl TxnWorkload {
    pub fn start(bootstrap: &str) -> TxnWorkload {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/txn_chaos.py");
        let mut cmd = crate::common::python();
        cmd.args([script, bootstrap, TXN_TOPIC])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        crate::common::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("start the transactional producer");
        let out = child.stdout.take().expect("piped");
        let outcomes: Arc<Mutex<BTreeMap<u64, Outcome>>> = Arc::default();
        let seen = outcomes.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let mut w = line.split(' ');
                let outcome = match w.next() {
                    Some("committed") => Outcome::Committed,
                    Some("aborted") => Outcome::Aborted,
                    Some("unknown") => Outcome::Unknown,
                    _ => continue,
                };
                if let Some(k) = w.next().and_then(|k| k.parse().ok()) {
                    seen.lock().insert(k, outcome);
                }
            }
        });
        TxnWorkload {
            child,
            reader: Some(reader),
            outcomes,
        }
    }

    /// Ends the producer after its transaction in progress.
    pub fn stop(&mut self) {
        tell_and_wait(&mut self.child, b"stop\n", Duration::from_secs(150));
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }

    /// What is wrong with what read_committed reads of the topic, given the outcomes; and
    /// how many transactions ended each way.
    pub fn check(&self, bootstrap: &str) -> (Vec<String>, String) {
        let outcomes = self.outcomes.lock().clone();
        let read: Vec<String> = read_partitions(bootstrap, TXN_TOPIC, "read_committed")
            .into_values()
            .flatten()
            .collect();
        let mut by_txn: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
        let mut problems = Vec::new();
        let mut twice = 0;
        for v in &read {
            let parsed = v
                .strip_prefix('t')
                .and_then(|r| r.split_once('-'))
                .and_then(|(k, i)| Some((k.parse().ok()?, i.parse().ok()?)));
            let Some((k, i)) = parsed else {
                problems.push(format!(
                    "transactions: a record not written by the producer: {v}"
                ));
                continue;
            };
            if !by_txn.entry(k).or_default().insert(i) {
                twice += 1;
            }
        }
        if twice > 0 {
            problems.push(format!("transactions: {twice} records read twice"));
        }
        let mut counts = BTreeMap::new();
        for (k, outcome) in &outcomes {
            *counts.entry(format!("{outcome:?}")).or_insert(0) += 1;
            let have = by_txn.get(k).map_or(0, BTreeSet::len);
            let wrong = match outcome {
                Outcome::Committed => have != RECORDS,
                Outcome::Aborted => have != 0,
                Outcome::Unknown => have != 0 && have != RECORDS,
            };
            if wrong {
                problems.push(format!(
                    "transactions: transaction {k} ({outcome:?}) read with {have} of its {RECORDS} records"
                ));
            }
        }
        // A transaction the producer never reported (the one in progress at `stop` is
        // always reported) must not be visible either.
        for (k, records) in &by_txn {
            if !outcomes.contains_key(k) {
                problems.push(format!(
                    "transactions: transaction {k}, never ended, read with {} records",
                    records.len()
                ));
            }
        }
        let summary = format!(
            "txn_committed={} txn_aborted={} txn_unknown={}",
            counts.get("Committed").unwrap_or(&0),
            counts.get("Aborted").unwrap_or(&0),
            counts.get("Unknown").unwrap_or(&0)
        );
        (problems, summary)
    }
}
