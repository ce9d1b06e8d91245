//! `gregor consume`: a partition consumer (kcat's habits) or, with `--group`, a member of a
//! consumer group through the coordinator.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use crossbeam_channel::bounded;

use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
use gregor::client::partition_consumer::{PartitionConsumer, StartAt};
use gregor::protocol::coordinator::Subscription;

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
        return consume_in_group(a);
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

/// Consumes until --max-messages, SIGINT or SIGTERM; then leaves the group, committing.
fn consume_in_group(a: ConsumeArgs) -> Result<(), String> {
    let group = a.group.clone().expect("called with --group");
    if a.partition.is_some() {
        return Err(
            "--partition cannot be used with --group: the coordinator assigns partitions".into(),
        );
    }
    let subscription = match (&a.topic, &a.whitelist) {
        (Some(t), None) => Subscription::Static([(t.clone(), 1)].into()),
        (None, Some(w)) => Subscription::Whitelist {
            pattern: w.clone(),
            streams: 1,
        },
        _ => return Err("--group needs --topic or --whitelist".into()),
    };
    let mut cfg = ConsumerConfig::new(&a.bootstrap, &group, subscription);
    cfg.auto_offset_reset = if a.from_beginning {
        "smallest"
    } else {
        "largest"
    }
    .into();
    cfg.ping_interval = Duration::from_millis(a.ping_interval_ms);
    cfg.max_ping_retries = a.max_ping_retries;
    let (tx, rx) = bounded(1);
    super::broker::signal::install(tx)
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let mut consumer = GroupConsumer::start(cfg).map_err(|e| e.to_string())?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut seen = 0u64;
    while rx.try_recv().is_err() && a.max_messages.is_none_or(|n| seen < n) {
        let Some(r) = consumer.poll(Duration::from_millis(200)) else {
            let _ = out.flush();
            continue;
        };
        let at = format!("{}:{}:{}", r.topic, r.partition, r.offset);
        print_record(&mut out, &a, &at, r.key.as_deref(), r.value.as_deref());
        seen += 1;
    }
    let _ = out.flush();
    consumer.close();
    Ok(())
}
