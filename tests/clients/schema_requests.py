"""Request bodies (Metadata, ListOffsets, Heartbeat, OffsetFetch, FindCoordinator, JoinGroup,
OffsetCommit, Fetch) encoded by kafka-python's protocol classes, which are generated from
Kafka's published JSON message schemas: an encoder independent of gregor's. Prints one line
per (api key, version): `KEY VERSION HEX`. The Rust test decodes each with gregor and
encodes it again, and the bytes must be the same."""
import os
from kafka.protocol.broker_version_data import FindCoordinatorRequest, MetadataRequest, OffsetFetchRequest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, ListOffsetsRequest, OffsetCommitRequest


# The versions gregor serves, from its API table (header::SUPPORTED_APIS), as the Rust test
# passes them: GREGOR_SERVED="KEY:MIN-MAX,...".
SERVED = {int(k): tuple(map(int, r.split("-")))
          for k, r in (e.split(":") for e in os.environ["GREGOR_SERVED"].split(","))}


def served(key):
    low, high = SERVED[key]
    return range(low, high + 1)


def out(key, version, req):
    print(key, version, bytes(req.encode()).hex())


for v in served(3):
    topics = [MetadataRequest.MetadataRequestTopic(topic_id=None, name="t")]
    out(3, v, MetadataRequest(version=v, topics=topics, allow_auto_topic_creation=True,
                              include_cluster_authorized_operations=False,
                              include_topic_authorized_operations=False))
for v in served(2):
    T = ListOffsetsRequest.ListOffsetsTopic
    parts = [T.ListOffsetsPartition(partition_index=3, current_leader_epoch=2, timestamp=-2,
                                    max_num_offsets=1)]
    out(2, v, ListOffsetsRequest(version=v, replica_id=-1, isolation_level=0,
                                 topics=[T(name="t", partitions=parts)]))
for v in served(12):
    out(12, v, HeartbeatRequest(version=v, group_id="g", generation_id=3, member_id="m",
                                group_instance_id="i" if v >= 3 else None))
for v in served(9):
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]
    out(9, v, OffsetFetchRequest(version=v, group_id="g", topics=topics, require_stable=False))
for v in served(10):
    if v >= 4:
        out(10, v, FindCoordinatorRequest(version=v, key_type=1, coordinator_keys=["g", "h"]))
    else:
        out(10, v, FindCoordinatorRequest(version=v, key="g", key_type=0))
for v in served(11):
    P = JoinGroupRequest.JoinGroupRequestProtocol
    out(11, v, JoinGroupRequest(version=v, group_id="g", session_timeout_ms=10000,
                                rebalance_timeout_ms=10000 if v >= 1 else -1, member_id="m",
                                group_instance_id="i" if v >= 5 else None,
                                protocol_type="consumer",
                                protocols=[P(name="range", metadata=b"\x00\x01")],
                                reason="because" if v >= 8 else None))
for v in served(8):
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    parts = [T.OffsetCommitRequestPartition(partition_index=1, committed_offset=42,
                                            committed_leader_epoch=5 if v >= 6 else -1,
                                            commit_timestamp=-1, committed_metadata="md")]
    out(8, v, OffsetCommitRequest(version=v, group_id="g", generation_id_or_member_epoch=2,
                                  member_id="m", group_instance_id="i" if v >= 7 else None,
                                  retention_time_ms=-1, topics=[T(name="t", partitions=parts)]))
from kafka.protocol.consumer import FetchRequest

for v in served(1):
    T = FetchRequest.FetchTopic
    parts = [T.FetchPartition(partition=2, current_leader_epoch=5, fetch_offset=7,
                              last_fetched_epoch=-1, log_start_offset=-1,
                              partition_max_bytes=1048576)]
    out(1, v, FetchRequest(version=v, replica_id=-1, max_wait_ms=500, min_bytes=1,
                           max_bytes=52428800, isolation_level=0, session_id=0, session_epoch=-1,
                           topics=[T(topic="t", partitions=parts)], forgotten_topics_data=[],
                           rack_id=""))
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

