//! The segmented log: appends and reads across rolls, index lookups, recovery of torn and
//! corrupt tails, retention, and what survives a restart.

mod common;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::logs::{append_range, value};
use gregor::config::BrokerConfig;
use gregor::log::{Log, LogConfig, LogError, LogManager};
use gregor::protocol::TopicPartition;
use gregor::protocol::message;

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 256,
        flush_interval_messages: u64::MAX,
        file_delete_delay: std::time::Duration::ZERO,
        roll: std::time::Duration::from_secs(7 * 24 * 3600),
    }
}

/// Reads every message from `from` to the end, hopping segments as a consumer does.
fn read_all(log: &Log, from: i64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = from;
    while offset < log.log_end_offset() {
        let mut buf = Vec::new();
        log.read(offset, 4096, None, &mut buf).unwrap();
        let before = out.len();
        for m in gregor::protocol::records::decode_deep(&buf).unwrap() {
            if m.offset >= offset {
                out.push((m.offset, m.value.unwrap()));
            }
        }
        assert!(out.len() > before, "no progress at offset {offset}");
        offset = out.last().unwrap().0 + 1;
    }
    out
}

fn open(dir: &Path, segment_bytes: u64) -> (Log, gregor::log::segment::Recovered) {
    Log::open(dir.to_path_buf(), "t", 0, config(segment_bytes), None).unwrap()
}

#[test]
fn append_and_read_across_segment_rolls() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 2000);
    append_range(&log, 0, 500, 7);
    assert!(
        log.segment_count() > 10,
        "expected rolls, got {}",
        log.segment_count()
    );
    let all = read_all(&log, 0);
    assert_eq!(all.len(), 500);
    for (i, (off, v)) in all.iter().enumerate() {
        assert_eq!((*off, v.clone()), (i as i64, value(i)));
    }
    // Segment files are named by their base offset, zero-padded to 20 digits.
    let mut names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names[0], "00000000000000000000.index");
    // .index, .log, .timeindex and the producer state .snapshot of each roll (format 0
    // messages carry no leader epoch: no leader-epoch checkpoint).
    assert!(
        names.iter().all(|n| [26, 24, 30, 29].contains(&n.len())),
        "{names:?}"
    );
}

