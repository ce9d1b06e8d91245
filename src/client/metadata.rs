//! Cluster metadata from a bootstrap list: the first broker that answers a Metadata request.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::network::{BlockingChannel, ClientSecurity};
use crate::protocol::ErrorCode;
use crate::protocol::group_offsets::{
    Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
};
use crate::protocol::header::{FIND_COORDINATOR, METADATA};
use crate::protocol::metadata::{MetadataRequest, MetadataResponse};

/// The Metadata version gregor's clients and tools ask with: whole replica and ISR lists,
/// and the replicas on dead brokers named (`offline_replicas`), where v0 cut them out.
pub const METADATA_VERSION: i16 = 5;

/// Asks each `host:port` of the comma-separated `bootstrap` in turn.
pub fn fetch_metadata(
    bootstrap: &str,
    topics: &[String],
    client_id: &str,
) -> Result<MetadataResponse, String> {
    fetch_metadata_with(bootstrap, topics, client_id, true)
}

/// `fetch_metadata`, saying whether a topic named that does not exist may be auto-created
/// (a describe must not create what it describes).
pub fn fetch_metadata_with(
    bootstrap: &str,
    topics: &[String],
    client_id: &str,
    allow_auto_topic_creation: bool,
) -> Result<MetadataResponse, String> {
    let plain = ClientSecurity::default();
    fetch_metadata_as(
        bootstrap,
        topics,
        client_id,
        allow_auto_topic_creation,
        &plain,
    )
}

/// `fetch_metadata_with` over a TLS or SASL listener, as `security` says.
pub fn fetch_metadata_as(
    bootstrap: &str,
    topics: &[String],
    client_id: &str,
    allow_auto_topic_creation: bool,
    security: &ClientSecurity,
) -> Result<MetadataResponse, String> {
    ask_each(bootstrap, client_id, security, |c| {
        let req = MetadataRequest {
            topics: (!topics.is_empty()).then(|| topics.to_vec()),
            allow_auto_topic_creation,
        };
        c.send(METADATA, METADATA_VERSION, &req)
            .map_err(|e| e.to_string())
    })
    .map_err(|last| format!("no broker answered ({last})"))
}

/// The coordinator of `group` (FindCoordinator v1), asked of each bootstrap broker in turn
/// until one answers without error.
pub fn find_coordinator(
    bootstrap: &str,
    group: &str,
    client_id: &str,
) -> Result<Coordinator, String> {
    find_coordinator_of(bootstrap, group, 0, client_id)
}

/// The coordinator of a group (`key_type` 0) or of a transactional id (1).
pub fn find_coordinator_of(
    bootstrap: &str,
    key: &str,
    key_type: i8,
    client_id: &str,
) -> Result<Coordinator, String> {
    let req = FindCoordinatorRequest::one(key, key_type);
    ask_each(bootstrap, client_id, &ClientSecurity::default(), |c| {
        let r: FindCoordinatorResponse = c
            .send(FIND_COORDINATOR, 1, &req)
            .map_err(|e| e.to_string())?;
        let r = r
            .coordinators
            .into_iter()
            .next()
            .ok_or("no coordinator in the answer")?;
        match r.error_code {
            0 => Ok(r),
            code => Err(r
                .error_message
                .unwrap_or_else(|| format!("{:?}", ErrorCode::from_code(code)))),
        }
    })
    .map_err(|last| format!("no coordinator found ({last})"))
}

/// Connects to each `host:port` of the comma-separated `bootstrap` in turn and returns the
/// first answer `ask` accepts; otherwise the last failure, with its address.
fn ask_each<T>(
    bootstrap: &str,
    client_id: &str,
    security: &ClientSecurity,
    mut ask: impl FnMut(&mut BlockingChannel) -> Result<T, String>,
) -> Result<T, String> {
    let mut last = String::from("no bootstrap address given");
    for addr in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        let asked = BlockingChannel::connect_to(addr, client_id, Duration::from_secs(10), security)
            .map_err(|e| e.to_string())
            .and_then(|mut c| ask(&mut c));
        match asked {
            Ok(v) => return Ok(v),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

/// Leader address of every partition of `topic`, waiting up to `wait` for all to have one (a
/// topic just created, or auto-created by this very request).
pub fn partition_leaders(
    bootstrap: &str,
    topic: &str,
    client_id: &str,
    wait: Duration,
) -> Result<BTreeMap<i32, String>, String> {
    partition_leaders_as(
        bootstrap,
        topic,
        client_id,
        wait,
        &ClientSecurity::default(),
    )
}

/// `partition_leaders` over a TLS or SASL listener, as `security` says.
pub fn partition_leaders_as(
    bootstrap: &str,
    topic: &str,
    client_id: &str,
    wait: Duration,
    security: &ClientSecurity,
) -> Result<BTreeMap<i32, String>, String> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let m = fetch_metadata_as(bootstrap, &[topic.to_owned()], client_id, true, security)?;
        let t = m
            .topics
            .iter()
            .find(|t| t.topic == topic)
            .ok_or("topic missing from metadata")?;
        let code = ErrorCode::from_code(t.error_code);
        let led = !t.partitions.is_empty() && t.partitions.iter().all(|p| p.leader >= 0);
        if code == ErrorCode::None && led {
            return Ok(t
                .partitions
                .iter()
                .filter_map(|p| {
                    m.brokers
                        .iter()
                        .find(|b| b.id == p.leader)
                        .map(|b| (p.partition, format!("{}:{}", b.host, b.port)))
                })
                .collect());
        }
        if std::time::Instant::now() >= deadline {
            return Err(match code {
                ErrorCode::UnknownTopicOrPartition => format!("topic `{topic}` does not exist"),
                ErrorCode::InvalidTopic => format!("`{topic}` is not a legal topic name"),
                _ => format!("topic `{topic}` has partitions without a leader"),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
