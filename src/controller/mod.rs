//! The controller (spec sections A, B, D): elected through `/controller`, it decides every
//! partition's leader and ISR and tells the brokers.
//!
//! Thread model: ZooKeeper watches (broker list, topic list, admin paths) and the election
//! only put `Event`s on one channel; one `controller-event` thread handles them in order and is
//! the only code that touches the `ControllerContext`. Commands to brokers leave through one
//! sender thread per broker (`channel_manager`). Losing the ZooKeeper session resigns at once:
//! the election's `on_resigned` arrives as an event, the context is dropped and the senders
//! stop, so a deposed controller sends nothing more. An event it was in the middle of when the
//! session was lost writes nothing: leaderAndISR nodes are written only in the session that won
//! the election (`leader_and_isr::in_session`).

pub mod alter_reassignments;
pub mod broker_change;
pub mod channel_manager;
pub mod context;
pub mod elect_leaders;
pub mod election_rules;
pub mod failover;
pub mod isr_change;
pub mod leader_and_isr;
pub mod leader_balance;
pub mod reassignment;
pub mod shutdown;
pub mod topic_change;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use parking_lot::Mutex;

use crate::protocol::ErrorCode;
use crate::protocol::TopicPartition;
use crate::zk::{ElectionListener, ZkClient, ZkElection, paths};
use channel_manager::{CommandBatch, ControllerChannelManager};
use context::ControllerContext;

/// How long a ControlledShutdown request waits for the controller thread.
const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Each partition's outcome of an admin request the controller carries out: `Ok`, or the
/// error and why.
pub type PartitionOutcomes = Vec<(TopicPartition, Result<(), (ErrorCode, String)>)>;

pub enum Event {
    /// Won the election in this ZooKeeper session, the one that holds `/controller` and the
    /// only one the term writes in.
    Elected(i64),
    Resigned,
    BrokerChange,
    TopicChange,
    /// A topic's assignment was rewritten: partitions added (or a reassignment's new list).
    PartitionsChange(String),
    ReassignPartitions,
    PreferredReplicaElection,
    IsrChange,
    /// A broker asks to shut down; the reply lists partitions it still leads (None: not live).
    ControlledShutdown(i32, Sender<Option<Vec<TopicPartition>>>),
    /// Admin requests the controller carries out: ElectLeaders, AlterPartitionReassignments,
    /// ListPartitionReassignments.
    ElectLeaders(elect_leaders::ElectLeaders),
    AlterReassignments(alter_reassignments::AlterReassignments),
    ListReassignments(alter_reassignments::ListReassignments),
    /// `leader.imbalance.check.interval.seconds` passed (`leader_balance`).
    CheckLeaderImbalance,
    /// `unclean.leader.election.enable` changed (dynamic broker configuration).
    UncleanLeaderElection(bool),
    Stop,
}

/// Everything the event thread owns.
pub struct ControllerState {
    pub broker_id: i32,
    pub zk: Arc<ZkClient>,
    pub ctx: ControllerContext,
    pub channels: ControllerChannelManager,
    /// For watches to feed the event queue.
    pub events: Sender<Event>,
    pub unclean_leader_election: bool,
    /// The automatic leader rebalance's settings.
    pub leader_balance: crate::config::LeaderBalance,
    /// `inter.broker.listener.name`: how brokers are reached.
    pub inter_broker_listener: String,
    /// True between Elected and Resigned.
    active: bool,
    stats: Arc<ControllerStats>,
}

/// What the active controller sees of the cluster, published after every event for the
/// metrics (zero on a broker that is not controller, as in Kafka).
#[derive(Default)]
pub struct ControllerStats {
    pub offline_partitions: AtomicUsize,
    pub partitions: AtomicUsize,
    pub topics: AtomicUsize,
}

