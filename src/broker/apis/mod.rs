//! `KafkaApis`: the dispatcher — it reads each request's header, checks the version against
//! the API table (`protocol::header::SUPPORTED_APIS`), decodes the body and hands it to the
//! handler of its family, one file here per family (as mini-redis keeps a file per command):
//! `produce`, `producer_ids`, `fetch`, `list_offsets`, `leader_epochs`, `metadata`, `controller` (requests
//! only brokers send), `topics`, `configs`, `groups`, `group_offsets`, `coordinator` (the
//! spec's own protocol). Each handler decodes, checks, acts and answers, in that order.
//!
//! A request that does not decode, or an api key/version we do not serve, closes the
//! connection with a log line naming the peer and the problem (the protocol has no error
//! response for an unparseable request); ApiVersions always gets an answer.

mod acls;
mod broker_configs;
mod client_quotas;
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
mod producer_ids;
mod replicas;
mod sasl;
mod topics;
mod transactions;
mod txn_admin;
mod txn_markers;

pub(crate) use produce::wait_replicated;
mod user_credentials;

use std::sync::Arc;

use crate::broker::client_quotas::{ClientQuotaManager, QuotaKind};
use crate::broker::metadata_cache::MetadataCache;
use crate::broker::partition::Partition;
use crate::broker::producer_ids::ProducerIdManager;
use crate::broker::replica_manager::ReplicaManager;
use crate::config::BrokerConfig;
use crate::controller::KafkaController;
use crate::coordinator::Coordinator;
use crate::network::{Action, ConnectionContext, RequestHandler, Response};
use crate::protocol::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use crate::protocol::coordinator::is_coordinator_request;
use crate::protocol::header::{self, RequestHeader};
use crate::protocol::{Decode, DecodeResult, Encode, ErrorCode, Out, Reader, Writer};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};
use crate::zk::ZkClient;

/// What the dispatcher knows of a request besides its body; every handler gets it.
pub struct RequestContext<'a> {
    pub api_key: i16,
    pub version: i16,
    /// The request header's bytes, for the client id (`client_id`).
    head: &'a [u8],
    pub conn: &'a ConnectionContext,
    /// How long the client must wait, in ms, by the byte-rate quota a handler recorded
    /// against (Produce, Fetch); the dispatcher adds the request-time quota's.
    throttle_ms: std::cell::Cell<u64>,
    /// The header's client id once a handler or the quotas asked for it.
    client: std::cell::OnceCell<&'a str>,
}

impl RequestContext<'_> {
    /// Records `value` against the client's quota of `kind` (when any quota is configured),
    /// and holds the client back for what that costs.
    pub fn charge(&self, quotas: &ClientQuotaManager, kind: QuotaKind, value: f64) {
        if quotas.active() {
            let t = quotas.record(kind, self.user(), self.client_id(), value);
            self.throttle_ms.set(self.throttle_ms.get().max(t));
        }
    }

    /// The client id of the request header: read from the header's bytes the first time a
    /// handler or the quotas ask (JoinGroup, a log line, a quota'd client's request), so that
    /// Produce and Fetch without quotas never pay for it, and a quota'd one pays once.
    pub fn client_id(&self) -> &str {
        self.client.get_or_init(|| {
            RequestHeader::decode(&mut Reader::new(self.head))
                .ok()
                .and_then(|h| h.client_id)
                .unwrap_or("")
        })
    }

    /// The user the connection acts as (its SASL principal's name, or ANONYMOUS).
    pub fn user(&self) -> &str {
        self.conn
            .principal()
            .map_or(crate::security::ANONYMOUS, |p| p.name.as_str())
    }

    /// Reads the request's body, in the encoding the API table gives its version.
    pub fn read<'f, T: Decode<'f>>(&self, body: &'f [u8]) -> DecodeResult<T> {
        let mut r = Reader::body(body, self.api_key, self.version);
        let v = T::decode(&mut r)?;
        // Bytes after the last field are ignored, as Kafka's request parsing ignores them:
        // librdkafka 2.16 sends a Metadata v12 request for all topics with the topic array's
        // 4-byte placeholder left in (a null compact array and three more bytes), and Kafka
        // answers it. Refusing them closed every `AdminClient.list_topics()` connection.
        if r.remaining() > 0 {
            log::debug!("{} bytes after a request body ignored", r.remaining());
        }
        Ok(v)
    }

    /// Writes the answer's body at the request's version.
    pub fn answer(&self, out: &mut Response, body: &impl Encode) {
        body.encode(&mut Out::body(&mut **out, self.api_key, self.version));
    }

    /// A writer of the answer at the request's version, for an answer written piece by piece
    /// (Fetch, with file slices between its pieces).
    pub fn writer<'o>(&self, out: &'o mut Response) -> Out<'o, Response> {
        Out::body(out, self.api_key, self.version)
    }
}

