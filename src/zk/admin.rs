//! Admin operations on ZooKeeper, as Kafka's `AdminUtils` did them: create, delete, list and
//! describe topics, request reassignments and preferred-replica elections. Used by
//! `gregor topics`, `gregor reassign` and by brokers auto-creating topics.

use std::collections::BTreeMap;
use std::fmt;

use crate::zk::ZkError;

use crate::zk::ZkClient;
use crate::zk::paths::{self, LeaderAndIsr, PartitionList, PartitionRef, ReassignmentRequest};

/// Kafka's limit on topic names.
pub const MAX_TOPIC_NAME: usize = 249;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminError {
    InvalidTopic(String),
    TopicExists(String),
    UnknownTopic(String),
    /// Replication factor above the live brokers, or not positive.
    InvalidReplicationFactor {
        requested: i32,
        live: usize,
    },
    InvalidPartitions(i32),
    /// `--alter` must raise the count: (asked, current).
    PartitionsNotRaised(i32, i32),
    InvalidAssignment(String),
    Zk(String),
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::InvalidTopic(why) => write!(f, "invalid topic name: {why}"),
            AdminError::TopicExists(t) => write!(f, "topic `{t}` already exists"),
            AdminError::UnknownTopic(t) => write!(f, "topic `{t}` does not exist"),
            AdminError::InvalidReplicationFactor { requested, live } => {
                write!(
                    f,
                    "replication factor {requested} is not possible with {live} live broker(s)"
                )
            }
            AdminError::InvalidPartitions(n) => {
                write!(f, "number of partitions must be positive, got {n}")
            }
            AdminError::PartitionsNotRaised(asked, have) => write!(
                f,
                "the topic has {have} partitions; the new count must be more (asked {asked})"
            ),
            AdminError::InvalidAssignment(why) => write!(f, "invalid replica assignment: {why}"),
            AdminError::Zk(e) => write!(f, "ZooKeeper error: {e}"),
        }
    }
}

impl std::error::Error for AdminError {}

impl From<ZkError> for AdminError {
    fn from(e: ZkError) -> Self {
        AdminError::Zk(format!("{e:?}"))
    }
}

