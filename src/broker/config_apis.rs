//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and DescribeCluster. Topic
//! configuration is what `/config/topics/[topic]` sets over the broker's defaults, for the
//! topic-level keys gregor serves (`zk::topic_config`); a change is written there and
//! announced under `/config/changes`, and every broker holding the topic applies it
//! (`broker::topic_configs`). Broker configuration is this broker's `server.properties` as it
//! was read at start, all read-only (gregor has no dynamic broker configuration).

use std::collections::BTreeMap;

use super::apis::KafkaApis;
use crate::config::BrokerConfig;
use crate::network::Action;
use crate::protocol::ErrorCode;
use crate::protocol::admin_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResult, OP_APPEND, OP_DELETE, OP_SET,
    OP_SUBTRACT, encode_alter_configs_response,
};
use crate::protocol::admin_describe::{
    ConfigResource, DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
    DescribeConfigsResult, DescribedConfig, RESOURCE_BROKER, RESOURCE_TOPIC, SOURCE_DEFAULT,
    SOURCE_STATIC_BROKER, SOURCE_TOPIC, TYPE_BOOLEAN, TYPE_INT, TYPE_LIST, TYPE_LONG, TYPE_STRING,
    encode_describe_configs_response,
};
use crate::zk::{paths, topic_config};

/// The broker settings DescribeConfigs lists, with Kafka's type for each.
fn broker_configs(c: &BrokerConfig) -> Vec<(&'static str, String, i8)> {
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    let opt = |v: Option<u64>| v.map_or("-1".to_owned(), |v| v.to_string());
    let list = |ls: &[crate::config::Listener]| {
        ls.iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let l = &c.connection_limits;
    vec![
        ("broker.id", c.broker_id.to_string(), TYPE_INT),
        ("listeners", list(&c.listeners.bind), TYPE_STRING),
        (
            "advertised.listeners",
            list(&c.listeners.advertised),
            TYPE_STRING,
        ),
        (
            "listener.security.protocol.map",
            c.listeners
                .protocols
                .iter()
                .map(|(n, p)| format!("{n}:{p}"))
                .collect::<Vec<_>>()
                .join(","),
            TYPE_STRING,
        ),
        (
            "inter.broker.listener.name",
            c.listeners.inter_broker.clone(),
            TYPE_STRING,
        ),
        (
            "log.dirs",
            c.log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
            TYPE_LIST,
        ),
        (
            "zookeeper.connect",
            c.zookeeper_connect.clone(),
            TYPE_STRING,
        ),
        (
            "zookeeper.session.timeout.ms",
            ms(c.zookeeper_session_timeout),
            TYPE_INT,
        ),
        ("num.partitions", c.num_partitions.to_string(), TYPE_INT),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
            TYPE_INT,
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics_enable.to_string(),
            TYPE_BOOLEAN,
        ),
        (
            "log.segment.bytes",
            c.log_segment_bytes.to_string(),
            TYPE_INT,
        ),
        (
            "log.retention.ms",
            opt(c.log_retention.map(|d| d.as_millis() as u64)),
            TYPE_LONG,
        ),
        ("log.retention.bytes", opt(c.log_retention_bytes), TYPE_LONG),
        (
            "message.max.bytes",
            c.message_max_bytes.to_string(),
            TYPE_INT,
        ),
        (
            "log.message.timestamp.type",
            c.topic_default("message.timestamp.type"),
            TYPE_STRING,
        ),
        (
            "min.insync.replicas",
            c.min_insync_replicas.to_string(),
            TYPE_INT,
        ),
        (
            "unclean.leader.election.enable",
            c.unclean_leader_election_enable.to_string(),
            TYPE_BOOLEAN,
        ),
        ("fetch.max.bytes", c.fetch_max_bytes.to_string(), TYPE_INT),
        (
            "replica.lag.time.max.ms",
            ms(c.replica_lag_time_max),
            TYPE_LONG,
        ),
        (
            "socket.request.max.bytes",
            l.socket_request_max_bytes.to_string(),
            TYPE_INT,
        ),
        (
            "queued.max.request.bytes",
            l.queued_max_request_bytes
                .map_or("-1".to_owned(), |b| b.to_string()),
            TYPE_LONG,
        ),
        ("max.connections", l.max_connections.to_string(), TYPE_INT),
        (
            "max.connections.per.ip",
            l.max_connections_per_ip.to_string(),
            TYPE_INT,
        ),
        (
            "max.connections.per.ip.overrides",
            l.max_connections_per_ip_overrides
                .iter()
                .map(|(ip, n)| format!("{ip}:{n}"))
                .collect::<Vec<_>>()
                .join(","),
            TYPE_STRING,
        ),
        (
            "max.connection.creation.rate",
            l.max_connection_creation_rate
                .map_or(i32::MAX.to_string(), |r| r.to_string()),
            TYPE_INT,
        ),
        (
            "max.connection.creation.rate.per.ip",
            l.max_connection_creation_rate_per_ip.to_string(),
            TYPE_INT,
        ),
        ("connections.max.idle.ms", ms(l.idle), TYPE_LONG),
        (
            "group.initial.rebalance.delay.ms",
            ms(c.group_initial_rebalance_delay),
            TYPE_INT,
        ),
    ]
}

