//! `gregor consume`: a partition consumer (kcat's habits) or, with `--group`, a member of a
//! consumer group through the coordinator.

use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;
use crossbeam_channel::bounded;

use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
use gregor::client::metadata::fetch_metadata_with;
use gregor::client::partition_consumer::{PartitionConsumer, StartAt};
use gregor::protocol::ErrorCode;
use gregor::protocol::coordinator::Subscription;

#[derive(Args)]
pub struct ConsumeArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
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
    /// Start from the earliest offset (with --group: where the group has committed none).
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
    /// Where to start without --group: earliest, latest, or an offset.
    #[arg(long, default_value = "earliest")]
    offset: String,
    /// Stop after this many messages.
    #[arg(long = "max-messages")]
    pub max_messages: Option<u64>,
    /// Stop once every partition is read to its end (like kcat -e).
    #[arg(long = "exit-at-end")]
    exit_at_end: bool,
    /// Stop when no message has come for this long (kafka-console-consumer's --timeout-ms).
    #[arg(long = "timeout-ms")]
    pub timeout_ms: Option<u64>,
    /// Print each message's key before its value, tab-separated.
    #[arg(long = "print-key")]
    pub print_key: bool,
    /// Print each message's partition and offset first (`PARTITION:OFFSET`).
    #[arg(long = "print-offset")]
    pub print_offset: bool,
    /// kafka-console-consumer's formatter properties: print.key=true, print.offset=true,
    /// print.partition=true (the same as --print-offset here) (repeatable).
    #[arg(long = "property", value_name = "KEY=VALUE")]
    pub property: Vec<String>,
}

impl ConsumeArgs {
    /// Takes kafka-console-consumer's `--property` settings into the flags they stand for.
    fn apply_properties(&mut self) -> Result<(), String> {
        for p in &self.property {
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| format!("--property expects key=value, got `{p}`"))?;
            let on = match v {
                "true" => true,
                "false" => false,
                _ => return Err(format!("--property {k} must be true or false, got `{v}`")),
            };
            match k {
                "print.key" => self.print_key = on,
                "print.offset" | "print.partition" => self.print_offset = on,
                _ => {
                    return Err(format!(
                        "--property {k} is not known here (print.key, print.offset, print.partition)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A console consumer must not create the topic it is asked to read (a Metadata request of
/// version 0 would, where `auto.create.topics.enable` is on), and must fail at once when no
/// broker answers: it asks for the topic without auto-creation first.
fn check_topic_exists(bootstrap: &str, topic: &str) -> Result<(), String> {
    let m = fetch_metadata_with(bootstrap, &[topic.to_owned()], CLIENT_ID, false)?;
    match m.topics.first().map(|t| ErrorCode::from_code(t.error_code)) {
        Some(ErrorCode::UnknownTopicOrPartition) | None => {
            Err(format!("topic `{topic}` does not exist"))
        }
        Some(ErrorCode::InvalidTopic) => Err(format!("`{topic}` is not a legal topic name")),
        _ => Ok(()),
    }
}

const CLIENT_ID: &str = "gregor-console-consumer";

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

pub fn consume(mut a: ConsumeArgs) -> Result<(), String> {
    a.apply_properties()?;
    if a.group.is_some() {
        if let Some(t) = &a.topic {
            check_topic_exists(&a.bootstrap, t)?;
        } else {
            // A whitelist names no topic, but the brokers must answer all the same.
            fetch_metadata_with(&a.bootstrap, &[], CLIENT_ID, false)?;
        }
        return consume_in_group(a);
    }
    if a.whitelist.is_some() {
        return Err("--whitelist needs --group".into());
    }
    let topic = a.topic.clone().ok_or("--topic is required")?;
    check_topic_exists(&a.bootstrap, &topic)?;
    let offset = if a.from_beginning {
        "earliest"
    } else {
        a.offset.as_str()
    };
    let start = match offset {
        "earliest" => StartAt::Earliest,
        "latest" => StartAt::Latest,
        n => StartAt::Offset(
            n.parse()
                .map_err(|_| format!("--offset must be earliest, latest or a number, got `{n}`"))?,
        ),
    };
    let mut consumer = PartitionConsumer::new(&a.bootstrap, &topic, a.partition, start, CLIENT_ID)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut seen = 0u64;
    let mut last_message = Instant::now();
    loop {
        let round = consumer.poll()?;
        if !round.messages.is_empty() {
            last_message = Instant::now();
        } else if a
            .timeout_ms
            .is_some_and(|t| last_message.elapsed() >= Duration::from_millis(t))
        {
            return Ok(());
        }
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
    let mut last_message = Instant::now();
    while rx.try_recv().is_err() && a.max_messages.is_none_or(|n| seen < n) {
        let Some(r) = consumer.poll(Duration::from_millis(200)) else {
            let _ = out.flush();
            if a.timeout_ms
                .is_some_and(|t| last_message.elapsed() >= Duration::from_millis(t))
            {
                break;
            }
            continue;
        };
        last_message = Instant::now();
        let at = format!("{}:{}:{}", r.topic, r.partition, r.offset);
        print_record(&mut out, &a, &at, r.key.as_deref(), r.value.as_deref());
        seen += 1;
    }
    let _ = out.flush();
    consumer.close();
    Ok(())
}
