//! Message sets in the magic 0 and magic 1 formats.
//!
//! ```text
//! MessageSet := (Offset:int64 MessageSize:int32 Message)*
//! Message    := Crc:uint32 Magic:int8 Attributes:int8 [Timestamp:int64 if magic 1] Key:BYTES Value:BYTES
//! ```
//! The broker never re-encodes a message it stores: it validates each entry in place (size,
//! magic, CRC, key/value lengths), writes the offsets it assigns into the entries' offset
//! fields, and serves the bytes back as they were received.

use byteorder::{BigEndian, ByteOrder};

use super::compression;

/// Offset + size fields in front of every message.
pub const LOG_OVERHEAD: usize = 12;
/// Smallest magic-0 message: crc, magic, attributes and two length fields.
pub const MIN_MESSAGE_SIZE: usize = 14;
/// Codec bits of the attributes byte.
pub const COMPRESSION_CODEC_MASK: i8 = 0x07;

/// One message of a set, borrowed from the set's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    pub offset: i64,
    pub magic: i8,
    pub attributes: i8,
    /// Only magic 1 carries a timestamp; -1 means none.
    pub timestamp: Option<i64>,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Size of the whole entry including `LOG_OVERHEAD`.
    pub entry_len: usize,
}

impl Message<'_> {
    pub fn codec(&self) -> i8 {
        self.attributes & COMPRESSION_CODEC_MASK
    }
}

/// What is wrong with a message entry. `Incomplete` is the normal end of a fetched set (the
/// broker cuts at a byte limit); the others mean corruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageError {
    /// The set ends inside this entry.
    Incomplete,
    /// The size field is below the minimum or the key/value lengths disagree with it.
    BadSize,
    BadMagic(i8),
    BadCrc,
}

impl std::fmt::Display for MessageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MessageError::Incomplete => write!(f, "incomplete message"),
            MessageError::BadSize => write!(f, "message size inconsistent with its fields"),
            MessageError::BadMagic(m) => write!(f, "unknown magic byte {m}"),
            MessageError::BadCrc => write!(f, "CRC mismatch"),
        }
    }
}

/// Whether a format 0/1 set has a compressed wrapper among its top-level entries, read from
/// the entries' size and attributes fields alone (no CRC: validation checks that once).
pub fn has_compressed_entry(set: &[u8]) -> bool {
    // offset (8), size (4), crc (4), magic (1), attributes (1)
    const ATTRIBUTES_AT: usize = LOG_OVERHEAD + 5;
    let mut pos = 0;
    while let Some(entry) = set.get(pos..pos + ATTRIBUTES_AT + 1) {
        if entry[ATTRIBUTES_AT] as i8 & COMPRESSION_CODEC_MASK != 0 {
            return true;
        }
        let size = BigEndian::read_i32(&entry[8..12]);
        if size < MIN_MESSAGE_SIZE as i32 {
            return false;
        }
        pos += LOG_OVERHEAD + size as usize;
    }
    false
}

/// Parses the entry at the front of `buf` and checks its CRC.
pub fn parse_entry(buf: &[u8]) -> Result<Message<'_>, MessageError> {
    if buf.len() < LOG_OVERHEAD {
        return Err(MessageError::Incomplete);
    }
    let offset = BigEndian::read_i64(&buf[0..8]);
    let size = BigEndian::read_i32(&buf[8..12]);
    if size < MIN_MESSAGE_SIZE as i32 {
        return Err(MessageError::BadSize);
    }
    let size = size as usize;
    if buf.len() - LOG_OVERHEAD < size {
        return Err(MessageError::Incomplete);
    }
    let msg = &buf[LOG_OVERHEAD..LOG_OVERHEAD + size];
    let crc = BigEndian::read_u32(&msg[0..4]);
    let magic = msg[4] as i8;
    let attributes = msg[5] as i8;
    let mut pos = 6;
    let timestamp = match magic {
        0 => None,
        1 => {
            if msg.len() < 22 {
                return Err(MessageError::BadSize);
            }
            pos += 8;
            Some(BigEndian::read_i64(&msg[6..14]))
        }
        m => return Err(MessageError::BadMagic(m)),
    };
    let key = read_bytes(msg, &mut pos)?;
    let value = read_bytes(msg, &mut pos)?;
    if pos != msg.len() {
        return Err(MessageError::BadSize);
    }
    if crc32fast::hash(&msg[4..]) != crc {
        return Err(MessageError::BadCrc);
    }
    Ok(Message {
        offset,
        magic,
        attributes,
        timestamp,
        key,
        value,
        entry_len: LOG_OVERHEAD + size,
    })
}

