//! `rebalance(group)` for a Kafka-protocol group, run by the `RebalanceRequestHandler`, and
//! the timers that feed it; loading and storing such groups in ZooKeeper.
//!
//! How the spec's steps map (see `doc/spec-map.md`): step 4.1 "Stop" moves the group to
//! PreparingRebalance — members learn it from Heartbeat and rejoin; step 4.2 "Start" completes
//! the join (new generation, protocol, leader, every waiting JoinGroup answered), and the
//! leader's SyncGroup relays the assignment; step 4.3/5 "wait until all have started / time
//! out" is the rebalance timeout, after which members that did not rejoin are removed. The
//! handler never blocks on a member: a join that is not complete yet is looked at again when
//! the next member joins or when the timer says a deadline passed.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::zk::ZkResult;

use super::Term;
use super::kafka_group::{GroupData, GroupState, KafkaGroup, KafkaMember};
use crate::protocol::group_membership::JoinProtocol;
use crate::zk::kafka_groups::{self, StoredGroup, StoredMember, StoredProtocol, from_hex, to_hex};

/// How often the handler looks for expired sessions and join deadlines. Session timeouts are
/// at least `group.min.session.timeout.ms` (6 s by default), so 100 ms is precise enough.
pub const GROUP_TIMER_TICK: Duration = Duration::from_millis(100);

impl Term {
    /// rebalance(group) for a Kafka-protocol group.
    pub(super) fn rebalance_kafka_group(&self, g: &Arc<KafkaGroup>) {
        let mut d = g.data.lock();
        let now = Instant::now();
        // step 4.1: "Stop" — the group prepares a rebalance; members learn it from Heartbeat.
        if let Some(reason) = d.rebalance_reason.take()
            && d.state != GroupState::PreparingRebalance
        {
            let was_empty = d.state == GroupState::Empty;
            d.state = GroupState::PreparingRebalance;
            d.join_deadline = now + d.rebalance_timeout();
            d.join_not_before = if was_empty {
                (now + self.config.group_initial_rebalance_delay).min(d.join_deadline)
            } else {
                now
            };
            self.rebalances.fetch_add(1, Ordering::AcqRel);
            log::info!(
                "[Coordinator {}] group {}: preparing rebalance of generation {} ({reason})",
                self.broker_id,
                g.name,
                d.generation
            );
            // Followers waiting for an assignment that will not come now rejoin.
            g.changed.notify_all();
        }
        if d.state != GroupState::PreparingRebalance {
            return;
        }
        let ready = d.all_joined() && now >= d.join_not_before;
        if !ready && now < d.join_deadline {
            return; // the next join, or the timer, brings the group back
        }
        // step 5: the time is out — members that did not rejoin leave the group.
        let late: Vec<String> = d
            .members
            .values()
            .filter(|m| !m.awaiting_join)
            .map(|m| m.member_id.clone())
            .collect();
        for id in late {
            log::info!(
                "[Coordinator {}] group {}: {id} did not rejoin in time; removed",
                self.broker_id,
                g.name
            );
            d.remove_member(&id);
        }
        d.pending.clear();
        self.complete_join(g, &mut d);
    }

