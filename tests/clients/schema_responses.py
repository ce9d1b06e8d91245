"""Response bodies of every API and version gregor serves, encoded by kafka-python's protocol
classes (generated from Kafka's published JSON message schemas): an encoder independent of
gregor's. Prints one line per (api key, version): `KEY VERSION HEX`. The Rust test
(`tests/schema_responses.rs`) decodes each with gregor's client-side decoder and encodes it
again with the broker's encoder, and the bytes must be the same.

The values are what gregor's broker puts in the fields it does not track (throttle 0, no
aborted transactions, authorized operations unknown: the schemas' default), so a difference is a
difference in layout."""
import os
from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteGroupsResponse
from kafka.protocol.admin import DeleteTopicsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import FetchResponse, HeartbeatResponse, JoinGroupResponse
from kafka.protocol.consumer import LeaveGroupResponse, ListOffsetsResponse, OffsetCommitResponse
from kafka.protocol.consumer import OffsetFetchResponse, SyncGroupResponse
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse


# The versions gregor serves, from its API table (header::SUPPORTED_APIS), as the Rust test
# passes them: GREGOR_SERVED="KEY:MIN-MAX,...".
SERVED = {int(k): tuple(map(int, r.split("-")))
          for k, r in (e.split(":") for e in os.environ["GREGOR_SERVED"].split(","))}


def served(key):
    low, high = SERVED[key]
    return range(low, high + 1)


def out(key, version, resp):
    print(key, version, bytes(resp.encode()).hex())


for v in served(0):
    T = ProduceResponse.TopicProduceResponse
    P = T.PartitionProduceResponse
    parts = [P(index=1, error_code=0, base_offset=42, log_append_time_ms=-1, log_start_offset=3,
               record_errors=[], error_message=None),
             P(index=2, error_code=87, base_offset=-1, log_append_time_ms=1700000000000,
               log_start_offset=0, record_errors=[], error_message="bad batch")]
    out(0, v, ProduceResponse(version=v, responses=[T(name="t", partition_responses=parts)],
                              throttle_time_ms=0))

for v in served(1):
    T = FetchResponse.FetchableTopicResponse
    P = T.PartitionData
    records = bytes(range(40))
    parts = [P(partition_index=0, error_code=0, high_watermark=9, last_stable_offset=9,
               log_start_offset=2, aborted_transactions=None, preferred_read_replica=-1,
               records=records),
             P(partition_index=1, error_code=6, high_watermark=-1, last_stable_offset=-1,
               log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1,
               records=b"")]
    out(1, v, FetchResponse(version=v, throttle_time_ms=0, error_code=0, session_id=0,
                            responses=[T(topic="t", partitions=parts)]))

for v in served(2):
    T = ListOffsetsResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    parts = [P(partition_index=3, error_code=0, old_style_offsets=[17, 0], timestamp=-1,
               offset=17, leader_epoch=4)]
    if v > 0:
        parts[0].old_style_offsets = []
    out(2, v, ListOffsetsResponse(version=v, throttle_time_ms=0,
                                  topics=[T(name="t", partitions=parts)]))

for v in served(3):
    B = MetadataResponse.MetadataResponseBroker
    T = MetadataResponse.MetadataResponseTopic
    P = T.MetadataResponsePartition
    parts = [P(error_code=0, partition_index=0, leader_id=2, leader_epoch=3,
               replica_nodes=[2, 1, 3], isr_nodes=[2, 1], offline_replicas=[3]),
             P(error_code=5, partition_index=1, leader_id=-1, leader_epoch=-1,
               replica_nodes=[3], isr_nodes=[], offline_replicas=[3])]
    out(3, v, MetadataResponse(
        version=v, throttle_time_ms=0,
        brokers=[B(node_id=1, host="127.0.0.1", port=9092, rack=None),
                 B(node_id=2, host="127.0.0.1", port=9093, rack=None)],
        cluster_id="AAAAAAAAAAAAAAAAAAAAAA", controller_id=1,
        topics=[T(error_code=0, name="t", topic_id="0102030405060708090a0b0c0d0e0f10",
                  is_internal=False, partitions=parts)]))

for v in served(8):
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    P = T.OffsetCommitResponsePartition
    out(8, v, OffsetCommitResponse(version=v, throttle_time_ms=0, topics=[
        T(name="t", partitions=[P(partition_index=0, error_code=0),
                                P(partition_index=1, error_code=22)])]))

