//! `ReplicaManager`: the partitions this broker hosts and what it does on the controller's
//! commands (spec section C), plus the leader's append and high-watermark bookkeeping.
//!
//! `state_change_lock` serialises controller commands so a LeaderAndIsr and a StopReplica for
//! the same partition cannot interleave; the partition map is an `RwLock` read by every
//! produce and fetch.

use super::replication_quota::ReplicationQuota;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use super::controller_epoch::ControllerEpoch;
use super::partition::{Partition, PartitionState, Role};
use super::purgatory::Purgatory;
use super::replica_fetcher::ReplicaFetcherManager;
use crate::config::BrokerConfig;
use crate::log::LogManager;
use crate::log::partition_log::BatchOutcome;
use crate::log::producer_state::ProducerError;
use crate::metrics::BrokerMetrics;
use crate::protocol::controller::{
    LeaderAndIsrRequest, PartitionErrorsResponse, StopReplicaRequest, TopicPartitionState,
};
use crate::protocol::message;
use crate::protocol::{BrokerInfo, ErrorCode};
use crate::zk::ZkClient;
use crate::zk::paths;

use crate::protocol::TopicPartition;

/// The protocol's answer to a batch the producer state refuses.
fn producer_error_code(e: ProducerError) -> ErrorCode {
    match e {
        ProducerError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequenceNumber,
        ProducerError::InvalidEpoch { .. } => ErrorCode::InvalidProducerEpoch,
        ProducerError::UnknownProducer => ErrorCode::UnknownProducerId,
        ProducerError::BehindRefused { code } => ErrorCode::from_code(code),
        // Retriable, and it makes the client look up the leader again while the batch before
        // comes (see the variant).
        ProducerError::AwaitingEarlierBatch => ErrorCode::NotLeaderForPartition,
    }
}

/// A validated produced set, as the leader appends it, with the number of offsets it takes.
pub enum Payload<'a> {
    /// Uncompressed magic 0/1 messages: offsets are written into the set in place.
    Plain(&'a mut [u8], u32),
    /// Held magic 0/1 compressed wrappers: stored as one wrapper rebuilt around our offsets.
    Compressed(message::Recompressed, u32),
    /// One format v2 batch: its base offset and our leader epoch are written in place (and
    /// the broker's clock when `append_time` is set).
    Batch {
        batch: &'a mut [u8],
        count: u32,
        append_time: Option<i64>,
    },
}

pub struct ReplicaManager {
    pub broker_id: i32,
    /// `min.insync.replicas` of topics without their own (dynamic: `reconfigure`).
    min_insync_replicas: std::sync::atomic::AtomicUsize,
    pub(super) replica_lag_time_max: Duration,
    pub log_manager: Arc<LogManager>,
    /// For the leader's conditional ISR writes.
    pub(super) zk: Arc<ZkClient>,
    pub fetchers: ReplicaFetcherManager,
    pub(super) partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    /// Newest controller epoch seen; commands from an older one are rejected.
    pub controller_epoch: ControllerEpoch,
    pub(super) state_change_lock: Mutex<()>,
    /// Counts of the parked requests, by kind (the requests wait in their partitions'
    /// watchers).
    pub purgatory: Purgatory,
    /// The partitions a lost ZooKeeper session fenced, until it is back (`session_fence`).
    pub(super) fenced: Mutex<Vec<Arc<Partition>>>,
    pub metrics: Arc<BrokerMetrics>,
    /// KIP-73's throttles: what this broker serves throttled followers as leader, and what
    /// its fetchers fetch for throttled replicas (`replication_quota`).
    pub leader_quota: Arc<ReplicationQuota>,
    pub follower_quota: Arc<ReplicationQuota>,
}

