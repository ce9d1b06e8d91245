//! Broker configuration: `server.properties` with the key names a Kafka operator knows.
//!
//! Every key is a row of `keys::BROKER` (type, default, bounds, documentation) and fills one
//! field below; a key the table does not have is an error naming it, so a typo never silently
//! falls back to a default. `--override key=value` wins over the file.

use crate::protocol::record_batch::CompressionType;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod cleaner;
mod connection_limits;
pub mod dynamic;
pub mod keys;
mod listeners;
mod props;
pub mod replication_throttle;
pub mod security;
mod tls;
pub mod transactions;

pub use crate::network::ConnectionLimits;
pub use cleaner::{CleanerConfig, CleanupPolicy};
pub use listeners::{Listener, Listeners};
use props::Props;
pub use props::{Setting, Settings};
pub use transactions::TxnConfig;

/// A configuration problem, named so the operator can fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Kafka's automatic leader rebalance, as the controller is told of it.
#[derive(Debug, Clone, Copy)]
pub struct LeaderBalance {
    /// `leader.imbalance.check.interval.seconds`; `None` when `auto.leader.rebalance.enable`
    /// is false.
    pub check_interval: Option<Duration>,
    /// `leader.imbalance.per.broker.percentage`.
    pub imbalance_percentage: u32,
}

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub broker_id: i32,
    /// `listeners`, `advertised.listeners`, `listener.security.protocol.map` and
    /// `inter.broker.listener.name`; one PLAINTEXT listener on 127.0.0.1:9092 by default.
    pub listeners: Listeners,
    /// SASL listeners' mechanisms and users, and this broker's own inter-broker login.
    pub security: security::Security,
    /// How this broker dials another's inter-broker listener: TLS (the inter-broker
    /// listener's settings) and SASL (its own login), as that listener asks.
    pub inter_broker_client: crate::network::ClientSecurity,
    pub log_dirs: Vec<PathBuf>,
    /// `host:port[,host:port...][/chroot]`.
    pub zookeeper_connect: String,
    pub zookeeper_session_timeout: Duration,
    /// `zookeeper.connection.timeout.ms`: how long registering at start-up keeps trying while
    /// ZooKeeper is unreachable (Kafka's default: the session timeout).
    pub zookeeper_connection_timeout: Duration,
    pub num_partitions: i32,
    pub default_replication_factor: i32,
    pub auto_create_topics_enable: bool,
    pub delete_topic_enable: bool,
    pub log_segment_bytes: u64,
    /// Retention by age; `None` keeps segments forever.
    pub log_retention: Option<Duration>,
    /// Retention by size per partition; `None` is unlimited (Kafka's -1).
    pub log_retention_bytes: Option<u64>,
    pub log_retention_check_interval: Duration,
    /// Force an fsync after this many appended messages.
    pub log_flush_interval_messages: u64,
    pub log_segment_delete_delay: Duration,
    /// `log.roll.ms` or `log.roll.hours`: the longest a segment stays active.
    pub log_roll: Duration,
    /// `log.cleanup.policy` and the cleaner's keys.
    pub log_cleaner: CleanerConfig,
    /// The transaction coordinator's keys.
    pub transactions: TxnConfig,
    /// Force an fsync of a log written to longer ago than this; `None`: leave it to the OS.
    pub log_flush_interval: Option<Duration>,
    /// One index entry per this many bytes of log.
    pub log_index_interval_bytes: u32,
    pub message_max_bytes: usize,
    /// `compression.type`: the codec produced batches are stored with.
    pub compression_type: crate::protocol::record_batch::CompressionType,
    /// `producer.id.expiration.ms`: how long an idle idempotent producer's state is kept.
    pub producer_id_expiration: Duration,
    /// `log.message.timestamp.type=LogAppendTime`: batches get the broker's clock as their
    /// timestamp (format v2; older formats keep the producer's). `CreateTime` by default.
    pub log_append_time: bool,
    /// What the socket servers admit: request sizes, the request memory pool, connection
    /// counts per broker and per address, the creation rate, idle time.
    pub connection_limits: ConnectionLimits,
    pub replica_lag_time_max: Duration,
    /// `num.replica.fetchers`: fetcher threads per source broker.
    pub num_replica_fetchers: usize,
    /// `replica.fetch.max.bytes`: the bytes a follower asks of each partition per fetch (a
    /// larger first batch still comes whole, KIP-74).
    pub replica_fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`: the record bytes a follower asks of one whole
    /// answer (Kafka's default, 10 MiB).
    pub replica_fetch_response_max_bytes: i32,
    /// `fetch.max.bytes`: the most record bytes one Fetch answer carries, whatever its
    /// partitions ask (Kafka's default, 55 MiB).
    pub fetch_max_bytes: i32,
    pub replica_fetch_wait_max: Duration,
    pub replica_fetch_min_bytes: i32,
    pub replica_high_watermark_checkpoint_interval: Duration,
    pub min_insync_replicas: usize,
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable` with its interval and threshold.
    pub leader_balance: LeaderBalance,
    /// On SIGTERM, ask the controller to move leadership away before stopping.
    pub controlled_shutdown_enable: bool,
    pub controlled_shutdown_max_retries: u32,
    pub controlled_shutdown_retry_backoff: Duration,
    /// `controller.socket.timeout.ms`: how long the controller's requests to a broker, and a
    /// broker's ControlledShutdown to the controller, wait for an answer.
    pub controller_socket_timeout: Duration,
    /// How long the coordinator waits for every StopResponse and StartResponse of a rebalance.
    pub coordinator_rebalance_timeout: Duration,
    /// First wait before a failed rebalance is tried again (doubling per failure).
    pub coordinator_rebalance_backoff: Duration,
    /// Kafka-protocol groups: bounds on a member's session timeout.
    pub group_min_session_timeout: Duration,
    pub group_max_session_timeout: Duration,
    /// How long an empty group's first join waits for more members.
    pub group_initial_rebalance_delay: Duration,
    /// The most members one Kafka-protocol group may have.
    pub group_max_size: usize,
    /// `num.recovery.threads.per.data.dir`: threads that open and recover logs at start-up.
    pub num_recovery_threads_per_data_dir: usize,
    /// `metrics.listener=HOST:PORT`: where `GET /metrics` is served; unset, nowhere.
    pub metrics_listener: Option<String>,
    /// Client quotas are measured over `quota.window.num` windows of
    /// `quota.window.size.seconds`; controller mutations over the `controller.` pair.
    pub quota_windows: (usize, Duration),
    pub controller_quota_windows: (usize, Duration),
    /// The replication throttles' rates (KIP-73; the throttled replicas are topics' settings).
    pub replication_rates: replication_throttle::ReplicationRates,
    /// Every key as the broker runs with it, for DescribeConfigs.
    pub settings: Settings,
    /// `server.properties` (with `--override`s) as given, under the dynamic layers.
    pub file: BTreeMap<String, String>,
    /// The dynamic layers laid over the file (`config::dynamic`); empty at first.
    pub dynamic: dynamic::Layers,
    /// How the layers' secrets are stored (`password.encoder.*`); `None` without a secret.
    pub password_encoder: Option<crate::security::password_encoder::PasswordEncoder>,
}

