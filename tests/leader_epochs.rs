//! Leader epochs (KIP-101, KIP-279) with broker processes: OffsetForLeaderEpoch answered from
//! each partition's `leader-epoch-checkpoint`, stale and future epochs fenced in Fetch,
//! ListOffsets and OffsetForLeaderEpoch, and the failure cases of the two KIPs built with
//! kill -9 and pauses — each ends with identical replicas and every acks=all message kept.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::*;
use gregor::network::BlockingChannel;
use gregor::protocol::ErrorCode;
use gregor::protocol::fetch::{DEBUGGING_REPLICA_ID, FetchPartition, FetchRequest, FetchResponse};
use gregor::protocol::offset_for_leader_epoch::{
    self as ofle, EpochEndOffset, EpochQuery, OffsetForLeaderEpochRequest,
};
use gregor::protocol::offsets::{ListOffsetsRequest, ListOffsetsResponse, OffsetsPartition};
use gregor::protocol::produce::{ProduceResponse, ProduceSets};
use gregor::protocol::records::decode_deep;

const LONG: Duration = Duration::from_secs(40);

/// Produce v7 of one record to t-0 of `broker`: (error, offset), or why it could not be sent.
fn produce(c: &Cluster, broker: i32, acks: i16, value: &str) -> Result<(i16, i64), String> {
    let mut chan = BlockingChannel::connect(c.addr(broker), "epoch-test", Duration::from_secs(15))
        .map_err(|e| e.to_string())?;
    let set = one_record_batch(value);
    let r = chan
        .send::<ProduceResponse>(
            0,
            7,
            &ProduceSets {
                acks,
                timeout_ms: 10_000,
                topics: &[("t", vec![(0, &set[..])])],
            },
        )
        .map_err(|e| e.to_string())?;
    let p = &r.topics[0].1[0];
    Ok((p.error_code, p.base_offset))
}

/// Produces until acknowledged (a leader change may refuse the first tries).
fn produce_acked(c: &Cluster, broker: i32, acks: i16, value: &str) -> i64 {
    let mut offset = -1;
    wait_until(
        LONG,
        &format!("broker {broker} to acknowledge {value}"),
        || match produce(c, broker, acks, value) {
            Ok((0, o)) => {
                offset = o;
                true
            }
            _ => false,
        },
    );
    offset
}

/// A replica's records up to its high watermark, as (offset, value), read as the debugging
/// replica (allowed on followers) with a Fetch that reads format v2.
fn records_on(c: &Cluster, broker: i32) -> Vec<(i64, String)> {
    let mut client = c.client(broker);
    let mut out: Vec<(i64, String)> = Vec::new();
    loop {
        let next = out.last().map_or(0, |m| m.0 + 1);
        let f = client.fetch_v(11, DEBUGGING_REPLICA_ID, "t", 0, next, 0);
        if f.error_code != 0 {
            return out;
        }
        let got = decode_deep(&f.message_set).unwrap();
        let got: Vec<_> = got
            .into_iter()
            .filter(|m| m.offset >= next)
            .map(|m| (m.offset, String::from_utf8(m.value.unwrap()).unwrap()))
            .collect();
        if got.is_empty() {
            return out;
        }
        out.extend(got);
    }
}

fn values_on(c: &Cluster, broker: i32) -> Vec<String> {
    records_on(c, broker).into_iter().map(|m| m.1).collect()
}

/// The partition's leader-epoch checkpoint on `broker`: (epoch, start offset) lines.
fn epoch_file(c: &Cluster, broker: i32) -> Vec<(i32, i64)> {
    let text = std::fs::read_to_string(c.data_dir(broker).join("t-0/leader-epoch-checkpoint"))
        .unwrap_or_default();
    text.lines()
        .skip(2)
        .map(|l| {
            let (e, s) = l.split_once(' ').unwrap();
            (e.parse().unwrap(), s.parse().unwrap())
        })
        .collect()
}

fn offset_for_epoch(
    c: &Cluster,
    broker: i32,
    replica_id: i32,
    current: i32,
    epoch: i32,
) -> EpochEndOffset {
    let req = OffsetForLeaderEpochRequest {
        replica_id,
        topics: vec![(
            "t".into(),
            vec![EpochQuery {
                partition: 0,
                current_leader_epoch: current,
                leader_epoch: epoch,
            }],
        )],
    };
    let mut client = c.client(broker);
    let answer: ofle::OffsetForLeaderEpochResponse = client.chan.send(23, 4, &req).unwrap();
    answer.topics[0].1[0].clone()
}

