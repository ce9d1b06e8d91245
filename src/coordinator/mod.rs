//! The consumer coordinator of `consumer-coordinator.txt`: one broker, elected through
//! `/consumers/coordinator`, owns every group's membership and rebalances.
//!
//! Every broker runs a `Coordinator` that takes part in the election. The winner starts a
//! `Term` (`coordinatorStartup`): the spec's state (`consumerGroupsPerTopic`,
//! `groupsWithWildcardTopics`, `groupsBeingRebalanced`, `rebalanceRequestQ`), a listener
//! thread that runs the four ZooKeeper listeners, and the `RebalanceRequestHandler` thread.
//! Losing the election or the session ends the term: its threads stop, its consumer
//! connections close (the consumers consult again), and a later election starts a fresh term.
//!
//! Threads per term: `coordinator-listeners` (ZooKeeper watch callbacks only send it events,
//! so the ZooKeeper event thread never blocks) and `rebalance-request-handler`. Each registered
//! consumer's connection thread runs that consumer's ping loop (`session`).

pub mod assignment;
mod group_admin;
pub mod group_protocol;
mod kafka_group;
mod kafka_rebalance;
mod listeners;
mod rebalance;
mod register;
pub mod session;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Weak, atomic::AtomicI64};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use parking_lot::Mutex;
use regex::Regex;

use crate::zk::paths::COORDINATOR;
use crate::zk::{ElectionListener, ZkClient, ZkElection};
use session::ConsumerSession;

pub use group_admin::SPEC_PROTOCOL_TYPE;
pub use register::valid_name;

#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// How long a rebalance waits for every StopResponse and every StartResponse.
    pub rebalance_timeout: Duration,
    /// First wait before a failed rebalance is tried again; doubles per failure, up to 32×.
    pub rebalance_backoff: Duration,
    /// Kafka-protocol groups: the session timeouts a JoinGroup may ask for
    /// (`group.min.session.timeout.ms`, `group.max.session.timeout.ms`).
    pub group_min_session_timeout: Duration,
    pub group_max_session_timeout: Duration,
    /// How long the first join of an empty group waits for more members
    /// (`group.initial.rebalance.delay.ms`).
    pub group_initial_rebalance_delay: Duration,
    /// The most members (and handed-out member ids) one group may have (`group.max.size`).
    pub group_max_size: usize,
}

pub struct Coordinator {
    broker_id: i32,
    zk: Arc<ZkClient>,
    config: CoordinatorConfig,
    elector: Mutex<Option<Arc<ZkElection>>>,
    term: Mutex<Option<Arc<Term>>>,
    /// Rebalances that ran steps 4.1–4.3, over all terms (for logs, tests and `perf`).
    rebalances: Arc<AtomicU64>,
}