impl ReplicaManager {
    /// The broker's `min.insync.replicas`, for topics that do not set their own.
    pub(super) fn default_min_insync_replicas(&self) -> usize {
        self.min_insync_replicas
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes the broker's dynamic settings that replication reads.
    pub(super) fn reconfigure(&self, cfg: &BrokerConfig) {
        self.min_insync_replicas.store(
            cfg.min_insync_replicas,
            std::sync::atomic::Ordering::Relaxed,
        );
        self.fetchers.resize(cfg.num_replica_fetchers);
        self.leader_quota.set_bound(cfg.replication_rates.leader);
        self.follower_quota
            .set_bound(cfg.replication_rates.follower);
    }

    pub fn new(
        cfg: &BrokerConfig,
        log_manager: Arc<LogManager>,
        zk: Arc<ZkClient>,
        metrics: Arc<BrokerMetrics>,
    ) -> ReplicaManager {
        let r = &cfg.replication_rates;
        let follower_quota = Arc::new(ReplicationQuota::new(r.follower, r.windows));
        ReplicaManager {
            broker_id: cfg.broker_id,
            min_insync_replicas: cfg.min_insync_replicas.into(),
            replica_lag_time_max: cfg.replica_lag_time_max,
            log_manager,
            zk: zk.clone(),
            fetchers: ReplicaFetcherManager::new(cfg, follower_quota.clone()),
            partitions: RwLock::new(HashMap::new()),
            controller_epoch: ControllerEpoch::new(cfg.broker_id, zk.clone()),
            state_change_lock: Mutex::new(()),
            purgatory: Default::default(),
            fenced: Mutex::new(Vec::new()),
            metrics,
            leader_quota: Arc::new(ReplicationQuota::new(r.leader, r.windows)),
            follower_quota,
        }
    }

    pub fn get_partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .get(&TopicPartition::new(topic.to_owned(), partition))
            .cloned()
    }

    /// Spec C, on_LeaderAndISRCommand.
    pub fn on_leader_and_isr_command(&self, cmd: &LeaderAndIsrRequest) -> PartitionErrorsResponse {
        // Checked before the lock too: a newer epoch is confirmed in ZooKeeper, and no lock is
        // held across that read.
        let check = |what| {
            self.controller_epoch
                .check(cmd.controller_epoch, what, cmd.controller_id)
        };
        let checked = check("LeaderAndIsr");
        let _g = self.state_change_lock.lock();
        if let Err(e) = checked.and_then(|()| check("LeaderAndIsr")) {
            return PartitionErrorsResponse {
                error_code: e.code(),
                partitions: Vec::new(),
            };
        }
        // A command for an earlier incarnation of this broker (sent before the controller saw
        // us restart) describes a log we may no longer have: acting on it could make us
        // leader of a log truncated since. The controller sends our state anew once it sees
        // our registration.
        let mine = self.zk.session_id();
        if cmd.broker_epoch != -1 && cmd.broker_epoch != mine {
            log::warn!(
                "[Broker {}] LeaderAndIsr from controller {} is for broker epoch {:#x}, ours is {mine:#x}; refused",
                self.broker_id,
                cmd.controller_id,
                cmd.broker_epoch
            );
            return PartitionErrorsResponse {
                error_code: ErrorCode::StaleControllerEpoch.code(),
                partitions: Vec::new(),
            };
        }
        // step 1: the set of partitions set_p in the command.
        let set_p: HashSet<TopicPartition> = cmd
            .partition_states
            .iter()
            .map(|s| TopicPartition::new(s.topic.clone(), s.partition))
            .collect();
        let mut errors = Vec::new();
        let configs = self.read_topic_configs(cmd);
        // step 2: act on each partition P in set_p.
        for s in &cmd.partition_states {
            let code = match self.apply_partition_state(s, cmd.controller_id, &cmd.live_leaders) {
                Ok(()) => ErrorCode::None,
                Err(e) => e,
            };
            if let Some(p) = self.get_partition(&s.topic, s.partition) {
                if let Some(o) = configs.get(&s.topic) {
                    p.set_overrides(o.clone());
                }
                // What is parked here looks at the new role and epoch.
                p.watchers.wake_all();
            }
            errors.push((s.topic.clone(), s.partition, code.code()));
        }
        // step 3: with INIT, delete all local partitions not in set_p.
        if cmd.init {
            self.delete_partitions_not_in(&set_p);
        }
        PartitionErrorsResponse {
            error_code: 0,
            partitions: errors,
        }
    }

