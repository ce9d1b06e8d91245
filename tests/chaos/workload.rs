//! The traffic of a chaos run: producers writing unique, sequence-numbered messages with
//! acks=all and no retries (so an acknowledged message was sent exactly once), recording each
//! acknowledgement with its partition and offset; librdkafka's idempotent producer
//! (`tests/clients/idempotent_producer.py`), which retries everything until acknowledged and
//! must still store each message once; and a consumer group reading throughout (gregor's, in
//! the spec's protocol). The `--hosts` run adds a group in Kafka's protocol: two librdkafka
//! members (`tests/clients/group_member.py`) committing as they go.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
use gregor::client::producer::{Producer, ProducerConfig};
use gregor::protocol::coordinator::Subscription;
use parking_lot::Mutex;

use crate::cluster::{GROUP, KAFKA_GROUP, TOPIC};
use crate::common::tell_and_wait;

/// Messages per producer window (sent together, then awaited).
const WINDOW: u64 = 20;
/// Pause between windows: bounds the traffic to about 1,000 messages a second per producer.
const PACE: Duration = Duration::from_millis(20);

#[derive(Debug, Clone)]
pub struct Ack {
    pub producer: u32,
    pub seq: u64,
    pub partition: i32,
    pub offset: i64,
    pub at: Instant,
}

/// The producer number of the idempotent librdkafka producer, in its values and acks.
pub const IDEMPOTENT: u32 = 100;
/// Its pause between messages: about 500 a second.
const IDEMPOTENT_PAUSE_MS: &str = "2";

/// One Kafka-protocol member as its own lines tell it: the partitions it last said it owns
/// (`owns`), the offset of the last message it consumed from each partition, librdkafka's
/// last word on each partition's fetcher (`fetch`) and the last error it reported.
#[derive(Debug, Clone, Default)]
pub struct MemberView {
    pub owns: Vec<i32>,
    pub last_consumed: BTreeMap<i32, i64>,
    /// `STATE leader=L broker=B next=N hi=H`, from librdkafka's statistics.
    pub fetcher: BTreeMap<i32, String>,
    pub last_error: Option<String>,
    /// Whether its process has ended (its output closed).
    pub exited: bool,
}

impl MemberView {
    /// Takes one line of `group_member.py` into the view.
    pub fn note(&mut self, line: &str) {
        if let Some(owned) = line.strip_prefix("owns ") {
            self.owns = owned
                .split(',')
                .filter_map(|tp| tp.rsplit_once(':')?.1.parse().ok())
                .collect();
        } else if let Some(rest) = line.strip_prefix("msg ") {
            let mut w = rest.splitn(3, ' ');
            if let (Some(Ok(p)), Some(Ok(o))) = (w.next().map(str::parse), w.next().map(str::parse))
            {
                self.last_consumed.insert(p, o);
            }
        } else if let Some((p, state)) = line.strip_prefix("fetch ").and_then(|r| r.split_once(' '))
        {
            if let Ok(p) = p.parse() {
                self.fetcher.insert(p, state.to_owned());
            }
        } else if let Some(e) = line.strip_prefix("error ") {
            self.last_error = Some(e.to_owned());
        }
    }
}

pub fn value(producer: u32, seq: u64) -> String {
    format!("p{producer}-{seq}")
}

pub struct Workload {
    stop_producing: Arc<AtomicBool>,
    stop_consuming: Arc<AtomicBool>,
    pub acks: Arc<Mutex<Vec<Ack>>>,
    pub attempts: Arc<AtomicU64>,
    pub consumed: Arc<Mutex<Vec<String>>>,
    /// What the Kafka-protocol group consumed, when it runs.
    pub kafka_consumed: Option<Arc<Mutex<Vec<String>>>>,
    /// What each of its members last said it owns and consumed, for a stall's report.
    pub kafka_members_seen: Arc<Mutex<Vec<MemberView>>>,
    kafka_members: Vec<(Child, JoinHandle<()>)>,
    /// What the idempotent producer reported other than acknowledgements (`fail`, `fatal`).
    pub producer_errors: Arc<Mutex<Vec<String>>>,
    producers: Vec<JoinHandle<()>>,
    idempotent: Option<(Child, JoinHandle<()>)>,
    consumers: Vec<JoinHandle<()>>,
    pub started: Instant,
}