    /// step 4.2: "Start" — a new generation with the members that joined.
    fn complete_join(&self, g: &KafkaGroup, d: &mut GroupData) {
        d.generation += 1;
        if d.members.is_empty() {
            d.state = GroupState::Empty;
            d.protocol = None;
            d.protocol_type = None;
            d.leader = None;
            log::info!(
                "[Coordinator {}] group {}: empty at generation {}",
                self.broker_id,
                g.name,
                d.generation
            );
            self.set_kafka_group_topics(&g.name, BTreeSet::new());
            self.store_kafka_group(&g.name, d);
            return;
        }
        d.protocol = d.select_protocol();
        if d.leader.as_ref().is_none_or(|l| !d.members.contains_key(l)) {
            d.leader = d.members.keys().next().cloned();
        }
        d.state = GroupState::CompletingRebalance;
        let now = Instant::now();
        d.sync_deadline = now + d.rebalance_timeout();
        let ids: Vec<String> = d.members.keys().cloned().collect();
        for id in &ids {
            let resp = d.join_response_for(id);
            if let Some(m) = d.members.get_mut(id) {
                m.awaiting_join = false;
                m.last_heard = now;
                m.assignment.clear();
                m.join_response = Some(resp);
            }
        }
        let protocol = d.protocol.clone().unwrap_or_default();
        self.set_kafka_group_topics(&g.name, d.subscribed_topics());
        log::info!(
            "[Coordinator {}] group {}: generation {} with {} members, protocol {protocol}, leader {}",
            self.broker_id,
            g.name,
            d.generation,
            d.members.len(),
            d.leader.as_deref().unwrap_or("")
        );
        g.changed.notify_all();
    }

    /// The timer: members whose session ended, handed-out ids never used, joins whose time is
    /// up or whose initial delay passed, and leaders that never sent their assignment.
    pub(super) fn check_kafka_group_timers(&self) {
        let now = Instant::now();
        let groups: Vec<Arc<KafkaGroup>> = self.kafka_groups.lock().values().cloned().collect();
        for g in groups {
            let mut d = g.data.lock();
            // While the leader's assignment is awaited, followers sit in SyncGroup and cannot
            // heartbeat: they stay alive (as in Kafka), and the sync deadline bounds the wait.
            let awaiting_sync = d.state == GroupState::CompletingRebalance;
            let expired: Vec<String> = d
                .members
                .values()
                .filter(|m| !awaiting_sync && m.expired(now))
                .map(|m| m.member_id.clone())
                .collect();
            for id in &expired {
                log::info!(
                    "[Coordinator {}] group {}: session of {id} expired",
                    self.broker_id,
                    g.name
                );
                d.remove_member(id);
            }
            let before = d.pending.len();
            d.pending.retain(|_, deadline| *deadline > now);
            if !expired.is_empty() {
                d.want_rebalance(format!("{} session(s) expired", expired.len()));
            }
            if d.state == GroupState::CompletingRebalance && now >= d.sync_deadline {
                d.want_rebalance("the leader sent no assignment in time".into());
            }
            let due = d.rebalance_reason.is_some()
                || (d.state == GroupState::PreparingRebalance
                    && (now >= d.join_deadline
                        || (d.all_joined() && now >= d.join_not_before)
                        || d.pending.len() != before));
            drop(d);
            if due {
                self.try_request_rebalance(&g.name);
            }
        }
    }

    /// A listener saw the partitions or topics of a group's subscription change: a
    /// Kafka-protocol group is told to rebalance, as the spec's consumers are. `false` when
    /// the group is not of that kind.
    pub(super) fn kafka_group_wants_rebalance(&self, group: &str, why: &str) -> bool {
        let Some(g) = self.kafka_group(group) else {
            return false;
        };
        let mut d = g.data.lock();
        if !d.members.is_empty() {
            d.want_rebalance(why.to_owned());
        }
        true
    }

    /// Writes the group to ZooKeeper; a failure is logged and the group goes on in memory.
    pub(super) fn store_kafka_group(&self, group: &str, d: &GroupData) {
        let stored = StoredGroup {
            version: 1,
            state: d.state.name().to_owned(),
            protocol_type: d.protocol_type.clone(),
            protocol: d.protocol.clone(),
            generation: d.generation,
            leader: d.leader.clone(),
            members: d.members.values().map(stored_member).collect(),
        };
        if let Err(e) = kafka_groups::write(&self.zk, group, &stored) {
            log::warn!(
                "[Coordinator {}] group {group}: storing generation {} failed: {e:?}",
                self.broker_id,
                d.generation
            );
        }
    }

