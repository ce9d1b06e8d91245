//! Test harness: a real ZooKeeper per test binary, a chroot per test, in-process brokers, a
//! TCP proxy that can cut a connection, and a raw Kafka-protocol client.
//!
//! Processes: ZooKeeper is started from a thread that lives as long as the test binary, with
//! PR_SET_PDEATHSIG, so it dies with the binary even when a test fails; `GREGOR_TEST_ZK`
//! (host:port) uses an already running server instead.

#![allow(dead_code)]

pub mod cluster;
pub mod java;
pub mod prometheus;
pub mod requests;
pub mod schema;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use gregor::broker::Broker;
use gregor::config::BrokerConfig;
use gregor::network::BlockingChannel;
use gregor::protocol::BrokerInfo;
use gregor::protocol::controller::*;
use gregor::protocol::fetch::{self, *};
use gregor::protocol::message;
use gregor::protocol::metadata::*;
use gregor::protocol::offsets::*;
use gregor::protocol::produce::*;
use parking_lot::Mutex;

/// ZooKeeper session timeout for brokers in tests: short, so expiry tests are quick.
pub const SESSION_TIMEOUT_MS: u64 = 2000;

pub fn init_logging() {
    let _ = env_logger::builder().is_test(true).try_init();
}

/// Sets PR_SET_PDEATHSIG so a child dies with the thread that started it.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe and touches only the child's own state.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// A port free now, below Linux's ephemeral range (32768–60999): between this check and the
/// broker binding it (seconds later, after its start-up), the kernel never gives it to an
/// outgoing connection, which a port from the ephemeral range could be (CI run of b0359f3: a
/// broker found its port in use). Ports are handed out in turn from a start that differs per
/// process, so parallel tests of one binary never draw the same.
pub fn free_port() -> u16 {
    static NEXT: OnceLock<AtomicUsize> = OnceLock::new();
    let next = NEXT.get_or_init(|| AtomicUsize::new(std::process::id() as usize * 7919));
    loop {
        let port = 20_000 + (next.fetch_add(1, Ordering::Relaxed) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A connection to `to` from source address `from` (another 127.x address on loopback: a
/// test's stand-in for another host).
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let SocketAddr::V4(to) = to else {
        panic!("IPv4 only");
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we own, with sockaddr_in values that live
    // across each call; on failure the descriptor is closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let src = sockaddr(from, 0);
        let dst = sockaddr(*to.ip(), to.port());
        if libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len) != 0
            || libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len) != 0
        {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(TcpStream::from_raw_fd(fd))
    }
}

/// A field of `/proc/<pid>/status` in kB (VmRSS, VmHWM) or as a count (Threads).
pub fn proc_status(pid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Waits for `f` to hold, polling every 20 ms, failing the test with `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    assert!(
        poll_until(limit, Duration::from_millis(20), f),
        "timed out after {limit:?} waiting for {what}"
    );
}

/// Polls `f` every `every` until it holds (true) or `limit` passes (false).
pub fn poll_until(limit: Duration, every: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !f() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
    true
}

/// Wall-clock milliseconds, as ZooKeeper's `ctime` counts them.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Polls `f` every 200 ms until it is `Ok` or `limit` passes; then, the last error.
pub fn wait_ok(limit: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let mut last = Ok(());
    if poll_until(limit, Duration::from_millis(200), || {
        last = f();
        last.is_ok()
    }) {
        Ok(())
    } else {
        last
    }
}

/// Waits up to `limit` for `child` to exit, then kills it; reaps it either way.
pub fn exit_or_kill(child: &mut Child, limit: Duration) {
    poll_until(limit, Duration::from_millis(20), || {
        child.try_wait().ok().flatten().is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
}

/// Writes `line` to the child's stdin (its cue to finish), then `exit_or_kill`.
pub fn tell_and_wait(child: &mut Child, line: &[u8], limit: Duration) {
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(line);
    }
    exit_or_kill(child, limit);
}

/// (partition, committed offset) of a group's partitions of `topic`, from the rows of `gregor
/// groups --describe` (TOPIC PARTITION COMMITTED LOG-END LAG OWNER), as an operator reads
/// them; nothing where it cannot answer. Either kind of group.
pub fn committed_offsets(bootstrap: &str, group: &str, topic: &str) -> Vec<(i32, i64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_gregor"))
        .args(["groups", "--bootstrap", bootstrap, "--describe", group])
        .output();
    let Ok(out) = out else { return Vec::new() };
    parse_committed_offsets(&String::from_utf8_lossy(&out.stdout), topic)
}

pub fn parse_committed_offsets(text: &str, topic: &str) -> Vec<(i32, i64)> {
    text.lines()
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            (cols.next() == Some(topic)).then_some(())?;
            let p = cols.next()?.parse().ok()?;
            let committed = cols.next()?.parse().ok()?;
            Some((p, committed))
        })
        .collect()
}

/// The address of this binary's ZooKeeper, starting it on first use.
pub fn zk_address() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| {
        if let Ok(a) = std::env::var("GREGOR_TEST_ZK") {
            return a;
        }
        let port = free_port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("zookeeper-owner".into())
            .spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let mut child = start_zookeeper(dir.path(), port);
                tx.send(()).unwrap();
                // This thread must outlive every test (PDEATHSIG fires when it exits): it
                // waits on ZooKeeper, which only ends when the test binary does.
                let status = child.wait();
                eprintln!("test ZooKeeper exited: {status:?}");
            })
            .unwrap();
        rx.recv().unwrap();
        let addr = format!("127.0.0.1:{port}");
        wait_until(
            Duration::from_secs(60),
            "ZooKeeper to serve requests",
            || serving(&addr),
        );
        addr
    })
}

