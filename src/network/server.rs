//! The blocking socket server of one listener: 1 acceptor thread, 1 thread per connection.
//!
//! Each connection thread reads one frame at a time (int32 size, then the payload), hands it to
//! the `RequestHandler`, and writes the response before reading the next frame — so responses
//! leave in request order, as Kafka clients that pipeline require. One exception: a request
//! the handler parks (an acks=all Produce) lets the thread carry out the pipelinable requests
//! already queued behind it before it waits, so their waits overlap; the answers still leave
//! in order. Small frame and response buffers live as long as the connection, so a steady
//! stream of small requests allocates nothing.
//!
//! Limits: a size ≤ 0 or above `socket.request.max.bytes` closes the connection (the protocol
//! cannot express the error); a request's bytes are read as they arrive, drawing on the
//! broker's `RequestPool` past a small allowance; who may connect is `ConnectionQuotas`'
//! call; a connection idle for `connections.max.idle.ms`, or whose request has been arriving
//! for longer than that, is closed — a client trickling bytes holds a thread only that long.

use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::pool::{ALLOWANCE, Held, RequestPool};
use super::quotas::{ConnectionQuotas, Ticket};
use super::response::Response;
use super::tls::TlsAcceptor;
use super::transport::Transport;
use crate::metrics::RequestMetrics;
use crate::protocol::header::{FETCH, peek_key_version};
use crate::security::{Principal, SaslSession};

/// Who sent a request: the peer, and the listener it arrived on.
#[derive(Debug)]
pub struct ConnectionContext {
    pub peer: SocketAddr,
    /// The listener's name (`listeners`), e.g. PLAINTEXT.
    pub listener: Arc<str>,
    /// Whether the listener is the inter-broker one, where requests only brokers send are
    /// accepted.
    pub inter_broker: bool,
    /// Where this connection's next Fetch answer starts serving partitions (a request
    /// position; see `broker::fetch_budget`): the fairness Kafka gets from fetch sessions.
    pub fetch_start: AtomicUsize,
    /// The client's software name and version from its ApiVersions v3+ request
    /// (`librdkafka 2.16.0`), for the log lines about this connection.
    pub client_software: OnceLock<String>,
    /// Until when nothing more is read from the client (KIP-219): set by a handler whose
    /// client went over its quota, so the client is held back without holding anyone else.
    muted_until: Mutex<Option<Instant>>,
    /// Who the connection acts as, once known: from the start on a listener without SASL
    /// (`User:ANONYMOUS`), after a successful SaslAuthenticate on a SASL one.
    principal: OnceLock<Principal>,
    /// The SASL exchange under way, on a SASL listener.
    pub sasl: Mutex<SaslSession>,
    /// When the SASL session ends (KIP-368: the client must authenticate again before),
    /// as milliseconds on `session_clock`; 0 for never.
    session_expiry_ms: AtomicU64,
    /// The principal and address as ACLs name them (`User:alice`, `10.0.0.1`), made once
    /// the first time an ACL is checked: each check then allocates nothing.
    acl_identity: OnceLock<(String, String)>,
}

/// The clock SASL session expiries are kept on: milliseconds since the process started.
fn session_clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

impl ConnectionContext {
    /// `principal`: who the connection acts as from the start (`None` on a SASL listener,
    /// where SaslAuthenticate says).
    pub fn new(
        peer: SocketAddr,
        listener: Arc<str>,
        inter_broker: bool,
        principal: Option<Principal>,
    ) -> ConnectionContext {
        let principal = match principal {
            Some(p) => OnceLock::from(p),
            None => OnceLock::new(),
        };
        ConnectionContext {
            peer,
            listener,
            inter_broker,
            fetch_start: AtomicUsize::new(0),
            client_software: OnceLock::new(),
            muted_until: Mutex::new(None),
            principal,
            sasl: Mutex::new(SaslSession::default()),
            session_expiry_ms: AtomicU64::new(0),
            acl_identity: OnceLock::new(),
        }
    }

