//! The transaction coordinator (KIP-98), in Kafka's pattern (`doc/transactions.md`): the
//! coordinator of a transactional id is the leader of its partition of the compacted topic
//! `__transaction_state`, and its state is that partition's log. A broker that becomes such
//! a leader reads the partition (`load`), finishes every transaction whose decision was
//! taken (`complete`), and aborts the open ones past their timeout; one that stops leading
//! forgets the partition's transactions, so its next request is answered NOT_COORDINATOR.
//!
//! Every state change is written to the partition and replicated to its ISR before the
//! client is answered or anything else is done, as Kafka's `TransactionStateManager` does;
//! requests of one transactional id are carried out one at a time (its `Slot` lock).

pub mod admin;
mod markers;
mod requests;
pub mod state;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use self::state::{TxnMetadata, TxnState};
use crate::broker::apis::wait_replicated;
use crate::broker::metadata_cache::MetadataCache;
use crate::broker::partition::Role;
use crate::broker::producer_ids::ProducerIdManager;
use crate::broker::replica_manager::{Payload, ReplicaManager};
use crate::config::TxnConfig;
use crate::config::transactions::TRANSACTION_STATE_TOPIC;
use crate::network::ClientSecurity;
use crate::protocol::ErrorCode;
use crate::protocol::record_batch::{BatchBuilder, NewRecord, parse_batch};
use crate::zk::ZkClient;

/// One transactional id's state, `None` until its first InitProducerId; locked for the
/// whole of each request on it.
type Slot = Arc<Mutex<Option<TxnMetadata>>>;

/// A partition of `__transaction_state` this broker leads, as loaded at `leader_epoch` (the
/// coordinator epoch of the markers it writes).
struct Owned {
    partition: i32,
    leader_epoch: i32,
    txns: Mutex<HashMap<String, Slot>>,
}

impl Owned {
    /// Its transactional ids and their slots, taken out of the map's lock (each slot is
    /// locked on its own afterwards).
    fn slots(&self) -> Vec<(String, Slot)> {
        self.txns
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// How long a state write waits for the ISR before the request fails.
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);

pub struct TransactionCoordinator {
    broker_id: i32,
    cfg: TxnConfig,
    rm: Arc<ReplicaManager>,
    metadata: Arc<MetadataCache>,
    /// Where groups keep the offsets a transaction commits (`zk::txn_offsets`).
    zk: Arc<ZkClient>,
    producer_ids: Arc<ProducerIdManager>,
    /// The listener and client settings markers are sent with.
    inter_broker_listener: String,
    security: ClientSecurity,
    owned: RwLock<HashMap<i32, Arc<Owned>>>,
    /// One load at a time.
    loading: Mutex<()>,
    markers: markers::MarkerChannels,
    stopping: AtomicBool,
    last_abort_scan: Mutex<Instant>,
    last_expiry_scan: Mutex<Instant>,
    /// `partition-load-time-max`, ms.
    load_time_max_ms: AtomicU64,
}

impl TransactionCoordinator {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        broker_id: i32,
        cfg: TxnConfig,
        rm: Arc<ReplicaManager>,
        metadata: Arc<MetadataCache>,
        zk: Arc<ZkClient>,
        producer_ids: Arc<ProducerIdManager>,
        inter_broker_listener: String,
        security: ClientSecurity,
    ) -> Self {
        TransactionCoordinator {
            broker_id,
            cfg,
            rm,
            metadata,
            zk,
            producer_ids,
            inter_broker_listener,
            security,
            owned: RwLock::new(HashMap::new()),
            loading: Mutex::new(()),
            markers: markers::MarkerChannels::default(),
            stopping: AtomicBool::new(false),
            last_abort_scan: Mutex::new(Instant::now()),
            last_expiry_scan: Mutex::new(Instant::now()),
            load_time_max_ms: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &TxnConfig {
        &self.cfg
    }

    /// The partition of `__transaction_state` holding `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        state::partition_for(transactional_id, self.cfg.state_log_partitions)
    }

    /// Stops the marker retries of a broker shutting down.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
        self.markers.close();
    }

    /// The partition as loaded here, loading it first when this broker has just become its
    /// leader; NOT_COORDINATOR when it does not lead it.
    fn owned(&self, partition: i32) -> Result<Arc<Owned>, ErrorCode> {
        let epoch = self.leader_epoch_of(partition)?;
        if let Some(o) = self.owned.read().get(&partition)
            && o.leader_epoch == epoch
        {
            return Ok(o.clone());
        }
        let _one = self.loading.lock();
        if let Some(o) = self.owned.read().get(&partition)
            && o.leader_epoch == epoch
        {
            return Ok(o.clone());
        }
        let loaded = Arc::new(self.load(partition, epoch)?);
        self.owned.write().insert(partition, loaded.clone());
        Ok(loaded)
    }

