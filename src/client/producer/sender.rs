//! The producer's sender thread: per-partition batches, metadata, one connection per leader,
//! retries. Only this thread touches its state; `Producer` talks to it through a channel.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{Command, Outcome, ProduceError, ProducerConfig, RecordMetadata};
use crate::client::metadata::fetch_metadata;
use crate::client::partitioner::partition_for_key;
use crate::network::BlockingChannel;
use crate::protocol::header::PRODUCE;
use crate::protocol::produce::{ProduceResponse, ProduceSets, TopicSets};
use crate::protocol::record_batch::{BatchBuilder, NewRecord};
use crate::protocol::{ErrorCode, compression, encode_body, message};

fn record_batch(b: &Batch, codec: i8) -> Result<Vec<u8>, message::SetError> {
    let mut builder = BatchBuilder::new();
    for r in &b.records {
        builder.push(&NewRecord {
            timestamp: r.timestamp,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: &[],
        });
    }
    builder.finish(codec)
}

/// Batches bound for one partition, with the partition they are for.
type PartitionBatches = Vec<((String, i32), Batch)>;

/// A record waiting in a batch.
struct Pending {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    /// When `send` was called (CreateTime), in ms since the epoch.
    timestamp: i64,
    done: Sender<Outcome>,
}

struct Batch {
    records: Vec<Pending>,
    bytes: usize,
    created: Instant,
    attempts: u32,
    /// Not before this instant (retry backoff).
    ready_at: Instant,
}

/// The sender thread's state: batches, metadata and connections.
pub(super) struct SenderState {
    config: ProducerConfig,
    /// topic → partition → leader address.
    leaders: HashMap<String, BTreeMap<i32, Option<String>>>,
    connections: HashMap<String, BlockingChannel>,
    batches: BTreeMap<(String, i32), VecDeque<Batch>>,
    round_robin: AtomicUsize,
    flush_waiters: Vec<Sender<()>>,
}

impl SenderState {
    pub(super) fn new(config: ProducerConfig) -> Self {
        SenderState {
            config,
            leaders: HashMap::new(),
            connections: HashMap::new(),
            batches: BTreeMap::new(),
            round_robin: AtomicUsize::new(0),
            flush_waiters: Vec::new(),
        }
    }

