//! One registered consumer: the turned-around connection on which the coordinator sends
//! Ping, Stop and Start and reads the answers.
//!
//! The connection's own thread runs the ping loop. A rebalance locks the connection for its
//! Stop/Start exchange, so pings and rebalance requests never interleave on the wire; a ping
//! that finds the connection busy is skipped, not counted as missed. Answers start with the
//! type id they answer, and one that does not match (a late answer to an earlier request that
//! timed out) is skipped, so the stream never falls out of step.

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::assignment::TopicFilter;
use crate::protocol::coordinator::{self as proto, PartitionOffset, Subscription};
use crate::protocol::{Decode, DecodeError, Encode, Reader, Writer};

/// Answers larger than this are not coordinator answers: the session ends.
const MAX_ANSWER_BYTES: usize = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Smallest,
    Largest,
}

impl OffsetReset {
    pub fn parse(s: &str) -> Option<OffsetReset> {
        match s {
            "smallest" => Some(OffsetReset::Smallest),
            "largest" => Some(OffsetReset::Largest),
            _ => None,
        }
    }

    /// The ListOffsets time a consumer resolves: -2 earliest, -1 latest.
    pub fn start_offset(self) -> i64 {
        match self {
            OffsetReset::Smallest => -2,
            OffsetReset::Largest => -1,
        }
    }
}

pub struct ConsumerSession {
    /// What the consumer registered with; its fields read as the session's own (`Deref`).
    params: SessionParams,
    conn: Mutex<Conn>,
    /// Pings in a row without an answer (rebalance exchanges that timed out count too).
    missed: AtomicU32,
    alive: AtomicBool,
    /// The partitions the consumer confirmed starting with its last StartResponse; `None`
    /// until it has started once in this coordinator's term.
    started: Mutex<Option<BTreeSet<(String, i32)>>>,
    /// A second handle on the socket: to shut it without the connection's lock, and to wait
    /// for the consumer hanging up between pings.
    watch: TcpStream,
}

pub struct Conn {
    stream: TcpStream,
    /// Bytes read but not yet a whole frame: kept across timeouts.
    pending: Vec<u8>,
    out: Vec<u8>,
}

#[derive(Debug)]
pub enum SessionError {
    Io(io::Error),
    TimedOut,
    Decode(DecodeError),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Io(e) => write!(f, "{e}"),
            SessionError::TimedOut => write!(f, "no answer in time"),
            SessionError::Decode(e) => write!(f, "bad answer: {e}"),
        }
    }
}

impl From<io::Error> for SessionError {
    fn from(e: io::Error) -> Self {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            SessionError::TimedOut
        } else {
            SessionError::Io(e)
        }
    }
}

impl From<DecodeError> for SessionError {
    fn from(e: DecodeError) -> Self {
        SessionError::Decode(e)
    }
}

pub struct SessionParams {
    pub group: String,
    pub consumer_id: String,
    pub auto_commit: bool,
    pub offset_reset: OffsetReset,
    pub ping_interval: Duration,
    pub max_ping_retries: u32,
    pub subscription: Subscription,
    pub filter: TopicFilter,
}

impl std::ops::Deref for ConsumerSession {
    type Target = SessionParams;

    fn deref(&self) -> &SessionParams {
        &self.params
    }
}

impl ConsumerSession {
    pub fn new(p: SessionParams, stream: TcpStream) -> io::Result<ConsumerSession> {
        let watch = stream.try_clone()?;
        Ok(ConsumerSession {
            params: p,
            conn: Mutex::new(Conn {
                stream,
                pending: Vec::new(),
                out: Vec::with_capacity(256),
            }),
            missed: AtomicU32::new(0),
            alive: AtomicBool::new(true),
            started: Mutex::new(None),
            watch,
        })
    }

