//! A batch rebuilt with some of its records, as the log cleaner keeps it (Kafka's
//! `MemoryRecords.filterTo`): the same base offset, last offset delta, leader epoch, producer
//! id, epoch and base sequence, and codec, so every kept record keeps its offset and a
//! producer's last batch still ends at its last sequence; only the records and the CRC change.
//! A batch may keep no record at all (the last batch of an idempotent producer): then it is
//! its header alone.

use super::{Batch, CODEC_MASK, Header, LOG_APPEND_TIME, Records, encode_batch, encode_record};
use crate::protocol::compression;
use crate::protocol::message::SetError;

/// Attributes bit 6 (KIP-534): `baseTimestamp` holds the batch's delete horizon, the time
/// after which the cleaner may remove its tombstones; records' timestamp deltas are relative
/// to it.
pub const DELETE_HORIZON: i16 = 0x40;

impl Batch<'_> {
    /// The delete horizon the cleaner set on this batch, if any (KIP-534).
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.attributes() & DELETE_HORIZON != 0).then(|| self.base_timestamp())
    }

    /// A transaction marker (control batch).
    pub fn is_control(&self) -> bool {
        self.attributes() & super::CONTROL != 0
    }
}

/// `batch` with only the records `kept` marks (one flag per record, in order), recompressed
/// with its codec; with `delete_horizon`, marked as KIP-534 says. A record's timestamp is
/// kept: its delta is taken again from the new base.
pub fn rebuild_retained(
    batch: &Batch<'_>,
    records: &Records<'_>,
    kept: &[bool],
    delete_horizon: Option<i64>,
) -> Result<Vec<u8>, SetError> {
    let old_base = batch.base_timestamp();
    let new_base = delete_horizon.unwrap_or(old_base);
    let mut block = Vec::new();
    let mut count = 0;
    let mut max_ts = -1;
    let mut i = 0;
    records.for_each(|r| {
        if kept.get(i).copied().unwrap_or(true) {
            let ts = old_base + r.timestamp_delta;
            max_ts = max_ts.max(ts);
            encode_record(
                &mut block,
                ts - new_base,
                r.offset_delta,
                r.key,
                r.value,
                &r.headers,
            );
            count += 1;
        }
        i += 1;
    })?;
    let codec = batch.codec();
    if codec != 0 && !block.is_empty() {
        block = compression::compress(codec, &block)
            .map_err(|e| SetError::BadCompression(e.to_string()))?;
    }
    let mut attributes = batch.attributes() & !DELETE_HORIZON;
    if delete_horizon.is_some() {
        attributes |= DELETE_HORIZON;
    }
    // A batch of append times keeps the broker's time; otherwise the largest kept.
    let max_timestamp = if batch.attributes() & LOG_APPEND_TIME != 0 || count == 0 {
        batch.max_timestamp()
    } else {
        max_ts
    };
    debug_assert_eq!(attributes & CODEC_MASK, i16::from(codec));
    Ok(encode_batch(
        &Header {
            base_offset: batch.base_offset(),
            leader_epoch: batch.partition_leader_epoch(),
            attributes,
            last_offset_delta: batch.last_offset_delta(),
            base_timestamp: new_base,
            max_timestamp,
            producer: (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
            ),
            count,
        },
        &block,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{BatchBuilder, NewRecord, assign, parse_batch};
    use super::*;
    use crate::protocol::records::decode_deep;

    fn batch(codec: i8) -> Vec<u8> {
        let mut b = BatchBuilder::new().idempotent(7, 1, 40);
        for (i, (k, v)) in [("a", Some("1")), ("b", None), ("a", Some("2"))]
            .iter()
            .enumerate()
        {
            b.push(&NewRecord {
                timestamp: 1000 + i as i64,
                key: Some(k.as_bytes()),
                value: v.map(str::as_bytes),
                headers: &[("h", Some(b"x"))],
            });
        }
        let mut out = b.finish(codec).unwrap();
        assign(&mut out, 100, 3, None);
        out
    }

    #[test]
    fn kept_records_keep_offsets_timestamps_and_the_batch_its_identity() {
        for codec in [0, 1, 2, 3, 4] {
            let bytes = batch(codec);
            let b = parse_batch(&bytes).unwrap();
            let recs = b.records().unwrap();
            let out = rebuild_retained(&b, &recs, &[false, true, true], Some(9_000)).unwrap();
            let nb = parse_batch(&out).unwrap();
            assert_eq!(
                (
                    nb.base_offset(),
                    nb.last_offset(),
                    nb.partition_leader_epoch()
                ),
                (100, 102, 3)
            );
            assert_eq!(
                (nb.producer_id(), nb.producer_epoch(), nb.base_sequence()),
                (7, 1, 40)
            );
            assert_eq!((nb.codec(), nb.record_count()), (codec, 2));
            assert_eq!(nb.delete_horizon(), Some(9_000));
            let msgs = decode_deep(&out).unwrap();
            let seen: Vec<_> = msgs.iter().map(|m| (m.offset, m.timestamp)).collect();
            assert_eq!(seen, vec![(101, 1001), (102, 1002)]);
            assert_eq!(msgs[0].value, None);
            assert_eq!(msgs[1].headers.len(), 1);
        }
    }

    #[test]
    fn a_batch_may_keep_no_record() {
        let bytes = batch(0);
        let b = parse_batch(&bytes).unwrap();
        let out = rebuild_retained(&b, &b.records().unwrap(), &[false; 3], None).unwrap();
        let nb = parse_batch(&out).unwrap();
        assert_eq!((nb.record_count(), nb.last_offset()), (0, 102));
        assert!(decode_deep(&out).unwrap().is_empty());
    }
}