impl Workload {
    pub fn start(bootstrap: &str, producers: u32, consumers: usize, kafka_group: bool) -> Workload {
        let mut w = Workload {
            stop_producing: Arc::new(AtomicBool::new(false)),
            stop_consuming: Arc::new(AtomicBool::new(false)),
            acks: Arc::default(),
            attempts: Arc::default(),
            consumed: Arc::default(),
            kafka_consumed: kafka_group.then(Arc::default),
            kafka_members_seen: Arc::default(),
            kafka_members: Vec::new(),
            producer_errors: Arc::default(),
            producers: Vec::new(),
            idempotent: None,
            consumers: Vec::new(),
            started: Instant::now(),
        };
        for id in 0..producers {
            let (stop, acks, attempts, boot) = (
                w.stop_producing.clone(),
                w.acks.clone(),
                w.attempts.clone(),
                bootstrap.to_owned(),
            );
            w.producers.push(std::thread::spawn(move || {
                produce(id, &boot, &stop, &acks, &attempts)
            }));
        }
        w.idempotent = Some(start_idempotent(
            bootstrap,
            &w.acks,
            &w.producer_errors,
            &w.attempts,
        ));
        for _ in 0..consumers {
            let (stop, consumed, boot) = (
                w.stop_consuming.clone(),
                w.consumed.clone(),
                bootstrap.to_owned(),
            );
            w.consumers
                .push(std::thread::spawn(move || consume(&boot, &stop, &consumed)));
        }
        if let Some(consumed) = &w.kafka_consumed {
            for i in 0..2 {
                w.kafka_members_seen.lock().push(MemberView::default());
                let seen = (w.kafka_members_seen.clone(), i);
                w.kafka_members
                    .push(start_kafka_member(bootstrap, consumed, seen));
            }
        }
        w
    }

    /// Stops the producers; the consumers keep reading until `stop_consumers`.
    pub fn stop_producers(&mut self) {
        self.stop_producing.store(true, Ordering::Release);
        for h in self.producers.drain(..) {
            let _ = h.join();
        }
        if let Some((mut child, reader)) = self.idempotent.take() {
            if let Ok(Some(status)) = child.try_wait() {
                self.producer_errors.lock().push(format!(
                    "fatal: the idempotent producer exited before the end of the run ({status})"
                ));
            }
            // `stop` ends its sending; it then waits for every message in flight (150 s at
            // most) and reports how many it sent.
            tell_and_wait(&mut child, b"stop\n", Duration::from_secs(180));
            let _ = reader.join();
        }
    }

    pub fn stop_consumers(&mut self) {
        self.stop_consuming.store(true, Ordering::Release);
        for h in self.consumers.drain(..) {
            let _ = h.join();
        }
        for (mut child, reader) in self.kafka_members.drain(..) {
            // `leave` closes the consumer (committing and leaving the group) and exits.
            tell_and_wait(&mut child, b"leave\n", Duration::from_secs(30));
            let _ = reader.join();
        }
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop_producers();
        self.stop_consumers();
    }
}

fn produce(id: u32, boot: &str, stop: &AtomicBool, acks: &Mutex<Vec<Ack>>, attempts: &AtomicU64) {
    let mut cfg = ProducerConfig::new(boot);
    cfg.acks = -1;
    cfg.retries = 0;
    cfg.request_timeout = Duration::from_secs(5);
    cfg.client_id = format!("chaos-producer-{id}");
    let producer = loop {
        match Producer::new(cfg.clone()) {
            Ok(p) => break p,
            Err(_) if !stop.load(Ordering::Acquire) => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(_) => return,
        }
    };
    let mut seq = 0u64;
    while !stop.load(Ordering::Acquire) {
        let handles: Vec<_> = (seq..seq + WINDOW)
            .map(|s| (s, producer.send(TOPIC, None, Some(value(id, s).as_bytes()))))
            .collect();
        seq += WINDOW;
        attempts.fetch_add(WINDOW, Ordering::Relaxed);
        let mut ok = Vec::new();
        for (s, h) in handles {
            if let Ok(md) = h.wait() {
                ok.push(Ack {
                    producer: id,
                    seq: s,
                    partition: md.partition,
                    offset: md.offset,
                    at: Instant::now(),
                });
            }
        }
        acks.lock().extend(ok);
        std::thread::sleep(PACE);
    }
    producer.close();
}

