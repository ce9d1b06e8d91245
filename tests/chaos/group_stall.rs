//! When the Kafka-protocol group misses messages, which side stalled: for each partition with
//! messages it never consumed, the first such offset and how many, which member said it owns
//! the partition, the last offset each member consumed from it, what the owner's librdkafka
//! last said of its fetcher for it (state, leader, broker fetched from, next offset, high
//! watermark) and its last error, and the group's committed offset. A group that stops reading part of a topic then explains itself in the report.

use std::collections::{BTreeMap, BTreeSet};

use crate::workload::{Ack, MemberView, value};

/// One line per partition the group left unread, ordered by partition.
pub fn stalled_partitions(
    acks: &[Ack],
    consumed: &BTreeSet<&str>,
    members: &[MemberView],
    committed: &BTreeMap<i32, i64>,
) -> Vec<String> {
    // Partition → (first missing offset, how many).
    let mut missing: BTreeMap<i32, (i64, usize)> = BTreeMap::new();
    for a in acks {
        if !consumed.contains(value(a.producer, a.seq).as_str()) {
            let m = missing.entry(a.partition).or_insert((a.offset, 0));
            m.0 = m.0.min(a.offset);
            m.1 += 1;
        }
    }
    missing
        .into_iter()
        .map(|(p, (first, n))| {
            let owners: Vec<String> = members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.owns.contains(&p))
                .map(|(i, m)| {
                    format!(
                        "member {i}{} (fetcher: {}; last error: {})",
                        if m.exited { ", exited" } else { "" },
                        m.fetcher.get(&p).map_or("not reported", String::as_str),
                        m.last_error.as_deref().unwrap_or("none"),
                    )
                })
                .collect();
            let last: Vec<String> = members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let o = m
                        .last_consumed
                        .get(&p)
                        .map_or("none".into(), i64::to_string);
                    format!("member {i} {o}")
                })
                .collect();
            format!(
                "the Kafka-protocol group left partition {p} unread from offset {first} ({n} \
                 acknowledged messages); owned by {}; last consumed: {}; committed: {}",
                if owners.is_empty() {
                    "no member".into()
                } else {
                    owners.join(", ")
                },
                last.join(", "),
                committed.get(&p).map_or("nothing".into(), i64::to_string),
            )
        })
        .collect()
}

#[test]
fn a_stalled_partition_is_named_with_its_owner_progress_and_commit() {
    let t = std::time::Instant::now();
    let ack = |seq, partition, offset| Ack {
        producer: 1,
        seq,
        partition,
        offset,
        at: t,
    };
    let acks = [ack(0, 4, 10), ack(1, 4, 11), ack(2, 4, 12), ack(3, 2, 5)];
    let consumed: BTreeSet<&str> = ["p1-0", "p1-3"].into();
    let mut m0 = MemberView::default();
    m0.note("owns chaos:2,chaos:4");
    m0.note("msg 4 10 p1-0");
    m0.note("fetch 4 offset-query leader=1 broker=1 next=11 hi=11");
    m0.note("fetch 4 validate-epoch-wait leader=2 broker=2 next=11 hi=13");
    m0.note("error KafkaError{code=_TRANSPORT,val=-195,str=\"broker down\"}");
    let mut m1 = MemberView::default();
    m1.note("owns chaos:1");
    m1.exited = true;
    let lines = stalled_partitions(&acks, &consumed, &[m0, m1], &[(4, 11)].into());
    assert_eq!(
        lines,
        [
            "the Kafka-protocol group left partition 4 unread from offset 11 (2 acknowledged \
          messages); owned by member 0 (fetcher: validate-epoch-wait leader=2 broker=2 \
          next=11 hi=13; last error: KafkaError{code=_TRANSPORT,val=-195,str=\"broker down\"}); \
          last consumed: member 0 10, member 1 none; committed: 11"
        ]
    );
}
