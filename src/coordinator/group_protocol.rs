//! Kafka's group protocol served by the spec's coordinator: JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, and the member checks of OffsetCommit.
//!
//! Each handler runs on the requesting connection's thread. It changes the group under its
//! lock and, where the spec's machinery must act (a join, a leave), sets the group's reason
//! and "tries to request rebalance" — the same flag and queue as a spec-protocol group, served
//! by the same `RebalanceRequestHandler`. A JoinGroup then waits for step 4.2 to answer it; a
//! follower's SyncGroup waits for the leader's assignment.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::kafka_group::{GroupData, GroupState, KafkaGroup, KafkaMember, new_member_id};
use super::{Coordinator, Term};
use crate::protocol::ErrorCode;
use crate::protocol::group_membership::{
    GenerationMember, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeavingMember,
    SyncGroupRequest, SyncGroupResponse,
};

/// The most metadata one member may send (all its protocols together): a subscription of a
/// thousand long topic names fits; more is refused rather than kept and written to ZooKeeper.
pub const MAX_MEMBER_METADATA_BYTES: usize = 64 * 1024;
/// The most metadata and assignment bytes a group may hold: its ZooKeeper node (hex, JSON)
/// must stay under ZooKeeper's 1 MiB limit.
pub const MAX_GROUP_BYTES: usize = 384 * 1024;
/// How much longer than the rebalance timeout a waiting JoinGroup or SyncGroup may sleep
/// before it gives up: the rebalance thread ends the join by then unless something is wrong.
const WAIT_MARGIN: Duration = Duration::from_secs(5);

/// A JoinGroup, with what the connection knows of the client.
pub struct Join<'a> {
    pub req: &'a JoinGroupRequest,
    pub version: i16,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

impl Coordinator {
    /// The term that may serve Kafka-protocol requests, or the error to answer.
    pub(super) fn serving_term(&self) -> Result<Arc<Term>, ErrorCode> {
        let term = self.current_term().ok_or(ErrorCode::NotCoordinator)?;
        if !term.loaded.load(Ordering::Acquire) {
            return Err(ErrorCode::CoordinatorLoadInProgress);
        }
        Ok(term)
    }

    pub fn join_group(&self, j: &Join<'_>) -> JoinGroupResponse {
        let req = j.req;
        let fail = |e: ErrorCode| JoinGroupResponse::error(e, &req.member_id);
        if !super::valid_name(&req.group_id) {
            return fail(ErrorCode::InvalidGroupId);
        }
        let term = match self.serving_term() {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        let session = Duration::from_millis(req.session_timeout_ms.max(0) as u64);
        if req.session_timeout_ms < 0
            || session < self.config.group_min_session_timeout
            || session > self.config.group_max_session_timeout
        {
            return fail(ErrorCode::InvalidSessionTimeout);
        }
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            return fail(ErrorCode::InconsistentGroupProtocol);
        }
        let bytes: usize = req.protocols.iter().map(|p| p.metadata.len()).sum();
        if bytes > MAX_MEMBER_METADATA_BYTES {
            log::warn!(
                "[Coordinator {}] group {}: refusing a member with {bytes} bytes of metadata",
                self.broker_id,
                req.group_id
            );
            return fail(ErrorCode::InvalidRequest);
        }
        // A group is of one kind: one with members of the spec's protocol takes no JoinGroup.
        if term.has_sessions(&req.group_id) {
            return fail(ErrorCode::InconsistentGroupProtocol);
        }
        term.join_group(j)
    }

    pub fn sync_group(&self, req: &SyncGroupRequest) -> SyncGroupResponse {
        let fail = SyncGroupResponse::from;
        match self.serving_term() {
            Ok(t) => t.sync_group(req),
            Err(e) => fail(e),
        }
    }

    pub fn heartbeat(&self, m: &GenerationMember) -> ErrorCode {
        match self.serving_term() {
            Ok(t) => t.with_generation_member(m, |_, d| match d.state {
                GroupState::PreparingRebalance => ErrorCode::RebalanceInProgress,
                _ => ErrorCode::None,
            }),
            Err(e) => e,
        }
    }

