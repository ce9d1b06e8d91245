//! Log entries in any message format, as the log, followers and consumers meet them.
//!
//! Every format frames an entry the same way — an int64 offset, an int32 size — and keeps its
//! magic byte at the same position, so a segment holds magic 0, 1 and 2 entries side by side
//! (data written before and after an upgrade). What differs is the meaning of the offset
//! field: a magic 0/1 entry carries its own offset (a compressed wrapper its last inner one), a
//! batch its first, with the last one `lastOffsetDelta` further on.

use byteorder::{BigEndian, ByteOrder};

use super::compression;
use super::message::{self, LOG_OVERHEAD, MessageError, SetError, SetIter};
use super::record_batch::{self, MAGIC_AT};

/// One complete entry whose CRC has been checked.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub magic: i8,
    /// A batch's base offset; a magic 0/1 entry's offset field.
    pub first_offset: i64,
    /// The offset of the last message or record it holds.
    pub last_offset: i64,
    /// Its largest timestamp (-1 for magic 0).
    pub max_timestamp: i64,
    pub bytes: &'a [u8],
}

/// Parses the entry at the front of `buf`, checking its CRC (CRC-32 for magic 0/1, CRC-32C for
/// magic 2).
pub fn parse_entry(buf: &[u8]) -> Result<Entry<'_>, MessageError> {
    if buf.len() <= MAGIC_AT {
        return Err(MessageError::Incomplete);
    }
    if buf[MAGIC_AT] as i8 == record_batch::MAGIC {
        let b = record_batch::parse_batch(buf)?;
        return Ok(Entry {
            magic: record_batch::MAGIC,
            first_offset: b.base_offset(),
            last_offset: b.last_offset(),
            max_timestamp: b.max_timestamp(),
            bytes: b.bytes(),
        });
    }
    let m = message::parse_entry(buf)?;
    Ok(Entry {
        magic: m.magic,
        first_offset: m.offset,
        last_offset: m.offset,
        max_timestamp: m.timestamp.unwrap_or(-1),
        bytes: &buf[..m.entry_len],
    })
}

/// The last offset of the entry whose first bytes are `header`, read from its header alone
/// (no CRC check): what a segment scan needs. `None` when `header` is too short to tell.
pub fn last_offset_from_header(header: &[u8]) -> Option<i64> {
    let offset = BigEndian::read_i64(header.get(..8)?);
    if *header.get(MAGIC_AT)? as i8 != record_batch::MAGIC {
        return Some(offset);
    }
    let delta = BigEndian::read_i32(header.get(23..27)?);
    Some(offset + i64::from(delta))
}

/// Bytes of an entry's header that describe it: a whole batch header (offsets, timestamps,
/// producer id, epoch and sequence), and for a transaction marker its one record.
pub const HEADER_PEEK: usize = record_batch::BATCH_OVERHEAD + record_batch::MARKER_PEEK;

/// The entries of a set, any magic.
pub fn entries(buf: &[u8]) -> SetIter<'_, Entry<'_>> {
    SetIter::new(buf, |b| parse_entry(b).map(|e| (e, e.bytes.len())))
}

/// A message as a client sees it, decompressed, with its absolute offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedMessage {
    pub offset: i64,
    /// -1 when the format has none (magic 0).
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    /// Record headers (magic 2 only).
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Calls `f(offset, timestamp, key, value, headers)` for every message of a set, in order,
/// with compressed wrappers and batches opened. A trailing partial entry is the normal end of
/// a fetch.
pub fn for_each_message(
    set: &[u8],
    mut f: impl FnMut(i64, i64, Option<&[u8]>, Option<&[u8]>, &[(&str, Option<&[u8]>)]),
) -> Result<(), SetError> {
    for e in entries(set) {
        let e = e.map_err(SetError::Corrupt)?;
        if e.magic == record_batch::MAGIC {
            let b = record_batch::parse_batch(e.bytes).map_err(SetError::Corrupt)?;
            let (base, base_ts) = (b.base_offset(), b.base_timestamp());
            let append_time = b.is_log_append_time().then(|| b.max_timestamp());
            b.records()?.for_each(|r| {
                let ts = append_time.unwrap_or(base_ts + r.timestamp_delta);
                f(
                    base + i64::from(r.offset_delta),
                    ts,
                    r.key,
                    r.value,
                    &r.headers,
                );
            })?;
            continue;
        }
        let m = message::parse_entry(e.bytes).map_err(SetError::Corrupt)?;
        if m.codec() == 0 {
            f(m.offset, m.timestamp.unwrap_or(-1), m.key, m.value, &[]);
            continue;
        }
        let inner = compression::decompress(m.codec(), m.value.unwrap_or_default())
            .map_err(|e| SetError::BadCompression(e.to_string()))?;
        let msgs: Vec<message::Message<'_>> = message::iter(&inner)
            .collect::<Result<_, _>>()
            .map_err(SetError::Corrupt)?;
        let last_rel = msgs.last().map_or(0, |l| l.offset);
        for im in msgs {
            // magic 1 inner offsets are relative to the wrapper's (last) offset.
            let offset = if m.magic == 0 {
                im.offset
            } else {
                m.offset - last_rel + im.offset
            };
            f(offset, im.timestamp.unwrap_or(-1), im.key, im.value, &[]);
        }
    }
    Ok(())
}

