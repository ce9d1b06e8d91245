//! `gregor topics` and `gregor reassign`: Kafka's kafka-topics.sh and
//! kafka-reassign-partitions.sh, talking to ZooKeeper (`--bootstrap-server`: to brokers, in
//! `topics_wire`).

use std::time::Duration;

use clap::Args;

use gregor::zk::admin::{self, PartitionDescription};
use gregor::zk::paths::{self, ReassignmentRequest};
use gregor::zk::{ZkClient, topic_config};

#[derive(Args)]
pub struct TopicsArgs {
    /// The brokers to talk to through the admin APIs, host:port,... (the default, as
    /// kafka-topics.sh since Kafka 2.2).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT", conflicts_with = "zookeeper")]
    pub(super) bootstrap_server: String,
    /// Talk to ZooKeeper instead, host:port[/chroot] (scripts/cluster.sh's cluster is at
    /// 127.0.0.1:2181/gregor); needed for --preferred-election.
    #[arg(long, value_name = "HOST:PORT/CHROOT")]
    pub(super) zookeeper: Option<String>,
    /// Create --topic (with --partitions and --replication-factor, or --replica-assignment).
    #[arg(long, group = "action")]
    pub(super) create: bool,
    /// Delete --topic.
    #[arg(long, group = "action")]
    pub(super) delete: bool,
    /// Raise --topic's partition count to --partitions, or change its settings (--config,
    /// --delete-config).
    #[arg(long, group = "action")]
    pub(super) alter: bool,
    /// List the topics (only those whose whole name matches --topic, a regular expression).
    #[arg(long, group = "action")]
    pub(super) list: bool,
    /// Each partition's leader, replicas and ISR (of --topic, or of every topic).
    #[arg(long, group = "action")]
    pub(super) describe: bool,
    /// Move leadership back to each partition's first replica (all topics, or --topic).
    #[arg(long = "preferred-election", group = "action")]
    pub(super) preferred_election: bool,
    /// The topic to act on.
    #[arg(long)]
    pub(super) topic: Option<String>,
    /// The partition count (--create, --alter).
    #[arg(long)]
    pub(super) partitions: Option<i32>,
    /// Replicas of each partition (--create).
    #[arg(long = "replication-factor")]
    pub(super) replication_factor: Option<i32>,
    /// Replicas per partition: `1:2,2:3,...` (partition 0 on brokers 1 and 2, ...).
    #[arg(long = "replica-assignment")]
    pub(super) replica_assignment: Option<String>,
    /// With --describe: only partitions whose ISR is smaller than their replica list.
    #[arg(
        long = "under-replicated-partitions",
        visible_alias = "under-replicated"
    )]
    pub(super) under_replicated: bool,
    /// With --describe: only partitions without a live leader.
    #[arg(long = "unavailable-partitions", visible_alias = "unavailable")]
    pub(super) unavailable: bool,
    /// With --create: succeed when the topic exists already.
    #[arg(long = "if-not-exists")]
    pub(super) if_not_exists: bool,
    /// With --alter or --delete: succeed when the topic does not exist.
    #[arg(long = "if-exists")]
    pub(super) if_exists: bool,
    /// With --create or --alter: a topic-level setting, `key=value` (repeatable):
    /// retention.ms, retention.bytes, segment.bytes, segment.ms, min.insync.replicas,
    /// max.message.bytes, message.timestamp.type, cleanup.policy (delete, compact or both),
    /// min.cleanable.dirty.ratio, delete.retention.ms, min/max.compaction.lag.ms, …
    /// (README, "Configuration").
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub(super) config: Vec<String>,
    /// With --alter: a topic-level setting to remove, back to the broker's (repeatable).
    #[arg(long = "delete-config", value_name = "KEY")]
    pub(super) delete_config: Vec<String>,
}

#[derive(Args)]
pub struct ReassignArgs {
    /// ZooKeeper, host:port[/chroot] (gregor does not serve the reassignment APIs yet, so
    /// this tool writes Kafka's `/admin/reassign_partitions` node itself). The default is
    /// scripts/cluster.sh's cluster.
    #[arg(
        long,
        default_value = "127.0.0.1:2181/gregor",
        value_name = "HOST:PORT/CHROOT"
    )]
    zookeeper: String,
    /// Start the reassignment in FILE (or in --reassignment-json-file):
    /// {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}.
    #[arg(long, group = "mode", value_name = "FILE", num_args = 0..=1)]
    execute: Option<Option<std::path::PathBuf>>,
    /// Report, for each partition of FILE (or of --reassignment-json-file), whether its
    /// replicas are the requested ones.
    #[arg(long, group = "mode", value_name = "FILE", num_args = 0..=1)]
    verify: Option<Option<std::path::PathBuf>>,
    /// The reassignment, as kafka-reassign-partitions.sh names it (with --execute or --verify).
    #[arg(long = "reassignment-json-file", value_name = "FILE")]
    reassignment_json_file: Option<std::path::PathBuf>,
}