    /// LeaveGroup: the group's error, and one per member (v3+).
    pub fn leave_group(&self, req: &LeaveGroupRequest) -> (ErrorCode, Vec<(LeavingMember, i16)>) {
        match self.serving_term() {
            Ok(t) => t.leave_group(req),
            Err(e) => (e, Vec::new()),
        }
    }

    /// Whether a commit to `group` in `generation` by `member` may be stored (Kafka's
    /// `validateOffsetCommit`): a commit outside group management (generation < 0) is taken
    /// while the group has no members; otherwise it must come from a member of the current
    /// generation, and not while the group waits for the leader's assignment.
    pub fn check_offset_commit(
        &self,
        group: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> ErrorCode {
        let term = match self.serving_term() {
            Ok(t) => t,
            Err(e) => return e,
        };
        let Some(g) = term.kafka_group(group) else {
            return if generation < 0 {
                ErrorCode::None
            } else {
                ErrorCode::IllegalGeneration
            };
        };
        let mut d = g.data.lock();
        if generation < 0 && d.members.is_empty() {
            return ErrorCode::None;
        }
        if let Some(e) = fenced(&d, member_id, instance_id) {
            return e;
        }
        let Some(m) = d.members.get_mut(member_id) else {
            return ErrorCode::UnknownMemberId;
        };
        m.last_heard = Instant::now();
        if generation != d.generation {
            ErrorCode::IllegalGeneration
        } else if d.state == GroupState::CompletingRebalance {
            ErrorCode::RebalanceInProgress
        } else {
            ErrorCode::None
        }
    }
}

/// FENCED_INSTANCE_ID when `instance_id` now belongs to another member id.
fn fenced(d: &GroupData, member_id: &str, instance_id: Option<&str>) -> Option<ErrorCode> {
    let current = d.static_members.get(instance_id?)?;
    (current != member_id).then_some(ErrorCode::FencedInstanceId)
}

impl Term {
    pub(super) fn kafka_group(&self, group: &str) -> Option<Arc<KafkaGroup>> {
        self.kafka_groups.lock().get(group).cloned()
    }

    fn kafka_group_or_new(&self, group: &str) -> Arc<KafkaGroup> {
        self.kafka_groups
            .lock()
            .entry(group.to_owned())
            .or_insert_with(|| Arc::new(KafkaGroup::new(group)))
            .clone()
    }

