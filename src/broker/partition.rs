//! One partition replica on this broker: its log, its role (leader or follower of L), the ISR
//! and high watermark when leading.
//!
//! `state` guards every role change and every ISR/high-watermark update; appends hold it too so
//! that a partition cannot become a follower (and truncate) in the middle of an append.
//!
//! The rule for every lock that produce, fetch or a controller command takes — this one, the
//! log's append and segment locks, the replica fetcher's map and per-partition locks, the
//! replica manager's: **no disk call that can wait long, and no network call, is made while it
//! is held.** What happens under them is the append's own write to the page cache, a rename,
//! an index entry. A roll's fsync, a flush, the unlink of a segment that left the log
//! (retention, DeleteRecords, truncation) and the removal of a deleted partition's directory
//! are done by the log manager's maintenance thread with no such lock held (`log::deferred`);
//! ZooKeeper writes of the ISR are made with the lock released (`isr`), and so are the
//! replica fetcher's round trips. Parked requests are woken through the partition's
//! `watchers` (`purgatory`), never by a scan of other partitions.

use crate::protocol::record_batch::CompressionType;
use crate::zk::topic_config::TopicOverrides;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use super::purgatory::{Watch, Watchers};
use crate::log::Log;
use crate::log::overrides::TopicLogSettings;
use crate::metrics::TopicMetrics;
use crate::protocol::ErrorCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    /// Following the broker with this id (-1: the controller named no leader).
    Follower(i32),
}

pub struct PartitionState {
    pub role: Role,
    pub leader_epoch: i32,
    /// Version of the leaderAndISR node the controller wrote (spec C step 2.1.2): the leader's
    /// ISR updates are conditional on it.
    pub zk_version: i32,
    pub controller_epoch: i32,
    pub isr: Vec<i32>,
    pub replicas: Vec<i32>,
    /// Followers' log end offsets as learnt from their fetch offsets (leader only).
    pub follower_leos: HashMap<i32, i64>,
    /// When each follower last fetched from our log end offset (leader only): a follower not
    /// caught up for `replica.lag.time.max.ms` leaves the ISR.
    pub caught_up_at: HashMap<i32, Instant>,
    /// The ISR being written to ZooKeeper (without this lock held), if any: no second
    /// change starts meanwhile, and a follower it adds already holds the high watermark
    /// back (see `maximal_isr`).
    pub pending_isr: Option<Vec<i32>>,
}

impl PartitionState {
    /// The replicas the high watermark waits for: the ISR in force, and any follower that an
    /// ISR write under way adds (KIP-497's "maximal ISR"). The joining follower had reached
    /// the high watermark when the write began; were the high watermark to move on without
    /// it while the write is under way, the follower would enter the ISR without messages
    /// acknowledged meanwhile, and its election would lose them (found by the idempotent
    /// producer's pause test: acknowledged offsets 3611-3614 absent from the next leader).
    /// A follower that a write removes counts until the write is done: the old ISR stays in
    /// force.
    pub fn maximal_isr(&self) -> impl Iterator<Item = i32> + '_ {
        let joining = self
            .pending_isr
            .iter()
            .flatten()
            .filter(|r| !self.isr.contains(r));
        self.isr.iter().chain(joining).copied()
    }

    /// The high watermark the followers' positions allow, `leader` (this broker) having
    /// `leo`: the least log end offset over the maximal ISR.
    pub fn high_watermark_for(&self, leader: i32, leo: i64) -> i64 {
        self.maximal_isr()
            .map(|r| {
                if r == leader {
                    leo
                } else {
                    self.follower_leos.get(&r).copied().unwrap_or(0)
                }
            })
            .min()
            .unwrap_or(leo)
    }
}

pub struct Partition {
    pub topic: String,
    pub partition: i32,
    pub broker_id: i32,
    pub log: Arc<Log>,
    state: Mutex<PartitionState>,
    /// The topic's settings over the broker's (`/config/topics/[topic]`), read when this
    /// broker takes the partition and again on every change notification.
    overrides: parking_lot::RwLock<TopicOverrides>,
    /// The topic's counters (messages and bytes in and out).
    pub metrics: TopicMetrics,
    /// The requests parked on this partition (`purgatory`).
    pub watchers: Watchers,
}

impl Partition {
    /// Takes the topic's settings; the log's own (segment size, retention, file deletion
    /// delay) go to the log.
    pub fn set_overrides(&self, o: TopicOverrides) {
        self.log.overrides.set(&TopicLogSettings {
            segment_bytes: o.segment_bytes,
            segment_ms: o.segment_ms,
            retention_ms: o.retention_ms,
            retention_bytes: o.retention_bytes,
            file_delete_delay_ms: o.file_delete_delay_ms,
            cleanup_policy: o.cleanup_policy,
            min_cleanable_ratio: o.min_cleanable_ratio,
            delete_retention_ms: o.delete_retention_ms,
            min_compaction_lag_ms: o.min_compaction_lag_ms,
            max_compaction_lag_ms: o.max_compaction_lag_ms,
        });
        *self.overrides.write() = o;
    }

