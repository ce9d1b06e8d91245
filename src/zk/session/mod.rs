//! `Session`: one ZooKeeper session, over one TCP connection to one server of the ensemble at
//! a time. Synchronous calls from any thread, each waiting at most `request_deadline`.
//!
//! Thread model: a `zk-io` thread connects (each server of the connect string in turn),
//! reads every frame, answers the calls waiting on them by request id, pings when the
//! connection has been idle for a third of the session timeout, and declares the connection
//! dead when nothing has arrived for two thirds of it (ZooKeeper's own client does the same).
//! A `zk-watch` thread runs the watchers, so that a watcher may itself call ZooKeeper.
//!
//! What the owner hears (`SessionEvent`): connected (in the same session or a new one — a
//! session the server expired is replaced at once), disconnected, and lost — no contact for a
//! whole session timeout, so the ensemble has expired the session or will treat it as gone:
//! whatever our ephemeral nodes stood for must stop. After a loss the session is still
//! offered to the servers first; only a server's word ends it.
//!
//! Watches live in the server's connection, so a lost connection loses them: they are
//! dropped here too, and the owner sets them again on `Connected`.

use std::collections::HashMap;
use std::io::Write;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use parking_lot::{Condvar, Mutex};

mod io;

use super::jute::{ConnectResponse, Frame, Reader, WatchedEvent, ZkError, ZkResult, op};
use io::read_frame;

/// The largest frame read from a server (ZooKeeper's `jute.maxbuffer` is 1 MiB by default).
const MAX_FRAME: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    Connected {
        session_id: i64,
        same_session: bool,
    },
    Disconnected,
    /// No contact for a session timeout; `session_id` is the session that counts as lost.
    Lost {
        session_id: i64,
    },
}

/// Called once, when the watch fires.
pub type Watcher = Box<dyn FnOnce(WatchedEvent) + Send>;

/// Which watch a request sets: a data watch (getData, exists) fires on the node's creation,
/// change and deletion; a child watch (getChildren) on its children changing or its deletion.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum WatchKind {
    Data,
    Child,
}

struct Pending {
    answer: Sender<ZkResult<Vec<u8>>>,
    watch: Option<(WatchKind, String, Watcher)>,
}

/// The writing side of the current connection and the session it carries.
struct Conn {
    stream: Option<TcpStream>,
    session_id: i64,
    passwd: Vec<u8>,
    last_sent: Instant,
}

struct Shared {
    hosts: Vec<String>,
    chroot: String,
    session_timeout: Duration,
    closed: AtomicBool,
    /// `close` has begun: the server hangs up after CloseSession, which must not be taken for
    /// a lost connection to reconnect.
    closing: AtomicBool,
    conn: Mutex<Conn>,
    connected: Condvar,
    next_xid: AtomicI32,
    pending: Mutex<HashMap<i32, Pending>>,
    watches: Mutex<HashMap<(WatchKind, String), Vec<Watcher>>>,
    last_zxid: Mutex<i64>,
    events: Sender<SessionEvent>,
    fire: Sender<(Watcher, WatchedEvent)>,
}

pub struct Session {
    shared: Arc<Shared>,
}

/// How long a call waits for its answer: generous, since a loaded ensemble is slow and a
/// needless failure costs a retry; but never unbounded (a server can take a request and never
/// answer it).
pub fn request_deadline(session_timeout: Duration) -> Duration {
    (session_timeout * 2).max(Duration::from_secs(4))
}

/// Splits `host:port,host:port/chroot` into the servers and the chroot ("" for none).
pub fn parse_connect_string(s: &str) -> (Vec<String>, String) {
    let (hosts, chroot) = match s.find('/') {
        Some(i) => (&s[..i], s[i..].trim_end_matches('/')),
        None => (s, ""),
    };
    let hosts = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    (hosts, chroot.to_owned())
}

impl Session {
    /// Starts connecting to `hosts` (with every path under `chroot`); what happens is told on
    /// `events`. Calls made before the first connection wait for it (within their deadline).
    pub fn open(
        hosts: Vec<String>,
        chroot: String,
        session_timeout: Duration,
        events: Sender<SessionEvent>,
    ) -> Session {
        let (fire, to_fire) = unbounded::<(Watcher, WatchedEvent)>();
        let shared = Arc::new(Shared {
            hosts,
            chroot,
            session_timeout,
            closed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            conn: Mutex::new(Conn {
                stream: None,
                session_id: 0,
                passwd: Vec::new(),
                last_sent: Instant::now(),
            }),
            connected: Condvar::new(),
            next_xid: AtomicI32::new(1),
            pending: Mutex::new(HashMap::new()),
            watches: Mutex::new(HashMap::new()),
            last_zxid: Mutex::new(0),
            events,
            fire,
        });
        let io = shared.clone();
        std::thread::Builder::new()
            .name("zk-io".into())
            .spawn(move || io.run())
            .expect("spawn zk-io thread");
        std::thread::Builder::new()
            .name("zk-watch".into())
            .spawn(move || run_watchers(to_fire))
            .expect("spawn zk-watch thread");
        Session { shared }
    }

