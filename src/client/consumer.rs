//! The group consumer: the consumer side of `consumer-coordinator.txt`.
//!
//! `GroupConsumer::start` runs consumerStartup (steps 1–5) and then a coordinator thread that
//! block-reads the coordinator's connection and answers Ping, Stop and Start. Start opens
//! fetchers (`fetcher`) that put messages on a queue; `poll` delivers them with their topic,
//! partition and offset. Delivered positions are committed through PingResponse and
//! StopResponse when auto-commit is on, or with `commit` (OffsetCommit to any broker).
//! When the coordinator's connection fails, the consumer stops fetching (its partitions may
//! be given to others), consults again and registers with whichever broker is coordinator.

mod fetcher;

use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded};
use parking_lot::Mutex;

use crate::network::BlockingChannel;
use crate::network::channel::read_frame;
use crate::protocol::coordinator::{
    self as proto, ConsultResponse, Empty, ErrorResponse, PartitionOffset, PingResponse,
    RegisterRequest, RegisterResponse, StartRequest, StopResponse, Subscription,
};
use crate::protocol::group_offsets::{CommitPartition, OffsetCommitRequest, OffsetCommitResponse};
use crate::protocol::header::OFFSET_COMMIT;
use crate::protocol::records::OwnedMessage;
use crate::protocol::{Encode, ErrorCode, Reader, decode_classic};
use fetcher::Fetchers;

#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// Brokers to consult first: `host:port`, comma-separated.
    pub bootstrap: String,
    pub group: String,
    /// Defaults to `[hostname]-[pid]-[random]`.
    pub consumer_id: Option<String>,
    pub subscription: Subscription,
    pub auto_commit: bool,
    /// "smallest" or "largest": where to start without a committed offset.
    pub auto_offset_reset: String,
    pub ping_interval: Duration,
    pub max_ping_retries: i16,
    pub fetch_max_bytes: i32,
    pub fetch_max_wait: Duration,
    /// How long `start` keeps trying while no coordinator is elected.
    pub startup_timeout: Duration,
}

impl ConsumerConfig {
    pub fn new(bootstrap: &str, group: &str, subscription: Subscription) -> Self {
        ConsumerConfig {
            bootstrap: bootstrap.to_owned(),
            group: group.to_owned(),
            consumer_id: None,
            subscription,
            auto_commit: true,
            auto_offset_reset: "largest".into(),
            ping_interval: Duration::from_millis(1000),
            max_ping_retries: 3,
            fetch_max_bytes: 1 << 20,
            fetch_max_wait: Duration::from_millis(100),
            startup_timeout: Duration::from_secs(30),
        }
    }
}

#[derive(Debug)]
pub enum ConsumerError {
    /// consumerStartup step 1.2: no broker of the list could be reached.
    AllKnownBrokersNotAvailable(String),
    /// The coordinator refused the registration.
    Refused(ErrorCode),
    /// No coordinator accepted us within `startup_timeout`.
    NoCoordinator(String),
}

impl std::fmt::Display for ConsumerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsumerError::AllKnownBrokersNotAvailable(e) => {
                write!(f, "no known broker is available ({e})")
            }
            ConsumerError::Refused(c) => write!(f, "the coordinator refused to register us: {c:?}"),
            ConsumerError::NoCoordinator(e) => write!(f, "no coordinator accepted us: {e}"),
        }
    }
}

impl std::error::Error for ConsumerError {}

