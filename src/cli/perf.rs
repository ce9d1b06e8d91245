//! `gregor perf produce|consume|ceiling|e2e|idle-fetch`: Kafka's perf-test tools (`e2e` in
//! `perf_e2e`, `idle-fetch` in `perf_idle`). A progress line every few seconds,
//! then messages/s, MB/s and (produce) request latency percentiles.
//!
//! The producer encodes one message set of `--batch-size` messages per thread and sends it
//! again and again (the broker assigns offsets in its own copy), so the tool spends no time per
//! message and measures the broker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use hdrhistogram::Histogram;

use gregor::client::metadata::partition_leaders_as;
use gregor::network::{BlockingChannel, ClientSecurity};
use gregor::protocol::encode_body;
use gregor::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use gregor::protocol::header::{FETCH, PRODUCE};
use gregor::protocol::produce::{ProduceResponse, ProduceSets};
use gregor::protocol::record_batch::{BatchBuilder, NewRecord};
use gregor::protocol::{ErrorCode, compression, message, records};

const PROGRESS_EVERY: Duration = Duration::from_secs(3);

#[derive(Subcommand)]
pub enum PerfCommand {
    /// Produce N messages of SIZE bytes as fast as the cluster takes them.
    Produce(ProduceArgs),
    /// Read N messages from the start of every partition.
    Consume(ConsumeArgs),
    /// The machine's own ceiling for the same bytes: raw loopback TCP and sequential disk write;
    /// with --stall-seconds, how late a sleeping thread wakes (the floor under latency).
    Ceiling(super::perf_ceiling::CeilingArgs),
    /// End-to-end latency (send to receive) at a fixed rate, through one partition.
    E2e(super::perf_e2e::E2eArgs),
    /// Hold N long-poll fetches on partitions nobody writes to (idle consumers).
    IdleFetch(super::perf_idle::IdleFetchArgs),
    /// Connections per second that complete their TLS handshake and SASL login.
    Connect(super::perf_connect::ConnectArgs),
}

/// Where and how much: the flags both perf commands take.
#[derive(Args)]
pub struct Target {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// The topic to write or read (every partition of it).
    #[arg(long)]
    topic: String,
    /// How many messages to send, or to read before stopping.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Client properties for a TLS or SASL listener (`security.protocol`, `ssl.*`, `sasl.*`).
    #[arg(long = "command-config", value_name = "FILE")]
    command_config: Option<std::path::PathBuf>,
}

impl Target {
    fn security(&self) -> Result<ClientSecurity, String> {
        match &self.command_config {
            Some(p) => super::command_config::read(p),
            None => Ok(ClientSecurity::default()),
        }
    }

    /// The leader of every partition; a topic just created gets a few seconds to have them.
    fn leaders(&self) -> Result<BTreeMap<i32, String>, String> {
        partition_leaders_as(
            &self.bootstrap,
            &self.topic,
            "gregor-perf",
            Duration::from_secs(10),
            &self.security()?,
        )
    }
}

#[derive(Args)]
pub struct ProduceArgs {
    #[command(flatten)]
    target: Target,
    /// Bytes of value per message.
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// 0, 1 or -1 (all).
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    acks: i16,
    /// Messages per produce request.
    #[arg(long = "batch-size", default_value_t = 200)]
    batch_size: usize,
    /// Producing threads, each with its own connections.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Compress each batch: none, gzip, snappy, lz4 or zstd. The batch is compressed once, up
    /// front, so the figure is the broker's cost.
    #[arg(long, default_value = "none")]
    compression: String,
    /// Message format: 2 (record batches, Produce v3), 1 (0.10, with timestamps; Produce v2)
    /// or 0 (Kafka 0.8, Produce v0).
    #[arg(long, default_value_t = 2)]
    magic: i8,
    /// Give messages keys, `key-0` to `key-(N-1)` in turn (a compacted topic needs keys; N
    /// distinct keys make N latest values). Each request's batch is then encoded as it is
    /// sent (format 2 only), which costs the tool time per message.
    #[arg(long, value_name = "N")]
    keys: Option<u64>,
}

