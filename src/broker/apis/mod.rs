//! `KafkaApis`: the dispatcher — it reads each request's header, checks the version against
//! the API table (`protocol::header::SUPPORTED_APIS`), decodes the body and hands it to the
//! handler of its family, one file here per family (as mini-redis keeps a file per command):
//! `produce`, `fetch`, `list_offsets`, `leader_epochs`, `metadata`, `controller` (requests
//! only brokers send), `topics`, `configs`, `groups`, `group_offsets`, `coordinator` (the
//! spec's own protocol). Each handler decodes, checks, acts and answers, in that order.
//!
//! A request that does not decode, or an api key/version we do not serve, closes the
//! connection with a log line naming the peer and the problem (the protocol has no error
//! response for an unparseable request); ApiVersions always gets an answer.

mod configs;
mod controller;
mod coordinator;
mod fetch;
pub mod group_offsets;
mod groups;
mod leader_epochs;
mod list_offsets;
mod metadata;
mod produce;
mod topics;

use std::sync::Arc;

use crate::broker::metadata_cache::MetadataCache;
use crate::broker::partition::Partition;
use crate::broker::producer_ids::ProducerIdManager;
use crate::broker::replica_manager::ReplicaManager;
use crate::config::BrokerConfig;
use crate::controller::KafkaController;
use crate::coordinator::Coordinator;
use crate::network::{Action, ConnectionContext, RequestHandler, Response};
use crate::protocol::admin_configs::AlterConfigsRequest;
use crate::protocol::admin_describe::{DescribeClusterRequest, DescribeConfigsRequest};
use crate::protocol::admin_topics::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
};
use crate::protocol::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use crate::protocol::coordinator::is_coordinator_request;
use crate::protocol::delete_records::DeleteRecordsRequest;
use crate::protocol::fetch::FetchRequest;
use crate::protocol::group_offsets::{
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};
use crate::protocol::header::{self, RequestHeader};
use crate::protocol::init_producer_id::InitProducerIdRequest;
use crate::protocol::metadata::MetadataRequest;
use crate::protocol::offset_for_leader_epoch::OffsetForLeaderEpochRequest;
use crate::protocol::offsets::ListOffsetsRequest;
use crate::protocol::{Decode, DecodeResult, ErrorCode, Reader, Writer};
use crate::zk::ZkClient;

/// What the dispatcher knows of a request besides its body.
pub struct RequestContext<'a> {
    pub version: i16,
    /// Whether the body is in the flexible encoding.
    pub flexible: bool,
    pub client_id: &'a str,
    pub conn: &'a ConnectionContext,
}

pub struct KafkaApis {
    pub broker_id: i32,
    pub config: Arc<BrokerConfig>,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    /// For auto-creating topics on Metadata requests, and the admin APIs.
    pub zk: Arc<ZkClient>,
    /// Serves ControlledShutdown when this broker is the controller.
    pub controller: Arc<KafkaController>,
    /// Takes over connections that register a consumer.
    pub coordinator: Arc<Coordinator>,
    /// Gives idempotent producers their ids.
    pub producer_ids: ProducerIdManager,
    /// Bounds the produce data inflated at once across connections.
    pub inflation: crate::broker::inflation::InflationSlots,
}

impl RequestHandler for KafkaApis {
    /// Produce requests may be carried out behind a parked acks=all Produce: they never wait
    /// before appending, and appending them early changes nothing an earlier answer says.
    fn can_pipeline(&self, frame: &[u8]) -> bool {
        header::peek_key_version(frame).is_some_and(|(key, _)| key == header::PRODUCE)
    }

    /// Fetch v0–v12 carry `replica_id` first in the body, right after the header.
    fn is_follower_fetch(&self, frame: &[u8]) -> bool {
        let mut r = Reader::new(frame);
        RequestHeader::decode(&mut r).is_ok() && r.i32("replica_id").is_ok_and(|id| id >= 0)
    }

