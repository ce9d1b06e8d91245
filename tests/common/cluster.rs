//! A cluster of `gregor broker` child processes on 127.0.0.1, for tests that kill -9, pause or
//! restart brokers. Children die with the test (PR_SET_PDEATHSIG) and are killed on drop.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gregor::protocol::ErrorCode;
use gregor::zk::ZkClient;
use gregor::zk::admin;
use gregor::zk::paths::{self, LeaderAndIsr};

use super::{
    Client, SESSION_TIMEOUT_MS, chroot, free_port, poll_until, spawn_broker_process, wait_until,
    zk_address,
};

pub struct BrokerProcess {
    pub id: i32,
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
}

pub struct Cluster {
    pub zk_connect: String,
    pub zk: Arc<ZkClient>,
    pub brokers: BTreeMap<i32, BrokerProcess>,
    extra: Vec<(String, String)>,
    /// Each broker's own settings, after `extra`.
    own: BTreeMap<i32, Vec<(String, String)>>,
    /// The test's name, for the folder a failing test's brokers are kept in.
    name: String,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    /// Starts `n` brokers (ids 1..=n) in a fresh chroot and waits until all are registered.
    pub fn start(name: &str, n: i32, extra: &[(&str, &str)]) -> Cluster {
        Self::start_each(name, n, extra, |_| Vec::new())
    }

    /// `start`, with settings of each broker's own besides (`own(id)`).
    pub fn start_each(
        name: &str,
        n: i32,
        extra: &[(&str, &str)],
        own: impl Fn(i32) -> Vec<(String, String)>,
    ) -> Cluster {
        Self::start_prepared(name, n, extra, own, |_| {})
    }

    /// `start_each`, after `prepare` has had the cluster's ZooKeeper address (with its
    /// chroot) to write what the brokers must find at start (the brokers' own SCRAM user).
    pub fn start_prepared(
        name: &str,
        n: i32,
        extra: &[(&str, &str)],
        own: impl Fn(i32) -> Vec<(String, String)>,
        prepare: impl FnOnce(&str),
    ) -> Cluster {
        super::init_logging();
        let zk_connect = format!("{}{}", zk_address(), chroot(name));
        prepare(&zk_connect);
        let zk = ZkClient::connect(&zk_connect, Duration::from_secs(10)).unwrap();
        let mut c = Cluster {
            zk_connect,
            zk,
            brokers: BTreeMap::new(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            own: (1..=n).map(|id| (id, own(id))).collect(),
            name: name.to_owned(),
            _tmp: tempfile::tempdir().unwrap(),
        };
        for id in 1..=n {
            let dir = c._tmp.path().join(format!("broker-{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            c.brokers.insert(
                id,
                BrokerProcess {
                    id,
                    port: free_port(),
                    dir,
                    child: None,
                },
            );
            c.spawn(id);
        }
        for id in 1..=n {
            c.wait_registered(id);
        }
        c
    }

    fn spawn(&mut self, id: i32) {
        let b = self.brokers.get_mut(&id).unwrap();
        let mut text = format!(
            "broker.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{}\nlog.dirs={}\nzookeeper.connect={}\n\
             zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}\nreplica.lag.time.max.ms=3000\n\
             controlled.shutdown.retry.backoff.ms=300\n",
            b.port,
            b.dir.join("data").display(),
            self.zk_connect
        );
        // `{port}` in a value stands for this broker's client port (listeners of its own).
        let own = self.own.get(&id).into_iter().flatten();
        for (k, v) in self.extra.iter().chain(own) {
            text.push_str(&format!(
                "{k}={}\n",
                v.replace("{port}", &b.port.to_string())
            ));
        }
        b.child = Some(spawn_broker_process(&b.dir, &text));
    }

    /// Waits for broker `id`'s registration; when it does not come, the failure shows why:
    /// whether the process has exited, and the end of its log.
    pub fn wait_registered(&mut self, id: i32) {
        let registered = poll_until(Duration::from_secs(30), Duration::from_millis(50), || {
            matches!(self.zk.exists(&paths::broker_path(id)), Ok(Some(_)))
        });
        if !registered {
            let exited = self
                .brokers
                .get_mut(&id)
                .and_then(|b| b.child.as_mut())
                .map(|c| c.try_wait());
            let log = self.log_of(id);
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "broker {id} did not register within 30 s (process: {exited:?}); its log ends:\n{}",
                tail.join("\n")
            );
        }
    }

    pub fn pid(&self, id: i32) -> i32 {
        self.brokers[&id]
            .child
            .as_ref()
            .expect("broker running")
            .id() as i32
    }

    fn signal(&self, id: i32, sig: i32) {
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(self.pid(id), sig) };
    }

