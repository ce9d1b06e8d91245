//! Replication with three brokers as child processes: followers copy the leader's log with its
//! offsets; the ISR shrinks and grows; acks=all honours min.insync.replicas; no acknowledged
//! message is lost when the leader is killed; a paused leader is fenced.

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::*;
use gregor::network::BlockingChannel;
use gregor::protocol::ErrorCode;
use gregor::protocol::fetch::DEBUGGING_REPLICA_ID;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};

const LONG: Duration = Duration::from_secs(40);

/// One acks=all produce that reports connection failures instead of panicking.
fn try_produce(
    c: &Cluster,
    broker: i32,
    topic: &str,
    p: i32,
    value: &[u8],
) -> Result<(i16, i64), String> {
    let mut chan =
        BlockingChannel::connect(c.addr(broker), "test-producer", Duration::from_secs(15))
            .map_err(|e| e.to_string())?;
    let set = message_set(&[value]);
    let r = chan
        .send::<ProduceResponse>(
            0,
            0,
            &ProduceSets {
                acks: -1,
                timeout_ms: 10_000,
                topics: &[(topic, vec![(p, &set[..])])],
            },
        )
        .map_err(|e| e.to_string())?;
    let x = &r.topics[0].1[0];
    Ok((x.error_code, x.base_offset))
}

/// Every message of a replica, read as a debugging consumer (allowed on followers) up to its
/// high watermark; also checks no fetch ever returns a message at or above the HW.
fn replica_contents(c: &Cluster, broker: i32, topic: &str, p: i32) -> Vec<(i64, Vec<u8>)> {
    let mut client = c.client(broker);
    let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
    loop {
        let next = out.last().map_or(0, |m| m.0 + 1);
        let f = client.fetch_as(DEBUGGING_REPLICA_ID, topic, p, next, 0);
        assert_eq!(f.error_code, 0, "broker {broker}");
        let vs = values(&f.message_set);
        assert!(
            vs.iter().all(|m| m.0 < f.high_watermark),
            "message above the high watermark"
        );
        if vs.is_empty() {
            return out;
        }
        out.extend(vs);
    }
}

#[test]
fn followers_copy_every_message_with_the_leaders_offsets() {
    let c = Cluster::start("copy", 3, &[]);
    c.create_topic("t", 1, 3);
    let leader = c.leader("t", 0);
    let mut client = c.client(leader);
    for i in 0..50 {
        let batch: Vec<Vec<u8>> = (0..10).map(|j| format!("m-{i}-{j}").into_bytes()).collect();
        let refs: Vec<&[u8]> = batch.iter().map(|v| v.as_slice()).collect();
        assert_eq!(client.produce(-1, "t", 0, &refs).0, 0);
    }
    let want = replica_contents(&c, leader, "t", 0);
    assert_eq!(want.len(), 500);
    for b in 1..=3 {
        wait_until(LONG, "the follower's high watermark", || {
            replica_contents(&c, b, "t", 0).len() == 500
        });
        assert_eq!(
            replica_contents(&c, b, "t", 0),
            want,
            "replica on broker {b}"
        );
    }
}

#[test]
fn isr_follows_follower_deaths_and_acks_all_respects_min_insync_replicas() {
    let mut c = Cluster::start("isr", 3, &[("min.insync.replicas", "2")]);
    c.create_topic("t", 1, 3);
    let leader = c.leader("t", 0);
    let followers: Vec<i32> = (1..=3).filter(|b| *b != leader).collect();
    assert_eq!(try_produce(&c, leader, "t", 0, b"a").unwrap().0, 0);
    c.kill9(followers[0]);
    wait_until(LONG, "the dead follower to leave the ISR", || {
        c.state("t", 0).unwrap().isr.len() == 2
    });
    // ISR {leader, follower} still meets min.insync.replicas=2.
    assert_eq!(try_produce(&c, leader, "t", 0, b"b").unwrap().0, 0);
    c.kill9(followers[1]);
    wait_until(LONG, "the ISR to shrink to the leader", || {
        c.state("t", 0).unwrap().isr == vec![leader]
    });
    // Learnt from the controller's LeaderAndIsr, which goes to the leader before the
    // UpdateMetadata of the same change. A produce is no probe for it: one sent while the
    // leader still counted the dead follower would be appended (and wait for it).
    wait_until(LONG, "the leader to learn its ISR", || {
        c.client(leader).metadata(&["t"]).topics[0].partitions[0].isr == vec![leader]
    });
    assert_eq!(
        try_produce(&c, leader, "t", 0, b"c").unwrap().0,
        ErrorCode::NotEnoughReplicas.code()
    );
    // Refused before appending: the log still ends after "b".
    assert_eq!(c.client(leader).list_offsets("t", 0, -1).1, vec![2]);
    // A restarted follower catches up and rejoins; acks=all works again.
    c.restart(followers[0]);
    wait_until(LONG, "the restarted follower to rejoin the ISR", || {
        c.state("t", 0).unwrap().isr.contains(&followers[0])
    });
    wait_until(LONG, "acks=all to succeed again", || {
        try_produce(&c, leader, "t", 0, b"d").unwrap().0 == 0
    });
    // Metadata follows the leader's ISR change (ISR-change notification → controller).
    let isr_now = c.state("t", 0).unwrap().isr;
    for b in [leader, followers[0]] {
        wait_until(LONG, "metadata to show the rejoined ISR", || {
            let mut isr = c.client(b).metadata(&["t"]).topics[0].partitions[0]
                .isr
                .clone();
            isr.sort();
            let mut want = isr_now.clone();
            want.sort();
            isr == want
        });
    }
    wait_until(LONG, "the follower to hold d", || {
        replica_contents(&c, followers[0], "t", 0).len() == 3
    });
    let got: Vec<Vec<u8>> = replica_contents(&c, followers[0], "t", 0)
        .into_iter()
        .map(|m| m.1)
        .collect();
    assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
}

