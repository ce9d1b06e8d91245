//! Response layouts against an encoder gregor did not write: kafka-python's protocol classes,
//! generated from Kafka's published JSON schemas, encode a response of every version gregor
//! serves of every client API (`tests/clients/schema_responses.py`). Each must decode with the
//! decoder gregor's own clients use, and encode back, with the encoder the broker answers
//! with, to the same bytes. The controller's inter-broker APIs (LeaderAndIsr, StopReplica,
//! UpdateMetadata, ControlledShutdown) keep the 0.8 layouts of `doc/protocol.md` and are not
//! Kafka's current ones, so they are not compared.

mod common;

use gregor::protocol::admin_configs::AlterConfigsResponse;
use gregor::protocol::admin_describe::{DescribeClusterResponse, DescribeConfigsResponse};
use gregor::protocol::admin_topics::{
    CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse,
};
use gregor::protocol::api_versions::ApiVersionsResponse;
use gregor::protocol::delete_records::DeleteRecordsResponse;
use gregor::protocol::elect_leaders::ElectLeadersResponse;
use gregor::protocol::fetch::FetchResponse;
use gregor::protocol::group_admin::{
    DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse,
};
use gregor::protocol::group_membership::{
    HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse,
};
use gregor::protocol::group_offsets::{
    FindCoordinatorResponse, OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse,
};
use gregor::protocol::init_producer_id::InitProducerIdResponse;
use gregor::protocol::log_dirs::DescribeLogDirsResponse;
use gregor::protocol::metadata::MetadataResponse;
use gregor::protocol::offset_for_leader_epoch::OffsetForLeaderEpochResponse;
use gregor::protocol::offsets::ListOffsetsResponse;
use gregor::protocol::produce::ProduceResponse;
use gregor::protocol::reassignments::{
    AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse,
};
use gregor::protocol::{Decode, Encode, decode_body, encode_body};

/// Decodes a whole `T` of `key` at `v` and encodes it again.
fn again<T: for<'a> Decode<'a> + Encode>(key: i16, v: i16, body: &[u8]) -> Result<Vec<u8>, String> {
    let x: T = decode_body(body, key, v).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    encode_body(&x, &mut out, key, v);
    Ok(out)
}

/// gregor's decode then encode of one response body.
fn reencode(key: i16, v: i16, body: &[u8]) -> Result<Vec<u8>, String> {
    match key {
        0 => again::<ProduceResponse>(key, v, body),
        1 => again::<FetchResponse>(key, v, body),
        2 => again::<ListOffsetsResponse>(key, v, body),
        3 => again::<MetadataResponse>(key, v, body),
        8 => again::<OffsetCommitResponse>(key, v, body),
        9 => again::<OffsetFetchResponse>(key, v, body),
        10 => again::<FindCoordinatorResponse>(key, v, body),
        11 => again::<JoinGroupResponse>(key, v, body),
        12 => again::<HeartbeatResponse>(key, v, body),
        13 => again::<LeaveGroupResponse>(key, v, body),
        14 => again::<SyncGroupResponse>(key, v, body),
        15 => again::<DescribeGroupsResponse>(key, v, body),
        16 => again::<ListGroupsResponse>(key, v, body),
        // ApiVersions sets its own encoding, from its error code (a v0-layout error answer).
        18 => again::<ApiVersionsResponse>(key, v, body),
        19 => again::<CreateTopicsResponse>(key, v, body),
        20 => again::<DeleteTopicsResponse>(key, v, body),
        21 => again::<DeleteRecordsResponse>(key, v, body),
        22 => again::<InitProducerIdResponse>(key, v, body),
        23 => again::<OffsetForLeaderEpochResponse>(key, v, body),
        24 | 28 => {
            again::<gregor::protocol::txn_requests::AddPartitionsToTxnResponse>(key, v, body)
        }
        25 | 26 => again::<gregor::protocol::txn_requests::TxnErrorResponse>(key, v, body),
        32 => again::<DescribeConfigsResponse>(key, v, body),
        33 | 44 => again::<AlterConfigsResponse>(key, v, body),
        35 => again::<DescribeLogDirsResponse>(key, v, body),
        37 => again::<CreatePartitionsResponse>(key, v, body),
        42 => again::<DeleteGroupsResponse>(key, v, body),
        43 => again::<ElectLeadersResponse>(key, v, body),
        45 => again::<AlterPartitionReassignmentsResponse>(key, v, body),
        46 => again::<ListPartitionReassignmentsResponse>(key, v, body),
        47 => again::<OffsetDeleteResponse>(key, v, body),
        48 => again::<gregor::protocol::client_quotas::DescribeClientQuotasResponse>(key, v, body),
        49 => again::<gregor::protocol::client_quotas::AlterClientQuotasResponse>(key, v, body),
        17 => again::<gregor::protocol::sasl::SaslHandshakeResponse>(key, v, body),
        29 => again::<gregor::protocol::acls::DescribeAclsResponse>(key, v, body),
        30 => again::<gregor::protocol::acls::CreateAclsResponse>(key, v, body),
        31 => again::<gregor::protocol::acls::DeleteAclsResponse>(key, v, body),
        36 => again::<gregor::protocol::sasl::SaslAuthenticateResponse>(key, v, body),
        50 => again::<gregor::protocol::scram_credentials::DescribeUserScramCredentialsResponse>(
            key, v, body,
        ),
        51 => again::<gregor::protocol::scram_credentials::AlterUserScramCredentialsResponse>(
            key, v, body,
        ),
        60 => again::<DescribeClusterResponse>(key, v, body),
        61 => {
            again::<gregor::protocol::describe_producers::DescribeProducersResponse>(key, v, body)
        }
        65 => again::<gregor::protocol::txn_admin::DescribeTransactionsResponse>(key, v, body),
        66 => again::<gregor::protocol::txn_admin::ListTransactionsResponse>(key, v, body),
        k => Err(format!("no case for api {k}")),
    }
}

#[test]
fn responses_match_the_published_schemas_byte_for_byte() {
    common::schema::check_against_schemas(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/schema_responses.py"
        ),
        reencode,
    );
}
