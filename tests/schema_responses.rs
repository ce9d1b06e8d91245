//! Response layouts against an encoder gregor did not write: kafka-python's protocol classes,
//! generated from Kafka's published JSON schemas, encode a response of every version gregor
//! serves of every client API (`tests/clients/schema_responses.py`). Each must decode with the
//! decoder gregor's own clients use, and encode back, with the encoder the broker answers
//! with, to the same bytes. The controller's inter-broker APIs (LeaderAndIsr, StopReplica,
//! UpdateMetadata, ControlledShutdown) keep the 0.8 layouts of `doc/protocol.md` and are not
//! Kafka's current ones, so they are not compared.

mod common;

use gregor::protocol::Reader;
use gregor::protocol::api_versions::ApiVersionsResponse;
use gregor::protocol::fetch::FetchResponse;
use gregor::protocol::group_admin;
use gregor::protocol::group_membership::{self as gm, JoinGroupResponse};
use gregor::protocol::group_membership::{LeaveGroupResponse, SyncGroupResponse};
use gregor::protocol::group_offsets::{
    self, FindCoordinatorResponse, OffsetCommitResponse, OffsetFetchResponse,
};
use gregor::protocol::header;
use gregor::protocol::init_producer_id::InitProducerIdResponse;
use gregor::protocol::metadata::MetadataResponse;
use gregor::protocol::offsets::ListOffsetsResponse;
use gregor::protocol::produce::ProduceResponse;
use gregor::protocol::{
    admin_configs, admin_describe, admin_topics, delete_records, offset_for_leader_epoch,
};

/// gregor's decode then encode of one response body.
fn reencode(key: i16, v: i16, body: &[u8]) -> Result<Vec<u8>, String> {
    let mut r = Reader::new(body);
    // ApiVersions sets its own encoding, from its error code (a v0-layout error answer).
    r.set_flexible(header::is_flexible(key, v));
    let mut out = Vec::new();
    let e = |e| format!("{e}");
    match key {
        0 => ProduceResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        1 => FetchResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        2 => ListOffsetsResponse::decode_v(&mut r, v)
            .map_err(e)?
            .encode_v(&mut out, v),
        3 => MetadataResponse::decode_v(&mut r, v)
            .map_err(e)?
            .encode_v(&mut out, v),
        8 => OffsetCommitResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        9 => OffsetFetchResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        10 => FindCoordinatorResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        11 => JoinGroupResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        12 => {
            let code = gm::decode_heartbeat_response(&mut r, v).map_err(e)?;
            gm::encode_heartbeat_response(&mut out, code, v);
        }
        13 => LeaveGroupResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        14 => SyncGroupResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        15 => {
            let groups = group_admin::decode_describe_groups(&mut r, v).map_err(e)?;
            group_admin::encode_describe_groups(&mut out, &groups, v);
        }
        16 => {
            let (code, groups) = group_admin::decode_list_groups(&mut r, v).map_err(e)?;
            group_admin::encode_list_groups(&mut out, code, &groups, v);
        }
        18 => ApiVersionsResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out),
        19 => {
            let topics = admin_topics::decode_create_topics_response(&mut r, v).map_err(e)?;
            admin_topics::encode_create_topics_response(&mut out, &topics, v);
        }
        20 => {
            let results = admin_topics::decode_delete_topics_response(&mut r, v).map_err(e)?;
            admin_topics::encode_delete_topics_response(&mut out, &results, v);
        }
        21 => {
            let topics = delete_records::decode_delete_records_response(&mut r).map_err(e)?;
            delete_records::encode_delete_records_response(&mut out, &topics, v);
        }
        23 => {
            let topics = offset_for_leader_epoch::decode_response(&mut r).map_err(e)?;
            offset_for_leader_epoch::encode_response(&mut out, &topics, v);
        }
        37 => {
            let results = admin_topics::decode_create_partitions_response(&mut r).map_err(e)?;
            admin_topics::encode_create_partitions_response(&mut out, &results, v);
        }
        32 => {
            let results = admin_describe::decode_describe_configs_response(&mut r, v).map_err(e)?;
            admin_describe::encode_describe_configs_response(&mut out, &results, v);
        }
        33 | 44 => {
            let results = admin_configs::decode_alter_configs_response(&mut r).map_err(e)?;
            admin_configs::encode_alter_configs_response(
                &mut out,
                &results,
                header::is_flexible(key, v),
            );
        }
        60 => admin_describe::DescribeClusterResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        22 => InitProducerIdResponse::decode(&mut r, v)
            .map_err(e)?
            .encode(&mut out, v),
        47 => {
            let (code, topics) = group_offsets::decode_offset_delete_response(&mut r).map_err(e)?;
            group_offsets::encode_offset_delete_response(&mut out, code, &topics);
        }
        42 => {
            let results = group_admin::decode_delete_groups(&mut r).map_err(e)?;
            group_admin::encode_delete_groups(&mut out, &results, v);
        }
        k => return Err(format!("no case for api {k}")),
    }
    r.finish().map_err(e)?;
    Ok(out)
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
