//! Kafka's group APIs as a broker receives them: FindCoordinator (answered by every broker
//! with the coordinator elected at `/consumers/coordinator`), and JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, DescribeGroups, ListGroups and DeleteGroups, which the coordinator
//! serves (any other broker answers NOT_COORDINATOR). Version differences are the codec's;
//! these functions decode, hand over and encode.

use super::{KafkaApis, RequestContext};
use crate::coordinator::group_protocol::Join;
use crate::network::Action;
use crate::protocol::group_admin::{
    DescribeGroupsRequest, ListGroupsRequest, decode_delete_groups_request, encode_delete_groups,
    encode_describe_groups, encode_list_groups,
};
use crate::protocol::group_membership::{
    GenerationMember, JoinGroupRequest, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    encode_heartbeat_response,
};
use crate::protocol::group_offsets::{FindCoordinatorRequest, FindCoordinatorResponse};
use crate::protocol::header;
use crate::protocol::{DecodeResult, ErrorCode, Reader};
use crate::zk::paths::{self, COORDINATOR, ElectedBroker};

/// FindCoordinator's key types (v1+).
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

impl KafkaApis {
    /// Decodes and serves one group API request; `Err` when the body does not decode.
    pub(super) fn handle_group_api(
        &self,
        key: i16,
        body: &[u8],
        cx: &RequestContext<'_>,
        out: &mut Vec<u8>,
    ) -> DecodeResult<Action> {
        let v = cx.version;
        // Bytes after the last field are ignored, as Kafka does (see `apis::decode_v`).
        let mut r = Reader::new(body);
        r.set_flexible(cx.flexible);
        match key {
            header::FIND_COORDINATOR => {
                let req = FindCoordinatorRequest::decode(&mut r, v)?;
                self.find_coordinator(&req, &cx.conn.listener)
                    .encode(out, v);
            }
            header::JOIN_GROUP => {
                let req = JoinGroupRequest::decode(&mut r, v)?;
                let host = format!("/{}", cx.conn.peer.ip());
                let join = Join {
                    req: &req,
                    version: v,
                    client_id: cx.client_id,
                    client_host: &host,
                };
                self.coordinator.join_group(&join).encode(out, v);
            }
            header::SYNC_GROUP => {
                let req = SyncGroupRequest::decode(&mut r, v)?;
                self.coordinator.sync_group(&req).encode(out, v);
            }
            header::HEARTBEAT => {
                let req = GenerationMember::decode_heartbeat(&mut r, v)?;
                encode_heartbeat_response(out, self.coordinator.heartbeat(&req).code(), v);
            }
            header::LEAVE_GROUP => {
                let req = LeaveGroupRequest::decode(&mut r, v)?;
                let (code, members) = self.coordinator.leave_group(&req);
                LeaveGroupResponse {
                    error_code: code.code(),
                    members,
                }
                .encode(out, v);
            }
            header::DESCRIBE_GROUPS => {
                let req = DescribeGroupsRequest::decode(&mut r, v)?;
                encode_describe_groups(out, &self.coordinator.describe_groups(&req.groups), v);
            }
            header::LIST_GROUPS => {
                let req = ListGroupsRequest::decode(&mut r, v)?;
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
                groups
                    .retain(|g| admits(&req.states, &g.state) && admits(&req.types, &g.group_type));
                encode_list_groups(out, code.code(), &groups, v);
            }
            header::DELETE_GROUPS => {
                let names = decode_delete_groups_request(&mut r)?;
                encode_delete_groups(out, &self.coordinator.delete_groups(&names), v);
            }
            _ => unreachable!("the dispatcher sends only group api keys here"),
        }
        Ok(Action::Respond)
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