    /// (`User:<name>`, peer address) for ACL checks; a connection authenticated again keeps
    /// its user (SASL refuses another), so this never goes stale.
    pub fn acl_identity(&self) -> (&str, &str) {
        let (p, h) = self.acl_identity.get_or_init(|| {
            let principal = self
                .principal()
                .map_or_else(|| Principal::anonymous().to_string(), |p| p.to_string());
            (principal, self.peer.ip().to_string())
        });
        (p, h)
    }

    /// The SASL session ends `lifetime` from now.
    pub fn session_lasts(&self, lifetime: Duration) {
        let at = session_clock() + lifetime.as_millis() as u64;
        self.session_expiry_ms.store(at, Ordering::Relaxed);
    }

    /// Whether the SASL session has ended without the client authenticating again.
    pub fn session_expired(&self) -> bool {
        let at = self.session_expiry_ms.load(Ordering::Relaxed);
        at != 0 && session_clock() > at
    }

    /// Who the connection acts as; `None` while a SASL connection has not authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.get()
    }

    /// Records a successful authentication (once; a second is ignored).
    pub fn authenticated(&self, p: Principal) {
        let _ = self.principal.set(p);
    }

    /// Reads nothing more from the client for `d` once the answers already due are sent.
    pub fn mute_for(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut m = self.muted_until.lock();
        *m = Some(m.map_or(until, |u| u.max(until)));
    }

    fn take_mute(&self) -> Option<Instant> {
        self.muted_until.lock().take()
    }

    /// Who is at the other end, for a log line: the address, and the client software when it
    /// said (ApiVersions v3+).
    pub fn who(&self) -> String {
        match self.client_software.get() {
            Some(s) => format!("{} ({s})", self.peer),
            None => self.peer.to_string(),
        }
    }
}

/// One listener to serve.
#[derive(Debug, Clone)]
pub struct ListenerSpec {
    pub name: String,
    pub inter_broker: bool,
    /// Connections here count against no client limit (a separate inter-broker listener).
    pub exempt: bool,
    /// Clients must authenticate with SASL before anything else (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: bool,
    /// TLS (SSL, SASL_SSL): the handshake comes first, on the connection's own thread.
    pub tls: Option<Arc<TlsAcceptor>>,
}

/// What the connection does after a request.
pub enum Action {
    /// Send `out` (the response after the size's place: the correlation id the handler
    /// wrote, and the body).
    Respond,
    /// Send nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection (malformed request, unknown api, acks=0 failure).
    Close,
    /// Send `out`, then close (a failed authentication: the client is told why).
    RespondAndClose,
    /// Hand the connection to someone else, who answers the request and owns the socket from
    /// then on (a consumer's RegisterRequest turns the connection around). Runs on this
    /// connection's thread. Not over TLS: such a connection is closed with a log line.
    Adopt(Box<dyn FnOnce(TcpStream) + Send>),
    /// The request is carried out; its answer is written (after what is in `out`) by this
    /// function, which may wait (an acks=all Produce waiting for its followers). Meanwhile
    /// the connection may read and carry out the requests behind it that
    /// `RequestHandler::can_pipeline` admits; answers still leave in request order.
    Park(Parked),
}

/// Writes a parked request's answer into the buffer it is given, waiting as long as it must.
pub type Parked = Box<dyn FnOnce(&mut Vec<u8>) + Send>;

/// The most parked requests one connection holds before it waits for their answers: enough to
/// overlap every request a pipelining producer has in flight at a high rate, few enough that
/// a connection's memory stays small.
const MAX_PARKED: usize = 1024;

