//! `BlockingChannel`: one connection to a broker, one request at a time. Used by the
//! controller, replica fetchers, gregor's clients and the tests.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::protocol::ErrorCode;
use crate::protocol::header::{LIST_OFFSETS, RequestHeader, SASL_AUTHENTICATE, SASL_HANDSHAKE};
use crate::protocol::offsets::{ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition};
use crate::protocol::sasl::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use crate::protocol::{Decode, DecodeError, Encode, Reader, decode_body, encode_body};
use crate::security::{ClientExchange, ClientLogin, Mechanism};
use rustls::{ClientConnection, StreamOwned};
use rustls_pki_types::ServerName;
use std::sync::Arc;

/// Largest response accepted (a fetch of many partitions can be large, but not unbounded).
const MAX_RESPONSE_BYTES: usize = 512 << 20;

#[derive(Debug)]
pub enum ChannelError {
    Io(io::Error),
    Decode(DecodeError),
    /// The response carried another request's correlation id.
    CorrelationMismatch {
        expected: i32,
        got: i32,
    },
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelError::Io(e) => write!(f, "{e}"),
            ChannelError::Decode(e) => write!(f, "bad response: {e}"),
            ChannelError::CorrelationMismatch { expected, got } => {
                write!(f, "response for request {got} while waiting for {expected}")
            }
        }
    }
}

impl std::error::Error for ChannelError {}

impl From<io::Error> for ChannelError {
    fn from(e: io::Error) -> Self {
        ChannelError::Io(e)
    }
}

impl From<DecodeError> for ChannelError {
    fn from(e: DecodeError) -> Self {
        ChannelError::Decode(e)
    }
}

/// How a client dials: TLS or not, and a SASL login or none.
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub login: ClientLogin,
}

/// A client connection's bytes: the socket, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

pub struct BlockingChannel {
    stream: Stream,
    client_id: String,
    next_correlation: i32,
    buf: Vec<u8>,
}

