//! `gregor produce` and `gregor status`: console tools in the habits of Kafka's scripts and
//! kcat.

use std::io::BufRead;
use std::time::Duration;

use clap::Args;

use gregor::client::metadata::{fetch_metadata, find_coordinator};
use gregor::client::producer::{ProduceError, Producer, ProducerConfig};
use gregor::network::BlockingChannel;
use gregor::protocol::{ErrorCode, compression, header};

#[derive(Args)]
pub struct ProduceArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// The topic to write to (created where the brokers' auto.create.topics.enable allows).
    #[arg(long)]
    topic: String,
    /// Split each line into key and value at the first occurrence of this string.
    #[arg(long = "key-separator")]
    key_separator: Option<String>,
    /// 0, 1 or all (-1) (also kafka-console-producer's `--request-required-acks`).
    #[arg(
        long,
        visible_alias = "request-required-acks",
        default_value = "1",
        allow_hyphen_values = true
    )]
    acks: String,
    /// none, gzip, snappy, lz4 or zstd (zstd needs format 2) (also `--compression-codec`).
    #[arg(long, visible_alias = "compression-codec", default_value = "none")]
    compression: String,
    /// Message format: 2 (record batches with timestamps) by default; 1 or 0 for a broker of
    /// the 0.10 / 0.8 era.
    #[arg(long, default_value_t = 2)]
    magic: i8,
    /// kafka-console-producer's reader properties: parse.key=true (split at key.separator,
    /// a tab by default), key.separator=SEP (repeatable).
    #[arg(long = "property", value_name = "KEY=VALUE")]
    property: Vec<String>,
}

impl ProduceArgs {
    /// Takes kafka-console-producer's `--property` settings into --key-separator.
    fn apply_properties(&mut self) -> Result<(), String> {
        let (mut parse_key, mut separator) = (false, None);
        for p in &self.property {
            match p.split_once('=') {
                Some(("parse.key", "true")) => parse_key = true,
                Some(("parse.key", "false")) => parse_key = false,
                Some(("key.separator", sep)) => separator = Some(sep.to_owned()),
                _ => {
                    return Err(format!(
                        "--property {p}: known here are parse.key=true|false and key.separator=SEP"
                    ));
                }
            }
        }
        if parse_key {
            self.key_separator = Some(separator.unwrap_or_else(|| "\t".into()));
        }
        Ok(())
    }
}

/// The topic a producer is to write, checked before reading stdin: a name the brokers refuse,
/// or a topic that does not exist and will not be created, is said the way `consume` says it.
fn check_producible(bootstrap: &str, topic: &str) -> Result<(), String> {
    let m = fetch_metadata(bootstrap, &[topic.to_owned()], "gregor-console-producer")?;
    match m.topics.first().map(|t| ErrorCode::from_code(t.error_code)) {
        Some(ErrorCode::UnknownTopicOrPartition) | None => {
            Err(format!("topic `{topic}` does not exist"))
        }
        Some(ErrorCode::InvalidTopic) => Err(format!("`{topic}` is not a legal topic name")),
        _ => Ok(()),
    }
}

#[derive(Args)]
pub struct StatusArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// Read the controller and the coordinator from ZooKeeper (host:port/chroot) rather than
    /// from the brokers.
    #[arg(long)]
    zookeeper: Option<String>,
    /// List only partitions whose ISR is smaller than their replica list.
    #[arg(long = "under-replicated")]
    under_replicated: bool,
    /// List only partitions without a live leader.
    #[arg(long)]
    offline: bool,
}

pub fn produce(mut a: ProduceArgs) -> Result<(), String> {
    a.apply_properties()?;
    check_producible(&a.bootstrap, &a.topic)?;
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

pub fn status(a: StatusArgs) -> Result<(), String> {
    let m = fetch_metadata(&a.bootstrap, &[], "gregor-status")?;
    println!("Brokers ({}):", m.brokers.len());
    let mut silent = Vec::new();
    for b in &m.brokers {
        let addr = format!("{}:{}", b.host, b.port);
        if answers(&addr) {
            println!("  {}\t{addr}", b.id);
        } else {
            println!("  {}\t{addr}\tNOT ANSWERING", b.id);
            silent.push(b.id);
        }
    }
    let (controller, coordinator) = match &a.zookeeper {
        Some(zk) => elected_in_zookeeper(zk)?,
        None => (
            (m.controller_id >= 0).then_some(m.controller_id),
            find_coordinator(&a.bootstrap, "gregor-status", "gregor-status")
                .ok()
                .map(|c| c.node_id),
        ),
    };
    let shown = |id: Option<i32>| id.map_or("none".to_owned(), |i| i.to_string());
    println!("Controller: {}", shown(controller));
    println!("Coordinator: {}", shown(coordinator));
    if !silent.is_empty() {
        let ids: Vec<String> = silent.iter().map(i32::to_string).collect();
        println!(
            "Note: broker(s) {} registered but not answering: until the ZooKeeper session expires \
             (zookeeper.session.timeout.ms) the cluster counts them live, and their partitions \
             still show their last leader and ISR.",
            ids.join(",")
        );
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

/// Whether a broker answers ApiVersions within a second (a dead one refuses; a paused one
/// accepts the connection in the kernel but never answers).
fn answers(addr: &str) -> bool {
    let timeout = Duration::from_secs(1);
    BlockingChannel::connect(addr, "gregor-status", timeout)
        .is_ok_and(|mut c| c.round_trip_raw(header::API_VERSIONS, 0, &|_| {}).is_ok())
}

/// The controller and the coordinator as ZooKeeper has elected them.
fn elected_in_zookeeper(zk: &str) -> Result<(Option<i32>, Option<i32>), String> {
    let zk = super::topics::connect(zk)?;
    let elected = |path: &str| {
        zk.get_data(path).ok().and_then(|(d, _)| {
            serde_json::from_slice::<gregor::zk::paths::ElectedBroker>(&d)
                .ok()
                .map(|e| e.brokerid)
        })
    };
    let found = (
        elected(gregor::zk::paths::CONTROLLER),
        elected(gregor::zk::paths::COORDINATOR),
    );
    zk.close();
    Ok(found)
}
