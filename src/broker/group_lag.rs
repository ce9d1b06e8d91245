//! Consumer-group lag on the coordinator, under kafka-exporter's names: for every group with
//! committed offsets (both kinds of group keep them in ZooKeeper), per partition
//! `kafka_consumergroup_current_offset`, `kafka_consumergroup_lag` (high watermark minus the
//! committed offset) and per topic `kafka_consumergroup_lag_sum`.
//!
//! Only the coordinator reports, so a dashboard summing over brokers counts each group once.
//! A scrape reads the offsets from ZooKeeper and asks each partition's leader for its high
//! watermark (this broker's own partitions answer from memory); a leader that does not answer
//! within `ASK_TIMEOUT` leaves its partitions out of that scrape rather than delaying it.

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus::proto::MetricFamily;

use super::Broker;
use super::partition::Role;
use crate::metrics::Family;
use crate::network::BlockingChannel;
use crate::protocol::offsets::LATEST_TIME;
use crate::zk::{groups, paths};

const ASK_TIMEOUT: Duration = Duration::from_secs(2);

type Offsets = BTreeMap<(String, i32), i64>;
/// (group, (topic, partition)) → committed offset.
type Committed = BTreeMap<(String, (String, i32)), i64>;

pub(super) fn lag_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    if !b.coordinator.is_coordinator() {
        return;
    }
    let committed = match committed_offsets(b) {
        Ok(c) => c,
        Err(e) => {
            log::debug!(
                "[Broker {}] group offsets not read for metrics: {e:?}",
                b.id()
            );
            return;
        }
    };
    let mut wanted: Vec<(String, i32)> = committed.keys().map(|(_, tp)| tp.clone()).collect();
    wanted.sort();
    wanted.dedup();
    let ends = high_watermarks(b, &wanted);
    let mut current = Family::gauge(
        "kafka_consumergroup_current_offset",
        "Offset the group has committed, per partition",
    );
    let mut lag = Family::gauge(
        "kafka_consumergroup_lag",
        "High watermark minus the group's committed offset, per partition",
    );
    let mut sums: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for ((group, (topic, partition)), offset) in &committed {
        let p = partition.to_string();
        let labels = [
            ("consumergroup", group.as_str()),
            ("topic", topic.as_str()),
            ("partition", p.as_str()),
        ];
        current.add(&labels, *offset as f64);
        if let Some(end) = ends.get(&(topic.clone(), *partition)) {
            let l = (end - offset).max(0);
            lag.add(&labels, l as f64);
            *sums.entry((group, topic)).or_default() += l;
        }
    }
    let mut sum = Family::gauge(
        "kafka_consumergroup_lag_sum",
        "The group's lag summed over the partitions of a topic",
    );
    for ((group, topic), l) in sums {
        sum.add(&[("consumergroup", group), ("topic", topic)], l as f64);
    }
    out.extend([current.done(), lag.done(), sum.done()]);
}

/// Every committed offset of every group.
fn committed_offsets(b: &Broker) -> crate::zk::ZkResult<Committed> {
    let mut out = BTreeMap::new();
    for group in groups::all_groups(&b.zk)? {
        for (topic, parts) in super::apis::group_offsets::committed_partitions(&b.zk, &group)? {
            for p in parts {
                if let Some(o) = paths::committed_offset(&b.zk, &group, &topic, p)? {
                    out.insert((group.clone(), (topic.clone(), p)), o);
                }
            }
        }
    }
    Ok(out)
}

/// The high watermark of each partition in `wanted` whose leader answers: read here for the
/// partitions led here, asked of the other leaders on the inter-broker listener.
fn high_watermarks(b: &Broker, wanted: &[(String, i32)]) -> Offsets {
    let mut ends = Offsets::new();
    let mut remote: BTreeMap<i32, Vec<&(String, i32)>> = BTreeMap::new();
    for tp in wanted {
        match b.replica_manager.get_partition(&tp.0, tp.1) {
            Some(p) if p.role() == Role::Leader => {
                ends.insert(tp.clone(), p.high_watermark());
            }
            _ => {
                if let Some(leader) = b.metadata_cache.leader_of(&tp.0, tp.1).filter(|l| *l >= 0) {
                    remote.entry(leader).or_default().push(tp);
                }
            }
        }
    }
    let brokers = b
        .metadata_cache
        .live_brokers(&b.config.listeners.inter_broker);
    for (leader, tps) in remote {
        let Some(info) = brokers.iter().find(|x| x.id == leader) else {
            continue;
        };
        let client = format!("broker-{}-metrics", b.id());
        let addr = (info.host.as_str(), info.port as u16);
        let security = &b.config.inter_broker_client;
        let Ok(mut chan) = BlockingChannel::connect_as(addr, &client, ASK_TIMEOUT, security) else {
            continue;
        };
        for (topic, partition) in tps {
            match chan.list_offset(topic, *partition, LATEST_TIME) {
                Ok(end) => {
                    ends.insert((topic.clone(), *partition), end);
                }
                Err(_) => break,
            }
        }
    }
    ends
}
