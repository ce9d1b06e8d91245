//! Record batches: message format v2 (magic 2, KIP-98).
//!
//! ```text
//! RecordBatch := baseOffset:int64 batchLength:int32 partitionLeaderEpoch:int32 magic:int8=2
//!                crc:uint32 attributes:int16 lastOffsetDelta:int32 baseTimestamp:int64
//!                maxTimestamp:int64 producerId:int64 producerEpoch:int16 baseSequence:int32
//!                records:[Record] (int32 count, then the records, compressed as one block)
//! Record      := length:varint attributes:int8 timestampDelta:varlong offsetDelta:varint
//!                key:varint-bytes value:varint-bytes headers:[varint key, varint-bytes value]
//! ```
//! The CRC-32C covers `attributes` to the end, so `baseOffset` and `partitionLeaderEpoch` —
//! the two fields the leader assigns — can be written into a validated batch in place: the
//! broker never decodes and re-encodes a batch it stores.

use byteorder::{BigEndian, ByteOrder};
use serde::{Deserialize, Serialize};

use super::compression;
use super::message::{MessageError, SetError};
use super::primitives::{Reader, Writer};

mod control;
mod recompress;
mod retain;
pub use control::{MARKER_PEEK, TxnMarker, encode_marker, header_flags, parse_marker};
pub use recompress::{CompressionType, recompress};
pub use retain::{DELETE_HORIZON, rebuild_retained};

pub const MAGIC: i8 = 2;
/// Bytes before the first record: the header above with the record count.
pub const BATCH_OVERHEAD: usize = 61;
/// `batchLength` counts from `partitionLeaderEpoch`: the 12 bytes of offset and length are
/// outside it.
const MIN_BATCH_LENGTH: usize = BATCH_OVERHEAD - 12;
const PLE_AT: usize = 12;
pub const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const COUNT_AT: usize = 57;

const CODEC_MASK: i16 = 0x07;

/// The compression codec of the batch at the front of `bytes`; `None` when too short to say.
pub fn codec_of(bytes: &[u8]) -> Option<i8> {
    let attrs = bytes.get(ATTRIBUTES_AT..ATTRIBUTES_AT + 2)?;
    Some((BigEndian::read_i16(attrs) & CODEC_MASK) as i8)
}
/// Attributes bit 3: the timestamps are the broker's append time, not the producer's.
pub const LOG_APPEND_TIME: i16 = 0x08;
const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;
/// `producerId` of a batch from a producer without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;

/// A complete batch whose CRC has been checked, borrowed from a set's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    bytes: &'a [u8],
}

impl<'a> Batch<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    pub fn base_offset(&self) -> i64 {
        BigEndian::read_i64(self.bytes)
    }
    pub fn last_offset_delta(&self) -> i32 {
        BigEndian::read_i32(&self.bytes[LAST_OFFSET_DELTA_AT..])
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset() + i64::from(self.last_offset_delta())
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        BigEndian::read_i32(&self.bytes[PLE_AT..])
    }
    pub fn attributes(&self) -> i16 {
        BigEndian::read_i16(&self.bytes[ATTRIBUTES_AT..])
    }
    pub fn codec(&self) -> i8 {
        (self.attributes() & CODEC_MASK) as i8
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes() & LOG_APPEND_TIME != 0
    }
    pub fn base_timestamp(&self) -> i64 {
        BigEndian::read_i64(&self.bytes[BASE_TIMESTAMP_AT..])
    }
    pub fn max_timestamp(&self) -> i64 {
        BigEndian::read_i64(&self.bytes[MAX_TIMESTAMP_AT..])
    }
    pub fn producer_id(&self) -> i64 {
        BigEndian::read_i64(&self.bytes[PRODUCER_ID_AT..])
    }
    pub fn producer_epoch(&self) -> i16 {
        BigEndian::read_i16(&self.bytes[PRODUCER_EPOCH_AT..])
    }
    pub fn base_sequence(&self) -> i32 {
        BigEndian::read_i32(&self.bytes[BASE_SEQUENCE_AT..])
    }
    pub fn record_count(&self) -> i32 {
        BigEndian::read_i32(&self.bytes[COUNT_AT..])
    }
    /// The records block: compressed as one when `codec` is not 0.
    fn records_block(&self) -> &'a [u8] {
        &self.bytes[BATCH_OVERHEAD..]
    }

    /// The records, decompressed (one allocation per compressed batch, none otherwise).
    pub fn records(&self) -> Result<Records<'a>, SetError> {
        let block = match self.codec() {
            0 => std::borrow::Cow::Borrowed(self.records_block()),
            c => std::borrow::Cow::Owned(
                compression::decompress(c, self.records_block())
                    .map_err(|e| SetError::BadCompression(e.to_string()))?,
            ),
        };
        Ok(Records {
            block,
            left: self.record_count().max(0) as usize,
        })
    }
}

