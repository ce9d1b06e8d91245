//! Request and response headers, and the api keys gregor serves.

use super::primitives::{DecodeResult, Reader, Writer};

pub const PRODUCE: i16 = 0;
pub const FETCH: i16 = 1;
pub const LIST_OFFSETS: i16 = 2;
pub const METADATA: i16 = 3;
pub const LEADER_AND_ISR: i16 = 4;
pub const STOP_REPLICA: i16 = 5;
pub const UPDATE_METADATA: i16 = 6;
pub const CONTROLLED_SHUTDOWN: i16 = 7;
pub const OFFSET_COMMIT: i16 = 8;
pub const OFFSET_FETCH: i16 = 9;
/// FindCoordinator; its v0 is 0.8's GroupCoordinator.
pub const FIND_COORDINATOR: i16 = 10;
pub const JOIN_GROUP: i16 = 11;
pub const HEARTBEAT: i16 = 12;
pub const LEAVE_GROUP: i16 = 13;
pub const SYNC_GROUP: i16 = 14;
pub const DESCRIBE_GROUPS: i16 = 15;
pub const LIST_GROUPS: i16 = 16;
pub const SASL_HANDSHAKE: i16 = 17;
pub const API_VERSIONS: i16 = 18;
pub const CREATE_TOPICS: i16 = 19;
pub const DELETE_TOPICS: i16 = 20;
pub const DELETE_RECORDS: i16 = 21;
pub const INIT_PRODUCER_ID: i16 = 22;
pub const OFFSET_FOR_LEADER_EPOCH: i16 = 23;
pub const ADD_PARTITIONS_TO_TXN: i16 = 24;
pub const ADD_OFFSETS_TO_TXN: i16 = 25;
pub const END_TXN: i16 = 26;
pub const WRITE_TXN_MARKERS: i16 = 27;
pub const TXN_OFFSET_COMMIT: i16 = 28;
pub const DESCRIBE_ACLS: i16 = 29;
pub const CREATE_ACLS: i16 = 30;
pub const DELETE_ACLS: i16 = 31;
pub const DESCRIBE_CONFIGS: i16 = 32;
pub const ALTER_CONFIGS: i16 = 33;
pub const DESCRIBE_LOG_DIRS: i16 = 35;
pub const SASL_AUTHENTICATE: i16 = 36;
pub const CREATE_PARTITIONS: i16 = 37;
pub const DELETE_GROUPS: i16 = 42;
pub const ELECT_LEADERS: i16 = 43;
pub const INCREMENTAL_ALTER_CONFIGS: i16 = 44;
pub const ALTER_PARTITION_REASSIGNMENTS: i16 = 45;
pub const LIST_PARTITION_REASSIGNMENTS: i16 = 46;
pub const OFFSET_DELETE: i16 = 47;
pub const DESCRIBE_CLIENT_QUOTAS: i16 = 48;
pub const ALTER_CLIENT_QUOTAS: i16 = 49;
pub const DESCRIBE_USER_SCRAM_CREDENTIALS: i16 = 50;
pub const ALTER_USER_SCRAM_CREDENTIALS: i16 = 51;
pub const DESCRIBE_CLUSTER: i16 = 60;
pub const DESCRIBE_PRODUCERS: i16 = 61;
pub const DESCRIBE_TRANSACTIONS: i16 = 65;
pub const LIST_TRANSACTIONS: i16 = 66;

/// One API this broker serves: its key, Kafka's name for it (`ApiKeys`, as request metrics
/// are labelled), the versions served, the first version that uses the flexible encoding
/// (KIP-482; `NEVER` when none served is), and whether only brokers send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Api {
    pub key: i16,
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
    pub first_flexible: i16,
    /// The requests only brokers send. They keep the 0.8 layouts (UpdateMetadata: Kafka's v3,
    /// for the listeners; `doc/protocol.md`), not Kafka's current ones, since only gregor's
    /// brokers send them; on a broker with a separate inter-broker listener they are refused
    /// on every other listener.
    pub inter_broker: bool,
    /// Where its answer says how long the client is throttled.
    pub throttle: ThrottleField,
}

/// Where an answer carries `throttle_time_ms` (KIP-219: the client waits that long before its
/// next request), from which version on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleField {
    Absent,
    /// The body's first field.
    First(i16),
    /// After a leading `error_code` (OffsetDelete).
    AfterErrorCode(i16),
    /// The body's last field, before its tag buffer (Produce).
    Last(i16),
}

/// `first_flexible` of an API whose served versions are all classic.
pub const NEVER: i16 = i16::MAX;

const fn api(key: i16, name: &'static str, min: i16, max: i16, first_flexible: i16) -> Api {
    Api {
        key,
        name,
        min,
        max,
        first_flexible,
        inter_broker: false,
        throttle: ThrottleField::First(0),
    }
}

