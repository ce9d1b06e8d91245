//! Big-endian primitives of the Kafka wire format, read from a borrowed buffer.
//!
//! A `Reader` and an `Out` carry the version of the body they read or write, and whether that
//! version is *flexible* (KIP-482), both set once from the API table (`header::SUPPORTED_APIS`)
//! for the frame's api key and version. A flexible reader reads STRING, BYTES and ARRAY
//! lengths as unsigned varints holding length + 1 (0 is null), and `tags` reads a tagged-field
//! buffer where a classic reader reads nothing; `Out` writes them the same way. A codec is
//! written once per API, asks `version()` where a field comes or goes, and calls the same
//! methods in both encodings, so a layout reads like its schema.
//!
//! Every read checks the bytes present first, so a truncated or inconsistent frame becomes a
//! `DecodeError` and never a panic or an out-of-bounds slice. Array counts are checked against
//! the bytes that remain (each element needs at least `min_elem` bytes), so a hostile count
//! cannot make a decoder allocate gigabytes.

use byteorder::{BigEndian, ByteOrder};
use std::fmt;

/// Why a frame could not be decoded. Carries the field being read, so that the log line names
/// the problem a client has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The frame ended inside `field`.
    Truncated(&'static str),
    /// `field` holds a value the protocol does not allow (negative length, bad boolean, ...).
    Invalid(&'static str),
    /// Bytes were left over after the last field of the request.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated(field) => write!(f, "frame truncated in field `{field}`"),
            DecodeError::Invalid(field) => write!(f, "invalid value in field `{field}`"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} unexpected bytes after the request"),
        }
    }
}

impl std::error::Error for DecodeError {}

pub type DecodeResult<T> = Result<T, DecodeError>;

/// A cursor over one frame's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    api_key: i16,
    version: i16,
    flexible: bool,
}

/// Largest number of tagged fields accepted in one buffer: Kafka's schemas define a handful.
const MAX_TAGS: usize = 64;