pub struct KafkaApis {
    pub broker_id: i32,
    /// The configuration the broker started with: read only its static keys here; a dynamic
    /// key (`config::keys`' `dynamic`) is read from `dynamic.current()`.
    pub config: Arc<BrokerConfig>,
    pub dynamic: Arc<crate::broker::dynamic_config::DynamicBrokerConfig>,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    /// For auto-creating topics on Metadata requests, and the admin APIs.
    pub zk: Arc<ZkClient>,
    /// Serves ControlledShutdown when this broker is the controller.
    pub controller: Arc<KafkaController>,
    /// Takes over connections that register a consumer.
    pub coordinator: Arc<Coordinator>,
    /// Gives idempotent producers their ids (and the transaction coordinator its).
    pub producer_ids: Arc<ProducerIdManager>,
    /// Serves the transactional ids whose `__transaction_state` partition this broker leads.
    pub txn_coordinator: Arc<crate::broker::txn_coordinator::TransactionCoordinator>,
    /// Bounds the produce data inflated at once across connections.
    pub inflation: crate::broker::inflation::InflationSlots,
    /// The client quotas, and the measures they are held to.
    pub quotas: Arc<ClientQuotaManager>,
    /// SASL users' credentials, and the count of authentications.
    pub credentials: Arc<crate::broker::credentials::CredentialCache>,
    /// The ACLs every request is checked against (when `authorizer.class.name` is set).
    pub authorizer: Arc<crate::broker::authorizer::Authorizer>,
}

impl KafkaApis {
    /// Whether the request's principal may do `op` on the resource.
    pub(super) fn allowed(
        &self,
        cx: &RequestContext<'_>,
        op: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer.allowed(cx.conn, op, resource_type, name)
    }

