//! `ControllerChannelManager`: one sender thread per live broker, each draining its own queue
//! of commands over one connection, reconnecting with backoff when the broker is slow or gone.
//! The controller's event thread only enqueues, so a dead broker never stalls it.
//!
//! `CommandBatch` gathers the commands of one controller decision and sends each broker one
//! LeaderAndIsr, one StopReplica per kind and one UpdateMetadata (spec: "multiple commands in
//! one RPC").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::context::ControllerContext;
use crate::network::BlockingChannel;
use crate::network::ClientSecurity;
use crate::protocol::TopicPartition;
use crate::protocol::controller::LEADER_DURING_DELETE;
use crate::protocol::controller::{
    LeaderAndIsrRequest, PartitionErrorsResponse, PartitionState, StopReplicaRequest,
    TopicPartitionState, UpdateMetadataRequest,
};
use crate::protocol::header::{LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, oldest_version};
use crate::protocol::{BrokerInfo, Encode, decode_body, encode_body};

struct Command {
    api_key: i16,
    body: Vec<u8>,
}

struct BrokerSender {
    tx: Sender<Command>,
    /// Set when the broker leaves, so a sender stuck retrying gives up.
    stopped: Arc<AtomicBool>,
}

pub struct ControllerChannelManager {
    controller_id: i32,
    /// `controller.socket.timeout.ms`.
    socket_timeout: Duration,
    /// How the controller dials brokers' inter-broker listener.
    security: Arc<ClientSecurity>,
    senders: HashMap<i32, BrokerSender>,
}

impl ControllerChannelManager {
    pub fn new(controller_id: i32, socket_timeout: Duration, security: ClientSecurity) -> Self {
        ControllerChannelManager {
            controller_id,
            socket_timeout,
            security: Arc::new(security),
            senders: HashMap::new(),
        }
    }

    pub fn add_broker(&mut self, b: &BrokerInfo) {
        if self.senders.contains_key(&b.id) {
            return;
        }
        let (tx, rx) = unbounded();
        let stopped = Arc::new(AtomicBool::new(false));
        let (addr, controller, target, st, timeout, security) = (
            (b.host.clone(), b.port as u16),
            self.controller_id,
            b.id,
            stopped.clone(),
            self.socket_timeout,
            self.security.clone(),
        );
        std::thread::Builder::new()
            .name(format!("controller-{controller}-to-broker-{target}"))
            .spawn(move || send_loop(controller, target, (&addr, &security), timeout, rx, &st))
            .expect("spawn controller sender thread");
        self.senders.insert(b.id, BrokerSender { tx, stopped });
    }

    /// Stops the sender of a broker that left; commands still queued for it are dropped. The
    /// thread is not joined: it may be inside a connect that takes up to the socket timeout.
    pub fn remove_broker(&mut self, id: i32) {
        if let Some(s) = self.senders.remove(&id) {
            s.stopped.store(true, Ordering::Release);
        }
    }

    pub fn shutdown(&mut self) {
        let ids: Vec<i32> = self.senders.keys().copied().collect();
        for id in ids {
            self.remove_broker(id);
        }
    }

    fn send(&self, broker: i32, api_key: i16, body: Vec<u8>) {
        match self.senders.get(&broker) {
            Some(s) => {
                let _ = s.tx.send(Command { api_key, body });
            }
            None => log::debug!(
                "[Controller {}] no sender for broker {broker}; command dropped",
                self.controller_id
            ),
        }
    }
}