fn fetch_error_at_epoch(c: &Cluster, broker: i32, current: i32) -> i16 {
    let mut p = FetchPartition::new(0, 0, 1 << 20);
    p.current_leader_epoch = current;
    let req = FetchRequest::new(-1, 0, 1, vec![("t".into(), vec![p])]);
    let mut client = c.client(broker);
    let resp = client.chan.send::<FetchResponse>(1, 12, &req).unwrap();
    resp.topics[0].1[0].error_code
}

/// ListOffsets v7 for the latest offset, naming `current` as the leader epoch:
/// (error, offset, leader_epoch).
fn latest_at_epoch(c: &Cluster, broker: i32, current: i32) -> (i16, i64, i32) {
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![(
            "t".into(),
            vec![OffsetsPartition {
                partition: 0,
                time: -1,
                max_num_offsets: 1,
                current_leader_epoch: current,
            }],
        )],
    };
    let mut client = c.client(broker);
    let resp = client.chan.send::<ListOffsetsResponse>(2, 7, &req).unwrap();
    let p = &resp.topics[0].1[0];
    (p.error_code, p.offset, p.leader_epoch)
}

#[test]
fn offset_for_leader_epoch_answers_from_the_checkpoint_and_stale_epochs_are_fenced() {
    let mut c = Cluster::start("epochs", 2, &[]);
    c.create_topic_on("t", "1:2");
    let s = c.state("t", 0).unwrap();
    let (first, e1) = (s.leader, s.leader_epoch);
    let other = 3 - first;
    for v in ["a", "b", "c"] {
        produce_acked(&c, first, -1, v);
    }
    assert_eq!(
        offset_for_epoch(&c, first, -1, e1, e1),
        EpochEndOffset {
            error_code: 0,
            partition: 0,
            leader_epoch: e1,
            end_offset: 3
        },
        "the latest epoch ends at the log end"
    );
    assert_eq!(
        offset_for_epoch(&c, other, -1, e1, e1).error_code,
        ErrorCode::NotLeaderForPartition.code(),
        "a consumer's question goes to the leader"
    );
    c.kill9(first);
    let leader = c.wait_leader_serving("t", 0, |l| l == other);
    let e2 = c.state("t", 0).unwrap().leader_epoch;
    assert!(e2 > e1);
    produce_acked(&c, leader, -1, "d");
    let e1_end = offset_for_epoch(&c, other, -1, e2, e1);
    assert_eq!((e1_end.leader_epoch, e1_end.end_offset), (e1, 3));
    let e2_end = offset_for_epoch(&c, other, -1, e2, e2);
    assert_eq!((e2_end.leader_epoch, e2_end.end_offset), (e2, 4));
    assert_eq!(
        offset_for_epoch(&c, other, -1, e2, e2 + 5),
        EpochEndOffset {
            error_code: 0,
            partition: 0,
            leader_epoch: -1,
            end_offset: -1
        },
        "an epoch newer than any is undefined"
    );
    // Fencing (KIP-320): an older epoch than the leader's, and one it has not heard of.
    for (current, want) in [
        (e1, ErrorCode::FencedLeaderEpoch),
        (e2 + 1, ErrorCode::UnknownLeaderEpoch),
    ] {
        assert_eq!(
            offset_for_epoch(&c, other, -1, current, e1).error_code,
            want.code()
        );
        assert_eq!(fetch_error_at_epoch(&c, other, current), want.code());
        assert_eq!(latest_at_epoch(&c, other, current).0, want.code());
    }
    assert_eq!(fetch_error_at_epoch(&c, other, e2), 0);
    assert_eq!(latest_at_epoch(&c, other, e2), (0, 4, e2));
    assert_eq!(epoch_file(&c, other), vec![(e1, 0), (e2, 3)]);
    // The old leader comes back as a follower and learns the same history.
    c.restart(first);
    wait_until(LONG, "the old leader to copy the new epoch", || {
        epoch_file(&c, first) == vec![(e1, 0), (e2, 3)]
            && values_on(&c, first) == ["a", "b", "c", "d"]
    });
}

/// Kills the other replicas -9, writes `value` on `leader` with acks=1 (so only it has the
/// record), and kills it -9 too: the partition is then down, and the record is in one log.
fn write_alone_then_die(c: &mut Cluster, leader: i32, others: &[i32], value: &str) {
    for o in others {
        c.kill9(*o);
    }
    let written = produce_acked(c, leader, 1, value);
    c.kill9(leader);
    assert!(written > 0, "{value} written at {written}");
}