impl BlockingChannel {
    pub fn connect(
        addr: impl ToSocketAddrs,
        client_id: &str,
        timeout: Duration,
    ) -> io::Result<Self> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(BlockingChannel {
            stream: Stream::Plain(stream),
            client_id: client_id.to_owned(),
            next_correlation: 0,
            buf: Vec::new(),
        })
    }

    /// `connect` to `host:port`, then the TLS handshake (checking the certificate against
    /// `host`) and the SASL login that `security` asks for, before anything else is sent.
    pub fn connect_as(
        (host, port): (&str, u16),
        client_id: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> io::Result<Self> {
        let mut chan = Self::connect((host, port), client_id, timeout)?;
        if let Some(config) = &security.tls {
            let name = ServerName::try_from(host.to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let mut conn = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
            let Stream::Plain(mut sock) = chan.stream else {
                unreachable!("connect makes a plain stream")
            };
            while conn.is_handshaking() {
                conn.complete_io(&mut sock)?;
            }
            chan.stream = Stream::Tls(Box::new(StreamOwned::new(conn, sock)));
        }
        if let ClientLogin::Sasl {
            mechanism,
            user,
            password,
        } = &security.login
        {
            chan.authenticate(*mechanism, user, password)
                .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e))?;
        }
        Ok(chan)
    }

    /// `connect_as` to `host:port` given as one string.
    pub fn connect_to(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> io::Result<Self> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| {
                Some((
                    h.trim_start_matches('[').trim_end_matches(']'),
                    p.parse().ok()?,
                ))
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{addr}` is not host:port"),
                )
            })?;
        Self::connect_as((host, port), client_id, timeout, security)
    }

    fn authenticate(&mut self, mech: Mechanism, user: &str, password: &str) -> Result<(), String> {
        let hs: SaslHandshakeResponse = self
            .send(
                SASL_HANDSHAKE,
                1,
                &SaslHandshakeRequest {
                    mechanism: mech.name().to_owned(),
                },
            )
            .map_err(|e| e.to_string())?;
        if hs.error_code != 0 {
            return Err(format!(
                "SASL handshake for {} answered {:?} (the listener serves {})",
                mech.name(),
                ErrorCode::from_code(hs.error_code),
                hs.mechanisms.join(", ")
            ));
        }
        let mut exchange = ClientExchange::new(mech, user, password);
        let mut token = Some(exchange.first());
        let mut round = 0;
        while let Some(t) = token {
            round += 1;
            let r: SaslAuthenticateResponse = self
                .send(
                    SASL_AUTHENTICATE,
                    1,
                    &SaslAuthenticateRequest { auth_bytes: &t },
                )
                .map_err(|e| e.to_string())?;
            if r.error_code != 0 {
                return Err(format!(
                    "SASL authentication as {user} failed: {:?}: {}",
                    ErrorCode::from_code(r.error_code),
                    r.error_message.unwrap_or_default()
                ));
            }
            token = exchange.answer(round, &r.auth_bytes)?;
        }
        Ok(())
    }

    /// The socket, for protocols without Kafka's request header (the coordinator's); a TLS
    /// channel has none to give.
    pub fn into_stream(self) -> TcpStream {
        match self.stream {
            Stream::Plain(s) => s,
            Stream::Tls(_) => panic!("the coordinator's own protocol is not spoken over TLS"),
        }
    }

    pub fn set_timeout(&self, timeout: Duration) -> io::Result<()> {
        self.stream.socket().set_read_timeout(Some(timeout))?;
        self.stream.socket().set_write_timeout(Some(timeout))
    }

    /// Sends a request without waiting for an answer (Produce with acks=0).
    pub fn send_only(
        &mut self,
        api_key: i16,
        api_version: i16,
        body: &dyn Fn(&mut Vec<u8>),
    ) -> io::Result<i32> {
        let corr = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        self.buf.clear();
        self.buf.extend_from_slice(&[0; 4]);
        RequestHeader {
            api_key,
            api_version,
            correlation_id: corr,
            client_id: Some(&self.client_id),
        }
        .encode(&mut self.buf);
        body(&mut self.buf);
        let n = (self.buf.len() - 4) as i32;
        self.buf[..4].copy_from_slice(&n.to_be_bytes());
        self.stream.write_all(&self.buf)?;
        Ok(corr)
    }

    /// Sends a request and returns the raw response body (after the response header).
    pub fn round_trip_raw(
        &mut self,
        api_key: i16,
        api_version: i16,
        body: &dyn Fn(&mut Vec<u8>),
    ) -> Result<Vec<u8>, ChannelError> {
        let corr = self.send_only(api_key, api_version, body)?;
        let frame = read_frame(&mut self.stream)?;
        let mut r = Reader::new(&frame);
        let got = r.i32("correlation_id")?;
        if got != corr {
            return Err(ChannelError::CorrelationMismatch {
                expected: corr,
                got,
            });
        }
        if crate::protocol::header::response_is_flexible(api_key, api_version) {
            r.set_flexible(true);
            r.tags()?;
        }
        Ok(frame[r.position()..].to_vec())
    }

    /// Sends `req` as the body of `api_key` at `api_version`, and reads the answer as `Resp`
    /// at the same version, insisting nothing is left over.
    pub fn send<Resp: for<'a> Decode<'a>>(
        &mut self,
        api_key: i16,
        api_version: i16,
        req: &(impl Encode + ?Sized),
    ) -> Result<Resp, ChannelError> {
        let raw = self.round_trip_raw(api_key, api_version, &|b| {
            encode_body(req, b, api_key, api_version)
        })?;
        Ok(decode_body(&raw, api_key, api_version)?)
    }

    /// The offset ListOffsets gives for `time` (-1 latest, -2 earliest) of one partition, asked of
    /// its leader on this channel.
    pub fn list_offset(&mut self, topic: &str, partition: i32, time: i64) -> Result<i64, String> {
        self.list_offset_as(-1, topic, partition, time)
    }

    /// `list_offset` asked as replica `replica_id`: a follower (≥ 0) is answered up to the
    /// leader's log end, a consumer (-1) up to its high watermark.
    pub fn list_offset_as(
        &mut self,
        replica_id: i32,
        topic: &str,
        partition: i32,
        time: i64,
    ) -> Result<i64, String> {
        let req = ListOffsetsRequest {
            replica_id,
            isolation_level: 0,
            topics: vec![(
                topic.to_owned(),
                vec![OffsetsPartition {
                    partition,
                    time,
                    max_num_offsets: 1,
                    current_leader_epoch: -1,
                }],
            )],
        };
        let r: ListOffsetsResponse = self
            .send(LIST_OFFSETS, 0, &req)
            .map_err(|e| e.to_string())?;
        let p = r
            .topics
            .first()
            .and_then(|(_, v)| v.first())
            .ok_or("empty ListOffsets answer")?;
        if p.error_code != 0 {
            return Err(format!(
                "{topic}-{partition}: ListOffsets answered {:?}",
                ErrorCode::from_code(p.error_code)
            ));
        }
        p.offsets
            .first()
            .copied()
            .ok_or_else(|| "empty ListOffsets answer".into())
    }
}

/// Reads one size-prefixed frame.
pub fn read_frame(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let size = i32::from_be_bytes(size);
    if size < 0 || size as usize > MAX_RESPONSE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame size {size}"),
        ));
    }
    let mut buf = vec![0; size as usize];
    stream.read_exact(&mut buf)?;
    Ok(buf)
}
