//! rebalance step 2: the range assignment of Kafka 0.8, pure so it can be tested alone.
//!
//! Per topic: the partitions sorted, the consumer streams interested in the topic sorted, and
//! each stream given a contiguous range; when the division is uneven the first streams get one
//! partition more.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use crate::protocol::coordinator::Subscription;
use crate::zk::groups::Ownership;

/// A member and what it subscribes to.
pub struct Interest<'a> {
    pub consumer_id: &'a str,
    pub topics: &'a TopicFilter,
}

pub enum TopicFilter {
    Static(BTreeMap<String, i32>),
    Whitelist { regex: Regex, streams: i32 },
}

impl TopicFilter {
    /// Compiles a subscription; a whitelist must match a topic name whole, as Java's
    /// `String.matches` did for Kafka's whitelists.
    pub fn new(s: &Subscription) -> Result<TopicFilter, regex::Error> {
        Ok(match s {
            Subscription::Static(t) => TopicFilter::Static(t.clone()),
            Subscription::Whitelist { pattern, streams } => TopicFilter::Whitelist {
                regex: Regex::new(&format!("^(?:{pattern})$"))?,
                streams: *streams,
            },
        })
    }

    /// How many streams this member runs for `topic` (0: not interested).
    pub fn streams_for(&self, topic: &str) -> i32 {
        match self {
            TopicFilter::Static(t) => t.get(topic).copied().unwrap_or(0),
            TopicFilter::Whitelist { regex, streams } if regex.is_match(topic) => *streams,
            TopicFilter::Whitelist { .. } => 0,
        }
    }

    pub fn is_wildcard(&self) -> bool {
        matches!(self, TopicFilter::Whitelist { .. })
    }
}

/// The stream id Kafka 0.8 used as owner: `[consumer]-[thread]`.
pub fn stream_id(consumer: &str, stream: i32) -> String {
    format!("{consumer}-{stream}")
}

/// The new ownership of every partition of every topic some member is interested in.
/// `partitions` gives each existing topic's partition ids.
pub fn range_assignment(
    members: &[Interest],
    partitions: &BTreeMap<String, Vec<i32>>,
) -> Ownership {
    let mut owners = Ownership::new();
    for (topic, parts) in partitions {
        let streams: BTreeSet<String> = members
            .iter()
            .flat_map(|m| (0..m.topics.streams_for(topic)).map(|i| stream_id(m.consumer_id, i)))
            .collect();
        if streams.is_empty() {
            continue;
        }
        let mut parts = parts.clone();
        parts.sort_unstable();
        let per = parts.len() / streams.len();
        let extra = parts.len() % streams.len();
        for (i, stream) in streams.iter().enumerate() {
            let start = per * i + i.min(extra);
            let n = per + usize::from(i < extra);
            for p in &parts[start..start + n] {
                owners.insert((topic.clone(), *p), stream.clone());
            }
        }
    }
    owners
}

/// The partitions each consumer owns under `owners` (streams map back to their consumer).
pub fn shares<'a>(
    members: impl Iterator<Item = &'a str>,
    owners: &Ownership,
) -> BTreeMap<String, BTreeSet<(String, i32)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, i32)>> =
        members.map(|m| (m.to_owned(), BTreeSet::new())).collect();
    for (tp, stream) in owners {
        if let Some((consumer, _)) = stream.rsplit_once('-')
            && let Some(set) = out.get_mut(consumer)
        {
            set.insert(tp.clone());
        }
    }
    out
}

