//! The disk work a log defers (`log::deferred`): segments that leave the log are renamed
//! `.deleted` and unlinked after `file.delete.delay.ms` while a reader holding one keeps
//! reading it; a rolled segment's fsync is owed rather than done under the append lock, so
//! recovery starts at the recovery point and checks every segment from there.

mod common;

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use common::logs::{append_range, config};
use gregor::log::{FirstEntry, Log, LogError};
use gregor::protocol::records;

fn open(dir: &Path, recovery_point: Option<i64>) -> Log {
    open_found(dir, recovery_point).0
}

/// The log, and what recovery found in it.
fn open_found(dir: &Path, recovery_point: Option<i64>) -> (Log, gregor::log::segment::Recovered) {
    Log::open(dir.to_path_buf(), "t", 0, config(4000), recovery_point).unwrap()
}

/// The files of the log directory with a name ending in `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn a_segment_retention_deletes_is_renamed_and_still_readable_until_its_delay_passes() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), None);
    append_range(&log, 0, 200, 5);
    assert!(log.segment_count() >= 3);
    // A slow reader took a slice of the first segment before retention runs.
    let slice = log
        .read_slice(0, 1 << 20, None, FirstEntry::Whole)
        .unwrap()
        .expect("records at 0");
    let logs_before = files(d.path(), ".log");
    let deleted = log.delete_old_segments(None, Some(1)).unwrap();
    assert_eq!(deleted, logs_before.len() - 1);
    // Out of the log: renamed, not unlinked, while the delay runs.
    assert_eq!(files(d.path(), ".log").len(), 1);
    assert_eq!(files(d.path(), ".log.deleted").len(), deleted);
    assert_eq!(log.retired_count(), deleted);
    assert_eq!(
        log.delete_retired(false),
        0,
        "not before file.delete.delay.ms"
    );
    // The reader still gets whole, valid records from what it took...
    let fd = slice.file.as_raw_fd();
    let file = unsafe_borrow(fd);
    let mut buf = vec![0u8; slice.len];
    file.read_exact_at(&mut buf, slice.pos).unwrap();
    let first = records::entries(&buf).next().unwrap().unwrap();
    assert_eq!(first.first_offset, 0);
    // ...and a new read there is out of range.
    assert!(matches!(
        log.read_slice(0, 1 << 20, None, FirstEntry::Whole),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // Once unlinked (all now, as at shutdown), the slice taken before still reads.
    assert_eq!(log.delete_retired(true), deleted);
    assert!(files(d.path(), ".deleted").is_empty());
    file.read_exact_at(&mut buf, slice.pos).unwrap();
    assert!(records::entries(&buf).all(|e| e.is_ok()));
    std::mem::forget(file);
}

/// A `File` over a descriptor the slice owns, forgotten (not closed) after use.
fn unsafe_borrow(fd: std::os::fd::RawFd) -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: the slice keeps `fd` open for the whole test and the `File` is forgotten, so
    // the descriptor is neither closed twice nor used after it is closed.
    unsafe { std::fs::File::from_raw_fd(fd) }
}

#[test]
fn a_roll_owes_the_old_segments_fsync_and_the_recovery_point_follows_it() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), Some(0));
    append_range(&log, 0, 100, 5);
    let segments = log.segment_count();
    assert!(segments >= 2);
    assert_eq!(
        log.recovery_point(),
        0,
        "nothing synced under the append lock"
    );
    log.flush_rolled().unwrap();
    let rp = log.recovery_point();
    assert!(
        rp > 0 && rp < log.log_end_offset(),
        "past the rolled segments: {rp}"
    );
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), log.log_end_offset());
    // A truncation takes back what it cuts.
    log.truncate_to(10).unwrap();
    assert!(log.recovery_point() <= 10);
}

