//! `Response`: an answer being built — bytes, with stretches of files spliced in. A Fetch
//! answer's records stay in the segment files and go to the socket with `sendfile(2)` (Kafka's
//! zero-copy `FileRecords.writeTo`), so a consumer asking for 55 MB costs the broker the
//! answer's headers, not 55 MB of memory, however slowly it reads.
//!
//! Everything else writes bytes through `Deref<Target = Vec<u8>>`, as before.

use std::io::{self, Write};
use std::net::TcpStream;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsRawFd, RawFd};

pub use crate::protocol::FileSlice;

#[derive(Debug, Default)]
pub struct Response {
    buf: Vec<u8>,
    /// Each slice goes out after `buf[..at]`, in order of `at`.
    slices: Vec<(usize, FileSlice)>,
}

impl Deref for Response {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for Response {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

/// So a body can be written into an answer through `protocol::Out`.
impl AsMut<Vec<u8>> for Response {
    fn as_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Response {
    pub fn with_capacity(n: usize) -> Response {
        Response {
            buf: Vec::with_capacity(n),
            slices: Vec::new(),
        }
    }

    /// Splices `slice` in at the current end of the bytes.
    pub fn push_slice(&mut self, slice: FileSlice) {
        if slice.len > 0 {
            self.slices.push((self.buf.len(), slice));
        }
    }

    /// Cuts the answer back to its first `len` bytes, and the slices spliced in before them.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        self.slices.retain(|(at, _)| *at < len);
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.slices.clear();
    }

    /// Bytes in the answer, slices included.
    pub fn total_len(&self) -> usize {
        self.buf.len() + self.slices.iter().map(|(_, s)| s.len).sum::<usize>()
    }

    /// Writes the answer, whose first 4 bytes are its size's place (filled in here): the
    /// bytes with `write_all`, each slice with `sendfile`. A file that has become shorter
    /// than its slice (truncated meanwhile) fails the write: the frame cannot be completed,
    /// and the caller closes the connection, as Kafka does.
    pub fn write_to(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        let size = frame_size(self.total_len())?;
        self.buf[..4].copy_from_slice(&size.to_be_bytes());
        let mut from = 0;
        for (at, slice) in &self.slices {
            stream.write_all(&self.buf[from..*at])?;
            send_file(stream.as_raw_fd(), slice)?;
            from = *at;
        }
        stream.write_all(&self.buf[from..])?;
        self.slices.clear();
        Ok(())
    }
}

impl Response {
    /// `write_to` for a stream that is not a plain socket (TLS): each slice is read from its
    /// file into a buffer and written, a chunk at a time, so a large answer holds no more
    /// than one chunk in memory.
    pub fn write_copying(&mut self, w: &mut impl Write) -> io::Result<()> {
        let size = frame_size(self.total_len())?;
        self.buf[..4].copy_from_slice(&size.to_be_bytes());
        let mut chunk = Vec::new();
        let mut from = 0;
        for (at, slice) in &self.slices {
            w.write_all(&self.buf[from..*at])?;
            let (mut pos, mut left) = (slice.pos, slice.len);
            chunk.resize(left.min(COPY_CHUNK), 0);
            while left > 0 {
                let n = left.min(COPY_CHUNK);
                pread_exact(slice.file.as_raw_fd(), &mut chunk[..n], pos)?;
                w.write_all(&chunk[..n])?;
                pos += n as u64;
                left -= n;
            }
            from = *at;
        }
        w.write_all(&self.buf[from..])?;
        self.slices.clear();
        Ok(())
    }
}

/// Fills `buf` from the file at `pos`; a file shorter than that (truncated meanwhile) fails,
/// as `send_file` does.
fn pread_exact(fd: RawFd, buf: &mut [u8], pos: u64) -> io::Result<()> {
    let mut done = 0;
    all_of(buf.len(), |left| {
        let rest = &mut buf[done..];
        // SAFETY: `rest` is valid for writes of its length for the duration of the call.
        let n = unsafe {
            libc::pread(
                fd,
                rest.as_mut_ptr().cast(),
                left,
                (pos + done as u64) as libc::off_t,
            )
        };
        done += n.max(0) as usize;
        n
    })
}

/// Runs a partial-transfer call (`pread`, `sendfile`: given what is left, it returns how much
/// it moved, 0 at the end of the file, -1 on error) until `len` bytes have moved; a call
/// interrupted by a signal is made again, and a file that ends first is an error.
fn all_of(len: usize, mut call: impl FnMut(usize) -> isize) -> io::Result<()> {
    let mut left = len;
    while left > 0 {
        match call(left) {
            n if n > 0 => left -= n as usize,
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "a log segment became shorter while being sent",
                ));
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// How much of a file slice `write_copying` holds at once.
const COPY_CHUNK: usize = 64 << 10;

/// The size field of an answer of `total` bytes (its own 4 included). A frame's size is an
/// i32: an answer past it (a `fetch.max.bytes` near 2 GiB) fails instead of wrapping into a
/// size the client would misread, and the caller closes the connection.
pub fn frame_size(total: usize) -> io::Result<i32> {
    i32::try_from(total.saturating_sub(4)).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("an answer of {total} bytes is past the protocol's 2 GiB frame"),
        )
    })
}

fn send_file(socket: RawFd, slice: &FileSlice) -> io::Result<()> {
    let mut offset = slice.pos as libc::off_t;
    all_of(slice.len, |left| {
        // SAFETY: both descriptors are open (the slice holds its file) and `offset` lives
        // across the call.
        unsafe { libc::sendfile(socket, slice.file.as_raw_fd(), &mut offset, left) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::Arc;

    #[test]
    fn a_frame_past_2_gib_is_an_error_not_a_wrapped_size() {
        assert_eq!(frame_size(13).unwrap(), 9);
        assert_eq!(frame_size(i32::MAX as usize + 4).unwrap(), i32::MAX);
        assert!(frame_size(i32::MAX as usize + 5).is_err());
        assert!(frame_size(5 << 30).is_err());
    }

    #[test]
    fn slices_go_out_in_place_and_truncate_with_the_bytes() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"0123456789").unwrap();
        let file: Arc<dyn AsRawFd + Send + Sync> = Arc::new(file);
        let mut r = Response::with_capacity(16);
        r.extend_from_slice(&[0, 0, 0, 0, b'[']);
        r.push_slice(FileSlice {
            file: file.clone(),
            pos: 2,
            len: 3,
        });
        r.extend_from_slice(b"|");
        let keep = r.len();
        r.push_slice(FileSlice {
            file: file.clone(),
            pos: 7,
            len: 3,
        });
        r.extend_from_slice(b"]");
        assert_eq!(r.total_len(), 13);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut rx, _) = l.accept().unwrap();
        r.write_to(&mut tx).unwrap();
        let mut got = [0u8; 13];
        rx.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"\0\0\0\x09[234|789]");
        // Sent slices are let go (a deleted segment's space is not held by an idle
        // connection).
        assert_eq!(r.total_len(), r.len());
        // Cut back before a slice: it goes too.
        r.push_slice(FileSlice {
            file: file.clone(),
            pos: 0,
            len: 2,
        });
        r.extend_from_slice(b"tail");
        r.truncate(keep);
        assert_eq!(r.total_len(), keep);
        // A slice past the end of its file cannot be completed.
        r.push_slice(FileSlice {
            file,
            pos: 8,
            len: 5,
        });
        assert!(r.write_to(&mut tx).is_err());
    }
}
