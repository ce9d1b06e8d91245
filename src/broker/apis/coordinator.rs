//! The coordinator's requests as a broker receives them: ConsultRequest (answered by every
//! broker, from ZooKeeper), and RegisterRequest (the connection is handed to
//! the coordinator, which refuses it with NOT_COORDINATOR when this broker is not the one).
//!
//! A coordinator request that does not decode, or one only a coordinator sends (Ping, Stop,
//! Start), is answered with INVALID_REQUEST and the connection is closed.

use std::io::Write;

use crate::security::acl::{Operation, ResourceType};
use crate::zk::ZkResult;

use super::KafkaApis;
use crate::network::{Action, ConnectionContext};
use crate::protocol::coordinator::{
    self as proto, ConsultBroker, ConsultResponse, Empty, ErrorResponse, RegisterRequest,
};
use crate::protocol::{ErrorCode, decode_classic, encode_classic};
use crate::zk::ZkClient;
use crate::zk::paths::{self, COORDINATOR, ElectedBroker};

impl KafkaApis {
    pub(super) fn handle_coordinator_request(
        &self,
        frame: &[u8],
        out: &mut Vec<u8>,
        conn: &ConnectionContext,
    ) -> Action {
        let peer = &conn.peer;
        let type_id = i16::from_be_bytes([frame[0], frame[1]]);
        let body = &frame[2..];
        let result = match type_id {
            proto::CONSULT => {
                decode_classic::<Empty>(body).map(|_| self.handle_consult(&conn.listener, out))
            }
            proto::REGISTER => decode_classic::<RegisterRequest>(body).map(|req| {
                // A spec-protocol consumer reads its group as a Kafka one does: Read on it.
                if !self.authorizer.allowed(
                    conn,
                    Operation::Read,
                    ResourceType::Group,
                    &req.group_id,
                ) {
                    return refuse_with(ErrorCode::GroupAuthorizationFailed);
                }
                let coordinator = self.coordinator.clone();
                Action::Adopt(Box::new(move |stream| coordinator.register(req, stream)))
            }),
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
    /// none) and the live brokers, as reached on the listener the request came in on.
    fn handle_consult(&self, listener: &str, out: &mut Vec<u8>) -> Action {
        let resp = match consult(&self.zk, listener) {
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
        encode_classic(&resp, out);
        Action::Respond
    }
}

/// Answers INVALID_REQUEST and closes the connection.
fn refuse() -> Action {
    refuse_with(ErrorCode::InvalidRequest)
}

/// Answers an error and closes.
fn refuse_with(code: ErrorCode) -> Action {
    Action::Adopt(Box::new(move |mut stream| {
        let mut out = Vec::with_capacity(6);
        out.extend_from_slice(&2i32.to_be_bytes());
        let error = ErrorResponse {
            error_code: code.code(),
        };
        encode_classic(&error, &mut out);
        let _ = stream.write_all(&out);
    }))
}

fn consult(zk: &ZkClient, listener: &str) -> ZkResult<ConsultResponse> {
    let coordinator = paths::read_json::<ElectedBroker>(zk, COORDINATOR)?.map(|e| e.brokerid);
    let brokers = paths::live_broker_registrations(zk)?
        .into_iter()
        .filter_map(|(endpoints, session)| {
            Some(ConsultBroker {
                creator_id: format!("{session:x}"),
                broker: endpoints.on(listener)?,
            })
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