impl Coordinator {
    pub fn new(broker_id: i32, zk: Arc<ZkClient>, config: CoordinatorConfig) -> Arc<Coordinator> {
        Arc::new(Coordinator {
            broker_id,
            zk,
            config,
            elector: Mutex::new(None),
            term: Mutex::new(None),
            rebalances: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Joins the election (`coordinatorElector`). Step 5 of coordinatorStartup, the session
    /// expiration listener, is the elector's: it tells us of a new session through
    /// `on_new_session` (handleNewSession), in order with its own resign and re-elect.
    pub fn startup(self: &Arc<Self>) {
        let me: Weak<Coordinator> = Arc::downgrade(self);
        let elector = ZkElection::start(
            self.zk.clone(),
            COORDINATOR,
            self.broker_id,
            me as Weak<dyn ElectionListener>,
        );
        *self.elector.lock() = Some(elector);
    }

    pub fn is_coordinator(&self) -> bool {
        self.term.lock().is_some()
    }

    /// Rebalances run (steps 4.1–4.3) since this broker started.
    pub fn rebalance_count(&self) -> u64 {
        self.rebalances.load(Ordering::Acquire)
    }

    /// Leaves the election and ends the term, closing every consumer connection.
    pub fn shutdown(&self) {
        if let Some(e) = self.elector.lock().take() {
            e.stop();
        }
        self.end_term("shutting down");
    }

    fn current_term(&self) -> Option<Arc<Term>> {
        self.term.lock().clone()
    }

    /// coordinatorStartup: runs when this broker wins the election.
    fn coordinator_startup(&self) {
        let term = Term::new(self);
        *self.term.lock() = Some(term.clone());
        log::info!(
            "[Coordinator {}] elected; reading groups and topics",
            self.broker_id
        );
        if let Err(e) = term.startup() {
            log::error!(
                "[Coordinator {}] startup failed reading ZooKeeper: {e:?}; resigning",
                self.broker_id
            );
            self.end_term("startup failed");
            if let Some(el) = self.elector.lock().as_ref() {
                el.resign_and_retry();
            }
        }
    }

    fn end_term(&self, why: &str) {
        if let Some(t) = self.term.lock().take() {
            log::info!(
                "[Coordinator {}] no longer coordinator: {why}",
                self.broker_id
            );
            t.end();
        }
    }
}

impl ElectionListener for Coordinator {
    fn on_elected(&self) {
        self.coordinator_startup();
    }

    fn on_resigned(&self) {
        self.end_term("lost the election");
    }

    /// handleNewSession. The elector calls it on its own thread between resigning and electing
    /// again, so it cannot race the next term's startup.
    fn on_new_session(&self) {
        // step 1: reset the state (consumerGroupsPerTopic, groupsWithWildcardTopics, the queue…):
        // it all lives in the term, which ends here (if resigning has not ended it already).
        self.end_term("ZooKeeper session replaced");
        // step 2: re-register the session expiration listener — nothing to do: `ZkClient`, unlike
        // Kafka's ZkClient, keeps its session listeners after they fire.
        // step 3: try to be elected again — the elector does, as soon as this returns.
    }
}

/// What a ZooKeeper watch reports to the listener thread. The variants are named after the
/// spec's four listeners.
#[allow(clippy::enum_variant_names)]
#[derive(Debug)]
enum ListenerEvent {
    GroupChange,
    GroupMemberChange(String),
    TopicChange,
    TopicPartitionChange(String),
}

/// One term as coordinator: the spec's state, and the threads that act on it.
pub(crate) struct Term {
    broker_id: i32,
    zk: Arc<ZkClient>,
    config: CoordinatorConfig,
    /// Our ZooKeeper session when the term began: member nodes owned by another session were
    /// left by an earlier coordinator.
    session_id: AtomicI64,
    ended: AtomicBool,
    /// Set once startup has read every group: before that, Kafka-protocol requests get
    /// COORDINATOR_LOAD_IN_PROGRESS.
    loaded: AtomicBool,
    consumer_groups_per_topic: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// The spec's `groupsWithWildcardTopics`, with each group's compiled patterns.
    groups_with_wildcard_topics: Mutex<BTreeMap<String, Vec<Regex>>>,
    groups_being_rebalanced: Mutex<HashMap<String, Arc<AtomicBool>>>,
    rebalance_request_q: Sender<String>,
    request_q_rx: Receiver<String>,
    known_topics: Mutex<BTreeSet<String>>,
    known_groups: Mutex<BTreeSet<String>>,
    /// group → consumer id → its live session.
    sessions: Mutex<BTreeMap<String, BTreeMap<String, Arc<ConsumerSession>>>>,
    /// The Kafka-protocol groups: a group is in here or has spec-protocol sessions, not both.
    kafka_groups: Mutex<HashMap<String, Arc<kafka_group::KafkaGroup>>>,
    events: Sender<ListenerEvent>,
    events_rx: Receiver<ListenerEvent>,
    /// Dropped when the term ends, which wakes and stops both threads.
    stop: Mutex<Option<Sender<()>>>,
    stop_rx: Receiver<()>,
    rebalances: Arc<AtomicU64>,
}

impl Term {
    fn new(c: &Coordinator) -> Arc<Term> {
        let (q_tx, q_rx) = unbounded();
        let (ev_tx, ev_rx) = unbounded();
        let (stop_tx, stop_rx) = bounded(0);
        Arc::new(Term {
            broker_id: c.broker_id,
            zk: c.zk.clone(),
            config: c.config.clone(),
            session_id: AtomicI64::new(c.zk.session_id()),
            ended: AtomicBool::new(false),
            loaded: AtomicBool::new(false),
            consumer_groups_per_topic: Mutex::new(BTreeMap::new()),
            groups_with_wildcard_topics: Mutex::new(BTreeMap::new()),
            groups_being_rebalanced: Mutex::new(HashMap::new()),
            rebalance_request_q: q_tx,
            request_q_rx: q_rx,
            known_topics: Mutex::new(BTreeSet::new()),
            known_groups: Mutex::new(BTreeSet::new()),
            sessions: Mutex::new(BTreeMap::new()),
            kafka_groups: Mutex::new(HashMap::new()),
            events: ev_tx,
            events_rx: ev_rx,
            stop: Mutex::new(Some(stop_tx)),
            stop_rx,
            rebalances: c.rebalances.clone(),
        })
    }

    fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Stops the threads, closes every consumer session and removes the member nodes this
    /// term created, so the next coordinator starts from consumers that register with it.
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.stop.lock().take();
        self.end_kafka_groups();
        let sessions: Vec<_> = std::mem::take(&mut *self.sessions.lock())
            .into_values()
            .flat_map(|m| m.into_values())
            .collect();
        for s in sessions {
            s.close();
            self.delete_member_node(&s);
        }
    }

    fn delete_member_node(&self, s: &ConsumerSession) {
        let path = crate::zk::groups::consumer_path(&s.group, &s.consumer_id);
        let mine = self.session_id.load(Ordering::Acquire);
        if let Ok(Some(stat)) = self.zk.exists(&path)
            && stat.ephemeral_owner == mine
        {
            let _ = self.zk.delete_if_exists(&path);
        }
    }

    /// "Try to request rebalance": enqueue the group unless a request for it is already
    /// pending; the flag collapses any number of requests into one.
    fn try_request_rebalance(&self, group: &str) {
        let flag = self
            .groups_being_rebalanced
            .lock()
            .entry(group.to_owned())
            .or_insert_with(|| Arc::new(AtomicBool::new(false)))
            .clone();
        if flag
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let _ = self.rebalance_request_q.send(group.to_owned());
        }
    }

    /// Puts `group` in the queue with its flag set, whatever the flag was (startup step 2.3,
    /// GroupChangeListener step 5).
    fn request_rebalance(&self, group: &str) {
        let fresh = Arc::new(AtomicBool::new(true));
        let old = self
            .groups_being_rebalanced
            .lock()
            .insert(group.to_owned(), fresh);
        // A request already queued under the old flag will run anyway: do not queue twice.
        if !old.is_some_and(|f| f.load(Ordering::Acquire)) {
            let _ = self.rebalance_request_q.send(group.to_owned());
        }
    }

    /// Whether `group` has spec-protocol members here (without copying their sessions).
    fn has_sessions(&self, group: &str) -> bool {
        self.sessions
            .lock()
            .get(group)
            .is_some_and(|m| !m.is_empty())
    }

    fn sessions_of(&self, group: &str) -> BTreeMap<String, Arc<ConsumerSession>> {
        self.sessions.lock().get(group).cloned().unwrap_or_default()
    }
}