#[test]
fn index_lookup_finds_every_offset() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 1 << 20);
    append_range(&log, 0, 300, 1);
    for target in [0, 1, 37, 150, 255, 299] {
        let mut buf = Vec::new();
        log.read(target, 200, None, &mut buf).unwrap();
        let first = message::iter(&buf).next().unwrap().unwrap();
        assert_eq!(first.offset, target);
        assert_eq!(first.value.unwrap(), &value(target as usize)[..]);
    }
    let mut buf = Vec::new();
    assert_eq!(log.read(300, 100, None, &mut buf).unwrap(), 0);
    assert!(matches!(
        log.read(301, 100, None, &mut buf),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // A cap (the high watermark) stops the read before that offset.
    log.read(10, 1 << 20, Some(12), &mut buf).unwrap();
    let offs: Vec<_> = message::iter(&buf).map(|m| m.unwrap().offset).collect();
    assert_eq!(offs, vec![10, 11]);
}

fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

#[test]
fn recovery_cuts_a_torn_last_message() {
    let d = tempfile::tempdir().unwrap();
    {
        let (log, _) = open(d.path(), 4000);
        append_range(&log, 0, 100, 3);
        log.flush().unwrap();
    }
    let seg = last_segment(d.path());
    let len = std::fs::metadata(&seg).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let (log, rec) = open(d.path(), 4000);
    assert!(rec.truncated_bytes > 0);
    assert_eq!(log.log_end_offset(), 99);
    let all = read_all(&log, 0);
    assert_eq!(all.len(), 99);
    assert_eq!(all[98].1, value(98));
    // The log takes appends again right after the cut.
    append_range(&log, 99, 120, 4);
    assert_eq!(read_all(&log, 0).len(), 120);
}

#[test]
fn recovery_cuts_at_a_corrupted_byte_and_garbage_tail() {
    let d = tempfile::tempdir().unwrap();
    {
        let (log, _) = open(d.path(), 1 << 20);
        append_range(&log, 0, 50, 1);
    }
    let seg = last_segment(d.path());
    let mut bytes = std::fs::read(&seg).unwrap();
    // Find message 30 and flip a byte of its value.
    let mut pos = 0;
    for _ in 0..30 {
        pos += message::parse_entry(&bytes[pos..]).unwrap().entry_len;
    }
    let m30 = pos;
    bytes[m30 + 30] ^= 0x5a;
    std::fs::write(&seg, &bytes).unwrap();
    let (log, rec) = open(d.path(), 1 << 20);
    assert_eq!(rec.messages, 30);
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(read_all(&log, 0).len(), 30);
    drop(log);
    // Garbage appended after valid messages is cut too.
    OpenOptions::new()
        .append(true)
        .open(&seg)
        .unwrap()
        .write_all(&[0xff; 40])
        .unwrap();
    let (log, rec) = open(d.path(), 1 << 20);
    assert_eq!(rec.truncated_bytes, 40);
    assert_eq!(log.log_end_offset(), 30);
}

#[test]
fn missing_or_bad_index_is_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    {
        let (log, _) = open(d.path(), 3000);
        append_range(&log, 0, 200, 5);
    }
    let mut indexes: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "index"))
        .collect();
    indexes.sort();
    std::fs::remove_file(&indexes[0]).unwrap();
    std::fs::write(&indexes[1], [1, 2, 3]).unwrap();
    let (log, _) = open(d.path(), 3000);
    let all = read_all(&log, 0);
    assert_eq!(all.len(), 200);
    for index in &indexes {
        let len = std::fs::metadata(index).map_or(0, |m| m.len());
        assert!(
            len >= 8 && len % 8 == 0,
            "{}: rebuilt on disk ({len} bytes)",
            index.display()
        );
    }
}

/// Index entries go where their number puts them, however the segment was opened or cut
/// (not at a file cursor, which a rebuilt or cut index leaves elsewhere): each append keeps
/// what the file held and adds to it.
#[test]
fn index_files_stay_whole_across_reopen_and_truncation() {
    let d = tempfile::tempdir().unwrap();
    let stored = |ext: &str| -> Vec<(u32, u32)> {
        let p = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == ext))
            .unwrap();
        std::fs::read(p)
            .unwrap()
            .chunks(8)
            .map(|c| {
                (
                    u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                    u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect()
    };
    let rising = |e: &[(u32, u32)]| e.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
    {
        let (log, _) = open(d.path(), 1 << 20);
        append_range(&log, 0, 100, 5);
    }
    // Reopened: the active segment's index is rebuilt by recovery and written whole.
    let (log, _) = open(d.path(), 1 << 20);
    let rebuilt = stored("index");
    append_range(&log, 100, 200, 5);
    let grown = stored("index");
    assert!(grown.len() > rebuilt.len() && rising(&grown), "{grown:?}");
    assert_eq!(
        grown[..rebuilt.len()],
        rebuilt[..],
        "appended after, not over"
    );
    // Cut back: the file is rewritten short, and later entries follow it.
    log.truncate_to(150).unwrap();
    let cut = stored("index");
    assert!(
        cut.len() < grown.len() && grown.starts_with(&cut),
        "{cut:?}"
    );
    append_range(&log, 150, 180, 5);
    let after = stored("index");
    assert!(
        after.starts_with(&cut) && after.len() > cut.len() && rising(&after),
        "{after:?}"
    );
    drop(log);
    let (log, _) = open(d.path(), 1 << 20);
    assert_eq!(log.log_end_offset(), 180);
    assert_eq!(read_all(&log, 0).len(), 180);
}

/// DeleteRecords: readers start at the offset, whole segments before it go, the start never
/// moves back, and a truncation below it brings it down to the new end.
#[test]
fn delete_records_moves_the_start_and_drops_whole_segments() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 2000);
    append_range(&log, 0, 200, 4);
    let segs = log.segment_count();
    assert_eq!(log.delete_records_before(90).unwrap(), 90);
    assert_eq!(log.log_start_offset(), 90);
    assert!(
        log.segment_count() < segs,
        "whole segments before 90 deleted"
    );
    assert!(matches!(
        log.read(89, 4096, None, &mut Vec::new()),
        Err(LogError::OffsetOutOfRange { start: 90, .. })
    ));
    let rest = read_all(&log, 90);
    assert_eq!(rest.first(), Some(&(90, value(90))));
    assert_eq!(rest.len(), 110);
    // Never back, and never past the end.
    assert_eq!(log.delete_records_before(10).unwrap(), 90);
    assert_eq!(log.delete_records_before(1_000).unwrap(), 200);
    assert_eq!(log.offsets_before(-2, 1), vec![200]);
    log.truncate_to(150).unwrap();
    assert!(log.log_start_offset() <= log.log_end_offset());
}