/// A message delivered by `poll`.
#[derive(Debug, Clone)]
pub struct Record {
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

/// What a fetcher hands to `poll`: messages of one partition, from one generation (one Start).
struct Batch {
    generation: u64,
    topic: Arc<str>,
    partition: i32,
    messages: Vec<OwnedMessage>,
}

/// Next offset to deliver per owned partition, for the current generation.
struct Positions {
    generation: u64,
    next: HashMap<(Arc<str>, i32), i64>,
}

struct Shared {
    config: ConsumerConfig,
    consumer_id: String,
    closed: AtomicBool,
    positions: Mutex<Positions>,
    fetchers: Mutex<Option<Fetchers>>,
    queue_tx: Sender<Batch>,
    queue_rx: Receiver<Batch>,
    /// Brokers learnt from ConsultResponses, tried after the bootstrap list.
    cluster: Mutex<Vec<String>>,
    coordinator: Mutex<Option<TcpStream>>,
    assignment: Mutex<BTreeSet<(String, i32)>>,
    /// StartRequests handled.
    starts: AtomicU64,
    /// How long the coordinator may stay silent during a rebalance (its RegisterResponse).
    rebalance_allowance: Mutex<Duration>,
}

pub struct GroupConsumer {
    shared: Arc<Shared>,
    current: Option<(Batch, usize)>,
    thread: Option<JoinHandle<()>>,
}

impl GroupConsumer {
    /// consumerStartup, then the coordinator thread (step 5).
    pub fn start(config: ConsumerConfig) -> Result<GroupConsumer, ConsumerError> {
        let consumer_id = config
            .consumer_id
            .clone()
            .unwrap_or_else(default_consumer_id);
        let (queue_tx, queue_rx) = bounded(64);
        let shared = Arc::new(Shared {
            config,
            consumer_id,
            closed: AtomicBool::new(false),
            positions: Mutex::new(Positions {
                generation: 0,
                next: HashMap::new(),
            }),
            fetchers: Mutex::new(None),
            queue_tx,
            queue_rx,
            cluster: Mutex::new(Vec::new()),
            coordinator: Mutex::new(None),
            assignment: Mutex::new(BTreeSet::new()),
            starts: AtomicU64::new(0),
            rebalance_allowance: Mutex::new(Duration::ZERO),
        });
        let stream = shared.consumer_startup()?;
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("consumer-{}", shared.consumer_id))
            .spawn(move || s.run(stream))
            .expect("spawn consumer thread");
        Ok(GroupConsumer {
            shared,
            current: None,
            thread: Some(thread),
        })
    }

    pub fn consumer_id(&self) -> &str {
        &self.shared.consumer_id
    }

    /// The partitions this consumer was last told to read.
    pub fn assignment(&self) -> BTreeSet<(String, i32)> {
        self.shared.assignment.lock().clone()
    }

    /// How many StartRequests (rebalances that reached this consumer) it has handled.
    pub fn start_count(&self) -> u64 {
        self.shared.starts.load(Ordering::Acquire)
    }

    /// The next message, waiting up to `timeout`.
    pub fn poll(&mut self, timeout: Duration) -> Option<Record> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some((batch, i)) = &mut self.current {
                if let Some(m) = batch.messages.get_mut(*i) {
                    *i += 1;
                    let key = (batch.topic.clone(), batch.partition);
                    let mut pos = self.shared.positions.lock();
                    // A batch fetched before the last Stop may belong to another consumer now.
                    if pos.generation != batch.generation {
                        self.current = None;
                        continue;
                    }
                    pos.next.insert(key, m.offset + 1);
                    return Some(Record {
                        topic: batch.topic.clone(),
                        partition: batch.partition,
                        offset: m.offset,
                        key: m.key.take(),
                        value: m.value.take(),
                    });
                }
                self.current = None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.shared.queue_rx.recv_timeout(left) {
                Ok(b) => self.current = Some((b, 0)),
                Err(_) => return None,
            }
        }
    }

    /// Commits the positions of delivered messages with OffsetCommit v0 to any broker.
    pub fn commit(&self) -> Result<(), String> {
        self.shared.commit()
    }

    /// Leaves the group: stops fetching, commits (with auto-commit on), closes the connection.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.stop_fetchers();
        if self.shared.config.auto_commit
            && let Err(e) = self.shared.commit()
        {
            log::warn!("[consumer {}] final commit: {e}", self.shared.consumer_id);
        }
        if let Some(s) = self.shared.coordinator.lock().take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for GroupConsumer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn default_consumer_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "consumer".into());
    let r = RandomState::new().build_hasher().finish() as u32;
    format!("{host}-{}-{r:08x}", std::process::id())
}

