//! Replica fetchers: `num.replica.fetchers` threads per source broker copy the partitions this
//! broker follows from it (a partition always to the same one of them), with Fetch requests
//! carrying our broker id as `replica_id`. The count may change while the broker runs
//! (`resize`): every followed partition moves to its new fetcher with its place kept.
//!
//! A follower appends what it fetched with the leader's offsets, and keeps its high watermark
//! at min(leader's HW, own LEO). Each followed partition has a lock of its own, held while
//! the fetcher applies that partition's part of an answer; `remove_partition` marks the
//! partition removed under it, so once it returns the thread appends nothing more there — a
//! LeaderAndIsr can then truncate or take over the log safely (spec C 2.1.1 / 2.2.1) — and
//! it waits at most for that one partition's append, never for the rest of the answer's
//! (the map of partitions is held only to look entries up).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use super::partition::Partition;
use super::replication_quota::ReplicationQuota;
use crate::config::BrokerConfig;
use crate::network::BlockingChannel;
use crate::network::ClientSecurity;
use crate::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use crate::protocol::header::FETCH;
use crate::protocol::{BrokerInfo, ErrorCode};

mod compare;
mod truncation;

use compare::append_fetched;
use truncation::{handle_offset_out_of_range, leader_ends};

use crate::protocol::TopicPartition;

/// Pause after a failed fetch (broker gone, partition moving) before trying again.
const BACKOFF: Duration = Duration::from_millis(200);

/// OffsetForLeaderEpoch calls that may fail in a row before a fetcher goes on without them.
const EPOCH_TRIES: u32 = 3;

/// Fetch settings from the broker configuration.
#[derive(Clone)]
struct FetchSettings {
    broker_id: i32,
    /// Per partition (`replica.fetch.max.bytes`).
    max_bytes: i32,
    /// Per answer (`replica.fetch.response.max.bytes`).
    response_max_bytes: i32,
    max_wait: Duration,
    min_bytes: i32,
    /// How to dial the leader's inter-broker listener.
    security: ClientSecurity,
    /// The follower's replication throttle (KIP-73).
    quota: Arc<ReplicationQuota>,
}

struct Followed {
    partition: Arc<Partition>,
    fetch_offset: i64,
    /// Our log end when we started following: our messages from `fetch_offset` up to here are
    /// checked against the leader's, not fetched again. Equal to `fetch_offset` once done.
    verify_until: i64,
    /// The epoch whose end the leader is to tell us before we fetch (`truncation`); `None`
    /// once answered, or when our log has no epoch to ask about.
    ask_epoch: Option<i32>,
    /// No longer followed by this fetcher: nothing more is appended.
    removed: bool,
    /// At the leader's high watermark as of its last answer: in sync, never throttled.
    caught_up: bool,
}

/// A followed partition, under its own lock.
type Entry = Arc<Mutex<Followed>>;

struct Fetcher {
    source: BrokerInfo,
    partitions: Mutex<HashMap<TopicPartition, Entry>>,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A fetcher's key: the source broker, and which of its `num.replica.fetchers`.
type FetcherId = (i32, usize);

pub struct ReplicaFetcherManager {
    settings: FetchSettings,
    /// The fetcher count per source; changed only under `fetchers`' lock.
    count: std::sync::atomic::AtomicUsize,
    fetchers: Mutex<HashMap<FetcherId, Arc<Fetcher>>>,
}

/// Which of `count` fetchers copies `tp`: the same one for as long as the count stands.
fn fetcher_index(tp: &TopicPartition, count: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tp.hash(&mut h);
    (h.finish() % count.max(1) as u64) as usize
}

impl ReplicaFetcherManager {
    pub fn new(cfg: &BrokerConfig, quota: Arc<ReplicationQuota>) -> Self {
        ReplicaFetcherManager {
            settings: FetchSettings {
                broker_id: cfg.broker_id,
                max_bytes: cfg.replica_fetch_max_bytes,
                response_max_bytes: cfg.replica_fetch_response_max_bytes,
                max_wait: cfg.replica_fetch_wait_max,
                min_bytes: cfg.replica_fetch_min_bytes,
                security: cfg.inter_broker_client.clone(),
                quota,
            },
            count: cfg.num_replica_fetchers.into(),
            fetchers: Mutex::new(HashMap::new()),
        }
    }

