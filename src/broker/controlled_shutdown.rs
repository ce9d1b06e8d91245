//! The broker's side of controlled shutdown: ask the controller to move every leadership away
//! before this broker stops (the controller's side is `controller::shutdown`).
//!
//! The request waits up to `controller.socket.timeout.ms` for its answer, as in Kafka; but a
//! controller that stops answering is usually being replaced (paused, or cut off from
//! ZooKeeper until its session expires), so the wait also watches `/controller`: once another
//! controller is elected, the request goes to it at once instead of waiting out the old one.

use crate::protocol::TopicPartition;
use std::time::Duration;

use crossbeam_channel::RecvTimeoutError;

use super::Broker;
use crate::network::BlockingChannel;
use crate::protocol::ErrorCode;
use crate::protocol::controller::{ControlledShutdownRequest, ControlledShutdownResponse};
use crate::protocol::header::CONTROLLED_SHUTDOWN;
use crate::zk::paths;

/// How often a waiting request looks at `/controller`.
const CONTROLLER_CHECK: Duration = Duration::from_millis(250);

/// Why one attempt did not end the shutdown.
enum Attempt {
    /// The controller changed while we waited: ask the new one at once.
    ControllerReplaced(i32),
    Failed(String),
}

impl Broker {
    /// Sends ControlledShutdown to the controller until it reports no partition still led
    /// here, or `controlled.shutdown.max.retries` is used up; then the broker stops anyway
    /// (clients fall back to the session-timeout failover for what is left).
    pub(super) fn controlled_shutdown(&self) {
        let id = self.config.broker_id;
        let tries = self.config.controlled_shutdown_max_retries + 1;
        for attempt in 1..=tries {
            match self.ask_controller_to_move_leaders() {
                Ok(remaining) if remaining.is_empty() => {
                    log::info!("[Broker {id}] controlled shutdown complete: no partition led here");
                    return;
                }
                Ok(remaining) => log::info!(
                    "[Broker {id}] controlled shutdown attempt {attempt}: still leading {remaining:?}"
                ),
                Err(Attempt::ControllerReplaced(old)) => {
                    log::info!(
                        "[Broker {id}] controlled shutdown attempt {attempt}: controller {old} was replaced while we waited; asking the new one"
                    );
                    continue;
                }
                Err(Attempt::Failed(e)) => {
                    log::warn!("[Broker {id}] controlled shutdown attempt {attempt} failed: {e}")
                }
            }
            if attempt < tries {
                std::thread::sleep(self.config.controlled_shutdown_retry_backoff);
            }
        }
        log::warn!("[Broker {id}] proceeding with shutdown without moving every leader");
    }

    fn ask_controller_to_move_leaders(&self) -> Result<Vec<TopicPartition>, Attempt> {
        let failed = |e: String| Attempt::Failed(e);
        let (data, asked) = self
            .zk
            .get_data(paths::CONTROLLER)
            .map_err(|e| failed(format!("no controller: {e:?}")))?;
        let c: paths::ElectedBroker =
            paths::from_json(paths::CONTROLLER, &data).map_err(|e| failed(format!("{e:?}")))?;
        let brokers = paths::live_brokers(&self.zk).map_err(|e| failed(format!("{e:?}")))?;
        let listener = &self.config.listeners.inter_broker;
        let b = brokers
            .iter()
            .find(|b| b.id == c.brokerid)
            .ok_or_else(|| failed("controller not registered".into()))?
            .on(listener)
            .ok_or_else(|| failed(format!("the controller has no {listener} listener")))?;
        let mut chan = BlockingChannel::connect_as(
            (b.host.as_str(), b.port as u16),
            &format!("broker-{}", self.id()),
            self.config.controller_socket_timeout,
            &self.config.inter_broker_client,
        )
        .map_err(|e| failed(e.to_string()))?;
        let req = ControlledShutdownRequest {
            broker_id: self.id(),
        };
        // The round trip runs on its own thread so that the wait can watch `/controller`;
        // abandoned, it ends at its socket timeout.
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::Builder::new()
            .name("controlled-shutdown".into())
            .spawn(move || {
                let answer = chan.send::<ControlledShutdownResponse>(CONTROLLED_SHUTDOWN, 1, &req);
                let _ = tx.send(answer);
            })
            .map_err(|e| failed(e.to_string()))?;
        let resp = loop {
            match rx.recv_timeout(CONTROLLER_CHECK) {
                Ok(answer) => break answer.map_err(|e| failed(e.to_string()))?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(failed("the request thread ended".into()));
                }
                Err(RecvTimeoutError::Timeout) => {
                    // A newer `/controller` node: another election has been won.
                    if let Ok(Some(now)) = self.zk.exists(paths::CONTROLLER)
                        && now.czxid != asked.czxid
                    {
                        return Err(Attempt::ControllerReplaced(c.brokerid));
                    }
                }
            }
        };
        match ErrorCode::from_code(resp.error_code) {
            ErrorCode::None => Ok(resp.partitions_remaining),
            e => Err(failed(format!("controller answered {e:?}"))),
        }
    }
}
