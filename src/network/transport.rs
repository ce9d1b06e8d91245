//! A served connection's bytes: the socket itself, or TLS over it. Requests are read and
//! answers written the same way over both; what differs is kept here — how many request
//! bytes are already waiting (TLS holds decrypted bytes of its own), and how an answer's
//! file slices go out: `sendfile(2)` on a plain socket, read into memory and encrypted on a
//! TLS one (the one copy into user space TLS cannot avoid).

use std::io::{self, Read, Write};
use std::net::TcpStream;

use rustls::{ServerConnection, StreamOwned};

use super::quotas::bytes_queued;
use super::response::Response;

pub enum Transport {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
}

impl Transport {
    pub fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &t.sock,
        }
    }

    /// Request bytes waiting to be read: in the socket, and (TLS) already decrypted.
    pub fn queued(&mut self) -> usize {
        match self {
            Transport::Plain(s) => bytes_queued(s),
            Transport::Tls(t) => {
                let decrypted = t
                    .conn
                    .process_new_packets()
                    .map_or(0, |st| st.plaintext_bytes_to_read());
                decrypted + bytes_queued(&t.sock)
            }
        }
    }

    /// Sends an answer whose first 4 bytes are its size's place.
    pub fn send(&mut self, r: &mut Response) -> io::Result<()> {
        match self {
            Transport::Plain(s) => r.write_to(s),
            Transport::Tls(t) => {
                r.write_copying(&mut **t)?;
                t.flush()
            }
        }
    }

    /// Sends bytes already framed; flushed at once over TLS.
    pub fn send_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.write_all(b)?;
        if let Transport::Tls(t) = self {
            t.flush()?;
        }
        Ok(())
    }

    /// The socket, for a protocol that takes it over; `None` over TLS.
    pub fn into_plain(self) -> Option<TcpStream> {
        match self {
            Transport::Plain(s) => Some(s),
            Transport::Tls(_) => None,
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(t) => t.flush(),
        }
    }
}
