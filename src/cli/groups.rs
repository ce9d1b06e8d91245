//! `gregor consume --group` (a member of a consumer group, through the coordinator) and
//! `gregor groups` (Kafka 0.8's ConsumerOffsetChecker, over Kafka's ListGroups,
//! DescribeGroups and OffsetFetch: both kinds of group, members, owners, offsets, lag).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;

use gregor::client::metadata::{fetch_metadata, find_coordinator};
use gregor::network::BlockingChannel;
use gregor::protocol::group_admin::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribedGroup, ListGroupsRequest,
    ListGroupsResponse, decode_assignment,
};
use gregor::protocol::group_offsets::{OffsetFetchRequest, OffsetFetchResponse};
use gregor::protocol::offsets::LATEST_TIME;
use gregor::protocol::{ErrorCode, header};

pub(super) const CLIENT_ID: &str = "gregor-groups";
pub(super) const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct GroupsArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    pub(super) bootstrap: String,
    /// List every group: name, protocol type, state.
    #[arg(long, group = "action")]
    list: bool,
    /// Describe --group: members, owners, committed offsets, lag (`--describe GROUP` too).
    #[arg(long, group = "action", num_args = 0..=1, value_name = "GROUP")]
    describe: Option<Option<String>>,
    /// Move --group's committed offsets (with --to-earliest, --to-latest, --to-offset or
    /// --shift-by; only while the group has no members; --execute to apply).
    #[arg(long = "reset-offsets", group = "action")]
    reset_offsets: bool,
    /// Remove --group's committed offsets of --topic (not while the group consumes it).
    #[arg(long = "delete-offsets", group = "action")]
    delete_offsets: bool,
    /// The group to act on.
    #[arg(long)]
    group: Option<String>,
    /// With --reset-offsets or --delete-offsets: a topic, or some of its partitions as
    /// `TOPIC:0,1` (repeatable).
    #[arg(long)]
    pub(super) topic: Vec<String>,
    /// With --reset-offsets: every topic the group has committed offsets for.
    #[arg(long = "all-topics")]
    pub(super) all_topics: bool,
    /// Reset to each partition's earliest offset.
    #[arg(long = "to-earliest")]
    pub(super) to_earliest: bool,
    /// Reset to each partition's log end.
    #[arg(long = "to-latest")]
    pub(super) to_latest: bool,
    /// Reset to this offset (kept within each log).
    #[arg(long = "to-offset", allow_hyphen_values = true)]
    pub(super) to_offset: Option<i64>,
    /// Move each committed offset by this many (negative: back).
    #[arg(long = "shift-by", allow_hyphen_values = true)]
    pub(super) shift_by: Option<i64>,
    /// Apply the reset (without it, or with --dry-run, only show it).
    #[arg(long, conflicts_with = "dry_run")]
    pub(super) execute: bool,
    /// Only show what --reset-offsets would do (the default).
    #[arg(long = "dry-run")]
    dry_run: bool,
}

pub fn run(a: GroupsArgs) -> Result<(), String> {
    let describing = a.describe.clone().map(|g| g.or_else(|| a.group.clone()));
    if !a.list && describing.is_none() && !a.reset_offsets && !a.delete_offsets {
        return Err(
            "one of --list, --describe, --reset-offsets, --delete-offsets is required".into(),
        );
    }
    if a.reset_offsets || a.delete_offsets {
        let group = a.group.clone().ok_or("--group is required")?;
        let mut c = coordinator(&a.bootstrap, &group)?;
        return if a.reset_offsets {
            super::group_offsets::reset_offsets(&a, &mut c, &group)
        } else {
            super::group_offsets::delete_offsets(&a, &mut c, &group)
        };
    }
    if let Some(None) = describing {
        return Err("--describe needs --group GROUP".into());
    }
    let describe_group = describing.flatten();
    let mut c = coordinator(&a.bootstrap, describe_group.as_deref().unwrap_or("-"))?;
    let Some(group) = describe_group else {
        let all = ListGroupsRequest::default();
        let r: ListGroupsResponse = c
            .send(header::LIST_GROUPS, 2, &all)
            .map_err(|e| e.to_string())?;
        check(r.error_code)?;
        let names: Vec<String> = r.groups.into_iter().map(|g| g.group_id).collect();
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
        let lag = lag_cell(end, done);
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

/// The LAG column: the log end less the committed offset; `-` where either is unknown, as
/// kafka-consumer-groups.sh shows a partition the group has committed nothing for (not its
/// whole log as lag).
fn lag_cell(end: Option<i64>, committed: Option<i64>) -> String {
    match (end, committed) {
        (Some(e), Some(c)) => (e - c).max(0).to_string(),
        _ => "-".into(),
    }
}

pub(super) fn check(code: i16) -> Result<(), String> {
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

pub(super) fn describe(
    c: &mut BlockingChannel,
    groups: &[String],
) -> Result<Vec<DescribedGroup>, String> {
    let req = DescribeGroupsRequest {
        groups: groups.to_vec(),
    };
    let r: DescribeGroupsResponse = c
        .send(header::DESCRIBE_GROUPS, 4, &req)
        .map_err(|e| e.to_string())?;
    Ok(r.groups)
}

/// Every offset the group has committed (OffsetFetch v2+ with no topics).
pub(super) fn committed_offsets(
    c: &mut BlockingChannel,
    group: &str,
) -> Result<BTreeMap<(String, i32), i64>, String> {
    let req = OffsetFetchRequest {
        group_id: group.to_owned(),
        topics: None,
        require_stable: false,
    };
    let r: OffsetFetchResponse = c
        .send(header::OFFSET_FETCH, 5, &req)
        .map_err(|e| e.to_string())?;
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
        if let Ok(end) = c.list_offset(topic, *partition, LATEST_TIME) {
            out.insert((topic.clone(), *partition), end);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::lag_cell;

    #[test]
    fn nothing_committed_shows_no_lag_figure() {
        assert_eq!(lag_cell(Some(100), Some(40)), "60");
        assert_eq!(lag_cell(Some(100), None), "-");
        assert_eq!(lag_cell(None, Some(3)), "-");
    }
}