    pub(super) fn run(mut self, rx: Receiver<Command>) {
        loop {
            let wait = self
                .next_deadline()
                .map_or(Duration::from_millis(100), |d| {
                    d.saturating_duration_since(Instant::now())
                });
            match rx.recv_timeout(wait) {
                Ok(cmd) => self.accept(cmd),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.send_ready(true);
                    self.fail_all(ProduceError::Closed);
                    return;
                }
            }
            // Take whatever else is queued before sending, so batches fill up.
            while let Ok(cmd) = rx.try_recv() {
                self.accept(cmd);
            }
            let flushing = !self.flush_waiters.is_empty();
            self.send_ready(flushing);
            if flushing && self.batches.values().all(VecDeque::is_empty) {
                for w in self.flush_waiters.drain(..) {
                    let _ = w.send(());
                }
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.batches
            .values()
            .flat_map(|q| q.front())
            .map(|b| b.ready_at.max(b.created + self.config.linger))
            .min()
    }

    fn accept(&mut self, cmd: Command) {
        match cmd {
            Command::Flush(w) => self.flush_waiters.push(w),
            Command::Send {
                topic,
                key,
                value,
                done,
            } => {
                let partition = match self.choose_partition(&topic, key.as_deref()) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = done.send(Err(e));
                        return;
                    }
                };
                let size =
                    key.as_ref().map_or(0, Vec::len) + value.as_ref().map_or(0, Vec::len) + 26;
                let q = self.batches.entry((topic, partition)).or_default();
                let now = Instant::now();
                if q.back()
                    .is_none_or(|b| b.bytes + size > self.config.batch_size || b.attempts > 0)
                {
                    q.push_back(Batch {
                        records: Vec::new(),
                        bytes: 0,
                        created: now,
                        attempts: 0,
                        ready_at: now,
                    });
                }
                let b = q.back_mut().expect("pushed above");
                b.bytes += size;
                b.records.push(Pending {
                    key,
                    value,
                    timestamp: now_ms(),
                    done,
                });
            }
        }
    }

    fn choose_partition(&mut self, topic: &str, key: Option<&[u8]>) -> Result<i32, ProduceError> {
        if !self.leaders.contains_key(topic) {
            self.refresh_metadata(topic)?;
        }
        let n = self.leaders[topic].len() as i32;
        Ok(match key {
            Some(k) => partition_for_key(k, n),
            None => (self.round_robin.fetch_add(1, Ordering::Relaxed) as i32) % n,
        })
    }

    /// Metadata for `topic`; waits a little for a topic being auto-created to get leaders.
    fn refresh_metadata(&mut self, topic: &str) -> Result<(), ProduceError> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let m = fetch_metadata(
                &self.config.bootstrap,
                &[topic.to_owned()],
                &self.config.client_id,
            )
            .map_err(ProduceError::Unavailable)?;
            let brokers: HashMap<i32, String> = m
                .brokers
                .iter()
                .map(|b| (b.id, format!("{}:{}", b.host, b.port)))
                .collect();
            if let Some(t) = m.topics.iter().find(|t| t.topic == topic) {
                let code = ErrorCode::from_code(t.error_code);
                if !t.partitions.is_empty()
                    && matches!(
                        code,
                        ErrorCode::None
                            | ErrorCode::ReplicaNotAvailable
                            | ErrorCode::LeaderNotAvailable
                    )
                {
                    let map = t
                        .partitions
                        .iter()
                        .map(|p| (p.partition, brokers.get(&p.leader).cloned()))
                        .collect();
                    self.leaders.insert(topic.to_owned(), map);
                    return Ok(());
                }
                if code == ErrorCode::UnknownTopicOrPartition || code == ErrorCode::InvalidTopic {
                    return Err(ProduceError::UnknownTopic(topic.to_owned()));
                }
            }
            if Instant::now() >= deadline {
                return Err(ProduceError::Unavailable(format!(
                    "topic `{topic}` has no partition leaders"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends every batch that is full, old enough, or (`all`) any batch, one request per leader.
    fn send_ready(&mut self, all: bool) {
        let now = Instant::now();
        let mut by_leader: BTreeMap<String, PartitionBatches> = BTreeMap::new();
        let keys: Vec<(String, i32)> = self.batches.keys().cloned().collect();
        for tp in keys {
            let q = self.batches.get_mut(&tp).expect("key from the map");
            let ready = q.front().is_some_and(|b| {
                b.ready_at <= now
                    && (all
                        || q.len() > 1
                        || b.bytes >= self.config.batch_size
                        || now >= b.created + self.config.linger)
            });
            if !ready {
                continue;
            }
            let leader = self
                .leaders
                .get(&tp.0)
                .and_then(|m| m.get(&tp.1))
                .cloned()
                .flatten();
            let batch = q.pop_front().expect("front checked");
            match leader {
                Some(addr) => by_leader.entry(addr).or_default().push((tp, batch)),
                None => self.retry(
                    tp,
                    batch,
                    ProduceError::Broker(ErrorCode::LeaderNotAvailable),
                ),
            }
        }
        for (addr, batches) in by_leader {
            self.send_to(&addr, batches);
        }
    }

    fn send_to(&mut self, addr: &str, batches: PartitionBatches) {
        let sets: Vec<Vec<u8>> = batches.iter().map(|(_, b)| self.encode(b)).collect();
        let mut topics: BTreeMap<&str, Vec<(i32, &[u8])>> = BTreeMap::new();
        for ((tp, _), set) in batches.iter().zip(&sets) {
            topics.entry(tp.0.as_str()).or_default().push((tp.1, set));
        }
        let topics: Vec<TopicSets<'_>> = topics.into_iter().collect();
        let (acks, timeout) = (
            self.config.acks,
            self.config.request_timeout.as_millis() as i32,
        );
        // The first Produce version of each format: v3 carries batches, v2 magic 1.
        let version = match self.config.magic {
            2 => 3,
            1 => 2,
            _ => 0,
        };
        let req = ProduceSets {
            acks,
            timeout_ms: timeout,
            topics: &topics,
        };
        let body = |b: &mut Vec<u8>| encode_body(&req, b, PRODUCE, version);
        let result = self.connection(addr).and_then(|c| {
            if acks == 0 {
                c.send_only(PRODUCE, version, &body)
                    .map(|_| None)
                    .map_err(|e| e.to_string())
            } else {
                c.send::<ProduceResponse>(PRODUCE, version, &req)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
        });
        match result {
            Ok(resp) => {
                for (tp, batch) in batches {
                    let answer = resp
                        .as_ref()
                        .and_then(|r| r.topics.iter().find(|t| t.0 == tp.0))
                        .and_then(|t| t.1.iter().find(|p| p.partition == tp.1));
                    match (resp.is_none(), answer) {
                        (true, _) => complete(batch, tp.1, -1),
                        (false, Some(p)) if p.error_code == 0 => {
                            complete(batch, tp.1, p.base_offset)
                        }
                        (false, Some(p)) => self.retry(
                            tp,
                            batch,
                            ProduceError::Broker(ErrorCode::from_code(p.error_code)),
                        ),
                        (false, None) => self.retry(
                            tp,
                            batch,
                            ProduceError::Unavailable("partition missing from the answer".into()),
                        ),
                    }
                }
            }
            Err(e) => {
                log::warn!("produce to {addr} failed: {e}");
                self.connections.remove(addr);
                for (tp, batch) in batches {
                    self.retry(tp, batch, ProduceError::Unavailable(e.clone()));
                }
            }
        }
    }

    /// The batch as one record batch (format v2) or a magic 0/1 message set, compressed when
    /// configured (a codec that fails falls back to none).
    fn encode(&self, b: &Batch) -> Vec<u8> {
        let magic = self.config.magic;
        let codec = self.config.compression.unwrap_or(0);
        if magic == 2 {
            return record_batch(b, codec).unwrap_or_else(|e| {
                log::warn!("compression failed ({e:?}); sending the batch uncompressed");
                record_batch(b, 0).expect("no codec cannot fail")
            });
        }
        let mut set = Vec::with_capacity(b.bytes + 34 * b.records.len());
        for (i, r) in b.records.iter().enumerate() {
            message::encode_entry(
                &mut set,
                i as i64,
                magic,
                r.timestamp,
                r.key.as_deref(),
                r.value.as_deref(),
            );
        }
        match (codec != 0)
            .then(|| compression::compress(codec, &set).ok())
            .flatten()
        {
            Some(z) => {
                let mut w = Vec::with_capacity(z.len() + 34);
                let ts = b.records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
                message::encode_entry_with_attributes(&mut w, 0, magic, codec, ts, None, Some(&z));
                w
            }
            None => set,
        }
    }

    fn connection(&mut self, addr: &str) -> Result<&mut BlockingChannel, String> {
        if !self.connections.contains_key(addr) {
            let c = BlockingChannel::connect(
                addr,
                &self.config.client_id,
                self.config.request_timeout + Duration::from_secs(5),
            )
            .map_err(|e| format!("{addr}: {e}"))?;
            self.connections.insert(addr.to_owned(), c);
        }
        Ok(self.connections.get_mut(addr).expect("inserted above"))
    }

    /// Retries a batch after backoff (refreshing metadata) when the error is retriable and
    /// attempts remain; otherwise fails every record in it.
    fn retry(&mut self, tp: (String, i32), mut batch: Batch, err: ProduceError) {
        let retriable = match &err {
            ProduceError::Broker(e) => e.is_retriable_for_produce(),
            ProduceError::Unavailable(_) => true,
            _ => false,
        };
        // A retriable error means our metadata may be stale: refresh it whether or not this
        // batch is tried again, or later batches would follow the same stale leader.
        if retriable && let Err(e) = self.refresh_metadata(&tp.0) {
            log::debug!("metadata refresh for {} failed: {e}", tp.0);
        }
        if !retriable || batch.attempts >= self.config.retries {
            log::warn!(
                "giving up on {} record(s) for {}-{}: {err}",
                batch.records.len(),
                tp.0,
                tp.1
            );
            for r in batch.records {
                let _ = r.done.send(Err(err.clone()));
            }
            return;
        }
        batch.attempts += 1;
        batch.ready_at = Instant::now() + self.config.retry_backoff;
        // Back at the front: a retried batch goes before newer ones, keeping order.
        self.batches.entry(tp).or_default().push_front(batch);
    }

    fn fail_all(&mut self, err: ProduceError) {
        for (_, q) in std::mem::take(&mut self.batches) {
            for b in q {
                for r in b.records {
                    let _ = r.done.send(Err(err.clone()));
                }
            }
        }
    }
}

fn complete(batch: Batch, partition: i32, base: i64) {
    for (i, r) in batch.records.into_iter().enumerate() {
        let offset = if base < 0 { -1 } else { base + i as i64 };
        let _ = r.done.send(Ok(RecordMetadata { partition, offset }));
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
