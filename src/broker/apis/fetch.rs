//! Fetch (key 1): parked until `min_bytes` or `max_wait_ms`, woken only by its own
//! partitions (`purgatory`). The records are slices
//! of the segment files, sent with `sendfile` (they never enter the broker's memory); a
//! consumer at a version that cannot read format v2 (v0–v3) gets batches down-converted, in
//! memory, bounded like every answer by `fetch.max.bytes`.

use crate::security::acl::{Operation, ResourceType};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::sync::atomic::Ordering;

use super::{KafkaApis, RequestContext};
use crate::broker::client_quotas::QuotaKind;
use crate::broker::fetch_budget::FetchBudget;
use crate::broker::partition::Partition;
use crate::broker::purgatory::{Parked, Watch};
use crate::log::{FirstEntry, LogError};
use crate::network::{Action, Response};
use crate::protocol::fetch::{self, FetchRequest, PartitionHead, READ_COMMITTED};
use crate::protocol::{ErrorCode, Out, records};

/// A Fetch answer being written: file slices are spliced in between its pieces.
type Answer<'o> = Out<'o, Response>;

/// What one pass over a fetch's partitions read.
#[derive(Default)]
struct Pass {
    /// Each partition read, with its record bytes.
    read: Vec<(Arc<Partition>, usize)>,
    /// The sum of their events counts (`Watchers::events`) before they were read.
    events: u64,
}

impl Pass {
    fn clear(&mut self) {
        self.read.clear();
        self.events = 0;
    }
}

/// One partition's part of an answer.
struct Read {
    part: Arc<Partition>,
    /// Record bytes written.
    bytes: usize,
    /// Whether it had records past the fetch offset (the budget's business).
    had_data: bool,
    events: u64,
}

impl KafkaApis {
    /// Fetch: up to the high watermark for consumers and the log end offset for followers.
    /// Parks (no polling) until `min_bytes` are readable or `max_wait_ms` passes, looking again
    /// only when one of its partitions grows, moves its high watermark or changes role. An
    /// incremental fetch of a session gets FETCH_SESSION_ID_NOT_FOUND: sessions are not kept,
    /// and the client falls back to full fetches. A follower's fetch (`replica_id` ≥ 0) that
    /// arrives on a client listener while an inter-broker one exists is refused before it
    /// moves any follower position (a client posing as a follower could otherwise advance the
    /// high watermark over writes no follower has).
    pub(super) fn handle_fetch(
        &self,
        req: &FetchRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (version, conn) = (cx.version, cx.conn);
        let out = &mut cx.writer(out);
        if req.replica_id >= 0 && !conn.inter_broker {
            log::warn!(
                "[Broker {}] refusing a fetch as replica {} from {} on listener {}: followers fetch on {}",
                self.broker_id,
                req.replica_id,
                conn.peer,
                conn.listener,
                self.config.listeners.inter_broker
            );
            self.write_error_partitions(req, ErrorCode::TopicAuthorizationFailed, out);
            return Action::Respond;
        }
        // A follower needs ClusterAction (Kafka's answer otherwise: every partition refused);
        // a consumer Read on each topic.
        if req.replica_id >= 0 && !self.cluster_allowed(cx, Operation::ClusterAction) {
            self.write_error_partitions(req, ErrorCode::TopicAuthorizationFailed, out);
            return Action::Respond;
        }
        let denied: Vec<&str> = if req.replica_id < 0 && self.authorizer.enabled() {
            req.topics
                .iter()
                .map(|(t, _)| t.as_str())
                .filter(|t| !self.allowed(cx, Operation::Read, ResourceType::Topic, t))
                .collect()
        } else {
            Vec::new()
        };
        if version >= 7 && req.session_id != 0 {
            fetch::write_response_head(out, ErrorCode::FetchSessionIdNotFound.code());
            out.put_len(Some(0));
            out.put_tags();
            return Action::Respond;
        }
        if req.replica_id >= 0 {
            let rm = &self.replica_manager;
            let positions = req.topics.iter().flat_map(|(t, parts)| {
                parts.iter().filter_map(move |p| {
                    rm.get_partition(t, p.partition)
                        .map(|part| (part, p.fetch_offset))
                })
            });
            rm.record_follower_positions(req.replica_id, positions);
        }
        let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
        let start = out.len();
        let mut pass = Pass::default();
        let first = conn.fetch_start.load(Ordering::Relaxed);
        // A consumer with a byte-rate quota gets at most one quota window's worth per answer.
        let allowance = (req.replica_id < 0 && self.quotas.active())
            .then(|| {
                self.quotas
                    .window_allowance(QuotaKind::Fetch, cx.user(), cx.client_id())
            })
            .flatten()
            .map_or(usize::MAX, |b| b.max(1.0) as usize);
        let mut parked: Option<Parked<'_>> = None;
        loop {
            out.truncate(start);
            pass.clear();
            let (bytes, errors, next) =
                self.write_fetch_response(req, out, (first, allowance, &denied), &mut pass);
            let enough = bytes >= req.min_bytes.max(0) as usize;
            if req.max_wait_ms <= 0
                || errors
                || enough
                || req.topics.is_empty()
                || Instant::now() >= deadline
            {
                conn.fetch_start.store(next, Ordering::Relaxed);
                if req.replica_id < 0 {
                    cx.charge(&self.quotas, QuotaKind::Fetch, bytes as f64);
                }
                for (part, n) in pass.read.iter().filter(|(_, n)| *n > 0) {
                    part.metrics.fetched(*n as u64, req.replica_id >= 0);
                    if req.replica_id >= 0 && part.leader_throttles(req.replica_id) {
                        self.replica_manager.leader_quota.record(*n as u64);
                    }
                }
                return Action::Respond;
            }
            // A follower held back by the leader's replication throttle wakes when the
            // throttle lets it go again, not at the end of its wait (a zero delay: nothing is
            // held back, and the wait is the request's).
            let held_for = match req.replica_id >= 0 {
                true => self.replica_manager.leader_quota.delay(),
                false => Duration::ZERO,
            };
            let wake = match held_for.is_zero() {
                true => deadline,
                false => deadline.min(Instant::now() + held_for),
            };
            if let Some(p) = &parked {
                p.sleep_until(wake);
                continue;
            }
            // Listed in the partitions' watchers, then sleeps at once unless an event came
            // since it looked at them (`purgatory`: then it looks again first).
            let on = if req.replica_id >= 0 {
                Watch::LogEnd
            } else {
                Watch::HighWatermark
            };
            let watched = pass.read.iter().map(|(part, _)| (part.clone(), on));
            let p = Parked::watch(&self.replica_manager.purgatory.fetch, watched);
            if p.events() == pass.events {
                p.sleep_until(wake);
            }
            parked = Some(p);
        }
    }