#[test]
fn truncate_to_drops_whole_and_partial_segments() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 2000);
    append_range(&log, 0, 200, 4);
    let segs = log.segment_count();
    log.truncate_to(37).unwrap();
    assert_eq!(log.log_end_offset(), 37);
    assert!(log.segment_count() < segs);
    append_range(&log, 37, 60, 2);
    let all = read_all(&log, 0);
    assert_eq!(all.len(), 60);
    assert_eq!(all[59], (59, value(59)));
}

#[test]
fn retention_by_size_and_time_deletes_whole_old_segments() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 2000);
    append_range(&log, 0, 400, 4);
    let before = log.segment_count();
    let deleted = log.delete_old_segments(None, Some(6000)).unwrap();
    assert!(deleted > 0);
    assert!(log.size_bytes() >= 6000 - 2000 && log.size_bytes() < 6000 + 2000);
    assert_eq!(log.segment_count(), before - deleted);
    let start = log.log_start_offset();
    assert!(start > 0);
    assert_eq!(read_all(&log, start).len() as i64, 400 - start);
    let mut buf = Vec::new();
    assert!(matches!(
        log.read(0, 100, None, &mut buf),
        Err(LogError::OffsetOutOfRange { .. })
    ));

    // Age every segment but the active one: time retention removes them all.
    let old = SystemTime::now() - Duration::from_secs(3 * 3600);
    for e in std::fs::read_dir(d.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "log") && p != last_segment(d.path()) {
            OpenOptions::new()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    log.delete_old_segments(Some(Duration::from_secs(3600)), None)
        .unwrap();
    assert_eq!(log.segment_count(), 1, "only the active segment is left");
    assert_eq!(log.log_end_offset(), 400);
}

#[test]
fn offsets_before_answers_latest_and_earliest() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 2000);
    assert_eq!(log.offsets_before(-1, 1), vec![0]);
    append_range(&log, 0, 100, 4);
    assert_eq!(log.offsets_before(-1, 1), vec![100]);
    assert_eq!(log.offsets_before(-2, 1), vec![0]);
    let many = log.offsets_before(-1, 1000);
    assert!(many.windows(2).all(|w| w[0] > w[1]), "descending: {many:?}");
    assert_eq!(*many.last().unwrap(), 0);
}

fn manager_config(dir: &Path) -> BrokerConfig {
    let mut m = BTreeMap::new();
    m.insert("broker.id".to_owned(), "1".to_owned());
    m.insert("log.dirs".to_owned(), dir.display().to_string());
    m.insert("zookeeper.connect".to_owned(), "127.0.0.1:1".to_owned());
    m.insert("log.segment.bytes".to_owned(), "4000".to_owned());
    BrokerConfig::from_map(m).unwrap()
}

