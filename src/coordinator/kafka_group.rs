//! A Kafka-protocol group as the coordinator holds it: Kafka's group states, its members and
//! what each is waiting for. The pure parts (protocol choice, who is ready) live here; the
//! request handlers are in `group_protocol`, the rebalance steps in `kafka_rebalance`.
//!
//! One lock per group guards its state, with a condition variable that every JoinGroup and
//! SyncGroup waiting on the group sleeps on: the rebalance thread and the leader's SyncGroup
//! wake them when the join completes or the assignment arrives.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::protocol::group_admin::subscription_topics;
use crate::protocol::group_membership::{JoinGroupResponse, JoinProtocol, JoinedMember};

/// Kafka's group states (`GroupState` of the classic coordinator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members; committed offsets may remain.
    Empty,
    /// Step 4.1 has run: members learn it from Heartbeat and rejoin.
    PreparingRebalance,
    /// Step 4.2: the join completed; the leader's SyncGroup is awaited.
    CompletingRebalance,
    /// Step 4.3 done: every member has its assignment.
    Stable,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
        }
    }

    pub fn parse(s: &str) -> Option<GroupState> {
        [
            GroupState::Empty,
            GroupState::PreparingRebalance,
            GroupState::CompletingRebalance,
            GroupState::Stable,
        ]
        .into_iter()
        .find(|g| g.name() == s)
    }
}

#[derive(Debug, Clone)]
pub struct KafkaMember {
    pub member_id: String,
    /// KIP-345: a static member keeps its place across restarts within its session timeout.
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub protocols: Vec<JoinProtocol>,
    /// What the leader's SyncGroup gave it in this generation (empty until then).
    pub assignment: Vec<u8>,
    /// Last JoinGroup, SyncGroup, Heartbeat or commit: the session timeout counts from here.
    pub last_heard: Instant,
    /// It has sent JoinGroup in this rebalance and waits for the join to complete.
    pub awaiting_join: bool,
    /// The answer step 4.2 made for its waiting JoinGroup.
    pub join_response: Option<JoinGroupResponse>,
}

impl KafkaMember {
    pub fn metadata_for(&self, protocol: &str) -> &[u8] {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map_or(&[][..], |p| &p.metadata)
    }

    pub fn metadata_bytes(&self) -> usize {
        self.protocols.iter().map(|p| p.metadata.len()).sum()
    }

    /// Alive while waiting in a join (its heartbeats stop meanwhile, as Kafka allows) or
    /// heard from within its session timeout.
    pub fn expired(&self, now: Instant) -> bool {
        !self.awaiting_join && now > self.last_heard + self.session_timeout
    }
}

#[derive(Debug)]
pub struct GroupData {
    pub state: GroupState,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: BTreeMap<String, KafkaMember>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, until they join (or their session ends).
    pub pending: BTreeMap<String, Instant>,
    /// instance id → its current member id.
    pub static_members: BTreeMap<String, String>,
    /// Why the next rebalance must start a new round; set by whatever asks for one.
    pub rebalance_reason: Option<String>,
    /// PreparingRebalance: the join completes at the latest here (step 5's time out)...
    pub join_deadline: Instant,
    /// ...and, with every member joined, not before here (`group.initial.rebalance.delay.ms`).
    pub join_not_before: Instant,
    /// CompletingRebalance: the leader's SyncGroup is due by here.
    pub sync_deadline: Instant,
    /// The coordinator's term ended: every waiter answers NOT_COORDINATOR.
    pub term_ended: bool,
}

pub struct KafkaGroup {
    pub name: String,
    pub data: Mutex<GroupData>,
    /// Woken on every change a waiting JoinGroup or SyncGroup may be waiting for.
    pub changed: Condvar,
}

impl KafkaGroup {
    pub fn new(name: &str) -> KafkaGroup {
        let now = Instant::now();
        KafkaGroup {
            name: name.to_owned(),
            data: Mutex::new(GroupData {
                state: GroupState::Empty,
                protocol_type: None,
                protocol: None,
                generation: 0,
                leader: None,
                members: BTreeMap::new(),
                pending: BTreeMap::new(),
                static_members: BTreeMap::new(),
                rebalance_reason: None,
                join_deadline: now,
                join_not_before: now,
                sync_deadline: now,
                term_ended: false,
            }),
            changed: Condvar::new(),
        }
    }
}

