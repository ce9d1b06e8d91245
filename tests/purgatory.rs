//! Parked requests wake only for their own partitions (Kafka's purgatory keys each delayed
//! request by the partitions it watches): a parked Fetch is not woken by appends elsewhere, an
//! acks=all Produce only by its own partition's high-watermark move, a fetch watching several
//! partitions is answered once, and a role change answers what is parked on the partition at
//! once. Wake-ups are counted by the broker (`Purgatory`'s stats), never inferred from timing.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor::broker::Broker;
use gregor::protocol::ErrorCode;
use gregor::protocol::fetch::{FetchPartition, FetchRequest, FetchResponse};

const E_OK: i16 = 0;
/// Long enough that a request answered before it was answered by an event.
const LONG_POLL_MS: i32 = 60_000;
const ANSWER: Duration = Duration::from_secs(20);

fn fetch_stats(b: &Broker) -> (usize, usize, u64) {
    let s = &b.replica_manager.purgatory.fetch;
    (s.parked(), s.watched(), s.wakeups())
}

fn produce_stats(b: &Broker) -> (usize, u64) {
    let s = &b.replica_manager.purgatory.produce;
    (s.parked(), s.wakeups())
}

/// One broker leading each of `topics` (one partition each, or `n` of the first).
fn leading(name: &str, topics: &[(&str, i32)]) -> (FakeController, TestBroker, Client) {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot(name));
    let controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[]);
    let mut c = b.client();
    for (t, n) in topics {
        lead(&b, &mut c, 1, t, *n);
    }
    (controller, b, c)
}

/// A consumer's long-poll fetch of `parts` (topic, partition, offset) on its own connection
/// and thread; its answer arrives on the returned channel.
fn parked_fetch(
    b: &TestBroker,
    parts: Vec<(&str, i32, i64)>,
) -> crossbeam_channel::Receiver<FetchResponse> {
    let mut f = b.client();
    let mut topics: Vec<(String, Vec<FetchPartition>)> = Vec::new();
    for (t, p, offset) in parts {
        let part = FetchPartition::new(p, offset, 1 << 20);
        match topics.iter_mut().find(|x| x.0 == t) {
            Some(x) => x.1.push(part),
            None => topics.push((t.to_owned(), vec![part])),
        }
    }
    let req = FetchRequest::new(-1, LONG_POLL_MS, 1, topics);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let resp: FetchResponse = f.chan.send(1, 11, &req).unwrap();
        let _ = tx.send(resp);
    });
    rx
}

fn wait_parked(b: &Broker, n: usize) {
    wait_until(ANSWER, "the fetch to park", || fetch_stats(b).0 == n);
}

#[test]
fn a_parked_fetch_is_not_woken_by_appends_to_another_partition() {
    let (_zk, b, mut c) = leading("quiet", &[("quiet", 1), ("busy", 1)]);
    let answer = parked_fetch(&b, vec![("quiet", 0, 0)]);
    wait_parked(&b.broker, 1);
    for i in 0..50 {
        assert_eq!(c.produce(1, "busy", 0, &[b"elsewhere"]), (E_OK, i));
    }
    assert_eq!(
        fetch_stats(&b.broker).2,
        0,
        "a fetch parked on quiet-0 was woken by appends to busy-0"
    );
    assert!(answer.try_recv().is_err(), "answered without data");
    assert_eq!(c.produce(1, "quiet", 0, &[b"here"]), (E_OK, 0));
    let resp = answer.recv_timeout(ANSWER).expect("answered by its append");
    let p = &resp.topics[0].1[0];
    assert_eq!(values(&p.message_set), vec![(0, b"here".to_vec())]);
    // Woken once, by the high-watermark move of its own partition; listed nowhere after.
    assert_eq!(fetch_stats(&b.broker), (0, 0, 1));
    // As the metrics tell it, by Kafka's names.
    let text = b.broker.replica_manager.metrics.encode();
    for line in [
        "gregor_delayedoperationpurgatory_wakeups_total{delayedOperation=\"Fetch\"} 1",
        "kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation=\"Fetch\"} 0",
        "kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation=\"Produce\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
}

#[test]
fn a_fetch_watching_several_partitions_is_answered_once_when_one_has_data() {
    let (_zk, b, mut c) = leading("several", &[("many", 3), ("other", 1)]);
    let answer = parked_fetch(
        &b,
        vec![
            ("many", 0, 0),
            ("many", 1, 0),
            ("many", 2, 0),
            ("other", 0, 0),
        ],
    );
    wait_parked(&b.broker, 1);
    assert_eq!(
        fetch_stats(&b.broker).1,
        4,
        "listed on each of its partitions"
    );
    assert_eq!(c.produce(1, "many", 1, &[b"one"]), (E_OK, 0));
    let resp = answer
        .recv_timeout(ANSWER)
        .expect("answered by one partition's data");
    let with_data: Vec<_> = resp
        .topics
        .iter()
        .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), p)))
        .filter(|(_, p)| !p.message_set.is_empty())
        .map(|(t, p)| (t, p.partition, values(&p.message_set)))
        .collect();
    assert_eq!(
        with_data,
        vec![("many".into(), 1, vec![(0, b"one".to_vec())])]
    );
    assert_eq!(fetch_stats(&b.broker), (0, 0, 1));
    // Later appends to the partitions it watched find no one listed there.
    assert_eq!(c.produce(1, "many", 2, &[b"two"]), (E_OK, 0));
    assert_eq!(fetch_stats(&b.broker), (0, 0, 1));
}

