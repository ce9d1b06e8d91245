//! The broker: startup and shutdown, request handlers (`apis`), `ReplicaManager`, the metadata
//! cache, and the purgatory where parked requests wait.
//!
//! Threads: the socket server's acceptor and connection threads (a registered consumer's
//! connection thread runs its ping loop), the log manager's maintenance
//! thread, one high-watermark checkpoint thread, and the ZooKeeper session thread.

pub mod apis;
pub mod authorizer;
pub mod client_quotas;
mod controlled_shutdown;
mod controller_epoch;
pub mod credentials;
pub mod dynamic_config;
mod fetch_budget;
mod group_lag;
pub mod inflation;
mod isr;
pub mod metadata_cache;
pub mod metrics;
pub mod partition;
pub mod producer_ids;
pub mod purgatory;
pub mod replica_fetcher;
pub mod replica_manager;
pub mod replication_quota;
mod session_fence;
mod topic_configs;
pub mod txn_coordinator;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{RecvTimeoutError, Sender, bounded};
use parking_lot::Mutex;

use crate::config::BrokerConfig;
use crate::config::Listeners;
use crate::controller::KafkaController;
use crate::coordinator::{Coordinator, CoordinatorConfig};
use crate::log::{LogConfig, LogManager, LogSettings};
use crate::metrics::BrokerMetrics;
use crate::metrics::http::MetricsServer;
use crate::network::{ConnectionQuotas, ListenerSpec, RequestPool, SocketServer};
use crate::protocol::EndPoint;
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

/// How often the transaction coordinator looks for `__transaction_state` partitions it has
/// come to lead, and for transactions decided but not completed.
const TXN_COORDINATOR_TICK: std::time::Duration = std::time::Duration::from_secs(1);

pub struct Broker {
    /// The configuration the broker started with (its file and the dynamic layers then);
    /// `dynamic` has the one it runs with now.
    pub config: Arc<BrokerConfig>,
    pub dynamic: Arc<dynamic_config::DynamicBrokerConfig>,
    pub zk: Arc<ZkClient>,
    pub log_manager: Arc<LogManager>,
    pub replica_manager: Arc<ReplicaManager>,
    pub metadata_cache: Arc<MetadataCache>,
    pub controller: Arc<KafkaController>,
    pub coordinator: Arc<Coordinator>,
    pub txn_coordinator: Arc<txn_coordinator::TransactionCoordinator>,
    /// One per listener, in `listeners` order.
    servers: Vec<SocketServer>,
    quotas: Arc<ConnectionQuotas>,
    pool: Arc<RequestPool>,
    /// SASL users' credentials and the count of authentications, for the metrics.
    credentials: Arc<credentials::CredentialCache>,
    /// The ACLs, for the count of denials.
    authorizer: Arc<authorizer::Authorizer>,
    /// `GET /metrics`, when `metrics.listener` is set.
    metrics_server: Mutex<Option<MetricsServer>>,
    /// Set once `/brokers/ids/[id]` is ours: only then may shutdown hand over leadership and
    /// deregister (a refused duplicate must not touch the live broker with its id).
    registered: AtomicBool,
    /// Periodic tasks (high-watermark checkpoint, ISR expiry); dropping the senders stops them.
    periodic: Mutex<Vec<(Sender<()>, JoinHandle<()>)>>,
}