    fn join_group(&self, j: &Join<'_>) -> JoinGroupResponse {
        let req = j.req;
        let g = self.kafka_group_or_new(&req.group_id);
        let mut d = g.data.lock();
        let refuse = |e: ErrorCode| JoinGroupResponse::error(e, &req.member_id);
        if !d.supports(&req.protocol_type, &req.protocols) {
            return refuse(ErrorCode::InconsistentGroupProtocol);
        }
        let instance = req.group_instance_id.as_deref();
        let member_id = if req.member_id.is_empty() {
            let prefix = instance.unwrap_or(j.client_id);
            let id = new_member_id(if prefix.is_empty() { "member" } else { prefix });
            if let Some(old) = instance.and_then(|i| d.static_members.get(i).cloned()) {
                return self.rejoin_static(&g, d, j, &old, id);
            }
            if d.members.len() + d.pending.len() >= self.config.group_max_size {
                return refuse(ErrorCode::GroupMaxSizeReached);
            }
            if instance.is_none() && j.version >= 4 {
                // KIP-394: a new dynamic member first learns its id, then joins with it.
                let deadline = Instant::now() + session_of(req);
                d.pending.insert(id.clone(), deadline);
                return JoinGroupResponse::error(ErrorCode::MemberIdRequired, &id);
            }
            id
        } else {
            if let Some(e) = fenced(&d, &req.member_id, instance) {
                return refuse(e);
            }
            if d.pending.remove(&req.member_id).is_none() && !d.members.contains_key(&req.member_id)
            {
                return refuse(ErrorCode::UnknownMemberId);
            }
            req.member_id.clone()
        };
        let group_bytes: usize = d
            .members
            .values()
            .filter(|m| m.member_id != member_id)
            .map(|m| m.metadata_bytes() + m.assignment.len())
            .sum();
        if group_bytes
            + req
                .protocols
                .iter()
                .map(|p| p.metadata.len())
                .sum::<usize>()
            > MAX_GROUP_BYTES
        {
            return refuse(ErrorCode::GroupMaxSizeReached);
        }
        let known = d.members.get(&member_id);
        let unchanged = known.is_some_and(|m| m.protocols == req.protocols);
        // A member of the current generation asking again with nothing changed gets the
        // generation back (a lost response, or a follower that rejoins in Stable).
        if unchanged
            && matches!(
                d.state,
                GroupState::CompletingRebalance | GroupState::Stable
            )
            && (d.state == GroupState::CompletingRebalance
                || d.leader.as_deref() != Some(member_id.as_str()))
        {
            if let Some(m) = d.members.get_mut(&member_id) {
                m.last_heard = Instant::now();
            }
            return d.join_response_for(&member_id);
        }
        let reason = match known {
            None => format!("{member_id} joined"),
            Some(_) if unchanged => format!("{member_id} (leader) rejoined"),
            Some(_) => format!("{member_id} rejoined with new metadata"),
        };
        let member = KafkaMember {
            member_id: member_id.clone(),
            instance_id: req.group_instance_id.clone(),
            client_id: j.client_id.to_owned(),
            client_host: j.client_host.to_owned(),
            session_timeout: session_of(req),
            rebalance_timeout: self.rebalance_timeout_of(req),
            protocols: req.protocols.clone(),
            assignment: known.map(|m| m.assignment.clone()).unwrap_or_default(),
            last_heard: Instant::now(),
            awaiting_join: true,
            join_response: None,
        };
        if let Some(i) = &member.instance_id {
            d.static_members.insert(i.clone(), member_id.clone());
        }
        if d.members.is_empty() {
            d.protocol_type = Some(req.protocol_type.clone());
        }
        d.members.insert(member_id.clone(), member);
        if d.state == GroupState::PreparingRebalance {
            self.extend_initial_delay(&mut d);
        } else {
            d.want_rebalance(reason);
        }
        drop(d);
        self.try_request_rebalance(&g.name);
        self.await_join(&g, &member_id)
    }

    /// A static member restarted (JoinGroup with its instance id and no member id): it takes
    /// over its old entry under a new id. With the group Stable and its protocols unchanged it
    /// gets the current generation back and no one else rebalances (KIP-345).
    fn rejoin_static(
        &self,
        g: &Arc<KafkaGroup>,
        mut d: parking_lot::MutexGuard<'_, GroupData>,
        j: &Join<'_>,
        old_id: &str,
        new_id: String,
    ) -> JoinGroupResponse {
        let Some(mut m) = d.members.remove(old_id) else {
            return JoinGroupResponse::error(ErrorCode::UnknownMemberId, "");
        };
        let unchanged = m.protocols == j.req.protocols;
        m.member_id = new_id.clone();
        m.client_id = j.client_id.to_owned();
        m.client_host = j.client_host.to_owned();
        m.session_timeout = session_of(j.req);
        m.rebalance_timeout = self.rebalance_timeout_of(j.req);
        m.protocols = j.req.protocols.clone();
        m.last_heard = Instant::now();
        m.awaiting_join = false;
        m.join_response = None;
        if d.leader.as_deref() == Some(old_id) {
            d.leader = Some(new_id.clone());
        }
        if let Some(i) = &m.instance_id {
            d.static_members.insert(i.clone(), new_id.clone());
        }
        d.members.insert(new_id.clone(), m);
        log::info!(
            "[Coordinator {}] group {}: static member {:?} is back as {new_id}",
            self.broker_id,
            g.name,
            j.req.group_instance_id
        );
        // The old id's waiting requests wake and find themselves fenced.
        g.changed.notify_all();
        if unchanged && d.state == GroupState::Stable {
            self.store_kafka_group(&g.name, &d);
            return d.join_response_for(&new_id);
        }
        if let Some(m) = d.members.get_mut(&new_id) {
            m.awaiting_join = true;
        }
        d.want_rebalance(format!("static member {new_id} rejoined"));
        drop(d);
        self.try_request_rebalance(&g.name);
        self.await_join(g, &new_id)
    }