pub fn start_zookeeper(dir: &Path, port: u16) -> Child {
    let cfg = dir.join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             minSessionTimeout=1000\nmaxSessionTimeout=60000\nadmin.enableServer=false\n\
             4lw.commands.whitelist=ruok,srvr\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("java");
    cmd.args([
        "-Xmx256m",
        "-cp",
        "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
    ])
    .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
    .arg(&cfg)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    die_with_parent(&mut cmd);
    cmd.spawn()
        .expect("java and the Debian zookeeper package are needed (scripts/test.sh installs them)")
}

/// `ruok` answers before the server takes sessions; `srvr` names the mode only once it does.
pub fn serving(addr: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"srvr").is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.contains("Mode:")
}

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

/// Holds `/controller` in a chroot so no broker there becomes controller: the test sends the
/// controller's commands itself. Released on drop.
pub struct FakeController {
    pub zk: Arc<gregor::zk::ZkClient>,
}

impl FakeController {
    pub fn claim(zk_connect: &str) -> FakeController {
        let zk = gregor::zk::ZkClient::connect(zk_connect, Duration::from_secs(10)).unwrap();
        zk.create_ephemeral(
            "/controller",
            gregor::zk::paths::elected_broker(0),
            Duration::ZERO,
        )
        .unwrap();
        FakeController { zk }
    }
}

impl Drop for FakeController {
    fn drop(&mut self) {
        self.zk.close();
    }
}