#[test]
fn a_fetch_parked_when_its_partition_changes_leader_is_answered_at_once() {
    let (_zk, b, mut c) = leading("moved", &[("moved", 1)]);
    let answer = parked_fetch(&b, vec![("moved", 0, 0)]);
    wait_parked(&b.broker, 1);
    // Broker 2 leads from epoch 2 on; this broker follows it.
    let states = vec![tps("moved", 0, partition_state(2, 2, &[1, 2], &[1, 2], 1))];
    c.leader_and_isr(1, states, vec![b.info()], false);
    let resp = answer
        .recv_timeout(ANSWER)
        .expect("answered at the role change");
    assert_eq!(
        resp.topics[0].1[0].error_code,
        ErrorCode::NotLeaderForPartition.code()
    );
    assert_eq!(fetch_stats(&b.broker), (0, 0, 1));
}

/// Broker 1 leads `a` and `b` with replica 2 in both ISRs (no broker 2 runs: the test fetches
/// as replica 2). An acks=all produce to `a` parks; `b`'s high watermark moving, and appends to
/// `a` itself, wake it not; replica 2 reaching it on `a` answers it.
#[test]
fn an_acks_all_produce_is_answered_by_its_own_partitions_high_watermark_only() {
    let (_zk, b, mut c) = leading("acks", &[("a", 1), ("b", 1)]);
    for t in ["a", "b"] {
        let states = vec![tps(t, 0, partition_state(1, 1, &[1, 2], &[1, 2], 1))];
        c.leader_and_isr(1, states, vec![b.info()], false);
    }
    let broker: Arc<Broker> = b.broker.clone();
    let mut producer = b.client();
    let (tx, answer) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(producer.produce(-1, "a", 0, &[b"wait for 2"]));
    });
    wait_until(ANSWER, "the produce to park", || {
        produce_stats(&broker).0 == 1
    });
    let mut follower = b.client();
    for i in 0..20 {
        // b's high watermark moves over each message: the produce to a is not woken.
        assert_eq!(c.produce(1, "b", 0, &[b"x"]), (E_OK, i));
        assert!(follower.fetch_as(2, "b", 0, i + 1, 0).error_code == E_OK);
        assert_eq!(
            b.broker
                .replica_manager
                .get_partition("b", 0)
                .unwrap()
                .high_watermark(),
            i + 1
        );
    }
    // Appends to a itself move its log end, not its high watermark (replica 2 lacks them).
    for i in 1..=5 {
        assert_eq!(c.produce(1, "a", 0, &[b"more"]), (E_OK, i));
    }
    assert_eq!(produce_stats(&broker), (1, 0), "woken by events elsewhere");
    assert!(answer.try_recv().is_err());
    // Replica 2 has a's first message: a's high watermark passes it.
    follower.fetch_as(2, "a", 0, 1, 0);
    assert_eq!(answer.recv_timeout(ANSWER).expect("answered"), (E_OK, 0));
    assert_eq!(produce_stats(&broker), (0, 1));
}