/// Batch number `b` of `batch` messages of `value` whose keys cycle through `keys`.
fn keyed_batch(
    b: u64,
    batch: usize,
    keys: u64,
    value: &[u8],
    codec: Option<i8>,
) -> Result<Vec<u8>, String> {
    let mut builder = BatchBuilder::new();
    for i in 0..batch as u64 {
        let key = format!("key-{}", (b * batch as u64 + i) % keys);
        builder.push(&NewRecord {
            timestamp: 0,
            key: Some(key.as_bytes()),
            value: Some(value),
            headers: &[],
        });
    }
    builder
        .finish(codec.unwrap_or(0))
        .map_err(|e| format!("{e:?}"))
}

/// The Produce version that carries message format `magic`.
fn produce_version(magic: i8) -> i16 {
    match magic {
        2 => 3,
        1 => 2,
        _ => 0,
    }
}

/// One produce request's record set: `batch` messages of `value`, as one record batch (format
/// v2) or a message set wrapped in one compressed message when `codec` is set.
fn batch_set(batch: usize, value: &[u8], magic: i8, codec: Option<i8>) -> Result<Vec<u8>, String> {
    if magic == 2 {
        let mut b = BatchBuilder::new();
        for _ in 0..batch {
            b.push(&NewRecord {
                timestamp: 0,
                key: None,
                value: Some(value),
                headers: &[],
            });
        }
        return b.finish(codec.unwrap_or(0)).map_err(|e| format!("{e:?}"));
    }
    let mut set = Vec::with_capacity(batch * (value.len() + 34));
    for i in 0..batch {
        message::encode_entry(&mut set, i as i64, magic, 0, None, Some(value));
    }
    let Some(codec) = codec else {
        return Ok(set);
    };
    let z = compression::compress(codec, &set).map_err(|e| e.to_string())?;
    let mut wrapped = Vec::with_capacity(z.len() + 34);
    message::encode_entry_with_attributes(
        &mut wrapped,
        batch as i64 - 1,
        magic,
        codec,
        0,
        None,
        Some(&z),
    );
    Ok(wrapped)
}

#[derive(Args)]
pub struct ConsumeArgs {
    #[command(flatten)]
    target: Target,
    /// Bytes per partition per fetch.
    #[arg(long = "fetch-size", default_value_t = 1 << 20)]
    fetch_size: i32,
}

pub fn run(cmd: PerfCommand) -> Result<(), String> {
    match cmd {
        PerfCommand::Produce(a) => produce(a),
        PerfCommand::Consume(a) => consume(a),
        PerfCommand::Ceiling(a) => super::perf_ceiling::ceiling(a),
        PerfCommand::E2e(a) => super::perf_e2e::e2e(a),
        PerfCommand::IdleFetch(a) => super::perf_idle::idle_fetch(a),
        PerfCommand::Connect(a) => super::perf_connect::connect(a),
    }
}