impl<'a> Reader<'a> {
    /// A reader of classic bytes at version 0: headers, message sets, 0.8 layouts.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            api_key: -1,
            version: 0,
            flexible: false,
        }
    }

    /// A reader of a body of `api_key` at `version`, in the encoding the API table gives it.
    pub fn body(buf: &'a [u8], api_key: i16, version: i16) -> Self {
        Reader {
            buf,
            pos: 0,
            api_key,
            version,
            flexible: super::header::is_flexible(api_key, version),
        }
    }

    /// Switches to the flexible encoding: the tag buffer of a flexible header, read before the
    /// reader knows the body's version.
    pub(crate) fn set_flexible(&mut self, on: bool) {
        self.flexible = on;
    }

    /// The api key whose body is being read (-1 for classic bytes): the one layout shared by
    /// two APIs, AlterConfigs and IncrementalAlterConfigs, tells them apart by it.
    pub fn api_key(&self) -> i16 {
        self.api_key
    }

    /// The version of the body being read.
    pub fn version(&self) -> i16 {
        self.version
    }

    pub fn is_flexible(&self) -> bool {
        self.flexible
    }

    /// A field that exists from version `since` on: read by `f`, or `absent` in an earlier
    /// version's body.
    pub fn since<T>(
        &mut self,
        since: i16,
        absent: T,
        f: impl FnOnce(&mut Self) -> DecodeResult<T>,
    ) -> DecodeResult<T> {
        if self.version >= since {
            f(self)
        } else {
            Ok(absent)
        }
    }

    /// Reads and drops a field that exists from version `since` on and gregor does not use.
    pub fn skip_since<T>(
        &mut self,
        since: i16,
        f: impl FnOnce(&mut Self) -> DecodeResult<T>,
    ) -> DecodeResult<()> {
        self.since(since, (), |r| f(r).map(drop))
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, field: &'static str) -> DecodeResult<&'a [u8]> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated(field));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `n` bytes, borrowed.
    pub fn bytes_exact(&mut self, n: usize, field: &'static str) -> DecodeResult<&'a [u8]> {
        self.take(n, field)
    }

    pub fn i8(&mut self, field: &'static str) -> DecodeResult<i8> {
        Ok(self.take(1, field)?[0] as i8)
    }

    pub fn bool(&mut self, field: &'static str) -> DecodeResult<bool> {
        match self.i8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Invalid(field)),
        }
    }

    pub fn i16(&mut self, field: &'static str) -> DecodeResult<i16> {
        Ok(BigEndian::read_i16(self.take(2, field)?))
    }

    pub fn i32(&mut self, field: &'static str) -> DecodeResult<i32> {
        Ok(BigEndian::read_i32(self.take(4, field)?))
    }

    pub fn i64(&mut self, field: &'static str) -> DecodeResult<i64> {
        Ok(BigEndian::read_i64(self.take(8, field)?))
    }

    /// FLOAT64: an IEEE 754 double, big-endian.
    pub fn f64(&mut self, field: &'static str) -> DecodeResult<f64> {
        Ok(BigEndian::read_f64(self.take(8, field)?))
    }

    /// STRING: int16 length, -1 for null.
    pub fn nullable_string(&mut self, field: &'static str) -> DecodeResult<Option<&'a str>> {
        let Some(len) = self.length(field, false)? else {
            return Ok(None);
        };
        let bytes = self.take(len, field)?;
        std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| DecodeError::Invalid(field))
    }

    /// A NULLABLE_STRING, owned (a field kept beyond the frame).
    pub fn nullable_owned(&mut self, field: &'static str) -> DecodeResult<Option<String>> {
        Ok(self.nullable_string(field)?.map(str::to_owned))
    }

    /// A STRING that the protocol does not allow to be null.
    pub fn string(&mut self, field: &'static str) -> DecodeResult<&'a str> {
        self.nullable_string(field)?
            .ok_or(DecodeError::Invalid(field))
    }

    /// BYTES: int32 length, -1 for null.
    pub fn nullable_bytes(&mut self, field: &'static str) -> DecodeResult<Option<&'a [u8]>> {
        match self.length(field, true)? {
            None => Ok(None),
            Some(len) => self.take(len, field).map(Some),
        }
    }

    /// A length prefix: int16 (`wide` false) or int32, -1 null; in flexible mode an unsigned
    /// varint of length + 1, 0 null. Other negative lengths are invalid.
    fn length(&mut self, field: &'static str, wide: bool) -> DecodeResult<Option<usize>> {
        let n = if self.flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if wide {
            i64::from(self.i32(field)?)
        } else {
            i64::from(self.i16(field)?)
        };
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(DecodeError::Invalid(field)),
            n => Ok(Some(n as usize)),
        }
    }

    /// UNSIGNED_VARINT: at most 5 bytes, 7 bits each, low group first.
    pub fn uvarint(&mut self, field: &'static str) -> DecodeResult<u32> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, field)?[0];
            if i == 4 && b > 0x0f {
                return Err(DecodeError::Invalid(field));
            }
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Invalid(field))
    }

    /// VARINT: a zig-zag encoded int32.
    pub fn varint(&mut self, field: &'static str) -> DecodeResult<i32> {
        let u = self.uvarint(field)?;
        Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// VARLONG: a zig-zag encoded int64, at most 10 bytes.
    pub fn varlong(&mut self, field: &'static str) -> DecodeResult<i64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.take(1, field)?[0];
            if i == 9 && b > 0x01 {
                return Err(DecodeError::Invalid(field));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        Err(DecodeError::Invalid(field))
    }

    /// A tagged-field buffer (flexible mode only; nothing in classic mode). gregor reads no
    /// tagged field of a request yet, so each one is checked for size and skipped, as the
    /// schemas allow for tags a receiver does not know.
    pub fn tags(&mut self) -> DecodeResult<()> {
        if !self.flexible {
            return Ok(());
        }
        let n = self.uvarint("tagged_fields")? as usize;
        if n > MAX_TAGS {
            return Err(DecodeError::Invalid("tagged_fields"));
        }
        for _ in 0..n {
            self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            self.take(size, "tag value")?;
        }
        Ok(())
    }

    /// A size-prefixed blob (a message set): the bytes and their offset in the frame, so that a
    /// handler can rewrite offsets in place without copying.
    /// Null is refused in classic mode (0.8 clients never send it) and read as empty in
    /// flexible mode, where the schema makes RECORDS nullable.
    pub fn sized_region(&mut self, field: &'static str) -> DecodeResult<std::ops::Range<usize>> {
        let len = match self.length(field, true)? {
            Some(len) => len,
            None if self.flexible => 0,
            None => return Err(DecodeError::Invalid(field)),
        };
        let start = self.pos;
        self.take(len, field)?;
        Ok(start..self.pos)
    }

    /// ARRAY count, checked against the bytes left: each element needs `min_elem` bytes.
    pub fn array_len(&mut self, field: &'static str, min_elem: usize) -> DecodeResult<usize> {
        self.nullable_array_len(field, min_elem)?
            .ok_or(DecodeError::Invalid(field))
    }

    /// A nullable ARRAY's count: `None` for null.
    pub fn nullable_array_len(
        &mut self,
        field: &'static str,
        min_elem: usize,
    ) -> DecodeResult<Option<usize>> {
        let Some(n) = self.length(field, true)? else {
            return Ok(None);
        };
        if n.saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err(DecodeError::Truncated(field));
        }
        Ok(Some(n))
    }

    pub fn i32_array(&mut self, field: &'static str) -> DecodeResult<Vec<i32>> {
        let n = self.array_len(field, 4)?;
        (0..n).map(|_| self.i32(field)).collect()
    }

    pub fn string_array(&mut self, field: &'static str) -> DecodeResult<Vec<String>> {
        let n = self.array_len(field, 2)?;
        (0..n)
            .map(|_| self.string(field).map(str::to_owned))
            .collect()
    }

    /// The request must end here: leftover bytes mean the client and we disagree on the layout.
    pub fn finish(&self) -> DecodeResult<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
}

