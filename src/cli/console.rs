//! `gregor produce`, `gregor consume` and `gregor status`: console tools in the habits of
//! Kafka's scripts and kcat.

use std::io::{BufRead, Write};
use std::time::Duration;

use clap::Args;

use gregor::client::metadata::fetch_metadata;
use gregor::client::partition_consumer::{PartitionConsumer, StartAt};
use gregor::client::producer::{ProduceError, Producer, ProducerConfig};
use gregor::protocol::compression;

#[derive(Args)]
pub struct ProduceArgs {
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    /// Split each line into key and value at the first occurrence of this string.
    #[arg(long = "key-separator")]
    key_separator: Option<String>,
    /// 0, 1 or all (-1).
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    acks: String,
    /// none, gzip, snappy, lz4 or zstd (zstd needs format 2).
    #[arg(long, default_value = "none")]
    compression: String,
    /// Message format: 2 (record batches with timestamps) by default; 1 or 0 for a broker of
    /// the 0.10 / 0.8 era.
    #[arg(long, default_value_t = 2)]
    magic: i8,
}

#[derive(Args)]
pub struct ConsumeArgs {
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// The topic to read (required without --whitelist).
    #[arg(long)]
    pub topic: Option<String>,
    /// Consume as a member of this consumer group, through the coordinator.
    #[arg(long)]
    pub group: Option<String>,
    /// With --group: every topic whose whole name matches this regular expression.
    #[arg(long, conflicts_with = "topic")]
    pub whitelist: Option<String>,
    /// With --group: start from the earliest offset where the group has committed none.
    #[arg(long = "from-beginning")]
    pub from_beginning: bool,
    /// With --group: how often the coordinator pings this consumer.
    #[arg(long = "ping-interval-ms", default_value_t = 1000)]
    pub ping_interval_ms: u64,
    /// With --group: pings missed in a row before the coordinator declares this consumer dead.
    #[arg(long = "max-ping-retries", default_value_t = 3)]
    pub max_ping_retries: i16,
    /// One partition; all when absent.
    #[arg(long)]
    pub partition: Option<i32>,
    /// earliest, latest, or an offset.
    #[arg(long, default_value = "earliest")]
    offset: String,
    /// Stop after this many messages.
    #[arg(long = "max-messages")]
    pub max_messages: Option<u64>,
    /// Stop once every partition is read to its end (like kcat -e).
    #[arg(long = "exit-at-end")]
    exit_at_end: bool,
    #[arg(long = "print-key")]
    pub print_key: bool,
    #[arg(long = "print-offset")]
    pub print_offset: bool,
}

#[derive(Args)]
pub struct StatusArgs {
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    /// Also show the controller, read from ZooKeeper (host:port/chroot).
    #[arg(long)]
    zookeeper: Option<String>,
    /// List only partitions whose ISR is smaller than their replica list.
    #[arg(long = "under-replicated")]
    under_replicated: bool,
    /// List only partitions without a live leader.
    #[arg(long)]
    offline: bool,
}

pub fn produce(a: ProduceArgs) -> Result<(), String> {
    let mut cfg = ProducerConfig::new(&a.bootstrap);
    cfg.client_id = "gregor-console-producer".into();
    cfg.acks = match a.acks.as_str() {
        "0" => 0,
        "1" => 1,
        "all" | "-1" => -1,
        other => return Err(format!("--acks must be 0, 1 or all, got `{other}`")),
    };
    cfg.compression = compression::codec_by_name(&a.compression)?;
    if !matches!(a.magic, 0..=2) {
        return Err(format!("--magic must be 0, 1 or 2, got {}", a.magic));
    }
    if a.magic < 2 && cfg.compression == Some(compression::ZSTD) {
        return Err("--compression zstd needs --magic 2".into());
    }
    cfg.magic = a.magic;
    let producer = Producer::new(cfg).map_err(|e| e.to_string())?;
    let mut handles = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("reading stdin: {e}"))?;
        let (key, value) = match &a.key_separator {
            Some(sep) => match line.split_once(sep.as_str()) {
                Some((k, v)) => (Some(k.as_bytes().to_vec()), v.as_bytes().to_vec()),
                None => (None, line.as_bytes().to_vec()),
            },
            None => (None, line.into_bytes()),
        };
        handles.push(producer.send(&a.topic, key.as_deref(), Some(&value)));
        // Fail early on a topic that does not exist rather than after reading all of stdin.
        if handles.len() == 1 {
            producer.flush();
        }
    }
    producer.close();
    let total = handles.len();
    let mut first_error: Option<ProduceError> = None;
    let mut failed = 0;
    for h in handles {
        if let Err(e) = h.wait() {
            failed += 1;
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        None => Ok(()),
        Some(e) => Err(format!("{failed} of {total} message(s) not delivered: {e}")),
    }
}

