//! Kafka's group APIs as a broker receives them: FindCoordinator (answered by every broker
//! with the coordinator elected at `/consumers/coordinator`; for a transactional id,
//! `transactions`), and JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, DescribeGroups, ListGroups and DeleteGroups, which the coordinator
//! serves (any other broker answers NOT_COORDINATOR). Version differences are the codec's;
//! these functions hand the request over and answer.

use std::cell::OnceCell;

use super::{KafkaApis, RequestContext};
use crate::coordinator::group_protocol::Join;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::group_admin::DescribedGroup;
use crate::protocol::group_admin::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
};
use crate::protocol::group_membership::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, LeaveGroupRequest, LeaveGroupResponse,
    SyncGroupRequest,
};
use crate::protocol::group_membership::{JoinGroupResponse, SyncGroupResponse};
use crate::protocol::group_offsets::{
    Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
};
use crate::security::acl::{Operation, ResourceType};
use crate::zk::paths::{self, COORDINATOR, ElectedBroker};

/// FindCoordinator's key types (v1+).
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

impl KafkaApis {
    /// FindCoordinator: each key's coordinator (one key before v4, any number since).
    pub(super) fn handle_find_coordinator(
        &self,
        req: &FindCoordinatorRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        // One ZooKeeper read for all the groups of a batched request.
        let elected = OnceCell::new();
        let coordinators = req
            .keys
            .iter()
            .map(|key| match req.key_type {
                KEY_TYPE_TRANSACTION => self.find_transaction_coordinator(key, cx),
                KEY_TYPE_GROUP
                    if !self.allowed(cx, Operation::Describe, ResourceType::Group, key) =>
                {
                    Coordinator::refused(
                        key,
                        ErrorCode::GroupAuthorizationFailed.code(),
                        format!("not authorized to describe group {key}"),
                    )
                }
                KEY_TYPE_GROUP => {
                    let elected = elected.get_or_init(|| self.elected_coordinator());
                    self.find_group_coordinator(key, elected, &cx.conn.listener)
                }
                _ => Coordinator::refused(
                    key,
                    ErrorCode::InvalidRequest.code(),
                    format!("unknown key_type {}", req.key_type),
                ),
            })
            .collect();
        cx.answer(out, &FindCoordinatorResponse { coordinators });
        Action::Respond
    }

    pub(super) fn handle_join_group(
        &self,
        req: &JoinGroupRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        if !self.allowed(cx, Operation::Read, ResourceType::Group, &req.group_id) {
            let e = JoinGroupResponse::error(ErrorCode::GroupAuthorizationFailed, &req.member_id);
            cx.answer(out, &e);
            return Action::Respond;
        }
        let host = format!("/{}", cx.conn.peer.ip());
        let join = Join {
            req,
            version: cx.version,
            client_id: cx.client_id(),
            client_host: &host,
        };
        cx.answer(out, &self.coordinator.join_group(&join));
        Action::Respond
    }

