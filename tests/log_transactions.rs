//! Transactions in a `Log` (`log::transactions`, `log::txn_index`): for random interleavings
//! of transactional producers, their commits and aborts and plain records, a `read_committed`
//! reader — Kafka's consumer algorithm over the aborted transactions the log lists, up to its
//! last stable offset — sees exactly the committed and plain records, on the leader, on a
//! follower that copied its batches, after a reopen that lost the `.txnindex` files, and after
//! a truncation; markers are fenced by producer and coordinator epoch; a marker above the high
//! watermark holds the last stable offset back.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use gregor::log::Log;
use gregor::log::cleaner::Throttle;
use gregor::log::transactions::MarkerError;
use gregor::log::txn_index::AbortedTxn;
use gregor::protocol::record_batch::{self, BatchBuilder, NewRecord, TxnMarker};
use gregor::protocol::records;
use proptest::prelude::*;

#[path = "common/logs.rs"]
#[allow(dead_code)]
mod logs;

use logs::open;

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A batch of `n` records from producer `pid`, in its transaction when `txn`.
    Data { pid: i64, txn: bool, n: u8 },
    /// The coordinator ends `pid`'s transaction.
    End { pid: i64, commit: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..4i64, any::<bool>(), 1..4u8).prop_map(|(pid, txn, n)| Op::Data { pid, txn, n }),
        1 => (0..4i64, any::<bool>()).prop_map(|(pid, commit)| Op::End { pid, commit }),
    ]
}

/// What the model knows after the operations: every record's offset with whether a
/// `read_committed` reader must see it, and the first offset of each transaction still open.
#[derive(Default, Clone)]
struct Model {
    visible: BTreeMap<i64, bool>,
    open: HashMap<i64, Vec<i64>>,
    /// Each record's key.
    keys: BTreeMap<i64, u8>,
}

/// The producer that fills segments with plain records after the operations.
const FILLER: i64 = 9;

/// Record `i` of a batch has key `key_base + i`: the filler's keys are its own, so that what
/// the operations wrote is not all superseded by it.
fn key_base(pid: i64) -> u8 {
    if pid == FILLER { 100 } else { 0 }
}

/// Applies `ops` to `log` (the leader) and the model; each producer's sequence in `seqs`.
fn run(log: &Log, ops: &[Op], model: &mut Model, seqs: &mut HashMap<i64, i32>) {
    for op in ops {
        match *op {
            Op::Data { pid, txn, n } => {
                let seq = seqs.entry(pid).or_insert(0);
                let mut b = BatchBuilder::new().idempotent(pid, 0, *seq);
                if txn {
                    b = b.transactional();
                }
                for i in 0..n {
                    b.push(&NewRecord {
                        timestamp: 1_000,
                        key: Some(&[key_base(pid) + i]),
                        value: Some(b"v"),
                        headers: &[],
                    });
                }
                let mut batch = b.finish(0).unwrap();
                let first = log.log_end_offset();
                log.append_batch(&mut batch, u32::from(n), 0, None).unwrap();
                *seq += i32::from(n);
                for o in first..first + i64::from(n) {
                    model.keys.insert(o, key_base(pid) + (o - first) as u8);
                    model.visible.insert(o, !txn);
                    if txn {
                        model.open.entry(pid).or_default().push(o);
                    }
                }
            }
            Op::End { pid, commit } => {
                let marker = TxnMarker {
                    commit,
                    coordinator_epoch: 0,
                };
                log.append_marker(pid, 0, marker, 0, 1_000)
                    .unwrap()
                    .expect("a marker of the current epochs");
                for o in model.open.remove(&pid).unwrap_or_default() {
                    model.visible.insert(o, commit);
                }
            }
        }
    }
}