fn read_bytes<'a>(msg: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, MessageError> {
    if msg.len() < *pos + 4 {
        return Err(MessageError::BadSize);
    }
    let len = BigEndian::read_i32(&msg[*pos..*pos + 4]);
    *pos += 4;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || msg.len() - *pos < len as usize {
        return Err(MessageError::BadSize);
    }
    let b = &msg[*pos..*pos + len as usize];
    *pos += len as usize;
    Ok(Some(b))
}

/// Reads one entry at the start of a set: the entry and the bytes it takes.
pub type ParseEntry<'a, T> = fn(&'a [u8]) -> Result<(T, usize), MessageError>;

/// Iterates the complete entries of a set; stops quietly at a trailing partial entry (the
/// broker cuts sets at a byte limit) and yields the error for a corrupt one. Shared by the
/// message view here and the any-format entry view of `records`.
pub struct SetIter<'a, T> {
    buf: &'a [u8],
    done: bool,
    parse: ParseEntry<'a, T>,
}

impl<'a, T> SetIter<'a, T> {
    pub fn new(buf: &'a [u8], parse: ParseEntry<'a, T>) -> Self {
        SetIter {
            buf,
            done: false,
            parse,
        }
    }
}

impl<'a, T> Iterator for SetIter<'a, T> {
    type Item = Result<T, MessageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.buf.is_empty() {
            return None;
        }
        match (self.parse)(self.buf) {
            Ok((entry, len)) => {
                self.buf = &self.buf[len..];
                Some(Ok(entry))
            }
            Err(MessageError::Incomplete) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// The messages (magic 0 and 1) of a fetched set.
pub fn iter(buf: &[u8]) -> SetIter<'_, Message<'_>> {
    SetIter::new(buf, |b| {
        parse_entry(b).map(|m| {
            let len = m.entry_len;
            (m, len)
        })
    })
}

/// The result of checking a produced set before it is appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidSet {
    /// Number of messages, counting those inside compressed wrappers: the offsets it takes.
    pub count: u32,
    /// Bytes of complete messages; a trailing partial entry beyond it is dropped, as 0.8.2 did.
    pub valid_len: usize,
    /// When the set holds a compressed wrapper, the whole set is stored as one wrapper of the
    /// last wrapper's codec and magic (0.8.2's rule), rebuilt around the offsets it gets.
    pub compressed: Option<Recompressed>,
}

/// A produced set with compressed wrappers on its way to becoming one stored wrapper. Its
/// wrappers are decompressed once, while it is validated. Magic 1 inner offsets are relative
/// (0..n-1), so the wrapper is compressed then too, before any lock is taken, and only its own
/// offset waits for the append; magic 0 inner offsets are absolute, so compression must wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recompressed {
    pub codec: i8,
    pub magic: i8,
    count: i64,
    /// Magic 1: the finished wrapper entry. Magic 0: the inner messages, uncompressed.
    bytes: Vec<u8>,
}

impl Recompressed {
    /// The entry to store for offsets `first..first + count`.
    pub fn into_wrapper(mut self, first: i64) -> Result<Vec<u8>, SetError> {
        if self.magic == 0 {
            assign_offsets(&mut self.bytes, first);
            self.bytes = wrap(&self.bytes, self.codec, 0, -1)?;
        }
        // The wrapper carries its last inner offset; the CRC does not cover offsets.
        BigEndian::write_i64(&mut self.bytes[0..8], first + self.count - 1);
        Ok(self.bytes)
    }
}

/// One wrapper entry of `codec` holding `inner` (offset field left 0).
pub(crate) fn wrap(
    inner: &[u8],
    codec: i8,
    magic: i8,
    max_timestamp: i64,
) -> Result<Vec<u8>, SetError> {
    let value =
        compression::compress(codec, inner).map_err(|e| SetError::BadCompression(e.to_string()))?;
    let mut out = Vec::with_capacity(value.len() + 40);
    encode_entry_with_attributes(&mut out, 0, magic, codec, max_timestamp, None, Some(&value));
    Ok(out)
}

/// (codec, magic) of the last complete entry that is a compressed wrapper, read from the entry
/// headers alone (`for_each_deep` checks them).
fn last_wrapper(set: &[u8]) -> Option<(i8, i8)> {
    let mut pos = 0;
    let mut last = None;
    while let Some(header) = set.get(pos..pos + LOG_OVERHEAD + 6) {
        let Ok(size) = usize::try_from(BigEndian::read_i32(&header[8..12])) else {
            break;
        };
        let end = pos + LOG_OVERHEAD + size;
        if end > set.len() {
            break;
        }
        let (magic, attributes) = (header[16] as i8, header[17] as i8);
        if attributes & COMPRESSION_CODEC_MASK != 0 {
            last = Some((attributes & COMPRESSION_CODEC_MASK, magic));
        }
        pos = end;
    }
    last
}

