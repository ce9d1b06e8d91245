//! `ZkClient`: a ZooKeeper session that survives expiry, as the spec's processes need it.
//!
//! The `Session` underneath (see `session`) keeps one session alive across lost connections
//! and replaces it when the ensemble expires it. This layer adds what the spec's processes
//! rely on:
//!
//! - **Ephemeral nodes re-created** in every new session — waiting out a stale node still
//!   owned by the old session, which the server deletes within a session timeout.
//! - **Listeners told** (`SessionListener`): the session is lost (no contact for a session
//!   timeout: leaders stop leading before a new session exists), and the session is back —
//!   new, or the same one after a lost connection. Either way the server forgot our watches
//!   with the connection, so every owner of watches sets them again (the spec's
//!   `handleNewSession`).
//!
//! Thread model: one `zk-session` thread per client receives the session's events and does
//! all of the above; callers use the client from any thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, unbounded};
use parking_lot::Mutex;

use super::jute::{CreateMode, Stat, WatchedEvent, ZkError, ZkResult};
use super::session::{
    Session, SessionEvent, parse_connect_string, request_deadline, wait_connected,
};
use super::stats::SessionStats;

/// Told about the session's fate.
pub trait SessionListener: Send + Sync {
    /// The session is gone (no contact for a session timeout, or the ensemble expired it):
    /// whatever our ephemeral nodes stood for — leading an election — must stop now, before a
    /// new session exists.
    fn handle_session_lost(&self) {}
    /// A new session replaced the old one, and our ephemeral nodes are back; or the session
    /// survived a lost connection. Either way no watch of ours is set any more.
    fn handle_new_session(&self);
}

/// An ephemeral node this process owns and re-creates in every new session.
struct Ephemeral {
    path: String,
    data: Vec<u8>,
}

pub struct ZkClient {
    session: Session,
    ephemerals: Mutex<Vec<Ephemeral>>,
    listeners: Mutex<Vec<Weak<dyn SessionListener>>>,
    closed: AtomicBool,
    /// Restoring our ephemeral nodes in a new session failed midway (ZooKeeper went away
    /// again): the session thread tries again until it succeeds.
    needs_restore: AtomicBool,
    pub stats: SessionStats,
}

impl ZkClient {
    /// Connects (waiting up to two session timeouts, at least 4 s, for a server to answer),
    /// creating the chroot of `connect_string` if it is missing, and starts the session
    /// thread.
    pub fn connect(connect_string: &str, session_timeout: Duration) -> ZkResult<Arc<ZkClient>> {
        let (hosts, chroot) = parse_connect_string(connect_string);
        if hosts.is_empty() {
            return Err(ZkError::BadArguments);
        }
        let patience = request_deadline(session_timeout);
        if !chroot.is_empty() {
            let (tx, rx) = unbounded();
            let root = Session::open(hosts.clone(), String::new(), session_timeout, tx);
            wait_connected(&rx, patience)?;
            ensure_path_on(&root, &chroot)?;
            root.close();
        }
        let (tx, rx) = unbounded();
        let session = Session::open(hosts, chroot, session_timeout, tx);
        wait_connected(&rx, patience)?;
        let client = Arc::new(ZkClient {
            session,
            ephemerals: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            needs_restore: AtomicBool::new(false),
            stats: SessionStats::default(),
        });
        client.stats.connected();
        let weak = Arc::downgrade(&client);
        std::thread::Builder::new()
            .name("zk-session".into())
            .spawn(move || session_loop(weak, rx))
            .expect("spawn zk-session thread");
        Ok(client)
    }

    /// The current session's id (the `ephemeral_owner` of the nodes it creates).
    pub fn session_id(&self) -> i64 {
        self.session.session_id()
    }

    pub fn session_timeout(&self) -> Duration {
        self.session.session_timeout()
    }

    pub fn add_session_listener(&self, l: Weak<dyn SessionListener>) {
        self.listeners.lock().push(l);
    }

    /// Creates `path` and its missing parents as persistent nodes with empty data.
    pub fn ensure_path(&self, path: &str) -> ZkResult<()> {
        ensure_path_on(&self.session, path)
    }

    /// Creates `prefix` + a sequence number (persistent), creating missing parents.
    pub fn create_sequential(&self, prefix: &str, data: Vec<u8>) -> ZkResult<String> {
        self.ensure_parent(prefix)?;
        self.session
            .create(prefix, &data, CreateMode::PersistentSequential)
    }

    /// Creates `path` only if its parent exists (NoNode otherwise): for nodes under a topic,
    /// which must not bring back a topic deleted meanwhile.
    pub fn create_child(&self, path: &str, data: Vec<u8>) -> ZkResult<()> {
        self.session
            .create(path, &data, CreateMode::Persistent)
            .map(|_| ())
    }

    /// Creates `path`, and its missing parents first.
    pub fn create_persistent(&self, path: &str, data: Vec<u8>) -> ZkResult<()> {
        self.ensure_parent(path)?;
        self.create_child(path, data)
    }

