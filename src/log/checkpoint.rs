//! The checkpoint files of a data directory, as Kafka names and writes them: high watermarks
//! (`replication-offset-checkpoint`) and log start offsets moved by DeleteRecords
//! (`log-start-offset-checkpoint`), recovery points (`recovery-point-offset-checkpoint`): a
//! version line, a count line, then `topic partition offset`
//! per line.
//!
//! Written to a temporary file, synced and renamed, so a crash leaves either the old or the new
//! checkpoint, never a torn one. A file that does not parse is reported and ignored (every high
//! watermark then starts at 0 and is learnt again), never a reason not to start.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

pub const HIGH_WATERMARKS: &str = "replication-offset-checkpoint";
pub const LOG_START_OFFSETS: &str = "log-start-offset-checkpoint";
/// Offsets below which each log is on disk (`deferred`): recovery after a crash starts there.
pub const RECOVERY_POINTS: &str = "recovery-point-offset-checkpoint";
/// Where each compacted log's dirty section starts (Kafka's file).
pub const CLEANER_OFFSETS: &str = "cleaner-offset-checkpoint";
const VERSION: u32 = 0;

use crate::protocol::TopicPartition;

pub fn write(dir: &Path, name: &str, hws: &[(TopicPartition, i64)]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut text = format!("{VERSION}\n{}\n", hws.len());
    for (
        TopicPartition {
            topic: t,
            partition: p,
        },
        hw,
    ) in hws
    {
        text.push_str(&format!("{t} {p} {hw}\n"));
    }
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Reads the checkpoint; a missing file is an empty map, a malformed one an error naming why.
pub fn read(dir: &Path, name: &str) -> Result<HashMap<TopicPartition, i64>, String> {
    let path = dir.join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let bad = |why: &str| format!("{}: {why}", path.display());
    let mut lines = text.lines();
    if lines.next().and_then(|l| l.trim().parse::<u32>().ok()) != Some(VERSION) {
        return Err(bad("unknown version line"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("bad count line"))?;
    let mut map = HashMap::new();
    for line in lines.by_ref().take(count) {
        let mut it = line.split_whitespace();
        let (Some(t), Some(p), Some(hw), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(bad(&format!("bad entry `{line}`")));
        };
        let p: i32 = p
            .parse()
            .map_err(|_| bad(&format!("bad partition in `{line}`")))?;
        let hw: i64 = hw
            .parse()
            .map_err(|_| bad(&format!("bad offset in `{line}`")))?;
        map.insert(TopicPartition::new(t.to_owned(), p), hw);
    }
    if map.len() != count {
        return Err(bad("fewer entries than the count line says"));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            HIGH_WATERMARKS,
            &[
                (TopicPartition::new("a", 0), 5),
                (TopicPartition::new("b", 3), 9),
            ],
        )
        .unwrap();
        let m = read(d.path(), HIGH_WATERMARKS).unwrap();
        assert_eq!(m[&TopicPartition::new("b", 3)], 9);
        std::fs::write(d.path().join(HIGH_WATERMARKS), "0\n2\na 0 5\n").unwrap();
        assert!(read(d.path(), HIGH_WATERMARKS).is_err());
        std::fs::write(d.path().join(HIGH_WATERMARKS), "garbage").unwrap();
        assert!(read(d.path(), HIGH_WATERMARKS).is_err());
    }
}
