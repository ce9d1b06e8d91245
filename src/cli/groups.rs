//! `gregor consume --group` (a member of a consumer group, through the coordinator) and
//! `gregor groups` (Kafka 0.8's ConsumerOffsetChecker: members, owners, offsets, lag).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use clap::Args;
use crossbeam_channel::bounded;

use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
use gregor::client::metadata::{fetch_metadata, list_offset};
use gregor::network::BlockingChannel;
use gregor::network::channel::read_frame;
use gregor::protocol::coordinator::{
    self as proto, DescribeGroupsRequest, DescribeGroupsResponse, Subscription,
};
use gregor::protocol::offsets::LATEST_TIME;
use gregor::protocol::{ErrorCode, decode_all};

use super::console::{ConsumeArgs, print_record};

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

/// Consumes until --max-messages, SIGINT or SIGTERM; then leaves the group, committing.
pub fn consume_in_group(a: ConsumeArgs) -> Result<(), String> {
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

pub fn run(a: GroupsArgs) -> Result<(), String> {
    let group = a.describe.clone();
    if !a.list && group.is_none() {
        return Err("one of --list, --describe GROUP is required".into());
    }
    let resp = describe(&a.bootstrap, group.clone())?;
    if resp.error_code != 0 {
        return Err(match (ErrorCode::from_code(resp.error_code), &group) {
            (ErrorCode::InvalidGroupId, Some(g)) => format!("no group `{g}`"),
            (e, _) => format!("the broker answered {e:?}"),
        });
    }
    let Some(group) = group else {
        for g in resp.groups {
            println!("{g}");
        }
        return Ok(());
    };
    println!("GROUP {group}: {} member(s)", resp.members.len());
    for m in &resp.members {
        println!("  {}  {}", m.consumer_id, m.subscription);
    }
    let ends = log_end_offsets(&a.bootstrap, &resp)?;
    println!(
        "{:<24} {:>9} {:>12} {:>12} {:>10}  OWNER",
        "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG"
    );
    for p in &resp.partitions {
        let end = ends.get(&(p.topic.clone(), p.partition)).copied();
        let lag = match (end, p.committed) {
            (Some(e), c) if c >= 0 => (e - c).max(0).to_string(),
            (Some(e), _) => e.to_string(),
            _ => "-".into(),
        };
        println!(
            "{:<24} {:>9} {:>12} {:>12} {:>10}  {}",
            p.topic,
            p.partition,
            if p.committed >= 0 {
                p.committed.to_string()
            } else {
                "-".into()
            },
            end.map_or("-".into(), |e| e.to_string()),
            lag,
            p.owner.as_deref().unwrap_or("none")
        );
    }
    Ok(())
}

fn describe(bootstrap: &str, group: Option<String>) -> Result<DescribeGroupsResponse, String> {
    let mut last = String::from("no bootstrap address given");
    for addr in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let attempt = (|| -> Result<DescribeGroupsResponse, String> {
            let c = BlockingChannel::connect(addr, "gregor-groups", Duration::from_secs(10))
                .map_err(|e| e.to_string())?;
            let mut s = c.into_stream();
            let req = DescribeGroupsRequest {
                group: group.clone(),
            };
            s.write_all(&proto::frame(proto::DESCRIBE_GROUPS, &req))
                .map_err(|e| e.to_string())?;
            let body = read_frame(&mut s).map_err(|e| e.to_string())?;
            decode_all(&body).map_err(|e| format!("bad answer: {e}"))
        })();
        match attempt {
            Ok(r) => return Ok(r),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(format!("no broker answered ({last})"))
}

/// The latest offset of every partition the group shows, asked of each leader.
fn log_end_offsets(
    bootstrap: &str,
    resp: &DescribeGroupsResponse,
) -> Result<BTreeMap<(String, i32), i64>, String> {
    let mut topics: Vec<String> = resp.partitions.iter().map(|p| p.topic.clone()).collect();
    topics.dedup();
    let mut out = BTreeMap::new();
    if topics.is_empty() {
        return Ok(out);
    }
    let meta = fetch_metadata(bootstrap, &topics, "gregor-groups")?;
    for p in &resp.partitions {
        let Some(leader) = meta
            .topics
            .iter()
            .find(|t| t.topic == p.topic)
            .and_then(|t| t.partitions.iter().find(|x| x.partition == p.partition))
            .and_then(|x| meta.brokers.iter().find(|b| b.id == x.leader))
        else {
            continue;
        };
        let addr = format!("{}:{}", leader.host, leader.port);
        let Ok(mut c) = BlockingChannel::connect(&addr, "gregor-groups", Duration::from_secs(5))
        else {
            continue;
        };
        if let Ok(end) = list_offset(&mut c, &p.topic, p.partition, LATEST_TIME) {
            out.insert((p.topic.clone(), p.partition), end);
        }
    }
    Ok(out)
}