/// Writes one consumed message: `AT\t` with --print-offset, the key and a tab with --print-key,
/// then the value and a newline.
pub fn print_record(
    out: &mut impl Write,
    a: &ConsumeArgs,
    at: &str,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    if a.print_offset {
        let _ = write!(out, "{at}\t");
    }
    if a.print_key {
        let _ = write!(out, "{}\t", String::from_utf8_lossy(key.unwrap_or(b"")));
    }
    let _ = out.write_all(value.unwrap_or(b""));
    let _ = out.write_all(b"\n");
}

pub fn consume(a: ConsumeArgs) -> Result<(), String> {
    if a.group.is_some() {
        return super::groups::consume_in_group(a);
    }
    if a.whitelist.is_some() || a.from_beginning {
        return Err("--whitelist and --from-beginning need --group".into());
    }
    let topic = a.topic.clone().ok_or("--topic is required")?;
    let start = match a.offset.as_str() {
        "earliest" => StartAt::Earliest,
        "latest" => StartAt::Latest,
        n => StartAt::Offset(
            n.parse()
                .map_err(|_| format!("--offset must be earliest, latest or a number, got `{n}`"))?,
        ),
    };
    let mut consumer = PartitionConsumer::new(
        &a.bootstrap,
        &topic,
        a.partition,
        start,
        "gregor-console-consumer",
    )?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut seen = 0u64;
    loop {
        let round = consumer.poll()?;
        for (p, m) in &round.messages {
            if a.max_messages.is_some_and(|n| seen >= n) {
                return Ok(());
            }
            let at = format!("{p}:{}", m.offset);
            print_record(&mut out, &a, &at, m.key.as_deref(), m.value.as_deref());
            seen += 1;
        }
        let _ = out.flush();
        if a.max_messages.is_some_and(|n| seen >= n) || (a.exit_at_end && round.at_end) {
            return Ok(());
        }
    }
}

pub fn status(a: StatusArgs) -> Result<(), String> {
    let m = fetch_metadata(&a.bootstrap, &[], "gregor-status")?;
    println!("Brokers ({}):", m.brokers.len());
    for b in &m.brokers {
        println!("  {}\t{}:{}", b.id, b.host, b.port);
    }
    if let Some(zk) = &a.zookeeper {
        let zk = gregor::zk::ZkClient::connect(zk, Duration::from_secs(10))
            .map_err(|e| format!("cannot reach ZooKeeper: {e:?}"))?;
        let elected = |path: &str| {
            zk.get_data(path)
                .ok()
                .and_then(|(d, _)| {
                    serde_json::from_slice::<gregor::zk::paths::ElectedBroker>(&d).ok()
                })
                .map_or("none".to_owned(), |e| e.brokerid.to_string())
        };
        println!("Controller: {}", elected(gregor::zk::paths::CONTROLLER));
        println!("Coordinator: {}", elected(gregor::zk::paths::COORDINATOR));
        zk.close();
    }
    let (mut under, mut offline, mut total) = (0, 0, 0);
    // With a filter, only the partitions it names are listed (and their topics); the totals
    // still count every partition.
    let filtered = a.under_replicated || a.offline;
    println!("Topics ({}):", m.topics.len());
    for t in &m.topics {
        let mut heading = Some(format!("  {} ({} partitions)", t.topic, t.partitions.len()));
        if !filtered {
            println!("{}", heading.take().unwrap_or_default());
        }
        for p in &t.partitions {
            total += 1;
            let (state, shown) = if p.leader < 0 {
                offline += 1;
                ("OFFLINE", a.offline)
            } else if p.isr.len() < p.replicas.len() {
                under += 1;
                ("under-replicated", a.under_replicated)
            } else {
                ("ok", false)
            };
            if filtered && !shown {
                continue;
            }
            if let Some(h) = heading.take() {
                println!("{h}");
            }
            let ids = |v: &[i32]| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let offline_replicas = if p.offline_replicas.is_empty() {
                String::new()
            } else {
                format!(" (replicas on dead brokers: {})", ids(&p.offline_replicas))
            };
            println!(
                "    partition {:>3}  leader {:>3}  replicas {:<10} isr {:<10} {state}{offline_replicas}",
                p.partition,
                p.leader,
                ids(&p.replicas),
                ids(&p.isr)
            );
        }
    }
    println!("Partitions: {total}, under-replicated: {under}, offline: {offline}");
    Ok(())
}