/// Reads `key=value` lines; `#` and `!` start comments, as in Java properties.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut map = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| {
            ConfigError(format!("line {}: expected key=value, got `{line}`", n + 1))
        })?;
        map.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    Ok(map)
}

impl BrokerConfig {
    /// The broker's value for a topic-level key (`keys::Key::topic`), what a topic that does
    /// not set it gets.
    pub fn topic_default(&self, topic_key: &str) -> String {
        keys::for_topic(topic_key)
            .and_then(|k| self.settings.value(k.name))
            .unwrap_or_default()
            .to_owned()
    }

    pub fn from_file(path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        let mut map = parse_properties(&text)?;
        for o in overrides {
            let (k, v) = o
                .split_once('=')
                .ok_or_else(|| ConfigError(format!("--override expects key=value, got `{o}`")))?;
            map.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        Self::from_map(map)
    }

    pub fn from_map(map: BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let file = map.clone();
        let mut p = Props::new(map)?;
        let broker_id: i32 = p
            .take("broker.id")?
            .ok_or_else(|| ConfigError("missing required key `broker.id`".into()))?
            .parse()
            .map_err(|_| ConfigError("`broker.id` must be a non-negative integer".into()))?;
        let listeners = listeners::read(&mut p)?;
        let security = security::read(&mut p, &listeners)?;
        let inter_broker_client = crate::network::ClientSecurity {
            tls: security
                .inter_broker_tls(&listeners.inter_broker)
                .map(crate::network::tls::client_config)
                .transpose()
                .map_err(|e| ConfigError(format!("inter-broker listener: {e}")))?,
            login: security.inter_broker_login.clone(),
        };
        let connection_limits = connection_limits::read(&mut p)?;
        let dirs = p.take("log.dirs")?;
        let dir = p.take("log.dir")?;
        let log_dirs: Vec<PathBuf> = dirs
            .or(dir)
            .ok_or_else(|| ConfigError("missing required key `log.dirs`".into()))?
            .split(',')
            .map(|s| PathBuf::from(s.trim()))
            .collect();
        let zookeeper_connect = p
            .take("zookeeper.connect")?
            .ok_or_else(|| ConfigError("missing required key `zookeeper.connect`".into()))?;
        // Kafka's precedence: milliseconds, then minutes, then hours.
        let retention_hours: i64 = p.get("log.retention.hours")?;
        let retention_minutes = p.take("log.retention.minutes")?;
        let retention_ms = match (p.take("log.retention.ms")?, retention_minutes) {
            (Some(ms), _) => ms.parse().expect("checked as a long"),
            (None, Some(min)) => min
                .parse::<i64>()
                .expect("checked as an int")
                .saturating_mul(60_000),
            (None, None) => retention_hours.saturating_mul(3_600_000),
        };
        // Any negative retention is "forever", which Kafka writes -1.
        p.derived("log.retention.ms", retention_ms.max(-1).to_string());
        let retention_bytes: i64 = p.get("log.retention.bytes")?;
        let flush_ms = p.take("log.flush.interval.ms")?;
        let zookeeper_session_timeout = p.millis("zookeeper.session.timeout.ms")?;
        let zookeeper_connection_timeout = match p.take("zookeeper.connection.timeout.ms")? {
            Some(ms) => Duration::from_millis(ms.parse().expect("checked as an int")),
            None => zookeeper_session_timeout,
        };
        p.derived(
            "zookeeper.connection.timeout.ms",
            zookeeper_connection_timeout.as_millis().to_string(),
        );
        let mut cfg = BrokerConfig {
            broker_id,
            listeners,
            security,
            inter_broker_client,
            connection_limits,
            log_dirs,
            zookeeper_connect,
            zookeeper_session_timeout,
            zookeeper_connection_timeout,
            num_partitions: p.get("num.partitions")?,
            default_replication_factor: p.get("default.replication.factor")?,
            auto_create_topics_enable: p.get("auto.create.topics.enable")?,
            delete_topic_enable: p.get("delete.topic.enable")?,
            log_segment_bytes: p.get("log.segment.bytes")?,
            log_retention: (retention_ms >= 0).then(|| Duration::from_millis(retention_ms as u64)),
            log_retention_bytes: (retention_bytes >= 0).then_some(retention_bytes as u64),
            log_retention_check_interval: p.millis("log.retention.check.interval.ms")?,
            log_flush_interval_messages: p.get("log.flush.interval.messages")?,
            log_segment_delete_delay: p.millis("log.segment.delete.delay.ms")?,
            log_roll: cleaner::read_roll(&mut p)?,
            log_cleaner: cleaner::read(&mut p)?,
            transactions: transactions::read(&mut p)?,
            log_flush_interval: flush_ms
                .map(|ms| Duration::from_millis(ms.parse().expect("checked as a long"))),
            log_index_interval_bytes: p.get("log.index.interval.bytes")?,
            message_max_bytes: p.get("message.max.bytes")?,
            compression_type: CompressionType::parse(&p.get::<String>("compression.type")?)
                .unwrap_or_default(),
            producer_id_expiration: p.millis("producer.id.expiration.ms")?,
            log_append_time: p.get::<String>("log.message.timestamp.type")? == "LogAppendTime",
            replica_lag_time_max: p.millis("replica.lag.time.max.ms")?,
            num_replica_fetchers: p.get("num.replica.fetchers")?,
            replica_fetch_max_bytes: p.get("replica.fetch.max.bytes")?,
            replica_fetch_response_max_bytes: p.get("replica.fetch.response.max.bytes")?,
            fetch_max_bytes: p.get("fetch.max.bytes")?,
            replica_fetch_wait_max: p.millis("replica.fetch.wait.max.ms")?,
            replica_fetch_min_bytes: p.get("replica.fetch.min.bytes")?,
            replica_high_watermark_checkpoint_interval: p
                .millis("replica.high.watermark.checkpoint.interval.ms")?,
            min_insync_replicas: p.get("min.insync.replicas")?,
            unclean_leader_election_enable: p.get("unclean.leader.election.enable")?,
            leader_balance: {
                let enabled: bool = p.get("auto.leader.rebalance.enable")?;
                let every: u64 = p.get("leader.imbalance.check.interval.seconds")?;
                LeaderBalance {
                    check_interval: enabled.then(|| Duration::from_secs(every)),
                    imbalance_percentage: p.get("leader.imbalance.per.broker.percentage")?,
                }
            },
            controlled_shutdown_enable: p.get("controlled.shutdown.enable")?,
            controlled_shutdown_max_retries: p.get("controlled.shutdown.max.retries")?,
            controlled_shutdown_retry_backoff: p.millis("controlled.shutdown.retry.backoff.ms")?,
            controller_socket_timeout: p.millis("controller.socket.timeout.ms")?,
            coordinator_rebalance_timeout: p.millis("coordinator.rebalance.timeout.ms")?,
            coordinator_rebalance_backoff: p.millis("coordinator.rebalance.backoff.ms")?,
            group_min_session_timeout: p.millis("group.min.session.timeout.ms")?,
            group_max_session_timeout: p.millis("group.max.session.timeout.ms")?,
            group_initial_rebalance_delay: p.millis("group.initial.rebalance.delay.ms")?,
            group_max_size: p.get("group.max.size")?,
            num_recovery_threads_per_data_dir: p.get("num.recovery.threads.per.data.dir")?,
            metrics_listener: p
                .take("metrics.listener")?
                .map(check_host_port)
                .transpose()?,
            quota_windows: (
                p.get("quota.window.num")?,
                Duration::from_secs(p.get("quota.window.size.seconds")?),
            ),
            controller_quota_windows: (
                p.get("controller.quota.window.num")?,
                Duration::from_secs(p.get("controller.quota.window.size.seconds")?),
            ),
            replication_rates: replication_throttle::read(&mut p)?,
            settings: Settings::default(),
            file,
            dynamic: dynamic::Layers::default(),
            password_encoder: dynamic::read_password_encoder(&mut p)?,
        };
        cfg.settings = p.settings();
        Ok(cfg)
    }
}

/// `metrics.listener` is `host:port`, without a listener name or scheme.
fn check_host_port(v: String) -> Result<String, ConfigError> {
    match v.rsplit_once(':') {
        Some((host, port))
            if !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok() =>
        {
            Ok(v)
        }
        _ => Err(ConfigError(format!(
            "`metrics.listener` must be HOST:PORT, e.g. 127.0.0.1:9404, got `{v}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> BTreeMap<String, String> {
        parse_properties("broker.id=1\nlog.dirs=/tmp/x\nzookeeper.connect=127.0.0.1:2181/g\n")
            .unwrap()
    }

    #[test]
    fn defaults_and_listener() {
        let c = BrokerConfig::from_map(base()).unwrap();
        assert_eq!(
            c.listeners.bind[0].to_string(),
            "PLAINTEXT://127.0.0.1:9092"
        );
        assert!(!c.unclean_leader_election_enable);
        let mut m = base();
        m.insert("listeners".into(), "PLAINTEXT://127.0.0.1:9999".into());
        m.insert(
            "advertised.listeners".into(),
            "PLAINTEXT://127.0.0.1:7777".into(),
        );
        let c = BrokerConfig::from_map(m.clone()).unwrap();
        assert_eq!(c.listeners.bind[0].port, 9999);
        assert_eq!(c.listeners.advertised[0].port, 7777);
        m.insert("advertised.listeners".into(), "127.0.0.1:7777".into());
        let e = BrokerConfig::from_map(m).unwrap_err();
        assert!(e.0.contains("advertised.listeners"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let mut m = base();
        m.insert("log.segment.byte".into(), "10".into());
        let e = BrokerConfig::from_map(m).unwrap_err();
        assert!(e.0.contains("log.segment.byte"), "{e}");
        let mut m = base();
        m.remove("broker.id");
        assert!(
            BrokerConfig::from_map(m)
                .unwrap_err()
                .0
                .contains("broker.id")
        );
        let mut m = base();
        m.insert("min.insync.replicas".into(), "two".into());
        assert!(
            BrokerConfig::from_map(m)
                .unwrap_err()
                .0
                .contains("min.insync.replicas")
        );
    }

    #[test]
    fn every_key_of_the_table_is_read_and_reported() {
        let c = BrokerConfig::from_map(base()).unwrap();
        let read: Vec<&str> = c.settings.iter().map(|s| s.key.name).collect();
        let table: Vec<&str> = keys::BROKER.iter().map(|k| k.name).collect();
        assert_eq!(read, table, "a row no field reads, or read twice");
        let set = |name: &str| {
            c.settings
                .iter()
                .find(|s| s.key.name == name)
                .unwrap()
                .clone()
        };
        assert!(set("broker.id").from_file && !set("num.partitions").from_file);
        assert_eq!(set("num.partitions").value.as_deref(), Some("1"));
        // Derived keys report what they came to.
        assert_eq!(c.settings.value("log.retention.ms"), Some("604800000"));
        assert_eq!(
            c.settings.value("zookeeper.connection.timeout.ms"),
            Some("6000")
        );
        assert_eq!(
            c.settings.value("listeners"),
            Some("PLAINTEXT://127.0.0.1:9092")
        );
        assert_eq!(c.settings.value("metrics.listener"), None);
        assert_eq!(c.topic_default("retention.ms"), "604800000");
        assert_eq!(c.topic_default("max.message.bytes"), "1000012");
        let mut m = base();
        m.insert("log.retention.hours".into(), "-1".into());
        let forever = BrokerConfig::from_map(m).unwrap();
        assert_eq!(forever.log_retention, None);
        assert_eq!(forever.topic_default("retention.ms"), "-1");
        // Minutes come before hours, milliseconds before both (Kafka's order).
        let mut m = base();
        m.insert("log.retention.hours".into(), "1".into());
        m.insert("log.retention.minutes".into(), "5".into());
        let minutes = BrokerConfig::from_map(m.clone()).unwrap();
        assert_eq!(minutes.topic_default("retention.ms"), "300000");
        assert_eq!(minutes.settings.value("log.retention.minutes"), Some("5"));
        m.insert("log.retention.ms".into(), "7000".into());
        assert_eq!(
            BrokerConfig::from_map(m)
                .unwrap()
                .topic_default("retention.ms"),
            "7000"
        );
        assert_eq!(c.settings.value("log.retention.minutes"), None);
    }

    #[test]
    fn values_are_checked_by_their_row() {
        for (k, v, says) in [
            ("log.segment.bytes", "13", "at least 14"),
            ("log.segment.bytes", "4294967296", "int"),
            ("auto.create.topics.enable", "yes", "true or false"),
            (
                "log.message.timestamp.type",
                "Now",
                "CreateTime, LogAppendTime",
            ),
            ("log.cleanup.policy", "compact,remove", "delete, compact"),
            ("log.cleaner.min.cleanable.ratio", "1.5", "between 0 and 1"),
            ("queued.max.request.bytes", "0", "-1 for unlimited"),
        ] {
            let mut m = base();
            m.insert(k.into(), v.into());
            let e = BrokerConfig::from_map(m).unwrap_err();
            assert!(e.0.contains(k) && e.0.contains(says), "{k}={v}: {e}");
        }
    }

    #[test]
    fn metrics_listener_is_host_and_port() {
        assert_eq!(
            BrokerConfig::from_map(base()).unwrap().metrics_listener,
            None
        );
        let mut m = base();
        m.insert("metrics.listener".into(), "127.0.0.1:9404".into());
        let c = BrokerConfig::from_map(m).unwrap();
        assert_eq!(c.metrics_listener.as_deref(), Some("127.0.0.1:9404"));
        for bad in [
            "http://127.0.0.1:9404",
            "127.0.0.1",
            ":9404",
            "127.0.0.1:http",
        ] {
            let mut m = base();
            m.insert("metrics.listener".into(), bad.into());
            let e = BrokerConfig::from_map(m).unwrap_err();
            assert!(e.0.contains("metrics.listener") && e.0.contains(bad), "{e}");
        }
    }
}
