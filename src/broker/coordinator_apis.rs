//! The coordinator's requests as a broker receives them: ConsultRequest and DescribeGroups
//! (answered by every broker, from ZooKeeper), and RegisterRequest (the connection is handed to
//! the coordinator, which refuses it with NOT_COORDINATOR when this broker is not the one).
//!
//! A coordinator request that does not decode, or one only a coordinator sends (Ping, Stop,
//! Start), is answered with INVALID_REQUEST and the connection is closed.

use std::io::Write;
use std::net::SocketAddr;

use zookeeper::ZkResult;

use super::apis::KafkaApis;
use crate::network::Action;
use crate::protocol::coordinator::{
    self as proto, ConsultBroker, ConsultResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    Empty, ErrorResponse, GroupMember, GroupPartition, RegisterRequest,
};
use crate::protocol::{Encode, ErrorCode, decode_all};
use crate::zk::paths::{self, COORDINATOR, ElectedBroker};
use crate::zk::{ZkClient, groups};

impl KafkaApis {
    pub(super) fn handle_coordinator_request(
        &self,
        frame: &[u8],
        out: &mut Vec<u8>,
        peer: &SocketAddr,
    ) -> Action {
        let type_id = i16::from_be_bytes([frame[0], frame[1]]);
        let body = &frame[2..];
        let result = match type_id {
            proto::CONSULT => decode_all::<Empty>(body).map(|_| self.handle_consult(out)),
            proto::REGISTER => decode_all::<RegisterRequest>(body).map(|req| {
                let coordinator = self.coordinator.clone();
                Action::Adopt(Box::new(move |stream| coordinator.register(req, stream)))
            }),
            proto::DESCRIBE_GROUPS => {
                decode_all::<DescribeGroupsRequest>(body).map(|req| self.handle_describe(&req, out))
            }
            _ => {
                log::warn!(
                    "[Broker {}] request type {type_id} from {peer} is sent by a coordinator, not to one",
                    self.broker_id
                );
                return refuse();
            }
        };
        result.unwrap_or_else(|e| {
            log::warn!(
                "[Broker {}] malformed coordinator request type {type_id} from {peer}: {e}",
                self.broker_id
            );
            refuse()
        })
    }

    /// ConsultResponse: the elected coordinator (COORDINATOR_NOT_AVAILABLE while there is
    /// none) and the live brokers.
    fn handle_consult(&self, out: &mut Vec<u8>) -> Action {
        let resp = match consult(&self.zk) {
            Ok(r) => r,
            Err(e) => {
                log::warn!("[Broker {}] ConsultRequest: {e:?}", self.broker_id);
                ConsultResponse {
                    error_code: ErrorCode::CoordinatorNotAvailable.code(),
                    coordinator_id: -1,
                    brokers: Vec::new(),
                }
            }
        };
        resp.encode(out);
        Action::Respond
    }

    fn handle_describe(&self, req: &DescribeGroupsRequest, out: &mut Vec<u8>) -> Action {
        let resp = match &req.group {
            Some(g) if !crate::coordinator::valid_name(g) => {
                Ok(describe_error(ErrorCode::InvalidGroupId))
            }
            Some(g) => describe_group(&self.zk, g),
            None => groups::all_groups(&self.zk).map(|groups| DescribeGroupsResponse {
                error_code: 0,
                groups,
                members: Vec::new(),
                partitions: Vec::new(),
            }),
        };
        resp.unwrap_or_else(|e| {
            log::warn!("[Broker {}] DescribeGroups: {e:?}", self.broker_id);
            describe_error(ErrorCode::UnknownServerError)
        })
        .encode(out);
        Action::Respond
    }
}

/// Answers INVALID_REQUEST and closes the connection.
fn refuse() -> Action {
    Action::Adopt(Box::new(|mut stream| {
        let mut out = Vec::with_capacity(6);
        out.extend_from_slice(&2i32.to_be_bytes());
        ErrorResponse {
            error_code: ErrorCode::InvalidRequest.code(),
        }
        .encode(&mut out);
        let _ = stream.write_all(&out);
    }))
}

fn consult(zk: &ZkClient) -> ZkResult<ConsultResponse> {
    let coordinator = paths::read_json::<ElectedBroker>(zk, COORDINATOR)?.map(|e| e.brokerid);
    let brokers = paths::live_broker_registrations(zk)?
        .into_iter()
        .map(|(broker, session)| ConsultBroker {
            creator_id: format!("{session:x}"),
            broker,
        })
        .collect();
    Ok(ConsultResponse {
        error_code: if coordinator.is_some() {
            0
        } else {
            ErrorCode::CoordinatorNotAvailable.code()
        },
        coordinator_id: coordinator.unwrap_or(-1),
        brokers,
    })
}

fn describe_error(code: ErrorCode) -> DescribeGroupsResponse {
    DescribeGroupsResponse {
        error_code: code.code(),
        groups: Vec::new(),
        members: Vec::new(),
        partitions: Vec::new(),
    }
}

/// A group's members, and every partition it owns or has committed an offset for.
fn describe_group(zk: &ZkClient, group: &str) -> ZkResult<DescribeGroupsResponse> {
    if zk.exists(&groups::group_path(group))?.is_none() {
        return Ok(describe_error(ErrorCode::InvalidGroupId));
    }
    let members = groups::members(zk, group)?
        .into_iter()
        .map(|m| GroupMember {
            consumer_id: m.consumer_id,
            subscription: String::from_utf8_lossy(&paths::to_json(&m.registration)).into_owned(),
        })
        .collect();
    let mut owners = groups::owners(zk, group)?;
    let offsets_root = format!("{}/offsets", groups::group_path(group));
    for topic in zk
        .get_children(&offsets_root)
        .or_else(paths::no_node_empty)?
    {
        for p in zk
            .get_children(&format!("{offsets_root}/{topic}"))
            .or_else(paths::no_node_empty)?
        {
            if let Ok(p) = p.parse::<i32>() {
                owners.entry((topic.clone(), p)).or_default();
            }
        }
    }
    let mut partitions = Vec::with_capacity(owners.len());
    for ((topic, partition), owner) in owners {
        let committed = paths::committed_offset(zk, group, &topic, partition)?.unwrap_or(-1);
        partitions.push(GroupPartition {
            owner: (!owner.is_empty()).then_some(owner),
            topic,
            partition,
            committed,
        });
    }
    Ok(DescribeGroupsResponse {
        error_code: 0,
        groups: vec![group.to_owned()],
        members,
        partitions,
    })
}
