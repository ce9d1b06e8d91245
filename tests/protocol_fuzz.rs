//! Property tests: no decoder panics on random or mutated bytes, and every decoder rejects
//! (rather than misreads) a frame cut short.

use gregor::protocol::controller::*;
use gregor::protocol::fetch::*;
use gregor::protocol::header::{self, RequestHeader, SUPPORTED_APIS};
use gregor::protocol::message;
use gregor::protocol::metadata::*;
use gregor::protocol::offsets::*;
use gregor::protocol::produce::*;
use gregor::protocol::record_batch::{self, BatchBuilder, NewRecord};
use gregor::protocol::records;
use gregor::protocol::{BrokerInfo, Decode, Encode, Out, Reader, decode_classic, encode_body};
use proptest::prelude::*;

/// Runs every decoder over `bytes`; the results do not matter, only that none panics.
fn decode_everything(bytes: &[u8]) {
    for api in SUPPORTED_APIS {
        for v in api.min..=api.max {
            decode_request_and_response(bytes, api.key, v);
        }
    }
    decode_coordinator_messages(bytes);
    let _ = RequestHeader::decode(&mut Reader::new(bytes));
    for m in message::iter(bytes) {
        let _ = m;
    }
    let _ = message::validate_for_append(bytes, 1 << 20);
    let _ = record_batch::validate_for_append(bytes, 1 << 20);
    let _ = records::decode_deep(bytes);
    let _ = records::max_timestamp_of(bytes);
    let mut out = Vec::new();
    let _ = records::down_convert(bytes, 1, 0, 1 << 20, &mut out);
    let _ = gregor::protocol::group_admin::subscription_topics(bytes);
    let _ = gregor::protocol::group_admin::decode_assignment(bytes);
}

/// The spec consumer coordinator's messages, every one reachable from the network (a broker
/// reads Register and Consult; a consumer the coordinator's Ping, Stop and Start; the
/// coordinator its members' answers).
fn decode_coordinator_messages(bytes: &[u8]) {
    use gregor::protocol::coordinator::*;
    let _ = decode_classic::<Empty>(bytes);
    let _ = decode_classic::<ConsultResponse>(bytes);
    let _ = decode_classic::<Subscription>(bytes);
    let _ = decode_classic::<RegisterRequest>(bytes);
    let _ = decode_classic::<RegisterResponse>(bytes);
    let _ = decode_classic::<ErrorResponse>(bytes);
    let _ = decode_classic::<PingRequest>(bytes);
    let _ = decode_classic::<PingResponse>(bytes);
    let _ = decode_classic::<StopResponse>(bytes);
    let _ = decode_classic::<StartRequest>(bytes);
}

/// Reads `bytes` as a `T` of `key` at `v`, in the encoding the API table gives `v`.
fn dec<'a, T: Decode<'a>>(bytes: &'a [u8], key: i16, v: i16) {
    let _ = T::decode(&mut Reader::body(bytes, key, v));
}

