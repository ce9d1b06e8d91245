//! Kafka's group APIs as a broker receives them: FindCoordinator (answered by every broker
//! with the coordinator elected at `/consumers/coordinator`; for a transactional id,
//! `transactions`), and JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, DescribeGroups, ListGroups and DeleteGroups, which the coordinator
//! serves (any other broker answers NOT_COORDINATOR). Version differences are the codec's;
//! these functions hand the request over and answer.

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
use crate::protocol::group_offsets::{FindCoordinatorRequest, FindCoordinatorResponse};
use crate::security::acl::{Operation, ResourceType};
use crate::zk::paths::{self, COORDINATOR, ElectedBroker};

/// FindCoordinator's key types (v1+).
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

impl KafkaApis {
    pub(super) fn handle_find_coordinator(
        &self,
        req: &FindCoordinatorRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let resp = if req.key_type == KEY_TYPE_TRANSACTION {
            self.find_transaction_coordinator(&req.key, cx)
        } else if req.key_type == KEY_TYPE_GROUP
            && !self.allowed(cx, Operation::Describe, ResourceType::Group, &req.key)
        {
            FindCoordinatorResponse {
                error_code: ErrorCode::GroupAuthorizationFailed.code(),
                error_message: Some(format!("not authorized to describe group {}", req.key)),
                node_id: -1,
                host: String::new(),
                port: -1,
            }
        } else {
            self.find_coordinator(req, &cx.conn.listener)
        };
        cx.answer(out, &resp);
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

    /// FindCoordinator's answer naming broker `id` as reached on `listener`, or
    /// COORDINATOR_NOT_AVAILABLE (`missing` says why) when it is not a live broker there.
    pub(super) fn coordinator_at(
        &self,
        id: i32,
        listener: &str,
        missing: &str,
    ) -> FindCoordinatorResponse {
        match self
            .metadata_cache
            .live_brokers(listener)
            .into_iter()
            .find(|b| b.id == id)
        {
            Some(b) => FindCoordinatorResponse {
                error_code: 0,
                error_message: None,
                node_id: b.id,
                host: b.host,
                port: b.port,
            },
            None => FindCoordinatorResponse {
                error_code: ErrorCode::CoordinatorNotAvailable.code(),
                error_message: Some(missing.to_owned()),
                node_id: -1,
                host: String::new(),
                port: -1,
            },
        }
    }

    /// The elected coordinator, for any group: one broker coordinates them all.
    /// The coordinator as reached on `listener`, the one the request came in on.
    fn find_coordinator(
        &self,
        req: &FindCoordinatorRequest,
        listener: &str,
    ) -> FindCoordinatorResponse {
        let fail = |e: ErrorCode, why: &str| FindCoordinatorResponse {
            error_code: e.code(),
            error_message: Some(why.to_owned()),
            node_id: -1,
            host: String::new(),
            port: -1,
        };
        if req.key_type != KEY_TYPE_GROUP {
            return fail(ErrorCode::InvalidRequest, "unknown key_type");
        }
        if !crate::coordinator::valid_name(&req.key) {
            return fail(ErrorCode::InvalidGroupId, "not a legal group id");
        }
        let elected = match paths::read_json::<ElectedBroker>(&self.zk, COORDINATOR) {
            Ok(Some(e)) => e.brokerid,
            Ok(None) => return fail(ErrorCode::CoordinatorNotAvailable, "no coordinator elected"),
            Err(e) => {
                log::warn!("[Broker {}] FindCoordinator: {e:?}", self.broker_id);
                return fail(ErrorCode::CoordinatorNotAvailable, "ZooKeeper unavailable");
            }
        };
        self.coordinator_at(
            elected,
            listener,
            "the coordinator is not in this broker's metadata yet",
        )
    }
}