/// Appends big-endian values to a buffer: the classic primitives of headers, message sets and
/// record batches (request and response bodies go through `Out`). Writing into a `Vec`
/// cannot fail, so these are infallible.
pub trait Writer {
    fn put_i8(&mut self, v: i8);
    fn put_i16(&mut self, v: i16);
    fn put_i32(&mut self, v: i32);
    fn put_i64(&mut self, v: i64);
    fn put_string(&mut self, s: &str);
    fn put_nullable_string(&mut self, s: Option<&str>);
    fn put_nullable_bytes(&mut self, b: Option<&[u8]>);
    /// Reserves an int32 to be filled by `patch_size`; returns its position.
    fn reserve_size(&mut self) -> usize;
    /// Writes the number of bytes after the int32 at `at` into it.
    fn patch_size(&mut self, at: usize);
    fn put_uvarint(&mut self, v: u32);
    fn put_varint(&mut self, v: i32);
    fn put_varlong(&mut self, v: i64);
    /// Inserts at `at` the COMPACT length prefix of the `len` bytes written after it (a
    /// flexible fetch's records, whose size is known once they are read).
    fn insert_compact_len(&mut self, at: usize);
}

impl Writer for Vec<u8> {
    fn put_i8(&mut self, v: i8) {
        self.push(v as u8);
    }
    fn put_i16(&mut self, v: i16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_i32(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_string(&mut self, s: &str) {
        // Names that reach here are bounded (topics ≤ 249, hosts, client ids that came in as
        // STRINGs), so the int16 length cannot overflow.
        self.put_i16(s.len() as i16);
        self.extend_from_slice(s.as_bytes());
    }
    fn put_nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.put_string(s),
            None => self.put_i16(-1),
        }
    }
    fn put_nullable_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => {
                self.put_i32(b.len() as i32);
                self.extend_from_slice(b);
            }
            None => self.put_i32(-1),
        }
    }
    fn reserve_size(&mut self) -> usize {
        let at = self.len();
        self.put_i32(0);
        at
    }
    fn patch_size(&mut self, at: usize) {
        let n = (self.len() - at - 4) as i32;
        BigEndian::write_i32(&mut self[at..at + 4], n);
    }
    fn put_uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }
    fn put_varint(&mut self, v: i32) {
        self.put_uvarint(((v << 1) ^ (v >> 31)) as u32);
    }
    fn put_varlong(&mut self, v: i64) {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        while u >= 0x80 {
            self.push((u as u8) | 0x80);
            u >>= 7;
        }
        self.push(u as u8);
    }
    fn insert_compact_len(&mut self, at: usize) {
        let mut prefix = Vec::with_capacity(5);
        prefix.put_uvarint((self.len() - at) as u32 + 1);
        self.splice(at..at, prefix);
    }
}

/// A body being written at one version, in the encoding the API table gives that version:
/// the writing half of `Reader`. Numbers are written as they are in both encodings; strings,
/// byte arrays, array counts and tag buffers in the classic or the compact form. The buffer is a `Vec<u8>`, or
/// the broker's `Response` when a Fetch answer splices file slices in between.
pub struct Out<'o, B: AsMut<Vec<u8>> + ?Sized = Vec<u8>> {
    buf: &'o mut B,
    version: i16,
    flexible: bool,
}

impl<'o, B: AsMut<Vec<u8>> + ?Sized> Out<'o, B> {
    /// A writer of a body of `api_key` at `version`, appending to `buf`.
    pub fn body(buf: &'o mut B, api_key: i16, version: i16) -> Self {
        Out {
            buf,
            version,
            flexible: super::header::is_flexible(api_key, version),
        }
    }

