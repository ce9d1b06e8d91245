//! What the cleaner keeps of one log entry (Kafka's `LogCleaner.shouldRetainRecord`):
//! a record is kept when it is its key's latest (the offset map has no later offset for the
//! key), unless it is a tombstone whose delete horizon has passed. A record without a key is
//! not kept: a compacted topic refuses them, and those written before the topic became
//! compacted have no key to be the latest of.
//!
//! Tombstones (KIP-534): a format v2 batch keeping a tombstone gets a delete horizon — now
//! plus `delete.retention.ms` — the first time the cleaner keeps it, and loses its tombstones
//! in a clean after that. Format 0/1 messages have no room for one: their tombstones go once
//! the segment holding them was last written `delete.retention.ms` ago (Kafka's rule before
//! KIP-534).

use std::collections::HashSet;

use byteorder::{BigEndian, ByteOrder};

use super::offset_map::OffsetMap;
use super::txns::CleanedTxns;
use crate::protocol::compression;
use crate::protocol::message::{self, SetError};
use crate::protocol::record_batch::{self, rebuild_retained};
use crate::protocol::records::Entry;

/// What decides a record's fate in one clean.
pub struct Rules<'a> {
    pub map: &'a OffsetMap,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Whether the old-format tombstones of the segment being read have expired.
    pub legacy_tombstones_expired: bool,
    /// (producer id, last offset) of each idempotent producer's last batch: kept even when
    /// none of its records is, so that the producer's sequence survives (Kafka's rule).
    pub last_batches: &'a HashSet<(i64, i64)>,
}

impl Rules<'_> {
    fn is_latest(&self, key: Option<&[u8]>, offset: i64) -> bool {
        key.is_some_and(|k| self.map.get(k).is_none_or(|latest| offset >= latest))
    }
}

/// An entry's fate.
pub enum Filtered {
    Keep,
    Drop,
    /// Kept in part: the entry rebuilt with what stays.
    Rewrite(Vec<u8>),
}

/// Counts over a clean, for its log line and metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub records_read: u64,
    pub records_kept: u64,
    /// The earliest delete horizon of a batch left with tombstones: the log is cleaned again
    /// once it has passed, whatever its dirty ratio.
    pub earliest_horizon: Option<i64>,
}

/// What stays of entry `e`; `txns` follows the transactions along the read (`txns`).
pub fn filter_entry(
    e: &Entry<'_>,
    rules: &Rules<'_>,
    txns: &mut CleanedTxns,
    tally: &mut Tally,
) -> Result<Filtered, SetError> {
    if e.magic != record_batch::MAGIC {
        return filter_message(e.bytes, rules, tally);
    }
    let b = record_batch::parse_batch(e.bytes).map_err(SetError::Corrupt)?;
    if b.is_control() {
        return filter_marker(&b, rules, txns, tally);
    }
    let transactional = record_batch::header_flags(e.bytes).0;
    let aborted = txns.is_aborted(b.producer_id(), transactional, b.last_offset());
    let kept = filter_batch(&b, rules, aborted, tally)?;
    if transactional && !matches!(kept, Filtered::Drop) {
        txns.kept_batch(b.producer_id());
    }
    Ok(kept)
}

/// A transaction marker: kept while its transaction has batches left, then until its delete
/// horizon (set the first time a clean keeps it, as a tombstone's is).
fn filter_marker(
    b: &record_batch::Batch<'_>,
    rules: &Rules<'_>,
    txns: &mut CleanedTxns,
    tally: &mut Tally,
) -> Result<Filtered, SetError> {
    let Some(marker) = record_batch::parse_marker(b.bytes()) else {
        return Ok(Filtered::Keep); // another kind of control record: left as it is
    };
    let removable = txns.marker_removable(b.producer_id(), marker.commit, b.base_offset());
    let horizon = b.delete_horizon();
    if removable && horizon.is_some_and(|h| rules.now_ms >= h) {
        return Ok(Filtered::Drop);
    }
    let horizon = horizon.unwrap_or(rules.now_ms.saturating_add(rules.delete_retention_ms));
    if removable {
        tally.earliest_horizon = Some(tally.earliest_horizon.map_or(horizon, |e| e.min(horizon)));
    }
    if b.delete_horizon().is_some() {
        return Ok(Filtered::Keep);
    }
    Ok(Filtered::Rewrite(rebuild_retained(
        b,
        &b.records()?,
        &[true],
        Some(horizon),
    )?))
}