/// Every complete message of a fetched set, owned.
pub fn decode_deep(set: &[u8]) -> Result<Vec<OwnedMessage>, SetError> {
    let mut out = Vec::new();
    for_each_message(set, |offset, timestamp, key, value, headers| {
        out.push(OwnedMessage {
            offset,
            timestamp,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.map(<[u8]>::to_vec)))
                .collect(),
        });
    })?;
    Ok(out)
}

/// Writes `set` into `out` for a fetcher that reads only magic `to` (0 or 1): batches become
/// uncompressed messages of that magic (headers dropped, as Kafka does; an append-time batch
/// marks its messages so in magic 1), magic 0/1 entries pass as they are, messages below
/// `from_offset` are left out. Stops once `out` holds `max_bytes` of whole messages, but
/// always includes the first one, so that a fetcher can make progress.
pub fn down_convert(
    set: &[u8],
    to: i8,
    from_offset: i64,
    max_bytes: usize,
    out: &mut Vec<u8>,
) -> Result<(), SetError> {
    let start = out.len();
    for e in entries(set) {
        let e = e.map_err(SetError::Corrupt)?;
        if out.len() - start >= max_bytes {
            break;
        }
        if e.magic != record_batch::MAGIC {
            out.extend_from_slice(e.bytes);
            continue;
        }
        let b = record_batch::parse_batch(e.bytes).map_err(SetError::Corrupt)?;
        let (base, base_ts) = (b.base_offset(), b.base_timestamp());
        let append_time = b.is_log_append_time().then(|| b.max_timestamp());
        let attributes = if append_time.is_some() && to == 1 {
            0x08
        } else {
            0
        };
        let mut full = false;
        b.records()?.for_each(|r| {
            let offset = base + i64::from(r.offset_delta);
            if offset < from_offset || full {
                return;
            }
            let len_before = out.len();
            let ts = append_time.unwrap_or(base_ts + r.timestamp_delta);
            message::encode_entry_with_attributes(out, offset, to, attributes, ts, r.key, r.value);
            if len_before > start && out.len() - start > max_bytes {
                out.truncate(len_before);
                full = true;
            }
        })?;
        if full {
            break;
        }
    }
    Ok(())
}

/// The largest timestamp of a set of entries whose offsets are assigned, and the last offset
/// of the entry holding it, read from entry headers alone: a batch's `maxTimestamp`, a magic 1
/// message's timestamp (a wrapper carries its largest). (-1, -1) when none has one.
pub fn max_timestamp_of(set: &[u8]) -> (i64, i64) {
    let mut best = (-1, -1);
    let mut pos = 0;
    while let Some(h) = set.get(pos..pos + LOG_OVERHEAD + 14) {
        let size = BigEndian::read_i32(&h[8..12]).max(0) as usize;
        let entry = &set[pos..set.len().min(pos + LOG_OVERHEAD + size)];
        let ts = match h[MAGIC_AT] as i8 {
            record_batch::MAGIC => entry.get(35..43).map_or(-1, BigEndian::read_i64),
            1 => BigEndian::read_i64(&h[18..26]),
            _ => -1,
        };
        if ts > best.0
            && let Some(last) = last_offset_from_header(entry)
        {
            best = (ts, last);
        }
        pos += LOG_OVERHEAD + size;
    }
    best
}

/// Whether a stored set holds a batch (and so needs converting for a magic 0/1 fetcher).
pub fn has_batches(set: &[u8]) -> bool {
    let mut pos = 0;
    while let Some(h) = set.get(pos..pos + MAGIC_AT + 1) {
        if h[MAGIC_AT] as i8 == record_batch::MAGIC {
            return true;
        }
        let size = BigEndian::read_i32(&h[8..12]).max(0) as usize;
        pos += LOG_OVERHEAD + size;
    }
    false
}