    fn apply_partition_state(
        &self,
        s: &TopicPartitionState,
        controller_id: i32,
        live_leaders: &[BrokerInfo],
    ) -> Result<(), ErrorCode> {
        let tag = format!("[Broker {} {}-{}]", self.broker_id, s.topic, s.partition);
        if !s.state.replicas.contains(&self.broker_id) {
            log::warn!(
                "{tag} LeaderAndIsr from controller {controller_id} names replicas {:?} without this broker; ignored",
                s.state.replicas
            );
            return Err(ErrorCode::UnknownTopicOrPartition);
        }
        let partition = self.get_or_create_partition(s)?;
        let mut st = partition.lock();
        if s.state.leader_epoch < st.leader_epoch {
            log::warn!(
                "{tag} ignoring leader epoch {} older than {}",
                s.state.leader_epoch,
                st.leader_epoch
            );
            return Err(ErrorCode::StaleControllerEpoch);
        }
        let was = st.role;
        // At the same leader epoch, a command whose zk version is older than ours was read
        // before this leader changed the ISR itself: its ISR and zk version are stale, and
        // taking them would undo that change here but not in ZooKeeper.
        let stale_isr =
            s.state.leader_epoch == st.leader_epoch && s.state.zk_version < st.zk_version;
        if stale_isr {
            log::info!(
                "{tag} keeping ISR {:?} (zk version {}) over the command's {:?} (zk version {})",
                st.isr,
                st.zk_version,
                s.state.isr,
                s.state.zk_version
            );
        } else {
            st.zk_version = s.state.zk_version;
            st.isr = s.state.isr.clone();
        }
        st.leader_epoch = s.state.leader_epoch;
        st.controller_epoch = s.state.controller_epoch;
        st.replicas = s.state.replicas.clone();
        if s.state.leader == self.broker_id {
            // step 2.1: asked to lead P and not leading it yet.
            if was != Role::Leader {
                // step 2.1.1: stop the fetcher to the current leader.
                self.fetchers
                    .remove_partition(&TopicPartition::new(s.topic.clone(), s.partition));
                // step 2.1.2: become the leader, remembering the zk version of the
                // leaderAndISR path (stored above) for later conditional ISR writes.
                st.role = Role::Leader;
                st.follower_leos.clear();
                // Every ISR member gets a full lag period to show it keeps up.
                let now = Instant::now();
                st.caught_up_at = st.isr.iter().map(|r| (*r, now)).collect();
                log::info!(
                    "{tag} became leader at epoch {} (zk version {}, isr {:?})",
                    st.leader_epoch,
                    st.zk_version,
                    st.isr
                );
            }
            // Our epoch begins at our log end (KIP-101), before anything is appended in it.
            partition.log.begin_leader_epoch(st.leader_epoch);
            partition.maybe_increment_high_watermark(&st);
        } else {
            // step 2.2: asked to follow L and not following L yet.
            let leader = s.state.leader;
            if was != Role::Follower(leader) {
                // step 2.2.1: stop the fetcher to the current leader.
                self.fetchers
                    .remove_partition(&TopicPartition::new(s.topic.clone(), s.partition));
                // step 2.2.2: become a follower of L: record L, and fetch from L from our
                // high watermark. What we hold above it is compared with L's log as it
                // arrives and cut only where it differs (or where L's log ends): cutting it
                // blindly lost acknowledged messages when L failed before we had fetched them
                // again (the chaos run, seed 1).
                st.role = Role::Follower(leader);
                st.follower_leos.clear();
                st.caught_up_at.clear();
                let leo = partition.log.log_end_offset();
                let hw = partition.high_watermark().min(leo);
                // Its watchers are woken once the command is applied.
                partition.store_high_watermark(hw);
                log::info!(
                    "{tag} became follower of {leader} at epoch {}; offsets {hw}..{leo} to be checked against it",
                    st.leader_epoch
                );
                match live_leaders.iter().find(|b| b.id == leader) {
                    Some(b) => self.fetchers.add_partition(b, partition.clone(), hw),
                    None if leader >= 0 => log::warn!(
                        "{tag} leader {leader} is not among the command's live leaders; not fetching"
                    ),
                    None => {}
                }
            }
        }
        Ok(())
    }

    fn get_or_create_partition(
        &self,
        s: &TopicPartitionState,
    ) -> Result<Arc<Partition>, ErrorCode> {
        if let Some(p) = self.get_partition(&s.topic, s.partition) {
            return Ok(p);
        }
        let log = self
            .log_manager
            .get_or_create(&s.topic, s.partition)
            .map_err(|e| {
                log::error!(
                    "[Broker {}] cannot create log {}-{}: {e}",
                    self.broker_id,
                    s.topic,
                    s.partition
                );
                ErrorCode::UnknownServerError
            })?;
        let hw = self.log_manager.checkpointed_high_watermark(&log);
        let p = Arc::new(Partition::new(
            &s.topic,
            s.partition,
            self.broker_id,
            log,
            hw,
            PartitionState {
                // A fresh replica is neither leader nor following anyone until the role is
                // applied; Follower(-1) refuses produce and consumer fetches meanwhile.
                role: Role::Follower(-1),
                leader_epoch: -1,
                zk_version: -1,
                controller_epoch: -1,
                isr: Vec::new(),
                replicas: Vec::new(),
                follower_leos: HashMap::new(),
                caught_up_at: HashMap::new(),
                pending_isr: None,
            },
            self.metrics.topic(&s.topic),
        ));
        self.partitions
            .write()
            .insert(TopicPartition::new(s.topic.clone(), s.partition), p.clone());
        Ok(p)
    }

