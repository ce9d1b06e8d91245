//! A raw Kafka-protocol client over `BlockingChannel`, and the bodies tests send with it.

use gregor::network::BlockingChannel;
use gregor::protocol::controller::*;
use gregor::protocol::fetch::{self, *};
use gregor::protocol::message;
use gregor::protocol::metadata::*;
use gregor::protocol::offsets::*;
use gregor::protocol::produce::*;
use gregor::protocol::{BrokerInfo, encode_body};
use std::net::SocketAddr;
use std::time::Duration;

use super::*;

/// One request as it goes on the wire: size, header (client id `gregor-test`), body at
/// `version` — for tests that write frames to a socket themselves.
pub fn request_frame(
    api_key: i16,
    version: i16,
    correlation_id: i32,
    body: &impl gregor::protocol::Encode,
) -> Vec<u8> {
    let mut frame = vec![0; 4];
    gregor::protocol::header::RequestHeader {
        api_key,
        api_version: version,
        correlation_id,
        client_id: Some("gregor-test"),
    }
    .encode(&mut frame);
    encode_body(body, &mut frame, api_key, version);
    let n = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&n.to_be_bytes());
    frame
}

/// A raw Kafka-protocol client over `BlockingChannel`.
pub struct Client {
    pub chan: BlockingChannel,
}

pub fn partition_state(
    leader: i32,
    epoch: i32,
    isr: &[i32],
    replicas: &[i32],
    controller_epoch: i32,
) -> PartitionState {
    PartitionState {
        controller_epoch,
        leader,
        leader_epoch: epoch,
        isr: isr.to_vec(),
        zk_version: 0,
        replicas: replicas.to_vec(),
    }
}

pub fn tps(topic: &str, partition: i32, state: PartitionState) -> TopicPartitionState {
    TopicPartitionState {
        topic: topic.into(),
        partition,
        state,
    }
}

/// A message set of `values`, magic 0 and 1 alternating so both formats are exercised.
pub fn message_set(values: &[&[u8]]) -> Vec<u8> {
    let mut set = Vec::new();
    for (i, v) in values.iter().enumerate() {
        message::encode_entry(
            &mut set,
            i as i64,
            (i % 2) as i8,
            1_700_000_000_000,
            None,
            Some(v),
        );
    }
    set
}

/// One format v2 batch holding one record with `value` (what Produce v3+ carries).
pub fn one_record_batch(value: &str) -> Vec<u8> {
    one_record(value).finish(0).unwrap()
}

/// The same batch as an idempotent producer's (`pid`, `epoch`) sends it at `sequence`.
pub fn one_idempotent_record(value: &str, pid: i64, epoch: i16, sequence: i32) -> Vec<u8> {
    one_record(value)
        .idempotent(pid, epoch, sequence)
        .finish(0)
        .unwrap()
}

fn one_record(value: &str) -> gregor::protocol::record_batch::BatchBuilder {
    let mut b = gregor::protocol::record_batch::BatchBuilder::new();
    b.push(&gregor::protocol::record_batch::NewRecord {
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(value.as_bytes()),
        headers: &[],
    });
    b
}

/// InitProducerId (without a transactional id) at `version`: a producer id and epoch.
pub fn init_producer(
    c: &mut Client,
    version: i16,
    pid: i64,
    epoch: i16,
) -> gregor::protocol::init_producer_id::InitProducerIdResponse {
    use gregor::protocol::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
    let req = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        producer_id: pid,
        producer_epoch: epoch,
    };
    c.chan
        .send::<InitProducerIdResponse>(22, version, &req)
        .unwrap()
}