    /// Writes the whole fetch response, serving partitions from request position `first`
    /// (see `fetch_budget`); returns the record bytes included, whether any partition had
    /// an error, and where the connection's next answer starts. The request's `max_bytes`
    /// (v3+) and the broker's `fetch.max.bytes` (every version; Kafka's rule) bound the
    /// record bytes of the whole answer, so a request naming one partition many times gets
    /// no more than that either. `pass` gets each partition read, with its record bytes (for
    /// the metrics) and its events count as it was before the read (for parking).
    fn write_fetch_response(
        &self,
        req: &FetchRequest,
        out: &mut Answer<'_>,
        (first, allowance, denied): (usize, usize, &[&str]),
        pass: &mut Pass,
    ) -> (usize, bool, usize) {
        let version = out.version();
        let cap = (self.config.fetch_max_bytes.max(0) as usize).min(allowance);
        let request_max = (req.max_bytes.max(0) as usize).min(cap);
        let partitions = req.topics.iter().map(|(_, ps)| ps.len()).sum();
        let mut budget = FetchBudget::new(version, request_max, partitions, first);
        let mut total = 0;
        let mut errors = false;
        write_partitions(
            req,
            budget.start(),
            out,
            |index, topic, p, out| match denied
                .contains(&topic)
                .then_some(ErrorCode::TopicAuthorizationFailed)
                .map_or_else(
                    || {
                        let reader = (req.replica_id, req.isolation_level);
                        self.read_partition(topic, p, reader, &budget, out)
                    },
                    Err,
                ) {
                Ok(Read {
                    part,
                    bytes: n,
                    had_data,
                    events,
                }) => {
                    budget.took(index, n, had_data);
                    total += n;
                    pass.events += events;
                    pass.read.push((part, n));
                }
                Err(e) => {
                    errors = true;
                    fetch::write_error_partition(out, p.partition, e.code());
                }
            },
        );
        (total, errors, budget.next_start())
    }