    fn ensure_parent(&self, path: &str) -> ZkResult<()> {
        match path.rsplit_once('/') {
            Some((parent, _)) if !parent.is_empty() => self.ensure_path(parent),
            _ => Ok(()),
        }
    }

    /// Creates an ephemeral node that this client re-creates in every new session. When the
    /// node exists with another owner, waits up to `wait` for it to vanish (a previous session
    /// or incarnation of this process), then fails with `NodeExists`.
    pub fn create_ephemeral(&self, path: &str, data: Vec<u8>, wait: Duration) -> ZkResult<()> {
        self.create_ephemeral_once(path, &data, wait)?;
        let mut eph = self.ephemerals.lock();
        eph.retain(|e| e.path != path);
        eph.push(Ephemeral {
            path: path.to_owned(),
            data,
        });
        Ok(())
    }

    /// Like `create_ephemeral` but not re-created on a new session (elections decide anew).
    /// Losing ZooKeeper for a moment (ConnectionLoss, OperationTimeout) is retried within
    /// `wait` too: a create that reached the server before the loss shows up as our own node.
    pub fn create_ephemeral_once(&self, path: &str, data: &[u8], wait: Duration) -> ZkResult<()> {
        let deadline = Instant::now() + wait;
        loop {
            let e = match self.try_create_ephemeral(path, data) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if !matches!(
                e,
                ZkError::NodeExists | ZkError::ConnectionLoss | ZkError::OperationTimeout
            ) || Instant::now() >= deadline
            {
                return Err(e);
            }
            if e == ZkError::NodeExists {
                log::info!("{path} exists, owned by another session; waiting for it to expire");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// One attempt; `NodeExists` when another session owns `path`.
    fn try_create_ephemeral(&self, path: &str, data: &[u8]) -> ZkResult<()> {
        self.ensure_parent(path)?;
        let mine = self.session.session_id();
        let owner = match self.session.create(path, data, CreateMode::Ephemeral) {
            Ok(_) | Err(ZkError::NodeExists) => self.exists(path)?.map(|s| s.ephemeral_owner),
            Err(e) => return Err(e),
        };
        match owner {
            Some(o) if o == mine => Ok(()),
            Some(o) => {
                log::debug!("{path} exists, owned by session {o:#x}, not ours ({mine:#x})");
                Err(ZkError::NodeExists)
            }
            // Gone again already: the session that created it ended in between.
            None => Err(ZkError::ConnectionLoss),
        }
    }

    /// Deletes an ephemeral node of ours and stops re-creating it. A node another session
    /// owns (another process registered under the same name) is left alone.
    pub fn delete_ephemeral(&self, path: &str) -> ZkResult<()> {
        self.ephemerals.lock().retain(|e| e.path != path);
        let mine = self.session.session_id();
        match self.exists(path)? {
            Some(stat) if mine != 0 && stat.ephemeral_owner == mine => self.delete_if_exists(path),
            _ => Ok(()),
        }
    }

    /// Deletes `path` whatever its version; already gone is fine.
    pub fn delete_if_exists(&self, path: &str) -> ZkResult<()> {
        match self.session.delete(path, None) {
            Ok(()) | Err(ZkError::NoNode) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub fn exists(&self, path: &str) -> ZkResult<Option<Stat>> {
        self.session.exists(path, None)
    }

    pub fn exists_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<Option<Stat>> {
        self.session.exists(path, Some(Box::new(w)))
    }

    pub fn get_data(&self, path: &str) -> ZkResult<(Vec<u8>, Stat)> {
        self.session.get_data(path, None)
    }

    pub fn get_data_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<(Vec<u8>, Stat)> {
        self.session.get_data(path, Some(Box::new(w)))
    }

    /// Conditional write when `version` is given; `BadVersion` when someone wrote in between.
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> ZkResult<Stat> {
        self.session.set_data(path, &data, version)
    }

    /// Many nodes read in one request (`zk::multi`); each answer is its node's or its error.
    pub fn get_data_each(&self, paths: &[String]) -> ZkResult<Vec<super::multi::ReadAnswer>> {
        self.session.get_data_each(paths)
    }

    /// Conditional writes made together or not at all (`zk::multi`): every node's new
    /// metadata, or the position and error of the first write that failed.
    pub fn set_data_all(
        &self,
        writes: &[(String, Vec<u8>, i32)],
    ) -> ZkResult<Result<Vec<Stat>, (usize, ZkError)>> {
        self.session.set_data_all(writes)
    }

    pub fn get_children(&self, path: &str) -> ZkResult<Vec<String>> {
        self.session.get_children(path, None)
    }

    pub fn get_children_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<Vec<String>> {
        self.session.get_children(path, Some(Box::new(w)))
    }

    pub fn delete(&self, path: &str, version: Option<i32>) -> ZkResult<()> {
        self.session.delete(path, version)
    }

    /// Deletes `path` and everything below it.
    pub fn delete_recursive(&self, path: &str) -> ZkResult<()> {
        match self.get_children(path) {
            Ok(children) => {
                for c in children {
                    self.delete_recursive(&format!("{path}/{c}"))?;
                }
            }
            Err(ZkError::NoNode) => return Ok(()),
            Err(e) => return Err(e),
        }
        self.delete_if_exists(path)
    }

    /// Ends the session: ephemeral nodes disappear at once, and no new session is opened.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.session.close();
    }

    /// The listeners still alive, copied out so none is called under our lock.
    fn live_listeners(&self) -> Vec<Arc<dyn SessionListener>> {
        self.listeners
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    fn notify_session_lost(&self) {
        self.stats.expired();
        for l in self.live_listeners() {
            l.handle_session_lost();
        }
    }

    /// Back on the same session after a lost connection. ZooKeeper drops a connection's
    /// watches with it (a restarted server has none at all), so every owner of watches must
    /// set them again and read what changed meanwhile, exactly as after a new session.
    fn on_reconnect(&self) {
        log::info!("zookeeper reconnected in the same session; watches must be set again");
        for l in self.live_listeners() {
            l.handle_new_session();
        }
    }

    /// Restores our ephemeral nodes in the new session, then tells the listeners. When
    /// ZooKeeper fails us midway it gives up for now (a few tries with backoff) and leaves
    /// `needs_restore` set: the session thread must stay free to see the next event.
    fn on_new_session(&self) {
        log::info!(
            "zookeeper session {:#x} established; restoring ephemeral nodes and watches",
            self.session_id()
        );
        self.needs_restore.store(true, Ordering::Release);
        let eph: Vec<(String, Vec<u8>)> = self
            .ephemerals
            .lock()
            .iter()
            .map(|e| (e.path.clone(), e.data.clone()))
            .collect();
        for (path, data) in eph {
            let mut backoff = Duration::from_millis(100);
            // A stale node of the old session lasts at most one session timeout past its
            // last heartbeat; keep waiting beyond that rather than give up the registration.
            while let Err(e) = self.create_ephemeral_once(&path, &data, self.session_timeout() * 2)
            {
                if self.closed.load(Ordering::Acquire) {
                    return;
                }
                if e != ZkError::NodeExists {
                    if backoff > Duration::from_secs(2) {
                        log::warn!("cannot re-create ephemeral {path}: {e:?}; trying again later");
                        return;
                    }
                    log::warn!("cannot re-create ephemeral {path}: {e:?}; retrying in {backoff:?}");
                    std::thread::sleep(backoff);
                    backoff *= 2;
                }
            }
        }
        self.needs_restore.store(false, Ordering::Release);
        for l in self.live_listeners() {
            l.handle_new_session();
        }
    }
}

fn ensure_path_on(zk: &Session, path: &str) -> ZkResult<()> {
    let mut cur = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        cur.push('/');
        cur.push_str(part);
        match zk.create(&cur, &[], CreateMode::Persistent) {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn session_loop(client: Weak<ZkClient>, events: Receiver<SessionEvent>) {
    // The listeners were told the session is lost and not yet that it is back.
    let mut lost = false;
    loop {
        let event = events.recv_timeout(Duration::from_secs(1));
        let Some(c) = client.upgrade() else { return };
        if c.closed.load(Ordering::Acquire) {
            return;
        }
        match event {
            Ok(SessionEvent::Disconnected) => c.stats.disconnected(),
            Ok(SessionEvent::Lost { session_id }) if !lost => {
                log::warn!(
                    "no contact with zookeeper for a session timeout ({:?}); session {session_id:#x} counts as lost",
                    c.session_timeout()
                );
                lost = true;
                c.notify_session_lost();
            }
            Ok(SessionEvent::Lost { .. }) => {}
            Ok(SessionEvent::Connected { same_session, .. }) => {
                c.stats.connected();
                if same_session && !lost {
                    c.on_reconnect();
                } else {
                    if !lost {
                        c.notify_session_lost();
                    }
                    lost = false;
                    c.on_new_session();
                }
            }
            // A restore that ZooKeeper interrupted is tried again, even if no new event comes
            // to prompt it.
            Err(RecvTimeoutError::Timeout) => {
                if c.needs_restore.load(Ordering::Acquire) {
                    c.on_new_session();
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs `f` again while it fails because ZooKeeper cannot be reached for the moment
/// (ConnectionLoss: the connection dropped under the call; OperationTimeout), up to `wait`.
/// For calls that are safe to repeat: reads, and writes whose repetition is checked.
pub fn until_connected<T>(wait: Duration, mut f: impl FnMut() -> ZkResult<T>) -> ZkResult<T> {
    let deadline = Instant::now() + wait;
    loop {
        match f() {
            Err(ZkError::ConnectionLoss | ZkError::OperationTimeout)
                if Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            r => return r,
        }
    }
}