    fn delete_partitions_not_in(&self, keep: &HashSet<TopicPartition>) {
        for log in self.log_manager.all() {
            let tp = TopicPartition::new(log.topic.clone(), log.partition);
            if !keep.contains(&tp) {
                log::info!(
                    "[Broker {}] INIT: deleting local partition {}-{} not in the command",
                    self.broker_id,
                    tp.topic,
                    tp.partition
                );
                self.remove_partition(&tp.topic, tp.partition, true);
            }
        }
    }

    fn remove_partition(&self, topic: &str, partition: i32, delete: bool) {
        self.fetchers
            .remove_partition(&TopicPartition::new(topic.to_owned(), partition));
        let mut parts = self.partitions.write();
        let removed = parts.remove(&TopicPartition::new(topic.to_owned(), partition));
        if delete
            && !parts
                .keys()
                .any(|TopicPartition { topic: t, .. }| t == topic)
        {
            self.metrics.forget_topic(topic);
        }
        drop(parts);
        // What is parked here finds the partition gone.
        if let Some(p) = removed {
            p.watchers.wake_all();
        }
        if delete && let Err(e) = self.log_manager.delete(topic, partition) {
            log::error!(
                "[Broker {}] deleting {topic}-{partition} failed: {e}",
                self.broker_id
            );
        }
    }

    /// Spec C, on_StopReplicaCommand.
    pub fn on_stop_replica_command(&self, cmd: &StopReplicaRequest) -> PartitionErrorsResponse {
        let check = |what| {
            self.controller_epoch
                .check(cmd.controller_epoch, what, cmd.controller_id)
        };
        let checked = check("StopReplica");
        let _g = self.state_change_lock.lock();
        if let Err(e) = checked.and_then(|()| check("StopReplica")) {
            return PartitionErrorsResponse {
                error_code: e.code(),
                partitions: Vec::new(),
            };
        }
        // step 1: the partitions of the command; step 2.1: delete each from local storage,
        // if present (or only stop serving it when delete_partitions is false).
        let mut errors = Vec::new();
        for TopicPartition { topic, partition } in &cmd.partitions {
            self.remove_partition(topic, *partition, cmd.delete_partitions);
            log::info!(
                "[Broker {} {topic}-{partition}] stopped replica (delete={})",
                self.broker_id,
                cmd.delete_partitions
            );
            errors.push((topic.clone(), *partition, 0));
        }
        PartitionErrorsResponse {
            error_code: 0,
            partitions: errors,
        }
    }

    /// Appends a validated set as leader (Produce). Refused with NOT_LEADER_FOR_PARTITION when
    /// not leading, and with NOT_ENOUGH_REPLICAS before appending when acks=all and the ISR is
    /// below `min.insync.replicas`. Returns (first, last) offsets.
    pub fn append_as_leader(
        &self,
        partition: &Partition,
        payload: Payload<'_>,
        acks: i16,
    ) -> Result<(i64, i64), ErrorCode> {
        let st = partition.lock();
        let refusal = if st.role != Role::Leader {
            Some(ErrorCode::NotLeaderForPartition)
        } else if acks == -1
            && st.isr.len() < partition.min_insync_replicas(self.default_min_insync_replicas())
        {
            Some(ErrorCode::NotEnoughReplicas)
        } else {
            None
        };
        if let Some(e) = refusal {
            // What an idempotent producer sends behind this batch gets the same answer.
            if let Payload::Batch { batch, .. } = &payload {
                partition.log.note_refused(batch, e.code());
            }
            return Err(e);
        }
        let (appended, count) = match payload {
            Payload::Plain(set, count) => (partition.log.append(set, count), count),
            Payload::Compressed(r, count) => (
                partition.log.append_rebuilt(count, |first| {
                    r.into_wrapper(first).map_err(|e| {
                        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{e:?}"))
                    })
                }),
                count,
            ),
            Payload::Batch {
                batch,
                count,
                append_time,
            } => match partition
                .log
                .append_batch(batch, count, st.leader_epoch, append_time)
            {
                Ok(BatchOutcome::Appended(first)) => (Ok(first), count),
                // A producer's retry of what is here already: its offsets, nothing appended.
                Ok(BatchOutcome::Duplicate(first, last)) => return Ok((first, last)),
                Ok(BatchOutcome::Refused(e)) => {
                    log::warn!(
                        "[Broker {} {}-{}] refused idempotent batch: {e:?}",
                        self.broker_id,
                        partition.topic,
                        partition.partition
                    );
                    return Err(producer_error_code(e));
                }
                Err(e) => (Err(e), count),
            },
        };
        let first = appended.map_err(|e| {
            log::error!(
                "[Broker {} {}-{}] append failed: {e}",
                self.broker_id,
                partition.topic,
                partition.partition
            );
            ErrorCode::UnknownServerError
        })?;
        let hw_moved = partition.maybe_increment_high_watermark(&st);
        drop(st);
        partition.appended(hw_moved);
        Ok((first, first + i64::from(count) - 1))
    }