/// The request and the response decoder of `key` at version `v`.
fn decode_request_and_response(b: &[u8], key: i16, v: i16) {
    use gregor::protocol::admin_configs::*;
    use gregor::protocol::admin_describe::*;
    use gregor::protocol::admin_topics::*;
    use gregor::protocol::api_versions::*;
    use gregor::protocol::delete_records::*;
    use gregor::protocol::group_admin::*;
    use gregor::protocol::group_membership::*;
    use gregor::protocol::group_offsets::*;
    use gregor::protocol::init_producer_id::*;
    use gregor::protocol::offset_for_leader_epoch::*;
    match key {
        header::PRODUCE => (
            dec::<ProduceRequest>(b, key, v),
            dec::<ProduceResponse>(b, key, v),
        ),
        header::FETCH => (
            dec::<FetchRequest>(b, key, v),
            dec::<FetchResponse>(b, key, v),
        ),
        header::LIST_OFFSETS => (
            dec::<ListOffsetsRequest>(b, key, v),
            dec::<ListOffsetsResponse>(b, key, v),
        ),
        header::METADATA => (
            dec::<MetadataRequest>(b, key, v),
            dec::<MetadataResponse>(b, key, v),
        ),
        header::LEADER_AND_ISR => (
            dec::<LeaderAndIsrRequest>(b, key, v),
            dec::<PartitionErrorsResponse>(b, key, v),
        ),
        header::STOP_REPLICA => (
            dec::<StopReplicaRequest>(b, key, v),
            dec::<PartitionErrorsResponse>(b, key, v),
        ),
        header::UPDATE_METADATA => (
            dec::<UpdateMetadataRequest>(b, key, v),
            dec::<ErrorOnlyResponse>(b, key, v),
        ),
        header::CONTROLLED_SHUTDOWN => (
            dec::<ControlledShutdownRequest>(b, key, v),
            dec::<ControlledShutdownResponse>(b, key, v),
        ),
        header::OFFSET_COMMIT => (
            dec::<OffsetCommitRequest>(b, key, v),
            dec::<OffsetCommitResponse>(b, key, v),
        ),
        header::OFFSET_FETCH => (
            dec::<OffsetFetchRequest>(b, key, v),
            dec::<OffsetFetchResponse>(b, key, v),
        ),
        header::FIND_COORDINATOR => (
            dec::<FindCoordinatorRequest>(b, key, v),
            dec::<FindCoordinatorResponse>(b, key, v),
        ),
        header::JOIN_GROUP => (
            dec::<JoinGroupRequest>(b, key, v),
            dec::<JoinGroupResponse>(b, key, v),
        ),
        header::HEARTBEAT => (
            dec::<HeartbeatRequest>(b, key, v),
            dec::<HeartbeatResponse>(b, key, v),
        ),
        header::LEAVE_GROUP => (
            dec::<LeaveGroupRequest>(b, key, v),
            dec::<LeaveGroupResponse>(b, key, v),
        ),
        header::SYNC_GROUP => (
            dec::<SyncGroupRequest>(b, key, v),
            dec::<SyncGroupResponse>(b, key, v),
        ),
        header::DESCRIBE_GROUPS => (
            dec::<DescribeGroupsRequest>(b, key, v),
            dec::<DescribeGroupsResponse>(b, key, v),
        ),
        header::LIST_GROUPS => (
            dec::<ListGroupsRequest>(b, key, v),
            dec::<ListGroupsResponse>(b, key, v),
        ),
        header::API_VERSIONS => (
            dec::<ApiVersionsRequest>(b, key, v),
            dec::<ApiVersionsResponse>(b, key, v),
        ),
        header::CREATE_TOPICS => (
            dec::<CreateTopicsRequest>(b, key, v),
            dec::<CreateTopicsResponse>(b, key, v),
        ),
        header::DELETE_TOPICS => (
            dec::<DeleteTopicsRequest>(b, key, v),
            dec::<DeleteTopicsResponse>(b, key, v),
        ),
        header::DELETE_RECORDS => (
            dec::<DeleteRecordsRequest>(b, key, v),
            dec::<DeleteRecordsResponse>(b, key, v),
        ),
        header::INIT_PRODUCER_ID => (
            dec::<InitProducerIdRequest>(b, key, v),
            dec::<InitProducerIdResponse>(b, key, v),
        ),
        header::OFFSET_FOR_LEADER_EPOCH => (
            dec::<OffsetForLeaderEpochRequest>(b, key, v),
            dec::<OffsetForLeaderEpochResponse>(b, key, v),
        ),
        header::DESCRIBE_CONFIGS => (
            dec::<DescribeConfigsRequest>(b, key, v),
            dec::<DescribeConfigsResponse>(b, key, v),
        ),
        header::ALTER_CONFIGS | header::INCREMENTAL_ALTER_CONFIGS => (
            dec::<AlterConfigsRequest>(b, key, v),
            dec::<AlterConfigsResponse>(b, key, v),
        ),
        header::CREATE_PARTITIONS => (
            dec::<CreatePartitionsRequest>(b, key, v),
            dec::<CreatePartitionsResponse>(b, key, v),
        ),
        header::ELECT_LEADERS => (
            dec::<gregor::protocol::elect_leaders::ElectLeadersRequest>(b, key, v),
            dec::<gregor::protocol::elect_leaders::ElectLeadersResponse>(b, key, v),
        ),
        header::ALTER_PARTITION_REASSIGNMENTS => (
            dec::<gregor::protocol::reassignments::AlterPartitionReassignmentsRequest>(b, key, v),
            dec::<gregor::protocol::reassignments::AlterPartitionReassignmentsResponse>(b, key, v),
        ),
        header::LIST_PARTITION_REASSIGNMENTS => (
            dec::<gregor::protocol::reassignments::ListPartitionReassignmentsRequest>(b, key, v),
            dec::<gregor::protocol::reassignments::ListPartitionReassignmentsResponse>(b, key, v),
        ),
        header::DESCRIBE_LOG_DIRS => (
            dec::<gregor::protocol::log_dirs::DescribeLogDirsRequest>(b, key, v),
            dec::<gregor::protocol::log_dirs::DescribeLogDirsResponse>(b, key, v),
        ),
        header::DELETE_GROUPS => (
            dec::<DeleteGroupsRequest>(b, key, v),
            dec::<DeleteGroupsResponse>(b, key, v),
        ),
        header::OFFSET_DELETE => (
            dec::<OffsetDeleteRequest>(b, key, v),
            dec::<OffsetDeleteResponse>(b, key, v),
        ),
        header::DESCRIBE_CLUSTER => (
            dec::<DescribeClusterRequest>(b, key, v),
            dec::<DescribeClusterResponse>(b, key, v),
        ),
        header::DESCRIBE_CLIENT_QUOTAS => (
            dec::<gregor::protocol::client_quotas::DescribeClientQuotasRequest>(b, key, v),
            dec::<gregor::protocol::client_quotas::DescribeClientQuotasResponse>(b, key, v),
        ),
        header::ALTER_CLIENT_QUOTAS => (
            dec::<gregor::protocol::client_quotas::AlterClientQuotasRequest>(b, key, v),
            dec::<gregor::protocol::client_quotas::AlterClientQuotasResponse>(b, key, v),
        ),
        header::DESCRIBE_ACLS => (
            dec::<gregor::protocol::acls::DescribeAclsRequest>(b, key, v),
            dec::<gregor::protocol::acls::DescribeAclsResponse>(b, key, v),
        ),
        header::CREATE_ACLS => (
            dec::<gregor::protocol::acls::CreateAclsRequest>(b, key, v),
            dec::<gregor::protocol::acls::CreateAclsResponse>(b, key, v),
        ),
        header::DELETE_ACLS => (
            dec::<gregor::protocol::acls::DeleteAclsRequest>(b, key, v),
            dec::<gregor::protocol::acls::DeleteAclsResponse>(b, key, v),
        ),
        header::SASL_HANDSHAKE => (
            dec::<gregor::protocol::sasl::SaslHandshakeRequest>(b, key, v),
            dec::<gregor::protocol::sasl::SaslHandshakeResponse>(b, key, v),
        ),
        header::SASL_AUTHENTICATE => (
            dec::<gregor::protocol::sasl::SaslAuthenticateRequest>(b, key, v),
            dec::<gregor::protocol::sasl::SaslAuthenticateResponse>(b, key, v),
        ),
        header::DESCRIBE_USER_SCRAM_CREDENTIALS => (
            dec::<gregor::protocol::scram_credentials::DescribeUserScramCredentialsRequest>(
                b, key, v,
            ),
            dec::<gregor::protocol::scram_credentials::DescribeUserScramCredentialsResponse>(
                b, key, v,
            ),
        ),
        header::ALTER_USER_SCRAM_CREDENTIALS => (
            dec::<gregor::protocol::scram_credentials::AlterUserScramCredentialsRequest>(b, key, v),
            dec::<gregor::protocol::scram_credentials::AlterUserScramCredentialsResponse>(
                b, key, v,
            ),
        ),
        header::DESCRIBE_PRODUCERS => (
            dec::<gregor::protocol::describe_producers::DescribeProducersRequest>(b, key, v),
            dec::<gregor::protocol::describe_producers::DescribeProducersResponse>(b, key, v),
        ),
        header::WRITE_TXN_MARKERS => (
            dec::<gregor::protocol::txn_markers::WriteTxnMarkersRequest>(b, key, v),
            dec::<gregor::protocol::txn_markers::WriteTxnMarkersResponse>(b, key, v),
        ),
        header::ADD_PARTITIONS_TO_TXN => (
            dec::<gregor::protocol::txn_requests::AddPartitionsToTxnRequest>(b, key, v),
            dec::<gregor::protocol::txn_requests::AddPartitionsToTxnResponse>(b, key, v),
        ),
        header::ADD_OFFSETS_TO_TXN => (
            dec::<gregor::protocol::txn_requests::AddOffsetsToTxnRequest>(b, key, v),
            dec::<gregor::protocol::txn_requests::TxnErrorResponse>(b, key, v),
        ),
        header::TXN_OFFSET_COMMIT => (
            dec::<gregor::protocol::txn_requests::TxnOffsetCommitRequest>(b, key, v),
            dec::<gregor::protocol::txn_requests::TxnOffsetCommitResponse>(b, key, v),
        ),
        header::DESCRIBE_TRANSACTIONS => (
            dec::<gregor::protocol::txn_admin::DescribeTransactionsRequest>(b, key, v),
            dec::<gregor::protocol::txn_admin::DescribeTransactionsResponse>(b, key, v),
        ),
        header::LIST_TRANSACTIONS => (
            dec::<gregor::protocol::txn_admin::ListTransactionsRequest>(b, key, v),
            dec::<gregor::protocol::txn_admin::ListTransactionsResponse>(b, key, v),
        ),
        header::END_TXN => (
            dec::<gregor::protocol::txn_requests::EndTxnRequest>(b, key, v),
            dec::<gregor::protocol::txn_requests::TxnErrorResponse>(b, key, v),
        ),
        k => panic!("api {k} is served but has no decoder here"),
    };
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
            encode_body(
                &MetadataRequest {
                    topics: Some(vec!["a".into()]),
                    allow_auto_topic_creation: true,
                },
                b,
                header::METADATA,
                v,
            )
        });
    }
    for (v, records) in [(0, &set[..]), (9, &batch[..])] {
        let sets = ProduceSets {
            acks: 1,
            timeout_ms: 1000,
            topics: &[("t", vec![(0, records)])],
        };
        push(&|b| encode_body(&sets, b, header::PRODUCE, v));
    }
    push(&|b| b.extend_from_slice(&batch));
    for v in [0, 4, 12] {
        push(&|b| {
            encode_body(
                &FetchRequest::new(
                    -1,
                    100,
                    1,
                    vec![("t".into(), vec![FetchPartition::new(0, 0, 100)])],
                ),
                b,
                header::FETCH,
                v,
            )
        });
    }
    push(&|b| {
        ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
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
        .encode(&mut Out::classic(b))
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
        .encode(&mut Out::classic(b))
    });
    push(&|b| {
        StopReplicaRequest {
            controller_id: 1,
            controller_epoch: 1,
            delete_partitions: true,
            partitions: vec![gregor::protocol::TopicPartition::new("t", 0)],
        }
        .encode(&mut Out::classic(b))
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
        .encode(&mut Out::classic(b))
    });
    push(&|b| {
        use gregor::protocol::client_quotas::{AlterClientQuotasRequest, QuotaOp};
        let req = AlterClientQuotasRequest {
            entries: vec![(
                vec![
                    ("client-id".into(), Some("c".into())),
                    ("user".into(), None),
                ],
                vec![QuotaOp {
                    key: "producer_byte_rate".into(),
                    value: 1024.0,
                    remove: false,
                }],
            )],
            validate_only: false,
        };
        encode_body(&req, b, header::ALTER_CLIENT_QUOTAS, 1)
    });
    push(&|b| {
        use gregor::protocol::scram_credentials::{
            AlterUserScramCredentialsRequest, ScramUpsertion,
        };
        let req = AlterUserScramCredentialsRequest {
            deletions: vec![("a".into(), 1)],
            upsertions: vec![ScramUpsertion {
                name: "b".into(),
                mechanism: 2,
                iterations: 4096,
                salt: vec![1; 16],
                salted_password: vec![2; 64],
            }],
        };
        encode_body(&req, b, header::ALTER_USER_SCRAM_CREDENTIALS, 0)
    });
    push(&|b| {
        use gregor::protocol::txn_markers::{TxnMarkerEntry, WriteTxnMarkersRequest};
        let req = WriteTxnMarkersRequest {
            markers: vec![TxnMarkerEntry {
                producer_id: 3,
                producer_epoch: 1,
                commit: false,
                topics: vec![("t".into(), vec![0, 1])],
                coordinator_epoch: 2,
            }],
        };
        encode_body(&req, b, header::WRITE_TXN_MARKERS, 1)
    });
    push(&|b| {
        let req = gregor::protocol::txn_requests::AddPartitionsToTxnRequest {
            transactional_id: "tx".into(),
            producer_id: 3,
            producer_epoch: 1,
            topics: vec![("t".into(), vec![0, 1])],
        };
        encode_body(&req, b, header::ADD_PARTITIONS_TO_TXN, 3)
    });
    push(&|b| {
        use gregor::protocol::txn_requests::{TxnOffset, TxnOffsetCommitRequest};
        let req = TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: "g".into(),
            producer_id: 3,
            producer_epoch: 1,
            generation_id: 2,
            member_id: "m".into(),
            group_instance_id: None,
            topics: vec![(
                "t".into(),
                vec![TxnOffset {
                    partition: 0,
                    offset: 5,
                    leader_epoch: 1,
                    metadata: None,
                }],
            )],
        };
        encode_body(&req, b, header::TXN_OFFSET_COMMIT, 3)
    });
    push(&|b| {
        let req = gregor::protocol::txn_admin::ListTransactionsRequest {
            state_filters: vec!["Ongoing".into()],
            producer_id_filters: vec![3],
            duration_filter_ms: 10,
            transactional_id_pattern: Some("tx-.*".into()),
        };
        encode_body(&req, b, header::LIST_TRANSACTIONS, 2)
    });
    push(&|b| {
        let req = gregor::protocol::txn_requests::EndTxnRequest {
            transactional_id: "tx".into(),
            producer_id: 3,
            producer_epoch: 1,
            committed: true,
        };
        encode_body(&req, b, header::END_TXN, 1)
    });
    push(&|b| {
        let req = gregor::protocol::txn_requests::AddOffsetsToTxnRequest {
            transactional_id: "tx".into(),
            producer_id: 3,
            producer_epoch: 1,
            group_id: "g".into(),
        };
        encode_body(&req, b, header::ADD_OFFSETS_TO_TXN, 3)
    });
    push(&|b| {
        let req = gregor::protocol::describe_producers::DescribeProducersRequest {
            topics: vec![("t".into(), vec![0, 3])],
        };
        encode_body(&req, b, header::DESCRIBE_PRODUCERS, 0)
    });
    push(&|b| {
        let req = gregor::protocol::sasl::SaslAuthenticateRequest {
            auth_bytes: b"n,,n=user,r=abc",
        };
        encode_body(&req, b, header::SASL_AUTHENTICATE, 2)
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
    fn mutated_valid_frames_never_panic(which in 0usize..64, flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let all = samples();
        let mut b = all[which % all.len()].clone();
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