    /// `num.replica.fetchers` changed: every followed partition moves to the fetcher the new
    /// count gives it, from where it was (its offsets and checks carried over), and the old
    /// threads stop. An append under way finishes first (each partition's lock), and the old
    /// threads append nothing more (`removed`), so nothing is fetched twice or skipped.
    pub fn resize(&self, count: usize) {
        let mut fetchers = self.fetchers.lock();
        if self.count.swap(count, Ordering::AcqRel) == count {
            return;
        }
        let old: Vec<Arc<Fetcher>> = fetchers.drain().map(|(_, f)| f).collect();
        let mut moved = 0;
        for f in &old {
            f.stop.store(true, Ordering::Release);
            for (tp, entry) in f.partitions.lock().drain() {
                let mut e = entry.lock();
                if e.removed {
                    continue;
                }
                e.removed = true;
                let copy = Followed {
                    partition: e.partition.clone(),
                    fetch_offset: e.fetch_offset,
                    verify_until: e.verify_until,
                    ask_epoch: e.ask_epoch,
                    removed: false,
                    caught_up: e.caught_up,
                };
                let id = (f.source.id, fetcher_index(&tp, count));
                fetchers
                    .entry(id)
                    .or_insert_with(|| start_fetcher(f.source.clone(), id.1, self.settings.clone()))
                    .partitions
                    .lock()
                    .insert(tp, Arc::new(Mutex::new(copy)));
                moved += 1;
            }
        }
        log::info!(
            "[Broker {}] num.replica.fetchers now {count}: {moved} partition(s) on {} fetcher(s)",
            self.settings.broker_id,
            fetchers.len()
        );
    }

    /// Starts copying `partition` from `leader`, from offset `from` (our high watermark): first
    /// our log is cut where our latest leader epoch ends in the leader's (`truncation`), then
    /// what it holds beyond `from` is checked against the leader's before more is appended.
    pub fn add_partition(&self, leader: &BrokerInfo, partition: Arc<Partition>, from: i64) {
        let tp = TopicPartition::new(partition.topic.clone(), partition.partition);
        self.remove_partition(&tp);
        let mut fetchers = self.fetchers.lock();
        let index = fetcher_index(&tp, self.count.load(Ordering::Acquire));
        let f = fetchers
            .entry((leader.id, index))
            .or_insert_with(|| start_fetcher(leader.clone(), index, self.settings.clone()));
        let verify_until = partition.log.log_end_offset();
        let ask_epoch = partition.log.latest_epoch();
        log::info!(
            "[Broker {} {}-{}] fetching from broker {} at offset {from}",
            self.settings.broker_id,
            tp.topic,
            tp.partition,
            leader.id
        );
        f.partitions.lock().insert(
            tp,
            Arc::new(Mutex::new(Followed {
                partition,
                fetch_offset: from.min(verify_until),
                verify_until,
                ask_epoch,
                removed: false,
                caught_up: false,
            })),
        );
    }

    /// Stops copying a partition; returns once no fetcher will touch its log again.
    pub fn remove_partition(&self, tp: &TopicPartition) {
        let mut fetchers = self.fetchers.lock();
        let mut idle = Vec::new();
        let mut removed = Vec::new();
        for (id, f) in fetchers.iter() {
            let mut parts = f.partitions.lock();
            removed.extend(parts.remove(tp));
            if parts.is_empty() {
                idle.push(*id);
            }
        }
        for id in idle {
            if let Some(f) = fetchers.remove(&id) {
                f.stop.store(true, Ordering::Release);
            }
        }
        // Waits for an append of this partition under way, if any, and stops any later one.
        for entry in removed {
            entry.lock().removed = true;
        }
    }