    /// Our leader epoch of a partition of `__transaction_state` we lead.
    fn leader_epoch_of(&self, partition: i32) -> Result<i32, ErrorCode> {
        let part = self
            .rm
            .get_partition(TRANSACTION_STATE_TOPIC, partition)
            .ok_or(ErrorCode::NotCoordinator)?;
        let st = part.lock();
        if st.role != Role::Leader {
            return Err(ErrorCode::NotCoordinator);
        }
        Ok(st.leader_epoch)
    }

    /// Reads the partition's log: the last record of each transactional id is its state, a
    /// null value (an expired id) removes it.
    fn load(&self, partition: i32, leader_epoch: i32) -> Result<Owned, ErrorCode> {
        let started = Instant::now();
        let part = self
            .rm
            .get_partition(TRANSACTION_STATE_TOPIC, partition)
            .ok_or(ErrorCode::NotCoordinator)?;
        let mut txns: HashMap<String, Slot> = HashMap::new();
        let mut offset = part.log.log_start_offset();
        let end = part.log.log_end_offset();
        let mut buf = Vec::new();
        while offset < end {
            buf.clear();
            match part.log.read(offset, 8 << 20, Some(end), &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    log::warn!(
                        "[TransactionCoordinator {}] cannot read {TRANSACTION_STATE_TOPIC}-{partition} at {offset}: {e}",
                        self.broker_id
                    );
                    return Err(ErrorCode::CoordinatorLoadInProgress);
                }
            }
            let mut pos = 0;
            while let Ok(batch) = parse_batch(&buf[pos..]) {
                pos += batch.bytes().len();
                offset = batch.last_offset() + 1;
                if batch.is_control() {
                    continue;
                }
                let Ok(records) = batch.records() else {
                    continue;
                };
                let _ = records.for_each(|r| {
                    let Some(id) = r.key.and_then(state::decode_key) else {
                        return;
                    };
                    match r.value.and_then(state::decode_value) {
                        Some(m) if m.state != TxnState::Dead => {
                            txns.insert(id, Arc::new(Mutex::new(Some(m))));
                        }
                        _ => {
                            txns.remove(&id);
                        }
                    }
                });
            }
            if pos == 0 {
                break; // nothing whole: a torn tail
            }
        }
        self.load_time_max_ms
            .fetch_max(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        log::info!(
            "[TransactionCoordinator {}] loaded {} transactional ids of {TRANSACTION_STATE_TOPIC}-{partition} (epoch {leader_epoch}) in {:?}",
            self.broker_id,
            txns.len(),
            started.elapsed()
        );
        Ok(Owned {
            partition,
            leader_epoch,
            txns: Mutex::new(txns),
        })
    }

    /// The slot of `transactional_id` at its coordinator (this broker, or NOT_COORDINATOR).
    fn slot(&self, transactional_id: &str) -> Result<(Arc<Owned>, Slot), ErrorCode> {
        let owned = self.owned(self.partition_for(transactional_id))?;
        let slot = owned
            .txns
            .lock()
            .entry(transactional_id.to_owned())
            .or_default()
            .clone();
        Ok((owned, slot))
    }

    /// Writes a transactional id's new state (`None`: forget it) to its partition and waits
    /// for the ISR; the caller changes its memory only when this succeeds.
    fn write_state(
        &self,
        owned: &Owned,
        transactional_id: &str,
        m: Option<&TxnMetadata>,
    ) -> Result<(), ErrorCode> {
        if self.leader_epoch_of(owned.partition)? != owned.leader_epoch {
            return Err(ErrorCode::NotCoordinator);
        }
        let part = self
            .rm
            .get_partition(TRANSACTION_STATE_TOPIC, owned.partition)
            .ok_or(ErrorCode::NotCoordinator)?;
        let key = state::encode_key(transactional_id);
        let value = m.map(state::encode_value);
        let mut b = BatchBuilder::new();
        b.push(&NewRecord {
            timestamp: now_ms(),
            key: Some(&key),
            value: value.as_deref(),
            headers: &[],
        });
        let mut batch = b.finish(0).map_err(|_| ErrorCode::UnknownServerError)?;
        let payload = Payload::Batch {
            batch: &mut batch,
            count: 1,
            append_time: None,
        };
        let (first, last) = self
            .rm
            .append_as_leader(&part, payload, -1)
            .map_err(state_write_error)?;
        match wait_replicated(&self.rm, part, first, last, Instant::now() + WRITE_TIMEOUT) {
            ErrorCode::None => Ok(()),
            e => Err(state_write_error(e)),
        }
    }