for v in served(14):
    A = SyncGroupRequest.SyncGroupRequestAssignment
    out(14, v, SyncGroupRequest(version=v, group_id="g", generation_id=3, member_id="m",
                                group_instance_id="i" if v >= 3 else None,
                                protocol_type="consumer" if v >= 5 else None,
                                protocol_name="range" if v >= 5 else None,
                                assignments=[A(member_id="m", assignment=b"\x01\x02")]))
for v in served(13):
    M = LeaveGroupRequest.MemberIdentity
    out(13, v, LeaveGroupRequest(version=v, group_id="g", member_id="m",
                                 members=[M(member_id="m", group_instance_id="i",
                                            reason="bye" if v >= 5 else None)]))
for v in served(15):
    out(15, v, DescribeGroupsRequest(version=v, groups=["a", "b"],
                                     include_authorized_operations=False))
for v in served(16):
    out(16, v, ListGroupsRequest(version=v, states_filter=["Stable"]))
for v in served(42):
    out(42, v, DeleteGroupsRequest(version=v, groups_names=["g"]))
from kafka.protocol.consumer import OffsetDeleteRequest

T = OffsetDeleteRequest.OffsetDeleteRequestTopic
out(47, 0, OffsetDeleteRequest(version=0, group_id="g", topics=[
    T(name="t", partitions=[T.OffsetDeleteRequestPartition(partition_index=0),
                            T.OffsetDeleteRequestPartition(partition_index=2)])]))
for v in served(22):
    out(22, v, InitProducerIdRequest(version=v, transactional_id=None, transaction_timeout_ms=60000,
                                     producer_id=-1, producer_epoch=-1))
for v in served(0):
    T = ProduceRequest.TopicProduceData
    parts = [T.PartitionProduceData(index=0, records=b"\x00\x01\x02\x03")]
    out(0, v, ProduceRequest(version=v, transactional_id=None, acks=-1, timeout_ms=30000,
                             topic_data=[T(name="t", partition_data=parts)]))
from kafka.protocol.metadata import ApiVersionsRequest

for v in served(18):
    out(18, v, ApiVersionsRequest(version=v, client_software_name="gregor-test",
                                  client_software_version="1.0"))
from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest

for v in served(19):
    C = CreateTopicsRequest.CreatableTopic
    topics = [C(name="t", num_partitions=3, replication_factor=2, assignments=[],
                configs=[C.CreatableTopicConfig(name="message.timestamp.type", value="CreateTime"),
                         C.CreatableTopicConfig(name="k", value=None)]),
              C(name="u", num_partitions=-1, replication_factor=-1, configs=[],
                assignments=[C.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])])]
    out(19, v, CreateTopicsRequest(version=v, topics=topics, timeout_ms=30000,
                                   validate_only=v >= 1))
for v in served(20):
    S = DeleteTopicsRequest.DeleteTopicState
    out(20, v, DeleteTopicsRequest(version=v, topic_names=["t", "u"], timeout_ms=30000,
                                   topics=[S(name="t", topic_id="00000000000000000000000000000000"),
                                           S(name=None, topic_id="0102030405060708090a0b0c0d0e0f10")]))
for v in served(37):
    P = CreatePartitionsRequest.CreatePartitionsTopic
    out(37, v, CreatePartitionsRequest(version=v, timeout_ms=30000, validate_only=False, topics=[
        P(name="t", count=4, assignments=None),
        P(name="u", count=3, assignments=[P.CreatePartitionsAssignment(broker_ids=[2, 3])])]))
from kafka.protocol.admin import DescribeClusterRequest, DescribeConfigsRequest

for v in served(32):
    R = DescribeConfigsRequest.DescribeConfigsResource
    out(32, v, DescribeConfigsRequest(version=v, include_synonyms=v >= 1,
                                      include_documentation=v >= 3, resources=[
        R(resource_type=2, resource_name="t", configuration_keys=None),
        R(resource_type=4, resource_name="1", configuration_keys=["num.partitions"])]))