/// Whether `key` is one the request asks for (`None`: all).
fn wanted(keys: &Option<Vec<String>>, key: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.iter().any(|x| x == key))
}

impl KafkaApis {
    pub(super) fn handle_describe_configs(
        &self,
        req: &DescribeConfigsRequest,
        version: i16,
        out: &mut Vec<u8>,
    ) -> Action {
        let results: Vec<DescribeConfigsResult> = req
            .resources
            .iter()
            .map(|res| {
                let described = match res.resource_type {
                    RESOURCE_TOPIC => self.describe_topic_configs(res),
                    RESOURCE_BROKER => self.describe_broker_configs(res),
                    t => Err((
                        ErrorCode::InvalidRequest,
                        format!("gregor describes topics (2) and brokers (4), not type {t}"),
                    )),
                };
                let (error_code, error_message, configs) = match described {
                    Ok(c) => (0, None, c),
                    Err((code, msg)) => (code.code(), Some(msg), Vec::new()),
                };
                DescribeConfigsResult {
                    error_code,
                    error_message,
                    resource_type: res.resource_type,
                    name: res.name.clone(),
                    configs,
                }
            })
            .collect();
        encode_describe_configs_response(out, &results, version);
        Action::Respond
    }

    fn describe_topic_configs(
        &self,
        res: &ConfigResource,
    ) -> Result<Vec<DescribedConfig>, (ErrorCode, String)> {
        let zk_err = |e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"));
        if paths::topic_assignment(&self.zk, &res.name)
            .map_err(zk_err)?
            .is_none()
        {
            return Err((
                ErrorCode::UnknownTopicOrPartition,
                format!("topic `{}` does not exist", res.name),
            ));
        }
        let set = topic_config::read(&self.zk, &res.name).map_err(zk_err)?;
        Ok(topic_config::known_keys()
            .filter(|k| wanted(&res.keys, k))
            .map(|k| {
                let (value, source) = self.topic_value(&set, k);
                DescribedConfig {
                    name: k.to_owned(),
                    value: Some(value),
                    read_only: false,
                    source,
                    sensitive: false,
                    config_type: if topic_config::is_numeric(k) {
                        TYPE_LONG
                    } else {
                        TYPE_STRING
                    },
                    documentation: None,
                }
            })
            .collect())
    }

    /// A topic-level key's value: the topic's own (source DYNAMIC_TOPIC_CONFIG) or the broker's
    /// default (DEFAULT_CONFIG).
    pub(super) fn topic_value(&self, set: &BTreeMap<String, String>, key: &str) -> (String, i8) {
        match set.get(key) {
            Some(v) => (v.clone(), SOURCE_TOPIC),
            None => (self.config.topic_default(key), SOURCE_DEFAULT),
        }
    }

    /// This broker's settings; Kafka answers a broker resource only at that broker, and an
    /// empty name (the cluster-wide dynamic defaults) with nothing, since gregor has none.
    fn describe_broker_configs(
        &self,
        res: &ConfigResource,
    ) -> Result<Vec<DescribedConfig>, (ErrorCode, String)> {
        if res.name.is_empty() {
            return Ok(Vec::new());
        }
        if res.name != self.broker_id.to_string() {
            return Err((
                ErrorCode::InvalidRequest,
                format!(
                    "this is broker {}; ask broker {} itself",
                    self.broker_id, res.name
                ),
            ));
        }
        Ok(broker_configs(&self.config)
            .into_iter()
            .filter(|(k, _, _)| wanted(&res.keys, k))
            .map(|(k, v, t)| DescribedConfig {
                name: k.to_owned(),
                value: Some(v),
                read_only: true,
                source: SOURCE_STATIC_BROKER,
                sensitive: false,
                config_type: t,
                documentation: None,
            })
            .collect())
    }