pub(super) fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn produce(a: ProduceArgs) -> Result<(), String> {
    if !matches!(a.acks, -1..=1) {
        return Err(format!("--acks must be 0, 1 or -1, got {}", a.acks));
    }
    if a.batch_size == 0 || a.threads == 0 {
        return Err("--batch-size and --threads must be positive".into());
    }
    if !matches!(a.magic, 0..=2) {
        return Err(format!("--magic must be 0, 1 or 2, got {}", a.magic));
    }
    if a.keys == Some(0) || (a.keys.is_some() && a.magic != 2) {
        return Err("--keys needs a positive count and --magic 2".into());
    }
    let codec = compression::codec_by_name(&a.compression)?;
    let leaders = a.target.leaders()?;
    let security = a.target.security()?;
    let batches = a.target.messages.div_ceil(a.batch_size as u64);
    let next_batch = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..a.threads {
        let (leaders, next, sent, failed, security) = (
            leaders.clone(),
            next_batch.clone(),
            sent.clone(),
            failed.clone(),
            security.clone(),
        );
        let value: Vec<u8> = (0..a.size).map(|i| (i * 31 + t) as u8).collect();
        let set = match a.keys {
            None => Sending::Same(batch_set(a.batch_size, &value, a.magic, codec)?),
            Some(keys) => Sending::Keyed { keys, value, codec },
        };
        let (topic, acks, batch) = (a.target.topic.clone(), a.acks, a.batch_size);
        let version = produce_version(a.magic);
        handles.push(std::thread::spawn(move || {
            produce_thread(
                (&leaders, &security),
                &topic,
                acks,
                version,
                &set,
                batch,
                batches,
                &next,
                &sent,
                &failed,
            )
        }));
    }
    let total_bytes = |n: u64| n * a.size as u64;
    let mut last = (Instant::now(), 0u64);
    while handles.iter().any(|h| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(100));
        if last.0.elapsed() >= PROGRESS_EVERY {
            let n = sent.load(Ordering::Relaxed);
            let rate = (n - last.1) as f64 / last.0.elapsed().as_secs_f64();
            println!(
                "{n} messages sent, {rate:.0} msg/s, {:.1} MB/s",
                mb(total_bytes(n - last.1)) / last.0.elapsed().as_secs_f64()
            );
            last = (Instant::now(), n);
        }
    }
    let mut hist = latency_histogram();
    let mut end = start;
    for h in handles {
        let (part, done) = h.join().map_err(|_| "a producer thread panicked")??;
        hist.add(part).map_err(|e| e.to_string())?;
        end = end.max(done);
    }
    let secs = (end - start).as_secs_f64();
    let n = sent.load(Ordering::Relaxed);
    println!(
        "{n} messages, {:.0} msg/s, {:.1} MB/s, {:.2} s; request latency ms p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
        n as f64 / secs,
        mb(total_bytes(n)) / secs,
        secs,
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0,
        hist.value_at_quantile(0.999) as f64 / 1000.0,
        hist.max() as f64 / 1000.0
    );
    Ok(())
}

/// What each produce request carries.
enum Sending {
    /// One batch, encoded once and sent again and again.
    Same(Vec<u8>),
    /// A batch encoded per request, with keys cycling through `keys`.
    Keyed {
        keys: u64,
        value: Vec<u8>,
        codec: Option<i8>,
    },
}

