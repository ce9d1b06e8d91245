//! After the faults heal: read every partition from every replica and check the promise —
//! every acknowledged message present exactly once at its acknowledged offset, in order per
//! producer, replicas identical up to the high watermark, and the group saw every one; no
//! message stored twice, acknowledged or not (the plain producers send each once, the
//! idempotent one retries under sequence numbers); the group read nothing that is not in the
//! final log (a read above the high watermark, of a write later cut away); and no committed
//! offset ever held two values (`committed.rs`, sampled during the run); the group's
//! committed offsets never went back (`group_offsets.rs`); and no two brokers led a
//! partition in the same leader epoch (`epochs.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use gregor::protocol::fetch::DEBUGGING_REPLICA_ID;
use gregor::protocol::records::decode_deep;

use crate::cluster::{Cluster, PARTITIONS, TOPIC};
use crate::committed::CommittedLog;
use crate::common::Client;
use crate::group_offsets::GroupOffsets;
use crate::workload::{Ack, IDEMPOTENT, MemberView, value};

#[derive(Debug, Default)]
pub struct Report {
    pub operations: u64,
    pub acknowledged: usize,
    pub lost: usize,
    pub reordered: usize,
    pub divergent_replicas: usize,
    /// Partitions the checker could not read whole (no leader, or a replica not answering):
    /// nothing could be checked there, which fails the run as surely as a divergence.
    pub unreadable_partitions: usize,
    pub consumer_missing: usize,
    /// Acknowledged messages the Kafka-protocol group never consumed (`--hosts`), and how
    /// many it consumed (`None` without that group).
    pub kafka_group_missing: usize,
    pub kafka_group_consumed: Option<usize>,
    pub consumer_duplicates: usize,
    /// Messages stored more than once (acknowledged or not).
    pub duplicated: usize,
    /// Messages the group consumed that no partition's final log holds.
    pub phantom_reads: usize,
    /// Committed offsets (below a replica's high watermark) seen with two values, during the
    /// run or at its end; and how many committed prefixes were read during the run.
    pub committed_changed: usize,
    pub committed_samples: usize,
    pub idempotent_acknowledged: usize,
    /// Fatal errors the idempotent producer reported (librdkafka gives up on idempotence
    /// when the broker's answers contradict its sequence numbers).
    pub producer_fatal: usize,
    /// The group's committed offset seen lower than before.
    pub group_offset_regressions: usize,
    pub group_offset_samples: usize,
    /// (partition, leader epoch) pairs that more than one broker led.
    pub shared_leader_epochs: usize,
    pub longest_unavailable_ms: Vec<u128>,
    /// Transactions read_committed saw wrong (`transactions.rs`): an aborted one, part of one,
    /// a committed one missing or twice.
    pub transaction_violations: usize,
    /// One line per violation (capped), for the failure message.
    pub problems: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.lost == 0
            && self.reordered == 0
            && self.divergent_replicas == 0
            && self.unreadable_partitions == 0
            && self.consumer_missing == 0
            && self.kafka_group_missing == 0
            && self.duplicated == 0
            && self.phantom_reads == 0
            && self.committed_changed == 0
            && self.producer_fatal == 0
            && self.group_offset_regressions == 0
            && self.shared_leader_epochs == 0
            && self.transaction_violations == 0
    }

    /// The Kafka-protocol group's misses, counted, and explained per partition left unread
    /// (`group_stall`) with what its `members` last said and the group's `committed` offsets.
    pub fn add_kafka_group(
        &mut self,
        acks: &[Ack],
        consumed: &[String],
        members: &[MemberView],
        committed: &BTreeMap<i32, i64>,
    ) {
        let seen: BTreeSet<&str> = consumed.iter().map(String::as_str).collect();
        self.kafka_group_consumed = Some(consumed.len());
        self.kafka_group_missing = acks
            .iter()
            .filter(|a| !seen.contains(value(a.producer, a.seq).as_str()))
            .count();
        for line in crate::group_stall::stalled_partitions(acks, &seen, members, committed) {
            self.problem(line);
        }
    }

    pub fn add_group_offsets(&mut self, g: &GroupOffsets) {
        self.group_offset_regressions = g.regressions;
        self.group_offset_samples = g.samples;
        for p in &g.problems {
            self.problem(p.clone());
        }
    }

    pub fn add_shared_epochs(&mut self, shared: Vec<String>) {
        self.shared_leader_epochs = shared.len();
        for p in shared {
            self.problem(p);
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "operations={} acknowledged={} lost={} reordered={} divergent_replicas={} \
             unreadable_partitions={} consumer_missing={} consumer_duplicates={} \
             kafka_group_missing={} kafka_group_consumed={} \
             idempotent_acknowledged={} duplicated={} phantom_reads={} committed_changed={} \
             committed_samples={} producer_fatal={} group_offset_regressions={} \
             group_offset_samples={} shared_leader_epochs={} longest_unavailability_ms={:?}",
            self.operations,
            self.acknowledged,
            self.lost,
            self.reordered,
            self.divergent_replicas,
            self.unreadable_partitions,
            self.consumer_missing,
            self.consumer_duplicates,
            self.kafka_group_missing,
            self.kafka_group_consumed
                .map_or("-".into(), |n| n.to_string()),
            self.idempotent_acknowledged,
            self.duplicated,
            self.phantom_reads,
            self.committed_changed,
            self.committed_samples,
            self.producer_fatal,
            self.group_offset_regressions,
            self.group_offset_samples,
            self.shared_leader_epochs,
            self.longest_unavailable_ms
        )
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < 20 {
            self.problems.push(p);
        }
    }
}

