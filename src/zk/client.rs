//! `ZkClient`: a ZooKeeper session that survives expiry.
//!
//! The `zookeeper` crate gives up on a session for good (`ZkState::Closed`) when it has not
//! heard from the server for a session timeout, and reports `NotConnected` both for a dropped
//! TCP connection (same session, resumed) and for an expired one (a new session, with every
//! ephemeral node and watch gone). This wrapper absorbs both:
//!
//! - `Closed`: open a new `ZooKeeper` handle, with backoff, until one connects.
//! - `NotConnected` then `Connected`: check whether our ephemeral nodes still belong to our
//!   session; if not, the session was replaced.
//!
//! Either way, on a new session it re-creates this process's ephemeral nodes — waiting out a
//! stale node still owned by the old session, which the server deletes within a session
//! timeout — and then calls every `SessionListener` (the spec's `handleNewSession`), which
//! re-installs its watches. A connection lost and regained in the same session calls them
//! too: the server forgot our watches with the connection, and the crate does not restore
//! them.
//!
//! Thread model: one `zk-session` thread per client receives state changes from the crate and
//! does all of the above; callers use the current handle from any thread.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::{Mutex, RwLock};
use zookeeper::{Acl, CreateMode, Stat, WatchedEvent, ZkError, ZkResult, ZkState, ZooKeeper};

use super::probe::Probe;
use super::stats::SessionStats;

/// The throwaway ephemeral node that shows a new session its id.
const SESSION_PROBE: &str = "/gregor-session-";

/// Told about the session's fate.
pub trait SessionListener: Send + Sync {
    /// The session is gone (the client gave up on it): whatever our ephemeral nodes stood for
    /// — leading an election — must stop now, before a new session exists.
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
    connect_string: String,
    session_timeout: Duration,
    handle: RwLock<Arc<ZooKeeper>>,
    /// Bumped per handle, so state events of a discarded handle are ignored.
    generation: AtomicU64,
    /// Session id as seen in our ephemeral nodes' `ephemeral_owner`; 0 until learned (before
    /// the first ephemeral node of each session).
    session_id: AtomicI64,
    ephemerals: Mutex<Vec<Ephemeral>>,
    listeners: Mutex<Vec<Weak<dyn SessionListener>>>,
    events: Sender<(u64, ZkState)>,
    closed: AtomicBool,
    /// Restoring our ephemeral nodes in a new session failed midway (ZooKeeper went away
    /// again): the session thread tries again until it succeeds.
    needs_restore: AtomicBool,
    pub stats: SessionStats,
}

/// A handle of the crate, and whether the crate has given up on it (its I/O thread ended).
struct Handle {
    zk: Arc<ZooKeeper>,
    given_up: Arc<AtomicBool>,
}

/// A handle whose state changes go to `events` tagged with `generation`. It connects on its
/// own I/O thread, retrying until a session timeout passes without contact.
///
/// Returns once that thread has reported a state, or after `REGISTRATION_GRACE`: a request
/// sent while the thread registers its request channel is never read (mio-extras 2.0.6
/// `ReceiverCtl::register` looks for pending requests before it publishes its wake-up
/// handle), nor is anything sent after it, pings included, so the handle is dead for good.
/// A state report comes from the thread's event loop, so the channel is registered by then.
/// The grace covers a report made before our listener was added.
fn new_handle(
    connect: &str,
    timeout: Duration,
    generation: u64,
    events: &Sender<(u64, ZkState)>,
) -> ZkResult<Handle> {
    let zk = Arc::new(ZooKeeper::connect(connect, timeout, |_: WatchedEvent| {})?);
    let given_up = Arc::new(AtomicBool::new(false));
    let (reported_tx, reported) = crossbeam_channel::bounded(1);
    let (tx, flag) = (events.clone(), given_up.clone());
    zk.add_listener(move |s| {
        if matches!(s, ZkState::Closed) {
            flag.store(true, Ordering::Release);
        }
        let _ = reported_tx.try_send(());
        let _ = tx.send((generation, s));
    });
    let _ = reported.recv_timeout(REGISTRATION_GRACE);
    Ok(Handle { zk, given_up })
}

/// The longest a new handle is waited on while earlier ones are stuck.
const MAX_PATIENCE: Duration = Duration::from_secs(300);

/// Far longer than a new I/O thread takes to register, and than a healthy ZooKeeper takes to
/// answer a connection on loopback.
const REGISTRATION_GRACE: Duration = Duration::from_secs(1);

fn open_handle(
    connect: &str,
    timeout: Duration,
    generation: u64,
    events: &Sender<(u64, ZkState)>,
) -> ZkResult<Arc<ZooKeeper>> {
    let h = new_handle(connect, timeout, generation, events)?;
    // Requests queue until the session is established, so this returns once connected.
    Probe::new(h.zk.clone()).answers_within(patience(timeout))?;
    Ok(h.zk)
}