/// A data batch: each record kept when it is its key's latest and not an expired tombstone;
/// none when the batch belongs to an aborted transaction.
fn filter_batch(
    b: &record_batch::Batch<'_>,
    rules: &Rules<'_>,
    aborted: bool,
    tally: &mut Tally,
) -> Result<Filtered, SetError> {
    let records = b.records()?;
    let horizon = b.delete_horizon();
    let mut kept = Vec::with_capacity(b.record_count().max(0) as usize);
    let mut tombstones_kept = false;
    records.for_each(|r| {
        let offset = b.base_offset() + i64::from(r.offset_delta);
        let expired = r.value.is_none() && horizon.is_some_and(|h| rules.now_ms >= h);
        let keep = !aborted && rules.is_latest(r.key, offset) && !expired;
        tombstones_kept |= keep && r.value.is_none();
        kept.push(keep);
    })?;
    let n_kept = kept.iter().filter(|k| **k).count();
    tally.records_read += kept.len() as u64;
    tally.records_kept += n_kept as u64;
    let new_horizon = match (tombstones_kept, horizon) {
        (false, _) => None,
        (true, Some(h)) => Some(h),
        (true, None) => Some(rules.now_ms.saturating_add(rules.delete_retention_ms)),
    };
    if let Some(h) = new_horizon {
        tally.earliest_horizon = Some(tally.earliest_horizon.map_or(h, |e| e.min(h)));
    }
    if n_kept == kept.len() && new_horizon == horizon {
        return Ok(Filtered::Keep);
    }
    let last_of_producer = b.producer_id() >= 0
        && rules
            .last_batches
            .contains(&(b.producer_id(), b.last_offset()));
    if n_kept == 0 && !last_of_producer {
        return Ok(Filtered::Drop);
    }
    Ok(Filtered::Rewrite(rebuild_retained(
        b,
        &records,
        &kept,
        new_horizon,
    )?))
}

fn filter_message(
    bytes: &[u8],
    rules: &Rules<'_>,
    tally: &mut Tally,
) -> Result<Filtered, SetError> {
    let m = message::parse_entry(bytes).map_err(SetError::Corrupt)?;
    let keeps = |offset: i64, key: Option<&[u8]>, value: Option<&[u8]>| {
        rules.is_latest(key, offset) && (value.is_some() || !rules.legacy_tombstones_expired)
    };
    if m.codec() == 0 {
        let keep = keeps(m.offset, m.key, m.value);
        tally.records_read += 1;
        tally.records_kept += u64::from(keep);
        return Ok(if keep { Filtered::Keep } else { Filtered::Drop });
    }
    let inner = compression::decompress(m.codec(), m.value.unwrap_or_default())
        .map_err(|e| SetError::BadCompression(e.to_string()))?;
    let msgs: Vec<message::Message<'_>> = message::iter(&inner)
        .collect::<Result<_, _>>()
        .map_err(SetError::Corrupt)?;
    let last_rel = msgs.last().map_or(0, |l| l.offset);
    // Magic 1 inner offsets are relative to the wrapper's, which is its last inner one's.
    let absolute = |im: &message::Message<'_>| {
        if m.magic == 0 {
            im.offset
        } else {
            m.offset - last_rel + im.offset
        }
    };
    let kept: Vec<(i64, &message::Message<'_>)> = msgs
        .iter()
        .map(|im| (absolute(im), im))
        .filter(|(o, im)| keeps(*o, im.key, im.value))
        .collect();
    tally.records_read += msgs.len() as u64;
    tally.records_kept += kept.len() as u64;
    if kept.len() == msgs.len() {
        return Ok(Filtered::Keep);
    }
    let (Some((first, _)), Some((last, _))) = (kept.first(), kept.last()) else {
        return Ok(Filtered::Drop);
    };
    // A wrapper of what stays, with the same codec and magic, carrying its last offset.
    let mut set = Vec::new();
    let mut max_ts = -1;
    for (o, im) in &kept {
        let ts = im.timestamp.unwrap_or(-1);
        max_ts = max_ts.max(ts);
        let inner_offset = if m.magic == 0 { *o } else { o - first };
        message::encode_entry(&mut set, inner_offset, m.magic, ts, im.key, im.value);
    }
    let mut wrapper = message::wrap(&set, m.codec(), m.magic, max_ts)?;
    BigEndian::write_i64(&mut wrapper[0..8], *last);
    Ok(Filtered::Rewrite(wrapper))
}