/// A replica's messages from offset 0 up to `upto` (exclusive), read with the debugging
/// replica id so followers answer too; waits (up to a deadline) until the replica's high
/// watermark reaches `upto`. A broker slow to answer (a fetch past the client's 2 s timeout)
/// is asked again until the deadline, and only then reported.
fn read_replica(
    env: &dyn Cluster,
    broker: i32,
    p: i32,
    upto: i64,
) -> Result<Vec<(i64, String)>, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match read_replica_once(env, broker, p, upto) {
            Ok(Some(out)) => return Ok(out),
            Ok(None) | Err(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(None) => return Err(format!("high watermark stays below {upto}")),
            Err(e) => return Err(e),
        }
    }
}

/// A replica's committed prefix: everything below its own high watermark (one pass).
pub fn read_committed(
    env: &dyn Cluster,
    broker: i32,
    p: i32,
) -> Result<Vec<(i64, String)>, String> {
    let (entries, _) = read_below(env, broker, p, i64::MAX)?;
    Ok(entries)
}

/// One pass of `read_replica`: `None` when the replica's high watermark is below `upto`.
fn read_replica_once(
    env: &dyn Cluster,
    broker: i32,
    p: i32,
    upto: i64,
) -> Result<Option<Vec<(i64, String)>>, String> {
    let (out, complete) = read_below(env, broker, p, upto)?;
    Ok(complete.then_some(out))
}

/// Reads a replica from offset 0 below `upto` and its high watermark (a debugging fetch
/// reads no further); says whether it got as far as `upto`.
fn read_below(
    env: &dyn Cluster,
    broker: i32,
    p: i32,
    upto: i64,
) -> Result<(Vec<(i64, String)>, bool), String> {
    let mut c = Client::try_connect(env.addr(broker)).ok_or("cannot connect")?;
    let mut out = Vec::new();
    let mut next = 0;
    let mut hw = 0;
    while next < upto {
        let r = c.try_fetch_v(
            gregor::protocol::fetch::CLIENT_VERSION,
            DEBUGGING_REPLICA_ID,
            TOPIC,
            p,
            next,
            0,
        )?;
        hw = r.high_watermark;
        if r.error_code != 0 {
            return Err(format!("fetch answered {}", r.error_code));
        }
        let msgs = decode_deep(&r.message_set).map_err(|e| format!("{e:?}"))?;
        let before = next;
        for m in msgs
            .into_iter()
            .filter(|m| m.offset >= before && m.offset < upto)
        {
            next = m.offset + 1;
            out.push((
                m.offset,
                String::from_utf8_lossy(m.value.as_deref().unwrap_or(b"")).into_owned(),
            ));
        }
        if next == before {
            break; // this replica's high watermark is below `upto` for now
        }
    }
    Ok((out, next >= upto || hw >= upto))
}

/// The leader's high watermark, asked again (for up to 30 s) while it is slow to answer.
fn leader_hw(env: &dyn Cluster, leader: i32, p: i32) -> Result<i64, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match leader_hw_once(env, leader, p) {
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            r => return r,
        }
    }
}

fn leader_hw_once(env: &dyn Cluster, leader: i32, p: i32) -> Result<i64, String> {
    let mut c = Client::try_connect(env.addr(leader)).ok_or("cannot connect to the leader")?;
    let r = c.try_fetch_v(
        gregor::protocol::fetch::CLIENT_VERSION,
        gregor::protocol::fetch::CONSUMER_REPLICA_ID,
        TOPIC,
        p,
        0,
        0,
    )?;
    if r.error_code != 0 {
        return Err(format!("leader answered {}", r.error_code));
    }
    Ok(r.high_watermark)
}

