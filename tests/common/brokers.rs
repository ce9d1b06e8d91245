//! Brokers for tests: in-process (`TestBroker`) or as child processes, and their configuration.

use gregor::broker::Broker;
use gregor::config::BrokerConfig;
use gregor::protocol::BrokerInfo;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use super::*;

/// Starts `gregor broker` with `properties` written to `dir/server.properties`, logging to
/// `dir/broker.log` (appended across restarts); the child dies with the test.
pub fn spawn_broker_process(dir: &Path, properties: &str) -> Child {
    let props = dir.join("server.properties");
    std::fs::write(&props, properties).unwrap();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("broker.log"))
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gregor"));
    cmd.args(["broker", "--config"])
        .arg(&props)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    die_with_parent(&mut cmd);
    cmd.spawn().expect("spawn gregor broker")
}

pub fn broker_config(
    id: i32,
    zk_connect: &str,
    dir: &Path,
    extra: &[(&str, &str)],
) -> BrokerConfig {
    let mut m = BTreeMap::new();
    m.insert("broker.id".into(), id.to_string());
    m.insert("listeners".into(), "PLAINTEXT://127.0.0.1:0".into());
    m.insert("log.dirs".into(), dir.display().to_string());
    m.insert("zookeeper.connect".into(), zk_connect.to_owned());
    m.insert(
        "zookeeper.session.timeout.ms".into(),
        SESSION_TIMEOUT_MS.to_string(),
    );
    // Tests stop many brokers: retry a controlled shutdown once, quickly.
    m.insert("controlled.shutdown.max.retries".into(), "1".into());
    m.insert("controlled.shutdown.retry.backoff.ms".into(), "200".into());
    for (k, v) in extra {
        m.insert((*k).into(), (*v).into());
    }
    BrokerConfig::from_map(m).unwrap()
}

/// A broker known by its one PLAINTEXT listener, as UpdateMetadata lists it.
pub fn plaintext_endpoints(b: BrokerInfo) -> gregor::protocol::BrokerEndPoints {
    gregor::protocol::BrokerEndPoints {
        id: b.id,
        endpoints: vec![gregor::protocol::EndPoint {
            listener: "PLAINTEXT".into(),
            host: b.host,
            port: b.port,
        }],
    }
}

/// An in-process broker with its own data directory; shut down on drop.
pub struct TestBroker {
    pub broker: Arc<Broker>,
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl TestBroker {
    pub fn start(id: i32, zk_connect: &str, extra: &[(&str, &str)]) -> TestBroker {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut b = Self::start_in(id, zk_connect, &dir, extra);
        b._tmp = Some(tmp);
        b
    }

    /// Starts on an existing data directory (a restart); the caller keeps the directory.
    pub fn start_in(id: i32, zk_connect: &str, dir: &Path, extra: &[(&str, &str)]) -> TestBroker {
        let broker =
            Broker::start(broker_config(id, zk_connect, dir, extra)).expect("broker starts");
        vouch_for_test_controller_epochs(&broker.zk);
        TestBroker {
            broker,
            dir: dir.to_path_buf(),
            _tmp: None,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.broker.local_addr()
    }

    pub fn info(&self) -> BrokerInfo {
        BrokerInfo {
            id: self.broker.id(),
            host: "127.0.0.1".into(),
            port: i32::from(self.addr().port()),
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr())
    }

    /// Keeps the data directory past the broker's life (for restart tests).
    pub fn take_dir(&mut self) -> Option<tempfile::TempDir> {
        self._tmp.take()
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        self.broker.shutdown();
    }
}

/// Makes `b` the only replica and leader of partitions 0..n of `topic` at `epoch`, as a
/// controller would (LeaderAndIsr, then UpdateMetadata).
pub fn lead(b: &TestBroker, c: &mut Client, epoch: i32, topic: &str, n: i32) {
    let id = b.broker.id();
    let states: Vec<_> = (0..n)
        .map(|p| tps(topic, p, partition_state(id, 0, &[id], &[id], epoch)))
        .collect();
    let r = c.leader_and_isr(epoch, states.clone(), vec![b.info()], false);
    assert_eq!(r.error_code, 0);
    assert!(r.partitions.iter().all(|p| p.2 == 0), "{r:?}");
    assert_eq!(c.update_metadata(epoch, states, vec![b.info()]), 0);
}
