//! The log cleaner on a `Log` (`log::cleaner`): the cleaned log equals the model — each key's
//! latest record at its original offset, tombstones gone after their delete horizon — for
//! random keys, values and tombstones, with offset maps small enough to need several passes;
//! a clean stopped at each step of its swap (a crash) reopens to a readable log with nothing
//! live lost; an idempotent producer's last batch survives with its sequence; reads go over
//! the holes cleaning leaves.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use gregor::log::Log;
use gregor::log::cleaner::{Step, Throttle};
use gregor::log::overrides::Compaction;
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};
use gregor::protocol::records;
use proptest::prelude::*;

#[path = "common/logs.rs"]
#[allow(dead_code)]
mod logs;

use logs::open;

fn compaction(delete_retention_ms: i64) -> Compaction {
    logs::compaction(0.5, delete_retention_ms)
}

type Rec = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Appends one batch of `recs` (key, value) and publishes the high watermark at the end.
fn append(log: &Log, recs: &[Rec], producer: Option<(i64, i32)>) {
    append_at(log, recs, producer, 1_000);
}

fn append_at(log: &Log, recs: &[Rec], producer: Option<(i64, i32)>, timestamp: i64) {
    let mut b = BatchBuilder::new();
    if let Some((pid, seq)) = producer {
        b = b.idempotent(pid, 0, seq);
    }
    for (k, v) in recs {
        b.push(&NewRecord {
            timestamp,
            key: k.as_deref(),
            value: v.as_deref(),
            headers: &[],
        });
    }
    let mut batch = b.finish(0).unwrap();
    log.append_batch(&mut batch, recs.len() as u32, 0, None)
        .unwrap();
    log.store_high_watermark(log.log_end_offset());
}

/// Every record from the log's start: offset → (key, value).
fn read_all(log: &Log) -> BTreeMap<i64, Rec> {
    let mut out = BTreeMap::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let mut buf = Vec::new();
        let n = log.read(offset, 1 << 20, None, &mut buf).unwrap();
        assert!(
            n > 0,
            "nothing read at {offset} below the end {}",
            log.log_end_offset()
        );
        let mut next = offset;
        for e in records::entries(&buf) {
            next = e.unwrap().last_offset + 1;
        }
        records::for_each_message(&buf, |o, _, k, v, _| {
            out.insert(o, (k.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec)));
        })
        .unwrap();
        offset = next;
    }
    out
}

fn clean(log: &Log, c: &Compaction, map_memory: usize) -> gregor::log::cleaner::Cleaned {
    log.clean(c, map_memory, &Throttle::new(f64::MAX), 4096, None)
        .unwrap()
}

/// What a clean that reached `end` leaves of `all`: below `end`, a keyed record that is its
/// key's last there (and, once `tombstones_expired`, not a tombstone); from `end` on, all.
fn model(all: &BTreeMap<i64, Rec>, end: i64, tombstones_expired: bool) -> BTreeMap<i64, Rec> {
    let mut last: HashMap<&[u8], i64> = HashMap::new();
    for (o, (k, _)) in all.range(..end) {
        if let Some(k) = k {
            last.insert(k, *o);
        }
    }
    all.iter()
        .filter(|(o, (k, v))| {
            **o >= end
                || k.as_deref().is_some_and(|k| last[k] == **o)
                    && (v.is_some() || !tombstones_expired)
        })
        .map(|(o, r)| (*o, r.clone()))
        .collect()
}

fn key(i: u8) -> Option<Vec<u8>> {
    Some(format!("key-{i}").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random batches of keys (from a few), values and tombstones; a map of 40 or of 4,000
    /// keys; cleaned until the whole cleanable section is clean, then again after the
    /// tombstones' horizon: the log is the model at each stage.
    #[test]
    fn the_cleaned_log_is_the_model(
        batches in prop::collection::vec(
            prop::collection::vec((0u8..12, prop::option::weighted(0.8, 0u16..1000)), 1..8),
            10..60,
        ),
        small_map in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path(), 600);
        for b in &batches {
            let recs: Vec<Rec> = b
                .iter()
                .map(|(k, v)| (key(*k), v.map(|v| format!("v{v}").into_bytes())))
                .collect();
            append(&log, &recs, None);
        }
        let all = read_all(&log);
        let memory = if small_map { 40 * 24 } else { 4000 * 24 };
        let c = compaction(0);
        let mut end = 0;
        for _ in 0..50 {
            let done = clean(&log, &c, memory);
            prop_assert!(done.swapped);
            end = done.first_dirty;
            let due = log.cleanable(&c, gregor::log::cleaner::clean::now_ms());
            if due.dirty_bytes == 0 {
                break;
            }
        }
        let active_base = log.log_end_offset() - read_all(&log).range(end..).count() as i64;
        prop_assert!(end >= active_base.min(end), "cleaned to {end}");
        prop_assert_eq!(read_all(&log), model(&all, end, false));
        // The horizon (delete.retention.ms 0) has passed: the next clean drops the tombstones.
        let done = clean(&log, &c, memory);
        prop_assert_eq!(read_all(&log), model(&all, done.first_dirty, true));
        // And the log reopens the same.
        drop(log);
        let log = open(dir.path(), 600);
        prop_assert_eq!(read_all(&log), model(&all, done.first_dirty, true));
    }
}