/// Connects, and checks that a gregor cluster lives there: a ZooKeeper path without
/// `/brokers` (a chroot forgotten or misspelt) would otherwise answer every command with
/// nothing, as if the cluster were empty.
pub(super) fn connect(zk: &str) -> Result<std::sync::Arc<ZkClient>, String> {
    reachable(zk)?;
    let client = ZkClient::connect(zk, Duration::from_secs(10))
        .map_err(|e| format!("cannot reach ZooKeeper at {zk}: {e:?}"))?;
    match client.exists("/brokers") {
        Ok(Some(_)) => Ok(client),
        Ok(None) => {
            client.close();
            Err(format!(
                "no gregor cluster at {zk} (no /brokers there): is the chroot missing, as in 127.0.0.1:2181/gregor?"
            ))
        }
        Err(e) => Err(format!("cannot read ZooKeeper at {zk}: {e:?}")),
    }
}

/// Fails at once, saying why, when no server of the connect string accepts a connection: the
/// session would otherwise try for its whole connection timeout and end with a timeout that
/// hides a plain "connection refused".
fn reachable(zk: &str) -> Result<(), String> {
    let hosts = zk.split('/').next().unwrap_or(zk);
    let mut last = String::from("no server given");
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let addrs = std::net::ToSocketAddrs::to_socket_addrs(host)
            .map_err(|e| format!("ZooKeeper address `{host}`: {e}"))?;
        for addr in addrs {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("{host}: {e}"),
            }
        }
    }
    Err(format!("cannot reach ZooKeeper at {zk} ({last})"))
}

pub fn run_topics(a: TopicsArgs) -> Result<(), String> {
    let Some(zk) = &a.zookeeper else {
        return super::topics_wire::run_topics_wire(&a, &a.bootstrap_server);
    };
    let zk = connect(zk)?;
    let topic = || a.topic.clone().ok_or("--topic is required");
    if a.create {
        let t = topic()?;
        let assignment = a.replica_assignment.as_deref();
        let (p, rf) = match assignment {
            Some(_) => (0, 0),
            None => (
                a.partitions
                    .ok_or("--partitions is required (or --replica-assignment)")?,
                a.replication_factor
                    .ok_or("--replication-factor is required (or --replica-assignment)")?,
            ),
        };
        let exists = paths::topic_assignment(&zk, &t)
            .map_err(|e| format!("{e:?}"))?
            .is_some();
        if exists && a.if_not_exists {
            zk.close();
            return Ok(());
        }
        let config = gregor::zk::topic_config::parse(&a.config)?;
        // The configuration first: the leaders read it when they take the partitions.
        if !config.is_empty() && !exists {
            gregor::zk::topic_config::write(&zk, &t, &config)
                .map_err(|e| format!("cannot write the configuration of {t}: {e:?}"))?;
        }
        let created = admin::create_topic(&zk, &t, p, rf, assignment).map_err(|e| e.to_string())?;
        println!("Created topic \"{t}\" with {} partition(s).", created.len());
    } else if a.alter {
        let t = topic()?;
        let exists = paths::topic_assignment(&zk, &t)
            .map_err(|e| format!("{e:?}"))?
            .is_some();
        if !exists {
            zk.close();
            return if a.if_exists {
                Ok(())
            } else {
                Err(format!("topic `{t}` does not exist"))
            };
        }
        if a.partitions.is_none() && a.config.is_empty() && a.delete_config.is_empty() {
            return Err("--alter needs --partitions, --config or --delete-config".into());
        }
        if let Some(n) = a.partitions {
            admin::add_partitions(&zk, &t, n).map_err(|e| e.to_string())?;
            println!("Topic \"{t}\" now has {n} partition(s).");
        }
        if !a.config.is_empty() || !a.delete_config.is_empty() {
            let mut config = topic_config::read(&zk, &t).map_err(|e| format!("{e:?}"))?;
            config.extend(topic_config::parse(&a.config)?);
            for k in &a.delete_config {
                config.remove(k);
            }
            topic_config::write(&zk, &t, &config)
                .and_then(|()| topic_config::notify_change(&zk, &t))
                .map_err(|e| format!("cannot write the configuration of {t}: {e:?}"))?;
            println!("Updated the settings of topic \"{t}\".");
        }
    } else if a.delete {
        let t = topic()?;
        match admin::delete_topic(&zk, &t) {
            Err(admin::AdminError::UnknownTopic(_)) if a.if_exists => {}
            r => {
                r.map_err(|e| e.to_string())?;
                println!("Topic {t} is marked for deletion.");
            }
        }
    } else if a.list {
        let only = name_filter(a.topic.as_deref())?;
        for t in paths::all_topics(&zk).map_err(|e| format!("{e:?}"))? {
            if only.as_ref().is_none_or(|r| r.is_match(&t)) {
                println!("{t}");
            }
        }
    } else if a.describe {
        let topics: Vec<String> = a.topic.iter().cloned().collect();
        let live: Vec<i32> = paths::live_brokers(&zk)
            .map_err(|e| format!("{e:?}"))?
            .iter()
            .map(|b| b.id)
            .collect();
        let parts = admin::describe(&zk, &topics).map_err(|e| e.to_string())?;
        print_description(&parts, &live, a.under_replicated, a.unavailable);
    } else if a.preferred_election {
        let topics: Vec<String> = a.topic.iter().cloned().collect();
        let n = admin::request_preferred_election(&zk, &topics).map_err(|e| e.to_string())?;
        println!("Requested preferred-replica election for {n} partition(s).");
    } else {
        return Err(
            "one of --create, --alter, --delete, --list, --describe, --preferred-election is required"
                .into(),
        );
    }
    zk.close();
    Ok(())
}