/// Kafka's legal topic names: 1–249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), AdminError> {
    if name.is_empty() {
        return Err(AdminError::InvalidTopic("empty".into()));
    }
    if name == "." || name == ".." {
        return Err(AdminError::InvalidTopic(format!("`{name}` is reserved")));
    }
    if name.len() > MAX_TOPIC_NAME {
        return Err(AdminError::InvalidTopic(format!(
            "longer than {MAX_TOPIC_NAME} characters"
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(AdminError::InvalidTopic(format!(
            "`{name}` contains `{c}`; legal are a-z A-Z 0-9 . _ -"
        )));
    }
    Ok(())
}

/// Kafka's replica placement: partition i's first replica is broker (start + i) mod n, the
/// others follow at a shift that grows every n partitions, so replicas and leaders spread
/// evenly over the brokers. `start` varies by topic so small topics do not all pile onto the
/// first broker.
pub fn assign_replicas(
    brokers: &[i32],
    partitions: i32,
    rf: i32,
    start: usize,
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    if partitions <= 0 {
        return Err(AdminError::InvalidPartitions(partitions));
    }
    let n = brokers.len();
    if rf <= 0 || rf as usize > n {
        return Err(AdminError::InvalidReplicationFactor {
            requested: rf,
            live: n,
        });
    }
    let mut out = BTreeMap::new();
    let mut shift = start % n.max(1);
    for p in 0..partitions as usize {
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let first = (p + start) % n;
        let mut replicas = vec![brokers[first]];
        for j in 0..(rf as usize - 1) {
            let idx = (first + 1 + (shift + j) % (n - 1)) % n;
            replicas.push(brokers[idx]);
        }
        out.insert(p as i32, replicas);
    }
    Ok(out)
}

/// Parses `--replica-assignment 1:2,2:3,...` (partition i = the i-th comma-separated group).
pub fn parse_assignment(s: &str, live: &[i32]) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    check_assignment(&split_assignment(s)?, 0, live)
}

/// The replica lists of `1:2,2:3,...`, unchecked.
pub fn split_assignment(s: &str) -> Result<Vec<Vec<i32>>, AdminError> {
    s.split(',')
        .map(|group| {
            group
                .split(':')
                .map(|r| {
                    r.trim().parse::<i32>().map_err(|_| {
                        AdminError::InvalidAssignment(format!(
                            "`{r}` in `{group}` is not a broker id"
                        ))
                    })
                })
                .collect::<Result<Vec<i32>, _>>()
        })
        .collect()
}

/// Checks replica lists given for partitions `first`, `first + 1`, …: no broker twice in a
/// partition, every broker live, the same number of replicas everywhere.
pub fn check_assignment(
    groups: &[Vec<i32>],
    first: i32,
    live: &[i32],
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    let mut out = BTreeMap::new();
    for (i, replicas) in groups.iter().enumerate() {
        let p = first + i as i32;
        let mut sorted = replicas.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if replicas.is_empty() || sorted.len() != replicas.len() {
            return Err(AdminError::InvalidAssignment(format!(
                "partition {p} lists no broker, or one twice: {replicas:?}"
            )));
        }
        if let Some(r) = replicas.iter().find(|r| !live.contains(r)) {
            return Err(AdminError::InvalidAssignment(format!(
                "broker {r} (partition {p}) is not live"
            )));
        }
        if groups[0].len() != replicas.len() {
            return Err(AdminError::InvalidAssignment(
                "every partition needs the same number of replicas".into(),
            ));
        }
        out.insert(p, replicas.clone());
    }
    Ok(out)
}

fn live_ids(zk: &ZkClient) -> Result<Vec<i32>, AdminError> {
    Ok(paths::live_brokers(zk)?.into_iter().map(|b| b.id).collect())
}

/// The replicas a new topic would get: `given` (partition i = the i-th list), or spread over
/// the live brokers. Checks the name and that the topic does not exist; writes nothing.
pub fn plan_topic(
    zk: &ZkClient,
    topic: &str,
    partitions: i32,
    rf: i32,
    given: Option<&[Vec<i32>]>,
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    validate_topic_name(topic)?;
    if paths::topic_assignment(zk, topic)?.is_some() {
        return Err(AdminError::TopicExists(topic.to_owned()));
    }
    let live = live_ids(zk)?;
    match given {
        Some([]) => Err(AdminError::InvalidPartitions(0)),
        Some(groups) => check_assignment(groups, 0, &live),
        None => {
            let start = topic
                .bytes()
                .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
            assign_replicas(&live, partitions, rf, start)
        }
    }
}

/// Writes a planned topic; the controller's watch on `/brokers/topics` creates its
/// partitions (`on_topic_change`).
pub fn write_topic(
    zk: &ZkClient,
    topic: &str,
    assignment: &BTreeMap<i32, Vec<i32>>,
) -> Result<(), AdminError> {
    match paths::create_topic(zk, topic, assignment) {
        Ok(()) => Ok(()),
        Err(ZkError::NodeExists) => Err(AdminError::TopicExists(topic.to_owned())),
        Err(e) => Err(e.into()),
    }
}

/// Creates a topic, spreading replicas over the live brokers unless `assignment` is given.
pub fn create_topic(
    zk: &ZkClient,
    topic: &str,
    partitions: i32,
    rf: i32,
    assignment: Option<&str>,
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    let a = match assignment {
        Some(s) => {
            validate_topic_name(topic)?;
            parse_assignment(s, &live_ids(zk)?)?
        }
        None => plan_topic(zk, topic, partitions, rf, None)?,
    };
    write_topic(zk, topic, &a)?;
    Ok(a)
}

/// The whole assignment a topic would have with `partitions` partitions (Kafka's `--alter
/// --partitions`): the new ones get `given`, or the replication factor of partition 0 spread
/// over the live brokers. Partitions are never removed. Writes nothing.
pub fn plan_partitions(
    zk: &ZkClient,
    topic: &str,
    partitions: i32,
    given: Option<&[Vec<i32>]>,
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    let mut current = paths::topic_assignment(zk, topic)?
        .ok_or_else(|| AdminError::UnknownTopic(topic.to_owned()))?;
    let have = current.len() as i32;
    if partitions <= have {
        return Err(AdminError::PartitionsNotRaised(partitions, have));
    }
    let rf = current.values().next().map_or(1, |r| r.len() as i32);
    let live = live_ids(zk)?;
    let fresh = match given {
        Some(groups) => {
            if groups.len() as i32 != partitions - have {
                return Err(AdminError::InvalidAssignment(format!(
                    "{} replica list(s) for {} new partition(s)",
                    groups.len(),
                    partitions - have
                )));
            }
            check_assignment(groups, have, &live)?
        }
        None => assign_replicas(&live, partitions, rf, topic.len() + have as usize)?,
    };
    for (p, replicas) in fresh.into_iter().filter(|(p, _)| *p >= have) {
        current.insert(p, replicas);
    }
    Ok(current)
}

/// Raises a topic's partition count; the controller's watch on the topic gives the new
/// partitions leaders.
pub fn add_partitions(
    zk: &ZkClient,
    topic: &str,
    partitions: i32,
) -> Result<BTreeMap<i32, Vec<i32>>, AdminError> {
    let a = plan_partitions(zk, topic, partitions, None)?;
    paths::write_topic_assignment(zk, topic, &a)?;
    Ok(a)
}

/// Deletes a topic's nodes; the controller's watch sends StopReplica with delete.
pub fn delete_topic(zk: &ZkClient, topic: &str) -> Result<(), AdminError> {
    if paths::topic_assignment(zk, topic)?.is_none() {
        return Err(AdminError::UnknownTopic(topic.to_owned()));
    }
    zk.delete_recursive(&paths::topic_path(topic))?;
    Ok(())
}

/// One partition as `--describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDescription {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
    /// None until the controller has initialised the partition.
    pub state: Option<LeaderAndIsr>,
}