/// Starts the idempotent producer process; a thread turns its `ack` lines into `Ack`s and
/// keeps every other report but the final count.
fn start_idempotent(
    boot: &str,
    acks: &Arc<Mutex<Vec<Ack>>>,
    errors: &Arc<Mutex<Vec<String>>>,
    attempts: &Arc<AtomicU64>,
) -> (Child, JoinHandle<()>) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/idempotent_producer.py"
    );
    let prefix = format!("p{IDEMPOTENT}-");
    let mut cmd = crate::common::python();
    cmd.args([script, boot, TOPIC, &prefix, "any", IDEMPOTENT_PAUSE_MS])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    crate::common::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .expect("start the idempotent producer (confluent-kafka, installed by scripts/test.sh)");
    let out = child.stdout.take().expect("piped");
    let (acks, errors, attempts) = (acks.clone(), errors.clone(), attempts.clone());
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let mut w = line.split(' ');
            match w.next() {
                Some("ack") => {
                    let mut num = || w.next().and_then(|x| x.parse::<i64>().ok());
                    if let (Some(seq), Some(offset), Some(partition)) = (num(), num(), num()) {
                        acks.lock().push(Ack {
                            producer: IDEMPOTENT,
                            seq: seq as u64,
                            partition: partition as i32,
                            offset,
                            at: Instant::now(),
                        });
                    }
                }
                Some("done") => {
                    let sent = w.next().and_then(|x| x.parse::<u64>().ok());
                    attempts.fetch_add(sent.unwrap_or(0), Ordering::Relaxed);
                }
                _ => errors.lock().push(line),
            }
        }
    });
    (child, reader)
}

/// One member of the Kafka-protocol group: librdkafka committing every second; a thread turns
/// its `msg P OFFSET VALUE` lines into consumed values.
fn start_kafka_member(
    boot: &str,
    consumed: &Arc<Mutex<Vec<String>>>,
    (seen, me): (Arc<Mutex<Vec<MemberView>>>, usize),
) -> (Child, JoinHandle<()>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_member.py");
    let mut cmd = crate::common::python();
    cmd.args([
        script,
        "confluent",
        boot,
        KAFKA_GROUP,
        TOPIC,
        "session_ms=6000",
        "autocommit_ms=1000",
        "stats_ms=1000",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped());
    crate::common::die_with_parent(&mut cmd);
    let mut child = cmd.spawn().expect(
        "start a Kafka-protocol group member (confluent-kafka, installed by scripts/test.sh)",
    );
    let out = child.stdout.take().expect("piped");
    let consumed = consumed.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            seen.lock()[me].note(&line);
            if let Some(v) = line
                .strip_prefix("msg ")
                .and_then(|r| r.splitn(3, ' ').nth(2))
            {
                consumed.lock().push(v.to_owned());
            }
        }
        seen.lock()[me].exited = true;
    });
    (child, reader)
}

fn consume(boot: &str, stop: &AtomicBool, consumed: &Mutex<Vec<String>>) {
    let mut cfg = ConsumerConfig::new(
        boot,
        GROUP,
        Subscription::Static([(TOPIC.to_owned(), 1)].into()),
    );
    cfg.auto_offset_reset = "smallest".into();
    cfg.ping_interval = Duration::from_millis(500);
    cfg.max_ping_retries = 3;
    cfg.startup_timeout = Duration::from_secs(120);
    let mut c = loop {
        match GroupConsumer::start(cfg.clone()) {
            Ok(c) => break c,
            Err(e) if !stop.load(Ordering::Acquire) => {
                log::warn!("chaos consumer: {e}; trying again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(_) => return,
        }
    };
    while !stop.load(Ordering::Acquire) {
        if let Some(r) = c.poll(Duration::from_millis(100)) {
            let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).into_owned();
            consumed.lock().push(v);
        }
    }
    c.close();
}
