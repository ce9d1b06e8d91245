//! The controller's commands to brokers: LeaderAndIsr (4) and StopReplica (5) in Kafka 0.8's
//! v0 layout, UpdateMetadata (6) in Kafka's v3 layout (v0's, with every listener's endpoint of
//! each broker). Each carries the controller's id and epoch; brokers reject an epoch older
//! than the newest they have seen, and check a newer one against ZooKeeper.
//!
//! Deviation (doc/protocol.md): LeaderAndIsr ends with an `init` boolean, the spec's INIT flag
//! (section D step 4), and the receiver's `broker_epoch`, which 0.8's layout did not have.

use super::TopicPartition;
use super::{
    BROKER_MIN, BrokerEndPoints, BrokerInfo, Decode, DecodeResult, Encode, EndPoint, Out, Reader,
    Writer, read_array,
};

/// 0.8's PartitionStateInfo: the leader and ISR the controller chose, with the zk version of the
/// leaderAndISR path so the leader can later update the ISR conditionally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub controller_epoch: i32,
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub zk_version: i32,
    pub replicas: Vec<i32>,
}

impl Encode for PartitionState {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.controller_epoch);
        out.put_i32(self.leader);
        out.put_i32(self.leader_epoch);
        out.put_i32s(&self.isr);
        out.put_i32(self.zk_version);
        out.put_i32s(&self.replicas);
    }
}

impl<'a> Decode<'a> for PartitionState {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(PartitionState {
            controller_epoch: r.i32("controller_epoch")?,
            leader: r.i32("leader")?,
            leader_epoch: r.i32("leader_epoch")?,
            isr: r.i32_array("isr")?,
            zk_version: r.i32("zk_version")?,
            replicas: r.i32_array("replicas")?,
        })
    }
}

/// The leader an UpdateMetadata names for a partition of a topic being deleted (0.8.2's
/// LeaderDuringDelete): the broker's metadata cache drops the partition.
pub const LEADER_DURING_DELETE: i32 = -2;

/// (topic, partition, state) as the commands carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitionState {
    pub topic: String,
    pub partition: i32,
    pub state: PartitionState,
}

const TPS_MIN: usize = 2 + 4 + 24;

fn write_states(out: &mut Out<'_>, states: &[TopicPartitionState]) {
    out.put_array(states, |o, s| {
        o.put_str(&s.topic);
        o.put_i32(s.partition);
        s.state.encode(o);
    });
}

fn read_states(r: &mut Reader<'_>) -> DecodeResult<Vec<TopicPartitionState>> {
    read_array(r, "partition_states", TPS_MIN, |r| {
        Ok(TopicPartitionState {
            topic: r.string("topic")?.to_owned(),
            partition: r.i32("partition")?,
            state: PartitionState::decode(r)?,
        })
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsrRequest {
    pub controller_id: i32,
    pub controller_epoch: i32,
    pub partition_states: Vec<TopicPartitionState>,
    /// Brokers that lead a partition of this request; followers connect to them.
    pub live_leaders: Vec<BrokerInfo>,
    /// The spec's INIT flag: the receiver deletes local partitions not in this request.
    pub init: bool,
    /// The ZooKeeper session of the receiver's registration as the controller saw it (Kafka's
    /// broker epoch, KIP-380): a broker refuses a command meant for an earlier incarnation of
    /// itself. -1: not checked.
    pub broker_epoch: i64,
}

impl Encode for LeaderAndIsrRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.controller_id);
        out.put_i32(self.controller_epoch);
        write_states(out, &self.partition_states);
        out.put_array(&self.live_leaders, |o, b| b.encode(o));
        out.put_i8(self.init as i8);
        out.put_i64(self.broker_epoch);
    }
}

impl<'a> Decode<'a> for LeaderAndIsrRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(LeaderAndIsrRequest {
            controller_id: r.i32("controller_id")?,
            controller_epoch: r.i32("controller_epoch")?,
            partition_states: read_states(r)?,
            live_leaders: read_array(r, "live_leaders", BROKER_MIN, BrokerInfo::decode)?,
            init: r.bool("init")?,
            broker_epoch: r.i64("broker_epoch")?,
        })
    }
}

/// Response of LeaderAndIsr and StopReplica: a top-level error and one per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionErrorsResponse {
    pub error_code: i16,
    pub partitions: Vec<(String, i32, i16)>,
}

impl Encode for PartitionErrorsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_array(&self.partitions, |o, (t, p, e)| {
            o.put_str(t);
            o.put_i32(*p);
            o.put_i16(*e);
        });
    }
}

