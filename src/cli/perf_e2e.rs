//! `gregor perf e2e`: end-to-end latency at a fixed rate, as Kafka's `EndToEndLatency` and the
//! OpenMessaging Benchmark measure it. A producer sends messages of `--size` bytes to one
//! partition at `--rate` messages a second for `--seconds`; a consumer in the same process
//! reads that partition; each message's latency is the time it was read minus the time it was
//! *due* to be sent (carried in its value), so a producer that falls behind its schedule is
//! counted too (no coordinated omission). Printed as an HDR histogram's p50/p99/p99.9/max.
//!
//! The producer works as a client with `linger.ms=0` and one request in flight does: what
//! fell due while a request was out goes in the next request, as one record batch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use gregor::client::metadata::partition_leaders;
use gregor::client::partition_consumer::{PartitionConsumer, StartAt};
use gregor::network::BlockingChannel;
use gregor::protocol::header::PRODUCE;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};

/// Produce v7: format v2 batches, as current clients send.
const PRODUCE_VERSION: i16 = 7;
/// Bytes of a value that carry its due time.
const STAMP: usize = 8;
/// Value bytes per request at most: a quarter of the default message.max.bytes.
const BATCH_BYTES: usize = 256 << 10;

#[derive(Args)]
pub struct E2eArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// An existing topic; its replication factor is the one measured
    /// (`gregor topics --create ... --replication-factor N`).
    #[arg(long)]
    topic: String,
    /// The partition written and read.
    #[arg(long, default_value_t = 0)]
    partition: i32,
    /// Messages per second.
    #[arg(long, default_value_t = 10_000)]
    rate: u64,
    /// Bytes of value per message (at least 8: the due time).
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// 1 or -1 (all).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    acks: i16,
    /// How long to send.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

pub fn e2e(a: E2eArgs) -> Result<(), String> {
    if !matches!(a.acks, -1 | 1) {
        return Err(format!("--acks must be 1 or -1, got {}", a.acks));
    }
    if a.size < STAMP || a.rate == 0 || a.seconds == 0 {
        return Err(format!(
            "--size must be at least {STAMP}, --rate and --seconds positive"
        ));
    }
    let total = a.rate * a.seconds;
    // The consumer starts at the log end before the first message is sent.
    let mut consumer = PartitionConsumer::new(
        &a.bootstrap,
        &a.topic,
        Some(a.partition),
        StartAt::Latest,
        "gregor-perf-e2e",
    )?;
    // Connected to the leader before the clock starts: a missing partition is an error now.
    let mut link = PartitionLink {
        bootstrap: a.bootstrap.clone(),
        topic: a.topic.clone(),
        partition: a.partition,
        chan: None,
    };
    link.connect()?;
    let start = Instant::now();
    let failed = Arc::new(AtomicBool::new(false));
    let producer = {
        let failed = failed.clone();
        let (rate, size, acks) = (a.rate, a.size, a.acks);
        std::thread::spawn(move || {
            let r = produce_on_schedule(link, rate, total, size, acks, start);
            if r.is_err() {
                failed.store(true, Ordering::Release);
            }
            r
        })
    };
    let mut hist = super::perf::latency_histogram();
    let deadline = start + Duration::from_secs(a.seconds + 30);
    let mut received = 0u64;
    let mut last_due = None;
    while received < total && Instant::now() < deadline && !failed.load(Ordering::Acquire) {
        for (_, m) in consumer.poll()?.messages {
            let now = start.elapsed();
            let Some(v) = m.value.as_deref().filter(|v| v.len() >= STAMP) else {
                continue;
            };
            let due = u64::from_be_bytes(v[..STAMP].try_into().expect("8 bytes"));
            // A batch sent again after an answer lost in a leader change may be written twice;
            // due times only grow, so a copy is a message whose due time was seen already.
            if last_due.is_some_and(|last| due <= last) {
                continue;
            }
            last_due = Some(due);
            hist.saturating_record((now.as_nanos() as u64).saturating_sub(due) / 1000);
            received += 1;
        }
    }
    let sent_secs = producer
        .join()
        .map_err(|_| "the producer thread panicked")??;
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{total} messages of {} B at {} msg/s (acks {}): sent in {sent_secs:.2} s, {received} received; \
         end-to-end latency ms p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
        a.size,
        a.rate,
        a.acks,
        ms(0.5),
        ms(0.99),
        ms(0.999),
        hist.max() as f64 / 1000.0
    );
    if received < total {
        return Err(format!("only {received} of {total} messages arrived"));
    }
    Ok(())
}

