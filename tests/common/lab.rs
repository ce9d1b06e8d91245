//! A cluster across hosts on one machine: the network namespaces of `scripts/hosts.sh` (one
//! per host, each with its own 198.18.0.x address, joined by a bridge), ZooKeeper as a 3-node
//! ensemble on hosts zk1..zk3, and `gregor broker` processes on hosts b1..b5. The thread that
//! starts a `Lab` moves into the `client` host (setns), and so does every thread it starts
//! after that: the test's own clients reach the cluster the way a client machine would, and
//! can be cut off from it.
//!
//! Everything is removed on drop, and by `scripts/hosts.sh reap` when the test process was
//! killed before it could drop (the tag names its process).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use gregor::protocol::ErrorCode;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};
use gregor::zk::ZkClient;
use gregor::zk::paths::{self, CONTROLLER, COORDINATOR, ElectedBroker};

use parking_lot::Mutex;

use crate::common::{Client, die_with_parent, exit_or_kill, now_ms, poll_until, wait_ok};

const HOSTS_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hosts.sh");
pub const ZK_HOSTS: [&str; 3] = ["zk1", "zk2", "zk3"];
pub const ZK_CONNECT: &str = "198.18.0.11:2181,198.18.0.12:2181,198.18.0.13:2181/lab";

/// Why hosts cannot be made here (not root, no iproute2, no namespaces), or `None`. With
/// `GREGOR_REQUIRE_HOSTS=1` (set by `scripts/test.sh` once it has made a namespace) a reason
/// is a failure instead of a skip.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let why = if unsafe { libc::geteuid() } != 0 {
        Some("network namespaces need root".to_owned())
    } else {
        let probe = format!("gt{}probe", std::process::id());
        match Command::new("ip").args(["netns", "add", &probe]).output() {
            Err(e) => Some(format!("iproute2's `ip` cannot run: {e}")),
            Ok(o) if !o.status.success() => Some(format!(
                "`ip netns add` fails: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Ok(_) => {
                let _ = Command::new("ip").args(["netns", "del", &probe]).status();
                None
            }
        }
    };
    if let Some(why) = &why
        && std::env::var("GREGOR_REQUIRE_HOSTS").as_deref() == Ok("1")
    {
        panic!("GREGOR_REQUIRE_HOSTS=1 but {why}");
    }
    why
}

/// True (after printing why) when hosts cannot be made here: the caller skips its test.
pub fn skipped(test: &str) -> bool {
    let why = unavailable();
    if let Some(why) = &why {
        eprintln!("SKIPPED {test}: {why}");
    }
    why.is_some()
}

