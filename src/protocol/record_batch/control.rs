//! Transaction markers (KIP-98): a control batch (attributes bits 4 and 5: transactional and
//! control) of one record, written by a partition's leader when the transaction coordinator
//! asks (WriteTxnMarkers), never by a producer. Its record's key says which end the
//! transaction had, its value which coordinator epoch wrote it:
//!
//! ```text
//! key   := version:int16=0 type:int16 (0 ABORT, 1 COMMIT)
//! value := version:int16=0 coordinatorEpoch:int32
//! ```
//! The batch carries the producer's id and epoch, no sequence (-1): a marker takes an offset
//! but no place in the producer's sequence.

use byteorder::{BigEndian, ByteOrder};

use super::{
    ATTRIBUTES_AT, BATCH_OVERHEAD, CONTROL, Header, MAGIC, MAGIC_AT, TRANSACTIONAL, encode_batch,
    encode_record,
};
use crate::protocol::primitives::Reader;

/// Bytes of a marker batch after its header that the log reads to know the marker: the
/// record's length, attributes, deltas, key and value — 4 + 6 bytes and varints, the
/// timestamp delta up to 10 bytes (the cleaner moves a marker's base timestamp to its delete
/// horizon, which makes the delta large).
pub const MARKER_PEEK: usize = 32;

const ABORT: i16 = 0;
const COMMIT: i16 = 1;

/// How a transaction ended, as its marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// The transactional and control bits of a batch header (false for a message of magic 0/1).
pub fn header_flags(header: &[u8]) -> (bool, bool) {
    if header.len() < BATCH_OVERHEAD || header[MAGIC_AT] as i8 != MAGIC {
        return (false, false);
    }
    let attrs = BigEndian::read_i16(&header[ATTRIBUTES_AT..]);
    (attrs & TRANSACTIONAL != 0, attrs & CONTROL != 0)
}

/// A marker batch of producer `producer_id` at `epoch`, timestamped `timestamp`, at base
/// offset 0 (the leader assigns its offset).
pub fn encode_marker(producer_id: i64, epoch: i16, marker: TxnMarker, timestamp: i64) -> Vec<u8> {
    let mut key = [0u8; 4];
    BigEndian::write_i16(&mut key[2..], if marker.commit { COMMIT } else { ABORT });
    let mut value = [0u8; 6];
    BigEndian::write_i32(&mut value[2..], marker.coordinator_epoch);
    let mut block = Vec::with_capacity(32);
    encode_record(&mut block, 0, 0, Some(&key), Some(&value), &[]);
    encode_batch(
        &Header {
            base_offset: 0,
            leader_epoch: -1,
            attributes: TRANSACTIONAL | CONTROL,
            last_offset_delta: 0,
            base_timestamp: timestamp,
            max_timestamp: timestamp,
            producer: (producer_id, epoch, -1),
            count: 1,
        },
        &block,
    )
}

/// The marker of the control batch whose first bytes are `bytes` (its header and at least
/// `MARKER_PEEK` more, or the whole batch); `None` when it is not a control batch or its record
/// is not a transaction marker (Kafka has other control records, which a log keeps as they are).
pub fn parse_marker(bytes: &[u8]) -> Option<TxnMarker> {
    if header_flags(bytes) != (true, true) {
        return None;
    }
    let mut r = Reader::new(bytes.get(BATCH_OVERHEAD..)?);
    r.varint("record length").ok()?;
    r.i8("record attributes").ok()?;
    r.varlong("timestamp delta").ok()?;
    r.varint("offset delta").ok()?;
    if r.varint("key length").ok()? != 4 {
        return None;
    }
    let (_version, kind) = (r.i16("version").ok()?, r.i16("type").ok()?);
    if r.varint("value length").ok()? < 6 {
        return None;
    }
    let (_version, coordinator_epoch) = (r.i16("version").ok()?, r.i32("epoch").ok()?);
    match kind {
        ABORT | COMMIT => Some(TxnMarker {
            commit: kind == COMMIT,
            coordinator_epoch,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::{assign, parse_batch};

    #[test]
    fn markers_round_trip_and_fit_the_peek() {
        for (commit, ce) in [(true, 7), (false, 0), (true, i32::MAX)] {
            let marker = TxnMarker {
                commit,
                coordinator_epoch: ce,
            };
            let mut b = encode_marker(42, 3, marker, 1_700_000_000_000);
            assign(&mut b, 1234, 5, None);
            let batch = parse_batch(&b).expect("a valid batch with its CRC");
            assert!(batch.is_control());
            assert_eq!(batch.producer_id(), 42);
            assert_eq!(batch.producer_epoch(), 3);
            assert_eq!(batch.base_sequence(), -1);
            assert!(b.len() <= BATCH_OVERHEAD + MARKER_PEEK, "{}", b.len());
            assert_eq!(parse_marker(&b), Some(marker));
            assert_eq!(header_flags(&b), (true, true));
            // Kept by the cleaner with a delete horizon days away: still read from the peek.
            let horizon = 1_700_000_000_000 + 30 * 86_400_000;
            let kept = crate::protocol::record_batch::rebuild_retained(
                &batch,
                &batch.records().unwrap(),
                &[true],
                Some(horizon),
            )
            .unwrap();
            let peek = &kept[..kept.len().min(BATCH_OVERHEAD + MARKER_PEEK)];
            assert_eq!(parse_marker(peek), Some(marker));
        }
    }

    #[test]
    fn data_batches_and_short_bytes_are_no_markers() {
        let mut bb = super::super::BatchBuilder::new();
        bb.push(&super::super::NewRecord {
            timestamp: 1,
            key: Some(&[0, 0, 0, 1]),
            value: Some(&[0, 0, 0, 0, 0, 0]),
            headers: &[],
        });
        let data = bb.finish(0).unwrap();
        assert_eq!(parse_marker(&data), None);
        assert_eq!(header_flags(&data), (false, false));
        let m = encode_marker(
            1,
            0,
            TxnMarker {
                commit: true,
                coordinator_epoch: 1,
            },
            0,
        );
        assert_eq!(parse_marker(&m[..BATCH_OVERHEAD + 3]), None);
        assert_eq!(parse_marker(&m[..10]), None);
    }
}