#[test]
fn kip101_a_follower_that_would_truncate_to_its_high_watermark_keeps_what_was_acknowledged() {
    // KIP-101's first case: a follower's high watermark lags the leader's by a fetch, so a
    // follower that cut its log to it, then led, lost acknowledged messages. Here: acks=all
    // messages, the leader killed right after them, the next leader paused before its
    // follower fetched again, so the third replica leads with what it held.
    let mut c = Cluster::start("kip101a", 3, &[("min.insync.replicas", "2")]);
    c.create_topic_on("t", "1:2:3");
    let first = c.leader("t", 0);
    let mut acked = Vec::new();
    for i in 0..20 {
        let v = format!("m{i}");
        produce_acked(&c, first, -1, &v);
        acked.push(v);
    }
    c.kill9(first);
    let second = c.wait_leader_serving("t", 0, |l| l != first);
    c.pause(second);
    let third = 6 - first - second;
    // The controller sees the paused leader's session end and elects the third replica.
    let leader = c.wait_leader_serving("t", 0, |l| l == third);
    c.resume(second);
    let v = "after".to_string();
    produce_acked(&c, leader, -1, &v);
    acked.push(v);
    c.restart(first);
    for b in [1, 2, 3] {
        wait_until(
            LONG,
            &format!("broker {b} to hold every acknowledged message"),
            || values_on(&c, b) == acked,
        );
    }
}

#[test]
fn kip101_replicas_that_diverged_in_a_leader_change_end_identical() {
    // KIP-101's second case: both replicas go down, the one without the last record comes
    // back first and leads (unclean here; after a power loss, a clean election can do the
    // same), and writes another record at that offset. The old leader, back, must follow the
    // new leader's log, not keep its own record below the new leader's end.
    let mut c = Cluster::start("kip101b", 2, &[("unclean.leader.election.enable", "true")]);
    c.create_topic_on("t", "1:2");
    let first = c.leader("t", 0);
    let other = 3 - first;
    produce_acked(&c, first, -1, "x0");
    write_alone_then_die(&mut c, first, &[other], "lost-by-first");
    c.restart(other);
    let leader = c.wait_leader_serving("t", 0, |l| l == other);
    assert_eq!(
        produce_acked(&c, leader, 1, "y1"),
        1,
        "the offset of lost-by-first"
    );
    produce_acked(&c, leader, 1, "y2");
    c.restart(first);
    let want = ["x0", "y1", "y2"];
    wait_until(LONG, "both replicas to agree", || {
        values_on(&c, first) == want && values_on(&c, other) == want
    });
    assert_eq!(epoch_file(&c, first), epoch_file(&c, other));
    assert!(
        c.log_of(first).contains("our log cut from 2 to 1"),
        "the old leader cut its log where its epoch ends in the new leader's:\n{}",
        c.log_of(first)
    );
}

#[test]
fn kip279_leaders_changing_twice_with_writes_lost_in_each_epoch_end_identical() {
    // KIP-279: leaders change quickly, each leaving records only it has. The last leader
    // never had the middle epoch; the replica that led it asks about it, is told where the
    // older epoch both share ends, and cuts there; every replica ends as the last leader's
    // log.
    let mut c = Cluster::start("kip279", 3, &[("unclean.leader.election.enable", "true")]);
    c.create_topic_on("t", "1:2:3");
    let first = c.leader("t", 0);
    let rest: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != first).collect();
    let (second, third) = (rest[0], rest[1]);
    produce_acked(&c, first, -1, "x0");
    write_alone_then_die(&mut c, first, &rest, "lost-by-first");
    c.restart(second);
    c.wait_leader_serving("t", 0, |l| l == second);
    assert_eq!(produce_acked(&c, second, 1, "lost-by-second-1"), 1);
    write_alone_then_die(&mut c, second, &[], "lost-by-second-2");
    c.restart(third);
    c.wait_leader_serving("t", 0, |l| l == third);
    assert_eq!(produce_acked(&c, third, 1, "w1"), 1);
    c.restart(first);
    c.restart(second);
    let want = ["x0", "w1"];
    for b in [1, 2, 3] {
        wait_until(
            LONG,
            &format!("broker {b} to hold the last leader's log"),
            || values_on(&c, b) == want,
        );
    }
    let history = epoch_file(&c, third);
    assert_eq!(
        history.len(),
        2,
        "the epoch of x0 and the last leader's: {history:?}"
    );
    for b in [first, second] {
        assert_eq!(epoch_file(&c, b), history, "broker {b}");
    }
    assert!(
        c.log_of(first).contains("our log cut from 2 to 1"),
        "{}",
        c.log_of(first)
    );
    assert!(
        c.log_of(second).contains("our log cut from 3 to 1"),
        "{}",
        c.log_of(second)
    );
}