/// Kafka's `read_committed` consumer: reads every batch up to the last stable offset, skips
/// the records of a producer from the first offset of one of its listed aborted transactions
/// up to its ABORT marker, and skips markers. Returns the offsets it hands the application.
fn read_committed(log: &Log) -> BTreeSet<i64> {
    let lso = log.last_stable_offset();
    let mut aborted: Vec<AbortedTxn> = log.aborted_transactions(0, lso);
    aborted.sort_by_key(|a| a.first_offset);
    let mut aborted = aborted.into_iter().peekable();
    let mut skipping: BTreeSet<i64> = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for e in read_batches(log, Some(lso)) {
        let e = &e;
        let b = record_batch::parse_batch(e).unwrap();
        while aborted
            .peek()
            .is_some_and(|a| a.first_offset <= b.last_offset())
        {
            skipping.insert(aborted.next().unwrap().producer_id);
        }
        if b.is_control() {
            if record_batch::parse_marker(b.bytes()).is_some_and(|m| !m.commit) {
                skipping.remove(&b.producer_id());
            }
            continue;
        }
        let (txn, _) = record_batch::header_flags(b.bytes());
        if txn && skipping.contains(&b.producer_id()) {
            continue;
        }
        // The records it holds (a batch the cleaner emptied holds none).
        b.records()
            .unwrap()
            .for_each(|r| {
                seen.insert(b.base_offset() + i64::from(r.offset_delta));
            })
            .unwrap();
    }
    seen
}

/// Every batch from the log's start below `max_offset` (all when `None`), read a segment at a
/// time.
fn read_batches(log: &Log, max_offset: Option<i64>) -> Vec<Vec<u8>> {
    let end = max_offset.unwrap_or(log.log_end_offset());
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < end {
        let mut buf = Vec::new();
        let n = log.read(offset, 1 << 24, max_offset, &mut buf).unwrap();
        assert!(n > 0, "nothing read at {offset} below {end}");
        for e in records::entries(&buf) {
            let e = e.unwrap();
            offset = e.last_offset + 1;
            out.push(e.bytes.to_vec());
        }
    }
    out
}

/// The model's view: the visible records below the first offset of a transaction still open.
fn expected(model: &Model) -> (BTreeSet<i64>, i64) {
    let lso = model
        .open
        .values()
        .flat_map(|v| v.first())
        .min()
        .copied()
        .unwrap_or(i64::MAX);
    let seen = model
        .visible
        .range(..lso)
        .filter(|(_, v)| **v)
        .map(|(o, _)| *o)
        .collect();
    (seen, lso)
}

fn check(log: &Log, model: &Model, what: &str) {
    let (seen, lso) = expected(model);
    assert_eq!(
        log.last_stable_offset(),
        lso.min(log.high_watermark()),
        "{what}: LSO"
    );
    assert_eq!(read_committed(log), seen, "{what}: records read");
}

/// A follower's copy: the leader's batches, appended with their offsets.
fn follow(leader: &Log, dir: &Path) -> Log {
    let f = open(dir, 700);
    let mut at = 0;
    for bytes in read_batches(leader, None) {
        let b = record_batch::parse_batch(&bytes).unwrap();
        f.append_with_offsets(&bytes, b.base_offset(), b.last_offset())
            .unwrap();
        at = b.last_offset() + 1;
    }
    assert_eq!(at, leader.log_end_offset());
    f.store_high_watermark(f.log_end_offset());
    f
}