    /// A writer of classic bytes at version 0 (0.8 layouts, the spec's coordinator protocol).
    pub fn classic(buf: &'o mut B) -> Self {
        Out {
            buf,
            version: 0,
            flexible: false,
        }
    }

    /// The version of the body being written.
    pub fn version(&self) -> i16 {
        self.version
    }

    pub fn is_flexible(&self) -> bool {
        self.flexible
    }

    /// The bytes written so far, for numbers and raw bytes.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        self.buf.as_mut()
    }

    /// Writes a field that exists from version `since` on, with `f`; nothing in an earlier
    /// version's body.
    pub fn since(&mut self, since: i16, f: impl FnOnce(&mut Self)) {
        if self.version >= since {
            f(self);
        }
    }

    pub fn put_i8(&mut self, v: i8) {
        self.bytes().put_i8(v);
    }

    pub fn put_i16(&mut self, v: i16) {
        self.bytes().put_i16(v);
    }

    pub fn put_i32(&mut self, v: i32) {
        self.bytes().put_i32(v);
    }

    pub fn put_i64(&mut self, v: i64) {
        self.bytes().put_i64(v);
    }

    pub fn put_f64(&mut self, v: f64) {
        self.bytes().put_i64(v.to_bits() as i64);
    }

    /// Raw bytes: a UUID, a record set.
    pub fn extend_from_slice(&mut self, b: &[u8]) {
        self.bytes().extend_from_slice(b);
    }

    /// STRING, or COMPACT_STRING.
    pub fn put_str(&mut self, s: &str) {
        self.put_nstr(Some(s));
    }

    /// NULLABLE_STRING, or COMPACT_NULLABLE_STRING.
    pub fn put_nstr(&mut self, s: Option<&str>) {
        let flexible = self.flexible;
        let buf = self.bytes();
        match (flexible, s) {
            (false, s) => buf.put_nullable_string(s),
            (true, None) => buf.put_uvarint(0),
            (true, Some(s)) => {
                buf.put_uvarint(s.len() as u32 + 1);
                buf.extend_from_slice(s.as_bytes());
            }
        }
    }

    /// An ARRAY count, or a COMPACT_ARRAY one (n + 1); `None` is null.
    pub fn put_len(&mut self, n: Option<usize>) {
        let flexible = self.flexible;
        let buf = self.bytes();
        match (flexible, n) {
            (false, n) => buf.put_i32(n.map_or(-1, |n| n as i32)),
            (true, n) => buf.put_uvarint(n.map_or(0, |n| n as u32 + 1)),
        }
    }

    /// BYTES (nullable), or COMPACT_BYTES.
    pub fn put_bytes(&mut self, b: Option<&[u8]>) {
        let flexible = self.flexible;
        let buf = self.bytes();
        match (flexible, b) {
            (false, b) => buf.put_nullable_bytes(b),
            (true, None) => buf.put_uvarint(0),
            (true, Some(b)) => {
                buf.put_uvarint(b.len() as u32 + 1);
                buf.extend_from_slice(b);
            }
        }
    }

    /// An empty tagged-field buffer in the flexible encoding; nothing in the classic one.
    pub fn put_tags(&mut self) {
        if self.flexible {
            self.bytes().push(0);
        }
    }

    /// An ARRAY of INT32 (broker ids, partitions).
    pub fn put_i32s(&mut self, v: &[i32]) {
        self.put_len(Some(v.len()));
        for x in v {
            self.bytes().put_i32(*x);
        }
    }

    /// An ARRAY of STRING.
    pub fn put_strs(&mut self, v: &[String]) {
        self.put_len(Some(v.len()));
        for s in v {
            self.put_str(s);
        }
    }

    /// An ARRAY written with `f` for each element.
    pub fn put_array<T>(&mut self, items: &[T], mut f: impl FnMut(&mut Self, &T)) {
        self.put_len(Some(items.len()));
        for it in items {
            f(self, it);
        }
    }

    /// Kafka's `[topic [partition …]]` nesting, with `f` for each partition entry; in the
    /// flexible encoding each topic entry ends with its tag buffer (`f` writes the
    /// partitions' own).
    pub fn put_topics<T>(&mut self, topics: &[(String, Vec<T>)], mut f: impl FnMut(&mut Self, &T)) {
        self.put_len(Some(topics.len()));
        for (t, parts) in topics {
            self.put_str(t);
            self.put_array(parts, &mut f);
            self.put_tags();
        }
    }
}