impl ControllerState {
    fn handle(&mut self, ev: Event) -> crate::zk::ZkResult<()> {
        match ev {
            Event::Elected(session) => {
                self.active = true;
                self.on_controller_failover(session)?;
            }
            Event::Resigned => self.resign(),
            Event::ControlledShutdown(id, reply) => {
                let mut batch = CommandBatch::default();
                let r = if self.active {
                    self.on_controlled_shutdown(id, &mut batch)?
                } else {
                    None
                };
                batch.send(&self.ctx, &self.channels, self.broker_id);
                let _ = reply.send(r);
            }
            Event::ElectLeaders(e) => {
                let (election, partitions) = (e.election, e.partitions);
                self.answer_admin(&e.reply, |s, b| s.on_elect_leaders(election, partitions, b))?
            }
            Event::AlterReassignments(a) => {
                let (targets, allow) = (a.targets, a.allow_replication_factor_change);
                self.answer_admin(&a.reply, |s, b| s.on_alter_reassignments(targets, allow, b))?
            }
            Event::ListReassignments(l) => {
                let partitions = l.partitions;
                self.answer_admin(&l.reply, |s, _| Ok(s.on_list_reassignments(partitions)))?
            }
            Event::UncleanLeaderElection(enabled) => {
                let turned_on = enabled && !self.unclean_leader_election;
                self.unclean_leader_election = enabled;
                // As Kafka's controller: once allowed, offline partitions get a leader now,
                // not at the next broker change.
                if turned_on && self.active {
                    let mut batch = CommandBatch::default();
                    self.on_broker_change(&mut batch)?;
                    batch.send(&self.ctx, &self.channels, self.broker_id);
                }
            }
            // Watches of an earlier term may still fire: ignored unless we are controller.
            _ if !self.active => {}
            ev => {
                let mut batch = CommandBatch::default();
                match ev {
                    Event::BrokerChange => self.on_broker_change(&mut batch)?,
                    Event::TopicChange => self.on_topic_change(&mut batch)?,
                    Event::PartitionsChange(t) => self.on_partitions_change(&t, &mut batch)?,
                    Event::ReassignPartitions => self.on_partitions_reassigned(&mut batch)?,
                    Event::PreferredReplicaElection => {
                        self.on_preferred_replica_election(&mut batch)?
                    }
                    Event::IsrChange => self.on_isr_change(&mut batch)?,
                    Event::CheckLeaderImbalance => self.on_leader_imbalance_check(&mut batch)?,
                    _ => unreachable!("handled above"),
                }
                batch.send(&self.ctx, &self.channels, self.broker_id);
            }
        }
        Ok(())
    }

    /// Carries out an admin request on the event thread, sends its commands and gives the
    /// client its answer: NOT_CONTROLLER when this broker no longer is; UNKNOWN_SERVER_ERROR
    /// when ZooKeeper failed mid-way, the error going on to the event loop.
    fn answer_admin<T>(
        &mut self,
        reply: &Sender<Result<T, ErrorCode>>,
        decide: impl FnOnce(&mut Self, &mut CommandBatch) -> crate::zk::ZkResult<T>,
    ) -> crate::zk::ZkResult<()> {
        if !self.active {
            let _ = reply.send(Err(ErrorCode::NotController));
            return Ok(());
        }
        let mut batch = CommandBatch::default();
        let r = decide(self, &mut batch);
        batch.send(&self.ctx, &self.channels, self.broker_id);
        match r {
            Ok(v) => {
                let _ = reply.send(Ok(v));
                Ok(())
            }
            Err(e) => {
                let _ = reply.send(Err(ErrorCode::UnknownServerError));
                Err(e)
            }
        }
    }

    /// Offline: no leader, or a leader that is not live.
    fn publish_stats(&self) {
        let ctx = &self.ctx;
        let offline = ctx
            .assignments
            .keys()
            .filter(|tp| {
                ctx.leaders
                    .get(*tp)
                    .is_none_or(|(l, _)| !ctx.live_brokers.contains_key(&l.leader))
            })
            .count();
        let s = &self.stats;
        s.offline_partitions.store(offline, Ordering::Relaxed);
        s.partitions.store(ctx.assignments.len(), Ordering::Relaxed);
        s.topics.store(ctx.topics().len(), Ordering::Relaxed);
    }

    fn resign(&mut self) {
        if self.active {
            log::info!(
                "[Controller {} epoch {}] resigned",
                self.broker_id,
                self.ctx.epoch
            );
        }
        self.active = false;
        self.channels.shutdown();
        self.ctx = ControllerContext::default();
    }
}

/// Bridges the election's callbacks onto the event queue.
struct ElectionBridge {
    events: Sender<Event>,
    zk: Arc<ZkClient>,
}

impl ElectionListener for ElectionBridge {
    fn on_elected(&self) {
        let _ = self.events.send(Event::Elected(self.zk.session_id()));
    }
    fn on_resigned(&self) {
        let _ = self.events.send(Event::Resigned);
    }
}

pub struct KafkaController {
    broker_id: i32,
    zk: Arc<ZkClient>,
    events: Sender<Event>,
    bridge: Arc<ElectionBridge>,
    election: Mutex<Option<Arc<ZkElection>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    pub stats: Arc<ControllerStats>,
}

impl KafkaController {
    /// Starts the event thread; `startup` then enters the election.
    /// `inter_broker_listener`: the listener the controller dials brokers on and names as
    /// leaders to followers (`inter.broker.listener.name`).
    pub fn new(
        broker_id: i32,
        zk: Arc<ZkClient>,
        unclean_leader_election: bool,
        leader_balance: crate::config::LeaderBalance,
        inter_broker_listener: String,
        socket_timeout: std::time::Duration,
        security: crate::network::ClientSecurity,
    ) -> Arc<KafkaController> {
        let (tx, rx) = unbounded();
        let stats = Arc::new(ControllerStats::default());
        let mut state = ControllerState {
            broker_id,
            zk: zk.clone(),
            ctx: ControllerContext::default(),
            channels: ControllerChannelManager::new(broker_id, socket_timeout, security),
            events: tx.clone(),
            unclean_leader_election,
            leader_balance,
            inter_broker_listener,
            active: false,
            stats: stats.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("controller-event-{broker_id}"))
            .spawn(move || event_loop(&mut state, rx))
            .expect("spawn controller event thread");
        let bridge = Arc::new(ElectionBridge {
            events: tx.clone(),
            zk: zk.clone(),
        });
        Arc::new(KafkaController {
            broker_id,
            zk,
            events: tx,
            bridge,
            election: Mutex::new(None),
            thread: Mutex::new(Some(thread)),
            stats,
        })
    }