    /// The member's rebalance timeout, at most `group.max.session.timeout.ms`: a JoinGroup
    /// holds its connection's thread while it waits, and a hostile client must not park one
    /// for weeks.
    fn rebalance_timeout_of(&self, req: &JoinGroupRequest) -> Duration {
        Duration::from_millis(req.rebalance_timeout_ms.max(0) as u64)
            .min(self.config.group_max_session_timeout)
    }

    /// A member joining during the initial delay pushes the delay on, up to the join's end.
    fn extend_initial_delay(&self, d: &mut GroupData) {
        let now = Instant::now();
        if d.join_not_before > now {
            d.join_not_before =
                (now + self.config.group_initial_rebalance_delay).min(d.join_deadline);
        }
    }

    /// Sleeps until step 4.2 answers `member_id`'s JoinGroup.
    fn await_join(&self, g: &KafkaGroup, member_id: &str) -> JoinGroupResponse {
        let mut d = g.data.lock();
        let deadline = Instant::now() + d.rebalance_timeout() + WAIT_MARGIN;
        loop {
            if d.term_ended {
                return JoinGroupResponse::error(ErrorCode::NotCoordinator, member_id);
            }
            let Some(m) = d.members.get_mut(member_id) else {
                // Removed while waiting: replaced by a restarted static member, or timed out.
                return JoinGroupResponse::error(ErrorCode::UnknownMemberId, member_id);
            };
            if let Some(r) = m.join_response.take() {
                return r;
            }
            if g.changed.wait_until(&mut d, deadline).timed_out() {
                return JoinGroupResponse::error(ErrorCode::RebalanceInProgress, member_id);
            }
        }
    }