impl PartitionDescription {
    pub fn leader(&self) -> i32 {
        self.state.as_ref().map_or(-1, |s| s.leader)
    }

    pub fn isr(&self) -> &[i32] {
        self.state.as_ref().map_or(&[], |s| &s.isr)
    }
}

pub fn describe(zk: &ZkClient, topics: &[String]) -> Result<Vec<PartitionDescription>, AdminError> {
    let names = if topics.is_empty() {
        paths::all_topics(zk)?
    } else {
        topics.to_vec()
    };
    let mut out = Vec::new();
    for t in names {
        let Some(a) = paths::topic_assignment(zk, &t)? else {
            return Err(AdminError::UnknownTopic(t));
        };
        for (p, replicas) in a {
            let state = paths::leader_and_isr(zk, &t, p)?.map(|(l, _)| l);
            out.push(PartitionDescription {
                topic: t.clone(),
                partition: p,
                replicas,
                state,
            });
        }
    }
    Ok(out)
}

/// Writes `/admin/reassign_partitions`; refused while another reassignment is in progress.
pub fn request_reassignment(zk: &ZkClient, req: &ReassignmentRequest) -> Result<(), AdminError> {
    let live = live_ids(zk)?;
    for p in &req.partitions {
        let Some(a) = paths::topic_assignment(zk, &p.topic)? else {
            return Err(AdminError::UnknownTopic(p.topic.clone()));
        };
        if !a.contains_key(&p.partition) {
            return Err(AdminError::InvalidAssignment(format!(
                "{}-{} does not exist",
                p.topic, p.partition
            )));
        }
        if p.replicas.is_empty() {
            return Err(AdminError::InvalidAssignment(format!(
                "{}-{} has no replicas",
                p.topic, p.partition
            )));
        }
        if let Some(r) = p.replicas.iter().find(|r| !live.contains(r)) {
            return Err(AdminError::InvalidAssignment(format!(
                "broker {r} is not live"
            )));
        }
    }
    match zk.create_persistent(paths::REASSIGN_PARTITIONS, paths::to_json(req)) {
        Ok(()) => Ok(()),
        Err(ZkError::NodeExists) => Err(AdminError::InvalidAssignment(
            "a reassignment is already in progress".into(),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Asks for leadership to move back to the first replica of each partition (all partitions of
/// `topics`, or of every topic when empty).
pub fn request_preferred_election(zk: &ZkClient, topics: &[String]) -> Result<usize, AdminError> {
    let parts: Vec<PartitionRef> = describe(zk, topics)?
        .into_iter()
        .map(|d| PartitionRef {
            topic: d.topic,
            partition: d.partition,
        })
        .collect();
    let n = parts.len();
    let req = PartitionList {
        version: 1,
        partitions: parts,
    };
    match zk.create_persistent(paths::PREFERRED_REPLICA_ELECTION, paths::to_json(&req)) {
        Ok(()) => Ok(n),
        Err(ZkError::NodeExists) => Err(AdminError::InvalidAssignment(
            "a preferred-replica election is already in progress".into(),
        )),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert!(validate_topic_name("orders_v2.eu-1").is_ok());
        for bad in ["", ".", "..", "a b", "a/b", &"x".repeat(250)] {
            assert!(validate_topic_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn assignment_spreads_leaders_and_replicas_evenly() {
        let a = assign_replicas(&[1, 2, 3], 6, 3, 0).unwrap();
        let mut leaders = [0; 4];
        for r in a.values() {
            assert_eq!(r.len(), 3);
            let mut s = r.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), 3);
            leaders[r[0] as usize] += 1;
        }
        assert_eq!(&leaders[1..], &[2, 2, 2]);
        assert!(matches!(
            assign_replicas(&[1, 2], 1, 3, 0),
            Err(AdminError::InvalidReplicationFactor { .. })
        ));
    }

    #[test]
    fn explicit_assignment_is_checked() {
        assert_eq!(
            parse_assignment("1:2,2:3", &[1, 2, 3]).unwrap()[&1],
            vec![2, 3]
        );
        assert!(parse_assignment("1:1", &[1]).is_err());
        assert!(parse_assignment("1:4", &[1, 2]).is_err());
        assert!(parse_assignment("1:2,3", &[1, 2, 3]).is_err());
        assert!(parse_assignment("1:x", &[1]).is_err());
    }
}