impl Broker {
    /// Starts a broker: open and recover the logs, connect to ZooKeeper, delete partitions no
    /// longer assigned here (spec D, broker startup), listen, then register in
    /// `/brokers/ids/[id]`.
    pub fn start(file_config: BrokerConfig) -> Result<Arc<Broker>, StartupError> {
        let config = Arc::new(file_config.clone());
        let id = config.broker_id;
        // Display, not Debug: "Address already in use (os error 98)", not `Os { code: 98, … }`.
        let err = |what: &str, e: &dyn std::fmt::Display| {
            StartupError(format!("broker {id}: {what}: {e}"))
        };
        let log_manager =
            LogManager::open(&(&*config).into()).map_err(|e| err("cannot open log dirs", &e))?;
        let zk = ZkClient::connect(&config.zookeeper_connect, config.zookeeper_session_timeout)
            .map_err(|e| {
                err(
                    &format!("cannot reach ZooKeeper at {}", config.zookeeper_connect),
                    &e,
                )
            })?;
        // The dynamic layers (`/config/brokers/…`) are read before anything else is built from
        // the configuration, so a value set while the broker was down holds from the start.
        let dynamic = Arc::new(dynamic_config::DynamicBrokerConfig::new(file_config));
        crate::zk::until_connected(config.zookeeper_connection_timeout, || dynamic.reload(&zk))
            .map_err(|e| err("cannot read the dynamic broker configuration", &e))?;
        let config = dynamic.current();
        log_manager.reconfigure(&(&*config).into());
        let metrics = BrokerMetrics::new();
        let replica_manager = Arc::new(ReplicaManager::new(
            &config,
            log_manager.clone(),
            zk.clone(),
            metrics.clone(),
        ));
        // ZooKeeper lost for a moment at start-up is waited out, as registering does.
        let wait = config.zookeeper_connection_timeout;
        crate::zk::until_connected(wait, || replica_manager.delete_unassigned_partitions(&zk))
            .map_err(|e| err("cannot read topic assignments", &e))?;
        zk.add_session_listener(
            Arc::downgrade(&replica_manager) as std::sync::Weak<dyn crate::zk::SessionListener>
        );
        let metadata_cache = Arc::new(MetadataCache::default());
        // The cluster id, created by the first broker of a new cluster (Metadata v2+).
        let cluster_id = crate::zk::until_connected(wait, || crate::zk::ids::cluster_id(&zk))
            .map_err(|e| err("cannot read the cluster id", &e))?;
        log::info!("[Broker {id}] cluster id {cluster_id}");
        metadata_cache.set_cluster_id(cluster_id);
        let controller = KafkaController::new(
            id,
            zk.clone(),
            config.unclean_leader_election_enable,
            config.leader_balance,
            config.listeners.inter_broker.clone(),
            config.controller_socket_timeout,
            config.inter_broker_client.clone(),
        );
        let coordinator = Coordinator::new(
            id,
            zk.clone(),
            CoordinatorConfig {
                rebalance_timeout: config.coordinator_rebalance_timeout,
                rebalance_backoff: config.coordinator_rebalance_backoff,
                group_min_session_timeout: config.group_min_session_timeout,
                group_max_session_timeout: config.group_max_session_timeout,
                group_initial_rebalance_delay: config.group_initial_rebalance_delay,
                group_max_size: config.group_max_size,
            },
        );
        let quotas = ConnectionQuotas::new(config.connection_limits.clone());
        let windows = |(num, size): (usize, std::time::Duration)| client_quotas::Windows {
            num,
            size_ms: size.as_millis() as u64,
        };
        let client_quotas = Arc::new(client_quotas::ClientQuotaManager::new(
            windows(config.quota_windows),
            windows(config.controller_quota_windows),
            Some(quotas.clone()),
        ));
        // Quotas hold from the first request; later changes come as notices.
        crate::zk::until_connected(wait, || client_quotas.reload(&zk))
            .map_err(|e| err("cannot read the client quotas", &e))?;
        // ACLs hold from the first request; changes come as notices.
        let authorizer = Arc::new(authorizer::Authorizer::new(
            id,
            config.security.authorizer.clone(),
        ));
        crate::zk::until_connected(wait, || authorizer.reload(&zk))
            .map_err(|e| err("cannot read the ACLs", &e))?;
        // SCRAM users can authenticate from the first connection; changes come as notices.
        let credentials = Arc::new(credentials::CredentialCache::default());
        crate::zk::until_connected(wait, || credentials.reload(&zk))
            .map_err(|e| err("cannot read the SCRAM credentials", &e))?;
        let producer_ids = Arc::new(producer_ids::ProducerIdManager::new(id, zk.clone()));
        let txn_coordinator = Arc::new(txn_coordinator::TransactionCoordinator::new(
            id,
            config.transactions.clone(),
            replica_manager.clone(),
            metadata_cache.clone(),
            zk.clone(),
            producer_ids.clone(),
            config.listeners.inter_broker.clone(),
            config.inter_broker_client.clone(),
        ));
        let apis = Arc::new(KafkaApis {
            broker_id: id,
            config: config.clone(),
            dynamic: dynamic.clone(),
            replica_manager: replica_manager.clone(),
            metadata_cache: metadata_cache.clone(),
            zk: zk.clone(),
            controller: controller.clone(),
            coordinator: coordinator.clone(),
            producer_ids,
            txn_coordinator: txn_coordinator.clone(),
            inflation: Default::default(),
            quotas: client_quotas.clone(),
            credentials: credentials.clone(),
            authorizer: authorizer.clone(),
        });
        let pool = Arc::new(RequestPool::new(
            config.connection_limits.queued_max_request_bytes,
        ));
        let ls = &config.listeners;
        let mut servers = Vec::new();
        for l in &ls.bind {
            let addr = format!("{}:{}", l.host, l.port);
            let listener = TcpListener::bind(&addr)
                .map_err(|e| err(&format!("cannot listen on {addr}"), &e))?;
            let inter_broker = l.name == ls.inter_broker;
            let tls = match config.security.tls.get(&l.name) {
                Some(settings) => Some(
                    dynamic
                        .tls_listener(&l.name, settings)
                        .map_err(|e| err(&format!("listener {}", l.name), &e))?,
                ),
                None => None,
            };
            let spec = ListenerSpec {
                name: l.name.clone(),
                inter_broker,
                exempt: inter_broker && ls.separate_inter_broker(),
                sasl: config.security.listener(&l.name).is_some(),
                tls,
            };
            let server = SocketServer::start(
                listener,
                spec,
                apis.clone(),
                quotas.clone(),
                pool.clone(),
                metrics.requests.clone(),
            )
            .map_err(|e| err(&format!("cannot serve {l}"), &e))?;
            servers.push(server);
        }
        log_manager.start_maintenance();
        log_manager.start_cleaner();
        register_reconfigurables(
            &dynamic,
            &log_manager,
            &replica_manager,
            &quotas,
            &controller,
        );
        let broker = Arc::new(Broker {
            config: config.clone(),
            dynamic: dynamic.clone(),
            zk: zk.clone(),
            log_manager,
            replica_manager,
            metadata_cache,
            controller,
            coordinator,
            txn_coordinator: txn_coordinator.clone(),
            servers,
            quotas,
            pool,
            credentials: credentials.clone(),
            authorizer: authorizer.clone(),
            metrics_server: Mutex::new(None),
            registered: AtomicBool::new(false),
            periodic: Mutex::new(Vec::new()),
        });
        metrics::register_samplers(&broker);
        let q = Arc::downgrade(&client_quotas);
        broker
            .replica_manager
            .metrics
            .add_sampler(Box::new(move |out| {
                if let Some(q) = q.upgrade() {
                    q.families(out);
                }
            }));
        if let Some(addr) = &config.metrics_listener {
            let m = metrics.clone();
            match MetricsServer::start(addr, id, move || m.encode()) {
                Ok(s) => *broker.metrics_server.lock() = Some(s),
                Err(e) => {
                    broker.shutdown();
                    return Err(err("metrics.listener", &e));
                }
            }
        }
        let rm = broker.replica_manager.clone();
        broker.spawn_periodic(
            "hw-checkpoint",
            config.replica_high_watermark_checkpoint_interval,
            move || rm.checkpoint_high_watermarks(),
        );
        broker
            .periodic
            .lock()
            .push(topic_configs::start_config_change_listener(
                broker.replica_manager.clone(),
                client_quotas.clone(),
                credentials.clone(),
                dynamic.clone(),
            ));
        if let Some(w) = authorizer.start_watcher(zk.clone()) {
            broker.periodic.lock().push(w);
        }
        // Takes up the `__transaction_state` partitions this broker comes to lead, finishes
        // their decided transactions, aborts timed-out ones.
        let tc = txn_coordinator.clone();
        broker.spawn_periodic(
            "txn-coordinator",
            TXN_COORDINATOR_TICK.min(config.transactions.abort_timed_out_interval),
            move || tc.tick(),
        );
        let rm = broker.replica_manager.clone();
        broker.spawn_periodic(
            "isr-expiration",
            config.replica_lag_time_max / 2,
            move || rm.maybe_shrink_isr(),
        );
        // Register last, so the controller only sees a broker that can serve. A node left by
        // our own previous session vanishes within a session timeout; one that stays belongs
        // to another live broker with this id. ZooKeeper out of reach for a moment (it is
        // restarting) is waited out too, as Kafka's ZkClient retries until connected.
        let wait = config.zookeeper_session_timeout
            + config.zookeeper_session_timeout / 2
            + config.zookeeper_connection_timeout;
        let endpoints = advertised_endpoints(ls, &broker.servers);
        if let Err(e) = zk.create_ephemeral(
            &paths::broker_path(id),
            paths::broker_registration(&endpoints, &ls.protocols),
            wait,
        ) {
            broker.shutdown();
            return Err(match e {
                crate::zk::ZkError::NodeExists => StartupError(format!(
                    "broker id {id} is already registered at {} by another live broker; pick another broker.id",
                    paths::broker_path(id)
                )),
                e => err("cannot register in ZooKeeper", &e),
            });
        }
        broker.registered.store(true, Ordering::Release);
        // Every broker takes part in the controller election (spec D).
        broker.controller.startup();
        // ...and in the consumer coordinator's election.
        broker.coordinator.startup();
        let bound: Vec<String> = ls
            .bind
            .iter()
            .zip(&broker.servers)
            .map(|(l, s)| format!("{}://{}", l.name, s.local_addr()))
            .collect();
        log::info!(
            "[Broker {id}] started, listening on {} (inter-broker: {})",
            bound.join(", "),
            ls.inter_broker
        );
        Ok(broker)
    }

