//! What the multi-host tests share: a lab with a topic, writes acknowledged with acks=all, and
//! the checks after healing (replicas identical, nothing acknowledged lost). Included by
//! `tests/net_partitions.rs` and `tests/net_harness.rs` next to `common` and `lab`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gregor::protocol::fetch::{CLIENT_VERSION, DEBUGGING_REPLICA_ID};
use gregor::protocol::records::decode_deep;
use gregor::zk::admin;
use parking_lot::Mutex;

use crate::common::{self, Client, poll_until, wait_until};
use crate::lab::{self, Lab, try_produce};

pub const SESSION_MS: u64 = 3000;
pub const TOPIC: &str = "t";
/// Brokers settings for every shape: acks=all needs two in-sync replicas, no unclean
/// elections, and a follower silent for 3 s leaves the ISR.
pub const PROPS: &str = "min.insync.replicas=2\nunclean.leader.election.enable=false\n\
                     default.replication.factor=3\nauto.create.topics.enable=false\n\
                     replica.lag.time.max.ms=3000\ncontrolled.shutdown.retry.backoff.ms=300";

/// One lab at a time: three JVMs and the brokers are most of what two cores can run.
pub static ONE_LAB: Mutex<()> = Mutex::new(());

/// A lab of `brokers` brokers; `None` (after saying why) where hosts cannot be made.
pub fn start_lab(test: &str, brokers: i32) -> Option<(tempfile::TempDir, Lab)> {
    start_lab_ticked(test, brokers, SESSION_MS, 500)
}

/// `start_lab` with the brokers' session timeout and ZooKeeper's tick given.
pub fn start_lab_ticked(
    test: &str,
    brokers: i32,
    session_ms: u64,
    tick_ms: u64,
) -> Option<(tempfile::TempDir, Lab)> {
    common::init_logging();
    if lab::skipped(test) {
        return None;
    }
    let tmp = tempfile::Builder::new()
        .prefix("gregor-lab-")
        .tempdir()
        .unwrap();
    let lab = Lab::start(tmp.path(), brokers, session_ms, tick_ms, PROPS);
    Some((tmp, lab))
}

/// Topic `t`: one partition on `replicas` (`1:2:3`; the first is the preferred leader),
/// healthy.
pub fn create_topic(lab: &mut Lab, replicas: &str) {
    admin::create_topic(lab.zk(), TOPIC, 1, 3, Some(replicas)).unwrap();
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
}

/// A lab of `brokers` brokers with topic `t` on `replicas`.
pub fn lab_with_topic(
    test: &str,
    brokers: i32,
    replicas: &str,
) -> Option<(tempfile::TempDir, Lab)> {
    let (tmp, mut lab) = start_lab(test, brokers)?;
    create_topic(&mut lab, replicas);
    Some((tmp, lab))
}

/// The broker `who` names once one is elected (the elections run after the brokers register).
pub fn elected(what: &str, who: impl Fn() -> Option<i32>) -> i32 {
    let mut id = None;
    wait_until(Duration::from_secs(30), what, || {
        id = who();
        id.is_some()
    });
    id.unwrap()
}

/// Writes acknowledged with acks=all: (offset, value).
#[derive(Default)]
pub struct Acked(pub Vec<(i64, String)>);

impl Acked {
    /// Produces `n` values one at a time to the partition's leader now (asked of ZooKeeper),
    /// keeping those acknowledged; panics if none is.
    pub fn produce(&mut self, lab: &Lab, prefix: &str, n: usize) {
        let before = self.0.len();
        for i in 0..n {
            let value = format!("{prefix}-{i}");
            let Some((leader, _, _)) = lab.leader_and_isr(TOPIC, 0) else {
                continue;
            };
            if leader < 0 {
                continue;
            }
            if let Ok((0, offset)) = try_produce(
                lab.addr(leader),
                -1,
                TOPIC,
                0,
                &[value.as_bytes()],
                Duration::from_secs(5),
            ) {
                self.0.push((offset, value));
            }
        }
        assert!(self.0.len() > before, "no {prefix} write was acknowledged");
    }
}