impl Api {
    const fn throttle(self, throttle: ThrottleField) -> Api {
        Api { throttle, ..self }
    }
}

const fn from_brokers(key: i16, name: &'static str, min: i16, max: i16, flex: i16) -> Api {
    Api {
        inter_broker: true,
        throttle: ThrottleField::Absent,
        ..api(key, name, min, max, flex)
    }
}

/// Every API this broker serves, the one place that says so. ApiVersions answers with exactly
/// this list (decision B of the protocol sheet: advertise what we implement), the dispatcher
/// admits exactly these versions, and every codec reads and writes the encoding this table
/// gives (`is_flexible`). Minimums stay 0 (librdkafka before 2.12 turns features on only for
/// exact advertised versions) except where Kafka 4 itself no longer serves a version.
pub const SUPPORTED_APIS: &[Api] = &[
    api(PRODUCE, "Produce", 0, 9, 9).throttle(ThrottleField::Last(1)),
    api(FETCH, "Fetch", 0, 12, 12).throttle(ThrottleField::First(1)),
    api(LIST_OFFSETS, "ListOffsets", 0, 7, 6).throttle(ThrottleField::First(2)),
    api(METADATA, "Metadata", 0, 13, 9).throttle(ThrottleField::First(3)),
    from_brokers(LEADER_AND_ISR, "LeaderAndIsr", 0, 0, NEVER),
    from_brokers(STOP_REPLICA, "StopReplica", 0, 0, NEVER),
    from_brokers(UPDATE_METADATA, "UpdateMetadata", 3, 3, NEVER),
    from_brokers(CONTROLLED_SHUTDOWN, "ControlledShutdown", 0, 1, NEVER),
    api(OFFSET_COMMIT, "OffsetCommit", 0, 8, 8).throttle(ThrottleField::First(3)),
    api(OFFSET_FETCH, "OffsetFetch", 0, 7, 6).throttle(ThrottleField::First(3)),
    api(FIND_COORDINATOR, "FindCoordinator", 0, 4, 3).throttle(ThrottleField::First(1)),
    api(JOIN_GROUP, "JoinGroup", 0, 9, 6).throttle(ThrottleField::First(2)),
    api(HEARTBEAT, "Heartbeat", 0, 4, 4).throttle(ThrottleField::First(1)),
    api(LEAVE_GROUP, "LeaveGroup", 0, 5, 4).throttle(ThrottleField::First(1)),
    api(SYNC_GROUP, "SyncGroup", 0, 5, 4).throttle(ThrottleField::First(1)),
    api(DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 5).throttle(ThrottleField::First(1)),
    api(LIST_GROUPS, "ListGroups", 0, 5, 3).throttle(ThrottleField::First(1)),
    // Not throttled, nor the other requests a client sends before it is authenticated.
    api(SASL_HANDSHAKE, "SaslHandshake", 0, 1, NEVER).throttle(ThrottleField::Absent),
    // Not throttled: a client must learn the versions whatever its quota.
    api(API_VERSIONS, "ApiVersions", 0, 3, 3).throttle(ThrottleField::Absent),
    api(CREATE_TOPICS, "CreateTopics", 0, 7, 5).throttle(ThrottleField::First(2)),
    api(DELETE_TOPICS, "DeleteTopics", 0, 6, 4).throttle(ThrottleField::First(1)),
    api(DELETE_RECORDS, "DeleteRecords", 0, 2, 2),
    api(INIT_PRODUCER_ID, "InitProducerId", 0, 4, 2),
    api(OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 2, 4, 4).throttle(ThrottleField::First(2)),
    api(ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 3, 3),
    api(ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 3, 3),
    api(END_TXN, "EndTxn", 0, 3, 3),
    from_brokers(WRITE_TXN_MARKERS, "WriteTxnMarkers", 0, 1, 1),
    api(TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 3, 3),
    // v0 (no pattern type) is not served, as in Kafka 4.
    api(DESCRIBE_ACLS, "DescribeAcls", 1, 3, 2),
    api(CREATE_ACLS, "CreateAcls", 1, 3, 2),
    api(DELETE_ACLS, "DeleteAcls", 1, 3, 2),
    api(DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, 4),
    api(ALTER_CONFIGS, "AlterConfigs", 0, 2, 2),
    api(DESCRIBE_LOG_DIRS, "DescribeLogDirs", 1, 4, 2),
    api(SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, 2).throttle(ThrottleField::Absent),
    api(CREATE_PARTITIONS, "CreatePartitions", 0, 3, 2),
    api(DELETE_GROUPS, "DeleteGroups", 0, 2, 2),
    api(ELECT_LEADERS, "ElectLeaders", 0, 2, 2),
    api(
        INCREMENTAL_ALTER_CONFIGS,
        "IncrementalAlterConfigs",
        0,
        1,
        1,
    ),
    api(
        ALTER_PARTITION_REASSIGNMENTS,
        "AlterPartitionReassignments",
        0,
        1,
        0,
    ),
    api(
        LIST_PARTITION_REASSIGNMENTS,
        "ListPartitionReassignments",
        0,
        0,
        0,
    ),
    api(OFFSET_DELETE, "OffsetDelete", 0, 0, NEVER).throttle(ThrottleField::AfterErrorCode(0)),
    api(DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, 1),
    api(ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, 1),
    api(
        DESCRIBE_USER_SCRAM_CREDENTIALS,
        "DescribeUserScramCredentials",
        0,
        0,
        0,
    ),
    api(
        ALTER_USER_SCRAM_CREDENTIALS,
        "AlterUserScramCredentials",
        0,
        0,
        0,
    ),
    api(DESCRIBE_CLUSTER, "DescribeCluster", 0, 1, 0),
    api(DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0, 0),
    api(DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0, 0),
    api(LIST_TRANSACTIONS, "ListTransactions", 0, 2, 0),
];

