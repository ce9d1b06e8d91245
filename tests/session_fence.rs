//! A leader that counted its ZooKeeper session lost and found it again leads again when the
//! partition's leaderAndISR node still names it at its leader epoch — also when the node's zk
//! version moved on through its own ISR write, applied by ZooKeeper though its answer was
//! lost (ConnectionLoss). Waiting for the controller there left the partition unavailable
//! for good: the controller had seen nothing and said nothing (chaos --hosts, seed 3:
//! "leader 3 isr [3]" for the rest of the run).

mod common;

use common::{FakeController, TestBroker, chroot, lead, zk_address};
use gregor::protocol::ErrorCode;
use gregor::zk::SessionListener;
use gregor::zk::paths::{self, LeaderAndIsr};

#[test]
fn a_leader_whose_own_isr_write_was_applied_unanswered_leads_again_in_the_same_session() {
    let zk_connect = format!("{}{}", zk_address(), chroot("fence-own-write"));
    let controller = FakeController::claim(&zk_connect);
    let b = TestBroker::start(1, &zk_connect, &[]);
    let node = LeaderAndIsr {
        leader: 1,
        leader_epoch: 0,
        isr: vec![1],
        controller_epoch: 1,
    };
    controller.zk.ensure_path(&paths::topic_path("t")).unwrap();
    paths::write_leader_and_isr(&controller.zk, "t", 0, &node, None).unwrap();
    let mut c = b.client();
    lead(&b, &mut c, 1, "t", 1);
    assert_eq!(c.produce(1, "t", 0, &[b"before"]).0, 0);

    // The session counts as lost: the leader stops leading.
    let rm = &b.broker.replica_manager;
    rm.handle_session_lost();
    assert_eq!(
        c.produce(1, "t", 0, &[b"fenced"]).0,
        ErrorCode::NotLeaderForPartition.code()
    );
    // Meanwhile its ISR write, sent just before, was applied: same leader and epoch, zk
    // version 1 where the leader knew 0.
    let written = paths::write_leader_and_isr(&controller.zk, "t", 0, &node, Some(0)).unwrap();
    assert_eq!(written, 1);
    // The same session comes back; nothing from the controller.
    rm.handle_new_session();
    assert_eq!(c.produce(1, "t", 0, &[b"after"]).0, 0, "still fenced");
    // And its next ISR write is conditional on the version it took.
    let st = rm.get_partition("t", 0).unwrap();
    assert_eq!(st.lock().zk_version, 1);
}