/// Three versions of each of 20 keys, in small segments.
fn versions_log(dir: &Path) -> (Log, BTreeMap<i64, Rec>) {
    let log = open(dir, 500);
    for version in 0..3 {
        for k in 0..20u8 {
            append(
                &log,
                &[(key(k), Some(format!("v{version}").into_bytes()))],
                None,
            );
        }
    }
    let all = read_all(&log);
    (log, all)
}

#[test]
fn a_clean_stopped_at_each_step_of_its_swap_reopens_readable_with_nothing_live_lost() {
    for stop_at in [Step::Written, Step::Decided, Step::Retired] {
        let dir = tempfile::tempdir().unwrap();
        let (log, all) = versions_log(dir.path());
        let before = read_all(&log);
        let hook = move |s: Step| s != stop_at;
        let r = log.clean(
            &compaction(0),
            1 << 20,
            &Throttle::new(f64::MAX),
            4096,
            Some(&hook),
        );
        assert!(r.is_err(), "{stop_at:?}: the hook stops it");
        drop(log);

        let log = open(dir.path(), 500);
        let after = read_all(&log);
        // Either the old segments or the cleaned one: every key's latest value is there, at its
        // offset, and nothing that was not in the log.
        let latest = model(&all, i64::MAX, false);
        for (o, r) in &latest {
            assert_eq!(after.get(o), Some(r), "{stop_at:?}: latest at {o}");
        }
        for (o, r) in &after {
            assert_eq!(
                before.get(o),
                Some(r),
                "{stop_at:?}: {o} was never written so"
            );
        }
        let leftovers: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
            .collect();
        assert!(leftovers.is_empty(), "{stop_at:?}: {leftovers:?}");
        // And the log cleans to the model after (its replica publishes the high watermark).
        log.store_high_watermark(log.log_end_offset());
        let done = clean(&log, &compaction(0), 1 << 20);
        assert_eq!(read_all(&log), model(&all, done.first_dirty, false));
    }
}

#[test]
fn reads_cross_the_holes_cleaning_leaves_and_fewer_segments_remain() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = versions_log(dir.path());
    let (segments, bytes) = (log.segment_count(), log.size_bytes());
    let done = clean(&log, &compaction(86_400_000), 1 << 20);
    assert!(done.swapped && done.tally.records_kept < done.tally.records_read);
    assert!(
        log.size_bytes() < bytes,
        "{} of {bytes} bytes",
        log.size_bytes()
    );
    // Sources as large as a segment are recopied one by one; once smaller, merged.
    let again = clean(&log, &compaction(86_400_000), 1 << 20);
    assert_eq!(again.first_dirty, done.first_dirty);
    assert!(
        log.segment_count() < segments,
        "{} of {segments}",
        log.segment_count()
    );
    let after = read_all(&log);
    assert_eq!(after, model(&all, done.first_dirty, false));
    // A read at every offset, holes included, gets the next record there is.
    for o in 0..log.log_end_offset() {
        let mut buf = Vec::new();
        log.read(o, 1 << 20, None, &mut buf).unwrap();
        let first = records::decode_deep(&buf)
            .unwrap()
            .into_iter()
            .find(|m| m.offset >= o);
        let expected = after.range(o..).next().map(|(o, _)| *o);
        assert_eq!(first.map(|m| m.offset), expected, "read at {o}");
    }
}

#[test]
fn an_idempotent_producers_last_batch_survives_empty_and_keyless_records_go() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), 300);
    append(&log, &[(key(1), Some(b"a".to_vec()))], Some((7, 0)));
    append(
        &log,
        &[
            (key(1), Some(b"b".to_vec())),
            (None, Some(b"no key".to_vec())),
        ],
        Some((8, 0)),
    );
    // Producer 7's only batch is superseded; later data rolls the segments.
    for i in 0..30u8 {
        append(&log, &[(key(1), Some(vec![i]))], None);
    }
    clean(&log, &compaction(0), 1 << 20);
    let mut batches = Vec::new();
    let mut buf = Vec::new();
    log.read(0, 1 << 20, None, &mut buf).unwrap();
    for e in records::entries(&buf) {
        let b = gregor::protocol::record_batch::parse_batch(e.unwrap().bytes).unwrap();
        batches.push((
            b.producer_id(),
            b.base_sequence(),
            b.last_offset(),
            b.record_count(),
        ));
    }
    assert!(
        batches.contains(&(7, 0, 0, 0)),
        "producer 7's batch kept empty: {batches:?}"
    );
    assert!(
        batches.contains(&(8, 0, 2, 0)),
        "producer 8's batch kept empty: {batches:?}"
    );
    // The producers' next sequences still check after a restart.
    drop(log);
    let log = open(dir.path(), 300);
    let mut next = BatchBuilder::new().idempotent(7, 0, 1);
    next.push(&NewRecord {
        timestamp: 1,
        key: key(2).as_deref(),
        value: Some(b"c"),
        headers: &[],
    });
    let mut batch = next.finish(0).unwrap();
    let out = log.append_batch(&mut batch, 1, 0, None).unwrap();
    assert!(
        matches!(out, gregor::log::partition_log::BatchOutcome::Appended(_)),
        "{out:?}"
    );
}

