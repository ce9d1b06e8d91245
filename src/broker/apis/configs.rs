//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and DescribeCluster. Topic
//! configuration is what `/config/topics/[topic]` sets over the broker's defaults, for the
//! topic-level keys gregor serves (`zk::topic_config`); a change is written there and
//! announced under `/config/changes`, and every broker holding the topic applies it
//! (`broker::topic_configs`). Broker resources — dynamic broker configuration — are
//! `broker_configs`'.

use crate::security::acl::{Operation, ResourceType};
use std::collections::BTreeMap;

use super::{KafkaApis, RequestContext};
use crate::config::keys;
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::admin_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResponse, AlterConfigsResult, OP_APPEND,
    OP_DELETE, OP_SET, OP_SUBTRACT,
};
use crate::protocol::admin_describe::{
    ConfigResource, DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, DescribeConfigsResult, DescribedConfig, RESOURCE_BROKER,
    RESOURCE_TOPIC, SOURCE_DEFAULT, SOURCE_TOPIC,
};
use crate::zk::{paths, topic_config};

/// Refuses a resource that names a key twice (42 INVALID_REQUEST, as Kafka).
pub(super) fn named_once(res: &AlterConfigsResource) -> Result<(), (ErrorCode, String)> {
    match res
        .configs
        .iter()
        .enumerate()
        .find(|(i, c)| res.configs[..*i].iter().any(|o| o.name == c.name))
    {
        Some((_, c)) => Err((
            ErrorCode::InvalidRequest,
            format!("`{}` is named more than once", c.name),
        )),
        None => Ok(()),
    }
}

/// Whether `key` is one the request asks for (`None`: all).
pub(super) fn wanted(keys: &Option<Vec<String>>, key: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.iter().any(|x| x == key))
}

impl KafkaApis {
    pub(super) fn handle_describe_configs(
        &self,
        req: &DescribeConfigsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let results: Vec<DescribeConfigsResult> = req
            .resources
            .iter()
            .map(|res| {
                let described = match res.resource_type {
                    RESOURCE_TOPIC
                        if !self.allowed(
                            cx,
                            Operation::DescribeConfigs,
                            ResourceType::Topic,
                            &res.name,
                        ) =>
                    {
                        Err((
                            ErrorCode::TopicAuthorizationFailed,
                            "not authorized to describe this topic's configuration".into(),
                        ))
                    }
                    RESOURCE_BROKER if !self.cluster_allowed(cx, Operation::DescribeConfigs) => {
                        Err((
                            ErrorCode::ClusterAuthorizationFailed,
                            "not authorized to describe the brokers' configuration".into(),
                        ))
                    }
                    RESOURCE_TOPIC => self.describe_topic_configs(res),
                    RESOURCE_BROKER => self.describe_broker_configs(
                        res,
                        req.include_synonyms,
                        req.include_documentation,
                    ),
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
        cx.answer(out, &DescribeConfigsResponse { results });
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
        Ok(keys::topic_keys()
            .filter(|k| wanted(&res.keys, k))
            .map(|k| {
                let (value, source) = self.topic_value(&set, k);
                DescribedConfig {
                    name: k.to_owned(),
                    value: Some(value),
                    read_only: false,
                    source,
                    sensitive: false,
                    config_type: keys::for_topic(k).map_or(0, |b| b.ty as i8),
                    documentation: None,
                    synonyms: Vec::new(),
                }
            })
            .collect())
    }

    /// A topic-level key's value: the topic's own (source DYNAMIC_TOPIC_CONFIG) or the
    /// broker's, with the source of the broker's value (a dynamic layer, the file, or the
    /// built-in default), as Kafka reports it.
    pub(super) fn topic_value(&self, set: &BTreeMap<String, String>, key: &str) -> (String, i8) {
        if let Some(v) = set.get(key) {
            return (v.clone(), SOURCE_TOPIC);
        }
        let config = self.dynamic.current();
        let source = keys::for_topic(key).map_or(SOURCE_DEFAULT, |k| {
            super::broker_configs::source_code(config.source(k))
        });
        (config.topic_default(key), source)
    }

    pub(super) fn handle_describe_cluster(
        &self,
        req: &DescribeClusterRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        if !self.cluster_allowed(cx, Operation::Describe) {
            let resp = DescribeClusterResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                error_message: Some("not authorized to describe the cluster".into()),
                endpoint_type: req.endpoint_type,
                cluster_id: String::new(),
                controller_id: -1,
                brokers: Vec::new(),
            };
            cx.answer(out, &resp);
            return Action::Respond;
        }
        let mut m = self
            .metadata_cache
            .metadata(Some(&[]), 1, &cx.conn.listener);
        if !self.metadata_cache.informed() {
            self.brokers_from_zookeeper(&mut m, &cx.conn.listener);
        }
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
        cx.answer(out, &resp);
        Action::Respond
    }

    /// AlterConfigs (`incremental` false: each resource's listed keys become its whole set) and
    /// IncrementalAlterConfigs (each key set or deleted on its own).
    pub(super) fn handle_alter_configs(
        &self,
        req: &AlterConfigsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let incremental = cx.api_key == crate::protocol::header::INCREMENTAL_ALTER_CONFIGS;
        let results: Vec<AlterConfigsResult> = req
            .resources
            .iter()
            .map(|res| {
                let r = match res.resource_type {
                    RESOURCE_TOPIC
                        if !self.allowed(
                            cx,
                            Operation::AlterConfigs,
                            ResourceType::Topic,
                            &res.name,
                        ) =>
                    {
                        Err((
                            ErrorCode::TopicAuthorizationFailed,
                            "not authorized to alter this topic's configuration".into(),
                        ))
                    }
                    RESOURCE_BROKER if !self.cluster_allowed(cx, Operation::AlterConfigs) => Err((
                        ErrorCode::ClusterAuthorizationFailed,
                        "not authorized to alter the brokers' configuration".into(),
                    )),
                    RESOURCE_TOPIC => self.alter_topic_configs(res, incremental, req.validate_only),
                    RESOURCE_BROKER => {
                        self.alter_broker_configs(res, incremental, req.validate_only)
                    }
                    t => Err((
                        ErrorCode::InvalidRequest,
                        format!("gregor configures topics (2) and brokers (4), not type {t}"),
                    )),
                };
                let (code, msg) = match r {
                    Ok(()) => (0, None),
                    Err((c, m)) => (c.code(), Some(m)),
                };
                (code, msg, res.resource_type, res.name.clone())
            })
            .collect();
        cx.answer(out, &AlterConfigsResponse { results });
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
        named_once(res)?;
        for c in &res.configs {
            match (c.op.unwrap_or(OP_SET), c.value.as_deref()) {
                (OP_SET, Some(v)) => {
                    topic_config::check(&c.name, v).map_err(invalid)?;
                    config.insert(c.name.clone(), v.to_owned());
                }
                // AlterConfigs: a null value leaves the key unset.
                (OP_SET, None) if !incremental => {}
                (OP_SET, None) => return Err(invalid(format!("`{}` needs a value", c.name))),
                (OP_DELETE, _) => {
                    if keys::for_topic(&c.name).is_none() {
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
