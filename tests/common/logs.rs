//! Filling a `Log` directly: the messages the log tests write and read back.

use gregor::log::Log;
use gregor::protocol::message::encode_entry;

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