/// Caught by a consume-transform-produce copier across a leader's kill -9: a follower kept a
/// marker's sequence (-1) as its producer's last, so as the new leader it refused the
/// producer's next batch as out of order.
fn takes_the_next_sequences(log: &Log, seqs: &HashMap<i64, i32>, what: &str) {
    for (&pid, &seq) in seqs {
        let mut b = BatchBuilder::new().idempotent(pid, 0, seq);
        b.push(&NewRecord {
            timestamp: 2_000,
            key: None,
            value: Some(b"next"),
            headers: &[],
        });
        let mut batch = b.finish(0).unwrap();
        let outcome = log.append_batch(&mut batch, 1, 1, None).unwrap();
        assert!(
            matches!(
                outcome,
                gregor::log::partition_log::BatchOutcome::Appended(_)
            ),
            "{what}: producer {pid}'s batch at sequence {seq}: {outcome:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn read_committed_sees_the_committed_records(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let log = open(&dir.path().join("leader"), 700);
        let mut model = Model::default();
        let mut seqs = HashMap::new();
        // The model and log end after each operation, for the truncation below.
        let mut states = Vec::new();
        for op in &ops {
            run(&log, std::slice::from_ref(op), &mut model, &mut seqs);
            states.push((log.log_end_offset(), model.clone()));
        }
        log.store_high_watermark(log.log_end_offset());
        check(&log, &model, "leader");

        let follower = follow(&log, &dir.path().join("follower"));
        check(&follower, &model, "follower");
        // Made leader, the follower takes each producer's next batch, markers or not; and so
        // does a log rebuilt from the follower's files.
        takes_the_next_sequences(&follower, &seqs, "follower");
        let again = follow(&log, &dir.path().join("follower-2"));
        let again_dir = again.dir.clone();
        drop(again);
        takes_the_next_sequences(&open(&again_dir, 700), &seqs, "rebuilt follower");

        // A reopen after the `.txnindex` files were lost: recovery from the log start
        // (no recovery point) writes them again.
        let path = log.dir.clone();
        drop(log);
        for e in std::fs::read_dir(&path).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "txnindex") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let log = open(&path, 700);
        log.store_high_watermark(log.log_end_offset());
        check(&log, &model, "reopened");

        // A truncation to where the log was halfway through: the model of then.
        let (cut, before) = states[ops.len() / 2].clone();
        log.truncate_to(cut).unwrap();
        log.store_high_watermark(cut);
        assert_eq!(log.log_end_offset(), cut);
        check(&log, &before, "truncated");
    }
}

#[test]
fn markers_are_fenced_by_producer_and_coordinator_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), 1 << 20);
    let mut model = Model::default();
    let mut seqs = HashMap::new();
    run(
        &log,
        &[Op::Data {
            pid: 1,
            txn: true,
            n: 2,
        }],
        &mut model,
        &mut seqs,
    );
    let m = |commit, coordinator_epoch| TxnMarker {
        commit,
        coordinator_epoch,
    };
    // A new epoch's abort (the coordinator fencing the producer) ends the transaction...
    assert_eq!(log.append_marker(1, 1, m(false, 3), 0, 1).unwrap(), Ok(2));
    // ...and the old epoch's markers are refused, as an older coordinator's are.
    assert_eq!(
        log.append_marker(1, 0, m(true, 3), 0, 1).unwrap(),
        Err(MarkerError::ProducerFenced { current: 1, got: 0 })
    );
    assert_eq!(
        log.append_marker(1, 1, m(true, 2), 0, 1).unwrap(),
        Err(MarkerError::CoordinatorFenced { current: 3, got: 2 })
    );
    log.store_high_watermark(log.log_end_offset());
    assert_eq!(log.last_stable_offset(), 3);
    assert_eq!(
        log.aborted_transactions(0, 3),
        vec![AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 3
        }]
    );
    assert!(read_committed(&log).is_empty());
}

#[test]
fn a_marker_above_the_high_watermark_holds_the_last_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), 1 << 20);
    let mut model = Model::default();
    let mut seqs = HashMap::new();
    let ops = [
        Op::Data {
            pid: 7,
            txn: false,
            n: 2,
        },
        Op::Data {
            pid: 1,
            txn: true,
            n: 2,
        },
        Op::Data {
            pid: 2,
            txn: true,
            n: 1,
        },
    ];
    run(&log, &ops, &mut model, &mut seqs);
    log.store_high_watermark(5);
    assert_eq!(log.last_stable_offset(), 2, "the first open transaction");
    assert_eq!(log.open_transactions(), 2);
    run(
        &log,
        &[Op::End {
            pid: 1,
            commit: true,
        }],
        &mut model,
        &mut seqs,
    );
    // Its marker (offset 5) is not replicated: the transaction still holds the LSO at 2.
    assert_eq!(log.last_stable_offset(), 2);
    log.store_high_watermark(6);
    assert_eq!(log.last_stable_offset(), 4, "now the other one holds it");
    run(
        &log,
        &[Op::End {
            pid: 2,
            commit: false,
        }],
        &mut model,
        &mut seqs,
    );
    log.store_high_watermark(7);
    assert_eq!(log.last_stable_offset(), 7);
    assert_eq!(log.open_transactions(), 0);
    check(&log, &model, "both ended");
}

