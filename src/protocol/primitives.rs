//! Big-endian primitives of the Kafka wire format, read from a borrowed buffer.
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
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
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

    /// The next int32 without consuming it (a nullable array's count), if four bytes remain.
    pub fn peek_i32(&self) -> Option<i32> {
        let b = self.buf.get(self.pos..self.pos + 4)?;
        Some(BigEndian::read_i32(b))
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

    /// STRING: int16 length, -1 for null.
    pub fn nullable_string(&mut self, field: &'static str) -> DecodeResult<Option<&'a str>> {
        let len = self.i16(field)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(DecodeError::Invalid(field));
        }
        let bytes = self.take(len as usize, field)?;
        std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| DecodeError::Invalid(field))
    }

    /// A STRING that the protocol does not allow to be null.
    pub fn string(&mut self, field: &'static str) -> DecodeResult<&'a str> {
        self.nullable_string(field)?
            .ok_or(DecodeError::Invalid(field))
    }

    /// BYTES: int32 length, -1 for null.
    pub fn nullable_bytes(&mut self, field: &'static str) -> DecodeResult<Option<&'a [u8]>> {
        let len = self.i32(field)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(DecodeError::Invalid(field));
        }
        self.take(len as usize, field).map(Some)
    }

    /// A size-prefixed blob (a message set): the bytes and their offset in the frame, so that a
    /// handler can rewrite offsets in place without copying.
    pub fn sized_region(&mut self, field: &'static str) -> DecodeResult<std::ops::Range<usize>> {
        let len = self.i32(field)?;
        if len < 0 {
            return Err(DecodeError::Invalid(field));
        }
        let start = self.pos;
        self.take(len as usize, field)?;
        Ok(start..self.pos)
    }

    /// ARRAY count, checked against the bytes left: each element needs `min_elem` bytes.
    pub fn array_len(&mut self, field: &'static str, min_elem: usize) -> DecodeResult<usize> {
        let n = self.i32(field)?;
        if n < 0 {
            return Err(DecodeError::Invalid(field));
        }
        let n = n as usize;
        if n.saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err(DecodeError::Truncated(field));
        }
        Ok(n)
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

/// Appends big-endian values to a response buffer. Writing into a `Vec` cannot fail, so these
/// are infallible.
pub trait Writer {
    fn put_i8(&mut self, v: i8);
    fn put_i16(&mut self, v: i16);
    fn put_i32(&mut self, v: i32);
    fn put_i64(&mut self, v: i64);
    fn put_string(&mut self, s: &str);
    fn put_nullable_string(&mut self, s: Option<&str>);
    fn put_nullable_bytes(&mut self, b: Option<&[u8]>);
    fn put_array_len(&mut self, n: usize);
    fn put_i32_array(&mut self, v: &[i32]);
    /// Reserves an int32 to be filled by `patch_size`; returns its position.
    fn reserve_size(&mut self) -> usize;
    /// Writes the number of bytes after the int32 at `at` into it.
    fn patch_size(&mut self, at: usize);
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
    fn put_array_len(&mut self, n: usize) {
        self.put_i32(n as i32);
    }
    fn put_i32_array(&mut self, v: &[i32]) {
        self.put_array_len(v.len());
        for x in v {
            self.put_i32(*x);
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