impl<'a> Decode<'a> for PartitionErrorsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(PartitionErrorsResponse {
            error_code: r.i16("error_code")?,
            partitions: read_array(r, "partition_errors", 8, |r| {
                Ok((
                    r.string("topic")?.to_owned(),
                    r.i32("partition")?,
                    r.i16("error_code")?,
                ))
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReplicaRequest {
    pub controller_id: i32,
    pub controller_epoch: i32,
    pub delete_partitions: bool,
    pub partitions: Vec<TopicPartition>,
}

impl Encode for StopReplicaRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.controller_id);
        out.put_i32(self.controller_epoch);
        out.put_i8(self.delete_partitions as i8);
        out.put_array(&self.partitions, |o, tp| {
            o.put_str(&tp.topic);
            o.put_i32(tp.partition);
        });
    }
}

impl<'a> Decode<'a> for StopReplicaRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(StopReplicaRequest {
            controller_id: r.i32("controller_id")?,
            controller_epoch: r.i32("controller_epoch")?,
            delete_partitions: r.bool("delete_partitions")?,
            partitions: read_array(r, "partitions", 6, |r| {
                Ok(TopicPartition::new(r.string("topic")?, r.i32("partition")?))
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateMetadataRequest {
    pub controller_id: i32,
    pub controller_epoch: i32,
    pub partition_states: Vec<TopicPartitionState>,
    pub live_brokers: Vec<BrokerEndPoints>,
}

/// Kafka's id for PLAINTEXT. gregor's brokers route by listener name, never by this id, so
/// every endpoint carries it whatever its protocol.
const PLAINTEXT: i16 = 0;

impl Encode for UpdateMetadataRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.controller_id);
        out.put_i32(self.controller_epoch);
        write_states(out, &self.partition_states);
        out.put_array(&self.live_brokers, |o, b| {
            o.put_i32(b.id);
            o.put_array(&b.endpoints, |o, e| {
                o.put_i32(e.port);
                o.put_str(&e.host);
                o.put_str(&e.listener);
                o.put_i16(PLAINTEXT);
            });
            o.put_nullable_string(None); // rack
        });
    }
}

impl<'a> Decode<'a> for UpdateMetadataRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(UpdateMetadataRequest {
            controller_id: r.i32("controller_id")?,
            controller_epoch: r.i32("controller_epoch")?,
            partition_states: read_states(r)?,
            live_brokers: read_array(r, "live_brokers", 10, |r| {
                let id = r.i32("broker.id")?;
                let endpoints = read_array(r, "endpoints", 10, |r| {
                    let port = r.i32("port")?;
                    let host = r.string("host")?.to_owned();
                    let listener = r.string("listener_name")?.to_owned();
                    r.i16("security_protocol")?;
                    Ok(EndPoint {
                        listener,
                        host,
                        port,
                    })
                })?;
                r.nullable_string("rack")?;
                Ok(BrokerEndPoints { id, endpoints })
            })?,
        })
    }
}

/// UpdateMetadata's response: only an error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorOnlyResponse {
    pub error_code: i16,
}

impl Encode for ErrorOnlyResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
    }
}

impl<'a> Decode<'a> for ErrorOnlyResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ErrorOnlyResponse {
            error_code: r.i16("error_code")?,
        })
    }
}

/// ControlledShutdown (key 7) v0/v1: a broker asks the controller to move its leaderships.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlledShutdownRequest {
    pub broker_id: i32,
}

impl Encode for ControlledShutdownRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.broker_id);
    }
}

impl<'a> Decode<'a> for ControlledShutdownRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ControlledShutdownRequest {
            broker_id: r.i32("broker_id")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlledShutdownResponse {
    pub error_code: i16,
    /// Partitions the broker still leads.
    pub partitions_remaining: Vec<TopicPartition>,
}

impl Encode for ControlledShutdownResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_array(
            &self.partitions_remaining,
            |o,
             TopicPartition {
                 topic: t,
                 partition: p,
             }| {
                o.put_str(t);
                o.put_i32(*p);
            },
        );
    }
}

impl<'a> Decode<'a> for ControlledShutdownResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ControlledShutdownResponse {
            error_code: r.i16("error_code")?,
            partitions_remaining: read_array(r, "partitions_remaining", 6, |r| {
                Ok(TopicPartition::new(r.string("topic")?, r.i32("partition")?))
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::round_trip;

    fn state() -> TopicPartitionState {
        TopicPartitionState {
            topic: "t".into(),
            partition: 1,
            state: PartitionState {
                controller_epoch: 3,
                leader: 2,
                leader_epoch: 5,
                isr: vec![2, 1],
                zk_version: 7,
                replicas: vec![1, 2, 3],
            },
        }
    }

    #[test]
    fn round_trips() {
        let broker = BrokerInfo {
            id: 2,
            host: "127.0.0.1".into(),
            port: 9093,
        };
        round_trip(&LeaderAndIsrRequest {
            controller_id: 1,
            controller_epoch: 3,
            partition_states: vec![state()],
            live_leaders: vec![broker.clone()],
            init: true,
            broker_epoch: 0x1234,
        });
        round_trip(&StopReplicaRequest {
            controller_id: 1,
            controller_epoch: 3,
            delete_partitions: true,
            partitions: vec![TopicPartition::new("t", 0)],
        });
        round_trip(&UpdateMetadataRequest {
            controller_id: 1,
            controller_epoch: 3,
            partition_states: vec![state()],
            live_brokers: vec![BrokerEndPoints {
                id: 2,
                endpoints: vec![
                    EndPoint {
                        listener: "CLIENT".into(),
                        host: "127.0.0.1".into(),
                        port: 9092,
                    },
                    EndPoint {
                        listener: "REPLICATION".into(),
                        host: "127.0.0.1".into(),
                        port: 9093,
                    },
                ],
            }],
        });
        round_trip(&PartitionErrorsResponse {
            error_code: 11,
            partitions: vec![("t".into(), 0, 6)],
        });
        round_trip(&ErrorOnlyResponse { error_code: 0 });
        round_trip(&ControlledShutdownRequest { broker_id: 3 });
        round_trip(&ControlledShutdownResponse {
            error_code: 0,
            partitions_remaining: vec![TopicPartition::new("t", 1)],
        });
    }
}