for v in served(9):
    T = OffsetFetchResponse.OffsetFetchResponseTopic
    P = T.OffsetFetchResponsePartition
    parts = [P(partition_index=0, committed_offset=42, committed_leader_epoch=-1, metadata="md",
               error_code=0),
             P(partition_index=1, committed_offset=-1, committed_leader_epoch=-1, metadata="",
               error_code=0)]
    out(9, v, OffsetFetchResponse(version=v, throttle_time_ms=0,
                                  topics=[T(name="t", partitions=parts)], error_code=0))

for v in served(10):
    if v >= 4:
        C = FindCoordinatorResponse.Coordinator
        found = [C(key="g", node_id=2, host="127.0.0.1", port=9093, error_code=0,
                   error_message=None),
                 C(key="h", node_id=-1, host="", port=-1, error_code=15, error_message="none")]
        out(10, v, FindCoordinatorResponse(version=v, throttle_time_ms=0, coordinators=found))
    else:
        out(10, v, FindCoordinatorResponse(version=v, throttle_time_ms=0, error_code=0,
                                           error_message=None, node_id=2, host="127.0.0.1",
                                           port=9093))

for v in served(11):
    M = JoinGroupResponse.JoinGroupResponseMember
    out(11, v, JoinGroupResponse(
        version=v, throttle_time_ms=0, error_code=0, generation_id=4,
        protocol_type="consumer" if v >= 7 else None, protocol_name="range", leader="m1",
        skip_assignment=False, member_id="m1",
        members=[M(member_id="m1", group_instance_id="i1" if v >= 5 else None,
                   metadata=b"\x00\x01\x00\x00"),
                 M(member_id="m2", group_instance_id=None, metadata=b"")]))

for v in served(12):
    out(12, v, HeartbeatResponse(version=v, throttle_time_ms=0, error_code=27))

for v in served(13):
    M = LeaveGroupResponse.MemberResponse
    out(13, v, LeaveGroupResponse(version=v, throttle_time_ms=0, error_code=0, members=[
        M(member_id="m1", group_instance_id=None, error_code=0),
        M(member_id="", group_instance_id="i2", error_code=25)] if v >= 3 else []))

for v in served(14):
    out(14, v, SyncGroupResponse(version=v, throttle_time_ms=0, error_code=0,
                                 protocol_type="consumer" if v >= 5 else None,
                                 protocol_name="range" if v >= 5 else None,
                                 assignment=b"\x00\x00\x00\x00\x00\x01"))

for v in served(15):
    G = DescribeGroupsResponse.DescribedGroup
    M = G.DescribedGroupMember
    members = [M(member_id="m1", group_instance_id="i1" if v >= 4 else None, client_id="c",
                 client_host="/127.0.0.1", member_metadata=b"\x01", member_assignment=b"\x02")]
    out(15, v, DescribeGroupsResponse(version=v, throttle_time_ms=0, groups=[
        G(error_code=0, error_message=None, group_id="g", group_state="Stable",
          protocol_type="consumer", protocol_data="range", members=members)]))

for v in served(16):
    G = ListGroupsResponse.ListedGroup
    out(16, v, ListGroupsResponse(version=v, throttle_time_ms=0, error_code=0, groups=[
        G(group_id="g", protocol_type="consumer", group_state="Stable", group_type="classic"),
        G(group_id="h", protocol_type="gregor", group_state="Empty", group_type="classic")]))

for v in served(18):
    K = ApiVersionsResponse.ApiVersion
    out(18, v, ApiVersionsResponse(version=v, error_code=0, throttle_time_ms=0,
                                   api_keys=[K(api_key=0, min_version=0, max_version=9),
                                             K(api_key=18, min_version=0, max_version=3)],
                                   supported_features=[], finalized_features_epoch=-1,
                                   finalized_features=[], zk_migration_ready=False))

for v in served(22):
    out(22, v, InitProducerIdResponse(version=v, throttle_time_ms=0, error_code=0,
                                      producer_id=4000, producer_epoch=2))

from kafka.protocol.consumer import OffsetDeleteResponse

R = OffsetDeleteResponse.OffsetDeleteResponseTopic
out(47, 0, OffsetDeleteResponse(version=0, error_code=0, throttle_time_ms=0, topics=[
    R(name="t", partitions=[R.OffsetDeleteResponsePartition(partition_index=0, error_code=0),
                            R.OffsetDeleteResponsePartition(partition_index=2, error_code=86)])]))

