//! Replica fetchers: one thread per source broker copies every partition this broker follows
//! from it, with Fetch requests carrying our broker id as `replica_id`.
//!
//! A follower appends what it fetched with the leader's offsets, and keeps its high watermark
//! at min(leader's HW, own LEO). `partitions` is held while a response is applied, so once
//! `remove_partition` returns the thread appends nothing more to that partition — a
//! LeaderAndIsr can then truncate or take over the log safely (spec C 2.1.1 / 2.2.1).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use super::partition::Partition;
use crate::config::BrokerConfig;
use crate::network::BlockingChannel;
use crate::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use crate::protocol::header::{FETCH, LIST_OFFSETS};
use crate::protocol::offsets::{
    EARLIEST_TIME, LATEST_TIME, ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition,
};
use crate::protocol::{BrokerInfo, ErrorCode};
use crate::protocol::{message, records};

pub type TopicPartition = (String, i32);

/// Pause after a failed fetch (broker gone, partition moving) before trying again.
const BACKOFF: Duration = Duration::from_millis(200);

/// Fetch settings from the broker configuration.
#[derive(Clone)]
struct FetchSettings {
    broker_id: i32,
    max_bytes: i32,
    max_wait: Duration,
    min_bytes: i32,
}

struct Followed {
    partition: Arc<Partition>,
    fetch_offset: i64,
    /// Our log end when we started following: our messages from `fetch_offset` up to here are
    /// checked against the leader's, not fetched again. Equal to `fetch_offset` once done.
    verify_until: i64,
}

struct Fetcher {
    source: BrokerInfo,
    partitions: Mutex<HashMap<TopicPartition, Followed>>,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

pub struct ReplicaFetcherManager {
    settings: FetchSettings,
    fetchers: Mutex<HashMap<i32, Arc<Fetcher>>>,
}

impl ReplicaFetcherManager {
    pub fn new(cfg: &BrokerConfig) -> Self {
        ReplicaFetcherManager {
            settings: FetchSettings {
                broker_id: cfg.broker_id,
                max_bytes: cfg.replica_fetch_max_bytes,
                max_wait: cfg.replica_fetch_wait_max,
                min_bytes: cfg.replica_fetch_min_bytes,
            },
            fetchers: Mutex::new(HashMap::new()),
        }
    }

    /// Starts copying `partition` from `leader`, from offset `from` (our high watermark): what
    /// our log holds beyond it is checked against the leader's before more is appended.
    pub fn add_partition(&self, leader: &BrokerInfo, partition: Arc<Partition>, from: i64) {
        let tp = (partition.topic.clone(), partition.partition);
        self.remove_partition(&tp);
        let mut fetchers = self.fetchers.lock();
        let f = fetchers
            .entry(leader.id)
            .or_insert_with(|| start_fetcher(leader.clone(), self.settings.clone()));
        let verify_until = partition.log.log_end_offset();
        log::info!(
            "[Broker {} {}-{}] fetching from broker {} at offset {from}",
            self.settings.broker_id,
            tp.0,
            tp.1,
            leader.id
        );
        f.partitions.lock().insert(
            tp,
            Followed {
                partition,
                fetch_offset: from.min(verify_until),
                verify_until,
            },
        );
    }