    pub fn id(&self) -> i32 {
        self.config.broker_id
    }

    /// The first listener's address (the client one, by convention).
    pub fn local_addr(&self) -> SocketAddr {
        self.servers[0].local_addr()
    }

    /// Where `GET /metrics` is served, if `metrics.listener` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_server.lock().as_ref().map(|s| s.local_addr())
    }

    /// The address of the listener named `name`.
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        let i = self
            .config
            .listeners
            .bind
            .iter()
            .position(|l| l.name == name)?;
        Some(self.servers[i].local_addr())
    }

    /// Runs `task` every `every` on its own thread until shutdown.
    fn spawn_periodic(
        &self,
        name: &str,
        every: std::time::Duration,
        task: impl Fn() + Send + 'static,
    ) {
        let (tx, rx) = bounded::<()>(0);
        let h = std::thread::Builder::new()
            .name(format!("{name}-{}", self.id()))
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    task();
                }
            })
            .expect("spawn periodic task thread");
        self.periodic.lock().push((tx, h));
    }

    /// Asks the controller to move this broker's leaderships away (controlled shutdown), leaves
    /// the controller election, deregisters, stops serving, checkpoints high watermarks and
    /// flushes every log.
    pub fn shutdown(&self) {
        let id = self.config.broker_id;
        log::info!("[Broker {id}] shutting down");
        let registered = self.registered.swap(false, Ordering::AcqRel);
        if registered && self.config.controlled_shutdown_enable {
            self.controlled_shutdown();
        }
        // Leading nothing now, it stops copying first: a fetch that reached a leader after the
        // controller took this broker out of the ISR would take it back in.
        self.replica_manager.fetchers.shutdown();
        self.controller.shutdown();
        self.coordinator.shutdown();
        self.txn_coordinator.shutdown();
        if registered {
            let _ = self.zk.delete_ephemeral(&paths::broker_path(id));
        }
        if let Some(m) = self.metrics_server.lock().take() {
            m.shutdown();
        }
        self.pool.close();
        for s in &self.servers {
            s.shutdown();
        }
        for (stop, h) in self.periodic.lock().drain(..) {
            drop(stop);
            let _ = h.join();
        }
        self.replica_manager.checkpoint_high_watermarks();
        self.log_manager.shutdown();
        self.zk.close();
        log::info!("[Broker {id}] shut down");
    }
}

