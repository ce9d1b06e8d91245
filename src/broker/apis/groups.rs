//! Kafka's group APIs as a broker receives them: FindCoordinator (answered by every broker
//! with the coordinator elected at `/consumers/coordinator`), and JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, DescribeGroups, ListGroups and DeleteGroups, which the coordinator
//! serves (any other broker answers NOT_COORDINATOR). Version differences are the codec's;
//! these functions hand the request over and answer.

use super::{KafkaApis, RequestContext};
use crate::coordinator::group_protocol::Join;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::group_admin::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
};
use crate::protocol::group_membership::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, LeaveGroupRequest, LeaveGroupResponse,
    SyncGroupRequest,
};
use crate::protocol::group_offsets::{FindCoordinatorRequest, FindCoordinatorResponse};
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
        cx.answer(out, &self.find_coordinator(req, &cx.conn.listener));
        Action::Respond
    }

    pub(super) fn handle_join_group(
        &self,
        req: &JoinGroupRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
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
        cx.answer(out, &self.coordinator.sync_group(req));
        Action::Respond
    }

    pub(super) fn handle_heartbeat(
        &self,
        req: &HeartbeatRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let error_code = self.coordinator.heartbeat(&req.member).code();
        cx.answer(out, &HeartbeatResponse { error_code });
        Action::Respond
    }

    pub(super) fn handle_leave_group(
        &self,
        req: &LeaveGroupRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (code, members) = self.coordinator.leave_group(req);
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
        let groups = self.coordinator.describe_groups(&req.groups);
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
        let results = self.coordinator.delete_groups(&req.groups);
        cx.answer(out, &DeleteGroupsResponse { results });
        Action::Respond
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
        match req.key_type {
            KEY_TYPE_GROUP => {}
            KEY_TYPE_TRANSACTION => {
                return fail(
                    ErrorCode::InvalidRequest,
                    "gregor has no transaction coordinator (transactions are not supported)",
                );
            }
            _ => return fail(ErrorCode::InvalidRequest, "unknown key_type"),
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
        match self
            .metadata_cache
            .live_brokers(listener)
            .into_iter()
            .find(|b| b.id == elected)
        {
            Some(b) => FindCoordinatorResponse {
                error_code: 0,
                error_message: None,
                node_id: b.id,
                host: b.host,
                port: b.port,
            },
            None => fail(
                ErrorCode::CoordinatorNotAvailable,
                "the coordinator is not in this broker's metadata yet",
            ),
        }
    }
}
