//! The `RebalanceRequestHandler` thread and `rebalance(group)`.
//!
//! The handler takes one group at a time from `rebalanceRequestQ` and clears the group's flag
//! before rebalancing it, so changes that arrive during the rebalance queue exactly one more
//! (and any number of them collapse into that one). A rebalance that fails is tried again
//! after a backoff that doubles per failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::zk::ZkResult;
use crossbeam_channel::{after, never, select, tick};

use super::Term;
use super::assignment::{Interest, range_assignment, rebalance_necessary, shares};
use super::session::{ConsumerSession, SessionError};
use crate::protocol::coordinator::{
    self as proto, Empty, ErrorResponse, PartitionOffset, StartRequest, StopResponse,
};
use crate::protocol::{Decode, Reader};
use crate::zk::groups;
use crate::zk::paths;

const MAX_BACKOFF_DOUBLINGS: u32 = 5;

/// How a rebalance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The group runs the new assignment, or needed none.
    Done,
    /// A member did not answer in time (step 5: "return false"): try again after a backoff.
    TimedOut,
    /// A member's connection broke: its removal from the group requests the next rebalance.
    MemberGone,
}

impl Term {
    pub(super) fn run_request_handler(&self) {
        // group → (failures in a row, when to try again)
        let mut failures: HashMap<String, (u32, Instant)> = HashMap::new();
        let group_timer = tick(super::kafka_rebalance::GROUP_TIMER_TICK);
        loop {
            let next = failures.values().map(|(_, at)| *at).min();
            let timer = next.map_or(never(), |at| {
                after(at.saturating_duration_since(Instant::now()))
            });
            select! {
                recv(self.stop_rx) -> _ => return,
                recv(self.request_q_rx) -> g => {
                    let Ok(group) = g else { return };
                    if self.is_ended() {
                        return;
                    }
                    self.handle_rebalance_request(&group, &mut failures);
                }
                recv(group_timer) -> _ => self.check_kafka_group_timers(),
                recv(timer) -> _ => {
                    let now = Instant::now();
                    for (g, (_, at)) in failures.iter() {
                        if *at <= now {
                            self.try_request_rebalance(g);
                        }
                    }
                }
            }
        }
    }

    fn handle_rebalance_request(
        &self,
        group: &str,
        failures: &mut HashMap<String, (u32, Instant)>,
    ) {
        if let Some(flag) = self.groups_being_rebalanced.lock().get(group) {
            flag.store(false, Ordering::Release);
        }
        let outcome = match self.rebalance(group) {
            Ok(o) => o,
            Err(e) => {
                log::warn!(
                    "[Coordinator {}] group {group}: rebalance failed reading ZooKeeper: {e:?}",
                    self.broker_id
                );
                Outcome::TimedOut
            }
        };
        if outcome != Outcome::TimedOut {
            failures.remove(group);
        } else {
            let n = failures.get(group).map_or(0, |(n, _)| *n) + 1;
            let wait = self.config.rebalance_backoff * (1 << (n - 1).min(MAX_BACKOFF_DOUBLINGS));
            log::info!(
                "[Coordinator {}] group {group}: rebalance attempt {n} failed; again in {wait:?}",
                self.broker_id
            );
            failures.insert(group.to_owned(), (n, Instant::now() + wait));
        }
    }

    /// rebalance(group).
    fn rebalance(&self, group: &str) -> ZkResult<Outcome> {
        if let Some(g) = self.kafka_group(group) {
            self.rebalance_kafka_group(&g);
            return Ok(Outcome::Done);
        }
        // step 1: the members, and the topics they are interested in
        let members = self.live_members(group)?;
        if members.is_empty() {
            return Ok(Outcome::Done);
        }
        let interests: Vec<Interest> = members
            .iter()
            .map(|s| Interest {
                consumer_id: &s.consumer_id,
                topics: &s.filter,
            })
            .collect();
        // step 2: partitions per interested topic, then the new ownership
        let mut partitions = BTreeMap::new();
        for t in paths::all_topics(&self.zk)? {
            if interests.iter().any(|i| i.topics.streams_for(&t) > 0)
                && let Some(a) = paths::topic_assignment(&self.zk, &t)?
            {
                partitions.insert(t, a.into_keys().collect::<Vec<i32>>());
            }
        }
        let new = range_assignment(&interests, &partitions);
        let share = shares(members.iter().map(|s| s.consumer_id.as_str()), &new);
        // step 3: is it necessary? Besides checks 3.1–3.4 on ZooKeeper's ownership, a member
        // that is not running its share (it just registered with this coordinator) needs it.
        let current = groups::owners(&self.zk, group)?;
        let reason = rebalance_necessary(&current, &new).or_else(|| {
            members
                .iter()
                .any(|s| s.started().as_ref() != share.get(&s.consumer_id))
                .then_some("a member is not running its share")
        });
        let Some(reason) = reason else {
            // step 3.5
            log::debug!("[Coordinator {}] group {group}: balanced", self.broker_id);
            return Ok(Outcome::Done);
        };
        let started = Instant::now();
        log::info!(
            "[Coordinator {}] group {group}: rebalancing {} members over {} partitions ({reason})",
            self.broker_id,
            members.len(),
            new.len()
        );
        self.rebalances.fetch_add(1, Ordering::AcqRel);
        // step 4
        let outcome = self.stop_and_start(group, &members, &current, &new, &share)?;
        if outcome == Outcome::Done {
            log::info!(
                "[Coordinator {}] group {group}: rebalanced in {} ms",
                self.broker_id,
                started.elapsed().as_millis()
            );
        }
        // step 5
        Ok(outcome)
    }

