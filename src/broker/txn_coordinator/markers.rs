//! Writing a decided transaction's markers: one WriteTxnMarkers to the leader of each of its
//! partitions, over channels kept per broker, retried while leaders move, until every
//! partition has its marker (or the coordinator stops being one).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::state::TxnMetadata;
use super::{Owned, TransactionCoordinator};
use crate::network::BlockingChannel;
use crate::protocol::ErrorCode;
use crate::protocol::header::WRITE_TXN_MARKERS;
use crate::protocol::txn_markers::{
    TxnMarkerEntry, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use crate::zk::txn_offsets;

/// How long a request (EndTxn, InitProducerId) keeps trying to complete a decided transaction:
/// long enough to find a moved leader again. Past it the transaction stays decided and `tick`
/// tries once a second; meanwhile the id answers CONCURRENT_TRANSACTIONS, as Kafka's does
/// while its markers are pending, rather than holding the id's lock (and every request for
/// it) while a partition has no leader.
pub(super) const PATIENCE_IN_REQUEST: Duration = Duration::from_secs(2);
/// The pause before trying partitions again whose leader was missing or moving.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// A leader answers once the ISR has the marker (up to 30 s): the channel waits longer.
const CHANNEL_TIMEOUT: Duration = Duration::from_secs(40);

/// Idle channels to the brokers, by id. A channel is taken out while in use, so markers of
/// several transactions go to one broker at once over several channels.
#[derive(Default)]
pub(super) struct MarkerChannels {
    idle: Mutex<HashMap<i32, Vec<BlockingChannel>>>,
    closed: AtomicBool,
}

impl MarkerChannels {
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.idle.lock().clear();
    }
}

impl TransactionCoordinator {
    /// Writes the markers of `m`'s data partitions, then ends its groups' pending offsets
    /// (applied on commit); Ok once every one is written (or its partition is gone), trying
    /// again for `patience` (zero: once).
    pub(super) fn write_markers(
        &self,
        owned: &Owned,
        m: &TxnMetadata,
        commit: bool,
        patience: Duration,
    ) -> Result<(), ErrorCode> {
        self.write_partition_markers(owned, m, commit, patience)?;
        for group in m.groups() {
            txn_offsets::end_pending(&self.zk, group, m.producer_id, commit).map_err(|e| {
                log::warn!(
                    "[TransactionCoordinator {}] ending {group}'s pending offsets of producer {}: {e:?}",
                    self.broker_id,
                    m.producer_id
                );
                ErrorCode::CoordinatorNotAvailable
            })?;
        }
        Ok(())
    }