pub fn check(
    env: &dyn Cluster,
    attempts: u64,
    acks: &[Ack],
    consumed: &[String],
    producer_errors: &[String],
    window: (Instant, Instant),
    committed: &mut CommittedLog,
) -> Report {
    let mut r = Report {
        operations: attempts,
        acknowledged: acks.len(),
        idempotent_acknowledged: acks.iter().filter(|a| a.producer == IDEMPOTENT).count(),
        ..Report::default()
    };
    for e in producer_errors.iter().filter(|e| e.starts_with("fatal")) {
        r.producer_fatal += 1;
        r.problem(format!("the idempotent producer: {e}"));
    }
    let mut stored: BTreeSet<String> = BTreeSet::new();
    for p in 0..PARTITIONS {
        stored.extend(check_partition(env, p, acks, &mut r, committed));
    }
    r.committed_changed = committed.changed;
    r.committed_samples = committed.samples;
    for p in committed.problems.clone() {
        r.problem(p);
    }
    // Order: each producer's acknowledged messages in a partition have rising offsets.
    let mut by_stream: BTreeMap<(u32, i32), Vec<&Ack>> = BTreeMap::new();
    for a in acks {
        by_stream
            .entry((a.producer, a.partition))
            .or_default()
            .push(a);
    }
    for ((prod, p), mut v) in by_stream {
        v.sort_by_key(|a| a.seq);
        for w in v.windows(2) {
            if w[1].offset <= w[0].offset {
                r.reordered += 1;
                r.problem(format!(
                    "producer {prod} partition {p}: seq {} at {} but seq {} at {}",
                    w[0].seq, w[0].offset, w[1].seq, w[1].offset
                ));
            }
        }
    }
    // The group: every acknowledged message consumed at least once, and nothing consumed
    // that the logs do not hold (only checkable where every partition could be read).
    let seen: BTreeSet<&str> = consumed.iter().map(String::as_str).collect();
    if r.unreadable_partitions == 0 {
        for v in seen.iter().filter(|v| !stored.contains(**v)) {
            r.phantom_reads += 1;
            r.problem(format!("the group consumed {v}, which no final log holds"));
        }
    }
    r.consumer_duplicates = consumed.len() - seen.len();
    for a in acks {
        let v = value(a.producer, a.seq);
        if !seen.contains(v.as_str()) {
            r.consumer_missing += 1;
            r.problem(format!("the group never consumed {v}"));
        }
    }
    r.longest_unavailable_ms = longest_gaps(acks, window);
    r
}

/// Checks one partition; returns the messages its final log holds.
fn check_partition(
    env: &dyn Cluster,
    p: i32,
    acks: &[Ack],
    r: &mut Report,
    committed: &mut CommittedLog,
) -> Vec<String> {
    let Some(leader) = env.leader(p) else {
        r.unreadable_partitions += 1;
        r.problem(format!("partition {p} has no leader"));
        return Vec::new();
    };
    let logs: Result<BTreeMap<i32, Vec<(i64, String)>>, String> = leader_hw(env, leader, p)
        .and_then(|hw| {
            env.replicas(p)
                .into_iter()
                .map(|b| read_replica(env, b, p, hw).map(|l| (b, l)))
                .collect()
        });
    let logs = match logs {
        Ok(l) => l,
        Err(e) => {
            r.unreadable_partitions += 1;
            r.problem(format!("partition {p}: cannot read every replica: {e}"));
            return Vec::new();
        }
    };
    for (b, log) in &logs {
        committed.record(p, *b, log);
        if *log != logs[&leader] {
            r.divergent_replicas += 1;
            let at = log.iter().zip(&logs[&leader]).position(|(x, y)| x != y);
            r.problem(format!(
                "partition {p}: broker {b} differs from leader {leader} (first difference at entry {at:?}, lengths {} and {})",
                log.len(),
                logs[&leader].len()
            ));
        }
    }
    let log = &logs[&leader];
    let by_offset: HashMap<i64, &str> = log.iter().map(|(o, v)| (*o, v.as_str())).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, v) in log {
        *count.entry(v.as_str()).or_default() += 1;
    }
    for (v, n) in count.iter().filter(|(_, n)| **n > 1) {
        r.duplicated += 1;
        r.problem(format!("partition {p}: {v} is stored {n} times"));
    }
    for a in acks.iter().filter(|a| a.partition == p) {
        let v = value(a.producer, a.seq);
        if by_offset.get(&a.offset) != Some(&v.as_str()) {
            r.lost += 1;
            r.problem(format!(
                "partition {p}: {v} acknowledged at offset {} but the log has {:?} there",
                a.offset,
                by_offset.get(&a.offset)
            ));
        }
    }
    log.iter().map(|(_, v)| v.clone()).collect()
}

/// Per partition, the longest time without an acknowledgement during the run.
fn longest_gaps(acks: &[Ack], (start, end): (Instant, Instant)) -> Vec<u128> {
    (0..PARTITIONS)
        .map(|p| {
            let mut times: Vec<Instant> = acks
                .iter()
                .filter(|a| a.partition == p)
                .map(|a| a.at)
                .collect();
            times.sort();
            let mut prev = start;
            let mut longest = Duration::ZERO;
            for t in times.into_iter().chain([end]) {
                longest = longest.max(t.saturating_duration_since(prev));
                prev = t;
            }
            longest.as_millis()
        })
        .collect()
}
