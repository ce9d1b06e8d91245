//! Filling a `Log` directly: the messages the log tests write and read back.

use std::path::Path;
use std::time::Duration;

use gregor::config::CleanupPolicy;
use gregor::log::overrides::Compaction;
use gregor::log::{Log, LogConfig};
use gregor::protocol::message::encode_entry;

/// The settings of the log tests' logs: an index entry every 256 bytes, no fsync by count, a
/// minute's delay before a retired segment's files are unlinked, no roll by age.
pub fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 256,
        flush_interval_messages: u64::MAX,
        file_delete_delay: Duration::from_secs(60),
        roll: Duration::from_secs(7 * 24 * 3600),
    }
}

/// Opens (creating it if need be) partition `t-0` in `dir`, recovered from its start.
pub fn open(dir: &Path, segment_bytes: u64) -> Log {
    Log::open(dir.to_path_buf(), "t", 0, config(segment_bytes), None)
        .unwrap()
        .0
}

/// `cleanup.policy=compact` with these thresholds and no minimum or maximum lag.
pub fn compaction(min_cleanable_ratio: f64, delete_retention_ms: i64) -> Compaction {
    Compaction {
        policy: CleanupPolicy::parse("compact"),
        min_cleanable_ratio,
        delete_retention_ms,
        min_compaction_lag_ms: 0,
        max_compaction_lag_ms: i64::MAX,
    }
}

/// Message `i`'s value: its number, and a length that varies with it.
pub fn value(i: usize) -> Vec<u8> {
    format!("message-{i:05}-{}", "x".repeat(i % 37)).into_bytes()
}

/// Appends messages `from..to`, one produce request of `batch` messages at a time.
pub fn append_range(log: &Log, from: usize, to: usize, batch: usize) {
    let mut i = from;
    while i < to {
        let n = batch.min(to - i);
        let mut set = Vec::new();
        for j in i..i + n {
            encode_entry(
                &mut set,
                0,
                (j % 2) as i8,
                1_700_000_000_000,
                Some(b"k"),
                Some(&value(j)),
            );
        }
        let first = log.append(&mut set, n as u32).unwrap();
        assert_eq!(first, i as i64);
        i += n;
    }
}
