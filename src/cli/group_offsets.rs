//! `gregor groups --reset-offsets` and `--delete-offsets`: kafka-consumer-groups.sh's ways of
//! moving or removing what a group has committed, through its coordinator (OffsetCommit
//! without group management, OffsetDelete). Like Kafka's tool, a reset is only made while the
//! group has no members, and without `--execute` it only shows what it would do.

use std::collections::BTreeMap;

use gregor::client::metadata::fetch_metadata_with;
use gregor::network::BlockingChannel;
use gregor::protocol::group_offsets::{
    CommitPartition, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse,
};
use gregor::protocol::offsets::{EARLIEST_TIME, LATEST_TIME};
use gregor::protocol::{ErrorCode, header};

use super::groups::{CLIENT_ID, GroupsArgs, TIMEOUT, check, committed_offsets, describe};

/// Where --reset-offsets moves each partition.
enum Target {
    Earliest,
    Latest,
    Offset(i64),
    ShiftBy(i64),
}

fn target(a: &GroupsArgs) -> Result<Target, String> {
    match (a.to_earliest, a.to_latest, a.to_offset, a.shift_by) {
        (true, false, None, None) => Ok(Target::Earliest),
        (false, true, None, None) => Ok(Target::Latest),
        (false, false, Some(o), None) => Ok(Target::Offset(o)),
        (false, false, None, Some(n)) => Ok(Target::ShiftBy(n)),
        _ => Err(
            "--reset-offsets needs one of --to-earliest, --to-latest, --to-offset N, --shift-by N"
                .into(),
        ),
    }
}

/// The partitions named by --topic (`T` for all of T's, `T:0,2` for some) or --all-topics
/// (every topic the group has committed for).
fn partitions(
    a: &GroupsArgs,
    committed: &BTreeMap<(String, i32), i64>,
) -> Result<Vec<(String, i32)>, String> {
    if a.all_topics {
        return Ok(committed.keys().cloned().collect());
    }
    if a.topic.is_empty() {
        return Err("--topic T (or T:0,1,...) or --all-topics is required".into());
    }
    let names: Vec<String> = a
        .topic
        .iter()
        .map(|t| t.split(':').next().unwrap_or(t).to_owned())
        .collect();
    let m = fetch_metadata_with(&a.bootstrap, &names, CLIENT_ID, false)?;
    let mut out = Vec::new();
    for spec in &a.topic {
        let (name, only) = match spec.split_once(':') {
            Some((n, ps)) => {
                let ps = ps
                    .split(',')
                    .map(|p| p.trim().parse::<i32>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| format!("--topic {spec}: partitions are numbers, as in T:0,1"))?;
                (n, Some(ps))
            }
            None => (spec.as_str(), None),
        };
        let t = m
            .topics
            .iter()
            .find(|t| t.topic == name && t.error_code == 0)
            .ok_or_else(|| format!("topic `{name}` does not exist"))?;
        for p in &t.partitions {
            if only.as_ref().is_none_or(|o| o.contains(&p.partition)) {
                out.push((name.to_owned(), p.partition));
            }
        }
    }
    Ok(out)
}

/// Kafka's rule: offsets are reset only while no member could overwrite them.
fn require_inactive(c: &mut BlockingChannel, group: &str) -> Result<(), String> {
    let g = describe(c, &[group.to_owned()])?.remove(0);
    check(g.error_code)?;
    match g.state.as_str() {
        "Empty" | "Dead" => Ok(()),
        s => Err(format!(
            "assignments can only be reset if the group `{group}` is inactive, but its state is {s}"
        )),
    }
}

pub fn reset_offsets(a: &GroupsArgs, c: &mut BlockingChannel, group: &str) -> Result<(), String> {
    let target = target(a)?;
    require_inactive(c, group)?;
    let committed = committed_offsets(c, group)?;
    let parts = partitions(a, &committed)?;
    let meta = fetch_metadata_with(&a.bootstrap, &[], CLIENT_ID, false)?;
    let mut plan = Vec::new();
    for (topic, partition) in &parts {
        let leader = meta
            .topics
            .iter()
            .find(|t| t.topic == *topic)
            .and_then(|t| t.partitions.iter().find(|p| p.partition == *partition))
            .and_then(|p| meta.brokers.iter().find(|b| b.id == p.leader))
            .ok_or_else(|| format!("{topic}-{partition} has no leader now"))?;
        let mut l = BlockingChannel::connect(
            format!("{}:{}", leader.host, leader.port),
            CLIENT_ID,
            TIMEOUT,
        )
        .map_err(|e| format!("leader of {topic}-{partition}: {e}"))?;
        let earliest = l.list_offset(topic, *partition, EARLIEST_TIME)?;
        let latest = l.list_offset(topic, *partition, LATEST_TIME)?;
        let current = committed.get(&(topic.clone(), *partition)).copied();
        let wanted = match target {
            Target::Earliest => earliest,
            Target::Latest => latest,
            Target::Offset(o) => o,
            Target::ShiftBy(n) => current.unwrap_or(latest) + n,
        };
        // As Kafka's tool does, an offset outside the log is brought inside it.
        plan.push((topic.clone(), *partition, wanted.clamp(earliest, latest)));
    }
    println!(
        "{:<24} {:<24} {:>9} {:>12}",
        "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"
    );
    for (t, p, o) in &plan {
        println!("{group:<24} {t:<24} {p:>9} {o:>12}");
    }
    if !a.execute {
        println!("(a dry run: nothing was changed; --execute resets the offsets)");
        return Ok(());
    }
    let mut topics: BTreeMap<String, Vec<CommitPartition>> = BTreeMap::new();
    for (t, p, o) in plan {
        topics.entry(t).or_default().push(CommitPartition {
            partition: p,
            offset: o,
            timestamp: -1,
            leader_epoch: -1,
            metadata: Some(String::new()),
        });
    }
    let req = OffsetCommitRequest {
        group_id: group.to_owned(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: topics.into_iter().collect(),
    };
    let r: OffsetCommitResponse = c
        .send(header::OFFSET_COMMIT, 2, &req)
        .map_err(|e| e.to_string())?;
    for (t, ps) in r.topics {
        for (p, code) in ps {
            if code != 0 {
                return Err(format!(
                    "{t}-{p}: the coordinator answered {:?}",
                    ErrorCode::from_code(code)
                ));
            }
        }
    }
    Ok(())
}

pub fn delete_offsets(a: &GroupsArgs, c: &mut BlockingChannel, group: &str) -> Result<(), String> {
    let committed = committed_offsets(c, group)?;
    let parts = partitions(a, &committed)?;
    let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (t, p) in parts {
        topics.entry(t).or_default().push(p);
    }
    let req = OffsetDeleteRequest {
        group_id: group.to_owned(),
        topics: topics.into_iter().collect(),
    };
    let r: OffsetDeleteResponse = c
        .send(header::OFFSET_DELETE, 0, &req)
        .map_err(|e| e.to_string())?;
    let (code, results) = (r.error_code, r.topics);
    check(code)?;
    println!("{:<24} {:>9}  STATUS", "TOPIC", "PARTITION");
    let mut failed = false;
    for (t, ps) in results {
        for (p, code) in ps {
            let status = match ErrorCode::from_code(code) {
                ErrorCode::None => "Successful".to_owned(),
                e => {
                    failed = true;
                    format!("Error: {e:?}")
                }
            };
            println!("{t:<24} {p:>9}  {status}");
        }
    }
    if failed {
        return Err("some offsets were not deleted".into());
    }
    Ok(())
}
