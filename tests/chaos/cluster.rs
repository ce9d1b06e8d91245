//! What the run, its faults and its checker need of a cluster, whichever topology runs it:
//! `env::Env` (ZooKeeper and 3 brokers on 127.0.0.1, each behind a proxy) or
//! `hosts_env::HostsEnv` (a 3-node ensemble and 5 brokers on their own hosts, `--hosts`).

use std::net::SocketAddr;
use std::time::Duration;

use gregor::protocol::ErrorCode;
use gregor::zk::paths::{self, CONTROLLER, COORDINATOR, ElectedBroker};
use gregor::zk::{ZkClient, groups};

use crate::common::{Client, wait_ok};
use crate::env::Env;
use crate::lab::Lab;

pub const TOPIC: &str = "chaos";
pub const PARTITIONS: i32 = 6;
pub const GROUP: &str = "chaos-group";
/// The `--hosts` run's group in Kafka's protocol.
pub const KAFKA_GROUP: &str = "chaos-kafka-group";

pub trait Cluster {
    fn zk(&self) -> &ZkClient;
    fn broker_ids(&self) -> Vec<i32>;
    /// The broker's own address, which the checker reads replicas at.
    fn addr(&self, id: i32) -> SocketAddr;
    /// What clients are given.
    fn bootstrap(&self) -> String;
    /// Running: started and not exited by itself (an exit is recorded in `exits`).
    fn is_running(&mut self, id: i32) -> bool;
    fn is_paused(&self, id: i32) -> bool;
    fn kill9(&mut self, id: i32);
    /// SIGTERM (controlled shutdown), waiting for the exit.
    fn terminate(&mut self, id: i32);
    /// Starts the broker unless it runs.
    fn restart(&mut self, id: i32);
    fn pause(&mut self, id: i32);
    fn resume(&mut self, id: i32);
    /// Registered by the process running now, not by a previous incarnation.
    fn registered(&self, id: i32) -> Result<(), String>;
    /// Brokers that exited without being told to: each is a finding.
    fn exits(&self) -> &[String];
    /// Where the brokers' logs are: `<dir>/broker-<id>/broker.log`.
    fn dir(&self) -> &std::path::Path;
    /// The network of the `--hosts` topology, to break and heal.
    fn network(&mut self) -> Option<&mut Lab> {
        None
    }
    /// The loopback topology, for its proxies and its single ZooKeeper.
    fn as_loopback(&mut self) -> Option<&mut Env> {
        None
    }

    fn controller(&self) -> Option<i32> {
        elected(self.zk(), CONTROLLER)
    }

    fn coordinator(&self) -> Option<i32> {
        elected(self.zk(), COORDINATOR)
    }

    /// The partition's leader in ZooKeeper, when it has one.
    fn leader(&self, p: i32) -> Option<i32> {
        self.leader_and_isr(p).map(|(l, _)| l).filter(|l| *l >= 0)
    }

    fn leader_and_isr(&self, p: i32) -> Option<(i32, Vec<i32>)> {
        paths::leader_and_isr(self.zk(), TOPIC, p)
            .ok()
            .flatten()
            .map(|(l, _)| (l.leader, l.isr))
    }

    /// The partition's assigned replicas.
    fn replicas(&self, p: i32) -> Vec<i32> {
        paths::topic_assignment(self.zk(), TOPIC)
            .ok()
            .flatten()
            .and_then(|a| a.get(&p).cloned())
            .unwrap_or_default()
    }

    fn group_members(&self) -> usize {
        groups::members(self.zk(), GROUP).map_or(0, |m| m.len())
    }

    /// Healed: every broker running and registered, every partition led with all its
    /// replicas in the ISR, and every leader answering a produce. Otherwise, the first thing
    /// that is not.
    fn health(&mut self) -> Result<(), String> {
        for id in self.broker_ids() {
            if !self.is_running(id) {
                return Err(format!("broker {id} is not running"));
            }
            self.registered(id)?;
        }
        for p in 0..PARTITIONS {
            let (leader, isr) = self
                .leader_and_isr(p)
                .ok_or(format!("partition {p} has no state"))?;
            if leader < 0 || isr.len() != self.replicas(p).len() {
                return Err(format!("partition {p}: leader {leader} isr {isr:?}"));
            }
            let answer = Client::try_connect(self.addr(leader))
                .and_then(|mut c| c.try_produce_empty(TOPIC, p));
            if answer != Some(ErrorCode::None.code()) {
                return Err(format!(
                    "partition {p}: leader {leader} answered a produce with {answer:?}"
                ));
            }
        }
        Ok(())
    }
}

fn elected(zk: &ZkClient, path: &str) -> Option<i32> {
    paths::read_json::<ElectedBroker>(zk, path)
        .ok()
        .flatten()
        .map(|e| e.brokerid)
}

/// Waits until the cluster is healthy; when `limit` passes first, what was still wrong.
pub fn wait_healthy(env: &mut dyn Cluster, limit: Duration) -> Result<(), String> {
    wait_ok(limit, || env.health())
}