#[test]
fn restart_keeps_flushed_messages_and_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let cfg = manager_config(d.path());
    {
        let lm = LogManager::open(&(&cfg).into()).unwrap();
        let log = lm.get_or_create("orders", 2).unwrap();
        append_range(&log, 0, 250, 10);
        lm.checkpoint_high_watermarks(&[(TopicPartition::new("orders", 2), 240)])
            .unwrap();
        lm.shutdown();
    }
    let lm = LogManager::open(&(&cfg).into()).unwrap();
    let log = lm.get("orders", 2).expect("log reloaded");
    assert_eq!(log.log_end_offset(), 250);
    assert_eq!(lm.checkpointed_high_watermark(&log), 240);
    assert_eq!(read_all(&log, 0).len(), 250);
    // A bad checkpoint file is reported and ignored, never fatal.
    std::fs::write(d.path().join("replication-offset-checkpoint"), "junk").unwrap();
    let lm = LogManager::open(&(&cfg).into()).unwrap();
    assert_eq!(
        lm.checkpointed_high_watermark(&lm.get("orders", 2).unwrap()),
        0
    );
}

/// Start-up opens the logs on `num.recovery.threads.per.data.dir` threads: each log comes
/// back whole, whatever thread opened it, and a log that cannot be opened fails the start.
#[test]
fn recovery_threads_reopen_every_log_and_report_a_broken_one() {
    let d = tempfile::tempdir().unwrap();
    let cfg = manager_config(d.path());
    {
        let lm = LogManager::open(&(&cfg).into()).unwrap();
        for p in 0..40 {
            append_range(&lm.get_or_create("t", p).unwrap(), 0, p as usize + 1, 10);
        }
        lm.shutdown();
    }
    let mut cfg = cfg;
    for threads in [1, 3, 8] {
        cfg.num_recovery_threads_per_data_dir = threads;
        let lm = LogManager::open(&(&cfg).into()).unwrap();
        for p in 0..40 {
            let log = lm.get("t", p).expect("log reloaded");
            assert_eq!(log.log_end_offset(), p as i64 + 1, "threads {threads}");
        }
        lm.shutdown();
    }
    // A segment file where a directory should be: opening that log fails, and so does start-up.
    let broken = d.path().join("t-7");
    std::fs::remove_dir_all(&broken).unwrap();
    std::fs::create_dir(&broken).unwrap();
    std::fs::create_dir(broken.join("00000000000000000000.log")).unwrap();
    assert!(LogManager::open(&(&cfg).into()).is_err());
}

/// A batch is kept whole or not at all: truncating to an offset inside one removes it and
/// leaves the log ending before it, so that a follower fetches the leader's batch from the
/// new end. Cutting at the offset itself (as magic 0 logs could) once left a log whose end
/// offset lay inside a removed batch, and the follower refused the leader's batch forever
/// ("append of entry 49 but log end offset is 52": the chaos run).
#[test]
fn truncating_inside_a_batch_removes_the_whole_batch() {
    use gregor::protocol::record_batch::{BatchBuilder, NewRecord};
    let d = tempfile::tempdir().unwrap();
    let (log, _) = open(d.path(), 1 << 20);
    let batch = |n: usize| {
        let mut b = BatchBuilder::new();
        for i in 0..n {
            b.push(&NewRecord {
                timestamp: 1000 + i as i64,
                key: None,
                value: Some(b"v"),
                headers: &[],
            });
        }
        b.finish(0).unwrap()
    };
    for _ in 0..3 {
        log.append_batch(&mut batch(3), 3, 0, None).unwrap();
    }
    assert_eq!(log.log_end_offset(), 9);
    log.truncate_to(7).unwrap();
    assert_eq!(log.log_end_offset(), 6, "the batch 6..8 went whole");
    let offsets: Vec<i64> = read_all(&log, 0).iter().map(|m| m.0).collect();
    assert_eq!(offsets, (0..6).collect::<Vec<_>>());
    // The leader's batch from 6 on appends where the log now ends.
    let mut b = batch(2);
    gregor::protocol::record_batch::assign(&mut b, 6, 1, None);
    log.append_with_offsets(&b, 6, 7).unwrap();
    assert_eq!(log.log_end_offset(), 8);
    // A cut at a batch's first offset keeps everything before it; at the start, nothing.
    log.truncate_to(3).unwrap();
    assert_eq!(log.log_end_offset(), 3);
    log.truncate_to(1).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    drop(log);
    let (log, _) = open(d.path(), 1 << 20);
    assert_eq!(log.log_end_offset(), 0, "and so after a restart");
}