    /// `allowed` on the cluster resource.
    pub(super) fn cluster_allowed(&self, cx: &RequestContext<'_>, op: Operation) -> bool {
        self.allowed(cx, op, ResourceType::Cluster, CLUSTER_NAME)
    }
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
        let authenticated = conn.principal().is_some();
        if !authenticated && let Some(a) = self.raw_sasl_token(frame, out, conn) {
            return a;
        }
        if authenticated
            && frame.len() >= 2
            && is_coordinator_request(i16::from_be_bytes([frame[0], frame[1]]))
        {
            return self.handle_coordinator_request(frame, out, conn);
        }
        let peer = &conn.peer;
        let (h, body_at) = match read_header(frame) {
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
        if !header::is_supported(key, version) && key != header::API_VERSIONS {
            log::warn!(
                "[Broker {}] closing connection from {peer}: unsupported api key {key} version {version} (client {:?})",
                self.broker_id,
                h.client_id
            );
            return Action::Close;
        }
        // The body apart from the header, so that it can be borrowed mutably (Produce writes
        // offsets into its record sets in place) beside the header's bytes.
        let (head, body) = frame.split_at_mut(body_at);
        let cx = RequestContext {
            api_key: key,
            version,
            head,
            conn,
            throttle_ms: std::cell::Cell::new(0),
            client: std::cell::OnceCell::new(),
        };
        // Brokers' requests (replication, the controller's) are never throttled; a follower's
        // Fetch carries its replica id first in the body. Without quotas nothing is looked at.
        let exempt = || {
            header::is_inter_broker(key)
                || (key == header::FETCH
                    && body
                        .get(..4)
                        .is_some_and(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]) >= 0))
        };
        let started = (self.quotas.active() && !exempt()).then(thread_cpu_ns);
        if key == header::API_VERSIONS {
            return self.handle_api_versions(body, corr, &cx, out);
        }
        out.put_i32(corr);
        if header::response_is_flexible(key, version) {
            out.put_i8(0); // the response header's empty tag buffer
        }
        if !authenticated {
            return self.before_authentication(body, &cx, out);
        }
        if self.config.security.max_reauth.is_some()
            && key != header::SASL_HANDSHAKE
            && key != header::SASL_AUTHENTICATE
            && conn.session_expired()
        {
            log::info!(
                "[Broker {}] closing connection from {}: its SASL session expired without a new authentication (connections.max.reauth.ms)",
                self.broker_id,
                conn.who()
            );
            return Action::Close;
        }
        if header::is_inter_broker(key)
            && (!conn.inter_broker || !self.cluster_allowed(&cx, Operation::ClusterAction))
        {
            return self.refuse_broker_request(key, &cx, out);
        }
        let result = match key {
            header::PRODUCE => self.handle_produce(body, &cx, out),
            header::FETCH => self.serve(body, &cx, out, Self::handle_fetch),
            header::LIST_OFFSETS => self.serve(body, &cx, out, Self::handle_list_offsets),
            header::METADATA => self.serve(body, &cx, out, Self::handle_metadata),
            header::LEADER_AND_ISR => self.serve(body, &cx, out, Self::handle_leader_and_isr),
            header::STOP_REPLICA => self.serve(body, &cx, out, Self::handle_stop_replica),
            header::UPDATE_METADATA => self.serve(body, &cx, out, Self::handle_update_metadata),
            header::CONTROLLED_SHUTDOWN => {
                self.serve(body, &cx, out, Self::handle_controlled_shutdown)
            }
            header::INIT_PRODUCER_ID => self.serve(body, &cx, out, Self::handle_init_producer_id),
            header::WRITE_TXN_MARKERS => self.serve(body, &cx, out, Self::handle_write_txn_markers),
            header::ADD_PARTITIONS_TO_TXN => {
                self.serve(body, &cx, out, Self::handle_add_partitions_to_txn)
            }
            header::ADD_OFFSETS_TO_TXN => {
                self.serve(body, &cx, out, Self::handle_add_offsets_to_txn)
            }
            header::END_TXN => self.serve(body, &cx, out, Self::handle_end_txn),
            header::TXN_OFFSET_COMMIT => self.serve(body, &cx, out, Self::handle_txn_offset_commit),
            header::DESCRIBE_TRANSACTIONS => {
                self.serve(body, &cx, out, Self::handle_describe_transactions)
            }
            header::LIST_TRANSACTIONS => self.serve(body, &cx, out, Self::handle_list_transactions),
            header::DESCRIBE_PRODUCERS => {
                self.serve(body, &cx, out, Self::handle_describe_producers)
            }
            header::OFFSET_FOR_LEADER_EPOCH => {
                self.serve(body, &cx, out, Self::handle_offset_for_leader_epoch)
            }
            header::OFFSET_COMMIT => self.serve(body, &cx, out, Self::handle_offset_commit),
            header::OFFSET_FETCH => self.serve(body, &cx, out, Self::handle_offset_fetch),
            header::OFFSET_DELETE => self.serve(body, &cx, out, Self::handle_offset_delete),
            header::CREATE_TOPICS => self.serve(body, &cx, out, Self::handle_create_topics),
            header::DELETE_TOPICS => self.serve(body, &cx, out, Self::handle_delete_topics),
            header::DELETE_RECORDS => self.serve(body, &cx, out, Self::handle_delete_records),
            header::CREATE_PARTITIONS => self.serve(body, &cx, out, Self::handle_create_partitions),
            header::DESCRIBE_CONFIGS => self.serve(body, &cx, out, Self::handle_describe_configs),
            header::ALTER_CONFIGS | header::INCREMENTAL_ALTER_CONFIGS => {
                self.serve(body, &cx, out, Self::handle_alter_configs)
            }
            header::DESCRIBE_CLUSTER => self.serve(body, &cx, out, Self::handle_describe_cluster),
            header::FIND_COORDINATOR => self.serve(body, &cx, out, Self::handle_find_coordinator),
            header::JOIN_GROUP => self.serve(body, &cx, out, Self::handle_join_group),
            header::SYNC_GROUP => self.serve(body, &cx, out, Self::handle_sync_group),
            header::HEARTBEAT => self.serve(body, &cx, out, Self::handle_heartbeat),
            header::LEAVE_GROUP => self.serve(body, &cx, out, Self::handle_leave_group),
            header::DESCRIBE_GROUPS => self.serve(body, &cx, out, Self::handle_describe_groups),
            header::LIST_GROUPS => self.serve(body, &cx, out, Self::handle_list_groups),
            header::DELETE_GROUPS => self.serve(body, &cx, out, Self::handle_delete_groups),
            header::ELECT_LEADERS => self.serve(body, &cx, out, Self::handle_elect_leaders),
            header::ALTER_PARTITION_REASSIGNMENTS => {
                self.serve(body, &cx, out, Self::handle_alter_partition_reassignments)
            }
            header::LIST_PARTITION_REASSIGNMENTS => {
                self.serve(body, &cx, out, Self::handle_list_partition_reassignments)
            }
            header::DESCRIBE_LOG_DIRS => self.serve(body, &cx, out, Self::handle_describe_log_dirs),
            header::DESCRIBE_CLIENT_QUOTAS => {
                self.serve(body, &cx, out, Self::handle_describe_client_quotas)
            }
            header::ALTER_CLIENT_QUOTAS => {
                self.serve(body, &cx, out, Self::handle_alter_client_quotas)
            }
            header::DESCRIBE_ACLS => self.serve(body, &cx, out, Self::handle_describe_acls),
            header::CREATE_ACLS => self.serve(body, &cx, out, Self::handle_create_acls),
            header::DELETE_ACLS => self.serve(body, &cx, out, Self::handle_delete_acls),
            header::SASL_HANDSHAKE | header::SASL_AUTHENTICATE => {
                Ok(self.sasl_after_authentication(body, &cx, out))
            }
            header::DESCRIBE_USER_SCRAM_CREDENTIALS => {
                self.serve(body, &cx, out, Self::handle_describe_user_scram_credentials)
            }
            header::ALTER_USER_SCRAM_CREDENTIALS => {
                self.serve(body, &cx, out, Self::handle_alter_user_scram_credentials)
            }
            _ => unreachable!("is_supported admitted only the keys above"),
        };
        match result {
            Ok(a) => match started {
                Some(t) => self.hold_back(a, &cx, out, t),
                None => a,
            },
            Err(e) => {
                // Kafka's answer to a body it cannot read: the connection is closed (its
                // SocketServer on InvalidRequestException), which clients treat as a
                // transport error. The line says whose request, at which API and version.
                log::warn!(
                    "[Broker {}] closing connection from {}: malformed {} v{version} request (client id {:?}): {e}",
                    self.broker_id,
                    conn.who(),
                    header::api_name(key).unwrap_or("unknown api"),
                    cx.client_id()
                );
                Action::Close
            }
        }
    }
}