/// A fresh chroot for one test, so tests in a binary never see each other's nodes.
pub fn chroot(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "/gregor-test/{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
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

/// The epochs up to which tests may act as the controller themselves.
pub const TEST_CONTROLLER_EPOCHS: i32 = 100;

/// Tests send controller commands of their own (controller id 0, small epochs). A broker
/// believes an epoch newer than it knows only once ZooKeeper's `/controller_epoch` has reached
/// it, so the harness advances that node past every epoch a test uses (conditionally: a real
/// controller may be counting its own epoch at the same moment).
fn vouch_for_test_controller_epochs(zk: &gregor::zk::ZkClient) {
    loop {
        let (current, version) = match zk.get_data(gregor::zk::paths::CONTROLLER_EPOCH) {
            Ok((d, stat)) => (
                String::from_utf8_lossy(&d).trim().parse().unwrap_or(0),
                Some(stat.version),
            ),
            Err(gregor::zk::ZkError::NoNode) => (0, None),
            Err(e) => panic!("cannot read /controller_epoch: {e:?}"),
        };
        if current >= TEST_CONTROLLER_EPOCHS {
            return;
        }
        let data = TEST_CONTROLLER_EPOCHS.to_string().into_bytes();
        let written = match version {
            Some(v) => zk
                .set_data(gregor::zk::paths::CONTROLLER_EPOCH, data, Some(v))
                .map(|_| ()),
            None => zk.create_persistent(gregor::zk::paths::CONTROLLER_EPOCH, data),
        };
        if written.is_ok() {
            return;
        }
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
        .call(22, version, &|b| req.encode(b, version), |r| {
            InitProducerIdResponse::decode(r, version)
        })
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
        let body = |b: &mut Vec<u8>| {
            encode_request(b, 0, 1, 10_000, &[(topic, vec![(partition, &[][..])])])
        };
        let resp = self
            .chan
            .call(0, 0, &body, |r| ProduceResponse::decode(r, 0))
            .ok()?;
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
        self.chan.request(4, &req).unwrap()
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
        self.chan.request(4, &req).unwrap()
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
        self.chan
            .request::<_, ErrorOnlyResponse>(6, &req)
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
        self.chan.request(5, &req).unwrap()
    }

    pub fn metadata(&mut self, topics: &[&str]) -> MetadataResponse {
        let req = MetadataRequest {
            topics: (!topics.is_empty()).then(|| topics.iter().map(|t| t.to_string()).collect()),
            allow_auto_topic_creation: true,
        };
        self.chan.request(3, &req).unwrap()
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
        let body = |b: &mut Vec<u8>| {
            encode_request(b, version, acks, 10_000, &[(topic, vec![(partition, set)])])
        };
        if acks == 0 {
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
        let resp = self
            .chan
            .call(0, version, &body, |r| ProduceResponse::decode(r, version))
            .unwrap();
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
            .call(1, version, &|b| req.encode(b, version), |r| {
                FetchResponse::decode(r, version)
            })
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
        let resp: ListOffsetsResponse = self.chan.request(2, &req).unwrap();
        let p = &resp.topics[0].1[0];
        (p.error_code, p.offsets.clone())
    }
}

/// A TCP proxy on 127.0.0.1 that forwards to `target` until `cut`, which drops every
/// connection and refuses new ones until `heal`.
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// The live connections (both sides), so `cut` can shut them; each leaves the map when it
    /// ends, so a long run does not pile up descriptors.
    streams: Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>,
}

impl Proxy {
    pub fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>> = Arc::default();
        let (c, s, st, target) = (
            cut.clone(),
            stop.clone(),
            streams.clone(),
            target.to_owned(),
        );
        std::thread::spawn(move || {
            let mut next_id = 0u64;
            for inbound in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(inbound) = inbound else { continue };
                if c.load(Ordering::Acquire) {
                    continue; // dropped: refused while cut
                }
                let Ok(outbound) = TcpStream::connect(&target) else {
                    continue;
                };
                let clones = (|| {
                    Some((
                        (inbound.try_clone().ok()?, outbound.try_clone().ok()?),
                        (inbound.try_clone().ok()?, outbound.try_clone().ok()?),
                    ))
                })();
                let Some((kept, (inb, outb))) = clones else {
                    continue; // out of descriptors: drop this connection, keep serving
                };
                next_id += 1;
                st.lock().insert(next_id, kept);
                pipe(inb, outb, None);
                pipe(outbound, inbound, Some((st.clone(), next_id)));
            }
        });
        Proxy {
            port,
            cut,
            stop,
            streams,
        }
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        for (_, (a, b)) in self.streams.lock().drain() {
            let _ = a.shutdown(std::net::Shutdown::Both);
            let _ = b.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::Release);
    }
}

type ProxyStreams = Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>;

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` until either ends; then shuts both, and forgets the connection.
fn pipe(mut from: TcpStream, mut to: TcpStream, forget: Option<(ProxyStreams, u64)>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
        let _ = from.shutdown(std::net::Shutdown::Both);
        if let Some((streams, id)) = forget {
            streams.lock().remove(&id);
        }
    });
}

/// Runs a command with `stdin`, killing it if it has not finished within `limit`; returns
/// (success, stdout, stderr). A test that runs a tool never hangs on it.
pub fn run_with_deadline(
    cmd: &mut Command,
    stdin: &str,
    limit: Duration,
) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn command");
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        out_reader.join().unwrap(),
        err_reader.join().unwrap(),
    )
}

/// Runs the built `gregor` with `stdin`, under a deadline: (success, stdout, stderr).
pub fn gregor_cli(args: &[&str], stdin: &str) -> (bool, String, String) {
    run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_gregor")).args(args),
        stdin,
        Duration::from_secs(60),
    )
}

/// Runs `gregor args` with `stdin`, asserts it succeeds, and returns its stdout.
pub fn gregor_ok(args: &[&str], stdin: &str) -> String {
    let (ok, out, err) = gregor_cli(args, stdin);
    assert!(ok, "{args:?} failed: {err}");
    out
}

/// Asserts that `gregor args` fails with a message containing `want` on stderr.
pub fn assert_cli_fails(args: &[&str], want: &str) {
    let (ok, _, err) = gregor_cli(args, "x\n");
    assert!(!ok, "{args:?} should fail");
    assert!(err.contains(want), "{args:?}: expected `{want}` in `{err}`");
}

/// Runs kcat (installed by scripts/test.sh) under a deadline and returns its stdout.
/// The python of the virtual environment scripts/test.sh makes under `target/python-venv`,
/// with the Python clients (kafka-python, confluent-kafka, aiokafka) installed in it.
pub fn python() -> Command {
    Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/target/python-venv/bin/python"
    ))
}

pub fn kcat(args: &[&str], stdin: &str) -> String {
    let (ok, out, err) = run_with_deadline(
        Command::new("kcat").args(args),
        stdin,
        Duration::from_secs(60),
    );
    assert!(ok, "kcat {args:?} failed: {err}");
    out
}