    /// Stops copying a partition; returns once no fetcher will touch its log again.
    pub fn remove_partition(&self, tp: &TopicPartition) {
        let mut fetchers = self.fetchers.lock();
        let mut idle = Vec::new();
        for (id, f) in fetchers.iter() {
            let mut parts = f.partitions.lock();
            parts.remove(tp);
            if parts.is_empty() {
                idle.push(*id);
            }
        }
        for id in idle {
            if let Some(f) = fetchers.remove(&id) {
                f.stop.store(true, Ordering::Release);
            }
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

fn start_fetcher(source: BrokerInfo, settings: FetchSettings) -> Arc<Fetcher> {
    let f = Arc::new(Fetcher {
        source,
        partitions: Mutex::new(HashMap::new()),
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
    });
    let me = f.clone();
    let h = std::thread::Builder::new()
        .name(format!(
            "replica-fetcher-{}-from-{}",
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
        while !self.stop.load(Ordering::Acquire) {
            let request = self.build_request(s);
            if request.topics.is_empty() {
                std::thread::sleep(BACKOFF);
                continue;
            }
            if chan.is_none() {
                match BlockingChannel::connect(
                    addr.clone(),
                    &format!("replica-fetcher-{}", s.broker_id),
                    s.max_wait + Duration::from_secs(30),
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
            let resp: FetchResponse = match c.call(
                FETCH,
                fetch::CLIENT_VERSION,
                &|b| request.encode(b, fetch::CLIENT_VERSION),
                |r| FetchResponse::decode(r, fetch::CLIENT_VERSION),
            ) {
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

    fn build_request(&self, s: &FetchSettings) -> FetchRequest {
        let mut by_topic: HashMap<String, Vec<FetchPartition>> = HashMap::new();
        for ((t, p), f) in self.partitions.lock().iter() {
            by_topic
                .entry(t.clone())
                .or_default()
                .push(FetchPartition::new(*p, f.fetch_offset, s.max_bytes));
        }
        FetchRequest::new(
            s.broker_id,
            s.max_wait.as_millis() as i32,
            s.min_bytes,
            by_topic.into_iter().collect(),
        )
    }

    /// Applies a fetch response under the partition map's lock; false when every partition
    /// failed (worth a pause before the next try).
    fn apply(
        &self,
        tag: &str,
        chan: &mut BlockingChannel,
        s: &FetchSettings,
        req: &FetchRequest,
        resp: FetchResponse,
    ) -> bool {
        let mut parts = self.partitions.lock();
        let mut progress = false;
        for (topic, ps) in resp.topics {
            for p in ps {
                let tp = (topic.clone(), p.partition);
                let requested = req
                    .topics
                    .iter()
                    .find(|t| t.0 == topic)
                    .and_then(|t| t.1.iter().find(|x| x.partition == p.partition));
                let Some(f) = parts.get_mut(&tp) else {
                    continue;
                };
                // Only apply a response to the offset we asked for; anything else is stale.
                if requested.map(|r| r.fetch_offset) != Some(f.fetch_offset) {
                    continue;
                }
                match ErrorCode::from_code(p.error_code) {
                    ErrorCode::None => {
                        progress = true;
                        if let Err(e) = append_fetched(f, &p.message_set, p.high_watermark) {
                            log::error!("{tag} {}-{}: cannot append fetched data: {e}", tp.0, tp.1);
                        }
                        // The leader's log start, moved by DeleteRecords or retention.
                        if p.log_start_offset > f.partition.log.log_start_offset()
                            && let Err(e) =
                                f.partition.log.delete_records_before(p.log_start_offset)
                        {
                            log::error!("{tag} {}-{}: cannot move the log start: {e}", tp.0, tp.1);
                        }
                    }
                    ErrorCode::OffsetOutOfRange => {
                        if let Err(e) = handle_offset_out_of_range(tag, chan, s.broker_id, f) {
                            log::warn!(
                                "{tag} {}-{}: offset out of range and cannot ask the leader: {e}",
                                tp.0,
                                tp.1
                            );
                        } else {
                            progress = true;
                        }
                    }
                    e => log::debug!("{tag} {}-{}: leader answered {e:?}", tp.0, tp.1),
                }
            }
        }
        progress
    }
}

/// Appends the complete messages of a fetched set at the leader's offsets — after checking
/// those we already hold (below `verify_until`) — and moves our high watermark to
/// min(leader's HW, the end of what we know matches the leader).
fn append_fetched(f: &mut Followed, set: &[u8], leader_hw: i64) -> std::io::Result<()> {
    let partition = f.partition.clone();
    let log = &partition.log;
    let mut pos = if f.fetch_offset < f.verify_until {
        match verify_held(f, set)? {
            Some(pos) => pos,
            None => {
                set_follower_hw(f, leader_hw);
                return Ok(()); // more of ours to compare, in the next fetch
            }
        }
    } else {
        0
    };
    let mut start = None;
    let mut end = 0;
    let mut first = 0;
    let mut last = -1;
    for e in records::entries(&set[pos..]) {
        let Ok(e) = e else {
            log_corrupt(f, e.err());
            break;
        };
        // The leader serves from the entry holding the offset; skip anything before it.
        if e.last_offset >= f.fetch_offset {
            if start.is_none() {
                start = Some(pos);
                first = e.first_offset;
            }
            last = e.last_offset;
            end = pos + e.bytes.len();
        }
        pos += e.bytes.len();
    }
    if let Some(start) = start {
        let leo = log.log_end_offset();
        if first < leo {
            // The leader's batch begins below our end: what we hold from there is not the
            // leader's (below the high watermark every replica is byte for byte the same), so
            // it goes, and the leader's entries are fetched again from our new end.
            cut_to(f, first)?;
            log::warn!(
                "[{}-{}] the leader's batch from {first} overlaps our log end {leo}: cut to {}",
                partition.topic,
                partition.partition,
                f.fetch_offset
            );
            set_follower_hw(f, leader_hw);
            return Ok(());
        }
        log.append_with_offsets(&set[start..end], first, last)?;
        f.fetch_offset = last + 1;
    }
    set_follower_hw(f, leader_hw);
    Ok(())
}

/// Truncates our log at `offset` (or at the start of the entry holding it) and fetches and
/// compares from the new end on.
fn cut_to(f: &mut Followed, offset: i64) -> std::io::Result<()> {
    f.partition.log.truncate_to(offset)?;
    f.fetch_offset = f.partition.log.log_end_offset();
    f.verify_until = f.fetch_offset;
    Ok(())
}

fn set_follower_hw(f: &Followed, leader_hw: i64) {
    let known = if f.fetch_offset < f.verify_until {
        f.fetch_offset
    } else {
        f.partition.log.log_end_offset()
    };
    f.partition.set_high_watermark(leader_hw.min(known));
}

fn log_corrupt(f: &Followed, e: Option<message::MessageError>) {
    log::error!(
        "[{}-{}] corrupt message from the leader at {}: {e:?}",
        f.partition.topic,
        f.partition.partition,
        f.fetch_offset
    );
}

/// Compares the leader's entries with ours from `fetch_offset` on. Matching entries are kept
/// (the fetch offset moves past them); at the first difference our log is cut there, and the
/// leader's entries from there on are to be appended: returns their position in `set`. An
/// empty answer means the leader's log ends at `fetch_offset`, so ours is cut there too.
/// `None`: everything compared matched and more of ours remains to compare.
fn verify_held(f: &mut Followed, set: &[u8]) -> std::io::Result<Option<usize>> {
    let partition = f.partition.clone();
    let log = &partition.log;
    let (t, p) = (&partition.topic, partition.partition);
    let mut mine = Vec::new();
    // At least the leader's first entry: ours, if the same, is no larger.
    let read = log.read(f.fetch_offset, set.len().max(1 << 16), None, &mut mine);
    let mut ours = records::entries(&mine).map_while(Result::ok).peekable();
    let mut mine_pos = 0;
    let mut pos = 0;
    let mut any = false;
    let mut matched = false;
    for m in records::entries(set) {
        let Ok(m) = m else { break };
        let entry = m.bytes;
        if m.last_offset < f.fetch_offset {
            pos += entry.len();
            continue;
        }
        any = true;
        if m.last_offset >= f.verify_until {
            f.verify_until = f.fetch_offset;
            return Ok(Some(pos));
        }
        while ours.peek().is_some_and(|o| o.last_offset < m.last_offset) {
            mine_pos += ours.next().map_or(0, |o| o.bytes.len());
        }
        let same = ours.peek().is_some_and(|o| {
            o.last_offset == m.last_offset && mine[mine_pos..mine_pos + o.bytes.len()] == *entry
        });
        if !same {
            if read.is_ok() && matched && ours.peek().is_none() {
                return Ok(None); // our read ended before this entry: compare it next time
            }
            // A batch of the leader's that starts below our fetch offset goes in whole.
            let at = f.fetch_offset.min(m.first_offset.max(0));
            let at = if m.magic == 2 { at } else { f.fetch_offset };
            cut_to(f, at)?;
            log::warn!(
                "[{t}-{p}] our entry ending at offset {} differs from the leader's: log cut at {}",
                m.last_offset,
                f.fetch_offset
            );
            if m.magic == 2 && m.first_offset != f.fetch_offset {
                return Ok(None); // our end is not where this entry starts: fetch from it
            }
            return Ok(Some(pos));
        }
        f.fetch_offset = m.last_offset + 1;
        matched = true;
        pos += entry.len();
    }
    if !any && set.is_empty() {
        // The leader has nothing from `fetch_offset` on: what we hold past it is not in its log.
        cut_to(f, f.fetch_offset)?;
        log::warn!(
            "[{t}-{p}] our log goes past the leader's end: cut at {}",
            f.fetch_offset
        );
        return Ok(Some(set.len()));
    }
    if f.fetch_offset >= f.verify_until {
        f.verify_until = f.fetch_offset;
        return Ok(Some(pos));
    }
    Ok(None)
}

/// Kafka 0.8's rule: when the leader's log ends before our fetch offset, truncate to the
/// leader's end; when it starts after it (retention), drop our log and start at the leader's
/// start.
fn handle_offset_out_of_range(
    tag: &str,
    chan: &mut BlockingChannel,
    me: i32,
    f: &mut Followed,
) -> Result<(), String> {
    let leader_end = leader_offset(chan, me, &f.partition, LATEST_TIME)?;
    let partition = f.partition.clone();
    let log = &partition.log;
    let (t, p) = (&partition.topic, partition.partition);
    if leader_end < f.fetch_offset {
        let ours = f.fetch_offset;
        cut_to(f, leader_end).map_err(|e| e.to_string())?;
        log::warn!(
            "{tag} {t}-{p}: our offset {ours} is past the leader's end {leader_end}; truncated to {}",
            f.fetch_offset
        );
    } else {
        let leader_start = leader_offset(chan, me, &f.partition, EARLIEST_TIME)?;
        log.truncate_fully_and_start_at(leader_start)
            .map_err(|e| e.to_string())?;
        log::warn!(
            "{tag} {t}-{p}: our offset {} is before the leader's start {leader_start}; log reset to start there",
            f.fetch_offset
        );
        f.fetch_offset = leader_start;
        f.verify_until = leader_start;
        f.partition.set_high_watermark(leader_start);
    }
    Ok(())
}

fn leader_offset(
    chan: &mut BlockingChannel,
    me: i32,
    part: &Partition,
    time: i64,
) -> Result<i64, String> {
    let req = ListOffsetsRequest {
        replica_id: me,
        topics: vec![(
            part.topic.clone(),
            vec![OffsetsPartition {
                partition: part.partition,
                time,
                max_num_offsets: 1,
            }],
        )],
    };
    let resp: ListOffsetsResponse = chan
        .request(LIST_OFFSETS, &req)
        .map_err(|e| e.to_string())?;
    let p = resp
        .topics
        .first()
        .and_then(|t| t.1.first())
        .ok_or("empty ListOffsets answer")?;
    if p.error_code != 0 {
        return Err(format!("ListOffsets error {}", p.error_code));
    }
    p.offsets
        .first()
        .copied()
        .ok_or_else(|| "no offset in ListOffsets answer".into())
}
