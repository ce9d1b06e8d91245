//! gregor's decoders (and encoders) of the requests of every client API, by key and version:
//! the schema tests compare what they make of requests from kafka-python's schema classes, and
//! `tests/client_requests.rs` what they make of requests real clients sent.

use gregor::protocol::admin_configs::AlterConfigsRequest;
use gregor::protocol::admin_describe::{DescribeClusterRequest, DescribeConfigsRequest};
use gregor::protocol::admin_topics::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
};
use gregor::protocol::api_versions::ApiVersionsRequest;
use gregor::protocol::delete_records::DeleteRecordsRequest;
use gregor::protocol::elect_leaders::ElectLeadersRequest;
use gregor::protocol::fetch::FetchRequest;
use gregor::protocol::group_admin::{self, DescribeGroupsRequest};
use gregor::protocol::group_membership::{HeartbeatRequest, JoinGroupRequest};
use gregor::protocol::group_membership::{LeaveGroupRequest, SyncGroupRequest};
use gregor::protocol::group_offsets::{
    FindCoordinatorRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};
use gregor::protocol::init_producer_id::InitProducerIdRequest;
use gregor::protocol::log_dirs::DescribeLogDirsRequest;
use gregor::protocol::metadata::MetadataRequest;
use gregor::protocol::offset_for_leader_epoch::OffsetForLeaderEpochRequest;
use gregor::protocol::offsets::ListOffsetsRequest;
use gregor::protocol::produce::{ProduceRequest, ProduceSets, TopicSets};
use gregor::protocol::reassignments::{
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest,
};
use gregor::protocol::{Decode, Encode, Out, Reader};

/// Reads a `T` and writes it again.
fn again<'a, T: Decode<'a> + Encode>(r: &mut Reader<'a>, out: &mut Out<'_>) -> Result<(), String> {
    T::decode(r).map_err(|e| e.to_string())?.encode(out);
    Ok(())
}

/// gregor's decode then encode of one request body, and how many bytes were left after its
/// last field.
pub fn decode_and_reencode(key: i16, v: i16, body: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let mut r = Reader::body(body, key, v);
    let mut buf = Vec::new();
    let out = &mut Out::body(&mut buf, key, v);
    let r = &mut r;
    match key {
        0 => {
            let req = ProduceRequest::decode(r).map_err(|e| e.to_string())?;
            let topics: Vec<TopicSets<'_>> = req
                .topics
                .iter()
                .map(|(t, ps)| {
                    let sets = ps
                        .iter()
                        .map(|p| (p.partition, &body[p.set.clone()]))
                        .collect();
                    (t.as_str(), sets)
                })
                .collect();
            let sets = ProduceSets {
                acks: req.acks,
                timeout_ms: req.timeout_ms,
                topics: &topics,
            };
            sets.encode(out);
        }
        1 => again::<FetchRequest>(r, out)?,
        2 => again::<ListOffsetsRequest>(r, out)?,
        3 => again::<MetadataRequest>(r, out)?,
        8 => again::<OffsetCommitRequest>(r, out)?,
        9 => again::<OffsetFetchRequest>(r, out)?,
        10 => again::<FindCoordinatorRequest>(r, out)?,
        11 => again::<JoinGroupRequest>(r, out)?,
        12 => again::<HeartbeatRequest>(r, out)?,
        13 => again::<LeaveGroupRequest>(r, out)?,
        14 => again::<SyncGroupRequest>(r, out)?,
        15 => again::<DescribeGroupsRequest>(r, out)?,
        16 => again::<group_admin::ListGroupsRequest>(r, out)?,
        18 => {
            // The broker only reads this request; its fields are written back here.
            let req = ApiVersionsRequest::decode(r).map_err(|e| e.to_string())?;
            if let Some((name, version)) = req.client_software {
                out.put_str(&name);
                out.put_str(&version);
                out.put_tags();
            }
        }
        19 => again::<CreateTopicsRequest>(r, out)?,
        20 => again::<DeleteTopicsRequest>(r, out)?,
        21 => again::<DeleteRecordsRequest>(r, out)?,
        22 => again::<InitProducerIdRequest>(r, out)?,
        23 => again::<OffsetForLeaderEpochRequest>(r, out)?,
        24 => again::<gregor::protocol::txn_requests::AddPartitionsToTxnRequest>(r, out)?,
        25 => again::<gregor::protocol::txn_requests::AddOffsetsToTxnRequest>(r, out)?,
        26 => again::<gregor::protocol::txn_requests::EndTxnRequest>(r, out)?,
        27 => again::<gregor::protocol::txn_markers::WriteTxnMarkersRequest>(r, out)?,
        28 => again::<gregor::protocol::txn_requests::TxnOffsetCommitRequest>(r, out)?,
        32 => again::<DescribeConfigsRequest>(r, out)?,
        33 | 44 => again::<AlterConfigsRequest>(r, out)?,
        35 => again::<DescribeLogDirsRequest>(r, out)?,
        37 => again::<CreatePartitionsRequest>(r, out)?,
        42 => again::<group_admin::DeleteGroupsRequest>(r, out)?,
        43 => again::<ElectLeadersRequest>(r, out)?,
        45 => again::<AlterPartitionReassignmentsRequest>(r, out)?,
        46 => again::<ListPartitionReassignmentsRequest>(r, out)?,
        47 => again::<OffsetDeleteRequest>(r, out)?,
        48 => again::<gregor::protocol::client_quotas::DescribeClientQuotasRequest>(r, out)?,
        49 => again::<gregor::protocol::client_quotas::AlterClientQuotasRequest>(r, out)?,
        17 => again::<gregor::protocol::sasl::SaslHandshakeRequest>(r, out)?,
        29 => again::<gregor::protocol::acls::DescribeAclsRequest>(r, out)?,
        30 => again::<gregor::protocol::acls::CreateAclsRequest>(r, out)?,
        31 => again::<gregor::protocol::acls::DeleteAclsRequest>(r, out)?,
        36 => again::<gregor::protocol::sasl::SaslAuthenticateRequest>(r, out)?,
        50 => again::<gregor::protocol::scram_credentials::DescribeUserScramCredentialsRequest>(
            r, out,
        )?,
        51 => {
            again::<gregor::protocol::scram_credentials::AlterUserScramCredentialsRequest>(r, out)?
        }
        60 => again::<DescribeClusterRequest>(r, out)?,
        61 => again::<gregor::protocol::describe_producers::DescribeProducersRequest>(r, out)?,
        65 => again::<gregor::protocol::txn_admin::DescribeTransactionsRequest>(r, out)?,
        66 => again::<gregor::protocol::txn_admin::ListTransactionsRequest>(r, out)?,
        k => return Err(format!("no case for api {k}")),
    }
    Ok((buf, r.remaining()))
}

/// gregor's decode then encode of one request body, which must end with its last field.
pub fn reencode(key: i16, v: i16, body: &[u8]) -> Result<Vec<u8>, String> {
    match decode_and_reencode(key, v, body)? {
        (out, 0) => Ok(out),
        (_, n) => Err(format!("{n} bytes after the last field")),
    }
}