impl Out<'_> {
    /// Writes a nested part of the body (a struct that is a field of it) at this version.
    pub fn put<T: super::Encode + ?Sized>(&mut self, part: &T) {
        part.encode(self);
    }
}

impl<B: AsMut<Vec<u8>> + ?Sized> std::ops::Deref for Out<'_, B> {
    type Target = B;
    fn deref(&self) -> &B {
        self.buf
    }
}

impl<B: AsMut<Vec<u8>> + ?Sized> std::ops::DerefMut for Out<'_, B> {
    fn deref_mut(&mut self) -> &mut B {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_null() {
        let mut b = Vec::new();
        b.put_string("abc");
        b.put_nullable_string(None);
        let mut r = Reader::new(&b);
        assert_eq!(r.string("s").unwrap(), "abc");
        assert_eq!(r.nullable_string("s").unwrap(), None);
        r.finish().unwrap();
    }

    #[test]
    fn varints_match_the_protocol_guide_and_refuse_overflow() {
        // Zig-zag examples of the Kafka protocol guide and protobuf.
        for (v, bytes) in [
            (0i32, &[0x00u8][..]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ] {
            let mut b = Vec::new();
            b.put_varint(v);
            assert_eq!(b, bytes, "{v}");
            assert_eq!(Reader::new(bytes).varint("v").unwrap(), v);
        }
        // A sixth byte, or bits above 32 in the fifth, is an overflow.
        let over = [0xff, 0xff, 0xff, 0xff, 0x1f];
        assert_eq!(
            Reader::new(&over).uvarint("v"),
            Err(DecodeError::Invalid("v"))
        );
        let long = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert_eq!(
            Reader::new(&long).uvarint("v"),
            Err(DecodeError::Invalid("v"))
        );
        let mut b = Vec::new();
        b.put_varlong(i64::MIN);
        assert_eq!(b.len(), 10);
        assert_eq!(Reader::new(&b).varlong("v").unwrap(), i64::MIN);
        assert!(Reader::new(&[0xff; 10]).varlong("v").is_err());
    }

    #[test]
    fn compact_types_and_tags() {
        let mut b = Vec::new();
        let mut o = Out::body(&mut b, super::super::header::METADATA, 12);
        o.put_str("abc");
        o.put_nstr(None);
        o.put_len(Some(2));
        o.put_bytes(Some(b"xy"));
        // A tag buffer with one unknown tag (7) of two bytes, which is skipped.
        b.extend_from_slice(&[1, 7, 2, 0xaa, 0xbb]);
        assert_eq!(b[..4], [4, b'a', b'b', b'c']);
        let mut r = Reader::new(&b);
        r.set_flexible(true);
        assert_eq!(r.string("s").unwrap(), "abc");
        assert_eq!(r.nullable_string("s").unwrap(), None);
        assert_eq!(r.array_len("a", 0).unwrap(), 2);
        assert_eq!(r.nullable_bytes("b").unwrap(), Some(&b"xy"[..]));
        r.tags().unwrap();
        r.finish().unwrap();
        // A compact null where an array is required is invalid.
        let mut r = Reader::new(&[0]);
        r.set_flexible(true);
        assert_eq!(r.array_len("a", 0), Err(DecodeError::Invalid("a")));
    }

    #[test]
    fn compact_length_is_inserted_before_its_bytes() {
        let mut b = vec![9u8];
        b.extend_from_slice(&[7u8; 200]);
        b.insert_compact_len(1);
        assert_eq!(b[..3], [9, 0xc9, 0x01]);
        let mut r = Reader::new(&b[1..]);
        r.set_flexible(true);
        assert_eq!(r.nullable_bytes("b").unwrap().unwrap().len(), 200);
    }

    #[test]
    fn hostile_array_count_is_truncated_not_allocated() {
        let mut b = Vec::new();
        b.put_i32(i32::MAX);
        let mut r = Reader::new(&b);
        assert_eq!(r.array_len("a", 4), Err(DecodeError::Truncated("a")));
    }

    #[test]
    fn negative_lengths_are_invalid() {
        let mut b = Vec::new();
        b.put_i16(-2);
        assert_eq!(
            Reader::new(&b).nullable_string("s"),
            Err(DecodeError::Invalid("s"))
        );
        let mut b = Vec::new();
        b.put_i32(-5);
        assert_eq!(
            Reader::new(&b).sized_region("m"),
            Err(DecodeError::Invalid("m"))
        );
    }
}