    pub fn shutdown(&self) {
        let all: Vec<Arc<Fetcher>> = self.fetchers.lock().drain().map(|(_, f)| f).collect();
        for f in &all {
            f.stop.store(true, Ordering::Release);
        }
        for f in all {
            if let Some(h) = f.thread.lock().take() {
                let _ = h.join();
            }
        }
    }
}

fn start_fetcher(source: BrokerInfo, index: usize, settings: FetchSettings) -> Arc<Fetcher> {
    let f = Arc::new(Fetcher {
        source,
        partitions: Mutex::new(HashMap::new()),
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
    });
    let me = f.clone();
    let h = std::thread::Builder::new()
        .name(format!(
            "replica-fetcher-{}-from-{}-{index}",
            settings.broker_id, f.source.id
        ))
        .spawn(move || me.run(&settings))
        .expect("spawn replica fetcher thread");
    *f.thread.lock() = Some(h);
    f
}

impl Fetcher {
    fn run(&self, s: &FetchSettings) {
        let tag = format!("[Broker {} fetcher from {}]", s.broker_id, self.source.id);
        let addr = (self.source.host.clone(), self.source.port as u16);
        let mut chan: Option<BlockingChannel> = None;
        let mut epoch_failures = 0;
        while !self.stop.load(Ordering::Acquire) {
            if self.partitions.lock().is_empty() {
                std::thread::sleep(BACKOFF);
                continue;
            }
            if chan.is_none() {
                match BlockingChannel::connect_as(
                    (&addr.0, addr.1),
                    &format!("replica-fetcher-{}", s.broker_id),
                    s.max_wait + Duration::from_secs(30),
                    &s.security,
                ) {
                    Ok(c) => chan = Some(c),
                    Err(e) => {
                        log::debug!("{tag} connect failed: {e}");
                        std::thread::sleep(BACKOFF);
                        continue;
                    }
                }
            }
            let c = chan.as_mut().expect("connected above");
            if self.epochs_pending() {
                if let Err(e) = self.truncate_by_epochs(&tag, c, s.broker_id) {
                    epoch_failures += 1;
                    if epoch_failures >= EPOCH_TRIES {
                        self.abandon_epochs(&tag, &e);
                    }
                    chan = None;
                    std::thread::sleep(BACKOFF);
                    continue;
                }
                epoch_failures = 0;
            }
            let (request, held) = self.build_request(s);
            if request.topics.is_empty() {
                // Every partition still waits for its epoch answer (a leader not yet
                // leading at our epoch answers with an error), or for the throttle.
                let wait = if held { s.quota.delay() } else { BACKOFF };
                std::thread::sleep(wait.clamp(Duration::from_millis(1), BACKOFF));
                continue;
            }
            let resp: FetchResponse = match c.send(FETCH, fetch::CLIENT_VERSION, &request) {
                Ok(r) => r,
                Err(e) => {
                    log::warn!("{tag} fetch failed: {e}; reconnecting");
                    chan = None;
                    std::thread::sleep(BACKOFF);
                    continue;
                }
            };
            if !self.apply(&tag, c, s, &request, resp) {
                std::thread::sleep(BACKOFF);
            }
        }
    }

    /// The entries followed now (the map's lock is released when this returns).
    fn entries(&self) -> Vec<(TopicPartition, Entry)> {
        let parts = self.partitions.lock();
        parts
            .iter()
            .map(|(tp, e)| (tp.clone(), e.clone()))
            .collect()
    }

    fn entry(&self, tp: &TopicPartition) -> Option<Entry> {
        self.partitions.lock().get(tp).cloned()
    }

    /// The next Fetch. Each entry's lock is taken under the map's (never the other way round,
    /// so this cannot deadlock with `apply`, which looks entries up before locking one).
    /// With whether a throttled partition was left out (its wait is then cut to when the
    /// throttle lets it go again).
    fn build_request(&self, s: &FetchSettings) -> (FetchRequest, bool) {
        let mut by_topic: HashMap<String, Vec<FetchPartition>> = HashMap::new();
        // Asked once per request, and only when a throttled partition is behind.
        let mut held: Option<bool> = None;
        for (
            TopicPartition {
                topic: t,
                partition: p,
            },
            e,
        ) in self.partitions.lock().iter()
        {
            let f = e.lock();
            if f.ask_epoch.is_some() {
                continue; // not before our log is cut where the leader's parts from it
            }
            if !f.caught_up
                && f.partition.follower_throttled()
                && *held.get_or_insert_with(|| s.quota.exceeded())
            {
                continue; // over the follower's throttle: left for a later request
            }
            by_topic
                .entry(t.clone())
                .or_default()
                .push(FetchPartition::new(*p, f.fetch_offset, s.max_bytes));
        }
        let held = held == Some(true);
        let max_wait = match held {
            true => s.max_wait.min(s.quota.delay()),
            false => s.max_wait,
        };
        let request = FetchRequest {
            max_bytes: s.response_max_bytes,
            ..FetchRequest::new(
                s.broker_id,
                max_wait.as_millis() as i32,
                s.min_bytes,
                by_topic.into_iter().collect(),
            )
        };
        (request, held)
    }

