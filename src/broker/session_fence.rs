//! What a broker's partitions do when its ZooKeeper session is lost, and when it comes back.
//!
//! A leader that lost its session cannot know it still leads: the controller may have moved
//! leadership while it could not hear. It stops acting as leader — producers get
//! NOT_LEADER_FOR_PARTITION and parked acks=all requests are released unacknowledged — so a
//! broker that has not yet heard of a new leader cannot go on acknowledging writes the new
//! leader never sees.
//!
//! Leadership comes back in one of two ways:
//! - **A new session.** ZooKeeper expired the old one, so the controller saw this broker die,
//!   moved what it could, and sends LeaderAndIsr when the broker registers again.
//! - **The same session.** The client counts a session lost after a session timeout without
//!   contact, but ZooKeeper expires sessions only at its next tick (up to `tickTime` later),
//!   and not at all while it has no quorum. A broker back within that window finds its session
//!   and registration untouched; the controller saw nothing and sends nothing. Here the broker
//!   leads again every fenced partition whose leaderAndISR node still names it at the leader
//!   epoch it led with: the controller raises the epoch with every write it makes, so a node at
//!   that epoch means nobody else has led or shrunk the partition since (a zk version other
//!   than the one it knew is its own ISR write whose answer was lost, and the node's ISR is
//!   taken). Without this a partition stayed unavailable until some unrelated event made the
//!   controller speak (`tests/net_partitions.rs`, found with a 2 s ZooKeeper tick; and
//!   `tests/session_fence.rs`, found by chaos --hosts seed 3).
//!
//! The check is the same in a new session: if the controller has not yet acted on the
//! broker's death the node is unchanged and the broker leads again a moment before the
//! controller's command would say so; if it has, the node has moved on. Either way a write
//! acknowledged with acks=all needs every ISR member to fetch it, and the followers of a
//! new leader no longer fetch from this one.

use std::sync::Arc;

use super::partition::{Partition, Role};
use super::replica_manager::ReplicaManager;
use crate::zk::SessionListener;
use crate::zk::paths;

impl SessionListener for ReplicaManager {
    fn handle_session_lost(&self) {
        let parts: Vec<Arc<Partition>> = self.partitions.read().values().cloned().collect();
        let mut fenced = Vec::new();
        for p in parts {
            let mut st = p.lock();
            if st.role == Role::Leader {
                st.role = Role::Follower(-1);
                drop(st);
                fenced.push(p);
            }
        }
        if !fenced.is_empty() {
            log::warn!(
                "[Broker {}] ZooKeeper session lost: no longer acting as leader of {} partitions until the controller says so",
                self.broker_id,
                fenced.len()
            );
            for p in &fenced {
                p.watchers.wake_all();
            }
        }
        // A second loss before the session came back adds to the first one's partitions.
        self.fenced.lock().extend(fenced);
    }

    fn handle_new_session(&self) {
        let fenced = std::mem::take(&mut *self.fenced.lock());
        if fenced.is_empty() {
            return;
        }
        let _commands = self.state_change_lock.lock();
        let mut resumed = 0;
        for p in &fenced {
            if self.lead_again_if_unchanged(p) {
                resumed += 1;
                // What is parked here looks at the role again.
                p.watchers.wake_all();
            }
        }
        if resumed > 0 {
            log::info!(
                "[Broker {}] ZooKeeper session back: leading {resumed} of {} fenced partitions again (their leaderAndISR nodes unchanged)",
                self.broker_id,
                fenced.len()
            );
        }
    }
}

impl ReplicaManager {
    /// Leads `p` again when it is still fenced (no controller command since) and ZooKeeper
    /// still names this broker its leader at the same epoch (at the zk version it knew, or at
    /// one of its own ISR writes whose answer was lost). Called with
    /// `state_change_lock` held, so no command lands between the read and the change.
    fn lead_again_if_unchanged(&self, p: &Partition) -> bool {
        let (epoch, version) = {
            let st = p.lock();
            if st.role != Role::Follower(-1) {
                return false;
            }
            (st.leader_epoch, st.zk_version)
        };
        let tag = format!("[Broker {} {}-{}]", self.broker_id, p.topic, p.partition);
        let node = match paths::leader_and_isr(&self.zk, &p.topic, p.partition) {
            Ok(Some(node)) => node,
            Ok(None) => return false,
            Err(e) => {
                log::warn!("{tag} cannot read leaderAndISR ({e:?}); waiting for the controller");
                return false;
            }
        };
        let (state, zk_version) = node;
        // Another zk version at our leader epoch is our own ISR write: the controller raises
        // the leader epoch with every write it makes (spec C 3.3). It may be one whose answer
        // was lost (ConnectionLoss) though ZooKeeper applied it: chaos --hosts seed 3 left a
        // partition "leader 3 isr [3]" for good, its leader waiting for a controller that had
        // seen nothing. The node is the truth: its ISR and version are taken.
        if state.leader != self.broker_id || state.leader_epoch != epoch {
            log::info!(
                "{tag} leaderAndISR moved on while fenced (leader {} epoch {} zk version {zk_version}); waiting for the controller",
                state.leader,
                state.leader_epoch
            );
            return false;
        }
        let mut st = p.lock();
        if st.role != Role::Follower(-1) || st.leader_epoch != epoch {
            return false;
        }
        if zk_version != version {
            log::info!(
                "{tag} leaderAndISR holds our own ISR write of zk version {zk_version} (we knew {version}), applied though its answer was lost"
            );
        }
        st.role = Role::Leader;
        st.zk_version = zk_version;
        st.isr = state.isr;
        // Followers were refused while fenced: each gets a full lag period to show it keeps up.
        let now = std::time::Instant::now();
        st.caught_up_at = st.isr.iter().map(|r| (*r, now)).collect();
        p.maybe_increment_high_watermark(&st);
        log::info!(
            "{tag} leading again at epoch {epoch} (zk version {zk_version}, isr {:?})",
            st.isr
        );
        true
    }
}
