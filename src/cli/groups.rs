//! `gregor consume --group` (a member of a consumer group, through the coordinator) and
//! `gregor groups` (Kafka 0.8's ConsumerOffsetChecker, over Kafka's ListGroups,
//! DescribeGroups and OffsetFetch: both kinds of group, members, owners, offsets, lag).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;

use gregor::client::metadata::{fetch_metadata, find_coordinator, list_offset};
use gregor::network::BlockingChannel;
use gregor::protocol::group_admin::{
    DescribeGroupsRequest, DescribedGroup, decode_assignment, decode_describe_groups,
    decode_list_groups,
};
use gregor::protocol::group_offsets::{OffsetFetchRequest, OffsetFetchResponse};
use gregor::protocol::offsets::LATEST_TIME;
use gregor::protocol::{ErrorCode, Reader, header};

const CLIENT_ID: &str = "gregor-groups";
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct GroupsArgs {
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    #[arg(long, group = "action")]
    list: bool,
    /// The group to describe.
    #[arg(long, group = "action", value_name = "GROUP")]
    describe: Option<String>,
}

pub fn run(a: GroupsArgs) -> Result<(), String> {
    if !a.list && a.describe.is_none() {
        return Err("one of --list, --describe GROUP is required".into());
    }
    let mut c = coordinator(&a.bootstrap, a.describe.as_deref().unwrap_or("-"))?;
    let Some(group) = a.describe else {
        let raw = c
            .round_trip_raw(header::LIST_GROUPS, 2, &|_| {})
            .map_err(|e| e.to_string())?;
        let (code, groups) = decode_list_groups(&mut Reader::new(&raw), 2)
            .map_err(|e| format!("bad answer: {e}"))?;
        check(code)?;
        let names: Vec<String> = groups.into_iter().map(|(g, _, _)| g).collect();
        for g in describe(&mut c, &names)? {
            let kind = if g.protocol_type.is_empty() {
                "-"
            } else {
                &g.protocol_type
            };
            println!("{:<32} {:<10} {}", g.group_id, kind, g.state);
        }
        return Ok(());
    };
    let g = describe(&mut c, std::slice::from_ref(&group))?.remove(0);
    check(g.error_code)?;
    if g.state == "Dead" {
        return Err(format!("no group `{group}`"));
    }
    println!(
        "GROUP {group}: {} {} {}, {} member(s)",
        if g.protocol_type.is_empty() {
            "-"
        } else {
            &g.protocol_type
        },
        if g.protocol.is_empty() {
            "-"
        } else {
            &g.protocol
        },
        g.state,
        g.members.len()
    );
    let mut owners: BTreeMap<(String, i32), String> = BTreeMap::new();
    for m in &g.members {
        let instance = m
            .group_instance_id
            .as_deref()
            .map(|i| format!(" instance {i}"));
        println!(
            "  {}  client {} from {}{}",
            m.member_id,
            m.client_id,
            m.client_host,
            instance.unwrap_or_default()
        );
        for (t, ps) in decode_assignment(&m.assignment).unwrap_or_default() {
            for p in ps {
                owners.insert((t.clone(), p), m.member_id.clone());
            }
        }
    }
    let committed = committed_offsets(&mut c, &group)?;
    let mut parts: Vec<(String, i32)> = owners.keys().cloned().collect();
    parts.extend(committed.keys().cloned());
    parts.sort();
    parts.dedup();
    let ends = log_end_offsets(&a.bootstrap, &parts)?;
    println!(
        "{:<24} {:>9} {:>12} {:>12} {:>10}  OWNER",
        "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG"
    );
    for (topic, partition) in &parts {
        let key = (topic.clone(), *partition);
        let end = ends.get(&key).copied();
        let done = committed.get(&key).copied();
        let lag = match (end, done) {
            (Some(e), Some(c)) => (e - c).max(0).to_string(),
            (Some(e), None) => e.to_string(),
            _ => "-".into(),
        };
        println!(
            "{:<24} {:>9} {:>12} {:>12} {:>10}  {}",
            topic,
            partition,
            done.map_or("-".into(), |c| c.to_string()),
            end.map_or("-".into(), |e| e.to_string()),
            lag,
            owners.get(&key).map_or("none", String::as_str)
        );
    }
    Ok(())
}

fn check(code: i16) -> Result<(), String> {
    match code {
        0 => Ok(()),
        c => Err(format!(
            "the coordinator answered {:?}",
            ErrorCode::from_code(c)
        )),
    }
}

/// A connection to the group coordinator, found through FindCoordinator from a bootstrap
/// broker.
fn coordinator(bootstrap: &str, group: &str) -> Result<BlockingChannel, String> {
    let r = find_coordinator(bootstrap, group, CLIENT_ID)?;
    BlockingChannel::connect(format!("{}:{}", r.host, r.port), CLIENT_ID, TIMEOUT)
        .map_err(|e| format!("coordinator {} at {}:{}: {e}", r.node_id, r.host, r.port))
}

fn describe(c: &mut BlockingChannel, groups: &[String]) -> Result<Vec<DescribedGroup>, String> {
    let req = DescribeGroupsRequest {
        groups: groups.to_vec(),
    };
    let raw = c
        .round_trip_raw(header::DESCRIBE_GROUPS, 4, &|b| req.encode(b, 4))
        .map_err(|e| e.to_string())?;
    decode_describe_groups(&mut Reader::new(&raw), 4).map_err(|e| format!("bad answer: {e}"))
}

/// Every offset the group has committed (OffsetFetch v2+ with no topics).
fn committed_offsets(
    c: &mut BlockingChannel,
    group: &str,
) -> Result<BTreeMap<(String, i32), i64>, String> {
    let req = OffsetFetchRequest {
        group_id: group.to_owned(),
        topics: None,
    };
    let raw = c
        .round_trip_raw(header::OFFSET_FETCH, 5, &|b| req.encode(b, 5))
        .map_err(|e| e.to_string())?;
    let r = OffsetFetchResponse::decode(&mut Reader::new(&raw), 5)
        .map_err(|e| format!("bad answer: {e}"))?;
    check(r.error_code)?;
    Ok(r.topics
        .into_iter()
        .flat_map(|(t, ps)| {
            ps.into_iter()
                .filter(|p| p.offset >= 0)
                .map(move |p| ((t.clone(), p.partition), p.offset))
        })
        .collect())
}

/// The latest offset of every partition the group shows, asked of each leader.
fn log_end_offsets(
    bootstrap: &str,
    parts: &[(String, i32)],
) -> Result<BTreeMap<(String, i32), i64>, String> {
    let mut topics: Vec<String> = parts.iter().map(|(t, _)| t.clone()).collect();
    topics.dedup();
    let mut out = BTreeMap::new();
    if topics.is_empty() {
        return Ok(out);
    }
    let meta = fetch_metadata(bootstrap, &topics, CLIENT_ID)?;
    for (topic, partition) in parts {
        let Some(leader) = meta
            .topics
            .iter()
            .find(|t| t.topic == *topic)
            .and_then(|t| t.partitions.iter().find(|x| x.partition == *partition))
            .and_then(|x| meta.brokers.iter().find(|b| b.id == x.leader))
        else {
            continue;
        };
        let addr = format!("{}:{}", leader.host, leader.port);
        let Ok(mut c) = BlockingChannel::connect(&addr, CLIENT_ID, TIMEOUT) else {
            continue;
        };
        if let Ok(end) = list_offset(&mut c, topic, *partition, LATEST_TIME) {
            out.insert((topic.clone(), *partition), end);
        }
    }
    Ok(out)
}
