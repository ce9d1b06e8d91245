//! No lock across a network call: a leader that stops answering in the middle of a follower's
//! round trip must not hold up the controller's commands for that follower.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::*;
use gregor::network::BlockingChannel;
use gregor::protocol::controller::{LeaderAndIsrRequest, PartitionErrorsResponse};
use gregor::protocol::fetch::{self, FetchPartitionResponse, FetchResponse};
use gregor::protocol::{BrokerInfo, Reader, encode_body};

/// A "leader" that answers every Fetch with OFFSET_OUT_OF_RANGE and then, at the follower's
/// ListOffsets, stops answering (as a paused leader would), telling the test so, until the
/// test lets go of `release`.
fn stalling_leader(
    listener: TcpListener,
    stalled: crossbeam_channel::Sender<()>,
    release: crossbeam_channel::Receiver<()>,
) {
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        loop {
            let mut size = [0u8; 4];
            if s.read_exact(&mut size).is_err() {
                return;
            }
            let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
            if s.read_exact(&mut frame).is_err() {
                return;
            }
            let mut r = Reader::new(&frame);
            let Ok(h) = gregor::protocol::header::RequestHeader::decode(&mut r) else {
                return;
            };
            if h.api_key != 1 {
                // ListOffsets (or anything else): not answered while the test runs.
                let _ = stalled.send(());
                let _ = release.recv();
                return;
            }
            let mut out = vec![0u8; 4];
            out.extend_from_slice(&h.correlation_id.to_be_bytes());
            let answer = FetchResponse {
                error_code: 0,
                topics: vec![(
                    "t".into(),
                    vec![FetchPartitionResponse {
                        partition: 0,
                        error_code: 1,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        message_set: Vec::new(),
                    }],
                )],
            };
            encode_body(&answer, &mut out, 1, fetch::CLIENT_VERSION);
            let n = (out.len() - 4) as i32;
            out[..4].copy_from_slice(&n.to_be_bytes());
            if s.write_all(&out).is_err() {
                return;
            }
        }
    });
}

#[test]
fn a_leader_stalled_mid_round_trip_does_not_hold_up_the_followers_commands() {
    init_logging();
    let zk = format!("{}{}", zk_address(), chroot("stalled-leader"));
    let _controller = FakeController::claim(&zk);
    let b = TestBroker::start(1, &zk, &[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let leader = BrokerInfo {
        id: 2,
        host: "127.0.0.1".into(),
        port: i32::from(listener.local_addr().unwrap().port()),
    };
    let (tx, stalled) = crossbeam_channel::bounded(1);
    let (_release, released) = crossbeam_channel::bounded::<()>(0);
    stalling_leader(listener, tx, released);
    // Broker 1 follows the stalling leader; its fetcher gets OFFSET_OUT_OF_RANGE and asks the
    // leader's offsets, which never come.
    let mut c = b.client();
    let follow = tps("t", 0, partition_state(2, 1, &[2, 1], &[2, 1], 1));
    let r = c.leader_and_isr(1, vec![follow], vec![leader], false);
    assert_eq!(r.error_code, 0);
    stalled
        .recv_timeout(Duration::from_secs(30))
        .expect("the follower asks the leader's offsets");
    // The controller makes broker 1 the leader meanwhile. The command must be carried out
    // while the old leader still stalls: answered within a timeout shorter than the
    // follower's own socket timeout (30 s past its fetch wait), which is what a lock held
    // across the round trip would make it wait for.
    let mut chan =
        BlockingChannel::connect(b.addr(), "controller", Duration::from_secs(15)).unwrap();
    let lead = LeaderAndIsrRequest {
        controller_id: 0,
        controller_epoch: 1,
        partition_states: vec![tps("t", 0, partition_state(1, 2, &[1], &[2, 1], 1))],
        live_leaders: vec![b.info()],
        init: false,
        broker_epoch: -1,
    };
    let r: PartitionErrorsResponse = chan
        .send(4, 0, &lead)
        .expect("answered while the old leader stalls");
    assert_eq!(r.error_code, 0);
    assert!(r.partitions.iter().all(|p| p.2 == 0), "{r:?}");
    assert_eq!(c.produce(1, "t", 0, &[b"led here now"]).0, 0);
}
