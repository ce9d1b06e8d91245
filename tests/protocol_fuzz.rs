//! Property tests: no decoder panics on random or mutated bytes, and every decoder rejects
//! (rather than misreads) a frame cut short.

use gregor::protocol::admin_configs::AlterConfigsRequest;
use gregor::protocol::admin_describe::{self, DescribeClusterRequest, DescribeConfigsRequest};
use gregor::protocol::admin_topics::{
    self, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
};
use gregor::protocol::api_versions::ApiVersionsResponse;
use gregor::protocol::controller::*;
use gregor::protocol::fetch::*;
use gregor::protocol::header::RequestHeader;
use gregor::protocol::message;
use gregor::protocol::metadata::*;
use gregor::protocol::offsets::*;
use gregor::protocol::produce::*;
use gregor::protocol::record_batch::{self, BatchBuilder, NewRecord};
use gregor::protocol::records;
use gregor::protocol::{BrokerInfo, Encode, Reader, decode_all};
use proptest::prelude::*;

/// Runs every decoder over `bytes`; the results do not matter, only that none panics.
fn decode_everything(bytes: &[u8]) {
    decode_data_apis(bytes);
    let _ = decode_all::<LeaderAndIsrRequest>(bytes);
    let _ = decode_all::<StopReplicaRequest>(bytes);
    let _ = decode_all::<UpdateMetadataRequest>(bytes);
    let _ = decode_all::<PartitionErrorsResponse>(bytes);
    let _ = decode_all::<ErrorOnlyResponse>(bytes);
    decode_coordinator_messages(bytes);
    let _ = RequestHeader::decode(&mut Reader::new(bytes));
    decode_group_apis(bytes);
    for v in 0..3 {
        let _ = ApiVersionsResponse::decode(&mut Reader::new(bytes), v);
    }
    for m in message::iter(bytes) {
        let _ = m;
    }
    let _ = message::validate_for_append(bytes, 1 << 20);
    let _ = record_batch::validate_for_append(bytes, 1 << 20);
    let _ = records::decode_deep(bytes);
    let _ = records::max_timestamp_of(bytes);
    let mut out = Vec::new();
    let _ = records::down_convert(bytes, 1, 0, 1 << 20, &mut out);
}

/// The spec consumer coordinator's messages, every one reachable from the network (a broker
/// reads Register and Consult; a consumer the coordinator's Ping, Stop and Start; the
/// coordinator its members' answers).
fn decode_coordinator_messages(bytes: &[u8]) {
    use gregor::protocol::coordinator::*;
    let _ = decode_all::<Empty>(bytes);
    let _ = decode_all::<ConsultResponse>(bytes);
    let _ = decode_all::<Subscription>(bytes);
    let _ = decode_all::<RegisterRequest>(bytes);
    let _ = decode_all::<RegisterResponse>(bytes);
    let _ = decode_all::<ErrorResponse>(bytes);
    let _ = decode_all::<PingRequest>(bytes);
    let _ = decode_all::<PingResponse>(bytes);
    let _ = decode_all::<StopResponse>(bytes);
    let _ = decode_all::<StartRequest>(bytes);
}

/// The data-path decoders at every version served, in the encoding of each version.
fn decode_data_apis(bytes: &[u8]) {
    let r = |flex| {
        let mut r = Reader::new(bytes);
        r.set_flexible(flex);
        r
    };
    for v in 0..=12 {
        let _ = MetadataRequest::decode_v(&mut r(v >= 9), v);
        let _ = MetadataResponse::decode_v(&mut r(v >= 9), v);
        let _ = FetchRequest::decode(&mut r(v >= 12), v);
        let _ = FetchResponse::decode(&mut r(v >= 12), v);
    }
    for v in 0..=9 {
        let _ = ProduceRequest::decode(&mut r(v >= 9), v);
        let _ = ProduceResponse::decode(&mut r(v >= 9), v);
    }
    for v in 0..=7 {
        let _ = ListOffsetsRequest::decode_v(&mut r(v >= 6), v);
        let _ = ListOffsetsResponse::decode_v(&mut r(v >= 6), v);
    }
    let _ = gregor::protocol::api_versions::ApiVersionsRequest::decode(&mut r(true), 3);
}

/// Every decoder of the group and offset APIs, at every version served.
fn decode_group_apis(bytes: &[u8]) {
    for flex in [false, true] {
        decode_group_apis_in(bytes, flex);
    }
}