    /// kill -9, and reap the process.
    pub fn kill9(&mut self, id: i32) {
        if let Some(mut c) = self.brokers.get_mut(&id).unwrap().child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether broker `id`'s process was started and not killed or stopped by the test.
    pub fn is_running(&self, id: i32) -> bool {
        self.brokers.get(&id).is_some_and(|b| b.child.is_some())
    }

    /// SIGTERM (controlled shutdown) and wait for the process to exit.
    pub fn terminate(&mut self, id: i32) -> std::process::ExitStatus {
        self.signal(id, libc::SIGTERM);
        let mut c = self.brokers.get_mut(&id).unwrap().child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "broker {id} did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGSTOP, returning once the kernel shows the process stopped: a test that pauses a
    /// follower then produces must not race a fetch it still had time to make.
    pub fn pause(&self, id: i32) {
        self.signal(id, libc::SIGSTOP);
        let stat = format!("/proc/{}/stat", self.pid(id));
        // The state is the field after the command's closing parenthesis: `T` when stopped.
        let stopped = || {
            std::fs::read_to_string(&stat)
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
                .unwrap_or(false)
        };
        assert!(
            super::poll_until(Duration::from_secs(10), Duration::from_millis(1), stopped),
            "broker {id} did not stop"
        );
    }

    pub fn resume(&self, id: i32) {
        self.signal(id, libc::SIGCONT);
    }

    /// Sets `key` for every broker from its next start on (as an operator edits
    /// server.properties before a rolling restart); `value` replaces an earlier one.
    pub fn set_config(&mut self, key: &str, value: &str) {
        self.extra.retain(|(k, _)| k != key);
        self.extra.push((key.to_owned(), value.to_owned()));
    }

    /// Starts a stopped (killed or terminated) broker again on the same port and data.
    pub fn restart(&mut self, id: i32) {
        assert!(
            self.brokers[&id].child.is_none(),
            "broker {id} is still running"
        );
        self.spawn(id);
        self.wait_registered(id);
    }

    pub fn log_of(&self, id: i32) -> String {
        std::fs::read_to_string(self.brokers[&id].dir.join("broker.log")).unwrap_or_default()
    }

    /// Every broker's address, as a client's `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.brokers
            .values()
            .map(|b| format!("127.0.0.1:{}", b.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Where broker `id` serves `/metrics` (with `metrics.listener=127.0.0.1:0`): the address
    /// its log names last, once it has started.
    pub fn metrics_addr(&self, id: i32) -> std::net::SocketAddr {
        let mut found = None;
        let named = poll_until(Duration::from_secs(30), Duration::from_millis(50), || {
            found = self.log_of(id).lines().rev().find_map(|l| {
                let rest = l.split("metrics at http://").nth(1)?;
                rest.strip_suffix("/metrics")?.parse().ok()
            });
            found.is_some()
        });
        assert!(named, "broker {id} never said where its metrics are");
        found.unwrap()
    }

    pub fn data_dir(&self, id: i32) -> PathBuf {
        self.brokers[&id].dir.join("data")
    }

    pub fn addr(&self, id: i32) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.brokers[&id].port).into()
    }

    pub fn client(&self, id: i32) -> Client {
        Client::connect(self.addr(id))
    }

    pub fn live(&self) -> Vec<i32> {
        paths::live_brokers(&self.zk)
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect()
    }

    pub fn create_topic(&self, topic: &str, partitions: i32, rf: i32) {
        admin::create_topic(&self.zk, topic, partitions, rf, None).unwrap();
        self.wait_all_led(topic);
    }

    pub fn create_topic_on(&self, topic: &str, assignment: &str) {
        admin::create_topic(&self.zk, topic, 0, 0, Some(assignment)).unwrap();
        self.wait_all_led(topic);
    }

    pub fn state(&self, topic: &str, partition: i32) -> Option<LeaderAndIsr> {
        paths::leader_and_isr(&self.zk, topic, partition)
            .unwrap()
            .map(|(l, _)| l)
    }

    /// The broker `/controller` names.
    pub fn controller(&self) -> Option<i32> {
        let (d, _) = self.zk.get_data(paths::CONTROLLER).ok()?;
        let e: paths::ElectedBroker = serde_json::from_slice(&d).ok()?;
        Some(e.brokerid)
    }

    pub fn leader(&self, topic: &str, partition: i32) -> i32 {
        self.state(topic, partition).map_or(-1, |s| s.leader)
    }

    /// Waits until `broker` is back in the ISR of every partition of `topic` it replicates
    /// (after a restart, before another broker may be stopped without leaving partitions
    /// below `min.insync.replicas`).
    pub fn wait_in_isr(&self, topic: &str, broker: i32) {
        let assignment = paths::topic_assignment(&self.zk, topic).unwrap().unwrap();
        wait_until(
            Duration::from_secs(60),
            &format!("broker {broker} back in the ISRs of {topic}"),
            || {
                assignment.iter().all(|(p, replicas)| {
                    !replicas.contains(&broker)
                        || self
                            .state(topic, *p)
                            .is_some_and(|s| s.isr.contains(&broker))
                })
            },
        );
    }

    /// Waits until every partition of `topic` has a live leader that answers produce.
    pub fn wait_all_led(&self, topic: &str) {
        let n = paths::topic_assignment(&self.zk, topic)
            .unwrap()
            .unwrap()
            .len() as i32;
        for p in 0..n {
            self.wait_leader_serving(topic, p, |_| true);
        }
    }

    /// Waits until partition `p`'s leader satisfies `ok`, is live, and accepts an empty produce
    /// (it acts on the LeaderAndIsr, not only ZooKeeper knows); returns it.
    pub fn wait_leader_serving(&self, topic: &str, p: i32, ok: impl Fn(i32) -> bool) -> i32 {
        let mut leader = -1;
        wait_until(
            Duration::from_secs(40),
            &format!("{topic}-{p} to get a serving leader"),
            || {
                leader = self.leader(topic, p);
                leader >= 0
                    && ok(leader)
                    && self.live().contains(&leader)
                    && self.brokers[&leader].child.is_some()
                    // Not yet listening after a restart whose old registration was still
                    // in ZooKeeper: asked again.
                    && Client::try_connect(self.addr(leader))
                        .and_then(|mut c| c.try_produce_empty(topic, p))
                        == Some(ErrorCode::None.code())
            },
        );
        leader
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for b in self.brokers.values_mut() {
            if let Some(mut c) = b.child.take() {
                // SAFETY: resuming a possibly stopped child so the kill is delivered.
                unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        self.zk.close();
        if std::thread::panicking() {
            self.keep_for_the_failure();
        }
    }
}

impl Cluster {
    /// A failing test's brokers (logs, data, configs) are kept under
    /// `target/tmp/failed-clusters/<name>-<pid>/`, and the failure names the folder, so a
    /// failure seen once can be read afterwards.
    fn keep_for_the_failure(&mut self) {
        let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("failed-clusters")
            .join(format!("{}-{}", self.name, std::process::id()));
        let tmp = std::mem::replace(&mut self._tmp, tempfile::tempdir().unwrap());
        let _ = std::fs::create_dir_all(kept.parent().unwrap());
        match std::fs::rename(tmp.keep(), &kept) {
            Ok(()) => eprintln!("the brokers' logs and data are kept in {}", kept.display()),
            Err(e) => eprintln!(
                "could not keep the brokers' logs in {}: {e}",
                kept.display()
            ),
        }
    }
}