/// The address of a host of `scripts/hosts.sh` (zk1..zk3, b1..b5, client), asked of the
/// script once per host.
pub fn host_addr(host: &str) -> String {
    static ADDRS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let mut addrs = ADDRS.get_or_init(Default::default).lock();
    addrs
        .entry(host.to_owned())
        .or_insert_with(|| {
            let out = Command::new(HOSTS_SH)
                .args(["addr", host])
                .output()
                .unwrap();
            assert!(out.status.success(), "no host {host}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        })
        .clone()
}

/// This thread in another network namespace until dropped (then back where it was). Threads
/// and processes it starts meanwhile stay in the namespace they were started in.
pub struct InNamespace {
    original: File,
}

impl InNamespace {
    pub fn enter(ns: &str) -> InNamespace {
        let original = File::open("/proc/thread-self/ns/net").unwrap();
        let target = File::open(format!("/run/netns/{ns}")).unwrap();
        // SAFETY: setns on a namespace file we hold open; it changes only this thread.
        let r = unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
        InNamespace { original }
    }
}

impl Drop for InNamespace {
    fn drop(&mut self) {
        // SAFETY: as in `enter`.
        unsafe { libc::setns(self.original.as_raw_fd(), libc::CLONE_NEWNET) };
    }
}

struct LabBroker {
    dir: PathBuf,
    child: Option<Child>,
    /// Wall-clock ms at spawn: a registration older than that is a previous incarnation's.
    spawned_ms: i64,
}

pub struct Lab {
    pub tag: String,
    pub dir: PathBuf,
    pub session_timeout_ms: u64,
    /// ZooKeeper's tick: it expires sessions only at tick boundaries.
    zk_tick_ms: u64,
    extra: String,
    zk_children: [Option<Child>; 3],
    brokers: BTreeMap<i32, LabBroker>,
    /// Brokers that exited without being told to: each is a finding.
    pub exits: Vec<String>,
    /// The test's session, from the client host; `None` only while the ensemble starts.
    zk: Option<Arc<ZkClient>>,
    /// Taken first on drop: `scripts/hosts.sh down` kills what runs in the namespaces.
    in_client: Option<InNamespace>,
}

impl Lab {
    /// The hosts, the ensemble (once it has a leader), and `brokers` brokers (once each has
    /// registered). `extra` is added to every broker's properties.
    pub fn start(
        dir: &Path,
        brokers: i32,
        session_timeout_ms: u64,
        zk_tick_ms: u64,
        extra: &str,
    ) -> Lab {
        static RUNS: AtomicU32 = AtomicU32::new(0);
        let _ = Command::new(HOSTS_SH).arg("reap").status();
        let tag = format!(
            "gt{}x{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        hosts(&["up", &tag]);
        let in_client = InNamespace::enter(&format!("{tag}-client"));
        let mut lab = Lab {
            tag,
            dir: dir.to_path_buf(),
            session_timeout_ms,
            zk_tick_ms,
            extra: extra.to_owned(),
            zk_children: [None, None, None],
            brokers: BTreeMap::new(),
            exits: Vec::new(),
            zk: None,
            in_client: Some(in_client),
        };
        for i in 0..3 {
            lab.start_zookeeper(i);
        }
        assert!(
            poll_until(Duration::from_secs(90), Duration::from_millis(100), || {
                ZK_HOSTS
                    .iter()
                    .all(|h| srvr(&format!("{}:2181", host_addr(h))).contains("Mode:"))
            }),
            "the ZooKeeper ensemble did not form; see {}/zk*/zookeeper.log",
            dir.display()
        );
        lab.zk = Some(ZkClient::connect(ZK_CONNECT, Duration::from_secs(10)).unwrap());
        for id in 1..=brokers {
            let bdir = dir.join(format!("broker-{id}"));
            std::fs::create_dir_all(&bdir).unwrap();
            lab.brokers.insert(
                id,
                LabBroker {
                    dir: bdir,
                    child: None,
                    spawned_ms: 0,
                },
            );
            lab.restart(id);
        }
        for id in 1..=brokers {
            assert!(
                lab.wait_registered(id, Duration::from_secs(60)),
                "broker {id} did not register"
            );
        }
        lab
    }

    pub fn zk(&self) -> &ZkClient {
        self.zk.as_ref().expect("the ensemble serves")
    }

    /// Ensemble member `i` (0..3) on host zk{i+1}: `server.N` lines for all three.
    pub fn start_zookeeper(&mut self, i: usize) {
        let dir = self.dir.join(ZK_HOSTS[i]);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("data/myid"), format!("{}\n", i + 1)).unwrap();
        let servers: String = (0..3)
            .map(|j| format!("server.{}={}:2888:3888\n", j + 1, host_addr(ZK_HOSTS[j])))
            .collect();
        let cfg = dir.join("zoo.cfg");
        let ip = host_addr(ZK_HOSTS[i]);
        std::fs::write(&cfg, zoo_cfg(&dir, &ip, &servers, self.zk_tick_ms)).unwrap();
        let log = File::create(dir.join("zookeeper.log")).unwrap();
        let mut cmd = self.on(ZK_HOSTS[i], "java");
        cmd.args([
            "-Xmx192m",
            "-cp",
            "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        ])
        .arg(&cfg)
        .stdout(log.try_clone().unwrap())
        .stderr(log);
        self.zk_children[i] = Some(cmd.spawn().expect("java and the zookeeper package"));
    }

    /// kill -9 of ensemble member `i`; its data stays for `start_zookeeper`.
    pub fn kill_zookeeper(&mut self, i: usize) {
        if let Some(mut c) = self.zk_children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The ensemble member that is leader now (by `srvr`), if one is.
    pub fn zookeeper_leader(&self) -> Option<usize> {
        (0..3).find(|i| srvr(&format!("{}:2181", host_addr(ZK_HOSTS[*i]))).contains("Mode: leader"))
    }

    /// `program` to run on `host`: `ip netns exec`, dying with this thread.
    pub fn on(&self, host: &str, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &format!("{}-{host}", self.tag), program])
            .stdin(Stdio::null());
        die_with_parent(&mut cmd);
        cmd
    }

    pub fn broker_host(id: i32) -> String {
        format!("b{id}")
    }

    pub fn addr(&self, id: i32) -> SocketAddr {
        format!("{}:9092", host_addr(&Lab::broker_host(id)))
            .parse()
            .unwrap()
    }

    pub fn bootstrap(&self) -> String {
        self.brokers
            .keys()
            .map(|id| self.addr(*id).to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn broker_ids(&self) -> Vec<i32> {
        self.brokers.keys().copied().collect()
    }

    /// Starts broker `id` on its host unless it runs; its data stays across restarts.
    pub fn restart(&mut self, id: i32) {
        if self.is_running(id) {
            return;
        }
        let host = Lab::broker_host(id);
        let ip = host_addr(&host);
        let b = &self.brokers[&id];
        let props = b.dir.join("server.properties");
        std::fs::write(
            &props,
            format!(
                "broker.id={id}\nlisteners=PLAINTEXT://{ip}:9092\nlog.dirs={}\n\
                 zookeeper.connect={ZK_CONNECT}\nzookeeper.session.timeout.ms={}\n\
                 metrics.listener={ip}:9404\n{}\n",
                b.dir.join("data").display(),
                self.session_timeout_ms,
                self.extra
            ),
        )
        .unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(b.dir.join("broker.log"))
            .unwrap();
        let mut cmd = self.on(&host, env!("CARGO_BIN_EXE_gregor"));
        cmd.args(["broker", "--config"])
            .arg(&props)
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd.spawn().expect("spawn gregor broker");
        let b = self.brokers.get_mut(&id).unwrap();
        b.child = Some(child);
        b.spawned_ms = now_ms();
    }

    pub fn kill9(&mut self, id: i32) {
        if let Some(mut c) = self.brokers.get_mut(&id).unwrap().child.take() {
            // SAFETY: resuming our own possibly stopped child so the kill is delivered.
            unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP / SIGCONT of broker `id`.
    pub fn signal(&self, id: i32, sig: i32) {
        if let Some(c) = &self.brokers[&id].child {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    /// SIGTERM (controlled shutdown), waiting for the exit (kill -9 after a minute).
    pub fn terminate(&mut self, id: i32) {
        self.signal(id, libc::SIGTERM);
        if let Some(mut c) = self.brokers.get_mut(&id).unwrap().child.take() {
            exit_or_kill(&mut c, Duration::from_secs(60));
        }
    }

    /// Running, and not exited by itself (an exit is noted in `exits`, and forgotten so a
    /// restart starts it again).
    pub fn is_running(&mut self, id: i32) -> bool {
        let b = self.brokers.get_mut(&id).unwrap();
        match b.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(status) => {
                b.child = None;
                let what = format!("broker {id} exited by itself ({status:?}); see its broker.log");
                eprintln!("[lab] {what}");
                self.exits.push(what);
                false
            }
            None => false,
        }
    }

    pub fn wait_registered(&self, id: i32, limit: Duration) -> bool {
        poll_until(limit, Duration::from_millis(50), || {
            self.registered(id).is_ok()
        })
    }

    /// Registered by the process running now, not by its previous incarnation.
    pub fn registered(&self, id: i32) -> Result<(), String> {
        match self.zk().exists(&paths::broker_path(id)) {
            Ok(Some(stat)) if stat.ctime >= self.brokers[&id].spawned_ms => Ok(()),
            Ok(Some(_)) => Err(format!("broker {id}: only an older registration is there")),
            Ok(None) => Err(format!("broker {id} is not registered")),
            Err(e) => Err(format!("ZooKeeper: {e:?}")),
        }
    }

    pub fn controller(&self) -> Option<i32> {
        paths::read_json::<ElectedBroker>(self.zk(), CONTROLLER)
            .ok()
            .flatten()
            .map(|e| e.brokerid)
    }

    pub fn coordinator(&self) -> Option<i32> {
        paths::read_json::<ElectedBroker>(self.zk(), COORDINATOR)
            .ok()
            .flatten()
            .map(|e| e.brokerid)
    }

    /// (leader, leader epoch, ISR) of a partition, from ZooKeeper.
    pub fn leader_and_isr(&self, topic: &str, p: i32) -> Option<(i32, i32, Vec<i32>)> {
        paths::leader_and_isr(self.zk(), topic, p)
            .ok()
            .flatten()
            .map(|(l, _)| (l.leader, l.leader_epoch, l.isr))
    }

    /// Healed: every broker running and registered, every partition of `topics` led with
    /// all its replicas in the ISR, and every leader answering a produce.
    pub fn health(&mut self, topics: &[(&str, i32)]) -> Result<(), String> {
        for id in self.broker_ids() {
            if !self.is_running(id) {
                return Err(format!("broker {id} is not running"));
            }
            self.registered(id)?;
        }
        for (topic, partitions) in topics {
            for p in 0..*partitions {
                let replicas = paths::topic_assignment(self.zk(), topic)
                    .map_err(|e| format!("ZooKeeper: {e:?}"))?
                    .and_then(|a| a.get(&p).cloned())
                    .ok_or(format!("{topic}-{p} has no assignment"))?;
                let (leader, _, isr) = self
                    .leader_and_isr(topic, p)
                    .ok_or(format!("{topic}-{p} has no state"))?;
                if leader < 0 || isr.len() != replicas.len() {
                    return Err(format!("{topic}-{p}: leader {leader} isr {isr:?}"));
                }
                let answer = Client::try_connect(self.addr(leader))
                    .and_then(|mut c| c.try_produce_empty(topic, p));
                if answer != Some(ErrorCode::None.code()) {
                    return Err(format!(
                        "{topic}-{p}: leader {leader} answered a produce with {answer:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn wait_healthy(&mut self, topics: &[(&str, i32)], limit: Duration) -> Result<(), String> {
        wait_ok(limit, || self.health(topics))
    }

    /// `scripts/hosts.sh isolate`: the host's link down.
    pub fn isolate(&self, host: &str) {
        hosts(&["isolate", &self.tag, host]);
    }

    /// No traffic between the two groups of hosts, either way.
    pub fn cut(&self, a: &[&str], b: &[&str]) {
        hosts(&["cut", &self.tag, &a.join(" "), &b.join(" ")]);
    }

    /// `from`'s packets to `to` are dropped; `to`'s still arrive.
    pub fn oneway(&self, from: &str, to: &str) {
        hosts(&["oneway", &self.tag, from, to]);
    }

    pub fn slow(&self, host: &str, kbit: u32) {
        hosts(&["slow", &self.tag, host, &kbit.to_string()]);
    }

    pub fn heal(&self) {
        hosts(&["heal", &self.tag]);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.in_client.take();
        for id in self.broker_ids() {
            self.kill9(id);
        }
        for i in 0..3 {
            self.kill_zookeeper(i);
        }
        if let Some(zk) = &self.zk {
            zk.close();
        }
        hosts(&["down", &self.tag]);
    }
}

/// One produce of `values` with `acks` straight to `addr`: the partition's error code and
/// base offset, or `Err` when the round trip failed (a cut connection, no answer in time).
pub fn try_produce(
    addr: SocketAddr,
    acks: i16,
    topic: &str,
    p: i32,
    values: &[&[u8]],
    timeout: Duration,
) -> Result<(i16, i64), String> {
    let chan = gregor::network::BlockingChannel::connect(addr, "gregor-lab", timeout)
        .map_err(|e| e.to_string())?;
    let mut c = Client { chan };
    let set = crate::common::message_set(values);
    let body = ProduceSets {
        acks,
        timeout_ms: timeout.as_millis() as i32 / 2,
        topics: &[(topic, vec![(p, &set[..])])],
    };
    let resp = c
        .chan
        .send::<ProduceResponse>(0, 0, &body)
        .map_err(|e| e.to_string())?;
    let part = &resp.topics[0].1[0];
    Ok((part.error_code, part.base_offset))
}

fn hosts(args: &[&str]) {
    let out = Command::new(HOSTS_SH).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "scripts/hosts.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn zoo_cfg(dir: &Path, ip: &str, servers: &str, tick_ms: u64) -> String {
    // Short ticks (500 ms in most tests): a follower that misses 4 (syncLimit) is dropped, so
    // quorum loss and recovery take seconds, not the defaults' tens of seconds.
    format!(
        "tickTime={tick_ms}\ninitLimit=20\nsyncLimit=4\ndataDir={}\nclientPort=2181\n\
         clientPortAddress={ip}\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n\
         admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat\n{servers}",
        dir.join("data").display()
    )
}

/// ZooKeeper's `srvr` answer, or "" when it gives none within 2 s.
fn srvr(addr: &str) -> String {
    use std::io::{Read, Write};
    let Ok(addr) = addr.parse::<SocketAddr>() else {
        return String::new();
    };
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut out = String::new();
    if s.write_all(b"srvr").is_ok() {
        let _ = s.read_to_string(&mut out);
    }
    out
}
