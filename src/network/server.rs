//! The blocking socket server: 1 acceptor thread, 1 thread per connection.
//!
//! Each connection thread reads one frame at a time (int32 size, then the payload), hands it to
//! the `RequestHandler`, and writes the response before reading the next frame — so responses
//! leave in request order, as Kafka clients that pipeline require. One exception: a request
//! the handler parks (an acks=all Produce) lets the thread carry out the pipelinable requests
//! already queued behind it before it waits, so their waits overlap; the answers still leave
//! in order. The frame and response
//! buffers live as long as the connection, so a steady stream of requests allocates nothing.
//!
//! Limits: a size ≤ 0 or above `socket.request.max.bytes` closes the connection (the protocol
//! cannot express the error); connections beyond `max.connections` are closed on accept; a
//! connection idle for `connections.max.idle.ms`, or whose request has been arriving for longer
//! than that, is closed — a client trickling bytes holds a thread only that long.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What the connection does after a request.
pub enum Action {
    /// Send `out` (the response body after the correlation id the handler wrote).
    Respond,
    /// Send nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection (malformed request, unknown api, acks=0 failure).
    Close,
    /// Hand the connection to someone else, who answers the request and owns the socket from
    /// then on (a consumer's RegisterRequest turns the connection around). Runs on this
    /// connection's thread.
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
    fn handle(&self, frame: &mut [u8], out: &mut Vec<u8>, peer: &SocketAddr) -> Action;

    /// Whether `frame` may be carried out while earlier requests of the connection are still
    /// parked: true only for requests that never wait themselves and whose effects may precede
    /// the earlier answers.
    fn can_pipeline(&self, _frame: &[u8]) -> bool {
        false
    }
}

pub struct SocketServer {
    local_addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    connections: Arc<Mutex<HashMap<u64, TcpStream>>>,
    acceptor: Mutex<Option<JoinHandle<()>>>,
}

struct Limits {
    max_request_bytes: usize,
    max_connections: usize,
    idle: Duration,
}