/// (offset, value) of every complete message in a fetched set, in any format.
pub fn values(set: &[u8]) -> Vec<(i64, Vec<u8>)> {
    gregor::protocol::records::decode_deep(set)
        .unwrap()
        .into_iter()
        .map(|m| (m.offset, m.value.unwrap_or_default()))
        .collect()
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Client {
            chan: BlockingChannel::connect(addr, "gregor-test", Duration::from_secs(30)).unwrap(),
        }
    }

    /// A client, or `None` when nothing answers at `addr` within 2 s.
    pub fn try_connect(addr: SocketAddr) -> Option<Client> {
        BlockingChannel::connect(addr, "gregor-test", Duration::from_secs(2))
            .ok()
            .map(|chan| Client { chan })
    }

    /// The error code of an empty acks=1 produce, `None` on a network failure: "does this broker
    /// lead the partition and serve?"
    pub fn try_produce_empty(&mut self, topic: &str, partition: i32) -> Option<i16> {
        let topics = [(topic, vec![(partition, &[][..])])];
        let req = ProduceSets {
            acks: 1,
            timeout_ms: 10_000,
            topics: &topics,
        };
        let resp: ProduceResponse = self.chan.send(0, 0, &req).ok()?;
        resp.topics.first()?.1.first().map(|p| p.error_code)
    }

    pub fn leader_and_isr(
        &mut self,
        controller_epoch: i32,
        states: Vec<TopicPartitionState>,
        leaders: Vec<BrokerInfo>,
        init: bool,
    ) -> PartitionErrorsResponse {
        let req = LeaderAndIsrRequest {
            controller_id: 0,
            controller_epoch,
            partition_states: states,
            live_leaders: leaders,
            init,
            broker_epoch: -1,
        };
        self.chan.send(4, 0, &req).unwrap()
    }

    /// A LeaderAndIsr addressed to the incarnation registered in `broker_epoch`.
    pub fn leader_and_isr_for(
        &mut self,
        broker_epoch: i64,
        states: Vec<TopicPartitionState>,
        leaders: Vec<BrokerInfo>,
    ) -> PartitionErrorsResponse {
        let req = LeaderAndIsrRequest {
            controller_id: 0,
            controller_epoch: 1,
            partition_states: states,
            live_leaders: leaders,
            init: false,
            broker_epoch,
        };
        self.chan.send(4, 0, &req).unwrap()
    }

    pub fn update_metadata(
        &mut self,
        controller_epoch: i32,
        states: Vec<TopicPartitionState>,
        brokers: Vec<BrokerInfo>,
    ) -> i16 {
        let req = UpdateMetadataRequest {
            controller_id: 0,
            controller_epoch,
            partition_states: states,
            live_brokers: brokers.into_iter().map(plaintext_endpoints).collect(),
        };
        // UpdateMetadata keeps Kafka's v3 layout, the one version brokers serve.
        self.chan
            .send::<ErrorOnlyResponse>(6, 3, &req)
            .unwrap()
            .error_code
    }

    pub fn stop_replica(
        &mut self,
        controller_epoch: i32,
        delete: bool,
        partitions: Vec<(String, i32)>,
    ) -> PartitionErrorsResponse {
        let req = StopReplicaRequest {
            controller_id: 0,
            controller_epoch,
            delete_partitions: delete,
            partitions: partitions
                .into_iter()
                .map(|(t, p)| gregor::protocol::TopicPartition::new(t, p))
                .collect(),
        };
        self.chan.send(5, 0, &req).unwrap()
    }

    pub fn metadata(&mut self, topics: &[&str]) -> MetadataResponse {
        let req = MetadataRequest {
            topics: (!topics.is_empty()).then(|| topics.iter().map(|t| t.to_string()).collect()),
            allow_auto_topic_creation: true,
        };
        self.chan.send(3, 0, &req).unwrap()
    }

    /// Produces `values` to one partition; returns (error code, base offset).
    pub fn produce(
        &mut self,
        acks: i16,
        topic: &str,
        partition: i32,
        values: &[&[u8]],
    ) -> (i16, i64) {
        self.produce_set(acks, topic, partition, &message_set(values))
    }

    pub fn produce_set(
        &mut self,
        acks: i16,
        topic: &str,
        partition: i32,
        set: &[u8],
    ) -> (i16, i64) {
        let p = self.produce_v(0, acks, topic, partition, set);
        (p.error_code, p.base_offset)
    }

    /// Produces one record set with Produce `version`; the partition's answer.
    pub fn produce_v(
        &mut self,
        version: i16,
        acks: i16,
        topic: &str,
        partition: i32,
        set: &[u8],
    ) -> ProducePartitionResponse {
        let topics = [(topic, vec![(partition, set)])];
        let req = ProduceSets {
            acks,
            timeout_ms: 10_000,
            topics: &topics,
        };
        if acks == 0 {
            let body = |b: &mut Vec<u8>| encode_body(&req, b, 0, version);
            self.chan.send_only(0, version, &body).unwrap();
            return ProducePartitionResponse {
                partition,
                error_code: 0,
                base_offset: -1,
                log_append_time_ms: -1,
                log_start_offset: -1,
                error_message: None,
            };
        }
        let resp: ProduceResponse = self.chan.send(0, version, &req).unwrap();
        resp.topics[0].1[0].clone()
    }

    pub fn fetch_as(
        &mut self,
        replica_id: i32,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> FetchPartitionResponse {
        self.fetch_v(
            fetch::CLIENT_VERSION,
            replica_id,
            topic,
            partition,
            offset,
            max_wait_ms,
        )
    }

    /// One partition's answer to a Fetch at `version`.
    pub fn fetch_v(
        &mut self,
        version: i16,
        replica_id: i32,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> FetchPartitionResponse {
        self.try_fetch_v(version, replica_id, topic, partition, offset, max_wait_ms)
            .unwrap()
    }

    /// `fetch_v`, with a failed round trip (a timeout, a closed connection) as an error.
    pub fn try_fetch_v(
        &mut self,
        version: i16,
        replica_id: i32,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> Result<FetchPartitionResponse, String> {
        let req = FetchRequest::new(
            replica_id,
            max_wait_ms,
            1,
            vec![(
                topic.into(),
                vec![FetchPartition::new(partition, offset, 1 << 20)],
            )],
        );
        let resp = self
            .chan
            .send::<FetchResponse>(1, version, &req)
            .map_err(|e| e.to_string())?;
        resp.topics
            .into_iter()
            .next()
            .and_then(|t| t.1.into_iter().next())
            .ok_or_else(|| "a fetch answer without the partition".to_owned())
    }

    pub fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> FetchPartitionResponse {
        self.fetch_as(CONSUMER_REPLICA_ID, topic, partition, offset, max_wait_ms)
    }

    pub fn list_offsets(&mut self, topic: &str, partition: i32, time: i64) -> (i16, Vec<i64>) {
        let req = ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![(
                topic.into(),
                vec![OffsetsPartition {
                    partition,
                    time,
                    max_num_offsets: 1,
                    current_leader_epoch: -1,
                }],
            )],
        };
        let resp: ListOffsetsResponse = self.chan.send(2, 0, &req).unwrap();
        let p = &resp.topics[0].1[0];
        (p.error_code, p.offsets.clone())
    }
}