    pub(super) fn handle_sync_group(
        &self,
        req: &SyncGroupRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let resp = if self.allowed(
            cx,
            Operation::Read,
            ResourceType::Group,
            &req.member.group_id,
        ) {
            self.coordinator.sync_group(req)
        } else {
            SyncGroupResponse {
                error_code: ErrorCode::GroupAuthorizationFailed.code(),
                protocol_type: None,
                protocol_name: None,
                assignment: Vec::new(),
            }
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_heartbeat(
        &self,
        req: &HeartbeatRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let error_code = if self.allowed(
            cx,
            Operation::Read,
            ResourceType::Group,
            &req.member.group_id,
        ) {
            self.coordinator.heartbeat(&req.member).code()
        } else {
            ErrorCode::GroupAuthorizationFailed.code()
        };
        cx.answer(out, &HeartbeatResponse { error_code });
        Action::Respond
    }

    pub(super) fn handle_leave_group(
        &self,
        req: &LeaveGroupRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (code, members) =
            if self.allowed(cx, Operation::Read, ResourceType::Group, &req.group_id) {
                self.coordinator.leave_group(req)
            } else {
                (ErrorCode::GroupAuthorizationFailed, Vec::new())
            };
        let resp = LeaveGroupResponse {
            error_code: code.code(),
            members,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_describe_groups(
        &self,
        req: &DescribeGroupsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let mut groups = self.coordinator.describe_groups(&req.groups);
        for g in &mut groups {
            if !self.allowed(cx, Operation::Describe, ResourceType::Group, &g.group_id) {
                let id = std::mem::take(&mut g.group_id);
                *g = DescribedGroup {
                    error_code: ErrorCode::GroupAuthorizationFailed.code(),
                    group_id: id,
                    state: String::new(),
                    protocol_type: String::new(),
                    protocol: String::new(),
                    members: Vec::new(),
                };
            }
        }
        cx.answer(out, &DescribeGroupsResponse { groups });
        Action::Respond
    }

    /// The coordinator's groups, filtered by the states and types asked for (v4+, v5+).
    pub(super) fn handle_list_groups(
        &self,
        req: &ListGroupsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (code, mut groups) = match self.coordinator.list_groups() {
            Ok(g) => (ErrorCode::None, g),
            Err(e) => (e, Vec::new()),
        };
        // Kafka matches state and type names without regard to case.
        let admits = |filter: &Option<Vec<String>>, name: &str| {
            filter
                .as_ref()
                .is_none_or(|f| f.iter().any(|s| s.eq_ignore_ascii_case(name)))
        };
        groups.retain(|g| admits(&req.states, &g.state) && admits(&req.types, &g.group_type));
        // Describe on the cluster lists every group; otherwise those the principal may
        // Describe (Kafka's rule).
        if !self.cluster_allowed(cx, Operation::Describe) {
            groups.retain(|g| {
                self.allowed(cx, Operation::Describe, ResourceType::Group, &g.group_id)
            });
        }
        let resp = ListGroupsResponse {
            error_code: code.code(),
            groups,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_delete_groups(
        &self,
        req: &DeleteGroupsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (allowed, denied): (Vec<String>, Vec<String>) = req
            .groups
            .iter()
            .cloned()
            .partition(|g| self.allowed(cx, Operation::Delete, ResourceType::Group, g));
        let mut results = self.coordinator.delete_groups(&allowed);
        let refused = ErrorCode::GroupAuthorizationFailed.code();
        results.extend(denied.into_iter().map(|g| (g, refused)));
        cx.answer(out, &DeleteGroupsResponse { results });
        Action::Respond
    }

    /// FindCoordinator's answer for `key` naming broker `id` as reached on `listener`, or
    /// COORDINATOR_NOT_AVAILABLE (`missing` says why) when it is not a live broker there.
    pub(super) fn coordinator_at(
        &self,
        key: &str,
        id: i32,
        listener: &str,
        missing: &str,
    ) -> Coordinator {
        match self
            .metadata_cache
            .live_brokers(listener)
            .into_iter()
            .find(|b| b.id == id)
        {
            Some(b) => Coordinator {
                key: key.to_owned(),
                error_code: 0,
                error_message: None,
                node_id: b.id,
                host: b.host,
                port: b.port,
            },
            None => {
                log::info!(
                    "[Broker {}] FindCoordinator {key:?}: {missing}",
                    self.broker_id
                );
                Coordinator::refused(
                    key,
                    ErrorCode::CoordinatorNotAvailable.code(),
                    missing.to_owned(),
                )
            }
        }
    }

    /// The broker elected at `/consumers/coordinator`, or why there is none.
    fn elected_coordinator(&self) -> Result<i32, &'static str> {
        match paths::read_json::<ElectedBroker>(&self.zk, COORDINATOR) {
            Ok(Some(e)) => Ok(e.brokerid),
            Ok(None) => Err("no coordinator elected"),
            Err(e) => {
                log::warn!("[Broker {}] FindCoordinator: {e:?}", self.broker_id);
                Err("ZooKeeper unavailable")
            }
        }
    }

    /// The elected coordinator, for any group: one broker coordinates them all, as reached
    /// on `listener`, the one the request came in on.
    fn find_group_coordinator(
        &self,
        group: &str,
        elected: &Result<i32, &'static str>,
        listener: &str,
    ) -> Coordinator {
        let fail = |e: ErrorCode, why: &str| Coordinator::refused(group, e.code(), why.to_owned());
        if !crate::coordinator::valid_name(group) {
            return fail(ErrorCode::InvalidGroupId, "not a legal group id");
        }
        match elected {
            Ok(id) => self.coordinator_at(
                group,
                *id,
                listener,
                &format!(
                    "the elected coordinator, broker {id}, is not in this broker's metadata yet"
                ),
            ),
            Err(why) => fail(ErrorCode::CoordinatorNotAvailable, why),
        }
    }
}