#[test]
fn recovery_checks_every_segment_from_the_recovery_point_and_drops_those_after_a_torn_one() {
    let d = tempfile::tempdir().unwrap();
    {
        let log = open(d.path(), None);
        append_range(&log, 0, 200, 5);
    }
    let logs = files(d.path(), ".log");
    assert!(logs.len() >= 3, "{logs:?}");
    // The second segment lost its last bytes in a crash (its fsync was owed).
    let torn = d.path().join(&logs[1]);
    let len = std::fs::metadata(&torn).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&torn)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let second_base: i64 = logs[1].trim_end_matches(".log").parse().unwrap();
    // Recovering from a point past it does not look at it (it was on disk by then)...
    {
        let third_base: i64 = logs[2].trim_end_matches(".log").parse().unwrap();
        let (_, found) = open_found(d.path(), Some(third_base));
        assert_eq!(found.truncated_bytes, 0);
    }
    // ...from a point before it, the tail is cut and the segments after it go.
    let (log, found) = open_found(d.path(), Some(second_base));
    assert!(found.truncated_bytes > 0);
    assert_eq!(log.segment_count(), 2);
    assert!(log.log_end_offset() < 200 && log.log_end_offset() > second_base);
    // Appends go on from the cut.
    let end = log.log_end_offset() as usize;
    append_range(&log, end, end + 10, 5);
}

/// A consumer reads a 32 MB answer from the first segment slowly (its socket full, the broker
/// in the middle of sending) while retention deletes that segment and its files are unlinked:
/// the answer it gets is whole, valid records; its next fetch there is OFFSET_OUT_OF_RANGE.
#[test]
fn a_slow_consumer_of_a_segment_retention_deletes_gets_whole_records_then_out_of_range() {
    use common::*;
    use gregor::protocol::fetch::{FetchPartition, FetchRequest, FetchResponse};
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("slow-reader"));
    let _controller = FakeController::claim(&zk);
    let segment = 32 << 20;
    let b = TestBroker::start(
        1,
        &zk,
        &[
            ("log.segment.bytes", &segment.to_string()),
            ("log.retention.bytes", "1"),
            ("log.retention.check.interval.ms", "3600000"),
        ],
    );
    let mut c = b.client();
    lead(&b, &mut c, 1, "slow", 1);
    let value = vec![b'v'; 100_000];
    let mut produced = 0;
    while b.broker.log_manager.get("slow", 0).unwrap().segment_count() < 2 {
        assert_eq!(c.produce(1, "slow", 0, &[&value]).0, 0);
        produced += 1;
    }
    assert!(produced > 300);
    // The fetch, then only the first bytes of its answer.
    let req = FetchRequest::new(
        -1,
        0,
        1,
        vec![("slow".into(), vec![FetchPartition::new(0, 0, segment)])],
    );
    let frame = request_frame(1, 4, 7, &req);
    let mut s = TcpStream::connect(b.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&frame).unwrap();
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let size = i32::from_be_bytes(size) as usize;
    assert!(size > 30 << 20, "an answer of most of a segment: {size}");
    // Retention takes the first segment out of the log; its files go at once.
    let log = b.broker.log_manager.get("slow", 0).unwrap();
    b.broker.log_manager.apply_retention();
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.delete_retired(true), 1);
    let mut body = vec![0u8; size];
    s.read_exact(&mut body).unwrap();
    let resp: FetchResponse = gregor::protocol::decode_body(&body[4..], 1, 4).unwrap();
    let p = &resp.topics[0].1[0];
    assert_eq!(p.error_code, 0);
    let entries: Vec<_> = records::entries(&p.message_set).collect();
    assert!(entries.len() > 300);
    assert!(
        entries.iter().all(|e| e.is_ok()),
        "a torn or corrupt record"
    );
    assert_eq!(entries[0].as_ref().unwrap().first_offset, 0);
    // Asked again, the offset is gone.
    assert_eq!(
        c.fetch("slow", 0, 0, 0).error_code,
        1,
        "OFFSET_OUT_OF_RANGE"
    );
}
