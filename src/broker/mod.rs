//! The broker: startup and shutdown, request handlers (`apis`), `ReplicaManager`, the metadata
//! cache, and the notifier that parked requests wait on.
//!
//! Threads: the socket server's acceptor and connection threads, the log manager's maintenance
//! thread, one high-watermark checkpoint thread, and the ZooKeeper session thread.

pub mod apis;
pub mod metadata_cache;
pub mod notifier;
pub mod partition;
pub mod replica_manager;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{RecvTimeoutError, Sender, bounded};
use parking_lot::Mutex;

use crate::config::BrokerConfig;
use crate::log::LogManager;
use crate::network::SocketServer;
use crate::zk::{ZkClient, paths};
use apis::KafkaApis;
use metadata_cache::MetadataCache;
use replica_manager::ReplicaManager;

/// Why a broker could not start; the message names the cause.
#[derive(Debug)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

pub struct Broker {
    pub config: Arc<BrokerConfig>,
    pub zk: Arc<ZkClient>,
    pub log_manager: Arc<LogManager>,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    server: SocketServer,
    stop_checkpointer: Mutex<Option<Sender<()>>>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
}

impl Broker {
    /// Starts a broker: open and recover the logs, connect to ZooKeeper, delete partitions no
    /// longer assigned here (spec D, broker startup), listen, then register in
    /// `/brokers/ids/[id]`.
    pub fn start(config: BrokerConfig) -> Result<Arc<Broker>, StartupError> {
        let config = Arc::new(config);
        let id = config.broker_id;
        let err = |what: &str, e: &dyn std::fmt::Debug| {
            StartupError(format!("broker {id}: {what}: {e:?}"))
        };
        let log_manager = LogManager::open(&config).map_err(|e| err("cannot open log dirs", &e))?;
        let zk = ZkClient::connect(&config.zookeeper_connect, config.zookeeper_session_timeout)
            .map_err(|e| {
                err(
                    &format!("cannot reach ZooKeeper at {}", config.zookeeper_connect),
                    &e,
                )
            })?;
        let replica_manager = Arc::new(ReplicaManager::new(&config, log_manager.clone()));
        replica_manager
            .delete_unassigned_partitions(&zk)
            .map_err(|e| err("cannot read topic assignments", &e))?;
        let metadata_cache = Arc::new(MetadataCache::default());
        let apis = Arc::new(KafkaApis {
            broker_id: id,
            config: config.clone(),
            replica_manager: replica_manager.clone(),
            metadata_cache: metadata_cache.clone(),
        });
        let addr = format!("{}:{}", config.host, config.port);
        let server = SocketServer::start(
            &addr,
            apis,
            config.socket_request_max_bytes,
            config.max_connections,
        )
        .map_err(|e| err(&format!("cannot listen on {addr}"), &e))?;
        let port = server.local_addr().port();
        log_manager.start_maintenance();
        let broker = Arc::new(Broker {
            config: config.clone(),
            zk: zk.clone(),
            log_manager,
            replica_manager,
            metadata_cache,
            server,
            stop_checkpointer: Mutex::new(None),
            checkpointer: Mutex::new(None),
        });
        broker.start_checkpointer();
        // Register last, so the controller only sees a broker that can serve. A node left by
        // our own previous session vanishes within a session timeout; one that stays belongs
        // to another live broker with this id.
        let wait = config.zookeeper_session_timeout + config.zookeeper_session_timeout / 2;
        if let Err(e) = zk.create_ephemeral(
            &paths::broker_path(id),
            paths::broker_registration(&config.host, port),
            wait,
        ) {
            broker.shutdown();
            return Err(match e {
                zookeeper::ZkError::NodeExists => StartupError(format!(
                    "broker id {id} is already registered at {} by another live broker; pick another broker.id",
                    paths::broker_path(id)
                )),
                e => err("cannot register in ZooKeeper", &e),
            });
        }
        log::info!("[Broker {id}] started on {}:{port}", config.host);
        Ok(broker)
    }

    pub fn id(&self) -> i32 {
        self.config.broker_id
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    fn start_checkpointer(self: &Arc<Self>) {
        let (tx, rx) = bounded::<()>(0);
        *self.stop_checkpointer.lock() = Some(tx);
        let rm = self.replica_manager.clone();
        let every = self.config.replica_high_watermark_checkpoint_interval;
        let h = std::thread::Builder::new()
            .name("hw-checkpoint".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    rm.checkpoint_high_watermarks();
                }
            })
            .expect("spawn hw-checkpoint thread");
        *self.checkpointer.lock() = Some(h);
    }

    /// Deregisters, stops serving, checkpoints high watermarks and flushes every log.
    pub fn shutdown(&self) {
        let id = self.config.broker_id;
        log::info!("[Broker {id}] shutting down");
        let _ = self.zk.delete_ephemeral(&paths::broker_path(id));
        self.server.shutdown();
        self.stop_checkpointer.lock().take();
        if let Some(h) = self.checkpointer.lock().take() {
            let _ = h.join();
        }
        self.replica_manager.checkpoint_high_watermarks();
        self.log_manager.shutdown();
        self.zk.close();
        log::info!("[Broker {id}] shut down");
    }
}
