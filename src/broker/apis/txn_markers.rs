//! WriteTxnMarkers (27): a partition leader writes the markers a transaction coordinator
//! sends it (`log::transactions`), each answered once it is replicated to the ISR — as an
//! acks=all produce is, so that the coordinator moves a transaction to Complete* only when no
//! leader change can lose its markers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::produce::{Appended, now_ms, wait_for_acks_all};
use super::{KafkaApis, RequestContext};
use crate::broker::partition::{Partition, Role};
use crate::log::transactions::MarkerError;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::record_batch::TxnMarker;
use crate::protocol::txn_markers::{
    TxnMarkerEntry, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};

/// How long the answer waits for the markers to reach the ISR: Kafka's coordinator sends with
/// the inter-broker `request.timeout.ms`, 30 s.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);

impl KafkaApis {
    pub(super) fn handle_write_txn_markers(
        &self,
        req: &WriteTxnMarkersRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let now = now_ms();
        let mut results = Vec::new();
        for m in &req.markers {
            for (topic, partitions) in &m.topics {
                for p in partitions {
                    let written = self
                        .partition(topic, *p)
                        .and_then(|part| self.write_marker(part, m, now));
                    results.push(written.unwrap_or_else(|e| Appended::failed(e, None)));
                }
            }
        }
        let deadline = Instant::now() + REPLICATION_TIMEOUT;
        wait_for_acks_all(&self.replica_manager, &mut results, deadline);
        let mut outcome = results.iter().map(|r| r.error.code());
        let markers = req
            .markers
            .iter()
            .map(|m| {
                let topics = m
                    .topics
                    .iter()
                    .map(|(t, ps)| {
                        let codes = ps.iter().map(|p| (*p, outcome.next().unwrap_or(-1)));
                        (t.clone(), codes.collect())
                    })
                    .collect();
                (m.producer_id, topics)
            })
            .collect();
        cx.answer(out, &WriteTxnMarkersResponse { markers });
        Action::Respond
    }

    /// Appends one marker as the partition's leader, with the ISR `min.insync.replicas`
    /// needs (markers are written with acks=all).
    fn write_marker(
        &self,
        part: Arc<Partition>,
        m: &TxnMarkerEntry,
        now: i64,
    ) -> Result<Appended, ErrorCode> {
        let rm = &self.replica_manager;
        let st = part.lock();
        if st.role != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        if st.isr.len() < part.min_insync_replicas(rm.default_min_insync_replicas()) {
            return Err(ErrorCode::NotEnoughReplicas);
        }
        let marker = TxnMarker {
            commit: m.commit,
            coordinator_epoch: m.coordinator_epoch,
        };
        let written = part.log.append_marker(
            m.producer_id,
            m.producer_epoch,
            marker,
            st.leader_epoch,
            now,
        );
        let offset = match written {
            Ok(Ok(offset)) => offset,
            Ok(Err(MarkerError::ProducerFenced { .. })) => {
                return Err(ErrorCode::InvalidProducerEpoch);
            }
            Ok(Err(MarkerError::CoordinatorFenced { .. })) => {
                return Err(ErrorCode::TransactionCoordinatorFenced);
            }
            Err(e) => {
                log::error!(
                    "[Broker {} {}-{}] marker append failed: {e}",
                    self.broker_id,
                    part.topic,
                    part.partition
                );
                return Err(ErrorCode::UnknownServerError);
            }
        };
        let hw_moved = part.maybe_increment_high_watermark(&st);
        drop(st);
        part.appended(hw_moved);
        Ok(Appended::ok(part, offset, offset, None))
    }
}