#[allow(clippy::too_many_arguments)]
fn produce_thread(
    (leaders, security): (&BTreeMap<i32, String>, &ClientSecurity),
    topic: &str,
    acks: i16,
    version: i16,
    set: &Sending,
    batch: usize,
    batches: u64,
    next: &AtomicU64,
    sent: &AtomicU64,
    failed: &AtomicBool,
) -> Result<(Histogram<u64>, Instant), String> {
    let mut hist = latency_histogram();
    let mut chans: BTreeMap<String, BlockingChannel> = BTreeMap::new();
    let parts: Vec<(&i32, &String)> = leaders.iter().collect();
    loop {
        if failed.load(Ordering::Relaxed) {
            return Ok((hist, Instant::now()));
        }
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= batches {
            return Ok((hist, Instant::now()));
        }
        let (partition, addr) = parts[(b as usize) % parts.len()];
        if !chans.contains_key(addr) {
            let c =
                BlockingChannel::connect_to(addr, "gregor-perf", Duration::from_secs(30), security)
                    .map_err(|e| format!("{addr}: {e}"))?;
            chans.insert(addr.clone(), c);
        }
        let chan = chans.get_mut(addr).expect("inserted above");
        let keyed;
        let set: &[u8] = match set {
            Sending::Same(s) => s,
            Sending::Keyed { keys, value, codec } => {
                keyed = keyed_batch(b, batch, *keys, value, *codec)?;
                &keyed
            }
        };
        let topics = [(topic, vec![(*partition, set)])];
        let req = ProduceSets {
            acks,
            timeout_ms: 30_000,
            topics: &topics,
        };
        let t0 = Instant::now();
        if acks == 0 {
            chan.send_only(PRODUCE, version, &|b| {
                encode_body(&req, b, PRODUCE, version)
            })
            .map_err(|e| e.to_string())?;
        } else {
            let r: ProduceResponse = chan
                .send(PRODUCE, version, &req)
                .map_err(|e| e.to_string())?;
            if let Err((_, e)) = partition_outcome(&r, *partition) {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        hist.saturating_record(t0.elapsed().as_micros() as u64);
        sent.fetch_add(batch as u64, Ordering::Relaxed);
    }
}

/// A histogram of latencies in microseconds, with 3 significant digits, up to an hour. The
/// bounds are set because `saturating_record` on an auto-resizing histogram does not resize:
/// it clamps at the histogram's first range, about 2 ms, which hid every slower latency.
pub(super) fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// The error of a one-partition Produce answer, with its name for the user.
pub(super) fn partition_outcome(
    r: &ProduceResponse,
    partition: i32,
) -> Result<(), (ErrorCode, String)> {
    let code = r
        .topics
        .first()
        .and_then(|t| t.1.first())
        .map_or(ErrorCode::UnknownServerError, |p| {
            ErrorCode::from_code(p.error_code)
        });
    if code == ErrorCode::None {
        return Ok(());
    }
    Err((
        code,
        format!("partition {partition}: broker answered {code:?}"),
    ))
}

fn consume(a: ConsumeArgs) -> Result<(), String> {
    let leaders = a.target.leaders()?;
    let security = a.target.security()?;
    let mut chans: BTreeMap<String, BlockingChannel> = BTreeMap::new();
    let mut offsets: BTreeMap<i32, i64> = leaders.keys().map(|p| (*p, 0)).collect();
    let (mut n, mut bytes) = (0u64, 0u64);
    let start = Instant::now();
    let mut last = (Instant::now(), 0u64);
    let mut idle_rounds = 0;
    while n < a.target.messages {
        let mut progressed = false;
        for (p, addr) in &leaders {
            if !chans.contains_key(addr) {
                let c = BlockingChannel::connect_to(
                    addr,
                    "gregor-perf",
                    Duration::from_secs(30),
                    &security,
                )
                .map_err(|e| format!("{addr}: {e}"))?;
                chans.insert(addr.clone(), c);
            }
            let req = FetchRequest::new(
                -1,
                100,
                1,
                vec![(
                    a.target.topic.clone(),
                    vec![FetchPartition::new(*p, offsets[p], a.fetch_size)],
                )],
            );
            let v = fetch::CLIENT_VERSION;
            let resp = chans
                .get_mut(addr)
                .expect("inserted above")
                .send::<FetchResponse>(FETCH, v, &req)
                .map_err(|e| e.to_string())?;
            let part = &resp.topics[0].1[0];
            if part.error_code != 0 {
                return Err(format!(
                    "partition {p}: broker answered {:?}",
                    ErrorCode::from_code(part.error_code)
                ));
            }
            // Messages are visited in place, with no copy of their keys or values.
            let from = offsets[p];
            let mut next = from;
            let want = a.target.messages;
            records::for_each_message(&part.message_set, |offset, _, _, value, _| {
                // Exactly --messages are counted: a fetch returns whole batches past it.
                if offset >= from && n < want {
                    n += 1;
                    bytes += value.map_or(0, <[u8]>::len) as u64;
                    next = offset + 1;
                }
            })
            .map_err(|e| format!("partition {p}: {e:?}"))?;
            if next > from {
                offsets.insert(*p, next);
                progressed = true;
            }
        }
        idle_rounds = if progressed { 0 } else { idle_rounds + 1 };
        if idle_rounds > 50 {
            println!("no more messages after {n}");
            break;
        }
        if last.0.elapsed() >= PROGRESS_EVERY {
            println!(
                "{n} messages read, {:.0} msg/s",
                (n - last.1) as f64 / last.0.elapsed().as_secs_f64()
            );
            last = (Instant::now(), n);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n} messages, {:.0} msg/s, {:.1} MB/s, {secs:.2} s",
        n as f64 / secs,
        mb(bytes) / secs
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::latency_histogram;

    #[test]
    fn latency_histogram_keeps_latencies_of_seconds() {
        let mut h = latency_histogram();
        for us in [300, 2_500, 40_000, 5_000_000] {
            h.saturating_record(us);
        }
        // Three significant digits: each value comes back within 0.1 %.
        let near = |got: u64, want: u64| got.abs_diff(want) * 1000 <= want;
        assert!(near(h.max(), 5_000_000), "max {}", h.max());
        assert!(
            near(h.value_at_quantile(0.75), 40_000),
            "p75 {}",
            h.value_at_quantile(0.75)
        );
        assert!(
            near(h.value_at_quantile(0.5), 2_500),
            "p50 {}",
            h.value_at_quantile(0.5)
        );
    }
}