for v in served(60):
    out(60, v, DescribeClusterRequest(version=v, include_cluster_authorized_operations=False,
                                      endpoint_type=1, include_fenced_brokers=False))
from kafka.protocol.admin import AlterConfigsRequest, IncrementalAlterConfigsRequest

for v in served(33):
    R = AlterConfigsRequest.AlterConfigsResource
    out(33, v, AlterConfigsRequest(version=v, validate_only=False, resources=[
        R(resource_type=2, resource_name="t", configs=[
            R.AlterableConfig(name="retention.ms", value="1000"),
            R.AlterableConfig(name="segment.bytes", value=None)])]))
for v in served(44):
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    out(44, v, IncrementalAlterConfigsRequest(version=v, validate_only=True, resources=[
        R(resource_type=2, resource_name="t", configs=[
            R.AlterableConfig(name="retention.ms", config_operation=0, value="1000"),
            R.AlterableConfig(name="segment.bytes", config_operation=1, value=None)])]))
from kafka.protocol.admin import DeleteRecordsRequest

for v in served(21):
    T = DeleteRecordsRequest.DeleteRecordsTopic
    out(21, v, DeleteRecordsRequest(version=v, timeout_ms=30000, topics=[
        T(name="t", partitions=[T.DeleteRecordsPartition(partition_index=0, offset=5),
                                T.DeleteRecordsPartition(partition_index=1, offset=-1)])]))
from kafka.protocol.consumer import OffsetForLeaderEpochRequest

for v in served(23):
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    out(23, v, OffsetForLeaderEpochRequest(version=v, replica_id=-1, topics=[
        T(topic="t", partitions=[
            T.OffsetForLeaderPartition(partition=0, current_leader_epoch=7, leader_epoch=5),
            T.OffsetForLeaderPartition(partition=2, current_leader_epoch=-1, leader_epoch=0)])]))
from kafka.protocol.admin import DescribeLogDirsRequest, ElectLeadersRequest

for v in served(43):
    T = ElectLeadersRequest.TopicPartitions
    out(43, v, ElectLeadersRequest(version=v, election_type=1 if v >= 1 else 0, timeout_ms=30000,
                                   topic_partitions=[T(topic="t", partitions=[0, 2])]))
    out(43, v, ElectLeadersRequest(version=v, election_type=0, timeout_ms=60000,
                                   topic_partitions=None))
for v in served(35):
    T = DescribeLogDirsRequest.DescribableLogDirTopic
    out(35, v, DescribeLogDirsRequest(version=v, topics=[T(topic="t", partitions=[1, 3])]))
    out(35, v, DescribeLogDirsRequest(version=v, topics=None))
from kafka.protocol.admin import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest

for v in served(45):
    T = AlterPartitionReassignmentsRequest.ReassignableTopic
    P = T.ReassignablePartition
    out(45, v, AlterPartitionReassignmentsRequest(
        version=v, timeout_ms=30000, allow_replication_factor_change=v < 1, topics=[
            T(name="t", partitions=[P(partition_index=0, replicas=[2, 3]),
                                    P(partition_index=1, replicas=None)])]))
for v in served(46):
    T = ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics
    out(46, v, ListPartitionReassignmentsRequest(version=v, timeout_ms=30000, topics=[
        T(name="t", partition_indexes=[0, 4])]))
    out(46, v, ListPartitionReassignmentsRequest(version=v, timeout_ms=60000, topics=None))
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

for v in served(48):
    C = DescribeClientQuotasRequest.ComponentData
    out(48, v, DescribeClientQuotasRequest(version=v, strict=True, components=[
        C(entity_type="user", match_type=1, match=None),
        C(entity_type="client-id", match_type=0, match="slow")]))
for v in served(49):
    E = AlterClientQuotasRequest.EntryData
    out(49, v, AlterClientQuotasRequest(version=v, validate_only=False, entries=[
        E(entity=[E.EntityData(entity_type="client-id", entity_name=None)],
          ops=[E.OpData(key="producer_byte_rate", value=1048576.0, remove=False),
               E.OpData(key="request_percentage", value=0.0, remove=True)])]))