fn send_loop(
    controller: i32,
    target: i32,
    ((host, port), security): (&(String, u16), &ClientSecurity),
    socket_timeout: Duration,
    rx: Receiver<Command>,
    stopped: &AtomicBool,
) {
    let tag = format!("[Controller {controller} -> broker {target}]");
    let mut chan: Option<BlockingChannel> = None;
    while let Ok(cmd) = rx.recv() {
        let mut backoff = Duration::from_millis(50);
        while !stopped.load(Ordering::Acquire) {
            if chan.is_none() {
                match BlockingChannel::connect_as(
                    (host, *port),
                    &format!("controller-{controller}"),
                    socket_timeout,
                    security,
                ) {
                    Ok(c) => chan = Some(c),
                    Err(e) => log::debug!("{tag} connect to {host}:{port} failed: {e}"),
                }
            }
            if let Some(c) = chan.as_mut() {
                match c.round_trip_raw(cmd.api_key, oldest_version(cmd.api_key), &|b| {
                    b.extend_from_slice(&cmd.body)
                }) {
                    Ok(resp) => {
                        log_errors(&tag, cmd.api_key, &resp);
                        break;
                    }
                    Err(e) => {
                        log::warn!("{tag} request {} failed: {e}; reconnecting", cmd.api_key);
                        chan = None;
                    }
                }
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        if stopped.load(Ordering::Acquire) {
            return;
        }
    }
}

fn log_errors(tag: &str, api_key: i16, resp: &[u8]) {
    if api_key == UPDATE_METADATA {
        return;
    }
    if let Ok(r) = decode_body::<PartitionErrorsResponse>(resp, api_key, oldest_version(api_key)) {
        if r.error_code != 0 {
            log::warn!("{tag} api {api_key} answered error {}", r.error_code);
        }
        for (t, p, e) in r.partitions.iter().filter(|x| x.2 != 0) {
            log::warn!("{tag} api {api_key} {t}-{p}: error {e}");
        }
    }
}

/// The commands of one controller decision, sent together.
#[derive(Default)]
pub struct CommandBatch {
    leader_and_isr: BTreeMap<i32, Vec<TopicPartitionState>>,
    init: BTreeSet<i32>,
    stop_replica: BTreeMap<(i32, bool), Vec<TopicPartition>>,
    deleted: Vec<TopicPartition>,
    update_metadata: bool,
}

impl CommandBatch {
    /// LeaderAndIsr for `tp`, with its current state, to each of `brokers` that is live.
    pub fn leader_and_isr(
        &mut self,
        ctx: &ControllerContext,
        brokers: &[i32],
        tp: &TopicPartition,
    ) {
        let Some(state) = ctx.partition_state(tp) else {
            return;
        };
        for b in brokers.iter().filter(|b| ctx.is_live(**b)) {
            self.leader_and_isr
                .entry(*b)
                .or_default()
                .push(state.clone());
        }
        self.update_metadata = true;
    }

    /// Marks `broker`'s LeaderAndIsr as INIT (even if it carries no partition).
    pub fn init(&mut self, broker: i32) {
        self.init.insert(broker);
        self.leader_and_isr.entry(broker).or_default();
    }

    pub fn stop_replica(&mut self, broker: i32, delete: bool, tp: &TopicPartition) {
        self.stop_replica
            .entry((broker, delete))
            .or_default()
            .push(tp.clone());
    }

    /// A deleted partition: brokers' metadata caches drop it.
    pub fn deleted(&mut self, tp: TopicPartition) {
        self.deleted.push(tp);
        self.update_metadata = true;
    }

    pub fn update_metadata(&mut self) {
        self.update_metadata = true;
    }

    /// Sends everything: per broker LeaderAndIsr, then StopReplica, then (to every live
    /// broker) UpdateMetadata with the full partition state.
    pub fn send(
        self,
        ctx: &ControllerContext,
        channels: &ControllerChannelManager,
        controller_id: i32,
    ) {
        for (broker, states) in self.leader_and_isr {
            let leaders: BTreeSet<i32> = states.iter().map(|s| s.state.leader).collect();
            let req = LeaderAndIsrRequest {
                controller_id,
                controller_epoch: ctx.epoch,
                live_leaders: leaders
                    .iter()
                    .filter_map(|l| ctx.live_brokers.get(l).cloned())
                    .collect(),
                init: self.init.contains(&broker),
                broker_epoch: ctx.broker_sessions.get(&broker).copied().unwrap_or(-1),
                partition_states: states,
            };
            channels.send(broker, LEADER_AND_ISR, encode(LEADER_AND_ISR, &req));
        }
        for ((broker, delete), partitions) in self.stop_replica {
            let req = StopReplicaRequest {
                controller_id,
                controller_epoch: ctx.epoch,
                delete_partitions: delete,
                partitions,
            };
            channels.send(broker, STOP_REPLICA, encode(STOP_REPLICA, &req));
        }
        if self.update_metadata {
            let mut states: Vec<TopicPartitionState> = ctx
                .assignments
                .keys()
                .filter_map(|tp| ctx.partition_state(tp))
                .collect();
            states.extend(
                self.deleted
                    .into_iter()
                    .map(|TopicPartition { topic, partition }| TopicPartitionState {
                        topic,
                        partition,
                        state: PartitionState {
                            controller_epoch: ctx.epoch,
                            leader: LEADER_DURING_DELETE,
                            leader_epoch: 0,
                            isr: Vec::new(),
                            zk_version: 0,
                            replicas: Vec::new(),
                        },
                    }),
            );
            let req = UpdateMetadataRequest {
                controller_id,
                controller_epoch: ctx.epoch,
                partition_states: states,
                live_brokers: ctx.endpoints.values().cloned().collect(),
            };
            let body = encode(UPDATE_METADATA, &req);
            for b in ctx.live_brokers.keys() {
                channels.send(*b, UPDATE_METADATA, body.clone());
            }
        }
    }
}

/// The body of a command, at the one version of it brokers serve (`SUPPORTED_APIS`).
fn encode(api_key: i16, req: &dyn Encode) -> Vec<u8> {
    let mut b = Vec::new();
    encode_body(req, &mut b, api_key, oldest_version(api_key));
    b
}