    /// The periodic work: take up newly led partitions (finishing their decided
    /// transactions), drop the ones no longer led, abort timed-out transactions and forget
    /// expired ids at their intervals.
    pub fn tick(&self) {
        let topic_partitions = self.metadata.partition_count(TRANSACTION_STATE_TOPIC) as i32;
        let mut led = Vec::new();
        for p in 0..topic_partitions {
            if self.leader_epoch_of(p).is_ok() {
                led.push(p);
            }
        }
        self.owned.write().retain(|p, o| {
            let keep = self.leader_epoch_of(*p) == Ok(o.leader_epoch);
            if !keep {
                log::info!(
                    "[TransactionCoordinator {}] no longer coordinator of {TRANSACTION_STATE_TOPIC}-{p}",
                    self.broker_id
                );
            }
            keep
        });
        for p in led {
            if let Ok(owned) = self.owned(p) {
                self.finish_decided(&owned);
            }
        }
        let now = Instant::now();
        let due = |last: &Mutex<Instant>, every: Duration| {
            let mut l = last.lock();
            let due = now.duration_since(*l) >= every;
            if due {
                *l = now;
            }
            due
        };
        if due(&self.last_abort_scan, self.cfg.abort_timed_out_interval) {
            self.abort_timed_out();
        }
        if due(&self.last_expiry_scan, self.cfg.remove_expired_interval) {
            self.remove_expired();
        }
    }

    fn slots_of_owned(&self) -> Vec<(Arc<Owned>, String, Slot)> {
        let owned: Vec<Arc<Owned>> = self.owned.read().values().cloned().collect();
        let mut out = Vec::new();
        for o in owned {
            out.extend(o.slots().into_iter().map(|(k, v)| (o.clone(), k, v)));
        }
        out
    }

    /// Finishes the transactions decided but not completed: a new coordinator's predecessor
    /// died between Prepare* and Complete*, or a partition had no leader while the markers
    /// were written. (A partition that has the marker already takes its copy as a no-op.)
    fn finish_decided(&self, owned: &Arc<Owned>) {
        for (id, slot) in owned.slots() {
            let Some(mut g) = slot.try_lock() else {
                continue; // a request is at work on it
            };
            if let Some(m) = g.as_ref()
                && m.state.is_preparing()
            {
                let m = m.clone();
                // One try a tick: the lock is the id's, and its requests wait on it.
                match self.complete(owned, &id, m, Duration::ZERO) {
                    Ok(done) => *g = Some(done),
                    Err(e) => log::warn!(
                        "[TransactionCoordinator {}] could not finish transaction of {id}: {e:?}",
                        self.broker_id
                    ),
                }
            }
        }
    }

    /// Aborts every open transaction older than its timeout, with the producer's epoch
    /// bumped so the producer is fenced (Kafka's `abortTimedOutTransactions`).
    fn abort_timed_out(&self) {
        let now = now_ms();
        for (owned, id, slot) in self.slots_of_owned() {
            let Some(mut g) = slot.try_lock() else {
                continue; // a request is at work on it
            };
            let Some(m) = g.as_ref() else { continue };
            if m.state != TxnState::Ongoing || now - m.start_ms <= i64::from(m.timeout_ms) {
                continue;
            }
            log::info!(
                "[TransactionCoordinator {}] aborting the transaction of {id} (producer {} epoch {}): open for {} ms, timeout {} ms",
                self.broker_id,
                m.producer_id,
                m.producer_epoch,
                now - m.start_ms,
                m.timeout_ms
            );
            let fenced = TxnMetadata {
                producer_epoch: m.producer_epoch.saturating_add(1),
                ..m.clone()
            };
            match self.end(&owned, &id, fenced, false) {
                Ok(done) => *g = Some(done),
                Err(e) => log::warn!(
                    "[TransactionCoordinator {}] aborting the timed-out transaction of {id}: {e:?}",
                    self.broker_id
                ),
            }
        }
    }

    /// Forgets the ids with nothing open that did nothing for `transactional.id.expiration.ms`
    /// (a tombstone each, which the cleaner removes in time).
    fn remove_expired(&self) {
        let now = now_ms();
        let expiry = self.cfg.id_expiration.as_millis() as i64;
        for (owned, id, slot) in self.slots_of_owned() {
            let Some(mut g) = slot.try_lock() else {
                continue;
            };
            let expired = g.as_ref().is_some_and(|m| {
                matches!(
                    m.state,
                    TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
                ) && now - m.last_update_ms > expiry
            });
            if expired && self.write_state(&owned, &id, None).is_ok() {
                *g = None;
                log::info!(
                    "[TransactionCoordinator {}] transactional id {id} expired",
                    self.broker_id
                );
            }
        }
    }
}

/// What a client is told when a state write fails (Kafka's mapping in
/// `TransactionStateManager.appendTransactionToLog`).
fn state_write_error(e: ErrorCode) -> ErrorCode {
    match e {
        ErrorCode::NotLeaderForPartition => ErrorCode::NotCoordinator,
        ErrorCode::NotCoordinator => ErrorCode::NotCoordinator,
        _ => ErrorCode::CoordinatorNotAvailable,
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
