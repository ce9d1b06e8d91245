//! `gregor topics --bootstrap-server`: kafka-topics.sh as it has worked since Kafka 2.2,
//! through the admin APIs (CreateTopics, CreatePartitions, DeleteTopics) and Metadata, with
//! no ZooKeeper access. The broker answers a change once its metadata shows it.

use gregor::client::metadata::fetch_metadata_with;
use gregor::network::BlockingChannel;
use gregor::protocol::admin_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResponse, AlterableConfig, OP_DELETE,
    OP_SET,
};
use gregor::protocol::admin_topics::{
    CreatableTopic, CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic,
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
};
use gregor::protocol::{ErrorCode, header};
use gregor::zk::admin::{PartitionDescription, split_assignment};
use gregor::zk::paths::LeaderAndIsr;

use super::topics::{TopicsArgs, name_filter, print_description};

const CLIENT_ID: &str = "gregor-topics";
/// How long the broker may take to show a change in its metadata.
const TIMEOUT_MS: i32 = 30_000;
// Classic (non-flexible) versions: everything this tool sends fits them.
const CREATE_TOPICS_VERSION: i16 = 4;
const DELETE_TOPICS_VERSION: i16 = 3;
const CREATE_PARTITIONS_VERSION: i16 = 1;
/// DescribeConfigs' and AlterConfigs' resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;
const UNKNOWN_TOPIC: i16 = ErrorCode::UnknownTopicOrPartition as i16;

/// The first bootstrap broker that accepts a connection.
pub(super) fn connect(bootstrap: &str) -> Result<BlockingChannel, String> {
    connect_as(bootstrap, &gregor::network::ClientSecurity::default())
}

/// `connect`, authenticated as `login` says.
pub(super) fn connect_as(
    bootstrap: &str,
    security: &gregor::network::ClientSecurity,
) -> Result<BlockingChannel, String> {
    let mut last = String::from("no bootstrap address given");
    for addr in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match BlockingChannel::connect_to(
            addr,
            CLIENT_ID,
            std::time::Duration::from_millis(TIMEOUT_MS as u64 + 10_000),
            security,
        ) {
            Ok(c) => return Ok(c),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(format!("no broker answered ({last})"))
}

/// An error code from the broker as the user should see it, with the broker's message.
fn check(topic: &str, code: i16, message: Option<String>) -> Result<(), String> {
    if code == 0 {
        return Ok(());
    }
    let e = ErrorCode::from_code(code);
    Err(match message {
        Some(m) => format!("{topic}: {m} ({e:?}, error {code})"),
        None => format!("{topic}: {e:?} (error {code})"),
    })
}

pub fn run_topics_wire(a: &TopicsArgs, bootstrap: &str) -> Result<(), String> {
    let topic = || a.topic.clone().ok_or("--topic is required");
    if a.create {
        create(bootstrap, a, &topic()?)
    } else if a.alter {
        let t = topic()?;
        if a.partitions.is_none() && a.config.is_empty() && a.delete_config.is_empty() {
            return Err("--alter needs --partitions, --config or --delete-config".into());
        }
        if let Some(count) = a.partitions {
            add_partitions(bootstrap, a, &t, count)?;
        }
        if !a.config.is_empty() || !a.delete_config.is_empty() {
            alter_configs(bootstrap, a, &t)?;
        }
        Ok(())
    } else if a.delete {
        let t = topic()?;
        let req = DeleteTopicsRequest {
            topics: vec![(Some(t.clone()), [0; 16])],
            timeout_ms: TIMEOUT_MS,
        };
        let v = DELETE_TOPICS_VERSION;
        let answer: DeleteTopicsResponse = connect(bootstrap)?
            .send(header::DELETE_TOPICS, v, &req)
            .map_err(|e| e.to_string())?;
        let results = answer.results.into_iter().map(|r| {
            let name = r.name.unwrap_or_else(|| t.clone());
            (name, r.error_code, r.error_message)
        });
        if checked_unless_missing(a, results)? {
            println!("Topic {t} is deleted.");
        }
        Ok(())
    } else if a.list || a.describe {
        // --list --topic is a regular expression over every topic, as in kafka-topics.sh.
        let only = if a.list {
            name_filter(a.topic.as_deref())?
        } else {
            None
        };
        let topics: Vec<String> = if a.list {
            Vec::new()
        } else {
            a.topic.iter().cloned().collect()
        };
        let m = fetch_metadata_with(bootstrap, &topics, CLIENT_ID, false)?;
        let mut parts = Vec::new();
        for t in &m.topics {
            check(&t.topic, t.error_code, None)?;
            if a.list {
                if only.as_ref().is_none_or(|r| r.is_match(&t.topic)) {
                    println!("{}", t.topic);
                }
                continue;
            }
            for p in &t.partitions {
                parts.push(PartitionDescription {
                    topic: t.topic.clone(),
                    partition: p.partition,
                    replicas: p.replicas.clone(),
                    state: Some(LeaderAndIsr {
                        leader: p.leader,
                        leader_epoch: p.leader_epoch,
                        isr: p.isr.clone(),
                        controller_epoch: -1,
                    }),
                });
            }
        }
        if a.describe {
            parts.sort_by(|x, y| (&x.topic, x.partition).cmp(&(&y.topic, y.partition)));
            let live: Vec<i32> = m.brokers.iter().map(|b| b.id).collect();
            print_description(&parts, &live, a.under_replicated, a.unavailable);
        }
        Ok(())
    } else if a.preferred_election {
        Err("--preferred-election needs --zookeeper (gregor does not serve ElectLeaders)".into())
    } else {
        Err("one of --create, --alter, --delete, --list, --describe is required".into())
    }
}

/// CreatePartitions: --topic's partition count raised to `count`.
fn add_partitions(bootstrap: &str, a: &TopicsArgs, t: &str, count: i32) -> Result<(), String> {
    let t = t.to_owned();
    let req = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: t.clone(),
            count,
            assignment: None,
        }],
        timeout_ms: TIMEOUT_MS,
        validate_only: false,
    };
    let v = CREATE_PARTITIONS_VERSION;
    let answer: CreatePartitionsResponse = connect(bootstrap)?
        .send(header::CREATE_PARTITIONS, v, &req)
        .map_err(|e| e.to_string())?;
    if checked_unless_missing(a, answer.results)? {
        println!("Topic \"{t}\" now has {count} partition(s).");
    }
    Ok(())
}