from kafka.protocol.admin import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

for v in served(17):
    out(17, v, SaslHandshakeRequest(version=v, mechanism="SCRAM-SHA-512"))
for v in served(36):
    out(36, v, SaslAuthenticateRequest(version=v, auth_bytes=b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"))
for v in served(50):
    out(50, v, DescribeUserScramCredentialsRequest(version=v, users=[
        DescribeUserScramCredentialsRequest.UserName(name="alice")]))
    out(50, v, DescribeUserScramCredentialsRequest(version=v, users=None))
for v in served(51):
    A = AlterUserScramCredentialsRequest
    out(51, v, A(version=v,
                 deletions=[A.ScramCredentialDeletion(name="bob", mechanism=1)],
                 upsertions=[A.ScramCredentialUpsertion(name="alice", mechanism=2, iterations=8192,
                                                        salt=b"\x01" * 16,
                                                        salted_password=b"\x02" * 64)]))

from kafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

for v in served(29):
    out(29, v, DescribeAclsRequest(version=v, resource_type_filter=2, resource_name_filter="t",
                                   pattern_type_filter=3, principal_filter=None,
                                   host_filter=None, operation=1, permission_type=1))
for v in served(30):
    C = CreateAclsRequest.AclCreation
    out(30, v, CreateAclsRequest(version=v, creations=[
        C(resource_type=2, resource_name="orders", resource_pattern_type=4,
          principal="User:alice", host="*", operation=3, permission_type=3)]))
for v in served(31):
    F = DeleteAclsRequest.DeleteAclsFilter
    out(31, v, DeleteAclsRequest(version=v, filters=[
        F(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
          principal_filter="User:alice", host_filter=None, operation=1, permission_type=1)]))

from kafka.protocol.admin import DescribeProducersRequest

for v in served(61):
    T = DescribeProducersRequest.TopicRequest
    out(61, v, DescribeProducersRequest(version=v, topics=[
        T(name="t", partition_indexes=[0, 3]), T(name="u", partition_indexes=[])]))

from kafka.protocol.producer import AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest

for v in served(24):
    T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    out(24, v, AddPartitionsToTxnRequest(version=v, v3_and_below_transactional_id="tx",
                                         v3_and_below_producer_id=4001,
                                         v3_and_below_producer_epoch=3,
                                         v3_and_below_topics=[T(name="t", partitions=[0, 2]),
                                                              T(name="u", partitions=[1])]))
for v in served(25):
    out(25, v, AddOffsetsToTxnRequest(version=v, transactional_id="tx", producer_id=4001,
                                      producer_epoch=3, group_id="g"))
for v in served(26):
    out(26, v, EndTxnRequest(version=v, transactional_id="tx", producer_id=4001,
                             producer_epoch=3, committed=True))

from kafka.protocol.producer import TxnOffsetCommitRequest

for v in served(28):
    T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    P = T.TxnOffsetCommitRequestPartition
    kw = dict(generation_id=7, member_id="m-1", group_instance_id=None) if v >= 3 else {}
    out(28, v, TxnOffsetCommitRequest(version=v, transactional_id="tx", group_id="g",
                                      producer_id=4001, producer_epoch=3, topics=[
        T(name="t", partitions=[P(partition_index=0, committed_offset=42,
                                  committed_leader_epoch=5, committed_metadata="meta"),
                                P(partition_index=1, committed_offset=7,
                                  committed_leader_epoch=-1, committed_metadata=None)])], **kw))

from kafka.protocol.admin import DescribeTransactionsRequest, ListTransactionsRequest

for v in served(65):
    out(65, v, DescribeTransactionsRequest(version=v, transactional_ids=["tx", "ty"]))
for v in served(66):
    kw = dict(duration_filter=60000) if v >= 1 else {}
    out(66, v, ListTransactionsRequest(version=v, state_filters=["Ongoing"],
                                       producer_id_filters=[4001], **kw))