    fn handle(&self, frame: &mut [u8], out: &mut Response, conn: &ConnectionContext) -> Action {
        if frame.len() >= 2 && is_coordinator_request(i16::from_be_bytes([frame[0], frame[1]])) {
            return self.handle_coordinator_request(frame, out, conn);
        }
        let peer = &conn.peer;
        let mut r = Reader::new(frame);
        let h = match RequestHeader::decode(&mut r) {
            Ok(h) => h,
            Err(e) => {
                log::warn!(
                    "[Broker {}] closing connection from {peer}: bad request header: {e}",
                    self.broker_id
                );
                return Action::Close;
            }
        };
        let (key, version, corr) = (h.api_key, h.api_version, h.correlation_id);
        let body_at = r.position();
        let flex = r.is_flexible();
        if key == header::API_VERSIONS {
            out.put_i32(corr);
            let decoded = header::is_supported(key, version)
                .then(|| ApiVersionsRequest::decode(&mut r, version))
                .transpose();
            if let Ok(Some(ApiVersionsRequest {
                client_software: Some((name, ver)),
                ..
            })) = &decoded
            {
                let _ = conn.client_software.set(format!("{name} {ver}"));
            }
            if let Err(e) = decoded {
                log::warn!(
                    "[Broker {}] closing connection from {peer}: malformed ApiVersions v{version}: {e}",
                    self.broker_id
                );
                return Action::Close;
            }
            ApiVersionsResponse::for_version(version).encode(out);
            return Action::Respond;
        }
        if !header::is_supported(key, version) {
            log::warn!(
                "[Broker {}] closing connection from {peer}: unsupported api key {key} version {version} (client {:?})",
                self.broker_id,
                h.client_id
            );
            return Action::Close;
        }
        out.put_i32(corr);
        out.put_tags(header::response_is_flexible(key, version));
        if header::is_inter_broker(key) && !conn.inter_broker {
            return self.refuse_broker_request(key, conn, out);
        }
        let result = match key {
            header::PRODUCE => self.handle_produce(frame, (body_at, flex), version, out),
            header::FETCH => decode_v(frame, body_at, flex, |r| FetchRequest::decode(r, version))
                .map(|req| self.handle_fetch(&req, version, conn, out)),
            header::LIST_OFFSETS => decode_v(frame, body_at, flex, |r| {
                ListOffsetsRequest::decode_v(r, version)
            })
            .map(|req| self.handle_list_offsets(&req, version, out)),
            header::METADATA => decode_v(frame, body_at, flex, |r| {
                MetadataRequest::decode_v(r, version)
            })
            .map(|req| self.handle_metadata(&req, version, &conn.listener, out)),
            header::LEADER_AND_ISR => {
                decode(frame, body_at).map(|req| self.handle_leader_and_isr(&req, out))
            }
            header::STOP_REPLICA => {
                decode(frame, body_at).map(|req| self.handle_stop_replica(&req, out))
            }
            header::UPDATE_METADATA => {
                decode(frame, body_at).map(|req| self.handle_update_metadata(&req, out))
            }
            header::CONTROLLED_SHUTDOWN => {
                decode(frame, body_at).map(|req| self.handle_controlled_shutdown(&req, out))
            }
            header::INIT_PRODUCER_ID => decode_v(frame, body_at, flex, |r| {
                InitProducerIdRequest::decode(r, version)
            })
            .map(|req| self.handle_init_producer_id(&req, version, out)),
            header::OFFSET_FOR_LEADER_EPOCH => decode_v(frame, body_at, flex, |r| {
                OffsetForLeaderEpochRequest::decode(r, version)
            })
            .map(|req| self.handle_offset_for_leader_epoch(&req, version, out)),
            header::OFFSET_COMMIT => decode_v(frame, body_at, flex, |r| {
                OffsetCommitRequest::decode(r, version)
            })
            .map(|req| self.handle_offset_commit(&req, version, out)),
            header::OFFSET_FETCH => decode_v(frame, body_at, flex, |r| {
                OffsetFetchRequest::decode(r, version)
            })
            .map(|req| self.handle_offset_fetch(&req, version, out)),
            header::CREATE_TOPICS => decode_v(frame, body_at, flex, |r| {
                CreateTopicsRequest::decode(r, version)
            })
            .map(|req| self.handle_create_topics(&req, version, out)),
            header::DELETE_TOPICS => decode_v(frame, body_at, flex, |r| {
                DeleteTopicsRequest::decode(r, version)
            })
            .map(|req| self.handle_delete_topics(&req, version, out)),
            header::DELETE_RECORDS => decode_v(frame, body_at, flex, DeleteRecordsRequest::decode)
                .map(|req| self.handle_delete_records(&req, version, out)),
            header::CREATE_PARTITIONS => decode_v(frame, body_at, flex, |r| {
                CreatePartitionsRequest::decode(r, version)
            })
            .map(|req| self.handle_create_partitions(&req, version, out)),
            header::DESCRIBE_CONFIGS => decode_v(frame, body_at, flex, |r| {
                DescribeConfigsRequest::decode(r, version)
            })
            .map(|req| self.handle_describe_configs(&req, version, out)),
            header::ALTER_CONFIGS | header::INCREMENTAL_ALTER_CONFIGS => {
                let incremental = key == header::INCREMENTAL_ALTER_CONFIGS;
                decode_v(frame, body_at, flex, |r| {
                    AlterConfigsRequest::decode(r, incremental)
                })
                .map(|req| self.handle_alter_configs(&req, incremental, flex, out))
            }
            header::OFFSET_DELETE => decode_v(frame, body_at, flex, OffsetDeleteRequest::decode)
                .map(|req| self.handle_offset_delete(&req, out)),
            header::DESCRIBE_CLUSTER => decode_v(frame, body_at, flex, |r| {
                DescribeClusterRequest::decode(r, version)
            })
            .map(|req| self.handle_describe_cluster(&req, version, &conn.listener, out)),
            header::FIND_COORDINATOR
            | header::JOIN_GROUP
            | header::SYNC_GROUP
            | header::HEARTBEAT
            | header::LEAVE_GROUP
            | header::DESCRIBE_GROUPS
            | header::LIST_GROUPS
            | header::DELETE_GROUPS => {
                let cx = RequestContext {
                    version,
                    flexible: flex,
                    client_id: h.client_id.unwrap_or(""),
                    conn,
                };
                self.handle_group_api(key, &frame[body_at..], &cx, out)
            }
            _ => unreachable!("is_supported admitted only the keys above"),
        };
        match result {
            Ok(a) => a,
            Err(e) => {
                // Kafka's answer to a body it cannot read: the connection is closed (its
                // SocketServer on InvalidRequestException), which clients treat as a
                // transport error. The line says whose request, at which API and version.
                let mut again = Reader::new(frame);
                let client_id = RequestHeader::decode(&mut again)
                    .ok()
                    .and_then(|h| h.client_id);
                log::warn!(
                    "[Broker {}] closing connection from {}: malformed {} v{version} request (client id {:?}): {e}",
                    self.broker_id,
                    conn.who(),
                    header::api_name(key).unwrap_or("unknown api"),
                    client_id.unwrap_or("")
                );
                Action::Close
            }
        }
    }
}