    /// The session timeout asked of the servers.
    pub fn session_timeout(&self) -> Duration {
        self.shared.session_timeout
    }

    /// The session's id; 0 before the first connection.
    pub fn session_id(&self) -> i64 {
        self.shared.conn.lock().session_id
    }

    pub fn is_connected(&self) -> bool {
        self.shared.conn.lock().stream.is_some()
    }

    /// The server-side path of `path`.
    pub(super) fn server_path(&self, path: &str) -> String {
        match (self.shared.chroot.as_str(), path) {
            ("", p) => p.to_owned(),
            (root, "/") => root.to_owned(),
            (root, p) => format!("{root}{p}"),
        }
    }

    /// A server-side path as callers name it (without the chroot).
    pub(super) fn client_path(&self, path: &str) -> String {
        self.shared.strip_chroot(path)
    }

    /// Sends one request and waits for its answer body. `watch` is set if the request
    /// succeeds (for exists, also when the node is missing).
    pub(super) fn call(
        &self,
        op: i32,
        body: impl FnOnce(&mut Frame),
        watch: Option<(WatchKind, String, Watcher)>,
    ) -> ZkResult<Vec<u8>> {
        let deadline = Instant::now() + request_deadline(self.shared.session_timeout);
        self.call_until(op, body, watch, deadline)
    }

    fn call_until(
        &self,
        op: i32,
        body: impl FnOnce(&mut Frame),
        watch: Option<(WatchKind, String, Watcher)>,
        deadline: Instant,
    ) -> ZkResult<Vec<u8>> {
        let s = &self.shared;
        let (tx, rx) = bounded(1);
        let xid;
        {
            let mut conn = s.conn.lock();
            while conn.stream.is_none() {
                if s.closed.load(Ordering::Acquire)
                    || s.closing.load(Ordering::Acquire)
                    || s.connected.wait_until(&mut conn, deadline).timed_out()
                {
                    return Err(ZkError::ConnectionLoss);
                }
            }
            xid = s.next_xid();
            let mut frame = Frame::request(xid, op);
            body(&mut frame);
            let frame = frame.finish();
            s.pending.lock().insert(
                xid,
                Pending {
                    answer: tx,
                    watch: watch.map(|(k, p, w)| (k, self.client_path(&p), w)),
                },
            );
            let stream = conn.stream.as_ref().expect("checked above");
            if (&mut &*stream).write_all(&frame).is_err() {
                // The reader sees the shutdown and fails everything still pending.
                let _ = stream.shutdown(Shutdown::Both);
                s.pending.lock().remove(&xid);
                return Err(ZkError::ConnectionLoss);
            }
            conn.last_sent = Instant::now();
        }
        match rx.recv_deadline(deadline) {
            Ok(answer) => answer,
            Err(_) if s.pending.lock().remove(&xid).is_some() => Err(ZkError::OperationTimeout),
            // Answered between the deadline and the removal.
            Err(_) => rx.try_recv().unwrap_or(Err(ZkError::ConnectionLoss)),
        }
    }