    /// Runs `f` on the member named by a Heartbeat or SyncGroup once it is known to be one of
    /// the current generation; otherwise answers the error Kafka gives.
    fn with_generation_member<T: From<ErrorCode>>(
        &self,
        m: &GenerationMember,
        f: impl FnOnce(&Arc<KafkaGroup>, &mut parking_lot::MutexGuard<'_, GroupData>) -> T,
    ) -> T {
        let Some(g) = self.kafka_group(&m.group_id) else {
            return ErrorCode::UnknownMemberId.into();
        };
        let mut d = g.data.lock();
        if let Some(e) = fenced(&d, &m.member_id, m.group_instance_id.as_deref()) {
            return e.into();
        }
        let Some(member) = d.members.get_mut(&m.member_id) else {
            return ErrorCode::UnknownMemberId.into();
        };
        member.last_heard = Instant::now();
        if m.generation_id != d.generation {
            return ErrorCode::IllegalGeneration.into();
        }
        f(&g, &mut d)
    }

    fn sync_group(&self, req: &SyncGroupRequest) -> SyncGroupResponse {
        let me = req.member.member_id.as_str();
        self.with_generation_member(&req.member, |g, d| {
            // v5+: a member that believes the group chose another protocol is not in it.
            let differs =
                |asked: &Option<String>, ours: &Option<String>| asked.is_some() && asked != ours;
            if differs(&req.protocol_type, &d.protocol_type)
                || differs(&req.protocol_name, &d.protocol)
            {
                return ErrorCode::InconsistentGroupProtocol.into();
            }
            match d.state {
                GroupState::PreparingRebalance | GroupState::Empty => {
                    return ErrorCode::RebalanceInProgress.into();
                }
                GroupState::Stable => return assignment_of(d, me),
                GroupState::CompletingRebalance => {}
            }
            if d.leader.as_deref() == Some(me) {
                // step 4.2, second half: the leader's assignment is relayed byte for byte.
                for (member, a) in &req.assignments {
                    if let Some(m) = d.members.get_mut(member) {
                        m.assignment = a.clone();
                    }
                }
                // Every member's session starts again now, as Kafka's does when it hands out
                // the assignment: a follower that waited in SyncGroup longer than its session
                // could not heartbeat meanwhile, and must not be expired before its answer.
                let now = Instant::now();
                for m in d.members.values_mut() {
                    m.last_heard = now;
                }
                d.state = GroupState::Stable;
                self.store_kafka_group(&g.name, d);
                log::info!(
                    "[Coordinator {}] group {}: generation {} stable with {} members",
                    self.broker_id,
                    g.name,
                    d.generation,
                    d.members.len()
                );
                g.changed.notify_all();
                return assignment_of(d, me);
            }
            // step 4.3: a follower waits for the leader's assignment.
            let generation = d.generation;
            let deadline = Instant::now() + d.rebalance_timeout() + WAIT_MARGIN;
            while d.state == GroupState::CompletingRebalance
                && d.generation == generation
                && !d.term_ended
                && d.members.contains_key(me)
            {
                if g.changed.wait_until(d, deadline).timed_out() {
                    break;
                }
            }
            if d.term_ended {
                ErrorCode::NotCoordinator.into()
            } else if !d.members.contains_key(me) {
                ErrorCode::UnknownMemberId.into()
            } else if d.generation != generation {
                ErrorCode::IllegalGeneration.into()
            } else if d.state == GroupState::Stable {
                assignment_of(d, me)
            } else {
                ErrorCode::RebalanceInProgress.into()
            }
        })
    }

    fn leave_group(&self, req: &LeaveGroupRequest) -> (ErrorCode, Vec<(LeavingMember, i16)>) {
        let Some(g) = self.kafka_group(&req.group_id) else {
            return (ErrorCode::UnknownMemberId, Vec::new());
        };
        let mut d = g.data.lock();
        let mut results = Vec::with_capacity(req.members.len());
        let mut left = 0;
        for m in &req.members {
            let id = match (&m.group_instance_id, m.member_id.as_str()) {
                (Some(i), "") => d.static_members.get(i).cloned(),
                (i, id) => {
                    if let Some(e) = fenced(&d, id, i.as_deref()) {
                        results.push((m.clone(), e.code()));
                        continue;
                    }
                    Some(id.to_owned())
                }
            };
            let code = match id.and_then(|id| d.remove_member(&id)) {
                Some(gone) => {
                    left += 1;
                    log::info!(
                        "[Coordinator {}] group {}: {} left",
                        self.broker_id,
                        g.name,
                        gone.member_id
                    );
                    ErrorCode::None
                }
                None => ErrorCode::UnknownMemberId,
            };
            results.push((m.clone(), code.code()));
        }
        if left > 0 {
            d.want_rebalance(format!("{left} member(s) left"));
            g.changed.notify_all();
            drop(d);
            self.try_request_rebalance(&req.group_id);
        }
        // v0–v2 name one member: its error is the group's.
        let code = match results.as_slice() {
            [(_, e)] => ErrorCode::from_code(*e),
            _ => ErrorCode::None,
        };
        (code, results)
    }
}

fn session_of(req: &JoinGroupRequest) -> Duration {
    Duration::from_millis(req.session_timeout_ms.max(0) as u64)
}

fn assignment_of(d: &GroupData, member_id: &str) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: 0,
        protocol_type: d.protocol_type.clone(),
        protocol_name: d.protocol.clone(),
        assignment: d
            .members
            .get(member_id)
            .map(|m| m.assignment.clone())
            .unwrap_or_default(),
    }
}

impl From<ErrorCode> for SyncGroupResponse {
    fn from(e: ErrorCode) -> Self {
        SyncGroupResponse {
            error_code: e.code(),
            protocol_type: None,
            protocol_name: None,
            assignment: Vec::new(),
        }
    }
}