/// How long to wait for ZooKeeper to answer one request before calling the handle dead:
/// generous, since a loaded server is slow and a needless new session costs leaderships.
fn patience(session_timeout: Duration) -> Duration {
    (session_timeout * 3).max(Duration::from_secs(10))
}

impl ZkClient {
    /// Connects, creating the chroot of `connect_string` if it is missing, and starts the
    /// session thread.
    pub fn connect(connect_string: &str, session_timeout: Duration) -> ZkResult<Arc<ZkClient>> {
        if let Some(i) = connect_string.find('/') {
            let chroot = &connect_string[i..];
            if chroot.len() > 1 {
                let (tx, _rx) = unbounded();
                let root = open_handle(&connect_string[..i], session_timeout, 0, &tx)?;
                ensure_path_on(&root, chroot)?;
                let _ = root.close();
            }
        }
        let (tx, rx) = unbounded();
        let zk = open_handle(connect_string, session_timeout, 1, &tx)?;
        let client = Arc::new(ZkClient {
            connect_string: connect_string.to_owned(),
            session_timeout,
            handle: RwLock::new(zk),
            generation: AtomicU64::new(1),
            session_id: AtomicI64::new(0),
            ephemerals: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            events: tx,
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

    /// The session that owns our ephemeral nodes (0 before the first one is created).
    pub fn session_id(&self) -> i64 {
        self.session_id.load(Ordering::Acquire)
    }

    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    fn zk(&self) -> Arc<ZooKeeper> {
        self.handle.read().clone()
    }

    pub fn add_session_listener(&self, l: Weak<dyn SessionListener>) {
        self.listeners.lock().push(l);
    }

    /// Creates `path` and its missing parents as persistent nodes with empty data.
    pub fn ensure_path(&self, path: &str) -> ZkResult<()> {
        ensure_path_on(&self.zk(), path)
    }

    /// Creates `prefix` + a sequence number (persistent), creating missing parents.
    pub fn create_sequential(&self, prefix: &str, data: Vec<u8>) -> ZkResult<String> {
        if let Some((parent, _)) = prefix.rsplit_once('/')
            && !parent.is_empty()
        {
            self.ensure_path(parent)?;
        }
        self.zk().create(
            prefix,
            data,
            Acl::open_unsafe().clone(),
            CreateMode::PersistentSequential,
        )
    }

    /// Creates `path` only if its parent exists (NoNode otherwise): for nodes under a topic,
    /// which must not bring back a topic deleted meanwhile.
    pub fn create_child(&self, path: &str, data: Vec<u8>) -> ZkResult<()> {
        self.zk()
            .create(
                path,
                data,
                Acl::open_unsafe().clone(),
                CreateMode::Persistent,
            )
            .map(|_| ())
    }

    /// Creates `path`, and its missing parents first.
    pub fn create_persistent(&self, path: &str, data: Vec<u8>) -> ZkResult<()> {
        if let Some((parent, _)) = path.rsplit_once('/')
            && !parent.is_empty()
        {
            self.ensure_path(parent)?;
        }
        self.create_child(path, data)
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
        if let Some((parent, _)) = path.rsplit_once('/')
            && !parent.is_empty()
        {
            self.ensure_path(parent)?;
        }
        let zk = self.zk();
        let mine = self.learn_session_id(&zk)?;
        let owner = match zk.create(
            path,
            data.to_vec(),
            Acl::open_unsafe().clone(),
            CreateMode::Ephemeral,
        ) {
            Ok(_) | Err(ZkError::NodeExists) => zk.exists(path, false)?.map(|s| s.ephemeral_owner),
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

    /// Our session's id, learned before we create any node that stands for us: whoever sees
    /// such a node (the controller sees a broker's registration, and sends its id back as the
    /// broker epoch) can already be compared against it. ZooKeeper tells a session its id
    /// only as the owner of an ephemeral node, so a throwaway one shows it.
    fn learn_session_id(&self, zk: &ZooKeeper) -> ZkResult<i64> {
        let known = self.session_id.load(Ordering::Acquire);
        if known != 0 {
            return Ok(known);
        }
        let probe = zk.create(
            SESSION_PROBE,
            Vec::new(),
            Acl::open_unsafe().clone(),
            CreateMode::EphemeralSequential,
        )?;
        let owner = zk.exists(&probe, false)?.map_or(0, |s| s.ephemeral_owner);
        let _ = zk.delete(&probe, None);
        self.session_id.store(owner, Ordering::Release);
        Ok(owner)
    }

    /// Deletes an ephemeral node of ours and stops re-creating it. A node another session
    /// owns (another process registered under the same name) is left alone.
    pub fn delete_ephemeral(&self, path: &str) -> ZkResult<()> {
        self.ephemerals.lock().retain(|e| e.path != path);
        let mine = self.session_id.load(Ordering::Acquire);
        match self.exists(path)? {
            Some(stat) if mine != 0 && stat.ephemeral_owner == mine => self.delete_if_exists(path),
            _ => Ok(()),
        }
    }

    /// Deletes `path` whatever its version; already gone is fine.
    pub fn delete_if_exists(&self, path: &str) -> ZkResult<()> {
        match self.zk().delete(path, None) {
            Ok(()) | Err(ZkError::NoNode) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub fn exists(&self, path: &str) -> ZkResult<Option<Stat>> {
        self.zk().exists(path, false)
    }

    pub fn exists_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<Option<Stat>> {
        self.zk().exists_w(path, w)
    }

    pub fn get_data(&self, path: &str) -> ZkResult<(Vec<u8>, Stat)> {
        self.zk().get_data(path, false)
    }

    pub fn get_data_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<(Vec<u8>, Stat)> {
        self.zk().get_data_w(path, w)
    }

    /// Conditional write when `version` is given; `BadVersion` when someone wrote in between.
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> ZkResult<Stat> {
        self.zk().set_data(path, data, version)
    }

    pub fn get_children(&self, path: &str) -> ZkResult<Vec<String>> {
        self.zk().get_children(path, false)
    }

    pub fn get_children_w<W: Fn(WatchedEvent) + Send + 'static>(
        &self,
        path: &str,
        w: W,
    ) -> ZkResult<Vec<String>> {
        self.zk().get_children_w(path, w)
    }

    pub fn delete(&self, path: &str, version: Option<i32>) -> ZkResult<()> {
        self.zk().delete(path, version)
    }

    /// Deletes `path` and everything below it.
    pub fn delete_recursive(&self, path: &str) -> ZkResult<()> {
        let zk = self.zk();
        match zk.get_children(path, false) {
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
        let _ = self.zk().close();
    }

    /// Opens a new handle (a new session) until one connects, then restores our state. A
    /// handle not connected yet is asked again, not replaced, while the crate still tries to
    /// connect it: a dropped handle's I/O thread goes on connecting by itself, and the session
    /// it opens once ZooKeeper is back lives on, unused. (The chaos run's harness gathered 51
    /// such sessions over ZooKeeper restarts; past ZooKeeper's 60 connections from one
    /// address, a restarted broker could not connect at all.)
    fn replace_session(&self) {
        let mut backoff = Duration::from_millis(100);
        let mut pending: Option<(Handle, Probe)> = None;
        // Handles left waiting on a server that never answered, each with its one probe
        // thread, until their connection breaks. Each one stuck doubles the wait on the next
        // (up to `MAX_PATIENCE`): a hung ZooKeeper costs a few threads and connections an
        // hour, not one per patience period, and a recovered one is still reached.
        let mut stuck: Vec<(Handle, Probe)> = Vec::new();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            // One that has come unstuck and answers is as good as a new one.
            if let Some(i) = stuck
                .iter_mut()
                .position(|(_, p)| !p.is_stuck() && p.answers_within(Duration::ZERO).is_ok())
            {
                let (h, _) = stuck.swap_remove(i);
                self.adopt(h.zk);
                break;
            }
            stuck.retain(|(_, p)| p.is_stuck());
            let (h, mut probe) = match pending.take() {
                Some((h, p)) if !h.given_up.load(Ordering::Acquire) => (h, p),
                _ => {
                    let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
                    match new_handle(
                        &self.connect_string,
                        self.session_timeout,
                        generation,
                        &self.events,
                    ) {
                        Ok(h) => {
                            let p = Probe::new(h.zk.clone());
                            (h, p)
                        }
                        Err(e) => {
                            log::warn!("cannot open a zookeeper handle ({e:?})");
                            std::thread::sleep(backoff);
                            continue;
                        }
                    }
                }
            };
            let wait = (patience(self.session_timeout) * 2u32.pow(stuck.len().min(8) as u32))
                .min(MAX_PATIENCE);
            match probe.answers_within(wait) {
                Ok(()) => {
                    self.adopt(h.zk);
                    break;
                }
                // A connection that a server took and never answers stays stuck: the handle
                // waits with its probe, and another one is opened (up to `MAX_STUCK`).
                Err(ZkError::OperationTimeout) => {
                    log::warn!(
                        "zookeeper did not answer within {wait:?}; opening another connection"
                    );
                    stuck.push((h, probe));
                }
                Err(e) => {
                    log::warn!("zookeeper reconnect failed ({e:?}); retrying in {backoff:?}");
                    pending = Some((h, probe));
                }
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
        self.stats.connected();
        self.on_new_session();
    }

    /// Makes `zk` the handle everyone uses, closing the one it replaces.
    fn adopt(&self, zk: Arc<ZooKeeper>) {
        let old = std::mem::replace(&mut *self.handle.write(), zk);
        let _ = old.close();
    }

    /// True when every ephemeral node of ours is still owned by the session we know.
    fn session_survived(&self) -> bool {
        let mine = self.session_id.load(Ordering::Acquire);
        let eph: Vec<String> = self
            .ephemerals
            .lock()
            .iter()
            .map(|e| e.path.clone())
            .collect();
        !eph.is_empty()
            && eph
                .iter()
                .all(|p| matches!(self.exists(p), Ok(Some(s)) if s.ephemeral_owner == mine))
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
    /// watches with it (a restarted server has none at all), and this library does not send
    /// them again (Java's client sends SetWatches), so every owner of watches must set them
    /// again and read what changed meanwhile, exactly as after a new session.
    fn on_reconnect(&self) {
        log::info!("zookeeper reconnected in the same session; watches must be set again");
        for l in self.live_listeners() {
            l.handle_new_session();
        }
    }

    /// Restores our ephemeral nodes in the new session, then tells the listeners. When
    /// ZooKeeper fails us midway it gives up for now (a few tries with backoff) and leaves
    /// `needs_restore` set: the session thread must stay free to see the next state change.
    fn on_new_session(&self) {
        log::info!("zookeeper session re-established; restoring ephemeral nodes and watches");
        self.needs_restore.store(true, Ordering::Release);
        self.session_id.store(0, Ordering::Release);
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
            while let Err(e) = self.create_ephemeral_once(&path, &data, self.session_timeout * 2) {
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

fn ensure_path_on(zk: &ZooKeeper, path: &str) -> ZkResult<()> {
    let mut cur = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        cur.push('/');
        cur.push_str(part);
        match zk.create(
            &cur,
            Vec::new(),
            Acl::open_unsafe().clone(),
            CreateMode::Persistent,
        ) {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn session_loop(client: Weak<ZkClient>, events: Receiver<(u64, ZkState)>) {
    let mut suspect = false;
    let mut unreachable_since: Option<Instant> = None;
    let mut last_probe = Instant::now();
    let mut probe: Option<Probe> = None;
    loop {
        let event = events.recv_timeout(Duration::from_secs(1));
        let Some(c) = client.upgrade() else { return };
        if c.closed.load(Ordering::Acquire) {
            return;
        }
        // After a ZooKeeper restart the library's handle can stay unusable without ever
        // reporting Closed. Past the session timeout our session is gone on the server anyway:
        // say so (leaders step down) and open a new one. Probed at most once a second.
        if last_probe.elapsed() >= Duration::from_secs(1) {
            last_probe = Instant::now();
            let zk = c.zk();
            let p = match probe.take() {
                Some(p) if p.is_for(&zk) => probe.insert(p),
                _ => probe.insert(Probe::new(zk)),
            };
            match p.answers_within(patience(c.session_timeout)) {
                Ok(()) => unreachable_since = None,
                Err(e) => {
                    let since = *unreachable_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > c.session_timeout {
                        log::warn!(
                            "zookeeper unusable for {:?} ({e:?}); opening a new session",
                            since.elapsed()
                        );
                        unreachable_since = None;
                        suspect = false;
                        c.notify_session_lost();
                        c.replace_session();
                        continue;
                    }
                }
            }
        }
        let (generation, state) = match event {
            Ok(e) => e,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                // A restore that ZooKeeper interrupted is tried again, even if no new state
                // change comes to prompt it.
                if c.needs_restore.load(Ordering::Acquire) {
                    c.on_new_session();
                }
                continue;
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        if generation != c.generation.load(Ordering::Acquire) {
            continue;
        }
        #[allow(deprecated)]
        match state {
            ZkState::Closed => {
                log::warn!("zookeeper session closed by the client library; opening a new one");
                suspect = false;
                c.notify_session_lost();
                c.replace_session();
            }
            // A read error goes straight from Connected to Connecting, a hang-up through
            // NotConnected: either way the connection was lost.
            ZkState::NotConnected | ZkState::Connecting => {
                suspect = true;
                c.stats.disconnected();
            }
            ZkState::Connected | ZkState::ConnectedReadOnly if suspect => {
                suspect = false;
                if c.session_survived() {
                    c.stats.connected();
                    c.on_reconnect();
                } else {
                    c.stats.expired();
                    c.stats.connected();
                    c.on_new_session();
                }
            }
            _ => {}
        }
    }
}