/// Parses the batch at the front of `buf` and checks its length fields and CRC-32C.
pub fn parse_batch(buf: &[u8]) -> Result<Batch<'_>, MessageError> {
    if buf.len() < 12 {
        return Err(MessageError::Incomplete);
    }
    let len = BigEndian::read_i32(&buf[8..12]);
    if len < MIN_BATCH_LENGTH as i32 {
        return Err(MessageError::BadSize);
    }
    let end = 12 + len as usize;
    if buf.len() < end {
        return Err(MessageError::Incomplete);
    }
    let bytes = &buf[..end];
    if bytes[MAGIC_AT] as i8 != MAGIC {
        return Err(MessageError::BadMagic(bytes[MAGIC_AT] as i8));
    }
    if crc32c::crc32c(&bytes[ATTRIBUTES_AT..]) != BigEndian::read_u32(&bytes[CRC_AT..]) {
        return Err(MessageError::BadCrc);
    }
    Ok(Batch { bytes })
}

/// One record, borrowed from its batch's (decompressed) block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

/// Iterates a batch's records; each must lie exactly within its length field.
pub struct Records<'a> {
    block: std::borrow::Cow<'a, [u8]>,
    left: usize,
}

impl Records<'_> {
    /// Calls `f` for each record, then checks that the block holds nothing after them.
    pub fn for_each(&self, mut f: impl FnMut(Record<'_>)) -> Result<(), SetError> {
        let corrupt = |_: super::DecodeError| SetError::Corrupt(MessageError::BadSize);
        let mut r = Reader::new(&self.block);
        for _ in 0..self.left {
            let len = r.varint("record length").map_err(corrupt)?;
            let start = r.position();
            let rec = read_record(&mut r).map_err(corrupt)?;
            if len < 0 || r.position() - start != len as usize {
                return Err(SetError::Corrupt(MessageError::BadSize));
            }
            f(rec);
        }
        r.finish().map_err(corrupt)
    }
}

fn read_record<'a>(r: &mut Reader<'a>) -> super::DecodeResult<Record<'a>> {
    r.i8("record attributes")?;
    let timestamp_delta = r.varlong("timestamp delta")?;
    let offset_delta = r.varint("offset delta")?;
    let key = varint_bytes(r, "key")?;
    let value = varint_bytes(r, "value")?;
    let n = r.varint("header count")?;
    // Each header takes at least two bytes: a bounded count cannot make us allocate more.
    if n < 0 || n as usize > r.remaining() / 2 {
        return Err(super::DecodeError::Invalid("header count"));
    }
    let mut headers = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let k = varint_bytes(r, "header key")?.ok_or(super::DecodeError::Invalid("header key"))?;
        let k = std::str::from_utf8(k).map_err(|_| super::DecodeError::Invalid("header key"))?;
        headers.push((k, varint_bytes(r, "header value")?));
    }
    Ok(Record {
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

fn varint_bytes<'a>(
    r: &mut Reader<'a>,
    field: &'static str,
) -> super::DecodeResult<Option<&'a [u8]>> {
    match r.varint(field)? {
        -1 => Ok(None),
        n if n < 0 => Err(super::DecodeError::Invalid(field)),
        n => r.bytes_exact(n as usize, field).map(Some),
    }
}

/// The idempotent producer's fields of a batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerMeta {
    pub producer_id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
    pub count: i32,
    pub base_offset: i64,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    /// Part of a transaction (attributes bit 4).
    pub transactional: bool,
    /// A control batch: a transaction marker (attributes bit 5).
    pub control: bool,
}

/// One batch of an idempotent producer: its sequence and offset ranges, as the partition's
/// producer state (`log::producer_state`) remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchMeta {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
}

/// The last sequence of a batch of `count` records starting at `first`.
pub fn last_seq(first: i32, count: i32) -> i32 {
    let n = i64::from(first) + i64::from(count) - 1;
    (n % (i64::from(i32::MAX) + 1)) as i32
}

