//! Record batches (format v2): what we encode decodes to itself, a batch as a producer of
//! another implementation writes it is read exactly, and corruption of any kind is refused
//! with CORRUPT_MESSAGE's error, never a panic.

use gregor::protocol::message::{MessageError, SetError};
use gregor::protocol::record_batch::{self, BatchBuilder, NewRecord};
use gregor::protocol::records::{self, OwnedMessage};
use proptest::prelude::*;

type Rec = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn build(recs: &[Rec], codec: i8) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    for (ts, k, v, h) in recs {
        let headers: Vec<(&str, Option<&[u8]>)> =
            h.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
        b.push(&NewRecord {
            timestamp: *ts,
            key: k.as_deref(),
            value: v.as_deref(),
            headers: &headers,
        });
    }
    b.finish(codec).unwrap()
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        1_600_000_000_000i64..1_900_000_000_000,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        proptest::collection::vec(
            (
                "[a-z]{0,8}",
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
            ),
            0..3,
        ),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_batch_we_encode_decodes_to_itself(
        recs in proptest::collection::vec(rec(), 1..20),
        codec in 0i8..=4,
        base in 0i64..1_000_000,
    ) {
        let mut batch = build(&recs, codec);
        let valid = record_batch::validate_for_append(&batch, 1 << 20).unwrap();
        prop_assert_eq!(valid.count as usize, recs.len());
        record_batch::assign(&mut batch, base, 3, None);
        let got = records::decode_deep(&batch).unwrap();
        let want: Vec<OwnedMessage> = recs
            .iter()
            .enumerate()
            .map(|(i, (ts, k, v, h))| OwnedMessage {
                offset: base + i as i64,
                timestamp: *ts,
                key: k.clone(),
                value: v.clone(),
                headers: h.clone(),
            })
            .collect();
        prop_assert_eq!(got, want);
        let e = records::parse_entry(&batch).unwrap();
        prop_assert_eq!((e.first_offset, e.last_offset), (base, base + recs.len() as i64 - 1));
        prop_assert_eq!(e.max_timestamp, recs.iter().map(|r| r.0).max().unwrap());
    }

    #[test]
    fn any_flipped_byte_under_the_crc_is_refused(
        recs in proptest::collection::vec(rec(), 1..5),
        at in 21usize..10_000,
        bit in 0u8..8,
    ) {
        let mut batch = build(&recs, 0);
        let at = at % batch.len().max(22);
        prop_assume!(at >= 21 && at < batch.len());
        batch[at] ^= 1 << bit;
        prop_assert!(record_batch::validate_for_append(&batch, 1 << 20).is_err());
    }

    #[test]
    fn any_truncation_is_refused(recs in proptest::collection::vec(rec(), 1..5), cut in 0usize..4000) {
        let batch = build(&recs, 0);
        let cut = cut % batch.len();
        prop_assert!(record_batch::validate_for_append(&batch[..cut], 1 << 20).is_err());
        // Read back, a cut batch is the normal end of a fetch: nothing, and no error.
        prop_assert_eq!(records::decode_deep(&batch[..cut]).unwrap(), vec![]);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = record_batch::validate_for_append(&bytes, 1 << 20);
        let _ = records::decode_deep(&bytes);
    }
}

/// A batch as the Java client writes it (the layout of Kafka's DefaultRecordBatch, built by
/// hand here from the format description, not by our encoder): one record, key "k", value
/// "v", one header "h" = "x", timestamp 1000, CRC-32C over attributes onwards.
#[test]
fn a_batch_written_by_the_published_layout_is_read_exactly() {
    let mut record = vec![0u8]; // attributes
    record.push(0); // timestamp delta 0 (zig-zag)
    record.push(0); // offset delta 0
    record.extend_from_slice(&[2, b'k']); // key length 1 (zig-zag 2)
    record.extend_from_slice(&[2, b'v']);
    record.push(2); // one header
    record.extend_from_slice(&[2, b'h', 2, b'x']);
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // attributes
    body.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    body.extend_from_slice(&1000i64.to_be_bytes()); // base timestamp
    body.extend_from_slice(&1000i64.to_be_bytes()); // max timestamp
    body.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    body.extend_from_slice(&(-1i16).to_be_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&1i32.to_be_bytes()); // records
    body.push((record.len() as u8) << 1);
    body.extend_from_slice(&record);
    let mut batch = Vec::new();
    batch.extend_from_slice(&0i64.to_be_bytes());
    batch.extend_from_slice(&((4 + 1 + 4 + body.len()) as i32).to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes());
    batch.push(2);
    batch.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    batch.extend_from_slice(&body);
    assert_eq!(
        batch,
        build(
            &[(
                1000,
                Some(b"k".to_vec()),
                Some(b"v".to_vec()),
                vec![("h".into(), Some(b"x".to_vec()))]
            )],
            0
        )
    );
    let got = records::decode_deep(&batch).unwrap();
    assert_eq!(got[0].headers, vec![("h".to_owned(), Some(b"x".to_vec()))]);
}