fn decode<'a, T: Decode<'a>>(frame: &'a [u8], body_at: usize) -> DecodeResult<T> {
    crate::protocol::decode_all(&frame[body_at..])
}

/// Decodes a versioned body with `f`, in the flexible encoding when `flex`.
pub(super) fn decode_v<'a, T>(
    frame: &'a [u8],
    body_at: usize,
    flex: bool,
    f: impl FnOnce(&mut Reader<'a>) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let mut r = Reader::new(&frame[body_at..]);
    r.set_flexible(flex);
    let v = f(&mut r)?;
    // Bytes after the last field are ignored, as Kafka's request parsing ignores them:
    // librdkafka 2.16 sends a Metadata v12 request for all topics with the topic array's
    // 4-byte placeholder left in (a null compact array and three more bytes), and Kafka
    // answers it. Refusing them closed every `AdminClient.list_topics()` connection.
    if r.remaining() > 0 {
        log::debug!("{} bytes after a request body ignored", r.remaining());
    }
    Ok(v)
}

impl KafkaApis {
    /// A partition this broker hosts, or the error a client should see: NOT_LEADER when the
    /// topic-partition exists elsewhere, UNKNOWN_TOPIC_OR_PARTITION when it does not exist.
    pub(super) fn partition(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Arc<Partition>, ErrorCode> {
        match self.replica_manager.get_partition(topic, partition) {
            Some(p) => Ok(p),
            None if self.metadata_cache.contains_partition(topic, partition) => {
                Err(ErrorCode::NotLeaderForPartition)
            }
            None => Err(ErrorCode::UnknownTopicOrPartition),
        }
    }
}