/// `--list --topic NAME`: Kafka's tool takes the name as a regular expression that must match
/// a whole topic name.
pub(super) fn name_filter(topic: Option<&str>) -> Result<Option<regex::Regex>, String> {
    topic
        .map(|t| {
            regex::Regex::new(&format!("^(?:{t})$"))
                .map_err(|e| format!("--topic is not a regular expression: {e}"))
        })
        .transpose()
}

fn ids(v: &[i32]) -> String {
    v.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn print_description(
    parts: &[PartitionDescription],
    live: &[i32],
    under: bool,
    unavailable: bool,
) {
    let mut current = "";
    for p in parts {
        let is_under = p.isr().len() < p.replicas.len();
        let is_unavailable = !live.contains(&p.leader());
        if (under && !is_under) || (unavailable && !is_unavailable) {
            continue;
        }
        if !under && !unavailable && p.topic != current {
            let n = parts.iter().filter(|x| x.topic == p.topic).count();
            println!(
                "Topic: {}\tPartitionCount: {n}\tReplicationFactor: {}",
                p.topic,
                p.replicas.len()
            );
            current = &p.topic;
        }
        println!(
            "\tTopic: {}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}",
            p.topic,
            p.partition,
            p.leader(),
            ids(&p.replicas),
            ids(p.isr())
        );
    }
}

pub fn run_reassign(a: ReassignArgs) -> Result<(), String> {
    let (file, execute) = match (a.execute, a.verify) {
        (Some(f), None) => (f, true),
        (None, Some(f)) => (f, false),
        _ => return Err("one of --execute or --verify is required".into()),
    };
    let file = file
        .or(a.reassignment_json_file)
        .ok_or("the reassignment is needed: --reassignment-json-file FILE (or --execute FILE)")?;
    let file = &file;
    let zk = connect(&a.zookeeper)?;
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let req: ReassignmentRequest = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a reassignment: {e}", file.display()))?;
    if execute {
        admin::request_reassignment(&zk, &req).map_err(|e| e.to_string())?;
        println!(
            "Started reassignment of {} partition(s).",
            req.partitions.len()
        );
    } else {
        let pending = paths::read_json::<ReassignmentRequest>(&zk, paths::REASSIGN_PARTITIONS)
            .map_err(|e| format!("{e:?}"))?;
        let mut all_done = true;
        for p in &req.partitions {
            let current = paths::topic_assignment(&zk, &p.topic)
                .map_err(|e| format!("{e:?}"))?
                .and_then(|a| a.get(&p.partition).cloned());
            let in_progress = pending.as_ref().is_some_and(|r| {
                r.partitions
                    .iter()
                    .any(|x| x.topic == p.topic && x.partition == p.partition)
            });
            let state = if current.as_deref() == Some(&p.replicas[..]) && !in_progress {
                "completed successfully"
            } else if in_progress {
                all_done = false;
                "is still in progress"
            } else {
                all_done = false;
                "failed"
            };
            println!(
                "Reassignment of partition {}-{} {state}",
                p.topic, p.partition
            );
        }
        if !all_done {
            zk.close();
            return Err("reassignment not complete".into());
        }
    }
    zk.close();
    Ok(())
}
