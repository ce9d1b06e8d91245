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
use gregor::protocol::fetch::FetchRequest;
use gregor::protocol::group_admin::{self, DescribeGroupsRequest};
use gregor::protocol::group_membership::{GenerationMember, JoinGroupRequest};
use gregor::protocol::group_membership::{LeaveGroupRequest, SyncGroupRequest};
use gregor::protocol::group_offsets::{
    FindCoordinatorRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};
use gregor::protocol::header::is_flexible;
use gregor::protocol::init_producer_id::InitProducerIdRequest;
use gregor::protocol::metadata::MetadataRequest;
use gregor::protocol::offset_for_leader_epoch::OffsetForLeaderEpochRequest;
use gregor::protocol::offsets::ListOffsetsRequest;
use gregor::protocol::produce::{ProduceRequest, TopicSets, encode_request};
use gregor::protocol::{Reader, Writer};

/// gregor's decode then encode of one request body, and how many bytes were left after its
/// last field.
pub fn decode_and_reencode(key: i16, v: i16, body: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let mut r = Reader::new(body);
    r.set_flexible(is_flexible(key, v));
    let mut out = Vec::new();
    let e = |e| format!("{e}");
    match key {
        3 => MetadataRequest::decode_v(&mut r, v)
            .map_err(e)?
            .encode_v(&mut out, v),
        2 => ListOffsetsRequest::decode_v(&mut r, v)
            .map_err(e)?
            .encode_v(&mut out, v),
        12 => GenerationMember::decode_heartbeat(&mut r, v)
            .map_err(e)?
            .encode_heartbeat(&mut out, v),
        9 => OffsetFetchRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        10 => FindCoordinatorRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        11 => JoinGroupRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        8 => OffsetCommitRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        1 => FetchRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        14 => SyncGroupRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        13 => LeaveGroupRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        15 => DescribeGroupsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        16 => group_admin::ListGroupsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        47 => OffsetDeleteRequest::decode(&mut r)
            .map_err(e)?
            .encode(&mut out),
        42 => {
            let names = group_admin::decode_delete_groups_request(&mut r).map_err(e)?;
            group_admin::encode_delete_groups_request(&mut out, &names, v);
        }
        18 => {
            // The broker only reads this request; its fields are written back here.
            if let Some((name, version)) = ApiVersionsRequest::decode(&mut r, v)
                .map_err(e)?
                .client_software
            {
                out.put_str(true, &name);
                out.put_str(true, &version);
                out.put_tags(true);
            }
        }
        19 => CreateTopicsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        20 => DeleteTopicsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        21 => DeleteRecordsRequest::decode(&mut r)
            .map_err(e)?
            .encode(&mut out, v),
        23 => OffsetForLeaderEpochRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        37 => CreatePartitionsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        32 => DescribeConfigsRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        33 | 44 => {
            let incremental = key == 44;
            AlterConfigsRequest::decode(&mut r, incremental)
                .map_err(e)?
                .encode(&mut out, is_flexible(key, v));
        }
        60 => DescribeClusterRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        22 => InitProducerIdRequest::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        0 => {
            let req = ProduceRequest::decode(&mut r, v).map_err(e)?;
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
            encode_request(&mut out, v, req.acks, req.timeout_ms, &topics);
        }
        k => return Err(format!("no case for api {k}")),
    }
    Ok((out, r.remaining()))
}

/// gregor's decode then encode of one request body, which must end with its last field.
pub fn reencode(key: i16, v: i16, body: &[u8]) -> Result<Vec<u8>, String> {
    match decode_and_reencode(key, v, body)? {
        (out, 0) => Ok(out),
        (_, n) => Err(format!("{n} bytes after the last field")),
    }
}
