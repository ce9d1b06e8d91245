//! The requests only brokers send: the controller's LeaderAndIsr, StopReplica and
//! UpdateMetadata, and a broker's ControlledShutdown to the controller; refused on a client
//! listener when an inter-broker listener exists.

use super::KafkaApis;
use crate::network::{Action, ConnectionContext};
use crate::protocol::controller::{
    ControlledShutdownRequest, ControlledShutdownResponse, ErrorOnlyResponse, LeaderAndIsrRequest,
    PartitionErrorsResponse, StopReplicaRequest, UpdateMetadataRequest,
};
use crate::protocol::header::{self};
use crate::protocol::{Encode, ErrorCode};

impl KafkaApis {
    /// A request only brokers send (LeaderAndIsr, StopReplica, UpdateMetadata,
    /// ControlledShutdown) that arrived on a client listener while an inter-broker listener
    /// exists: answered CLUSTER_AUTHORIZATION_FAILED (what Kafka answers a client without the
    /// ClusterAction right), nothing carried out.
    pub(super) fn refuse_broker_request(
        &self,
        key: i16,
        conn: &ConnectionContext,
        out: &mut Vec<u8>,
    ) -> Action {
        log::warn!(
            "[Broker {}] refusing api {key} from {} on listener {}: only brokers send it, on {}",
            self.broker_id,
            conn.peer,
            conn.listener,
            self.config.listeners.inter_broker
        );
        let code = ErrorCode::ClusterAuthorizationFailed.code();
        match key {
            header::UPDATE_METADATA => ErrorOnlyResponse { error_code: code }.encode(out),
            header::CONTROLLED_SHUTDOWN => ControlledShutdownResponse {
                error_code: code,
                partitions_remaining: Vec::new(),
            }
            .encode(out),
            _ => PartitionErrorsResponse {
                error_code: code,
                partitions: Vec::new(),
            }
            .encode(out),
        }
        Action::Respond
    }

    pub(super) fn handle_controlled_shutdown(
        &self,
        req: &ControlledShutdownRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        let (code, remaining) = if !self.controller.is_controller() {
            (ErrorCode::NotController, Vec::new())
        } else {
            match self.controller.controlled_shutdown(req.broker_id) {
                Ok(r) => (ErrorCode::None, r),
                Err(e) => (e, Vec::new()),
            }
        };
        ControlledShutdownResponse {
            error_code: code.code(),
            partitions_remaining: remaining,
        }
        .encode(out);
        Action::Respond
    }

    pub(super) fn handle_leader_and_isr(
        &self,
        req: &LeaderAndIsrRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        self.replica_manager
            .on_leader_and_isr_command(req)
            .encode(out);
        Action::Respond
    }

    pub(super) fn handle_stop_replica(
        &self,
        req: &StopReplicaRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        self.replica_manager
            .on_stop_replica_command(req)
            .encode(out);
        Action::Respond
    }

    /// Epoch-checked like the other commands, then the cache takes the new state.
    pub(super) fn handle_update_metadata(
        &self,
        req: &UpdateMetadataRequest,
        out: &mut Vec<u8>,
    ) -> Action {
        let check = self.replica_manager.controller_epoch.check(
            req.controller_epoch,
            "UpdateMetadata",
            req.controller_id,
        );
        let code = match check {
            Err(e) => e,
            Ok(()) => {
                self.metadata_cache.update(req);
                // Admin requests wait for their topics to appear in (or leave) the cache.
                self.replica_manager.notifier.notify();
                ErrorCode::None
            }
        };
        ErrorOnlyResponse {
            error_code: code.code(),
        }
        .encode(out);
        Action::Respond
    }
}