/// Kafka's name of an API, as its request metrics are labelled.
pub fn api_name(key: i16) -> Option<&'static str> {
    lookup(key).map(|a| a.name)
}

/// Whether only brokers send this API (`Api::inter_broker`).
pub fn is_inter_broker(key: i16) -> bool {
    lookup(key).is_some_and(|a| a.inter_broker)
}

fn lookup(api_key: i16) -> Option<&'static Api> {
    SUPPORTED_APIS.iter().find(|a| a.key == api_key)
}

/// The oldest version of `api_key` served (0 for a key not served).
pub fn oldest_version(api_key: i16) -> i16 {
    lookup(api_key).map_or(0, |a| a.min)
}

/// Where in an answer's body (`body_len` bytes, `flexible` or not) its `throttle_time_ms` is,
/// if the answer at this version has one.
pub fn throttle_offset(api_key: i16, version: i16, body_len: usize) -> Option<usize> {
    let tags = usize::from(is_flexible(api_key, version));
    match lookup(api_key)?.throttle {
        ThrottleField::First(v) if version >= v => Some(0),
        ThrottleField::AfterErrorCode(v) if version >= v => Some(2),
        ThrottleField::Last(v) if version >= v => body_len.checked_sub(4 + tags),
        _ => None,
    }
}

/// Whether (key, version) is in `SUPPORTED_APIS`.
pub fn is_supported(api_key: i16, api_version: i16) -> bool {
    lookup(api_key).is_some_and(|a| (a.min..=a.max).contains(&api_version))
}

/// Whether a request at (key, version) uses the flexible encoding: header v2 and a flexible
/// body, answered with response header v1 (except ApiVersions, see `response_is_flexible`).
pub fn is_flexible(api_key: i16, api_version: i16) -> bool {
    lookup(api_key).is_some_and(|a| api_version >= a.first_flexible)
}

/// Whether the response header carries a tag buffer. ApiVersions is answered with header v0
/// at every version, so that a client can read the answer before it knows our versions.
pub fn response_is_flexible(api_key: i16, api_version: i16) -> bool {
    api_key != API_VERSIONS && is_flexible(api_key, api_version)
}

/// The request header: v1 in modern numbering (the "v0" header of the 0.8 protocol), or v2 —
/// the same fields and a tag buffer — for a flexible version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader<'a> {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<&'a str>,
}

impl<'a> RequestHeader<'a> {
    /// Reads the header; for a flexible version the reader is left in flexible mode for the
    /// body. For an ApiVersions request above what we serve, the rest of the frame is not
    /// parsed: the answer is an UNSUPPORTED_VERSION that does not depend on the body.
    pub fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let api_key = r.i16("api_key")?;
        let api_version = r.i16("api_version")?;
        let correlation_id = r.i32("correlation_id")?;
        // ControlledShutdown v0 is the one request whose header has no client id.
        let client_id = if api_key == CONTROLLED_SHUTDOWN && api_version == 0 {
            None
        } else {
            r.nullable_string("client_id")?
        };
        // The client id stays a classic NULLABLE_STRING in header v2; the tags follow it.
        if is_flexible(api_key, api_version) && is_supported(api_key, api_version) {
            r.set_flexible(true);
            r.tags()?;
        }
        Ok(RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_i16(self.api_key);
        out.put_i16(self.api_version);
        out.put_i32(self.correlation_id);
        out.put_nullable_string(self.client_id);
        if is_flexible(self.api_key, self.api_version) {
            out.put_i8(0); // an empty tag buffer
        }
    }
}

/// Reads just the api key and version of a frame, for routing before the full parse.
pub fn peek_key_version(frame: &[u8]) -> Option<(i16, i16)> {
    let mut r = Reader::new(frame);
    Some((r.i16("api_key").ok()?, r.i16("api_version").ok()?))
}