impl SocketServer {
    pub fn start(
        addr: &str,
        handler: Arc<dyn RequestHandler>,
        max_request_bytes: usize,
        max_connections: usize,
        idle: Duration,
    ) -> io::Result<SocketServer> {
        let listener = TcpListener::bind(addr)?;
        let local_addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(HashMap::new()));
        let limits = Arc::new(Limits {
            max_request_bytes,
            max_connections,
            idle,
        });
        let (st, conns) = (stopping.clone(), connections.clone());
        let acceptor = std::thread::Builder::new()
            .name(format!("acceptor-{}", local_addr.port()))
            .spawn(move || accept_loop(listener, handler, limits, st, conns))?;
        log::info!("listening on {local_addr}");
        Ok(SocketServer {
            local_addr,
            stopping,
            connections,
            acceptor: Mutex::new(Some(acceptor)),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and closes every connection.
    pub fn shutdown(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.local_addr, Duration::from_secs(1));
        if let Some(h) = self.acceptor.lock().take() {
            let _ = h.join();
        }
        for (_, s) in self.connections.lock().drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(
    listener: TcpListener,
    handler: Arc<dyn RequestHandler>,
    limits: Arc<Limits>,
    stopping: Arc<AtomicBool>,
    connections: Arc<Mutex<HashMap<u64, TcpStream>>>,
) {
    let next_id = AtomicU64::new(0);
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn!("accept failed: {e}");
                continue;
            }
        };
        let peer = match stream.peer_addr() {
            Ok(p) => p,
            Err(_) => continue,
        };
        if open.load(Ordering::Acquire) >= limits.max_connections {
            log::warn!(
                "closing connection from {peer}: max.connections ({}) reached",
                limits.max_connections
            );
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            connections.lock().insert(id, clone);
        }
        open.fetch_add(1, Ordering::AcqRel);
        let (h, l, c, o) = (
            handler.clone(),
            limits.clone(),
            connections.clone(),
            open.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("conn-{peer}"))
            .spawn(move || {
                // Given back when the thread ends, however it ends: a handler that panics
                // must not keep its connection counted against `max.connections`.
                let _slot = Slot {
                    id,
                    connections: c,
                    open: o,
                };
                if let Err(e) = serve_connection(stream, &peer, &*h, &l) {
                    log::debug!("connection from {peer} ended: {e}");
                }
            });
        if let Err(e) = spawned {
            log::error!("cannot start a thread for {peer}: {e}");
            connections.lock().remove(&id);
            open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A connection's place in the server's count and map, released on drop (also when its
/// thread unwinds).
struct Slot {
    id: u64,
    connections: Arc<Mutex<HashMap<u64, TcpStream>>>,
    open: Arc<AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

fn serve_connection(
    mut stream: TcpStream,
    peer: &SocketAddr,
    handler: &dyn RequestHandler,
    limits: &Limits,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    // A read waiting longer than this fails: the idle limit, and the stall limit mid-frame.
    stream.set_read_timeout(Some(limits.idle))?;
    let mut frame = Vec::new();
    let mut out = Vec::with_capacity(1024);
    let mut parked = ParkedAnswers::default();
    loop {
        // Parked answers go out once the client has nothing more queued for us: while it has,
        // the requests behind them are read and carried out first, so their waits overlap.
        if !parked.is_empty() && (parked.len() >= MAX_PARKED || bytes_queued(&stream) == 0) {
            parked.answer_all(&mut stream)?;
        }
        let mut size = [0u8; 4];
        let first = match stream.read(&mut size) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        // From its first byte, the whole request must arrive within the idle limit.
        let started = Instant::now();
        read_rest(&mut stream, &mut size[first..], started, limits.idle, peer)?;
        let size = i32::from_be_bytes(size);
        if size <= 0 || size as usize > limits.max_request_bytes {
            log::warn!(
                "closing connection from {peer}: request size {size} outside 1..={} (socket.request.max.bytes)",
                limits.max_request_bytes
            );
            parked.answer_all(&mut stream)?;
            return Ok(());
        }
        frame.clear();
        frame.resize(size as usize, 0);
        read_rest(&mut stream, &mut frame, started, limits.idle, peer)?;
        if !parked.is_empty() && !handler.can_pipeline(&frame) {
            parked.answer_all(&mut stream)?;
        }
        out.clear();
        out.extend_from_slice(&[0; 4]);
        match handler.handle(&mut frame, &mut out, peer) {
            Action::Respond => {
                parked.answer_all(&mut stream)?;
                write_answer(&mut stream, &mut out)?;
            }
            Action::NoResponse => {}
            Action::Close => {
                parked.answer_all(&mut stream)?;
                return Ok(());
            }
            Action::Adopt(take) => {
                parked.answer_all(&mut stream)?;
                take(stream);
                return Ok(());
            }
            Action::Park(finish) => parked.push(&out, finish),
        }
        // A huge response should not pin its memory for the connection's whole life.
        if out.capacity() > 4 << 20 {
            out = Vec::with_capacity(1024);
        }
        if frame.capacity() > 4 << 20 {
            frame = Vec::new();
        }
    }
}

/// Puts the size in front of an answer and sends it.
fn write_answer(stream: &mut TcpStream, out: &mut [u8]) -> io::Result<()> {
    let n = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&n.to_be_bytes());
    stream.write_all(out)
}

/// Bytes the client has sent that we have not read yet (FIONREAD).
fn bytes_queued(stream: &TcpStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r == 0 { n.max(0) as usize } else { 0 }
}

/// A connection's parked requests, in request order, each with the start of its answer. The
/// answer buffers are reused, so a steady pipeline allocates nothing.
#[derive(Default)]
struct ParkedAnswers {
    waiting: std::collections::VecDeque<(Vec<u8>, Parked)>,
    spare: Vec<Vec<u8>>,
}

impl ParkedAnswers {
    fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    fn len(&self) -> usize {
        self.waiting.len()
    }

    fn push(&mut self, head: &[u8], finish: Parked) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(head);
        self.waiting.push_back((buf, finish));
    }

    /// Waits for each parked answer in turn and sends it.
    fn answer_all(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        while let Some((mut buf, finish)) = self.waiting.pop_front() {
            finish(&mut buf);
            write_answer(stream, &mut buf)?;
            if buf.capacity() <= 64 << 10 {
                self.spare.push(buf);
            }
        }
        Ok(())
    }
}

/// Fills `buf`, failing once the request has been arriving for longer than `limit` (checked
/// after each partial read, so a whole frame costs no extra system call).
fn read_rest(
    stream: &mut TcpStream,
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

    /// Answers a frame with its own bytes; panics on a frame that starts with 1.
    struct Echo;

    impl RequestHandler for Echo {
        fn handle(&self, frame: &mut [u8], out: &mut Vec<u8>, _: &SocketAddr) -> Action {
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
        let server = SocketServer::start(
            "127.0.0.1:0",
            Arc::new(Echo),
            1024,
            2,
            Duration::from_secs(60),
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
