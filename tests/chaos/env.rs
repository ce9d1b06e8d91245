//! The chaos run's processes: its own ZooKeeper (so it can be restarted) and three
//! `gregor broker` processes, each behind a TCP proxy that is its advertised address, so a
//! broker can be cut off from everyone else while it still reaches ZooKeeper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::Duration;

use gregor::zk::ZkClient;
use gregor::zk::paths;

use crate::cluster::Cluster;
use crate::common::{
    Proxy, exit_or_kill, free_port, now_ms, poll_until, serving, spawn_broker_process,
    start_zookeeper,
};

pub const SESSION_TIMEOUT_MS: u64 = 3000;

pub struct Broker {
    pub port: u16,
    pub proxy: Proxy,
    dir: PathBuf,
    child: Option<Child>,
    /// Wall-clock ms when `child` was spawned: a registration older than that is the
    /// previous incarnation's, still waiting to expire.
    spawned_ms: i64,
    pub paused: bool,
}

pub struct Env {
    pub dir: PathBuf,
    zk_port: u16,
    zk_child: Option<Child>,
    pub zk: Arc<ZkClient>,
    pub brokers: BTreeMap<i32, Broker>,
    /// Brokers that exited without being told to: each is a finding.
    pub exits: Vec<String>,
}

impl Env {
    pub fn start(dir: &Path) -> Env {
        let zk_port = free_port();
        std::fs::create_dir_all(dir.join("zk")).unwrap();
        let zk_child = launch_zookeeper(&dir.join("zk"), zk_port);
        let zk = ZkClient::connect(
            &format!("127.0.0.1:{zk_port}/chaos"),
            Duration::from_secs(10),
        )
        .unwrap();
        let mut env = Env {
            dir: dir.to_path_buf(),
            zk_port,
            zk_child: Some(zk_child),
            zk,
            brokers: BTreeMap::new(),
            exits: Vec::new(),
        };
        for id in 1..=3 {
            let port = free_port();
            let bdir = dir.join(format!("broker-{id}"));
            std::fs::create_dir_all(&bdir).unwrap();
            env.brokers.insert(
                id,
                Broker {
                    port,
                    proxy: Proxy::start(&format!("127.0.0.1:{port}")),
                    dir: bdir,
                    child: None,
                    spawned_ms: 0,
                    paused: false,
                },
            );
            env.spawn(id);
        }
        for id in 1..=3 {
            env.wait_registered(id, Duration::from_secs(60));
        }
        env
    }

    pub fn zk_connect(&self) -> String {
        format!("127.0.0.1:{}/chaos", self.zk_port)
    }

    /// Kills ZooKeeper (its data stays) and starts it again after `down`.
    pub fn restart_zookeeper(&mut self, down: Duration) {
        if let Some(mut c) = self.zk_child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        std::thread::sleep(down);
        self.zk_child = Some(launch_zookeeper(&self.dir.join("zk"), self.zk_port));
    }

    fn spawn(&mut self, id: i32) {
        let zk = self.zk_connect();
        let b = self.brokers.get_mut(&id).unwrap();
        let properties = format!(
            "broker.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{}\n\
             advertised.listeners=PLAINTEXT://127.0.0.1:{}\nlog.dirs={}\nzookeeper.connect={zk}\n\
             zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}\nreplica.lag.time.max.ms=4000\n\
             min.insync.replicas=2\nunclean.leader.election.enable=false\n\
             default.replication.factor=3\nauto.create.topics.enable=false\n\
             controlled.shutdown.retry.backoff.ms=300\ncoordinator.rebalance.timeout.ms=5000\n",
            b.port,
            b.proxy.port,
            b.dir.join("data").display(),
        );
        b.spawned_ms = now_ms();
        b.child = Some(spawn_broker_process(&b.dir, &properties));
        b.paused = false;
    }