/// What the broker registers for each listener: its advertised address, where a listener
/// bound to port 0 (tests) and not advertised otherwise registers the port it was given.
fn advertised_endpoints(ls: &Listeners, servers: &[SocketServer]) -> Vec<EndPoint> {
    ls.advertised
        .iter()
        .zip(&ls.bind)
        .zip(servers)
        .map(|((a, b), s)| EndPoint {
            listener: a.name.clone(),
            host: a.host.clone(),
            port: i32::from(if a.port == 0 || a == b {
                s.local_addr().port()
            } else {
                a.port
            }),
        })
        .collect()
}

/// Hands each part of the broker that holds a dynamic key every new configuration: the logs'
/// defaults, replication's `min.insync.replicas` and fetchers, the connection limits, the
/// controller's unclean leader election. (Request handlers
/// read `DynamicBrokerConfig::current` themselves.)
fn register_reconfigurables(
    dynamic: &dynamic_config::DynamicBrokerConfig,
    log_manager: &Arc<LogManager>,
    replica_manager: &Arc<ReplicaManager>,
    quotas: &Arc<ConnectionQuotas>,
    controller: &Arc<KafkaController>,
) {
    let (logs, rm, q) = (log_manager.clone(), replica_manager.clone(), quotas.clone());
    let controller = controller.clone();
    dynamic.add_reconfigurable(move |c| {
        logs.reconfigure(&c.into());
        rm.reconfigure(c);
        q.reconfigure(c.connection_limits.clone());
        controller.set_unclean_leader_election(c.unclean_leader_election_enable);
    });
}

/// The log manager's share of the broker's configuration.
impl From<&BrokerConfig> for LogSettings {
    fn from(cfg: &BrokerConfig) -> LogSettings {
        LogSettings {
            dirs: cfg.log_dirs.clone(),
            log: LogConfig {
                segment_bytes: cfg.log_segment_bytes,
                index_interval_bytes: cfg.log_index_interval_bytes,
                flush_interval_messages: cfg.log_flush_interval_messages,
                file_delete_delay: cfg.log_segment_delete_delay,
                roll: cfg.log_roll,
            },
            recovery_threads_per_dir: cfg.num_recovery_threads_per_data_dir,
            retention: cfg.log_retention,
            retention_bytes: cfg.log_retention_bytes,
            retention_check_interval: cfg.log_retention_check_interval,
            flush_interval: cfg.log_flush_interval,
            producer_id_expiration: cfg.producer_id_expiration,
            cleaner: cfg.log_cleaner.clone(),
        }
    }
}
