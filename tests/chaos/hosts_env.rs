//! The `--hosts` topology for the chaos run: a 3-node ZooKeeper ensemble and 5 brokers, each
//! on its own host and address (`tests/common/lab.rs`, over `scripts/hosts.sh`), with the
//! run's producers, consumers and checker on the client host.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;

use gregor::zk::ZkClient;

use crate::cluster::Cluster;
use crate::env::SESSION_TIMEOUT_MS;
use crate::lab::Lab;

pub const BROKERS: i32 = 5;

/// The brokers' settings: as the loopback run's.
const PROPS: &str = "replica.lag.time.max.ms=4000\nmin.insync.replicas=2\n\
                     unclean.leader.election.enable=false\ndefault.replication.factor=3\n\
                     auto.create.topics.enable=false\ncontrolled.shutdown.retry.backoff.ms=300\n\
                     coordinator.rebalance.timeout.ms=5000";

pub struct HostsEnv {
    pub lab: Lab,
    paused: BTreeSet<i32>,
}

impl HostsEnv {
    pub fn start(dir: &Path) -> HostsEnv {
        HostsEnv {
            lab: Lab::start(dir, BROKERS, SESSION_TIMEOUT_MS, 500, PROPS),
            paused: BTreeSet::new(),
        }
    }
}

impl Cluster for HostsEnv {
    fn zk(&self) -> &ZkClient {
        self.lab.zk()
    }

    fn broker_ids(&self) -> Vec<i32> {
        self.lab.broker_ids()
    }

    fn addr(&self, id: i32) -> SocketAddr {
        self.lab.addr(id)
    }

    fn bootstrap(&self) -> String {
        self.lab.bootstrap()
    }

    fn is_running(&mut self, id: i32) -> bool {
        self.lab.is_running(id)
    }

    fn is_paused(&self, id: i32) -> bool {
        self.paused.contains(&id)
    }

    fn kill9(&mut self, id: i32) {
        self.lab.kill9(id);
        self.paused.remove(&id);
    }

    fn terminate(&mut self, id: i32) {
        self.lab.terminate(id);
    }

    fn restart(&mut self, id: i32) {
        self.lab.restart(id);
    }

    fn pause(&mut self, id: i32) {
        self.lab.signal(id, libc::SIGSTOP);
        self.paused.insert(id);
    }

    fn resume(&mut self, id: i32) {
        self.lab.signal(id, libc::SIGCONT);
        self.paused.remove(&id);
    }

    fn registered(&self, id: i32) -> Result<(), String> {
        self.lab.registered(id)
    }

    fn exits(&self) -> &[String] {
        &self.lab.exits
    }

    fn dir(&self) -> &Path {
        &self.lab.dir
    }

    fn network(&mut self) -> Option<&mut Lab> {
        Some(&mut self.lab)
    }
}