impl GroupData {
    /// Whether a member offering `protocols` of `protocol_type` can join: the type must match
    /// and at least one protocol must be one every current member supports.
    pub fn supports(&self, protocol_type: &str, protocols: &[JoinProtocol]) -> bool {
        if self.members.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|p| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|q| q.name == p.name))
            })
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports, each member votes
    /// for the first it lists; the most votes win (ties: the earliest in the leader's order).
    pub fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|p| p.name.as_str())
            .filter(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|q| q.name == *n))
            })
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(p) = m
                .protocols
                .iter()
                .find(|p| candidates.contains(&p.name.as_str()))
            {
                *votes.entry(&p.name).or_default() += 1;
            }
        }
        candidates
            .iter()
            .max_by_key(|c| (votes.get(*c).copied().unwrap_or(0), std::cmp::Reverse(*c)))
            .map(|c| (*c).to_owned())
    }

    /// Every member is waiting in JoinGroup and no handed-out member id is still to come.
    pub fn all_joined(&self) -> bool {
        self.pending.is_empty() && self.members.values().all(|m| m.awaiting_join)
    }

    /// The longest rebalance timeout of the members: how long a join may take.
    pub fn rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// The JoinGroup answer for `member_id` in the current generation: the leader gets every
    /// member's metadata for the chosen protocol.
    pub fn join_response_for(&self, member_id: &str) -> JoinGroupResponse {
        let protocol = self.protocol.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            self.members
                .values()
                .map(|m| JoinedMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    metadata: m.metadata_for(&protocol).to_vec(),
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinGroupResponse {
            error_code: 0,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: protocol,
            leader,
            member_id: member_id.to_owned(),
            members,
        }
    }

    /// The topics the members subscribe to, read from their "consumer" protocol metadata for
    /// the chosen protocol (other protocol types name none).
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        let protocol = self.protocol.as_deref().unwrap_or("");
        self.members
            .values()
            .filter_map(|m| subscription_topics(m.metadata_for(protocol)))
            .flatten()
            .collect()
    }

    pub fn remove_member(&mut self, member_id: &str) -> Option<KafkaMember> {
        let m = self.members.remove(member_id)?;
        if let Some(i) = &m.instance_id
            && self.static_members.get(i).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(i);
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = None;
        }
        Some(m)
    }

    /// Asks for a new round; the caller then queues the group ("try to request rebalance").
    pub fn want_rebalance(&mut self, reason: String) {
        if self.rebalance_reason.is_none() {
            self.rebalance_reason = Some(reason);
        }
    }
}

/// A member id as Kafka makes them: the client id (or instance id) and a unique suffix.
pub fn new_member_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    // Member ids become JSON strings and log words: keep the client's part printable.
    let prefix: String = prefix
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(100)
        .collect();
    format!("{prefix}-{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, protocols: &[&str]) -> KafkaMember {
        KafkaMember {
            member_id: id.into(),
            instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(30),
            protocols: protocols
                .iter()
                .map(|p| JoinProtocol {
                    name: (*p).into(),
                    metadata: vec![],
                })
                .collect(),
            assignment: vec![],
            last_heard: Instant::now(),
            awaiting_join: false,
            join_response: None,
        }
    }

    #[test]
    fn the_protocol_chosen_is_one_all_support_with_most_first_votes() {
        let g = KafkaGroup::new("g");
        let mut d = g.data.lock();
        d.protocol_type = Some("consumer".into());
        d.members
            .insert("a".into(), member("a", &["range", "roundrobin"]));
        d.members
            .insert("b".into(), member("b", &["roundrobin", "range"]));
        d.members
            .insert("c".into(), member("c", &["roundrobin", "sticky"]));
        assert_eq!(d.select_protocol().as_deref(), Some("roundrobin"));
        let offer = |n: &str| {
            vec![JoinProtocol {
                name: n.into(),
                metadata: vec![],
            }]
        };
        assert!(d.supports("consumer", &offer("roundrobin")));
        assert!(!d.supports("consumer", &offer("range")));
        assert!(!d.supports("connect", &offer("roundrobin")));
    }

    #[test]
    fn members_waiting_in_a_join_do_not_expire_and_ids_are_unique() {
        let mut m = member("a", &["range"]);
        let later = Instant::now() + Duration::from_secs(11);
        assert!(m.expired(later));
        m.awaiting_join = true;
        assert!(!m.expired(later));
        let a = new_member_id("rdkafka");
        assert!(a.starts_with("rdkafka-"));
        assert_ne!(a, new_member_id("rdkafka"));
    }
}
