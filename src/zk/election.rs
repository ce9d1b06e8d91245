//! `ZkElection`: leader election on one ephemeral node, used for `/controller` and
//! `/consumers/coordinator`.
//!
//! Whoever creates the node leads. Everyone else watches it; when it is deleted they try again.
//! When our session is replaced, we resign at once (the node died with the session) and try
//! again in the new session. After a reconnection in the same session we do the same: our
//! watches are gone, and a leader's owner re-reads everything and sets them again as it takes
//! up the role (our node survived, so we win again). The tries run on the election's own thread, fed by a channel, so
//! ZooKeeper's event thread never blocks on our callbacks.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::zk::{WatchedEventType, ZkError};
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::client::{SessionListener, ZkClient};
use super::paths::{ElectedBroker, elected_broker, from_json};

/// The owner of an election: told when this broker wins and when it stops leading.
pub trait ElectionListener: Send + Sync {
    fn on_elected(&self);
    fn on_resigned(&self);
    /// A new ZooKeeper session replaced ours: called after `on_resigned` and before the
    /// election is tried again, on the election's thread, so it never races either.
    fn on_new_session(&self) {}
}

pub struct ZkElection {
    zk: Arc<ZkClient>,
    path: String,
    my_id: i32,
    /// Broker id of the current leader as last seen; -1 when unknown.
    leader: AtomicI32,
    is_leader: AtomicBool,
    listener: Weak<dyn ElectionListener>,
    triggers: Sender<Trigger>,
}

enum Trigger {
    Elect,
    NewSession,
    Stop,
}

impl ZkElection {
    pub fn start(
        zk: Arc<ZkClient>,
        path: &str,
        my_id: i32,
        listener: Weak<dyn ElectionListener>,
    ) -> Arc<ZkElection> {
        let (tx, rx) = unbounded();
        let e = Arc::new(ZkElection {
            zk: zk.clone(),
            path: path.to_owned(),
            my_id,
            leader: AtomicI32::new(-1),
            is_leader: AtomicBool::new(false),
            listener,
            triggers: tx.clone(),
        });
        zk.add_session_listener(Arc::downgrade(&e) as Weak<dyn SessionListener>);
        let weak = Arc::downgrade(&e);
        std::thread::Builder::new()
            .name(format!("elector{path}"))
            .spawn(move || election_loop(weak, rx))
            .expect("spawn elector thread");
        let _ = tx.send(Trigger::Elect);
        e
    }

    pub fn is_leader(&self) -> bool {
        self.is_leader.load(Ordering::Acquire)
    }

    /// The leader's broker id as last seen, -1 when none.
    pub fn leader(&self) -> i32 {
        self.leader.load(Ordering::Acquire)
    }

    /// Gives up leadership (deleting the node) and stops taking part.
    pub fn stop(&self) {
        let _ = self.triggers.send(Trigger::Stop);
        if self.is_leader.swap(false, Ordering::AcqRel) {
            let _ = self.zk.delete(&self.path, None);
            if let Some(l) = self.listener.upgrade() {
                l.on_resigned();
            }
        }
    }

    /// Gives up a leadership the owner could not take up; the node's deletion fires the
    /// watches of every candidate, this one included, so the election runs again.
    pub fn resign_and_retry(&self) {
        if self.is_leader.swap(false, Ordering::AcqRel) {
            self.leader.store(-1, Ordering::Release);
            let _ = self.zk.delete(&self.path, None);
        }
    }

    /// One try: create the node, or watch whoever holds it.
    fn elect(&self) {
        let data = elected_broker(self.my_id);
        match self
            .zk
            .create_ephemeral_once(&self.path, &data, Duration::ZERO)
        {
            Ok(()) => {
                self.leader.store(self.my_id, Ordering::Release);
                if !self.is_leader.swap(true, Ordering::AcqRel) {
                    log::info!("[broker {}] elected at {}", self.my_id, self.path);
                    if let Some(l) = self.listener.upgrade() {
                        l.on_elected();
                    }
                }
                self.watch();
            }
            Err(ZkError::NodeExists) => {
                if let Ok((d, _)) = self.zk.get_data(&self.path)
                    && let Ok(e) = from_json::<ElectedBroker>(&self.path, &d)
                {
                    self.leader.store(e.brokerid, Ordering::Release);
                }
                if !self.watch() {
                    let _ = self.triggers.send(Trigger::Elect);
                }
            }
            Err(e) => {
                log::warn!(
                    "[broker {}] election at {} failed: {e:?}",
                    self.my_id,
                    self.path
                );
            }
        }
    }

    /// Watches the node; returns false when it is already gone.
    fn watch(&self) -> bool {
        let tx = self.triggers.clone();
        let res = self.zk.exists_w(&self.path, move |ev| {
            if ev.event_type == WatchedEventType::NodeDeleted {
                let _ = tx.send(Trigger::Elect);
            }
        });
        matches!(res, Ok(Some(_)))
    }

    fn resign_for_new_session(&self) {
        if self.is_leader.swap(false, Ordering::AcqRel) {
            log::warn!(
                "[broker {}] ZooKeeper session replaced or reconnected: no longer leader at {} until elected again",
                self.my_id,
                self.path
            );
            if let Some(l) = self.listener.upgrade() {
                l.on_resigned();
            }
        }
        self.leader.store(-1, Ordering::Release);
    }
}

impl SessionListener for ZkElection {
    fn handle_session_lost(&self) {
        self.resign_for_new_session();
    }

    fn handle_new_session(&self) {
        let _ = self.triggers.send(Trigger::NewSession);
    }
}

fn election_loop(e: Weak<ZkElection>, rx: Receiver<Trigger>) {
    while let Ok(t) = rx.recv() {
        let Some(e) = e.upgrade() else { return };
        match t {
            Trigger::Stop => return,
            Trigger::NewSession => {
                e.resign_for_new_session();
                if let Some(l) = e.listener.upgrade() {
                    l.on_new_session();
                }
                e.elect();
            }
            Trigger::Elect => e.elect(),
        }
    }
}