pub trait RequestHandler: Send + Sync + 'static {
    /// Handles one request. `frame` is the payload without its size; the handler may rewrite
    /// it (the broker writes offsets into produced message sets in place). A response is the
    /// bytes appended to `out`, starting with the correlation id.
    fn handle(&self, frame: &mut [u8], out: &mut Response, conn: &ConnectionContext) -> Action;

    /// Whether `frame` may be carried out while earlier requests of the connection are still
    /// parked: true only for requests that never wait themselves and whose effects may precede
    /// the earlier answers.
    fn can_pipeline(&self, _frame: &[u8]) -> bool {
        false
    }

    /// Whether a Fetch `frame` comes from a follower (its time counts as FetchFollower).
    fn is_follower_fetch(&self, _frame: &[u8]) -> bool {
        false
    }
}

pub struct SocketServer {
    local_addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    quotas: Arc<ConnectionQuotas>,
    open: Arc<AtomicUsize>,
    tls_failures: Arc<AtomicU64>,
    acceptor: Mutex<Option<JoinHandle<()>>>,
    tls: Option<Arc<TlsAcceptor>>,
}

/// What every connection thread of a listener shares.
struct Shared {
    handler: Arc<dyn RequestHandler>,
    quotas: Arc<ConnectionQuotas>,
    pool: Arc<RequestPool>,
    spec: ListenerSpec,
    name: Arc<str>,
    requests: Arc<RequestMetrics>,
    /// Connections of this listener being served.
    open: Arc<AtomicUsize>,
    /// TLS handshakes that failed.
    tls_failures: Arc<AtomicU64>,
}

impl SocketServer {
    /// Serves `listener` (bound by the caller, who needs its port before anything serves).
    pub fn start(
        listener: TcpListener,
        spec: ListenerSpec,
        handler: Arc<dyn RequestHandler>,
        quotas: Arc<ConnectionQuotas>,
        pool: Arc<RequestPool>,
        requests: Arc<RequestMetrics>,
    ) -> io::Result<SocketServer> {
        let local_addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let tls_failures = Arc::new(AtomicU64::new(0));
        let tls = spec.tls.clone();
        let shared = Arc::new(Shared {
            handler,
            quotas: quotas.clone(),
            pool,
            name: Arc::from(spec.name.as_str()),
            spec,
            requests,
            open: open.clone(),
            tls_failures: tls_failures.clone(),
        });
        let st = stopping.clone();
        let acceptor = std::thread::Builder::new()
            .name(format!("acceptor-{}", local_addr.port()))
            .spawn(move || accept_loop(listener, shared, st))?;
        Ok(SocketServer {
            local_addr,
            stopping,
            quotas,
            open,
            tls_failures,
            acceptor: Mutex::new(Some(acceptor)),
            tls,
        })
    }

    /// TLS handshakes of this listener that failed.
    pub fn tls_handshake_failures(&self) -> u64 {
        self.tls_failures.load(Ordering::Relaxed)
    }

    /// The listener's TLS acceptor, for a certificate replaced while it runs.
    pub fn tls(&self) -> Option<&Arc<TlsAcceptor>> {
        self.tls.as_ref()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections of this listener being served now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes every connection of the broker.
    pub fn shutdown(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.local_addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.lock().take() {
            let _ = h.join();
        }
        self.quotas.close_all();
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stopping: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn!("accept failed on listener {}: {e}", shared.name);
                continue;
            }
        };
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        shared.quotas.throttle_creation(shared.spec.exempt);
        let ticket = match shared.quotas.admit(&stream, peer.ip(), shared.spec.exempt) {
            Ok(t) => t,
            Err(_) => {
                // Refused (and logged, once per interval); no thread is spent on it.
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
        };
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("conn-{peer}"))
            .spawn(move || {
                // The ticket is given back when the thread ends, however it ends: a handler
                // that panics must not keep its connection counted against the limits.
                let _open = Counted::new(&sh.open);
                let (transport, cert_principal) = match &sh.spec.tls {
                    None => (Transport::Plain(stream), None),
                    Some(tls) => match tls.accept(stream) {
                        Ok(t) => t,
                        Err(why) => {
                            sh.tls_failures.fetch_add(1, Ordering::Relaxed);
                            log::warn!(
                                "closing connection from {peer} on listener {}: {why}",
                                sh.name
                            );
                            return;
                        }
                    },
                };
                // SASL names the principal on a SASL listener; elsewhere the client's
                // certificate does, or no one: User:ANONYMOUS.
                let principal =
                    (!sh.spec.sasl).then(|| cert_principal.unwrap_or_else(Principal::anonymous));
                let conn =
                    ConnectionContext::new(peer, sh.name.clone(), sh.spec.inter_broker, principal);
                if let Err(e) = serve_connection(transport, &conn, &sh, &ticket) {
                    log::debug!("connection from {peer} ended: {e}");
                }
            });
        if let Err(e) = spawned {
            log::error!("cannot start a thread for {peer}: {e}");
        }
    }
}