impl KafkaApis {
    /// KIP-124 and KIP-219: the request's thread time counts against the client's
    /// `request_percentage` (a second of one thread is 100); a client over any of its quotas
    /// is told in the answer's `throttle_time_ms` how long to wait, and its connection reads
    /// nothing more from it for that long.
    fn hold_back(
        &self,
        action: Action,
        cx: &RequestContext<'_>,
        out: &mut Response,
        started_ns: u64,
    ) -> Action {
        let percent = thread_cpu_ns().saturating_sub(started_ns) as f64 / 1e7;
        cx.charge(&self.quotas, QuotaKind::Request, percent);
        let t = cx.throttle_ms.get();
        if t == 0 {
            return action;
        }
        cx.conn.mute_for(std::time::Duration::from_millis(t));
        let (key, version) = (cx.api_key, cx.version);
        // The size's place, the correlation id, and the flexible header's tag buffer.
        let body_at = 8 + usize::from(header::response_is_flexible(key, version));
        let t = t.min(i32::MAX as u64) as i32;
        match action {
            Action::Respond => {
                write_throttle(out, body_at, key, version, t);
                Action::Respond
            }
            Action::Park(finish) => Action::Park(Box::new(move |buf| {
                finish(buf);
                write_throttle(buf, body_at, key, version, t);
            })),
            a => a,
        }
    }
}