/// The list in a random order (consumerStartup step 1: pick a broker at random).
fn shuffled(mut v: Vec<String>) -> Vec<String> {
    for i in (1..v.len()).rev() {
        let j = (RandomState::new().build_hasher().finish() as usize) % (i + 1);
        v.swap(i, j);
    }
    v
}

impl Shared {
    fn bootstrap(&self) -> String {
        let mut all: Vec<String> = self
            .config
            .bootstrap
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect();
        all.extend(self.cluster.lock().iter().cloned());
        all.dedup();
        all.join(",")
    }

    fn reset_time(&self) -> i64 {
        if self.config.auto_offset_reset == "smallest" {
            -2
        } else {
            -1
        }
    }

    /// A start offset resolved by a fetcher counts as a position to commit.
    fn note_start(&self, generation: u64, tp: &(Arc<str>, i32), offset: i64) {
        let mut pos = self.positions.lock();
        if pos.generation == generation {
            pos.next.entry(tp.clone()).or_insert(offset);
        }
    }

    /// consumerStartup steps 1–4, tried again while no coordinator is elected or the one we
    /// reach says it is not (an election in progress).
    fn consumer_startup(&self) -> Result<TcpStream, ConsumerError> {
        let deadline = Instant::now() + self.config.startup_timeout;
        let mut backoff = Duration::from_millis(100);
        loop {
            let err = match self.consult_and_register() {
                Ok(s) => return Ok(s),
                Err(
                    e @ (ConsumerError::AllKnownBrokersNotAvailable(_)
                    | ConsumerError::NoCoordinator(_)),
                ) => e,
                Err(ConsumerError::Refused(
                    c @ (ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable),
                )) => ConsumerError::NoCoordinator(format!("{c:?}")),
                Err(e) => return Err(e),
            };
            if Instant::now() >= deadline || self.closed.load(Ordering::Acquire) {
                return Err(err);
            }
            log::info!("[consumer {}] {err}; trying again", self.consumer_id);
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    fn consult_and_register(&self) -> Result<TcpStream, ConsumerError> {
        // step 1: a random broker; another when it cannot be reached (1.1); none (1.2)
        let brokers = shuffled(self.bootstrap().split(',').map(str::to_owned).collect());
        let mut last = String::from("empty broker list");
        let mut consult = None;
        for addr in &brokers {
            // step 2: ConsultRequest
            match request(
                addr,
                proto::CONSULT,
                &Empty,
                self.config.ping_interval.max(Duration::from_secs(5)),
            ) {
                Ok(body) => match decode_classic::<ConsultResponse>(&body) {
                    Ok(r) => {
                        consult = Some(r);
                        break;
                    }
                    Err(e) => last = format!("{addr}: bad ConsultResponse: {e}"),
                },
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        let consult = consult.ok_or(ConsumerError::AllKnownBrokersNotAvailable(last))?;
        // step 3: update serverCluster and curCoordinator
        *self.cluster.lock() = consult
            .brokers
            .iter()
            .map(|b| format!("{}:{}", b.broker.host, b.broker.port))
            .collect();
        if consult.error_code != 0 {
            return Err(ConsumerError::NoCoordinator(format!(
                "{:?}",
                ErrorCode::from_code(consult.error_code)
            )));
        }
        let coordinator = consult
            .brokers
            .iter()
            .find(|b| b.broker.id == consult.coordinator_id)
            .ok_or_else(|| {
                ConsumerError::NoCoordinator("coordinator not among live brokers".into())
            })?;
        let addr = format!("{}:{}", coordinator.broker.host, coordinator.broker.port);
        // step 4: RegisterRequest to the coordinator
        let c = &self.config;
        let req = RegisterRequest {
            group_id: c.group.clone(),
            consumer_id: self.consumer_id.clone(),
            auto_commit: c.auto_commit,
            auto_offset_reset: c.auto_offset_reset.clone(),
            ping_interval_ms: c.ping_interval.as_millis().min(i32::MAX as u128) as i32,
            max_ping_retries: c.max_ping_retries,
            subscription: c.subscription.clone(),
        };
        let mut stream = connect(&addr, Duration::from_secs(5))
            .map_err(|e| ConsumerError::NoCoordinator(format!("{addr}: {e}")))?;
        let answer = stream
            .write_all(&proto::frame(proto::REGISTER, &req))
            .and_then(|_| read_frame(&mut stream))
            .map_err(|e| ConsumerError::NoCoordinator(format!("{addr}: {e}")))?;
        let r = decode_classic::<RegisterResponse>(&answer).map_err(|e| {
            ConsumerError::NoCoordinator(format!("{addr}: bad RegisterResponse: {e}"))
        })?;
        match ErrorCode::from_code(r.error_code) {
            ErrorCode::None => {
                let allowance = Duration::from_millis(r.rebalance_timeout_ms.max(0) as u64);
                *self.rebalance_allowance.lock() = allowance;
                log::info!(
                    "[consumer {}] registered in group {} with coordinator {} at {addr}",
                    self.consumer_id,
                    c.group,
                    consult.coordinator_id
                );
                *self.coordinator.lock() = stream.try_clone().ok();
                Ok(stream)
            }
            e => Err(ConsumerError::Refused(e)),
        }
    }

    /// consumerStartup step 5 and after: serve the coordinator; when it is lost, find the
    /// next one.
    fn run(self: &Arc<Self>, mut stream: TcpStream) {
        loop {
            let why = self.serve_coordinator(&mut stream);
            self.stop_fetchers();
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            log::warn!(
                "[consumer {}] lost the coordinator ({why}); consulting again",
                self.consumer_id
            );
            loop {
                match self.consumer_startup() {
                    // Closed while registering: `close` shut the previous connection, not this.
                    Ok(s) if self.closed.load(Ordering::Acquire) => {
                        let _ = s.shutdown(Shutdown::Both);
                        return;
                    }
                    Ok(s) => {
                        stream = s;
                        break;
                    }
                    Err(e) if !self.closed.load(Ordering::Acquire) => {
                        log::warn!("[consumer {}] {e}", self.consumer_id);
                    }
                    Err(_) => return,
                }
            }
        }
    }

    /// Block-reads requests and answers them until the connection fails. Silence longer than
    /// the coordinator's own patience (every ping missed) means it is gone.
    fn serve_coordinator(self: &Arc<Self>, stream: &mut TcpStream) -> String {
        // Every ping missed, plus the longest a rebalance may hold the coordinator up.
        let patience = self.config.ping_interval * (self.config.max_ping_retries.max(0) as u32 + 2)
            + *self.rebalance_allowance.lock();
        if let Err(e) = stream.set_read_timeout(Some(patience)) {
            return e.to_string();
        }
        loop {
            if self.closed.load(Ordering::Acquire) {
                return "closed".into();
            }
            let frame = match read_frame(stream) {
                Ok(f) => f,
                Err(e) => return e.to_string(),
            };
            let mut r = Reader::new(&frame);
            let Ok(type_id) = r.i16("request_type_id") else {
                return "empty request".into();
            };
            let body = &frame[2..];
            let answer = match type_id {
                proto::PING => decode_classic::<proto::PingRequest>(body).map(|_| {
                    proto::frame(
                        proto::PING,
                        &PingResponse {
                            offsets: self.offsets_to_commit(),
                        },
                    )
                }),
                proto::STOP => decode_classic::<Empty>(body).map(|_| {
                    let offsets = self.handle_stop();
                    proto::frame(
                        proto::STOP,
                        &StopResponse {
                            error_code: 0,
                            offsets,
                        },
                    )
                }),
                proto::START => decode_classic::<StartRequest>(body).map(|req| {
                    self.handle_start(req);
                    proto::frame(proto::START, &ErrorResponse { error_code: 0 })
                }),
                other => return format!("unknown request type {other}"),
            };
            let answer = match answer {
                Ok(a) => a,
                Err(e) => return format!("malformed request type {type_id}: {e}"),
            };
            if let Err(e) = stream.write_all(&answer) {
                return e.to_string();
            }
        }
    }

    /// Stop: close the fetchers, clear their queue, report the positions reached.
    fn handle_stop(&self) -> Option<Vec<PartitionOffset>> {
        self.stop_fetchers();
        let offsets = self.offsets_to_commit();
        let mut pos = self.positions.lock();
        pos.generation += 1;
        pos.next.clear();
        self.assignment.lock().clear();
        offsets
    }

    /// Start: fetch the given partitions from the given offsets.
    fn handle_start(self: &Arc<Self>, req: StartRequest) {
        self.stop_fetchers();
        let generation = {
            let mut pos = self.positions.lock();
            pos.generation += 1;
            pos.next.clear();
            pos.generation
        };
        let mut assigned = Vec::with_capacity(req.assigned.len());
        {
            let mut pos = self.positions.lock();
            for p in req.assigned {
                let tp: (Arc<str>, i32) = (Arc::from(p.topic.as_str()), p.partition);
                if p.offset >= 0 {
                    pos.next.insert(tp.clone(), p.offset);
                }
                assigned.push((tp, p.offset));
            }
        }
        *self.assignment.lock() = assigned
            .iter()
            .map(|((t, p), _)| (t.to_string(), *p))
            .collect();
        log::info!(
            "[consumer {}] starting {} partitions: {:?}",
            self.consumer_id,
            assigned.len(),
            self.assignment.lock()
        );
        *self.fetchers.lock() = Some(Fetchers::start(self.clone(), generation, assigned));
        self.starts.fetch_add(1, Ordering::AcqRel);
    }

    fn stop_fetchers(&self) {
        let f = self.fetchers.lock().take();
        if let Some(f) = f {
            f.stop();
        }
        // Clear what they queued: those messages will be fetched by the next owner.
        while self.queue_rx.try_recv().is_ok() {}
    }

    fn offsets_to_commit(&self) -> Option<Vec<PartitionOffset>> {
        self.config.auto_commit.then(|| self.positions_now())
    }

    fn positions_now(&self) -> Vec<PartitionOffset> {
        let mut v: Vec<PartitionOffset> = self
            .positions
            .lock()
            .next
            .iter()
            .map(|((t, p), o)| PartitionOffset {
                topic: t.to_string(),
                partition: *p,
                offset: *o,
            })
            .collect();
        v.sort();
        v
    }

    fn commit(&self) -> Result<(), String> {
        let positions = self.positions_now();
        if positions.is_empty() {
            return Ok(());
        }
        let mut topics: Vec<(String, Vec<CommitPartition>)> = Vec::new();
        for p in positions {
            let cp = CommitPartition {
                partition: p.partition,
                offset: p.offset,
                timestamp: -1,
                leader_epoch: -1,
                metadata: None,
            };
            match topics.last_mut() {
                Some((t, v)) if *t == p.topic => v.push(cp),
                _ => topics.push((p.topic, vec![cp])),
            }
        }
        let req = OffsetCommitRequest {
            group_id: self.config.group.clone(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics,
        };
        let mut last = String::from("no broker");
        for addr in self.bootstrap().split(',') {
            let mut c =
                match BlockingChannel::connect(addr, &self.consumer_id, Duration::from_secs(5)) {
                    Ok(c) => c,
                    Err(e) => {
                        last = format!("{addr}: {e}");
                        continue;
                    }
                };
            let r: OffsetCommitResponse = match c.send(OFFSET_COMMIT, 0, &req) {
                Ok(r) => r,
                Err(e) => {
                    last = format!("{addr}: {e}");
                    continue;
                }
            };
            for (t, ps) in &r.topics {
                for (p, code) in ps {
                    if *code != 0 {
                        return Err(format!("{t}-{p}: {:?}", ErrorCode::from_code(*code)));
                    }
                }
            }
            return Ok(());
        }
        Err(last)
    }
}

/// One request/answer on a fresh connection (ConsultRequest).
fn request(addr: &str, type_id: i16, body: &impl Encode, timeout: Duration) -> io::Result<Vec<u8>> {
    let mut s = connect(addr, timeout)?;
    s.write_all(&proto::frame(type_id, body))?;
    read_frame(&mut s)
}

fn connect(addr: &str, timeout: Duration) -> io::Result<TcpStream> {
    let sa = addr.to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no address for {addr}"),
        )
    })?;
    let s = TcpStream::connect_timeout(&sa, timeout)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    Ok(s)
}