fn serve_connection(
    mut stream: Transport,
    conn: &ConnectionContext,
    shared: &Shared,
    ticket: &Ticket,
) -> io::Result<()> {
    let limits = shared.quotas.limits();
    let (handler, peer) = (&*shared.handler, &conn.peer);
    let socket = stream.socket();
    socket.set_nodelay(true)?;
    // A read waiting longer than this fails: the idle limit, and the stall limit mid-frame.
    socket.set_read_timeout(Some(limits.idle))?;
    // So does a client that stops reading its answers.
    socket.set_write_timeout(Some(limits.idle))?;
    let mut frame = Vec::new();
    let mut out = Response::with_capacity(1024);
    let mut parked = ParkedAnswers::default();
    loop {
        // Parked answers go out once the client has nothing more queued for us: while it has,
        // the requests behind them are read and carried out first, so their waits overlap.
        if !parked.is_empty() && (parked.len() >= MAX_PARKED || stream.queued() == 0) {
            parked.answer_all(&mut stream, &shared.requests)?;
        }
        if let Some(until) = conn.take_mute() {
            // Its answers first (they say how long it is throttled), then nothing read.
            parked.answer_all(&mut stream, &shared.requests)?;
            wait_muted(stream.socket(), until)?;
        }
        if parked.is_empty() {
            ticket.set_idle();
        }
        let mut size = [0u8; 4];
        let first = match stream.read(&mut size) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            // A broker stopped and continued (SIGSTOP, SIGCONT) has its blocked reads with a
            // timeout fail with EINTR (signal(7)): the connection is fine, read again.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        ticket.set_busy();
        // From its first byte, the whole request must arrive within the idle limit.
        let started = Instant::now();
        read_rest(&mut stream, &mut size[first..], started, limits.idle, peer)?;
        if shared.spec.tls.is_none() && size[0] == 22 && size[1] == 3 {
            log::warn!(
                "closing connection from {peer} on listener {}: a TLS handshake on a listener without TLS",
                shared.name
            );
            return Ok(());
        }
        let size = i32::from_be_bytes(size);
        if size <= 0 || size as usize > limits.socket_request_max_bytes {
            log::warn!(
                "closing connection from {peer}: request size {size} outside 1..={} (socket.request.max.bytes)",
                limits.socket_request_max_bytes
            );
            parked.answer_all(&mut stream, &shared.requests)?;
            return Ok(());
        }
        let mut held = Held::new(&shared.pool, ticket.id());
        read_body(
            &mut stream,
            &mut frame,
            size as usize,
            &mut held,
            started,
            limits.idle,
            peer,
        )?;
        if !parked.is_empty() && !handler.can_pipeline(&frame) {
            parked.answer_all(&mut stream, &shared.requests)?;
        }
        out.clear();
        out.extend_from_slice(&[0; 4]);
        let timed = Timed::of(handler, &frame, started);
        let action = handler.handle(&mut frame, &mut out, conn);
        // The request is carried out: its bytes go back to the pool, and a large buffer is
        // not kept for the connection's whole life.
        drop(held);
        if frame.capacity() > ALLOWANCE {
            frame = Vec::new();
        }
        match action {
            Action::Respond => {
                parked.answer_all(&mut stream, &shared.requests)?;
                stream.send(&mut out)?;
                timed.done(&shared.requests);
            }
            Action::NoResponse => timed.done(&shared.requests),
            Action::Close => {
                parked.answer_all(&mut stream, &shared.requests)?;
                return Ok(());
            }
            Action::RespondAndClose => {
                parked.answer_all(&mut stream, &shared.requests)?;
                stream.send(&mut out)?;
                timed.done(&shared.requests);
                return Ok(());
            }
            Action::Adopt(take) => {
                parked.answer_all(&mut stream, &shared.requests)?;
                match stream.into_plain() {
                    Some(socket) => take(socket),
                    None => log::warn!(
                        "closing connection from {peer} on listener {}: the coordinator's own protocol is not served over TLS",
                        shared.name
                    ),
                }
                return Ok(());
            }
            Action::Park(finish) => parked.push(&out, finish, timed),
        }
        // A huge response should not pin its memory for the connection's whole life.
        if out.capacity() > 4 << 20 {
            out = Response::with_capacity(1024);
        }
    }
}