    /// Answers every partition of `req` with `code` (Kafka's answer to a follower fetch
    /// without the ClusterAction right: TOPIC_AUTHORIZATION_FAILED per partition).
    fn write_error_partitions(&self, req: &FetchRequest, code: ErrorCode, out: &mut Answer<'_>) {
        write_partitions(req, 0, out, |_, _, p, out| {
            fetch::write_error_partition(out, p.partition, code.code());
        });
    }

    /// Writes one partition's answer (head + records) into `o` within what `budget` allows,
    /// for the replica or consumer `reader` (replica id, isolation level). On error writes
    /// nothing.
    fn read_partition(
        &self,
        topic: &str,
        p: &fetch::FetchPartition,
        (replica_id, isolation_level): (i32, i8),
        budget: &FetchBudget,
        o: &mut Answer<'_>,
    ) -> Result<Read, ErrorCode> {
        let part = self.partition(topic, p.partition)?;
        // Before anything of its state is read: an event after this changes the count.
        let events = part.watchers.events();
        part.check_leader(
            p.current_leader_epoch,
            replica_id != fetch::DEBUGGING_REPLICA_ID,
        )?;
        let hw = part.high_watermark();
        let lso = part.log.last_stable_offset();
        // Followers read to the log end offset; consumers only what the ISR has, and a
        // `read_committed` one only up to the last stable offset, told which aborted
        // transactions' records to drop.
        let read_committed = replica_id < 0 && isolation_level == READ_COMMITTED;
        let max_offset = (replica_id < 0).then_some(if read_committed { lso } else { hw });
        let aborted: Option<Vec<(i64, i64)>> = read_committed.then(|| {
            part.log
                .aborted_transactions(p.fetch_offset, lso)
                .iter()
                .map(|a| (a.producer_id, a.first_offset))
                .collect()
        });
        if p.max_bytes < 0 {
            return Err(ErrorCode::InvalidFetchSize);
        }
        let (max_bytes, first_entry) = budget.limit(p.max_bytes as usize);
        let had_data = p.fetch_offset < max_offset.unwrap_or_else(|| part.log.log_end_offset());
        let head = PartitionHead {
            partition: p.partition,
            error_code: 0,
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: part.log.log_start_offset(),
            aborted: aborted.as_deref(),
        };
        let head_at = o.len();
        let at = fetch::write_partition_head(o, &head);
        let magic = fetch::readable_magic(o.version());
        // Once the answer's budget is spent, later partitions get no records: no read at all
        // (a 1,000-partition fetch with a small budget looked into every segment), unless
        // the offset is out of range, which the read reports.
        let in_range =
            (part.log.log_start_offset()..=part.log.log_end_offset()).contains(&p.fetch_offset);
        // A throttled follower over the leader's replication throttle gets no records
        // (KIP-73), its fetch otherwise answered as ever.
        let held = replica_id >= 0
            && part.leader_throttles(replica_id)
            && self.replica_manager.leader_quota.exceeded();
        let spent = in_range && ((max_bytes == 0 && first_entry != FirstEntry::Whole) || held);
        let read_result = if spent {
            if replica_id < 0 && magic < 2 {
                fetch::finish_partition(o, at);
            } else {
                fetch::put_records_len(o, at, 0);
                fetch::finish_records(o);
            }
            Ok(0)
        } else if replica_id < 0 && magic < 2 {
            self.read_down_converted(
                &part,
                p.fetch_offset,
                max_bytes,
                max_offset,
                magic,
                o.bytes(),
            )
            .inspect(|_| fetch::finish_partition(o, at))
        } else {
            part.log
                .read_slice(p.fetch_offset, max_bytes, max_offset, first_entry)
                .map(|slice| {
                    let len = slice.as_ref().map_or(0, |s| s.len);
                    fetch::put_records_len(o, at, len);
                    if let Some(s) = slice {
                        o.push_slice(s);
                    }
                    fetch::finish_records(o);
                    len
                })
        };
        let read = |part, bytes, had_data| Read {
            part,
            bytes,
            had_data,
            events,
        };
        match read_result {
            Ok(n) => Ok(read(part, n, had_data)),
            Err(e) => {
                o.truncate(head_at);
                match e {
                    LogError::OffsetOutOfRange { .. } => {
                        // A consumer between what it may read (HW or LSO) and LEO is not
                        // out of range: it just waits.
                        if max_offset.is_some_and(|bound| p.fetch_offset > bound)
                            && p.fetch_offset <= part.log.log_end_offset()
                        {
                            let at = fetch::write_partition_head(o, &head);
                            fetch::finish_partition(o, at);
                            return Ok(read(part, 0, false));
                        }
                        log::debug!(
                            "[Broker {} {topic}-{}] fetch {e}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::OffsetOutOfRange)
                    }
                    LogError::Io(io) => {
                        log::error!(
                            "[Broker {} {topic}-{}] read failed: {io}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::UnknownServerError)
                    }
                }
            }
        }
    }

    /// Reads for a fetcher that only knows magic `magic` (0 or 1): stored batches are
    /// converted to messages of that magic; a stored set without batches is served as is.
    /// At least the first whole entry is read, so a batch larger than `max_bytes` still
    /// yields its first message.
    fn read_down_converted(
        &self,
        part: &Partition,
        offset: i64,
        max_bytes: usize,
        max_offset: Option<i64>,
        magic: i8,
        o: &mut Vec<u8>,
    ) -> Result<usize, LogError> {
        let mut stored = Vec::new();
        part.log.read(offset, max_bytes, max_offset, &mut stored)?;
        if !records::has_batches(&stored) {
            o.extend_from_slice(&stored);
            return Ok(stored.len());
        }
        if records::entries(&stored).next().is_none()
            && let Some(len) = stored.get(8..12)
        {
            let whole = 12 + i32::from_be_bytes([len[0], len[1], len[2], len[3]]).max(0) as usize;
            stored.clear();
            part.log.read(offset, whole, max_offset, &mut stored)?;
        }
        let before = o.len();
        if let Err(e) = records::down_convert(&stored, magic, offset, max_bytes, o) {
            log::error!(
                "[Broker {} {}-{}] cannot down-convert stored batches at {offset}: {e:?}",
                self.broker_id,
                part.topic,
                part.partition
            );
        }
        Ok(o.len() - before)
    }
}

/// Writes a fetch response's head and topics, with `partition(index, topic, p, out)` writing
/// each partition's answer, from request position `start` round to the one before it (the
/// topic `start` falls inside is written in two parts, its later partitions first).
fn write_partitions(
    req: &FetchRequest,
    start: usize,
    out: &mut Answer<'_>,
    mut partition: impl FnMut(usize, &str, &fetch::FetchPartition, &mut Answer<'_>),
) {
    fetch::write_response_head(out, 0);
    // Request positions where each topic's partitions begin.
    let mut begin = 0;
    let mut split = None;
    for (t, (_, parts)) in req.topics.iter().enumerate() {
        if start > begin && start < begin + parts.len() {
            split = Some((t, start - begin));
        }
        begin += parts.len();
    }
    let runs = req.topics.len() + usize::from(split.is_some());
    out.put_len(Some(runs));
    let mut write_run = |topic: &str, parts: &[fetch::FetchPartition], first_index: usize| {
        out.put_str(topic);
        out.put_len(Some(parts.len()));
        for (k, p) in parts.iter().enumerate() {
            partition(first_index + k, topic, p, out);
        }
        out.put_tags();
    };
    // (topic, its first request position), from the one holding `start` round.
    let mut positions = Vec::with_capacity(req.topics.len());
    let mut at = 0;
    for (topic, parts) in &req.topics {
        positions.push((topic.as_str(), parts.as_slice(), at));
        at += parts.len();
    }
    let first_topic = positions
        .iter()
        .position(|(_, parts, at)| start < at + parts.len())
        .unwrap_or(0);
    let n = positions.len();
    for k in 0..n {
        let (topic, parts, at) = positions[(first_topic + k) % n];
        match split {
            Some((t, cut)) if t == (first_topic + k) % n => {
                write_run(topic, &parts[cut..], at + cut)
            }
            _ => write_run(topic, parts, at),
        }
    }
    if let Some((t, cut)) = split {
        let (topic, parts, at) = positions[t];
        write_run(topic, &parts[..cut], at);
    }
    out.put_tags();
}
