//! The newest controller epoch this broker has seen, and the check every controller command
//! passes (spec C: "if the command's controller epoch is older than the current one, reject").
//!
//! An epoch *newer* than the one known is not believed on the command's word: one forged
//! LeaderAndIsr with epoch `i32::MAX` would otherwise make every real command stale from then
//! on. It is checked against ZooKeeper first — `/controller_epoch` must have reached it, and
//! when it is the current one, `/controller` must name the sender. That costs one or two reads
//! per controller change, with no lock held.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::protocol::ErrorCode;
use crate::zk::{ZkClient, paths, until_connected};

pub struct ControllerEpoch {
    broker_id: i32,
    newest: AtomicI32,
    zk: Arc<ZkClient>,
}

impl ControllerEpoch {
    pub fn new(broker_id: i32, zk: Arc<ZkClient>) -> ControllerEpoch {
        ControllerEpoch {
            broker_id,
            newest: AtomicI32::new(0),
            zk,
        }
    }

    pub fn get(&self) -> i32 {
        self.newest.load(Ordering::Acquire)
    }

    /// Accepts a command's epoch if it is not older than the newest seen and, when newer,
    /// ZooKeeper confirms it; then records it.
    pub fn check(&self, epoch: i32, what: &str, controller_id: i32) -> Result<(), ErrorCode> {
        let current = self.get();
        if epoch < current {
            log::warn!(
                "[Broker {}] rejecting {what} from controller {controller_id} with stale epoch {epoch} (current {current})",
                self.broker_id
            );
            return Err(ErrorCode::StaleControllerEpoch);
        }
        if epoch > current {
            self.confirm(epoch, what, controller_id)?;
        }
        self.newest.fetch_max(epoch, Ordering::AcqRel);
        Ok(())
    }

    fn confirm(&self, epoch: i32, what: &str, controller_id: i32) -> Result<(), ErrorCode> {
        let refuse = |why: String| {
            log::warn!(
                "[Broker {}] rejecting {what} claiming controller {controller_id} epoch {epoch}: {why}",
                self.broker_id
            );
            Err(ErrorCode::StaleControllerEpoch)
        };
        // A read that loses its connection is asked again (within a session timeout): a
        // refusal here is final — the controller does not send the command again — so only
        // ZooKeeper's answer may refuse, never a moment without it.
        let wait = self.zk.session_timeout();
        let in_zk = match until_connected(wait, || paths::controller_epoch(&self.zk)) {
            Ok(e) => e.unwrap_or(0),
            Err(e) => return refuse(format!("cannot read {}: {e:?}", paths::CONTROLLER_EPOCH)),
        };
        if in_zk < epoch {
            return refuse(format!("{} is only {in_zk}", paths::CONTROLLER_EPOCH));
        }
        if in_zk == epoch {
            // Refusing a late command of a controller that has just lost the election (the
            // next one has not counted its epoch yet) costs nothing: its successor's commands
            // follow.
            match until_connected(wait, || {
                paths::read_json::<paths::ElectedBroker>(&self.zk, paths::CONTROLLER)
            }) {
                Ok(Some(c)) if c.brokerid == controller_id => {}
                Ok(None) => {}
                Ok(Some(c)) => {
                    return refuse(format!(
                        "{} names broker {} for epoch {epoch}",
                        paths::CONTROLLER,
                        c.brokerid
                    ));
                }
                Err(e) => return refuse(format!("cannot read {}: {e:?}", paths::CONTROLLER)),
            }
        }
        Ok(())
    }
}