for v in served(42):
    R = DeleteGroupsResponse.DeletableGroupResult
    out(42, v, DeleteGroupsResponse(version=v, throttle_time_ms=0, results=[
        R(group_id="g", error_code=0), R(group_id="h", error_code=69)]))

for v in served(19):
    R = CreateTopicsResponse.CreatableTopicResult
    C = R.CreatableTopicConfigs
    out(19, v, CreateTopicsResponse(version=v, throttle_time_ms=0, topics=[
        R(name="t", topic_id="0102030405060708090a0b0c0d0e0f10", error_code=0, error_message=None,
          num_partitions=3, replication_factor=2,
          configs=[C(name="message.timestamp.type", value="CreateTime", read_only=False,
                     config_source=5, is_sensitive=False)]),
        R(name="u", topic_id="00000000000000000000000000000000", error_code=36,
          error_message="topic `u` already exists" if v >= 1 else None, num_partitions=-1,
          replication_factor=-1, configs=None)]))

for v in served(20):
    R = DeleteTopicsResponse.DeletableTopicResult
    out(20, v, DeleteTopicsResponse(version=v, throttle_time_ms=0, responses=[
        R(name="t", topic_id="00000000000000000000000000000000", error_code=0, error_message=None),
        R(name="u", topic_id="00000000000000000000000000000000", error_code=3,
          error_message="topic `u` does not exist" if v >= 5 else None)]))

for v in served(37):
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    out(37, v, CreatePartitionsResponse(version=v, throttle_time_ms=0, results=[
        R(name="t", error_code=0, error_message=None),
        R(name="u", error_code=37, error_message="not more")]))
from kafka.protocol.admin import DescribeClusterResponse, DescribeConfigsResponse

for v in served(32):
    R = DescribeConfigsResponse.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult
    configs = [C(name="message.timestamp.type", value="CreateTime", read_only=False,
                 config_source=5, is_default=True, is_sensitive=False, synonyms=[],
                 config_type=2, documentation=None)]
    if v >= 1:
        configs.append(C(name="cleanup.policy", value="delete", read_only=False,
                         config_source=1, is_default=False, is_sensitive=False, synonyms=[],
                         config_type=2, documentation=None))
    out(32, v, DescribeConfigsResponse(version=v, throttle_time_ms=0, results=[
        R(error_code=0, error_message=None, resource_type=2, resource_name="t", configs=configs),
        R(error_code=3, error_message="topic `u` does not exist", resource_type=2,
          resource_name="u", configs=[])]))
for v in served(60):
    B = DescribeClusterResponse.DescribeClusterBroker
    out(60, v, DescribeClusterResponse(version=v, throttle_time_ms=0, error_code=0,
                                       error_message=None, endpoint_type=1, cluster_id="c",
                                       controller_id=2, brokers=[
        B(broker_id=1, host="127.0.0.1", port=9092, rack=None, is_fenced=False),
        B(broker_id=2, host="127.0.0.1", port=9093, rack=None, is_fenced=False)]))
from kafka.protocol.admin import AlterConfigsResponse, IncrementalAlterConfigsResponse

for key, cls in ((33, AlterConfigsResponse), (44, IncrementalAlterConfigsResponse)):
    for v in served(key):
        R = cls.AlterConfigsResourceResponse
        out(key, v, cls(version=v, throttle_time_ms=0, responses=[
            R(error_code=0, error_message=None, resource_type=2, resource_name="t"),
            R(error_code=40, error_message="`retention.ms` must be an integer", resource_type=2,
              resource_name="u")]))
from kafka.protocol.admin import DeleteRecordsResponse

for v in served(21):
    T = DeleteRecordsResponse.DeleteRecordsTopicResult
    P = T.DeleteRecordsPartitionResult
    out(21, v, DeleteRecordsResponse(version=v, throttle_time_ms=0, topics=[
        T(name="t", partitions=[P(partition_index=0, low_watermark=5, error_code=0),
                                P(partition_index=1, low_watermark=-1, error_code=1)])]))
from kafka.protocol.consumer import OffsetForLeaderEpochResponse

for v in served(23):
    T = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    P = T.EpochEndOffset
    out(23, v, OffsetForLeaderEpochResponse(version=v, throttle_time_ms=0, topics=[
        T(topic="t", partitions=[P(error_code=0, partition=0, leader_epoch=5, end_offset=120),
                                 P(error_code=74, partition=1, leader_epoch=-1, end_offset=-1)])]))
