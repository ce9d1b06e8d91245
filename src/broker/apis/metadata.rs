//! Metadata (key 3): the brokers and the partitions' leaders from the metadata cache, and
//! topics created on first mention when `auto.create.topics.enable` allows.

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::metadata::{MetadataRequest, MetadataResponse};
use crate::security::acl::{Operation, ResourceType};
use crate::zk::admin;
use crate::zk::paths;

impl KafkaApis {
    /// Metadata from the cache. A requested topic that does not exist is created when
    /// `auto.create.topics.enable` is on and the request allows it (v4+; answered
    /// LEADER_NOT_AVAILABLE until the controller has given it leaders; clients retry), and is
    /// UNKNOWN_TOPIC_OR_PARTITION otherwise; an illegal name is INVALID_TOPIC. Topic ids (v10+)
    /// are read from ZooKeeper once per topic.
    pub(super) fn handle_metadata(
        &self,
        req: &MetadataRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let version = cx.version;
        if version >= 10 {
            for t in self.metadata_cache.topics_without_id(req.topics.as_deref()) {
                match crate::zk::ids::topic_id(&self.zk, &t) {
                    Ok(Some(id)) => self.metadata_cache.set_topic_id(&t, id),
                    Ok(None) => {}
                    Err(e) => log::warn!(
                        "[Broker {}] cannot read the id of topic {t}: {e:?}",
                        self.broker_id
                    ),
                }
            }
        }
        let mut resp =
            self.metadata_cache
                .metadata(req.topics.as_deref(), version, &cx.conn.listener);
        let informed = self.metadata_cache.informed();
        if !informed {
            self.brokers_from_zookeeper(&mut resp, &cx.conn.listener);
        }
        // With ACLs: a topic the principal may not Describe is left out of an all-topics
        // answer, and answered TOPIC_AUTHORIZATION_FAILED when asked for by name (whether it
        // exists or not, so its existence does not leak).
        if self.authorizer.enabled() {
            let named = req.topics.is_some();
            resp.topics.retain_mut(|t| {
                if self.allowed(cx, Operation::Describe, ResourceType::Topic, &t.topic) {
                    return true;
                }
                t.error_code = ErrorCode::TopicAuthorizationFailed.code();
                t.partitions.clear();
                named
            });
        }
        for t in resp
            .topics
            .iter_mut()
            .filter(|t| t.error_code == ErrorCode::UnknownTopicOrPartition.code())
        {
            if admin::validate_topic_name(&t.topic).is_err() {
                t.error_code = ErrorCode::InvalidTopic.code();
            } else if self.config.auto_create_topics_enable
                && req.allow_auto_topic_creation
                && (self.cluster_allowed(cx, Operation::Create)
                    || self.allowed(cx, Operation::Create, ResourceType::Topic, &t.topic))
            {
                t.error_code = self.auto_create(&t.topic).code();
            } else if !informed {
                // Just started: the controller's UpdateMetadata has not come yet, so the topic
                // may well exist. "Unknown" would make librdkafka drop a topic it produces to
                // (the --hosts chaos run: "partition count changed from 6 to 0", then every
                // produce failed with "Unknown topic"); this is retriable.
                t.error_code = ErrorCode::LeaderNotAvailable.code();
            }
        }
        cx.answer(out, &resp);
        Action::Respond
    }

    /// Before the controller's first UpdateMetadata (a broker just started), the live brokers
    /// and the controller as ZooKeeper has them, where the cache has none. librdkafka's admin
    /// client told "no controller" waits for a broker to change state, not for new metadata:
    /// its first CreateTopics stalled for its whole 60 s timeout.
    pub(super) fn brokers_from_zookeeper(&self, resp: &mut MetadataResponse, listener: &str) {
        if resp.controller_id < 0
            && let Ok(Some(c)) =
                paths::read_json::<paths::ElectedBroker>(&self.zk, paths::CONTROLLER)
        {
            resp.controller_id = c.brokerid;
        }
        if resp.brokers.is_empty()
            && let Ok(live) = paths::live_broker_registrations(&self.zk)
        {
            resp.brokers = live.iter().filter_map(|(b, _)| b.on(listener)).collect();
        }
    }

    fn auto_create(&self, topic: &str) -> ErrorCode {
        if matches!(paths::topic_assignment(&self.zk, topic), Ok(Some(_))) {
            return ErrorCode::LeaderNotAvailable;
        }
        let live = self.metadata_cache.live_broker_count().max(1) as i32;
        let rf = self.config.default_replication_factor.min(live);
        match admin::create_topic(&self.zk, topic, self.config.num_partitions, rf, None) {
            Ok(_) => {
                log::info!(
                    "[Broker {}] auto-created topic {topic} ({} partitions, replication {rf})",
                    self.broker_id,
                    self.config.num_partitions
                );
                ErrorCode::LeaderNotAvailable
            }
            Err(admin::AdminError::TopicExists(_)) => ErrorCode::LeaderNotAvailable,
            Err(e) => {
                log::warn!(
                    "[Broker {}] auto-creating topic {topic} failed: {e}",
                    self.broker_id
                );
                ErrorCode::LeaderNotAvailable
            }
        }
    }
}