impl ProducerMeta {
    /// The batch's sequence and offset ranges once its first offset is `first`. The last
    /// sequence counts from the last offset delta, not the record count, as Kafka's does: a
    /// batch the cleaner emptied keeps its delta, and with it the sequence it ended at.
    pub fn batch_at(&self, first: i64) -> BatchMeta {
        BatchMeta {
            first_seq: self.base_sequence,
            last_seq: last_seq(self.base_sequence, self.last_offset_delta + 1),
            first_offset: first,
            last_offset: first + i64::from(self.last_offset_delta),
        }
    }
}

/// The producer fields of the batch whose header starts `header` (at least `BATCH_OVERHEAD`
/// bytes), when it is a batch from an idempotent producer; `None` otherwise.
pub fn producer_meta(header: &[u8]) -> Option<ProducerMeta> {
    if header.len() < BATCH_OVERHEAD || header[MAGIC_AT] as i8 != MAGIC {
        return None;
    }
    let producer_id = BigEndian::read_i64(&header[PRODUCER_ID_AT..]);
    let (transactional, control) = header_flags(header);
    (producer_id >= 0).then(|| ProducerMeta {
        producer_id,
        epoch: BigEndian::read_i16(&header[PRODUCER_EPOCH_AT..]),
        base_sequence: BigEndian::read_i32(&header[BASE_SEQUENCE_AT..]),
        count: BigEndian::read_i32(&header[COUNT_AT..]),
        base_offset: BigEndian::read_i64(header),
        last_offset_delta: BigEndian::read_i32(&header[LAST_OFFSET_DELTA_AT..]),
        max_timestamp: BigEndian::read_i64(&header[MAX_TIMESTAMP_AT..]),
        transactional,
        control,
    })
}

/// (partition leader epoch, base offset) of a format v2 batch header; `None` for a message
/// of format 0 or 1, which carries no epoch.
pub fn header_epoch(header: &[u8]) -> Option<(i32, i64)> {
    if header.len() <= MAGIC_AT || header[MAGIC_AT] as i8 != MAGIC {
        return None;
    }
    Some((
        BigEndian::read_i32(&header[PLE_AT..]),
        BigEndian::read_i64(header),
    ))
}

/// What the leader learned about a produced batch while validating it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidBatch {
    pub count: u32,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

/// Checks a produced set that must be exactly one batch: CRC, lengths, the record count and
/// offset deltas (0, 1, … as a producer writes them), every record's layout — inside the
/// decompressed block for a compressed batch — and the size limit. Control batches are
/// refused (only leaders write markers), as are transactional ones without a producer id.
pub fn validate_for_append(set: &[u8], max_message_bytes: usize) -> Result<ValidBatch, SetError> {
    let batch = parse_batch(set).map_err(|e| match e {
        MessageError::Incomplete => SetError::Corrupt(MessageError::BadSize),
        e => SetError::Corrupt(e),
    })?;
    if batch.bytes().len() != set.len() {
        return Err(SetError::NotOneBatch);
    }
    if set.len() - 12 > max_message_bytes {
        return Err(SetError::MessageTooLarge);
    }
    if batch.attributes() & CONTROL != 0 {
        return Err(SetError::Unsupported(
            "a control batch: transaction markers are written by partition leaders",
        ));
    }
    if batch.attributes() & TRANSACTIONAL != 0 && batch.producer_id() < 0 {
        return Err(SetError::Unsupported(
            "a transactional batch without a producer id",
        ));
    }
    let count = batch.record_count();
    if count <= 0 || batch.last_offset_delta() != count - 1 {
        return Err(SetError::Corrupt(MessageError::BadSize));
    }
    let mut expected = 0;
    let mut in_order = true;
    batch.records()?.for_each(|r| {
        in_order &= r.offset_delta == expected;
        expected += 1;
    })?;
    if !in_order {
        return Err(SetError::Corrupt(MessageError::BadSize));
    }
    Ok(ValidBatch {
        count: count as u32,
        max_timestamp: batch.max_timestamp(),
        producer_id: batch.producer_id(),
        producer_epoch: batch.producer_epoch(),
        base_sequence: batch.base_sequence(),
    })
}

/// The leader's part: writes the base offset and its leader epoch (both outside the CRC).
/// With `log_append_time` the batch's timestamps become the broker's clock, which changes
/// bytes under the CRC, so only then is the CRC computed again (no record is touched).
pub fn assign(batch: &mut [u8], base_offset: i64, leader_epoch: i32, log_append_time: Option<i64>) {
    BigEndian::write_i64(&mut batch[0..8], base_offset);
    BigEndian::write_i32(&mut batch[PLE_AT..PLE_AT + 4], leader_epoch);
    if let Some(now) = log_append_time {
        let attrs = BigEndian::read_i16(&batch[ATTRIBUTES_AT..]) | LOG_APPEND_TIME;
        BigEndian::write_i16(&mut batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2], attrs);
        BigEndian::write_i64(&mut batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8], now);
        let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
        BigEndian::write_u32(&mut batch[CRC_AT..CRC_AT + 4], crc);
    }
}

