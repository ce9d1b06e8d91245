//! A follower's append of what it fetched, and the comparison of what it already held above
//! its high watermark with the leader's entries at the same offsets (our reading of spec
//! C 2.2.2, "become a follower": see `doc/spec-map.md`).

use super::Followed;
use crate::protocol::{message, records};

/// Appends the complete messages of a fetched set at the leader's offsets — after checking
/// those we already hold (below `verify_until`) — and moves our high watermark to
/// min(leader's HW, the end of what we know matches the leader).
pub(super) fn append_fetched(f: &mut Followed, set: &[u8], leader_hw: i64) -> std::io::Result<()> {
    let partition = f.partition.clone();
    let log = &partition.log;
    let mut pos = if f.fetch_offset < f.verify_until {
        match verify_held(f, set)? {
            Some(pos) => pos,
            None => {
                set_follower_hw(f, leader_hw);
                return Ok(()); // more of ours to compare, in the next fetch
            }
        }
    } else {
        0
    };
    let mut start = None;
    let mut end = 0;
    let mut first = 0;
    let mut last = -1;
    for e in records::entries(&set[pos..]) {
        let Ok(e) = e else {
            log_corrupt(f, e.err());
            break;
        };
        // The leader serves from the entry holding the offset; skip anything before it.
        if e.last_offset >= f.fetch_offset {
            if start.is_none() {
                start = Some(pos);
                first = e.first_offset;
            }
            last = e.last_offset;
            end = pos + e.bytes.len();
        }
        pos += e.bytes.len();
    }
    if let Some(start) = start {
        let leo = log.log_end_offset();
        if first < leo {
            // The leader's batch begins below our end: what we hold from there is not the
            // leader's (below the high watermark every replica is byte for byte the same), so
            // it goes, and the leader's entries are fetched again from our new end.
            cut_to(f, first)?;
            log::warn!(
                "[{}-{}] the leader's batch from {first} overlaps our log end {leo}: cut to {}",
                partition.topic,
                partition.partition,
                f.fetch_offset
            );
            set_follower_hw(f, leader_hw);
            return Ok(());
        }
        log.append_with_offsets(&set[start..end], first, last)?;
        f.fetch_offset = last + 1;
        // The high watermark, if it moves, wakes its own watchers below.
        partition.appended(false);
    }
    set_follower_hw(f, leader_hw);
    Ok(())
}

/// Truncates our log at `offset` (or at the start of the entry holding it) and fetches and
/// compares from the new end on.
pub(super) fn cut_to(f: &mut Followed, offset: i64) -> std::io::Result<()> {
    f.partition.log.truncate_to(offset)?;
    f.fetch_offset = f.partition.log.log_end_offset();
    f.verify_until = f.fetch_offset;
    // An acks=all produce parked here from our time as leader learns its batch is gone.
    f.partition.watchers.wake_all();
    Ok(())
}

fn set_follower_hw(f: &Followed, leader_hw: i64) {
    let known = if f.fetch_offset < f.verify_until {
        f.fetch_offset
    } else {
        f.partition.log.log_end_offset()
    };
    f.partition.set_high_watermark(leader_hw.min(known));
}

fn log_corrupt(f: &Followed, e: Option<message::MessageError>) {
    log::error!(
        "[{}-{}] corrupt message from the leader at {}: {e:?}",
        f.partition.topic,
        f.partition.partition,
        f.fetch_offset
    );
}

/// Compares the leader's entries with ours from `fetch_offset` on. Matching entries are kept
/// (the fetch offset moves past them); at the first difference our log is cut there, and the
/// leader's entries from there on are to be appended: returns their position in `set`. An
/// empty answer means the leader's log ends at `fetch_offset`, so ours is cut there too.
/// `None`: everything compared matched and more of ours remains to compare.
fn verify_held(f: &mut Followed, set: &[u8]) -> std::io::Result<Option<usize>> {
    let partition = f.partition.clone();
    let log = &partition.log;
    let (t, p) = (&partition.topic, partition.partition);
    let mut mine = Vec::new();
    // At least the leader's first entry: ours, if the same, is no larger.
    let read = log.read(f.fetch_offset, set.len().max(1 << 16), None, &mut mine);
    let mut ours = records::entries(&mine).map_while(Result::ok).peekable();
    let mut mine_pos = 0;
    let mut pos = 0;
    let mut any = false;
    let mut matched = false;
    for m in records::entries(set) {
        let Ok(m) = m else { break };
        let entry = m.bytes;
        if m.last_offset < f.fetch_offset {
            pos += entry.len();
            continue;
        }
        any = true;
        if m.last_offset >= f.verify_until {
            f.verify_until = f.fetch_offset;
            return Ok(Some(pos));
        }
        while ours.peek().is_some_and(|o| o.last_offset < m.last_offset) {
            mine_pos += ours.next().map_or(0, |o| o.bytes.len());
        }
        let same = ours.peek().is_some_and(|o| {
            o.last_offset == m.last_offset && mine[mine_pos..mine_pos + o.bytes.len()] == *entry
        });
        if !same {
            if read.is_ok() && matched && ours.peek().is_none() {
                return Ok(None); // our read ended before this entry: compare it next time
            }
            // A batch of the leader's that starts below our fetch offset goes in whole.
            let at = f.fetch_offset.min(m.first_offset.max(0));
            let at = if m.magic == 2 { at } else { f.fetch_offset };
            cut_to(f, at)?;
            log::warn!(
                "[{t}-{p}] our entry ending at offset {} differs from the leader's: log cut at {}",
                m.last_offset,
                f.fetch_offset
            );
            if m.magic == 2 && m.first_offset != f.fetch_offset {
                return Ok(None); // our end is not where this entry starts: fetch from it
            }
            return Ok(Some(pos));
        }
        f.fetch_offset = m.last_offset + 1;
        matched = true;
        pos += entry.len();
    }
    if !any && set.is_empty() {
        // The leader has nothing from `fetch_offset` on: what we hold past it is not in its log.
        cut_to(f, f.fetch_offset)?;
        log::warn!(
            "[{t}-{p}] our log goes past the leader's end: cut at {}",
            f.fetch_offset
        );
        return Ok(Some(set.len()));
    }
    if f.fetch_offset >= f.verify_until {
        f.verify_until = f.fetch_offset;
        return Ok(Some(pos));
    }
    Ok(None)
}