fn decode_group_apis_in(bytes: &[u8], flex: bool) {
    use gregor::protocol::group_admin::*;
    use gregor::protocol::group_membership::*;
    use gregor::protocol::group_offsets::*;
    let r = || {
        let mut r = Reader::new(bytes);
        r.set_flexible(flex);
        r
    };
    for v in 0..=9 {
        let _ = OffsetCommitRequest::decode(&mut r(), v);
        let _ = OffsetCommitResponse::decode(&mut r(), v);
        let _ = OffsetFetchRequest::decode(&mut r(), v);
        let _ = OffsetFetchResponse::decode(&mut r(), v);
        let _ = FindCoordinatorRequest::decode(&mut r(), v);
        let _ = FindCoordinatorResponse::decode(&mut r(), v);
        let _ = JoinGroupRequest::decode(&mut r(), v);
        let _ = JoinGroupResponse::decode(&mut r(), v);
        let _ = SyncGroupRequest::decode(&mut r(), v);
        let _ = SyncGroupResponse::decode(&mut r(), v);
        let _ = GenerationMember::decode(&mut r(), v);
        let _ = LeaveGroupRequest::decode(&mut r(), v);
        let _ = LeaveGroupResponse::decode(&mut r(), v);
        let _ = DescribeGroupsRequest::decode(&mut r(), v);
        let _ = decode_describe_groups(&mut r(), v);
        let _ = decode_list_groups(&mut r(), v);
        let _ = CreateTopicsRequest::decode(&mut r(), v);
        let _ = admin_topics::decode_create_topics_response(&mut r(), v);
        let _ = DeleteTopicsRequest::decode(&mut r(), v);
        let _ = admin_topics::decode_delete_topics_response(&mut r(), v);
        let _ = CreatePartitionsRequest::decode(&mut r(), v);
        let _ = DescribeConfigsRequest::decode(&mut r(), v);
        let _ = admin_describe::decode_describe_configs_response(&mut r(), v);
        let _ = DescribeClusterRequest::decode(&mut r(), v);
        let _ = AlterConfigsRequest::decode(&mut r(), v % 2 == 0);
        let _ = admin_describe::DescribeClusterResponse::decode(&mut r(), v);
    }
    let _ = admin_topics::decode_create_partitions_response(&mut r());
    let _ = gregor::protocol::admin_configs::decode_alter_configs_response(&mut r());
    let _ = gregor::protocol::delete_records::DeleteRecordsRequest::decode(&mut r());
    let _ = gregor::protocol::delete_records::decode_delete_records_response(&mut r());
    let _ = decode_delete_groups_request(&mut r());
    let _ = decode_delete_groups(&mut r());
    let _ = subscription_topics(bytes);
    let _ = decode_assignment(bytes);
}

/// Valid encodings of every request type, to be mutated.
fn samples() -> Vec<Vec<u8>> {
    let broker = BrokerInfo {
        id: 1,
        host: "127.0.0.1".into(),
        port: 9092,
    };
    let state = TopicPartitionState {
        topic: "t".into(),
        partition: 0,
        state: PartitionState {
            controller_epoch: 1,
            leader: 1,
            leader_epoch: 0,
            isr: vec![1],
            zk_version: 0,
            replicas: vec![1],
        },
    };
    let mut set = Vec::new();
    message::encode_entry(&mut set, 0, 0, -1, None, Some(b"hello"));
    message::encode_entry(&mut set, 1, 1, 5, Some(b"k"), Some(b"world"));
    let mut out = Vec::new();
    let mut push = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = Vec::new();
        f(&mut b);
        out.push(b);
    };
    let mut batch = BatchBuilder::new();
    for v in [&b"a"[..], b"bb"] {
        batch.push(&NewRecord {
            timestamp: 1_700_000_000_000,
            key: Some(b"k"),
            value: Some(v),
            headers: &[("h", Some(b"v"))],
        });
    }
    let batch = batch.finish(0).unwrap();
    for v in [0, 9, 12] {
        push(&|b| {
            MetadataRequest {
                topics: Some(vec!["a".into()]),
                allow_auto_topic_creation: true,
            }
            .encode_v(b, v)
        });
    }
    push(&|b| encode_request(b, 0, 1, 1000, &[("t", vec![(0, &set[..])])]));
    push(&|b| encode_request(b, 9, 1, 1000, &[("t", vec![(0, &batch[..])])]));
    push(&|b| b.extend_from_slice(&batch));
    for v in [0, 4, 12] {
        push(&|b| {
            FetchRequest::new(
                -1,
                100,
                1,
                vec![("t".into(), vec![FetchPartition::new(0, 0, 100)])],
            )
            .encode(b, v)
        });
    }
    push(&|b| {
        ListOffsetsRequest {
            replica_id: -1,
            topics: vec![(
                "t".into(),
                vec![OffsetsPartition {
                    partition: 0,
                    time: -1,
                    max_num_offsets: 1,
                    current_leader_epoch: -1,
                }],
            )],
        }
        .encode(b)
    });
    push(&|b| {
        LeaderAndIsrRequest {
            controller_id: 1,
            controller_epoch: 1,
            partition_states: vec![state.clone()],
            live_leaders: vec![broker.clone()],
            init: false,
            broker_epoch: 7,
        }
        .encode(b)
    });
    push(&|b| {
        StopReplicaRequest {
            controller_id: 1,
            controller_epoch: 1,
            delete_partitions: true,
            partitions: vec![gregor::protocol::TopicPartition::new("t", 0)],
        }
        .encode(b)
    });
    push(&|b| {
        UpdateMetadataRequest {
            controller_id: 1,
            controller_epoch: 1,
            partition_states: vec![state.clone()],
            live_brokers: vec![gregor::protocol::BrokerEndPoints {
                id: broker.id,
                endpoints: vec![gregor::protocol::EndPoint {
                    listener: "PLAINTEXT".into(),
                    host: broker.host.clone(),
                    port: broker.port,
                }],
            }],
        }
        .encode(b)
    });
    out.push(set);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        decode_everything(&bytes);
    }

    #[test]
    fn mutated_valid_frames_never_panic(which in 0usize..8, flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let mut b = samples()[which].clone();
        for (at, v) in flips {
            let n = b.len();
            b[at % n] = v;
        }
        let cut = cut % (b.len() + 1);
        decode_everything(&b[..cut]);
        decode_everything(&b);
    }
}

#[test]
fn a_corrupt_crc_in_a_produced_set_is_caught() {
    let mut set = Vec::new();
    message::encode_entry(&mut set, 0, 0, -1, None, Some(b"hello"));
    message::encode_entry(&mut set, 1, 1, 5, Some(b"k"), Some(b"world"));
    let n = set.len();
    set[n - 1] ^= 1;
    assert_eq!(
        message::validate_for_append(&set, 1 << 20),
        Err(message::SetError::Corrupt(message::MessageError::BadCrc))
    );
}