/// A record as a producer hands it over.
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
}

/// Builds one batch on the client side: records are appended to one buffer as they come, and
/// `finish` compresses them (when asked) and writes the header and CRC.
pub struct BatchBuilder {
    records: Vec<u8>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    /// Producer id, epoch and base sequence (-1s: not idempotent).
    producer: (i64, i16, i32),
    /// Attribute bits besides the codec (transactional).
    flags: i16,
}

impl BatchBuilder {
    pub fn new() -> Self {
        BatchBuilder {
            records: Vec::new(),
            count: 0,
            base_timestamp: -1,
            max_timestamp: -1,
            producer: (NO_PRODUCER_ID, -1, -1),
            flags: 0,
        }
    }

    /// Marks the batch as part of its (idempotent) producer's transaction.
    pub fn transactional(mut self) -> Self {
        self.flags |= TRANSACTIONAL;
        self
    }

    /// Marks the batch as an idempotent producer's.
    pub fn idempotent(mut self, producer_id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer = (producer_id, epoch, base_sequence);
        self
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes so far, before compression (for a producer's batch-size limit).
    pub fn size(&self) -> usize {
        BATCH_OVERHEAD + self.records.len()
    }

    pub fn push(&mut self, rec: &NewRecord<'_>) {
        if self.count == 0 {
            self.base_timestamp = rec.timestamp;
        }
        self.max_timestamp = self.max_timestamp.max(rec.timestamp);
        encode_record(
            &mut self.records,
            rec.timestamp - self.base_timestamp,
            self.count,
            rec.key,
            rec.value,
            rec.headers,
        );
        self.count += 1;
    }

    /// The finished batch at base offset 0 (the leader assigns the real one), compressed with
    /// `codec` (0 for none).
    pub fn finish(self, codec: i8) -> Result<Vec<u8>, SetError> {
        let block = match codec {
            0 => self.records,
            c => compression::compress(c, &self.records)
                .map_err(|e| SetError::BadCompression(e.to_string()))?,
        };
        Ok(encode_batch(
            &Header {
                base_offset: 0,
                leader_epoch: -1,
                attributes: i16::from(codec) | self.flags,
                last_offset_delta: self.count - 1,
                base_timestamp: self.base_timestamp,
                max_timestamp: self.max_timestamp,
                producer: self.producer,
                count: self.count,
            },
            &block,
        ))
    }
}

impl Default for BatchBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// A batch's header fields, for `encode_batch`.
struct Header {
    base_offset: i64,
    leader_epoch: i32,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    /// Producer id, epoch and base sequence.
    producer: (i64, i16, i32),
    count: i32,
}

/// A batch of `header` around a records `block` (compressed as the attributes say), with its
/// CRC.
fn encode_batch(h: &Header, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(BATCH_OVERHEAD + block.len());
    out.put_i64(h.base_offset);
    out.put_i32((MIN_BATCH_LENGTH + block.len()) as i32);
    out.put_i32(h.leader_epoch);
    out.put_i8(MAGIC);
    out.put_i32(0); // CRC, below
    out.put_i16(h.attributes);
    out.put_i32(h.last_offset_delta);
    out.put_i64(h.base_timestamp);
    out.put_i64(h.max_timestamp);
    out.put_i64(h.producer.0);
    out.put_i16(h.producer.1);
    out.put_i32(h.producer.2);
    out.put_i32(h.count);
    out.extend_from_slice(block);
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    BigEndian::write_u32(&mut out[CRC_AT..CRC_AT + 4], crc);
    out
}

/// Appends one record (length-prefixed) to a records block.
fn encode_record(
    out: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) {
    let mut body =
        Vec::with_capacity(16 + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len));
    body.push(0);
    body.put_varlong(timestamp_delta);
    body.put_varint(offset_delta);
    put_varint_bytes(&mut body, key);
    put_varint_bytes(&mut body, value);
    body.put_varint(headers.len() as i32);
    for (k, v) in headers {
        put_varint_bytes(&mut body, Some(k.as_bytes()));
        put_varint_bytes(&mut body, *v);
    }
    out.put_varint(body.len() as i32);
    out.extend_from_slice(&body);
}

fn put_varint_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.put_varint(-1),
        Some(b) => {
            out.put_varint(b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}