/// rebalance step 3: whether the ownership in ZooKeeper differs from the new one.
pub fn rebalance_necessary(current: &Ownership, new: &Ownership) -> Option<&'static str> {
    if current.is_empty() && !new.is_empty() {
        // 3.1
        Some("no ownership registered")
    } else if new.keys().any(|k| !current.contains_key(k)) {
        // 3.2
        Some("some partitions are not owned")
    } else if current.keys().any(|k| !new.contains_key(k)) {
        // 3.3
        Some("some owned partitions no longer exist")
    } else if current != new {
        // 3.4
        Some("ownership differs from the new assignment")
    } else {
        // 3.5
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(topics: &[(&str, i32)]) -> TopicFilter {
        TopicFilter::Static(topics.iter().map(|(t, n)| (t.to_string(), *n)).collect())
    }

    fn member<'a>(id: &'a str, f: &'a TopicFilter) -> Interest<'a> {
        Interest {
            consumer_id: id,
            topics: f,
        }
    }

    fn parts(topics: &[(&str, i32)]) -> BTreeMap<String, Vec<i32>> {
        topics
            .iter()
            .map(|(t, n)| (t.to_string(), (0..*n).collect()))
            .collect()
    }

    #[test]
    fn ranges_are_contiguous_and_the_first_streams_get_one_more() {
        let f = filter(&[("t", 1)]);
        let m = [member("a", &f), member("b", &f), member("c", &f)];
        let o = range_assignment(&m, &parts(&[("t", 8)]));
        let of = |s: &str| -> Vec<i32> {
            o.iter()
                .filter(|(_, v)| *v == s)
                .map(|((_, p), _)| *p)
                .collect()
        };
        assert_eq!(of("a-0"), vec![0, 1, 2]);
        assert_eq!(of("b-0"), vec![3, 4, 5]);
        assert_eq!(of("c-0"), vec![6, 7]);
    }

    #[test]
    fn streams_count_and_topics_are_assigned_separately() {
        let (fa, fb) = (filter(&[("t", 2), ("u", 1)]), filter(&[("t", 1)]));
        let m = [member("a", &fa), member("b", &fb)];
        let o = range_assignment(&m, &parts(&[("t", 6), ("u", 2), ("v", 3)]));
        assert_eq!(o.len(), 8, "v has no interested member");
        let s = shares(["a", "b"].into_iter(), &o);
        assert_eq!(s["a"].len(), 6, "two of three t streams and all of u");
        assert_eq!(s["b"].len(), 2);
    }

    #[test]
    fn more_streams_than_partitions_leaves_the_last_idle() {
        let f = filter(&[("t", 1)]);
        let m = [member("a", &f), member("b", &f), member("c", &f)];
        let o = range_assignment(&m, &parts(&[("t", 2)]));
        let s = shares(["a", "b", "c"].into_iter(), &o);
        assert!(s["c"].is_empty());
        assert_eq!(s["a"].len() + s["b"].len(), 2);
    }

    #[test]
    fn whitelists_match_whole_names() {
        let f = TopicFilter::new(&Subscription::Whitelist {
            pattern: "logs-.*".into(),
            streams: 2,
        })
        .unwrap();
        assert_eq!(f.streams_for("logs-a"), 2);
        assert_eq!(f.streams_for("old-logs-a"), 0);
        assert!(
            TopicFilter::new(&Subscription::Whitelist {
                pattern: "(".into(),
                streams: 1
            })
            .is_err()
        );
    }

    #[test]
    fn the_necessity_checks_follow_steps_3_1_to_3_5() {
        let o = |v: &[(i32, &str)]| -> Ownership {
            v.iter()
                .map(|(p, s)| (("t".to_string(), *p), s.to_string()))
                .collect()
        };
        let new = o(&[(0, "a-0"), (1, "b-0")]);
        assert!(
            rebalance_necessary(&o(&[]), &new)
                .unwrap()
                .contains("no ownership")
        );
        assert!(
            rebalance_necessary(&o(&[(0, "a-0")]), &new)
                .unwrap()
                .contains("not owned")
        );
        let gone = o(&[(0, "a-0"), (1, "b-0"), (2, "b-0")]);
        assert!(
            rebalance_necessary(&gone, &new)
                .unwrap()
                .contains("no longer exist")
        );
        let moved = o(&[(0, "b-0"), (1, "a-0")]);
        assert!(
            rebalance_necessary(&moved, &new)
                .unwrap()
                .contains("differs")
        );
        assert_eq!(rebalance_necessary(&new, &new), None);
    }
}