    /// The codec produced batches are stored with: the topic's `compression.type`, else the
    /// broker's.
    pub fn compression_type(&self, broker_default: CompressionType) -> CompressionType {
        self.overrides
            .read()
            .compression_type
            .unwrap_or(broker_default)
    }

    /// Whether this broker, leading, holds `replica`'s fetches to the leader's replication
    /// throttle: the topic lists this partition's replica here and `replica` is out of sync
    /// (KIP-73: an in-sync replica is never throttled, so no throttle takes one out of the ISR).
    pub fn leader_throttles(&self, replica: i32) -> bool {
        self.overrides
            .read()
            .leader_throttled
            .covers(self.partition, self.broker_id)
            && !self.lock().isr.contains(&replica)
    }

    /// Whether this broker's replica, following, is listed for the follower's throttle.
    pub fn follower_throttled(&self) -> bool {
        self.overrides
            .read()
            .follower_throttled
            .covers(self.partition, self.broker_id)
    }

    /// Whether the topic is compacted (`cleanup.policy` of the topic, or the broker's
    /// `log.cleanup.policy`): its records need keys.
    pub fn is_compacted(&self, broker_default: crate::config::CleanupPolicy) -> bool {
        self.overrides
            .read()
            .cleanup_policy
            .unwrap_or(broker_default)
            .compact
    }

    /// Whether batches get the broker's clock, given the broker's own setting.
    pub fn log_append_time(&self, broker_default: bool) -> bool {
        self.overrides
            .read()
            .log_append_time
            .unwrap_or(broker_default)
    }

    /// `max.message.bytes` of the topic, or the broker's `message.max.bytes`.
    pub fn max_message_bytes(&self, broker_default: usize) -> usize {
        self.overrides
            .read()
            .max_message_bytes
            .unwrap_or(broker_default)
    }

    /// `min.insync.replicas` of the topic, or the broker's.
    pub fn min_insync_replicas(&self, broker_default: usize) -> usize {
        self.overrides
            .read()
            .min_insync_replicas
            .unwrap_or(broker_default)
    }

    pub fn new(
        topic: &str,
        partition: i32,
        broker_id: i32,
        log: Arc<Log>,
        hw: i64,
        state: PartitionState,
        metrics: TopicMetrics,
    ) -> Partition {
        // Readable by consumers below it; kept in the log, whose cleaner stays below it too,
        // and read by fetches without taking `state`.
        log.store_high_watermark(hw);
        Partition {
            topic: topic.to_owned(),
            partition,
            broker_id,
            log,
            state: Mutex::new(state),
            overrides: Default::default(),
            metrics,
            watchers: Watchers::default(),
        }
    }

    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// Publishes the high watermark; a move wakes the requests waiting for it (consumers'
    /// fetches, acks=all produces). Not for a caller holding `state`: see
    /// `maybe_increment_high_watermark`.
    pub fn set_high_watermark(&self, hw: i64) {
        if self.store_high_watermark(hw) {
            self.watchers.wake(Watch::HighWatermark);
        }
    }

    /// Publishes the high watermark without waking anyone (the caller holds `state` and wakes
    /// the watchers after); true when it changed.
    pub(super) fn store_high_watermark(&self, hw: i64) -> bool {
        self.log.store_high_watermark(hw)
    }

    /// Wakes what is parked here after an append — followers' fetches, and, when the
    /// append moved the high watermark (`hw_moved`), consumers' fetches and acks=all
    /// produces. Called with `state` released.
    pub fn appended(&self, hw_moved: bool) {
        self.watchers.wake(Watch::LogEnd);
        if hw_moved {
            self.watchers.wake(Watch::HighWatermark);
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, PartitionState> {
        self.state.lock()
    }

    pub fn role(&self) -> Role {
        self.state.lock().role
    }

    /// KIP-320's fencing, then leadership (Kafka checks in that order): a request naming a
    /// leader epoch (`current_leader_epoch` ≥ 0) older than ours is FENCED_LEADER_EPOCH, newer
    /// UNKNOWN_LEADER_EPOCH (our LeaderAndIsr has not arrived yet); then, when
    /// `require_leader`, NOT_LEADER_FOR_PARTITION unless we lead.
    pub fn check_leader(
        &self,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<(), ErrorCode> {
        let st = self.state.lock();
        if current_leader_epoch >= 0 {
            if current_leader_epoch < st.leader_epoch {
                return Err(ErrorCode::FencedLeaderEpoch);
            }
            if current_leader_epoch > st.leader_epoch {
                return Err(ErrorCode::UnknownLeaderEpoch);
            }
        }
        if require_leader && st.role != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        Ok(())
    }

    /// The high watermark is the smallest log end offset in the ISR (architecture: data path
    /// invariants). It never moves backwards while leading. Returns true when it moved; the
    /// caller, holding `state`, wakes the watchers once it has released it (a request woken
    /// under the lock would only block on it).
    pub fn maybe_increment_high_watermark(&self, st: &PartitionState) -> bool {
        if st.role != Role::Leader {
            return false;
        }
        let new_hw = st.high_watermark_for(self.broker_id, self.log.log_end_offset());
        new_hw > self.high_watermark() && self.store_high_watermark(new_hw)
    }
}