/// Checks each (topic, error code, message) of an answer; false when the topic does not exist
/// and --if-exists makes that no error.
fn checked_unless_missing(
    a: &TopicsArgs,
    results: impl IntoIterator<Item = (String, i16, Option<String>)>,
) -> Result<bool, String> {
    for (name, code, msg) in results {
        if code == UNKNOWN_TOPIC && a.if_exists {
            return Ok(false);
        }
        check(&name, code, msg)?;
    }
    Ok(true)
}

/// The --config settings as (key, value) pairs.
fn config_pairs(a: &TopicsArgs) -> Result<Vec<(String, String)>, String> {
    a.config
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("--config expects key=value, got `{kv}`"))
        })
        .collect()
}

/// IncrementalAlterConfigs: --config keys set, --delete-config keys removed.
fn alter_configs(bootstrap: &str, a: &TopicsArgs, t: &str) -> Result<(), String> {
    let mut configs: Vec<AlterableConfig> = config_pairs(a)?
        .into_iter()
        .map(|(name, v)| AlterableConfig {
            name,
            op: Some(OP_SET),
            value: Some(v),
        })
        .collect();
    for k in &a.delete_config {
        configs.push(AlterableConfig {
            name: k.clone(),
            op: Some(OP_DELETE),
            value: None,
        });
    }
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: TOPIC_RESOURCE,
            name: t.to_owned(),
            configs,
        }],
        validate_only: false,
    };
    let answer: AlterConfigsResponse = connect(bootstrap)?
        .send(header::INCREMENTAL_ALTER_CONFIGS, 0, &req)
        .map_err(|e| e.to_string())?;
    let results = answer
        .results
        .into_iter()
        .map(|(code, msg, _, name)| (name, code, msg));
    if checked_unless_missing(a, results)? {
        println!("Updated the settings of topic \"{t}\".");
    }
    Ok(())
}

fn create(bootstrap: &str, a: &TopicsArgs, t: &str) -> Result<(), String> {
    let (num_partitions, replication_factor, assignment) = match &a.replica_assignment {
        Some(s) => {
            let groups = split_assignment(s).map_err(|e| e.to_string())?;
            (
                -1,
                -1,
                groups
                    .into_iter()
                    .enumerate()
                    .map(|(i, g)| (i as i32, g))
                    .collect(),
            )
        }
        None => (
            a.partitions.unwrap_or(-1),
            a.replication_factor.map_or(-1, |r| r as i16),
            Vec::new(),
        ),
    };
    let configs = config_pairs(a)?
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect();
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: t.to_owned(),
            num_partitions,
            replication_factor,
            assignment,
            configs,
        }],
        timeout_ms: TIMEOUT_MS,
        validate_only: false,
    };
    let v = CREATE_TOPICS_VERSION;
    let answer: CreateTopicsResponse = connect(bootstrap)?
        .send(header::CREATE_TOPICS, v, &req)
        .map_err(|e| e.to_string())?;
    for r in answer.topics {
        if r.error_code == ErrorCode::TopicAlreadyExists.code() && a.if_not_exists {
            return Ok(());
        }
        check(&r.name, r.error_code, r.error_message)?;
    }
    let m = fetch_metadata_with(bootstrap, &[t.to_owned()], CLIENT_ID, false)?;
    let n = m.topics.first().map_or(0, |x| x.partitions.len());
    println!("Created topic \"{t}\" with {n} partition(s).");
    Ok(())
}