/// Sends message i at `start + i / rate`, batching whatever is due while a request is out;
/// returns the seconds it took to send them all.
#[allow(clippy::too_many_arguments)]
fn produce_on_schedule(
    mut link: PartitionLink,
    rate: u64,
    total: u64,
    size: usize,
    acks: i16,
    start: Instant,
) -> Result<f64, String> {
    let mut value = vec![0u8; size];
    let mut sent = 0u64;
    while sent < total {
        let elapsed = start.elapsed();
        let due = ((elapsed.as_nanos() * u128::from(rate) / 1_000_000_000) as u64 + 1).min(total);
        if due <= sent {
            // The next message's time: sleep to it (at most 1 ms, to stay on schedule).
            let next = Duration::from_nanos(sent * 1_000_000_000 / rate);
            std::thread::sleep(next.saturating_sub(elapsed).min(Duration::from_millis(1)));
            continue;
        }
        // A producer held up (a topic whose followers are still starting, a stall) has a
        // backlog; like a client's batch.size, a cap keeps each request under the broker's
        // message.max.bytes and the rest goes in the requests after it.
        let due = due.min(sent + (BATCH_BYTES / size).max(1) as u64);
        let mut b = BatchBuilder::new();
        for i in sent..due {
            value[..STAMP].copy_from_slice(&due_nanos(i, rate).to_be_bytes());
            b.push(&NewRecord {
                timestamp: 0,
                key: None,
                value: Some(&value),
                headers: &[],
            });
        }
        let set = b.finish(0).map_err(|e| format!("{e:?}"))?;
        link.send_until_accepted(&set, acks)?;
        sent = due;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// When message `i` falls due, in nanoseconds from the start: its value's first bytes.
fn due_nanos(i: u64, rate: u64) -> u64 {
    i * 1_000_000_000 / rate
}

/// How long one batch may go unaccepted — a leader moving, a broker stalled past its
/// ZooKeeper session — before the run fails, as the producer's `delivery.timeout.ms` bounds it.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The wait before sending a refused batch again, as the producer's `retry.backoff.ms`.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// The producer's way to its partition's leader, found again when the leader changes.
struct PartitionLink {
    bootstrap: String,
    topic: String,
    partition: i32,
    chan: Option<BlockingChannel>,
}

impl PartitionLink {
    /// Sends one batch until the leader accepts it, finding the leader again after an answer a
    /// producer retries or a lost connection; any other answer ends the run.
    fn send_until_accepted(&mut self, set: &[u8], acks: i16) -> Result<(), String> {
        let deadline = Instant::now() + DELIVERY_TIMEOUT;
        loop {
            let refused = match self.send(set, acks)? {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "partition {}: not accepted in {DELIVERY_TIMEOUT:?}: {refused}",
                    self.partition
                ));
            }
            log::info!("partition {}: {refused}; sending again", self.partition);
            self.chan = None;
            std::thread::sleep(RETRY_BACKOFF);
        }
    }

    /// One attempt: `Ok(Err(why))` when it may be tried again, `Err` when it may not.
    fn send(&mut self, set: &[u8], acks: i16) -> Result<Result<(), String>, String> {
        if let Err(e) = self.connect() {
            return Ok(Err(e));
        }
        let chan = self.chan.as_mut().expect("connected above");
        let topics = [(self.topic.as_str(), vec![(self.partition, set)])];
        let req = ProduceSets {
            acks,
            timeout_ms: 30_000,
            topics: &topics,
        };
        let r: ProduceResponse = match chan.send(PRODUCE, PRODUCE_VERSION, &req) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e.to_string())),
        };
        match super::perf::partition_outcome(&r, self.partition) {
            Ok(()) => Ok(Ok(())),
            Err((code, why)) if code.is_retriable_for_produce() => Ok(Err(why)),
            Err((_, why)) => Err(why),
        }
    }

    fn connect(&mut self) -> Result<(), String> {
        if self.chan.is_none() {
            let leaders = partition_leaders(
                &self.bootstrap,
                &self.topic,
                "gregor-perf-e2e",
                Duration::from_secs(10),
            )?;
            let leader = leaders.get(&self.partition).ok_or_else(|| {
                format!("topic `{}` has no partition {}", self.topic, self.partition)
            })?;
            let c = BlockingChannel::connect(leader, "gregor-perf-e2e", Duration::from_secs(30))
                .map_err(|e| format!("{leader}: {e}"))?;
            self.chan = Some(c);
        }
        Ok(())
    }
}