/// The most bytes a request buffer grows by at once past the allowance: what a client that
/// stops sending can make us hold beyond what it sent.
const CHUNK: usize = 256 << 10;

/// Reads a `size`-byte request body into `frame` as its bytes arrive: the buffer grows chunk
/// by chunk, each chunk past the allowance drawn from the pool first (waiting there when it
/// is used up), so what the broker holds follows what the client sent, not what it announced.
fn read_body(
    stream: &mut impl Read,
    frame: &mut Vec<u8>,
    size: usize,
    held: &mut Held<'_>,
    started: Instant,
    limit: Duration,
    peer: &SocketAddr,
) -> io::Result<()> {
    frame.clear();
    while frame.len() < size {
        let at = frame.len();
        let end = if at < ALLOWANCE {
            size.min(ALLOWANCE)
        } else {
            size.min(at + CHUNK)
        };
        if end > ALLOWANCE {
            held.take(end - at.max(ALLOWANCE))
                .map_err(|_| io::Error::other("the broker is stopping"))?;
        }
        if frame.capacity() < end {
            // Doubling keeps the copies of a large request linear in its size.
            let want = end.max(frame.capacity() * 2).min(size);
            frame.reserve_exact(want - at);
        }
        frame.resize(end, 0);
        read_rest(stream, &mut frame[at..end], started, limit, peer)?;
    }
    Ok(())
}

/// Waits until `until` without reading from the socket; fails when the socket is shut down
/// meanwhile (the broker stopping, or the connection closed to make room).
fn wait_muted(stream: &TcpStream, until: Instant) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        // No events asked for: poll(2) still reports a hang-up or an error, and nothing else.
        let mut fd = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: 0,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut fd, 1, ms) };
        if n > 0 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed while muted",
            ));
        }
        if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error());
        }
    }
}

/// Puts the size in front of an answer and sends it.
fn write_answer(stream: &mut Transport, out: &mut [u8]) -> io::Result<()> {
    let n = super::response::frame_size(out.len())?;
    out[..4].copy_from_slice(&n.to_be_bytes());
    stream.send_bytes(out)
}

/// A connection's parked requests, in request order, each with the start of its answer. The
/// answer buffers are reused, so a steady pipeline allocates nothing.
#[derive(Default)]
struct ParkedAnswers {
    waiting: std::collections::VecDeque<(Vec<u8>, Parked, Timed)>,
    spare: Vec<Vec<u8>>,
}

impl ParkedAnswers {
    fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    fn len(&self) -> usize {
        self.waiting.len()
    }

    fn push(&mut self, head: &[u8], finish: Parked, timed: Timed) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(head);
        self.waiting.push_back((buf, finish, timed));
    }

    /// Waits for each parked answer in turn and sends it.
    fn answer_all(&mut self, stream: &mut Transport, requests: &RequestMetrics) -> io::Result<()> {
        while let Some((mut buf, finish, timed)) = self.waiting.pop_front() {
            finish(&mut buf);
            write_answer(stream, &mut buf)?;
            timed.done(requests);
            if buf.capacity() <= 64 << 10 {
                self.spare.push(buf);
            }
        }
        Ok(())
    }
}

