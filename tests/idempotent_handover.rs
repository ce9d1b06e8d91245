//! An idempotent producer's acks=all batch whose leader loses the partition while the batch
//! waits for its followers. Found by the chaos run (seed 2): the old leader answered
//! NOT_LEADER_FOR_PARTITION, which librdkafka takes for "not stored"; the new leader had the
//! batch and committed it; a sequence gap on another partition then made librdkafka renumber
//! its messages under a new producer epoch, and it sent the batch again — stored twice.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::*;
use gregor::protocol::ErrorCode;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};

/// The size of broker `id`'s log of `ph-0`: it grows when the follower fetches a batch.
fn log_bytes(c: &Cluster, id: i32) -> u64 {
    let f = c.data_dir(id).join("ph-0").join("00000000000000000000.log");
    std::fs::metadata(f).map_or(0, |m| m.len())
}

/// One follower is paused (it stays in the ISR: the lag limit is long), so a batch cannot
/// commit; broker 1, leading, is shut down while the batch waits, and hands the partition to
/// the other follower (the heir), which had fetched it. Broker 1 must not answer
/// NOT_LEADER_FOR_PARTITION for it; the producer's retry at the heir gets the batch's offset,
/// and it is stored once.
#[test]
fn a_waiting_batch_the_new_leader_holds_is_not_answered_not_leader() {
    let mut c = Cluster::start(
        "idempotent-handover",
        3,
        &[("replica.lag.time.max.ms", "10000")],
    );
    // Broker 1 leads; the broker to pause is not the controller (broker 1's controlled
    // shutdown would wait on a paused controller), and the third takes over.
    let paused = if c.controller() == Some(3) { 2 } else { 3 };
    let heir = 5 - paused;
    c.create_topic_on("ph", &format!("1:{heir}:{paused}"));
    let mut client = c.client(1);
    let pid = init_producer(&mut client, 4, -1, -1).producer_id;
    let first = one_idempotent_record("a", pid, 0, 0);
    assert_eq!(client.produce_v(9, -1, "ph", 0, &first).error_code, 0);
    wait_until(
        Duration::from_secs(30),
        "the heir to hold the first batch",
        || log_bytes(&c, heir) == log_bytes(&c, 1),
    );
    c.pause(paused);
    let held = log_bytes(&c, heir);
    let second = one_idempotent_record("b", pid, 0, 1);
    let waiting = {
        let second = second.clone();
        std::thread::spawn(move || {
            let body = ProduceSets {
                acks: -1,
                timeout_ms: 30_000,
                topics: &[("ph", vec![(0, &second[..])])],
            };
            // `None`: the connection ended without an answer.
            client
                .chan
                .send::<ProduceResponse>(0, 9, &body)
                .ok()
                .map(|r| (r.topics[0].1[0].error_code, r.topics[0].1[0].base_offset))
        })
    };
    wait_until(
        Duration::from_secs(30),
        "the heir to fetch the second batch",
        || log_bytes(&c, heir) > held,
    );
    if waiting.is_finished() {
        // Say what came back (an error code and offset, or `None`: the connection ended), so a
        // failure under load explains itself.
        let early = waiting.join().unwrap();
        panic!("answered before it could commit: {early:?}");
    }
    c.terminate(1);
    let answer = waiting.join().unwrap();
    assert_ne!(
        answer.map(|a| a.0),
        Some(ErrorCode::NotLeaderForPartition.code()),
        "the batch the heir holds was answered as not stored"
    );
    c.resume(paused);
    wait_until(Duration::from_secs(30), "the heir to lead", || {
        c.leader("ph", 0) == heir
    });
    // The producer retries at the new leader, as a client does while it is told to: the
    // offset the batch has, nothing appended.
    let mut client = c.client(heir);
    let mut got = (-1, -1);
    let retriable = [
        ErrorCode::NotLeaderForPartition.code(),
        ErrorCode::RequestTimedOut.code(),
    ];
    let answered = poll_until(Duration::from_secs(60), Duration::from_millis(50), || {
        let p = client.produce_v(9, -1, "ph", 0, &second);
        got = (p.error_code, p.base_offset);
        !retriable.contains(&p.error_code)
    });
    assert!(answered, "the heir never answered the retry: {got:?}");
    assert_eq!(got, (0, 1));
    // Broker 1's own answer: the batch's offset once committed, or "timed out" (possibly
    // stored), or none (its connection ended with it).
    if let Some((code, offset)) = answer {
        assert!(
            (code, offset) == (0, 1) || code == ErrorCode::RequestTimedOut.code(),
            "broker 1 answered {code} at {offset}"
        );
    }
    let fetched = client.fetch("ph", 0, 0, 0).message_set;
    assert_eq!(
        values(&fetched),
        vec![(0, b"a".to_vec()), (1, b"b".to_vec())]
    );
}

/// The race at a leadership change that makes librdkafka bump its producer epoch: a batch
/// reaches the heir just before it takes the partition (NOT_LEADER_FOR_PARTITION), the next
/// one just after. The second is answered as the first was, not OUT_OF_ORDER_SEQUENCE_NUMBER
/// (nor UNKNOWN_PRODUCER_ID for a producer the heir has not seen yet); retried in order,
/// both are stored once.
#[test]
fn a_batch_behind_one_refused_before_the_leadership_change_gets_the_same_answer() {
    let mut c = Cluster::start("idempotent-refused", 3, &[]);
    let heir = if c.controller() == Some(2) { 3 } else { 2 };
    let other = 5 - heir;
    c.create_topic_on("rf", &format!("1:{heir}:{other}"));
    let pid = init_producer(&mut c.client(1), 4, -1, -1).producer_id;
    let (a, b) = (
        one_idempotent_record("a", pid, 0, 0),
        one_idempotent_record("b", pid, 0, 1),
    );
    let mut at_heir = c.client(heir);
    let refused = at_heir.produce_v(9, -1, "rf", 0, &a).error_code;
    assert_eq!(refused, ErrorCode::NotLeaderForPartition.code());
    c.terminate(1);
    // The heir leads once it answers produce; until then `b` would be refused as `a` was.
    // Once it leads, `b` still is: `a` has not come again.
    let led = poll_until(Duration::from_secs(30), Duration::from_millis(20), || {
        c.client(heir).try_produce_empty("rf", 0) == Some(0)
    });
    assert!(led, "the heir never took the partition");
    assert_eq!(
        at_heir.produce_v(9, -1, "rf", 0, &b).error_code,
        refused,
        "the batch behind the refused one, once the heir leads"
    );
    assert_eq!(at_heir.produce_v(9, -1, "rf", 0, &a).error_code, 0);
    let p = at_heir.produce_v(9, -1, "rf", 0, &b);
    assert_eq!((p.error_code, p.base_offset), (0, 1));
    let fetched = at_heir.fetch("rf", 0, 0, 0).message_set;
    assert_eq!(
        values(&fetched),
        vec![(0, b"a".to_vec()), (1, b"b".to_vec())]
    );
}