#[test]
fn killing_the_leader_during_acks_all_produce_loses_no_acknowledged_message() {
    let mut c = Cluster::start("noloss", 3, &[("min.insync.replicas", "2")]);
    c.create_topic("t", 1, 3);
    let first_leader = c.leader("t", 0);
    let total = 400;
    let mut acked: Vec<(u32, i64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seq = 0u32;
    let mut killed = false;
    while seq < total {
        assert!(Instant::now() < deadline, "producer stuck at {seq}");
        if !killed && seq == total / 3 {
            c.kill9(first_leader);
            killed = true;
        }
        let leader = c.leader("t", 0);
        if leader < 0 || (killed && leader == first_leader) {
            std::thread::yield_now();
            continue;
        }
        // Not acknowledged: retry the same message (it may then be stored twice).
        if let Ok((0, offset)) = try_produce(&c, leader, "t", 0, &seq.to_be_bytes()) {
            acked.push((seq, offset));
            seq += 1;
        }
    }
    let leader = c.wait_leader_serving("t", 0, |l| l != first_leader);
    let log = replica_contents(&c, leader, "t", 0);
    for (s, offset) in &acked {
        let at = log
            .iter()
            .find(|m| m.0 == *offset)
            .unwrap_or_else(|| panic!("offset {offset} of message {s} lost"));
        assert_eq!(
            at.1,
            s.to_be_bytes().to_vec(),
            "message {s} at its acknowledged offset {offset}"
        );
    }
    assert_eq!(acked.len(), total as usize);
}

#[test]
fn a_stopped_and_continued_broker_keeps_its_clients_connections() {
    let c = Cluster::start("stop-cont", 1, &[]);
    c.create_topic("t", 1, 1);
    let mut client = c.client(1);
    assert_eq!(client.produce(1, "t", 0, &[b"before"]), (0, 0));
    // The connection's thread now waits in a read with a timeout. Stopped and continued, the
    // broker sees that read fail with EINTR, and it used to close the connection on it.
    c.pause(1);
    let stat = format!("/proc/{}/stat", c.pid(1));
    wait_until(LONG, "the broker to be stopped", || {
        std::fs::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('T')
        })
    });
    c.resume(1);
    assert_eq!(client.produce(1, "t", 0, &[b"after"]), (0, 1));
}

#[test]
fn a_paused_leader_is_replaced_and_fenced_when_it_resumes() {
    let c = Cluster::start("pause", 3, &[]);
    c.create_topic("t", 1, 3);
    let old = c.leader("t", 0);
    assert_eq!(try_produce(&c, old, "t", 0, b"before").unwrap().0, 0);
    c.pause(old);
    let new = c.wait_leader_serving("t", 0, |l| l != old);
    assert_eq!(try_produce(&c, new, "t", 0, b"after").unwrap().0, 0);
    c.resume(old);
    // The old leader finds the controller moved on: it stops acting as leader.
    wait_until(
        LONG,
        "the old leader to refuse produce",
        || matches!(try_produce(&c, old, "t", 0, b"stale"), Ok((e, _)) if e == ErrorCode::NotLeaderForPartition.code()),
    );
    let s = c.state("t", 0).unwrap();
    assert_eq!(
        s.leader, new,
        "the ISR and leader stay the controller's choice"
    );
    wait_until(LONG, "the old leader to follow and catch up", || {
        replica_contents(&c, old, "t", 0)
            .iter()
            .map(|m| m.1.clone())
            .collect::<Vec<_>>()
            == vec![b"before".to_vec(), b"after".to_vec()]
    });
}

#[test]
fn acks_all_is_answered_as_soon_as_the_isr_has_the_message() {
    let c = Cluster::start("latency", 3, &[]);
    c.create_topic("t", 1, 3);
    let leader = c.leader("t", 0);
    let mut client = c.client(leader);
    // Generous bound: 100 acks=all round trips must not each wait out a fetch max-wait.
    let start = Instant::now();
    for i in 0..100u32 {
        assert_eq!(client.produce(-1, "t", 0, &[&i.to_be_bytes()]).0, 0);
    }
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "acks=all took {:?} for 100 messages",
        start.elapsed()
    );
}