    pub fn wait_registered(&self, id: i32, limit: Duration) -> bool {
        poll_until(limit, Duration::from_millis(50), || {
            self.registered(id).is_ok()
        })
    }

    /// Notes every broker process that has ended on its own, and forgets it, so the next
    /// heal starts it again.
    pub fn reap(&mut self) {
        for (id, b) in &mut self.brokers {
            if let Some(status) = b.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                let what = format!("broker {id} exited by itself ({status}); see its broker.log");
                eprintln!("[chaos] {what}");
                self.exits.push(what);
                b.child = None;
            }
        }
    }

    fn signal(&self, id: i32, sig: i32) {
        if let Some(c) = &self.brokers[&id].child {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }
}

impl Cluster for Env {
    fn zk(&self) -> &ZkClient {
        &self.zk
    }

    fn broker_ids(&self) -> Vec<i32> {
        self.brokers.keys().copied().collect()
    }

    /// The broker's own address (not the proxy): the checker reads replicas directly.
    fn addr(&self, id: i32) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.brokers[&id].port).into()
    }

    /// Every broker's advertised (proxied) address.
    fn bootstrap(&self) -> String {
        self.brokers
            .values()
            .map(|b| format!("127.0.0.1:{}", b.proxy.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn is_running(&mut self, id: i32) -> bool {
        self.reap();
        self.brokers[&id].child.is_some()
    }

    fn is_paused(&self, id: i32) -> bool {
        self.brokers[&id].paused
    }

    fn kill9(&mut self, id: i32) {
        let b = self.brokers.get_mut(&id).unwrap();
        if let Some(mut c) = b.child.take() {
            // SAFETY: resuming a possibly stopped child so the kill is delivered.
            unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
            let _ = c.kill();
            let _ = c.wait();
        }
        b.paused = false;
    }

    /// SIGTERM: controlled shutdown; waits for the exit (kill -9 after a minute).
    fn terminate(&mut self, id: i32) {
        self.signal(id, libc::SIGTERM);
        let b = self.brokers.get_mut(&id).unwrap();
        if let Some(mut c) = b.child.take() {
            exit_or_kill(&mut c, Duration::from_secs(60));
        }
    }

    fn restart(&mut self, id: i32) {
        if !self.is_running(id) {
            self.spawn(id);
        }
    }

    fn pause(&mut self, id: i32) {
        self.signal(id, libc::SIGSTOP);
        self.brokers.get_mut(&id).unwrap().paused = true;
    }

    fn resume(&mut self, id: i32) {
        self.signal(id, libc::SIGCONT);
        self.brokers.get_mut(&id).unwrap().paused = false;
    }

    /// Registered by the process running now, not by its previous incarnation.
    fn registered(&self, id: i32) -> Result<(), String> {
        match self.zk.exists(&paths::broker_path(id)) {
            Ok(Some(stat)) if stat.ctime >= self.brokers[&id].spawned_ms => Ok(()),
            Ok(Some(_)) => Err(format!(
                "broker {id}: only its previous incarnation's registration is there"
            )),
            Ok(None) => Err(format!("broker {id} is not registered")),
            Err(e) => Err(format!("ZooKeeper: {e:?}")),
        }
    }

    fn exits(&self) -> &[String] {
        &self.exits
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn as_loopback(&mut self) -> Option<&mut Env> {
        Some(self)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for id in self.broker_ids() {
            self.kill9(id);
        }
        if let Some(mut c) = self.zk_child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.zk.close();
    }
}

/// Starts ZooKeeper on `port` with its data in `dir`, and waits until it serves.
fn launch_zookeeper(dir: &Path, port: u16) -> Child {
    let child = start_zookeeper(dir, port);
    let addr = format!("127.0.0.1:{port}");
    assert!(
        poll_until(Duration::from_secs(60), Duration::from_millis(50), || {
            serving(&addr)
        }),
        "ZooKeeper did not start"
    );
    child
}