    /// `unclean.leader.election.enable` as the broker's configuration now says.
    pub fn set_unclean_leader_election(&self, enabled: bool) {
        let _ = self.events.send(Event::UncleanLeaderElection(enabled));
    }

    /// Enters the election on `/controller`.
    pub fn startup(&self) {
        let listener: Arc<dyn ElectionListener> = self.bridge.clone();
        let e = ZkElection::start(
            self.zk.clone(),
            paths::CONTROLLER,
            self.broker_id,
            Arc::downgrade(&listener),
        );
        *self.election.lock() = Some(e);
    }

    pub fn is_controller(&self) -> bool {
        self.election.lock().as_ref().is_some_and(|e| e.is_leader())
    }

    /// Runs a controlled shutdown of `broker` on the event thread.
    pub fn controlled_shutdown(&self, broker: i32) -> Result<Vec<TopicPartition>, ErrorCode> {
        let (tx, rx) = bounded(1);
        let _ = self.events.send(Event::ControlledShutdown(broker, tx));
        match rx.recv_timeout(CONTROLLED_SHUTDOWN_TIMEOUT) {
            Ok(Some(remaining)) => Ok(remaining),
            Ok(None) => Err(ErrorCode::BrokerNotAvailable),
            Err(_) => Err(ErrorCode::RequestTimedOut),
        }
    }

    /// Runs an ElectLeaders request on the event thread, waiting at most `timeout`.
    pub fn elect_leaders(
        &self,
        election: elect_leaders::ElectionType,
        partitions: Option<Vec<TopicPartition>>,
        timeout: Duration,
    ) -> Result<PartitionOutcomes, ErrorCode> {
        self.ask(timeout, |reply| {
            Event::ElectLeaders(elect_leaders::ElectLeaders {
                election,
                partitions,
                reply,
            })
        })
    }

    /// Starts, retargets (`Some`) or cancels (`None`) partitions' moves on the event thread.
    pub fn alter_reassignments(
        &self,
        targets: Vec<(TopicPartition, Option<Vec<i32>>)>,
        allow_replication_factor_change: bool,
        timeout: Duration,
    ) -> Result<PartitionOutcomes, ErrorCode> {
        self.ask(timeout, |reply| {
            Event::AlterReassignments(alter_reassignments::AlterReassignments {
                targets,
                allow_replication_factor_change,
                reply,
            })
        })
    }

    /// The moves in progress (of `partitions`, or all), from the event thread.
    pub fn list_reassignments(
        &self,
        partitions: Option<Vec<TopicPartition>>,
        timeout: Duration,
    ) -> Result<alter_reassignments::Ongoing, ErrorCode> {
        self.ask(timeout, |reply| {
            Event::ListReassignments(alter_reassignments::ListReassignments { partitions, reply })
        })
    }

    /// Puts an admin request on the event queue and waits at most `timeout` for its answer.
    fn ask<T>(
        &self,
        timeout: Duration,
        event: impl FnOnce(Sender<Result<T, ErrorCode>>) -> Event,
    ) -> Result<T, ErrorCode> {
        let (reply, rx) = bounded(1);
        let _ = self.events.send(event(reply));
        rx.recv_timeout(timeout)
            .map_err(|_| ErrorCode::RequestTimedOut)?
    }

    /// Leaves the election (deleting `/controller` if held) and stops the event thread.
    pub fn shutdown(&self) {
        if let Some(e) = self.election.lock().take() {
            e.stop();
        }
        let _ = self.events.send(Event::Stop);
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }
}

fn event_loop(state: &mut ControllerState, rx: Receiver<Event>) {
    // The leader imbalance check is the one event no watch sends: the loop makes it when its
    // interval passes without one.
    let interval = state.leader_balance.check_interval;
    let mut next_check = interval.map(|i| std::time::Instant::now() + i);
    loop {
        let ev = match next_check {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => rx.recv_deadline(at),
        };
        let ev = match ev {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                next_check = interval.map(|i| std::time::Instant::now() + i);
                Event::CheckLeaderImbalance
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if matches!(ev, Event::Stop) {
            state.resign();
            return;
        }
        if let Err(e) = state.handle(ev) {
            // A ZooKeeper error mid-decision: the session is probably going; the election will
            // resign and re-elect, and failover re-reads everything.
            log::error!(
                "[Controller {}] ZooKeeper error while handling an event: {e:?}",
                state.broker_id
            );
        }
        state.publish_stats();
    }
}
