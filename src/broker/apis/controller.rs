//! The requests only brokers send: the controller's LeaderAndIsr, StopReplica and
//! UpdateMetadata, and a broker's ControlledShutdown to the controller; refused on a client
//! listener when an inter-broker listener exists.

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::controller::{
    ControlledShutdownRequest, ControlledShutdownResponse, ErrorOnlyResponse, LeaderAndIsrRequest,
    PartitionErrorsResponse, StopReplicaRequest, UpdateMetadataRequest,
};
use crate::protocol::header::{self};

impl KafkaApis {
    /// A request only brokers send (LeaderAndIsr, StopReplica, UpdateMetadata,
    /// ControlledShutdown) that arrived on a client listener while an inter-broker listener
    /// exists: answered CLUSTER_AUTHORIZATION_FAILED (what Kafka answers a client without the
    /// ClusterAction right), nothing carried out.
    pub(super) fn refuse_broker_request(
        &self,
        key: i16,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let conn = cx.conn;
        log::warn!(
            "[Broker {}] refusing api {key} from {} on listener {}: only brokers send it, on {}",
            self.broker_id,
            conn.peer,
            conn.listener,
            self.config.listeners.inter_broker
        );
        let code = ErrorCode::ClusterAuthorizationFailed.code();
        match key {
            header::UPDATE_METADATA => cx.answer(out, &ErrorOnlyResponse { error_code: code }),
            header::CONTROLLED_SHUTDOWN => {
                let resp = ControlledShutdownResponse {
                    error_code: code,
                    partitions_remaining: Vec::new(),
                };
                cx.answer(out, &resp)
            }
            _ => {
                let resp = PartitionErrorsResponse {
                    error_code: code,
                    partitions: Vec::new(),
                };
                cx.answer(out, &resp)
            }
        }
        Action::Respond
    }

    pub(super) fn handle_controlled_shutdown(
        &self,
        req: &ControlledShutdownRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let (code, remaining) = if !self.controller.is_controller() {
            (ErrorCode::NotController, Vec::new())
        } else {
            match self.controller.controlled_shutdown(req.broker_id) {
                Ok(r) => (ErrorCode::None, r),
                Err(e) => (e, Vec::new()),
            }
        };
        let resp = ControlledShutdownResponse {
            error_code: code.code(),
            partitions_remaining: remaining,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_leader_and_isr(
        &self,
        req: &LeaderAndIsrRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        cx.answer(out, &self.replica_manager.on_leader_and_isr_command(req));
        Action::Respond
    }

    pub(super) fn handle_stop_replica(
        &self,
        req: &StopReplicaRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        cx.answer(out, &self.replica_manager.on_stop_replica_command(req));
        Action::Respond
    }

    /// Epoch-checked like the other commands, then the cache takes the new state.
    pub(super) fn handle_update_metadata(
        &self,
        req: &UpdateMetadataRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let check = self.replica_manager.controller_epoch.check(
            req.controller_epoch,
            "UpdateMetadata",
            req.controller_id,
        );
        let code = match check {
            Err(e) => e,
            Ok(()) => {
                // Admin requests waiting for their topics to appear in (or leave) the cache
                // look again.
                self.metadata_cache.update(req);
                ErrorCode::None
            }
        };
        cx.answer(
            out,
            &ErrorOnlyResponse {
                error_code: code.code(),
            },
        );
        Action::Respond
    }
}