/// Every record's offset the log still holds (markers included), read uncommitted.
fn offsets_held(log: &Log) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for bytes in read_batches(log, None) {
        records::for_each_message(&bytes, |o, _, _, _, _| {
            out.insert(o);
        })
        .unwrap();
    }
    out
}

fn clean(log: &Log) -> gregor::log::cleaner::Cleaned {
    let c = logs::compaction(0.0, 0);
    log.clean(&c, 1 << 20, &Throttle::new(f64::MAX), 4096, None)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// A compacted log of transactions: what a `read_committed` reader sees after cleaning is
    /// each key's latest committed (or plain) record below where the clean reached, and every
    /// committed record above; no aborted record is left below it; markers go once nothing of
    /// their transaction is left and their horizon passed, and a reopened log has no
    /// transaction left open by a marker gone too soon.
    #[test]
    fn cleaning_keeps_what_read_committed_sees(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path(), 400);
        let mut model = Model::default();
        let mut seqs = HashMap::new();
        run(&log, &ops, &mut model, &mut seqs);
        // End what is open (aborted), and roll past it with plain records of another key.
        let still_open: Vec<i64> = model.open.keys().copied().collect();
        for pid in still_open {
            run(&log, &[Op::End { pid, commit: false }], &mut model, &mut seqs);
        }
        for _ in 0..8 {
            run(&log, &[Op::Data { pid: FILLER, txn: false, n: 3 }], &mut model, &mut seqs);
        }
        log.store_high_watermark(log.log_end_offset());
        let first = clean(&log);
        let end = first.first_dirty;
        prop_assert!(end > 0);
        for pass in ["first clean", "second clean"] {
            // Below `end`, the latest visible record of each key; from `end` on, all visible.
            let mut latest: HashMap<u8, i64> = HashMap::new();
            for (o, v) in model.visible.range(..end) {
                if *v {
                    latest.insert(model.keys[o], *o);
                }
            }
            let want: BTreeSet<i64> = model
                .visible
                .iter()
                .filter(|(o, v)| **v && (**o >= end || latest[&model.keys[*o]] == **o))
                .map(|(o, _)| *o)
                .collect();
            prop_assert_eq!(read_committed(&log), want, "{}", pass);
            let held = offsets_held(&log);
            for (o, v) in model.visible.range(..end) {
                prop_assert!(*v || !held.contains(o), "{}: aborted record {} left", pass, o);
            }
            clean(&log);
        }
        // No marker is left whose transaction has no batch left before it.
        let mut batches: HashMap<i64, usize> = HashMap::new();
        for bytes in read_batches(&log, Some(end)) {
            let b = record_batch::parse_batch(&bytes).unwrap();
            let (txn, control) = record_batch::header_flags(&bytes);
            if control {
                prop_assert!(
                    batches.remove(&b.producer_id()).is_some(),
                    "a marker at {} outlived its transaction", b.base_offset()
                );
            } else if txn {
                *batches.entry(b.producer_id()).or_default() += 1;
            }
        }
        let path = log.dir.clone();
        drop(log);
        let log = open(&path, 400);
        log.store_high_watermark(log.log_end_offset());
        prop_assert_eq!(log.last_stable_offset(), log.log_end_offset());
        prop_assert_eq!(log.open_transactions(), 0);
    }
}