/// A replica's committed prefix: every message below its own high watermark.
pub fn committed(lab: &Lab, broker: i32) -> Result<(i64, Vec<(i64, String)>), String> {
    let mut c = Client::try_connect(lab.addr(broker)).ok_or("cannot connect")?;
    let mut out = Vec::new();
    let mut next = 0;
    loop {
        let r = c.try_fetch_v(CLIENT_VERSION, DEBUGGING_REPLICA_ID, TOPIC, 0, next, 0)?;
        if r.error_code != 0 {
            return Err(format!(
                "broker {broker} answered a fetch with {}",
                r.error_code
            ));
        }
        let before = next;
        for m in decode_deep(&r.message_set).map_err(|e| format!("{e:?}"))? {
            if m.offset >= next {
                next = m.offset + 1;
                out.push((
                    m.offset,
                    String::from_utf8_lossy(m.value.as_deref().unwrap_or(b"")).into_owned(),
                ));
            }
        }
        if next == before {
            return Ok((r.high_watermark, out));
        }
    }
}

/// Heals the network, waits until topic `t` is healthy, writes a few more, and checks the
/// replicas and every acknowledged write.
pub fn heal_write_and_check(lab: &mut Lab, acked: &mut Acked) {
    lab.heal();
    lab.wait_healthy(&[(TOPIC, 1)], Duration::from_secs(60))
        .unwrap();
    acked.produce(lab, "after", 5);
    assert_replicas_identical_and_nothing_lost(lab, acked);
}

/// After healing: every replica of the partition holds the same committed messages, up to
/// the same high watermark, and every acknowledged write is among them at its offset.
pub fn assert_replicas_identical_and_nothing_lost(lab: &Lab, acked: &Acked) {
    assert_replicas_identical_and_nothing_lost_among(lab, acked, &[1, 2, 3]);
}

pub fn assert_replicas_identical_and_nothing_lost_among(
    lab: &Lab,
    acked: &Acked,
    replicas: &[i32],
) {
    let mut last = String::new();
    let same = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        let logs: Vec<_> = replicas.iter().map(|b| committed(lab, *b)).collect();
        match logs.iter().find_map(|l| l.as_ref().err()) {
            Some(e) => {
                last = e.clone();
                false
            }
            None => {
                let logs: Vec<_> = logs.into_iter().map(Result::unwrap).collect();
                last = format!(
                    "high watermarks {:?}",
                    logs.iter().map(|l| l.0).collect::<Vec<_>>()
                );
                logs.windows(2).all(|w| w[0] == w[1])
            }
        }
    });
    assert!(same, "replicas differ after healing: {last}");
    let (_, log) = committed(lab, replicas[0]).unwrap();
    for (offset, value) in &acked.0 {
        assert!(
            log.iter().any(|(o, v)| o == offset && v == value),
            "acknowledged {value} at offset {offset} is lost"
        );
    }
}

/// What broker `id` answers to acks=all produces, one every 50 ms for `during`: how many
/// of each error code, and of failed round trips ("network: " and the first such error).
/// Only writes answered 0 are acknowledged.
pub fn answers_for(lab: &Lab, id: i32, during: Duration) -> BTreeMap<String, usize> {
    let end = Instant::now() + during;
    let mut answers = BTreeMap::new();
    let mut network = None;
    for i in 0.. {
        if Instant::now() >= end {
            break;
        }
        let value = format!("cut-{i}");
        let answer = match try_produce(
            lab.addr(id),
            -1,
            TOPIC,
            0,
            &[value.as_bytes()],
            Duration::from_secs(3),
        ) {
            Ok((code, _)) => code.to_string(),
            Err(e) => network.get_or_insert(format!("network: {e}")).clone(),
        };
        *answers.entry(answer).or_default() += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    answers
}