/// The CPU time this thread has used, in ns: a request's cost to `request_percentage`, like
/// Kafka's thread time — a Fetch waiting for data (this thread asleep) costs nothing.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write into, for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes `ms` into the answer's `throttle_time_ms`, where its API and version have one.
fn write_throttle(out: &mut [u8], body_at: usize, key: i16, version: i16, ms: i32) {
    let Some(body) = out.get_mut(body_at..) else {
        return;
    };
    if let Some(at) = header::throttle_offset(key, version, body.len())
        && let Some(field) = body.get_mut(at..at + 4)
    {
        field.copy_from_slice(&ms.to_be_bytes());
    }
}

/// A handler of one API: the answer to a decoded request.
type Handler<T> = fn(&KafkaApis, &T, &RequestContext<'_>, &mut Response) -> Action;

impl KafkaApis {
    /// Reads the body as the request `handle` serves, then lets it check, act and answer.
    fn serve<'f, T: Decode<'f>>(
        &self,
        body: &'f [u8],
        cx: &RequestContext<'_>,
        out: &mut Response,
        handle: Handler<T>,
    ) -> DecodeResult<Action> {
        cx.read(body).map(|req| handle(self, &req, cx, out))
    }
}

/// Reads a request's header, and where its body starts.
fn read_header(frame: &[u8]) -> DecodeResult<(RequestHeader<'_>, usize)> {
    let mut r = Reader::new(frame);
    let h = RequestHeader::decode(&mut r)?;
    Ok((h, r.position()))
}

impl KafkaApis {
    /// ApiVersions is answered whatever its version (one above ours gets the v0-layout
    /// UNSUPPORTED_VERSION that names our range), always with response header v0.
    fn handle_api_versions(
        &self,
        body: &[u8],
        corr: i32,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        out.put_i32(corr);
        let decoded = header::is_supported(cx.api_key, cx.version)
            .then(|| cx.read::<ApiVersionsRequest>(body))
            .transpose();
        match decoded {
            Err(e) => {
                log::warn!(
                    "[Broker {}] closing connection from {}: malformed ApiVersions v{}: {e}",
                    self.broker_id,
                    cx.conn.peer,
                    cx.version
                );
                return Action::Close;
            }
            Ok(Some(ApiVersionsRequest {
                client_software: Some((name, ver)),
            })) => {
                let _ = cx.conn.client_software.set(format!("{name} {ver}"));
            }
            Ok(_) => {}
        }
        cx.answer(out, &ApiVersionsResponse::for_version(cx.version));
        Action::Respond
    }
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