from kafka.protocol.admin import DescribeLogDirsResponse, ElectLeadersResponse

for v in served(43):
    R = ElectLeadersResponse.ReplicaElectionResult
    P = R.PartitionResult
    out(43, v, ElectLeadersResponse(version=v, throttle_time_ms=0, error_code=0,
                                    replica_election_results=[
        R(topic="t", partition_result=[
            P(partition_id=0, error_code=0, error_message=None),
            P(partition_id=1, error_code=84, error_message="the preferred replica 1 already leads")])]))
for v in served(35):
    R = DescribeLogDirsResponse.DescribeLogDirsResult
    T = R.DescribeLogDirsTopic
    P = T.DescribeLogDirsPartition
    out(35, v, DescribeLogDirsResponse(version=v, throttle_time_ms=0, error_code=0, results=[
        R(error_code=0, log_dir="/data/a", total_bytes=1 << 40 if v >= 4 else -1,
          usable_bytes=1 << 39 if v >= 4 else -1, topics=[
            T(name="t", partitions=[
                P(partition_index=0, partition_size=4096, offset_lag=0, is_future_key=False),
                P(partition_index=2, partition_size=0, offset_lag=3, is_future_key=False)])]),
        R(error_code=56, log_dir="/data/b", total_bytes=-1, usable_bytes=-1, topics=[])]))
from kafka.protocol.admin import AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse

for v in served(45):
    T = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
    P = T.ReassignablePartitionResponse
    out(45, v, AlterPartitionReassignmentsResponse(
        version=v, throttle_time_ms=0, allow_replication_factor_change=True, error_code=0,
        error_message=None, responses=[
            T(name="t", partitions=[P(partition_index=0, error_code=0, error_message=None),
                                    P(partition_index=1, error_code=85,
                                      error_message="t-1 is not being reassigned")])]))
for v in served(46):
    T = ListPartitionReassignmentsResponse.OngoingTopicReassignment
    P = T.OngoingPartitionReassignment
    out(46, v, ListPartitionReassignmentsResponse(
        version=v, throttle_time_ms=0, error_code=0, error_message=None, topics=[
            T(name="t", partitions=[P(partition_index=0, replicas=[1, 2, 3], adding_replicas=[3],
                                      removing_replicas=[1])])]))
from kafka.protocol.admin import AlterClientQuotasResponse, DescribeClientQuotasResponse

for v in served(48):
    E = DescribeClientQuotasResponse.EntryData
    out(48, v, DescribeClientQuotasResponse(
        version=v, throttle_time_ms=0, error_code=0, error_message=None, entries=[
            E(entity=[E.EntityData(entity_type="user", entity_name="alice"),
                      E.EntityData(entity_type="client-id", entity_name=None)],
              values=[E.ValueData(key="consumer_byte_rate", value=2048.0),
                      E.ValueData(key="request_percentage", value=12.5)])]))
for v in served(49):
    E = AlterClientQuotasResponse.EntryData
    out(49, v, AlterClientQuotasResponse(version=v, throttle_time_ms=0, entries=[
        E(error_code=0, error_message=None,
          entity=[E.EntityData(entity_type="client-id", entity_name="slow")]),
        E(error_code=42, error_message="`bytes` is not a quota",
          entity=[E.EntityData(entity_type="ip", entity_name=None)])]))

from kafka.protocol.admin import AlterUserScramCredentialsResponse, DescribeUserScramCredentialsResponse
from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

for v in served(17):
    out(17, v, SaslHandshakeResponse(version=v, error_code=33,
                                     mechanisms=["PLAIN", "SCRAM-SHA-256"]))
for v in served(36):
    out(36, v, SaslAuthenticateResponse(version=v, error_code=0, error_message=None,
                                        auth_bytes=b"r=abc,s=c2FsdA==,i=4096",
                                        session_lifetime_ms=0))
    out(36, v, SaslAuthenticateResponse(version=v, error_code=58, error_message="failed",
                                        auth_bytes=b"", session_lifetime_ms=0))