    /// Ends the session (its ephemeral nodes go at once) and stops the threads.
    pub fn close(&self) {
        let s = &self.shared;
        if s.closed.load(Ordering::Acquire) || s.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.is_connected() {
            let deadline = Instant::now() + Duration::from_secs(2);
            let _ = self.call_until(op::CLOSE_SESSION, |_| {}, None, deadline);
        }
        s.closed.store(true, Ordering::Release);
        let conn = s.conn.lock();
        if let Some(stream) = &conn.stream {
            let _ = stream.shutdown(Shutdown::Both);
        }
        s.connected.notify_all();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

fn run_watchers(to_fire: Receiver<(Watcher, WatchedEvent)>) {
    for (watcher, event) in to_fire {
        watcher(event);
    }
}

impl Shared {
    fn next_xid(&self) -> i32 {
        // Positive ids only: the negative ones are the server's (notifications, pings).
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        if xid <= 0 || xid == i32::MAX {
            self.next_xid.store(2, Ordering::Relaxed);
            return 1;
        }
        xid
    }

    fn strip_chroot(&self, path: &str) -> String {
        match path.strip_prefix(self.chroot.as_str()) {
            Some("") => "/".to_owned(),
            Some(rest) if !self.chroot.is_empty() => rest.to_owned(),
            _ => path.to_owned(),
        }
    }

    fn tell(&self, e: SessionEvent) {
        let _ = self.events.send(e);
    }

    /// The `zk-io` thread: connect, serve the connection until it dies, again.
    fn run(self: Arc<Self>) {
        let mut next_host = 0;
        let mut last_contact = Instant::now();
        let mut lost = false;
        let mut failures = 0u32;
        // The session of the last connection: the one a loss is about.
        let mut session_id = 0;
        while !self.closed.load(Ordering::Acquire) && !self.closing.load(Ordering::Acquire) {
            let host = self.hosts[next_host % self.hosts.len()].clone();
            match self.connect(&host) {
                Ok((stream, negotiated)) => {
                    failures = 0;
                    lost = false;
                    session_id = self.conn.lock().session_id;
                    self.serve(stream, negotiated, &mut last_contact);
                    self.disconnected();
                }
                Err(e) => {
                    log::debug!("zookeeper {host}: cannot connect ({e})");
                    next_host += 1;
                    failures += 1;
                }
            }
            if !lost && last_contact.elapsed() > self.session_timeout {
                lost = true;
                self.tell(SessionEvent::Lost { session_id });
            }
            // Back off once every server has been tried.
            if failures > 0 && failures.is_multiple_of(self.hosts.len() as u32) {
                let pause =
                    Duration::from_millis(50 << (failures / self.hosts.len() as u32).min(4));
                std::thread::sleep(pause);
            }
        }
        self.disconnected();
    }

    /// Opens a connection to `host` and establishes the session on it (the one we have, or a
    /// new one when we have none or the server says ours expired).
    fn connect(&self, host: &str) -> std::io::Result<(TcpStream, Duration)> {
        let per_host = (self.session_timeout / self.hosts.len() as u32)
            .clamp(Duration::from_millis(500), Duration::from_secs(10));
        let addr = host
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("no address for {host}")))?;
        let stream = TcpStream::connect_timeout(&addr, per_host)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(per_host))?;
        stream.set_write_timeout(Some(per_host))?;
        let (old_id, passwd) = {
            let c = self.conn.lock();
            (c.session_id, c.passwd.clone())
        };
        let mut hello = Frame::bare();
        hello
            .i32(0)
            .i64(*self.last_zxid.lock())
            .i32(self.session_timeout.as_millis() as i32)
            .i64(old_id)
            .bytes(if passwd.is_empty() { &[0; 16] } else { &passwd })
            .bool(false);
        (&stream).write_all(&hello.finish())?;
        let body = read_frame(&mut &stream)?;
        let resp = ConnectResponse::read(&mut Reader::new(&body)).map_err(std::io::Error::other)?;
        if resp.timeout_ms <= 0 {
            // Our session is gone; the next connection asks for a new one, at once.
            log::warn!("zookeeper {host}: session {old_id:#x} has expired");
            self.forget_session();
            return Err(std::io::Error::other("session expired"));
        }
        let negotiated = Duration::from_millis(resp.timeout_ms as u64);
        let same_session = old_id == resp.session_id;
        {
            let mut c = self.conn.lock();
            c.stream = Some(stream.try_clone()?);
            c.session_id = resp.session_id;
            c.passwd = resp.passwd;
            c.last_sent = Instant::now();
        }
        self.connected.notify_all();
        log::debug!(
            "zookeeper {host}: session {:#x} ({}), timeout {negotiated:?}",
            resp.session_id,
            if same_session { "resumed" } else { "new" }
        );
        self.tell(SessionEvent::Connected {
            session_id: resp.session_id,
            same_session,
        });
        Ok((stream, negotiated))
    }

    /// The session the server expired: forgotten, so the next connection opens a new one.
    fn forget_session(&self) {
        let mut c = self.conn.lock();
        c.session_id = 0;
        c.passwd.clear();
        *self.last_zxid.lock() = 0;
    }

    /// The connection is gone: its calls fail with `ConnectionLoss` and its watches with it.
    fn disconnected(&self) {
        let had = self.conn.lock().stream.take();
        if let Some(s) = had {
            let _ = s.shutdown(Shutdown::Both);
            self.tell(SessionEvent::Disconnected);
        }
        for (_, p) in self.pending.lock().drain() {
            let _ = p.answer.send(Err(ZkError::ConnectionLoss));
        }
        self.watches.lock().clear();
    }
}

/// Waits up to `limit` for a `Connected` event; the events before it are dropped.
pub fn wait_connected(events: &Receiver<SessionEvent>, limit: Duration) -> ZkResult<()> {
    let deadline = Instant::now() + limit;
    loop {
        match events.recv_deadline(deadline) {
            Ok(SessionEvent::Connected { .. }) => return Ok(()),
            Ok(_) => {}
            Err(_) => return Err(ZkError::OperationTimeout),
        }
    }
}