#[test]
fn records_younger_than_the_minimum_lag_and_above_the_high_watermark_stay() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), 500);
    let now = gregor::log::cleaner::clean::now_ms();
    for version in 0..3 {
        for k in 0..20u8 {
            let v = Some(format!("v{version}").into_bytes());
            append_at(&log, &[(key(k), v)], None, now);
        }
    }
    let all = read_all(&log);
    let lagging = Compaction {
        min_compaction_lag_ms: 3_600_000,
        ..compaction(0)
    };
    let done = clean(&log, &lagging, 1 << 20);
    assert_eq!((done.first_dirty, done.tally.records_read), (0, 0));
    assert_eq!(
        read_all(&log),
        all,
        "a consumer within the lag sees every record"
    );
    // Only what is below the high watermark is cleaned.
    log.store_high_watermark(30);
    let done = clean(&log, &compaction(0), 1 << 20);
    assert!(done.first_dirty <= 30, "cleaned to {}", done.first_dirty);
    assert_eq!(read_all(&log), model(&all, done.first_dirty, false));
    assert!(
        all.range(30..)
            .all(|(o, r)| read_all(&log).get(o) == Some(r))
    );
}

#[test]
fn a_corrupt_batch_makes_the_clean_fail_not_the_process_and_the_log_stays_readable() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = versions_log(dir.path());
    let before = read_all(&log);
    // A byte of the second segment's first batch flipped under the CRC.
    let second = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .min_by_key(|p| {
            let stem = p
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .parse::<i64>()
                .unwrap();
            if stem == 0 { i64::MAX } else { stem }
        })
        .unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&second)
        .unwrap();
    f.write_all_at(b"\xff", 70).unwrap();
    let err = log
        .clean(
            &compaction(0),
            1 << 20,
            &Throttle::new(f64::MAX),
            4096,
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("offset"), "{err}");
    // Nothing was swapped: the first segment still reads as before.
    let first_offsets: Vec<_> = before.range(..6).map(|(o, _)| *o).collect();
    let mut buf = Vec::new();
    log.read(0, 1 << 20, None, &mut buf).unwrap();
    let now: Vec<_> = records::decode_deep(&buf)
        .unwrap()
        .iter()
        .map(|m| m.offset)
        .take(6)
        .collect();
    assert_eq!(now, first_offsets);
}

#[test]
fn delete_records_and_retention_combine_with_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = versions_log(dir.path());
    // DeleteRecords moves the start into the second segment: the clean starts there too, and
    // nothing below the start comes back.
    let start = log.delete_records_before(8).unwrap();
    assert_eq!(start, 8);
    let done = clean(&log, &compaction(0), 1 << 20);
    let visible: BTreeMap<i64, Rec> = all.range(start..).map(|(o, r)| (*o, r.clone())).collect();
    assert_eq!(read_all(&log), model(&visible, done.first_dirty, false));
    assert!(read_all(&log).keys().all(|o| *o >= start));
    // `compact,delete`: retention by size then deletes whole cleaned segments from the front.
    let segments = log.segment_count();
    let deleted = log.delete_old_segments(None, Some(1)).unwrap();
    assert_eq!(deleted, segments - 1, "all but the active segment");
    let rest = read_all(&log);
    assert!(rest.keys().all(|o| *o >= log.log_start_offset()));
    assert_eq!(
        rest,
        model(&visible, done.first_dirty, false).split_off(&log.log_start_offset())
    );
}

#[test]
fn a_stopping_broker_gives_up_its_clean_and_a_truncation_makes_the_rest_dirty_again() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = versions_log(dir.path());
    let io = Throttle::new(f64::MAX);
    io.stop();
    let err = log
        .clean(&compaction(0), 1 << 20, &io, 4096, None)
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
    assert_eq!(read_all(&log), all);
    let done = clean(&log, &compaction(0), 1 << 20);
    assert!(done.first_dirty > 20);
    // A follower cut back below where its cleaner got: from the cut on, it is dirty again.
    log.truncate_to(20).unwrap();
    assert_eq!(log.first_dirty_offset(), log.log_end_offset());
}