/// A request being timed: its type, version, kind of fetch and first byte's time.
struct Timed {
    key: i16,
    version: i16,
    follower: bool,
    started: Instant,
}

impl Timed {
    fn of(handler: &dyn RequestHandler, frame: &[u8], started: Instant) -> Timed {
        let (key, version) = peek_key_version(frame).unwrap_or((-1, -1));
        Timed {
            key,
            version,
            follower: key == FETCH && handler.is_follower_fetch(frame),
            started,
        }
    }

    /// The answer is out (or none is due).
    fn done(self, requests: &RequestMetrics) {
        requests.record(
            self.key,
            self.version,
            self.follower,
            self.started.elapsed(),
        );
    }
}

/// Counts a connection of its listener while it lives, however its thread ends.
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(n: &'a AtomicUsize) -> Counted<'a> {
        n.fetch_add(1, Ordering::Relaxed);
        Counted(n)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Fills `buf`, failing once the request has been arriving for longer than `limit` (checked
/// after each partial read, so a whole frame costs no extra system call).
fn read_rest(
    stream: &mut impl Read,
    buf: &mut [u8],
    started: Instant,
    limit: Duration,
    peer: &SocketAddr,
) -> io::Result<()> {
    let mut pos = 0;
    while pos < buf.len() {
        if started.elapsed() > limit {
            log::warn!(
                "closing connection from {peer}: request still incomplete after {limit:?} (connections.max.idle.ms)"
            );
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "request arrived too slowly",
            ));
        }
        match stream.read(&mut buf[pos..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => pos += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Answers a frame with its own bytes; panics on a frame that starts with 1.
    struct Echo;

    impl RequestHandler for Echo {
        fn handle(&self, frame: &mut [u8], out: &mut Response, _: &ConnectionContext) -> Action {
            assert_ne!(frame[0], 1, "a handler bug");
            out.extend_from_slice(frame);
            Action::Respond
        }
    }

    fn ask(addr: SocketAddr, byte: u8) -> Option<Vec<u8>> {
        let mut s = TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(&[0, 0, 0, 1, byte]).ok()?;
        let mut size = [0u8; 4];
        s.read_exact(&mut size).ok()?;
        let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
        s.read_exact(&mut body).ok()?;
        Some(body)
    }

    #[test]
    fn a_handler_that_panics_gives_its_connection_slot_back() {
        let limits = super::super::ConnectionLimits {
            socket_request_max_bytes: 1024,
            max_connections: 2,
            ..Default::default()
        };
        let server = SocketServer::start(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            ListenerSpec {
                name: "PLAINTEXT".into(),
                inter_broker: true,
                exempt: false,
                sasl: false,
                tls: None,
            },
            Arc::new(Echo),
            ConnectionQuotas::new(limits),
            Arc::new(RequestPool::new(None)),
            Arc::new(RequestMetrics::default()),
        )
        .unwrap();
        let addr = server.local_addr();
        for _ in 0..5 {
            assert_eq!(ask(addr, 1), None, "the panicking request gets no answer");
        }
        // Both slots of max.connections are free again (they were leaked before): two
        // connections at once are served, once the closed ones have been counted out.
        let both = || -> Option<()> {
            let mut a = TcpStream::connect(addr).ok()?;
            let mut b = TcpStream::connect(addr).ok()?;
            for s in [&mut a, &mut b] {
                s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
                s.write_all(&[0, 0, 0, 1, 7]).ok()?;
                let mut answer = [0u8; 5];
                s.read_exact(&mut answer).ok()?;
                (answer == [0, 0, 0, 1, 7]).then_some(())?;
            }
            Some(())
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while both().is_none() {
            assert!(
                Instant::now() < deadline,
                "connections refused after handler panics"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