for v in served(50):
    R = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
    out(50, v, DescribeUserScramCredentialsResponse(
        version=v, throttle_time_ms=0, error_code=0, error_message=None, results=[
            R(user="alice", error_code=0, error_message=None,
              credential_infos=[R.CredentialInfo(mechanism=1, iterations=4096),
                                R.CredentialInfo(mechanism=2, iterations=8192)]),
            R(user="bob", error_code=91, error_message="no such user", credential_infos=[])]))
for v in served(51):
    R = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
    out(51, v, AlterUserScramCredentialsResponse(version=v, throttle_time_ms=0, results=[
        R(user="alice", error_code=0, error_message=None),
        R(user="", error_code=93, error_message="Username must not be empty")]))

from kafka.protocol.admin import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse

for v in served(29):
    R = DescribeAclsResponse.DescribeAclsResource
    out(29, v, DescribeAclsResponse(version=v, throttle_time_ms=0, error_code=0,
                                    error_message=None, resources=[
        R(resource_type=2, resource_name="orders", pattern_type=3, acls=[
            R.AclDescription(principal="User:alice", host="*", operation=3,
                             permission_type=3)])]))
for v in served(30):
    R = CreateAclsResponse.AclCreationResult
    out(30, v, CreateAclsResponse(version=v, throttle_time_ms=0, results=[
        R(error_code=0, error_message=None), R(error_code=42, error_message="bad")]))
for v in served(31):
    F = DeleteAclsResponse.DeleteAclsFilterResult
    M = F.DeleteAclsMatchingAcl
    out(31, v, DeleteAclsResponse(version=v, throttle_time_ms=0, filter_results=[
        F(error_code=0, error_message=None, matching_acls=[
            M(error_code=0, error_message=None, resource_type=2, resource_name="orders",
              pattern_type=4, principal="User:alice", host="*", operation=3,
              permission_type=3)])]))

from kafka.protocol.admin import DescribeProducersResponse

for v in served(61):
    T = DescribeProducersResponse.TopicResponse
    P = T.PartitionResponse
    S = P.ProducerState
    out(61, v, DescribeProducersResponse(version=v, throttle_time_ms=0, topics=[
        T(name="t", partitions=[
            P(partition_index=0, error_code=0, error_message=None, active_producers=[
                S(producer_id=7, producer_epoch=2, last_sequence=41,
                  last_timestamp=1700000000000, coordinator_epoch=-1,
                  current_txn_start_offset=12)]),
            P(partition_index=3, error_code=6, error_message="not the leader",
              active_producers=[])])]))

from kafka.protocol.producer import AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse

for v in served(24):
    T = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
    P = T.AddPartitionsToTxnPartitionResult
    out(24, v, AddPartitionsToTxnResponse(version=v, throttle_time_ms=0, results_by_topic_v3_and_below=[
        T(name="t", results_by_partition=[P(partition_index=0, partition_error_code=0),
                                          P(partition_index=2, partition_error_code=51)])]))
for v in served(25):
    out(25, v, AddOffsetsToTxnResponse(version=v, throttle_time_ms=0, error_code=90))
for v in served(26):
    out(26, v, EndTxnResponse(version=v, throttle_time_ms=0, error_code=48))

from kafka.protocol.producer import TxnOffsetCommitResponse

for v in served(28):
    T = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    P = T.TxnOffsetCommitResponsePartition
    out(28, v, TxnOffsetCommitResponse(version=v, throttle_time_ms=0, topics=[
        T(name="t", partitions=[P(partition_index=0, error_code=0),
                                P(partition_index=1, error_code=16)])]))

from kafka.protocol.admin import DescribeTransactionsResponse, ListTransactionsResponse

for v in served(65):
    S = DescribeTransactionsResponse.TransactionState
    T = S.TopicData
    out(65, v, DescribeTransactionsResponse(version=v, throttle_time_ms=0, transaction_states=[
        S(error_code=0, transactional_id="tx", transaction_state="Ongoing",
          transaction_timeout_ms=60000, transaction_start_time_ms=1700000000000,
          producer_id=4001, producer_epoch=3, topics=[T(topic="t", partitions=[0, 2])]),
        S(error_code=105, transactional_id="ty", transaction_state="",
          transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
          producer_epoch=-1, topics=[])]))
for v in served(66):
    S = ListTransactionsResponse.TransactionState
    out(66, v, ListTransactionsResponse(version=v, throttle_time_ms=0, error_code=0,
                                        unknown_state_filters=["Bogus"], transaction_states=[
        S(transactional_id="tx", producer_id=4001, transaction_state="Ongoing")]))