/// Why a produced set is refused; maps to a protocol error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    Corrupt(MessageError),
    /// A message above `message.max.bytes`.
    MessageTooLarge,
    /// Compressed wrappers that together inflate past `compression::MAX_DECOMPRESSED`: more
    /// than the one wrapper they are stored as could hold for a reader.
    RecordListTooLarge,
    /// A wrapper that does not decompress, uses an unknown codec, or nests compression.
    BadCompression(String),
    /// A produce of format v2 must be exactly one batch (as Kafka requires).
    NotOneBatch,
    /// The wrong format for the request version, or a feature not served.
    Unsupported(&'static str),
}

/// Calls `f` for every message of a set, descending into compressed wrappers (whose inner
/// messages must be complete, CRC-valid and uncompressed). Returns the valid length.
fn for_each_deep(
    set: &[u8],
    max_message_bytes: usize,
    mut f: impl FnMut(&Message<'_>),
) -> Result<usize, SetError> {
    let mut pos = 0;
    // Bytes inflated so far: every wrapper of the set draws on one budget, since they are
    // stored merged into one wrapper that every reader must be able to inflate.
    let mut inflated = 0;
    while pos < set.len() {
        let m = match parse_entry(&set[pos..]) {
            Ok(m) => m,
            Err(MessageError::Incomplete) => break,
            Err(e) => return Err(SetError::Corrupt(e)),
        };
        if m.entry_len - LOG_OVERHEAD > max_message_bytes {
            return Err(SetError::MessageTooLarge);
        }
        if m.codec() == 0 {
            f(&m);
        } else if m.codec() == compression::ZSTD {
            // Kafka allows zstd only in format v2 (KIP-110).
            return Err(SetError::Unsupported("zstd in message format 0 or 1"));
        } else {
            let budget = compression::MAX_DECOMPRESSED - inflated;
            let inner = match compression::decompress_within(
                m.codec(),
                m.value.unwrap_or_default(),
                budget,
            ) {
                Ok(inner) => inner,
                Err(compression::CompressionError::TooLarge(_)) => {
                    return Err(SetError::RecordListTooLarge);
                }
                Err(e) => return Err(SetError::BadCompression(e.to_string())),
            };
            inflated += inner.len();
            let mut ipos = 0;
            while ipos < inner.len() {
                let im = parse_entry(&inner[ipos..])
                    .map_err(|e| SetError::BadCompression(format!("inner message: {e}")))?;
                if im.codec() != 0 {
                    return Err(SetError::BadCompression("nested compression".into()));
                }
                f(&im);
                ipos += im.entry_len;
            }
        }
        pos += m.entry_len;
    }
    Ok(pos)
}

/// Validates a produced set: size, magic and CRC of every message, compressed wrappers
/// decompressed and their inner messages checked too, each message at most
/// `max_message_bytes`. A set with wrappers comes back ready to be rebuilt as one.
pub fn validate_for_append(set: &[u8], max_message_bytes: usize) -> Result<ValidSet, SetError> {
    let Some((codec, magic)) = last_wrapper(set) else {
        let mut count = 0u32;
        let valid_len = for_each_deep(set, max_message_bytes, |_| count += 1)?;
        return Ok(ValidSet {
            count,
            valid_len,
            compressed: None,
        });
    };
    // Every message, re-encoded back to back as it will sit inside the stored wrapper.
    let mut inner = Vec::with_capacity(set.len() * 2);
    let mut n: i64 = 0;
    let mut max_ts = -1;
    let valid_len = for_each_deep(set, max_message_bytes, |m| {
        let ts = m.timestamp.unwrap_or(-1);
        max_ts = max_ts.max(ts);
        encode_entry(&mut inner, n, magic, ts, m.key, m.value);
        n += 1;
    })?;
    let bytes = if magic == 0 {
        inner
    } else {
        wrap(&inner, codec, magic, max_ts)?
    };
    Ok(ValidSet {
        count: n as u32,
        valid_len,
        compressed: Some(Recompressed {
            codec,
            magic,
            count: n,
            bytes,
        }),
    })
}

/// Writes dense offsets from `first` into a set already validated; returns the next offset.
pub fn assign_offsets(set: &mut [u8], first: i64) -> i64 {
    let mut pos = 0;
    let mut next = first;
    while pos + LOG_OVERHEAD <= set.len() {
        BigEndian::write_i64(&mut set[pos..pos + 8], next);
        let size = BigEndian::read_i32(&set[pos + 8..pos + 12]) as usize;
        pos += LOG_OVERHEAD + size;
        next += 1;
    }
    next
}

/// Appends one entry (offset, size, message) to `out`, computing the CRC. Used by clients, tests
/// and to build compressed wrappers; the broker otherwise stores what it receives.
pub fn encode_entry(
    out: &mut Vec<u8>,
    offset: i64,
    magic: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    encode_entry_with_attributes(out, offset, magic, 0, timestamp, key, value);
}

/// `encode_entry` with an attributes byte (a compression codec for a wrapper).
pub fn encode_entry_with_attributes(
    out: &mut Vec<u8>,
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    out.extend_from_slice(&offset.to_be_bytes());
    let size_at = out.len();
    out.extend_from_slice(&[0; 4]);
    let crc_at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(magic as u8);
    out.push(attributes as u8);
    if magic == 1 {
        out.extend_from_slice(&timestamp.to_be_bytes());
    }
    for field in [key, value] {
        match field {
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    let crc = crc32fast::hash(&out[crc_at + 4..]);
    BigEndian::write_u32(&mut out[crc_at..crc_at + 4], crc);
    let size = (out.len() - crc_at) as i32;
    BigEndian::write_i32(&mut out[size_at..size_at + 4], size);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::decode_deep;

    fn set_of(values: &[&[u8]], magic: i8) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            encode_entry(&mut out, i as i64, magic, 1234, Some(b"k"), Some(v));
        }
        out
    }

    #[test]
    fn magic0_and_magic1_round_trip() {
        for magic in [0, 1] {
            let set = set_of(&[b"a", b"bb"], magic);
            let msgs: Vec<_> = iter(&set).map(Result::unwrap).collect();
            assert_eq!(msgs.len(), 2);
            assert_eq!(msgs[1].value, Some(&b"bb"[..]));
            assert_eq!(msgs[0].magic, magic);
            assert_eq!(msgs[0].timestamp, (magic == 1).then_some(1234));
        }
    }

    #[test]
    fn bad_crc_is_detected() {
        let mut set = set_of(&[b"hello"], 0);
        let last = set.len() - 1;
        set[last] ^= 0xff;
        assert_eq!(
            validate_for_append(&set, 1 << 20),
            Err(SetError::Corrupt(MessageError::BadCrc))
        );
    }

    #[test]
    fn trailing_partial_message_is_trimmed() {
        let set = set_of(&[b"one", b"two"], 0);
        let cut = &set[..set.len() - 3];
        let v = validate_for_append(cut, 1 << 20).unwrap();
        assert_eq!(v.count, 1);
        assert_eq!(iter(cut).count(), 1);
    }

    #[test]
    fn offsets_are_assigned_densely() {
        let mut set = set_of(&[b"a", b"b", b"c"], 1);
        assert_eq!(assign_offsets(&mut set, 100), 103);
        let offs: Vec<_> = iter(&set).map(|m| m.unwrap().offset).collect();
        assert_eq!(offs, vec![100, 101, 102]);
    }

    #[test]
    fn oversize_and_bad_compression_are_refused() {
        let set = set_of(&[&[7u8; 100]], 0);
        assert_eq!(
            validate_for_append(&set, 50),
            Err(SetError::MessageTooLarge)
        );
        // A gzip wrapper whose value is not gzip.
        let mut set = Vec::new();
        encode_entry_with_attributes(&mut set, 0, 0, 1, -1, None, Some(b"not gzip at all"));
        assert!(matches!(
            validate_for_append(&set, 1 << 20),
            Err(SetError::BadCompression(_))
        ));
        // An lz4 wrapper whose value is not an LZ4 frame.
        let mut set = Vec::new();
        encode_entry_with_attributes(&mut set, 0, 0, 3, -1, None, Some(b"x"));
        assert!(matches!(
            validate_for_append(&set, 1 << 20),
            Err(SetError::BadCompression(_))
        ));
    }

    #[test]
    fn compressed_sets_are_rebuilt_with_assigned_offsets() {
        for (codec, magic) in [(1, 0), (2, 0), (1, 1), (2, 1)] {
            // As a client sends it: a wrapper with placeholder inner offsets 0, 1, 2.
            let inner = set_of(&[b"a", b"b", b"c"], magic);
            let mut sent = Vec::new();
            let z = compression::compress(codec, &inner).unwrap();
            encode_entry_with_attributes(&mut sent, 0, magic, codec, 7, None, Some(&z));
            let v = validate_for_append(&sent, 1 << 20).unwrap();
            let r = v.compressed.unwrap();
            assert_eq!((v.count, r.codec, r.magic), (3, codec, magic));
            let stored = r.into_wrapper(100).unwrap();
            let wrapper = parse_entry(&stored).unwrap();
            assert_eq!(wrapper.offset, 102);
            let got: Vec<(i64, Vec<u8>)> = decode_deep(&stored)
                .unwrap()
                .into_iter()
                .map(|m| (m.offset, m.value.unwrap()))
                .collect();
            assert_eq!(
                got,
                vec![
                    (100, b"a".to_vec()),
                    (101, b"b".to_vec()),
                    (102, b"c".to_vec())
                ]
            );
        }
    }
}