    /// Members with a live session here, sorted by id. Nodes left by an earlier coordinator's
    /// session are deleted: their consumers will register again with us.
    fn live_members(&self, group: &str) -> ZkResult<Vec<Arc<ConsumerSession>>> {
        let sessions = self.sessions_of(group);
        let mine = self.session_id.load(Ordering::Acquire);
        let mut out = Vec::new();
        for m in groups::members(&self.zk, group)? {
            match sessions.get(&m.consumer_id) {
                Some(s) if s.is_alive() => out.push(s.clone()),
                _ if m.owner_session != mine => {
                    log::info!(
                        "[Coordinator {}] group {group}: removing {} left by an earlier coordinator",
                        self.broker_id,
                        m.consumer_id
                    );
                    self.zk
                        .delete_if_exists(&groups::consumer_path(group, &m.consumer_id))?;
                }
                _ => {} // its session just ended; its node is being removed
            }
        }
        Ok(out)
    }

    /// Steps 4.1–4.3 with every member's connection held, so no ping interleaves.
    fn stop_and_start(
        &self,
        group: &str,
        members: &[Arc<ConsumerSession>],
        current: &groups::Ownership,
        new: &groups::Ownership,
        share: &BTreeMap<String, BTreeSet<(String, i32)>>,
    ) -> ZkResult<Outcome> {
        let mut conns: Vec<_> = members.iter().map(|s| (s, s.lock())).collect();
        let deadline = Instant::now() + self.config.rebalance_timeout;
        // step 4.1: StopRequest to every member, then every StopResponse. A member counts as
        // stopped from the moment it is sent Stop: if this rebalance fails later, the next one
        // must not take it for running its old share.
        let mut owned = Vec::with_capacity(conns.len());
        for (s, c) in conns.iter_mut() {
            owned.push(s.started().unwrap_or_default());
            s.set_started(None);
            if let Err(e) = c.send(proto::STOP, &Empty) {
                return Ok(self.member_failed(group, s, "Stop", e));
            }
        }
        for ((s, c), owned) in conns.iter_mut().zip(&owned) {
            let answer = c.answer(proto::STOP, deadline).and_then(|b| {
                StopResponse::decode(&mut Reader::new(&b)).map_err(SessionError::Decode)
            });
            match answer {
                Ok(r) => {
                    if let Some(o) = &r.offsets {
                        self.commit_offsets(s, owned, o);
                    }
                }
                Err(e) => return Ok(self.member_failed(group, s, "Stop", e)),
            }
        }
        // Every member has stopped: the new owners can be written without a partition ever
        // having two running owners.
        groups::write_owners(&self.zk, group, current, new)?;
        // step 4.2: StartRequest with each member's partitions and where to start
        for (s, c) in conns.iter_mut() {
            let mut assigned = Vec::new();
            for (topic, partition) in share.get(&s.consumer_id).into_iter().flatten() {
                let offset = paths::committed_offset(&self.zk, group, topic, *partition)?
                    .unwrap_or(s.offset_reset.start_offset());
                assigned.push(PartitionOffset {
                    topic: topic.clone(),
                    partition: *partition,
                    offset,
                });
            }
            assigned.truncate(proto::MAX_PARTITIONS_PER_CONSUMER);
            if let Err(e) = c.send(proto::START, &StartRequest { assigned }) {
                return Ok(self.member_failed(group, s, "Start", e));
            }
        }
        // step 4.3: wait until every member has started its fetchers
        for (s, c) in conns.iter_mut() {
            let answer = c.answer(proto::START, deadline).and_then(|b| {
                ErrorResponse::decode(&mut Reader::new(&b)).map_err(SessionError::Decode)
            });
            match answer {
                Ok(r) if r.error_code == 0 => {
                    s.set_started(Some(share.get(&s.consumer_id).cloned().unwrap_or_default()))
                }
                Ok(r) => {
                    log::warn!(
                        "[Coordinator {}] group {group}: {} could not start (error {})",
                        self.broker_id,
                        s.consumer_id,
                        r.error_code
                    );
                    return Ok(Outcome::TimedOut);
                }
                Err(e) => return Ok(self.member_failed(group, s, "Start", e)),
            }
        }
        Ok(Outcome::Done)
    }

    /// A member did not answer a rebalance request: a timeout counts as a missed ping, a broken
    /// connection ends its session.
    fn member_failed(
        &self,
        group: &str,
        s: &ConsumerSession,
        what: &str,
        e: SessionError,
    ) -> Outcome {
        log::warn!(
            "[Coordinator {}] group {group}: {} did not answer {what}: {e}",
            self.broker_id,
            s.consumer_id
        );
        match e {
            SessionError::TimedOut => {
                s.count_miss();
                Outcome::TimedOut
            }
            _ => {
                s.close();
                Outcome::MemberGone
            }
        }
    }

    /// Commits offsets a member reported (PingResponse, StopResponse), only for partitions it
    /// owns: a consumer cannot move another's position.
    pub(super) fn commit_offsets(
        &self,
        s: &ConsumerSession,
        owned: &BTreeSet<(String, i32)>,
        offsets: &[PartitionOffset],
    ) {
        for o in offsets {
            if !owned.contains(&(o.topic.clone(), o.partition)) || o.offset < 0 {
                continue;
            }
            if let Err(e) =
                paths::commit_offset(&self.zk, &s.group, &o.topic, o.partition, o.offset, "")
            {
                log::warn!(
                    "[Coordinator {}] group {}: committing {}-{}: {e:?}",
                    self.broker_id,
                    s.group,
                    o.topic,
                    o.partition
                );
            }
        }
    }
}