    /// Outcome of an acks=all wait on one partition for what was appended at `first` up to
    /// `required_offset`, checked under the partition lock.
    ///
    /// No longer the leader, an idempotent producer's batch (`batch`) still waits for the
    /// truth: it may be committed by the new leader, which had fetched it, or cut from our log
    /// as diverging. NOT_LEADER_FOR_PARTITION tells such a producer (librdkafka) the batch was
    /// not stored; if it then renumbers its messages under a new producer epoch (which it does
    /// for a sequence gap on any partition) a stored batch would be stored twice. So the answer
    /// is success once our high watermark, now the new leader's, passes the batch while our log
    /// still holds it, and NOT_LEADER_FOR_PARTITION once our log no longer holds it.
    pub fn acks_all_status(
        &self,
        partition: &Partition,
        first: i64,
        required_offset: i64,
        batch: Option<(i64, i16, i32)>,
    ) -> Option<ErrorCode> {
        let st = partition.lock();
        if st.role != Role::Leader {
            drop(st);
            let Some(batch) = batch else {
                return Some(ErrorCode::NotLeaderForPartition);
            };
            return match partition.log.producer_batch_at(first) {
                Ok(Some(held)) if held == batch => {
                    (partition.high_watermark() >= required_offset).then_some(ErrorCode::None)
                }
                _ => Some(ErrorCode::NotLeaderForPartition),
            };
        }
        if partition.high_watermark() >= required_offset {
            if st.isr.len() < partition.min_insync_replicas(self.default_min_insync_replicas()) {
                return Some(ErrorCode::NotEnoughReplicasAfterAppend);
            }
            return Some(ErrorCode::None);
        }
        None
    }

    /// Writes every partition's high watermark to the checkpoint files.
    pub fn checkpoint_high_watermarks(&self) {
        let parts = self.partitions.read();
        let hws: Vec<_> = self
            .log_manager
            .all()
            .iter()
            .map(|l| {
                let tp = TopicPartition::new(l.topic.clone(), l.partition);
                let hw = parts.get(&tp).map_or_else(
                    || self.log_manager.checkpointed_high_watermark(l),
                    |p| p.high_watermark(),
                );
                (tp, hw)
            })
            .collect();
        drop(parts);
        if let Err(e) = self.log_manager.checkpoint_high_watermarks(&hws) {
            log::error!(
                "[Broker {}] high-watermark checkpoint failed: {e}",
                self.broker_id
            );
        }
    }

    /// Spec D, broker startup: delete each local partition no longer assigned to this broker.
    pub fn delete_unassigned_partitions(&self, zk: &ZkClient) -> crate::zk::ZkResult<()> {
        let mut assignments = HashMap::new();
        for log in self.log_manager.all() {
            let topic = log.topic.clone();
            if !assignments.contains_key(&topic) {
                assignments.insert(topic.clone(), paths::topic_assignment(zk, &topic)?);
            }
            let assigned = assignments[&topic]
                .as_ref()
                .and_then(|a| a.get(&log.partition))
                .is_some_and(|r| r.contains(&self.broker_id));
            if !assigned {
                log::info!(
                    "[Broker {}] startup: deleting local partition {}-{}, no longer assigned to this broker",
                    self.broker_id,
                    log.topic,
                    log.partition
                );
                self.remove_partition(&log.topic, log.partition, true);
            }
        }
        Ok(())
    }
}