    pub(super) fn handle_describe_cluster(
        &self,
        req: &DescribeClusterRequest,
        version: i16,
        listener: &str,
        out: &mut Vec<u8>,
    ) -> Action {
        let m = self.metadata_cache.metadata(Some(&[]), 1, listener);
        let resp = if req.endpoint_type != 1 {
            DescribeClusterResponse {
                error_code: ErrorCode::UnsupportedEndpointType.code(),
                error_message: Some("gregor has brokers, not KRaft controllers".into()),
                endpoint_type: req.endpoint_type,
                cluster_id: m.cluster_id.unwrap_or_default(),
                controller_id: -1,
                brokers: Vec::new(),
            }
        } else {
            DescribeClusterResponse {
                error_code: 0,
                error_message: None,
                endpoint_type: 1,
                cluster_id: m.cluster_id.unwrap_or_default(),
                controller_id: m.controller_id,
                brokers: m
                    .brokers
                    .iter()
                    .map(|b| (b.id, b.host.clone(), b.port))
                    .collect(),
            }
        };
        resp.encode(out, version);
        Action::Respond
    }

    /// AlterConfigs (`incremental` false: each resource's listed keys become its whole set) and
    /// IncrementalAlterConfigs (each key set or deleted on its own).
    pub(super) fn handle_alter_configs(
        &self,
        req: &AlterConfigsRequest,
        incremental: bool,
        flex: bool,
        out: &mut Vec<u8>,
    ) -> Action {
        let results: Vec<AlterConfigsResult> = req
            .resources
            .iter()
            .map(|res| {
                let r = match res.resource_type {
                    RESOURCE_TOPIC => self.alter_topic_configs(res, incremental, req.validate_only),
                    RESOURCE_BROKER => Err((
                        ErrorCode::InvalidRequest,
                        "gregor has no dynamic broker configuration: set it in server.properties"
                            .to_owned(),
                    )),
                    t => Err((
                        ErrorCode::InvalidRequest,
                        format!("gregor configures topics (2), not type {t}"),
                    )),
                };
                let (code, msg) = match r {
                    Ok(()) => (0, None),
                    Err((c, m)) => (c.code(), Some(m)),
                };
                (code, msg, res.resource_type, res.name.clone())
            })
            .collect();
        encode_alter_configs_response(out, &results, flex);
        Action::Respond
    }

    fn alter_topic_configs(
        &self,
        res: &AlterConfigsResource,
        incremental: bool,
        validate_only: bool,
    ) -> Result<(), (ErrorCode, String)> {
        let zk_err = |e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"));
        let topic = &res.name;
        if paths::topic_assignment(&self.zk, topic)
            .map_err(zk_err)?
            .is_none()
        {
            return Err((
                ErrorCode::UnknownTopicOrPartition,
                format!("topic `{topic}` does not exist"),
            ));
        }
        let invalid = |m: String| (ErrorCode::InvalidConfig, m);
        let mut config = if incremental {
            topic_config::read(&self.zk, topic).map_err(zk_err)?
        } else {
            BTreeMap::new()
        };
        for (i, c) in res.configs.iter().enumerate() {
            if res.configs[..i].iter().any(|o| o.name == c.name) {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("`{}` is named more than once", c.name),
                ));
            }
            match (c.op.unwrap_or(OP_SET), c.value.as_deref()) {
                (OP_SET, Some(v)) => {
                    topic_config::check(&c.name, v).map_err(invalid)?;
                    config.insert(c.name.clone(), v.to_owned());
                }
                // AlterConfigs: a null value leaves the key unset.
                (OP_SET, None) if !incremental => {}
                (OP_SET, None) => return Err(invalid(format!("`{}` needs a value", c.name))),
                (OP_DELETE, _) => {
                    if !topic_config::known_keys().any(|k| k == c.name) {
                        return Err(invalid(format!(
                            "unknown topic configuration key `{}`",
                            c.name
                        )));
                    }
                    config.remove(&c.name);
                }
                (OP_APPEND | OP_SUBTRACT, _) => {
                    return Err(invalid(format!("`{}` is not a list", c.name)));
                }
                (op, _) => {
                    return Err((
                        ErrorCode::InvalidRequest,
                        format!("unknown config operation {op}"),
                    ));
                }
            }
        }
        if validate_only {
            return Ok(());
        }
        topic_config::write(&self.zk, topic, &config).map_err(zk_err)?;
        topic_config::notify_change(&self.zk, topic).map_err(zk_err)?;
        log::info!(
            "[Broker {}] topic {topic}: configuration set to {config:?}",
            self.broker_id
        );
        Ok(())
    }
}
