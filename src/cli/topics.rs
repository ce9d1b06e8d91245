//! `gregor topics` and `gregor reassign`: Kafka's kafka-topics.sh and
//! kafka-reassign-partitions.sh, talking to ZooKeeper (`--bootstrap-server`: to brokers, in
//! `topics_wire`).

use std::time::Duration;

use clap::Args;

use gregor::client::admin::{self, PartitionDescription};
use gregor::zk::ZkClient;
use gregor::zk::paths::{self, ReassignmentRequest};

#[derive(Args)]
pub struct TopicsArgs {
    /// ZooKeeper connect string, host:port[/chroot].
    #[arg(long, default_value = "127.0.0.1:2181")]
    pub(super) zookeeper: String,
    /// Talk to brokers (host:port,...) through the admin APIs instead of to ZooKeeper, as
    /// kafka-topics.sh does since Kafka 2.2.
    #[arg(long = "bootstrap-server", conflicts_with = "zookeeper")]
    pub(super) bootstrap_server: Option<String>,
    #[arg(long, group = "action")]
    pub(super) create: bool,
    #[arg(long, group = "action")]
    pub(super) delete: bool,
    /// Raise --topic's partition count to --partitions.
    #[arg(long, group = "action")]
    pub(super) alter: bool,
    #[arg(long, group = "action")]
    pub(super) list: bool,
    #[arg(long, group = "action")]
    pub(super) describe: bool,
    /// Move leadership back to each partition's first replica (all topics, or --topic).
    #[arg(long = "preferred-election", group = "action")]
    pub(super) preferred_election: bool,
    #[arg(long)]
    pub(super) topic: Option<String>,
    #[arg(long)]
    pub(super) partitions: Option<i32>,
    #[arg(long = "replication-factor")]
    pub(super) replication_factor: Option<i32>,
    /// Replicas per partition: `1:2,2:3,...` (partition 0 on brokers 1 and 2, ...).
    #[arg(long = "replica-assignment")]
    pub(super) replica_assignment: Option<String>,
    /// With --describe: only partitions whose ISR is smaller than their replica list.
    #[arg(long = "under-replicated")]
    pub(super) under_replicated: bool,
    /// With --describe: only partitions without a live leader.
    #[arg(long)]
    pub(super) unavailable: bool,
    /// With --create: a topic-level setting, `key=value` (repeatable): retention.ms,
    /// retention.bytes, segment.bytes, min.insync.replicas, max.message.bytes,
    /// message.timestamp.type, cleanup.policy=delete.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub(super) config: Vec<String>,
}

#[derive(Args)]
pub struct ReassignArgs {
    #[arg(long, default_value = "127.0.0.1:2181")]
    zookeeper: String,
    /// Start the reassignment in FILE: {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}.
    #[arg(long, group = "mode", value_name = "FILE")]
    execute: Option<std::path::PathBuf>,
    /// Report, for each partition of FILE, whether its replicas are the requested ones.
    #[arg(long, group = "mode", value_name = "FILE")]
    verify: Option<std::path::PathBuf>,
}

/// Connects, and checks that a gregor cluster lives there: a ZooKeeper path without
/// `/brokers` (a chroot forgotten or misspelt) would otherwise answer every command with
/// nothing, as if the cluster were empty.
pub(super) fn connect(zk: &str) -> Result<std::sync::Arc<ZkClient>, String> {
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

pub fn run_topics(a: TopicsArgs) -> Result<(), String> {
    if let Some(b) = &a.bootstrap_server {
        return super::topics_wire::run_topics_wire(&a, b);
    }
    let zk = connect(&a.zookeeper)?;
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
        let config = gregor::zk::topic_config::parse(&a.config)?;
        // The configuration first: the leaders read it when they take the partitions.
        if !config.is_empty() {
            gregor::zk::topic_config::write(&zk, &t, &config)
                .map_err(|e| format!("cannot write the configuration of {t}: {e:?}"))?;
        }
        let created = admin::create_topic(&zk, &t, p, rf, assignment).map_err(|e| e.to_string())?;
        println!("Created topic \"{t}\" with {} partition(s).", created.len());
    } else if a.alter {
        let t = topic()?;
        let n = a
            .partitions
            .ok_or("--partitions is required with --alter")?;
        admin::add_partitions(&zk, &t, n).map_err(|e| e.to_string())?;
        println!("Topic \"{t}\" now has {n} partition(s).");
    } else if a.delete {
        let t = topic()?;
        admin::delete_topic(&zk, &t).map_err(|e| e.to_string())?;
        println!("Topic {t} is marked for deletion.");
    } else if a.list {
        for t in paths::all_topics(&zk).map_err(|e| format!("{e:?}"))? {
            println!("{t}");
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
    let zk = connect(&a.zookeeper)?;
    let (file, execute) = match (&a.execute, &a.verify) {
        (Some(f), None) => (f, true),
        (None, Some(f)) => (f, false),
        _ => return Err("one of --execute FILE or --verify FILE is required".into()),
    };
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