    /// coordinatorStartup step 2 for a Kafka-protocol group: carry on the stored generation.
    /// Members have a full session timeout to find this coordinator; a group that was not
    /// Stable rebalances.
    pub(super) fn load_kafka_group(&self, group: &str) -> ZkResult<()> {
        let Some(s) = kafka_groups::read(&self.zk, group)? else {
            return Ok(());
        };
        let g = Arc::new(KafkaGroup::new(group));
        {
            let mut d = g.data.lock();
            d.generation = s.generation;
            d.protocol_type = s.protocol_type;
            d.protocol = s.protocol;
            d.leader = s.leader;
            for m in s.members.iter().filter_map(loaded_member) {
                if let Some(i) = &m.instance_id {
                    d.static_members.insert(i.clone(), m.member_id.clone());
                }
                d.members.insert(m.member_id.clone(), m);
            }
            d.state = match GroupState::parse(&s.state) {
                _ if d.members.is_empty() => GroupState::Empty,
                Some(GroupState::Stable) => GroupState::Stable,
                _ => {
                    d.want_rebalance("loaded by a new coordinator mid-rebalance".into());
                    GroupState::Stable
                }
            };
            self.set_kafka_group_topics(group, d.subscribed_topics());
            log::info!(
                "[Coordinator {}] group {group}: loaded generation {} ({}, {} members)",
                self.broker_id,
                d.generation,
                d.state.name(),
                d.members.len()
            );
        }
        self.kafka_groups.lock().insert(group.to_owned(), g);
        Ok(())
    }

    /// Records the topics a Kafka-protocol group subscribes to in `consumerGroupsPerTopic`,
    /// where the spec's TopicPartitionChangeListener finds the groups to rebalance.
    fn set_kafka_group_topics(&self, group: &str, topics: BTreeSet<String>) {
        let mut per_topic = self.consumer_groups_per_topic.lock();
        for (t, gs) in per_topic.iter_mut() {
            if !topics.contains(t) {
                gs.remove(group);
            }
        }
        for t in topics {
            per_topic.entry(t).or_default().insert(group.to_owned());
        }
    }

    /// The topics a Kafka-protocol group's members subscribe to (empty for other groups).
    pub(super) fn kafka_group_topics(&self, group: &str) -> BTreeSet<String> {
        let Some(g) = self.kafka_group(group) else {
            return BTreeSet::new();
        };
        g.data.lock().subscribed_topics()
    }

    /// The term ends: every waiting JoinGroup and SyncGroup answers NOT_COORDINATOR.
    pub(super) fn end_kafka_groups(&self) {
        for g in self.kafka_groups.lock().values() {
            g.data.lock().term_ended = true;
            g.changed.notify_all();
        }
    }
}

fn stored_member(m: &KafkaMember) -> StoredMember {
    StoredMember {
        member_id: m.member_id.clone(),
        group_instance_id: m.instance_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        session_timeout_ms: m.session_timeout.as_millis() as u64,
        rebalance_timeout_ms: m.rebalance_timeout.as_millis() as u64,
        protocols: m
            .protocols
            .iter()
            .map(|p| StoredProtocol {
                name: p.name.clone(),
                metadata: to_hex(&p.metadata),
            })
            .collect(),
        assignment: to_hex(&m.assignment),
    }
}

/// A stored member back; one whose bytes are not hex is dropped (it will rejoin).
fn loaded_member(s: &StoredMember) -> Option<KafkaMember> {
    let protocols = s
        .protocols
        .iter()
        .map(|p| {
            Some(JoinProtocol {
                name: p.name.clone(),
                metadata: from_hex(&p.metadata)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(KafkaMember {
        member_id: s.member_id.clone(),
        instance_id: s.group_instance_id.clone(),
        client_id: s.client_id.clone(),
        client_host: s.client_host.clone(),
        session_timeout: Duration::from_millis(s.session_timeout_ms),
        rebalance_timeout: Duration::from_millis(s.rebalance_timeout_ms),
        protocols,
        assignment: from_hex(&s.assignment)?,
        last_heard: Instant::now(),
        awaiting_join: false,
        join_response: None,
    })
}