    fn write_partition_markers(
        &self,
        owned: &Owned,
        m: &TxnMetadata,
        commit: bool,
        patience: Duration,
    ) -> Result<(), ErrorCode> {
        let mut pending: BTreeSet<(String, i32)> = m.data_partitions().cloned().collect();
        let deadline = Instant::now() + patience;
        loop {
            if pending.is_empty() {
                return Ok(());
            }
            if self.stopping.load(Ordering::Acquire) {
                return Err(ErrorCode::CoordinatorNotAvailable);
            }
            if self.leader_epoch_of(owned.partition)? != owned.leader_epoch {
                return Err(ErrorCode::NotCoordinator);
            }
            let mut by_leader: HashMap<i32, Vec<(String, i32)>> = HashMap::new();
            for (t, p) in &pending {
                if let Some(l) = self.metadata.leader_of(t, *p).filter(|l| *l >= 0) {
                    by_leader.entry(l).or_default().push((t.clone(), *p));
                } else if !self.metadata.contains_partition(t, *p) {
                    by_leader.entry(-1).or_default().push((t.clone(), *p));
                }
            }
            // A partition whose topic was deleted needs no marker.
            for gone in by_leader.remove(&-1).unwrap_or_default() {
                pending.remove(&gone);
            }
            let entries: Vec<(i32, TxnMarkerEntry)> = by_leader
                .into_iter()
                .map(|(leader, partitions)| {
                    let entry = TxnMarkerEntry {
                        producer_id: m.producer_id,
                        producer_epoch: m.producer_epoch,
                        commit,
                        topics: by_topic(&partitions),
                        coordinator_epoch: owned.leader_epoch,
                    };
                    (leader, entry)
                })
                .collect();
            for done in self.send_to_leaders(entries) {
                pending.remove(&done);
            }
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ErrorCode::RequestTimedOut);
            }
            std::thread::sleep(RETRY_BACKOFF);
        }
    }

    /// Sends each leader its markers, at once: every leader answers only once its ISR has
    /// them, and one after the other those waits would add up per transaction.
    fn send_to_leaders(&self, entries: Vec<(i32, TxnMarkerEntry)>) -> Vec<(String, i32)> {
        if entries.len() == 1 {
            let (leader, entry) = entries.into_iter().next().expect("one");
            return self.send_markers(leader, entry);
        }
        std::thread::scope(|s| {
            let sent: Vec<_> = entries
                .into_iter()
                .map(|(leader, entry)| s.spawn(move || self.send_markers(leader, entry)))
                .collect();
            sent.into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }

    /// Sends one transaction's markers to `leader`; returns the partitions that have theirs.
    fn send_markers(&self, leader: i32, entry: TxnMarkerEntry) -> Vec<(String, i32)> {
        let Some(mut chan) = self.channel_to(leader) else {
            return Vec::new();
        };
        let req = WriteTxnMarkersRequest {
            markers: vec![entry],
        };
        let resp: WriteTxnMarkersResponse = match chan.send(WRITE_TXN_MARKERS, 1, &req) {
            Ok(r) => r,
            Err(e) => {
                log::info!(
                    "[TransactionCoordinator {}] WriteTxnMarkers to broker {leader}: {e:?}",
                    self.broker_id
                );
                return Vec::new();
            }
        };
        if !self.markers.closed.load(Ordering::Acquire) {
            self.markers
                .idle
                .lock()
                .entry(leader)
                .or_default()
                .push(chan);
        }
        let mut done = Vec::new();
        for (_, topics) in resp.markers {
            for (topic, partitions) in topics {
                for (p, code) in partitions {
                    match ErrorCode::from_code(code) {
                        // Written; or the topic is gone; or a newer epoch's marker is there
                        // already (the producer was fenced and its transaction aborted).
                        ErrorCode::None
                        | ErrorCode::UnknownTopicOrPartition
                        | ErrorCode::InvalidProducerEpoch => done.push((topic.clone(), p)),
                        e => log::debug!(
                            "[TransactionCoordinator {}] marker for {topic}-{p} at broker {leader}: {e:?}, will retry",
                            self.broker_id
                        ),
                    }
                }
            }
        }
        done
    }

    fn channel_to(&self, broker: i32) -> Option<BlockingChannel> {
        if let Some(c) = self.markers.idle.lock().get_mut(&broker).and_then(Vec::pop) {
            return Some(c);
        }
        let info = self
            .metadata
            .live_brokers(&self.inter_broker_listener)
            .into_iter()
            .find(|b| b.id == broker)?;
        let client = format!("broker-{}-txn-coordinator", self.broker_id);
        BlockingChannel::connect_as(
            (info.host.as_str(), info.port as u16),
            &client,
            CHANNEL_TIMEOUT,
            &self.security,
        )
        .map_err(|e| {
            log::info!(
                "[TransactionCoordinator {}] cannot reach broker {broker} for markers: {e}",
                self.broker_id
            );
        })
        .ok()
    }
}

/// (topic, partitions) from a sorted list of partitions.
fn by_topic(partitions: &[(String, i32)]) -> Vec<(String, Vec<i32>)> {
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    for (t, p) in partitions {
        match out.last_mut() {
            Some((last, ps)) if last == t => ps.push(*p),
            _ => out.push((t.clone(), vec![*p])),
        }
    }
    out
}