#[test]
fn producer_mistakes_are_refused_with_the_error_kafka_gives() {
    let one = build(&[(1, None, Some(b"a".to_vec()), vec![])], 0);
    // Two batches in one produce.
    let two = [one.clone(), one.clone()].concat();
    assert_eq!(
        record_batch::validate_for_append(&two, 1 << 20),
        Err(SetError::NotOneBatch)
    );
    // A bad CRC.
    let mut bad = one.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(
        record_batch::validate_for_append(&bad, 1 << 20),
        Err(SetError::Corrupt(MessageError::BadCrc))
    );
    // Too large.
    assert_eq!(
        record_batch::validate_for_append(&one, 10),
        Err(SetError::MessageTooLarge)
    );
    // A record count that disagrees with lastOffsetDelta (CRC recomputed so only that is wrong).
    let mut wrong = one.clone();
    wrong[57..61].copy_from_slice(&2i32.to_be_bytes());
    let crc = crc32c::crc32c(&wrong[21..]);
    wrong[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        record_batch::validate_for_append(&wrong, 1 << 20),
        Err(SetError::Corrupt(_))
    ));
    // A transactional batch (attributes bit 4) needs a producer id; a control batch (bit 5)
    // is only ever written by a leader.
    let flagged = |bits: u8| {
        let mut b = one.clone();
        b[22] |= bits;
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        record_batch::validate_for_append(&b, 1 << 20)
    };
    assert!(matches!(flagged(0x10), Err(SetError::Unsupported(_))));
    assert!(matches!(flagged(0x30), Err(SetError::Unsupported(_))));
    assert!(matches!(flagged(0x20), Err(SetError::Unsupported(_))));
    let mut b = BatchBuilder::new().idempotent(5, 0, 0).transactional();
    b.push(&NewRecord {
        timestamp: 1,
        key: None,
        value: Some(b"v"),
        headers: &[],
    });
    let txn = b.finish(0).unwrap();
    assert!(record_batch::validate_for_append(&txn, 1 << 20).is_ok());
}

#[test]
fn an_overflowing_varint_in_a_record_is_corrupt() {
    let mut batch = build(&[(1, None, Some(b"a".to_vec()), vec![])], 0);
    // Replace the record's length varint with six continuation bytes' worth of overflow.
    let at = 61;
    batch.splice(at..at + 1, [0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    let len = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        record_batch::validate_for_append(&batch, 1 << 20),
        Err(SetError::Corrupt(_))
    ));
}

#[test]
fn log_append_time_rewrites_the_timestamps_and_keeps_the_crc_valid() {
    let mut batch = build(
        &[
            (5, None, Some(b"a".to_vec()), vec![]),
            (9, None, None, vec![]),
        ],
        0,
    );
    record_batch::assign(&mut batch, 10, 7, Some(123_456));
    let b = record_batch::parse_batch(&batch).unwrap();
    assert!(b.is_log_append_time());
    assert_eq!(
        (b.partition_leader_epoch(), b.max_timestamp()),
        (7, 123_456)
    );
    let ts: Vec<i64> = records::decode_deep(&batch)
        .unwrap()
        .iter()
        .map(|m| m.timestamp)
        .collect();
    assert_eq!(ts, vec![123_456, 123_456]);
}

#[test]
fn down_conversion_keeps_offsets_keys_values_and_timestamps() {
    let recs: Vec<Rec> = (0..5)
        .map(|i| {
            (
                100 + i,
                Some(vec![i as u8]),
                Some(vec![b'v'; 10]),
                vec![("h".into(), None)],
            )
        })
        .collect();
    for codec in [0, 1, 3, 4] {
        let mut batch = build(&recs, codec);
        record_batch::assign(&mut batch, 40, 0, None);
        for magic in [0, 1] {
            let mut out = Vec::new();
            records::down_convert(&batch, magic, 42, 1 << 20, &mut out).unwrap();
            let got = records::decode_deep(&out).unwrap();
            assert_eq!(got.len(), 3, "from offset 42");
            assert_eq!(got[0].offset, 42);
            assert_eq!(got[0].key, Some(vec![2]));
            assert_eq!(got[0].timestamp, if magic == 1 { 102 } else { -1 });
            assert!(got[0].headers.is_empty(), "headers are dropped");
            assert!(gregor::protocol::message::iter(&out).all(|m| m.unwrap().magic == magic));
        }
        // A byte limit below one message still yields the first one.
        let mut out = Vec::new();
        records::down_convert(&batch, 1, 40, 1, &mut out).unwrap();
        assert_eq!(records::decode_deep(&out).unwrap().len(), 1);
    }
}