    /// Applies a fetch response, each partition under its own lock; false when every
    /// partition failed (worth a pause before the next try). A partition out of range asks
    /// the leader where its log is with no lock held: `remove_partition` (LeaderAndIsr,
    /// StopReplica) must never wait behind a round trip to a leader that may be paused.
    fn apply(
        &self,
        tag: &str,
        chan: &mut BlockingChannel,
        s: &FetchSettings,
        req: &FetchRequest,
        resp: FetchResponse,
    ) -> bool {
        let mut progress = false;
        let mut out_of_range = Vec::new();
        // The offsets asked for, by partition: looked up once per answer (a fetcher may
        // follow thousands of partitions).
        let requested: HashMap<(&str, i32), i64> = req
            .topics
            .iter()
            .flat_map(|(t, ps)| {
                ps.iter()
                    .map(move |x| ((t.as_str(), x.partition), x.fetch_offset))
            })
            .collect();
        for (topic, ps) in resp.topics {
            for p in ps {
                let asked = requested.get(&(topic.as_str(), p.partition)).copied();
                let tp = TopicPartition::new(topic.clone(), p.partition);
                let Some(entry) = self.entry(&tp) else {
                    continue;
                };
                let mut f = entry.lock();
                // Only apply a response to the offset we asked for; anything else is stale.
                if f.removed || asked != Some(f.fetch_offset) {
                    continue;
                }
                match ErrorCode::from_code(p.error_code) {
                    ErrorCode::None => {
                        progress = true;
                        let throttled = !f.caught_up && f.partition.follower_throttled();
                        match append_fetched(&mut f, &p.message_set, p.high_watermark) {
                            Ok(()) => {
                                let n = p.message_set.len() as u64;
                                f.partition.metrics.replicated(n);
                                if throttled {
                                    s.quota.record(n);
                                }
                                f.caught_up = f.fetch_offset >= p.high_watermark;
                            }
                            Err(e) => log::error!(
                                "{tag} {}-{}: cannot append fetched data: {e}",
                                tp.topic,
                                tp.partition
                            ),
                        }
                        // The leader's log start, moved by DeleteRecords or retention.
                        if p.log_start_offset > f.partition.log.log_start_offset()
                            && let Err(e) =
                                f.partition.log.delete_records_before(p.log_start_offset)
                        {
                            log::error!(
                                "{tag} {}-{}: cannot move the log start: {e}",
                                tp.topic,
                                tp.partition
                            );
                        }
                    }
                    ErrorCode::OffsetOutOfRange => {
                        out_of_range.push((f.fetch_offset, f.partition.clone(), entry.clone()));
                    }
                    e => log::debug!("{tag} {}-{}: leader answered {e:?}", tp.topic, tp.partition),
                }
            }
        }
        for (asked, partition, entry) in out_of_range {
            let ends = leader_ends(chan, s.broker_id, &partition, asked);
            let mut f = entry.lock();
            // Still followed as it was when asked (not removed, re-added or moved meanwhile).
            if f.removed || f.fetch_offset != asked {
                continue;
            }
            match ends.and_then(|ends| handle_offset_out_of_range(tag, &mut f, ends)) {
                Ok(()) => progress = true,
                Err(e) => log::warn!(
                    "{tag} {}-{}: offset out of range and cannot ask the leader: {e}",
                    partition.topic,
                    partition.partition
                ),
            }
        }
        progress
    }
}