    /// The consumer's address as Kafka's tools show a member's host ("/127.0.0.1").
    pub fn client_host(&self) -> String {
        self.watch
            .peer_addr()
            .map_or_else(|_| String::new(), |a| format!("/{}", a.ip()))
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Ends the session: the socket is shut so the consumer notices and consults again.
    pub fn close(&self) {
        if self.alive.swap(false, Ordering::AcqRel) {
            let _ = self.watch.shutdown(Shutdown::Both);
        }
    }

    /// Waits up to `wait`; true as soon as the consumer hangs up or the session is closed. A
    /// consumer that leaves, or is killed, is noticed at once rather than at the next ping.
    fn hung_up_within(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            if !self.is_alive() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            // Only hang-ups wake us (POLLHUP and POLLERR always do); unread bytes do not.
            let mut pfd = libc::pollfd {
                fd: self.watch.as_raw_fd(),
                events: libc::POLLRDHUP,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one pollfd for a socket this session owns, for at most `ms`.
            let n = unsafe { libc::poll(&mut pfd, 1, ms) };
            if n > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
                return true;
            }
            if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                // poll itself failed: fall back to the ping to find out.
                return false;
            }
        }
    }

    pub fn started(&self) -> Option<BTreeSet<(String, i32)>> {
        self.started.lock().clone()
    }

    pub fn set_started(&self, parts: Option<BTreeSet<(String, i32)>>) {
        *self.started.lock() = parts;
    }

    /// A rebalance exchange timed out on this member: as bad as a missed ping.
    pub fn count_miss(&self) {
        self.missed.fetch_add(1, Ordering::AcqRel);
    }

    pub fn lock(&self) -> MutexGuard<'_, Conn> {
        self.conn.lock()
    }

    /// The ping loop, on the connection's thread. Returns when the consumer is dead: its
    /// socket failed, or it missed more than `max_ping_retries` pings in a row. `on_offsets`
    /// receives the offsets each PingResponse carries.
    pub fn run_ping_loop(&self, on_offsets: &dyn Fn(&[PartitionOffset])) -> String {
        loop {
            if self.hung_up_within(self.ping_interval) {
                return if self.is_alive() {
                    "the consumer closed its connection".into()
                } else {
                    "session closed".into()
                };
            }
            let Some(mut conn) = self.conn.try_lock_for(self.ping_interval) else {
                continue; // a rebalance is talking to it right now
            };
            let retries = self.missed.load(Ordering::Acquire);
            let ping = proto::PingRequest {
                num_retries: retries.min(i16::MAX as u32) as i16,
            };
            let deadline = Instant::now() + self.ping_interval;
            match conn.exchange(proto::PING, &ping, deadline) {
                Ok(body) => match proto::PingResponse::decode(&mut Reader::new(&body)) {
                    Ok(r) => {
                        self.missed.store(0, Ordering::Release);
                        // Committed while the connection is held, so a rebalance's newer
                        // StopResponse offsets cannot be overwritten by these.
                        if let Some(o) = r.offsets {
                            on_offsets(&o);
                        }
                        drop(conn);
                    }
                    Err(e) => return format!("bad PingResponse: {e}"),
                },
                Err(SessionError::TimedOut) => {
                    let missed = self.missed.fetch_add(1, Ordering::AcqRel) + 1;
                    if missed > self.max_ping_retries {
                        return format!("{missed} pings unanswered");
                    }
                }
                Err(e) => return e.to_string(),
            }
        }
    }
}

/// RegisterResponse: the error code, and how long a rebalance may keep us silent.
pub fn write_register_response(
    stream: &mut impl Write,
    error_code: i16,
    rebalance_timeout: Duration,
) -> io::Result<()> {
    let ms = rebalance_timeout.as_millis().min(i32::MAX as u128) as i32;
    let r = proto::RegisterResponse {
        error_code,
        rebalance_timeout_ms: ms,
    };
    let mut out = Vec::with_capacity(10);
    let at = out.reserve_size();
    crate::protocol::encode_classic(&r, &mut out);
    out.patch_size(at);
    stream.write_all(&out)
}

impl Conn {
    /// Writes the RegisterResponse (before the ping loop starts).
    pub fn answer_register(
        &mut self,
        error_code: i16,
        rebalance_timeout: Duration,
    ) -> io::Result<()> {
        write_register_response(&mut self.stream, error_code, rebalance_timeout)
    }

    /// Sends a request, then waits until `deadline` for the answer to it; answers to other
    /// request types are skipped. Returns the answer's body after its type id.
    pub fn exchange(
        &mut self,
        type_id: i16,
        body: &impl Encode,
        deadline: Instant,
    ) -> Result<Vec<u8>, SessionError> {
        self.send(type_id, body)?;
        self.answer(type_id, deadline)
    }

    pub fn send(&mut self, type_id: i16, body: &impl Encode) -> Result<(), SessionError> {
        self.out.clear();
        self.out.extend_from_slice(&proto::frame(type_id, body));
        self.stream
            .set_write_timeout(Some(Duration::from_secs(10)))?;
        self.stream.write_all(&self.out).map_err(SessionError::Io)
    }

    pub fn answer(&mut self, type_id: i16, deadline: Instant) -> Result<Vec<u8>, SessionError> {
        loop {
            let frame = self.read_frame(deadline)?;
            let mut r = Reader::new(&frame);
            let got = r.i16("answered_type_id")?;
            if got == type_id {
                return Ok(frame[2..].to_vec());
            }
            log::debug!("skipping a late answer to request type {got}");
        }
    }

    fn read_frame(&mut self, deadline: Instant) -> Result<Vec<u8>, SessionError> {
        loop {
            if self.pending.len() >= 4 {
                let size = i32::from_be_bytes(self.pending[..4].try_into().expect("4 bytes"));
                if size < 2 || size as usize > MAX_ANSWER_BYTES {
                    return Err(SessionError::Decode(DecodeError::Invalid("answer size")));
                }
                let end = 4 + size as usize;
                if self.pending.len() >= end {
                    let frame = self.pending[4..end].to_vec();
                    self.pending.drain(..end);
                    return Ok(frame);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SessionError::TimedOut);
            }
            self.stream.set_read_timeout(Some(left))?;
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(SessionError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
