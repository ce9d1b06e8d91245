//! Topic configuration on a broker: each partition takes its topic's settings
//! (`/config/topics/[topic]`, `zk::topic_config`) when the LeaderAndIsr command gives it the
//! partition, and again whenever a change notification names the topic — Kafka's
//! `/config/changes` protocol, watched by one thread per broker (which also applies the
//! notices naming client quota entities, `client_quotas`, users, whose SCRAM credentials
//! `credentials` reads again, and this broker or the brokers' defaults, whose dynamic
//! configuration `dynamic_config` reads again). A change made through any
//! broker (IncrementalAlterConfigs, AlterConfigs) so reaches every replica within a
//! ZooKeeper round trip; a watch lost with a session is made good by a re-read every
//! `RECHECK`.

use crate::protocol::TopicPartition;
use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, bounded, select, unbounded};

use super::client_quotas::ClientQuotaManager;
use super::credentials::CredentialCache;
use super::dynamic_config::DynamicBrokerConfig;
use super::partition::Partition;
use super::replica_manager::ReplicaManager;
use crate::protocol::controller::LeaderAndIsrRequest;
use crate::zk::broker_config;
use crate::zk::topic_config::{self, CHANGES, TopicOverrides};

/// How often the listener reads the notifications even without a watch firing.
const RECHECK: Duration = Duration::from_secs(30);
/// Notifications older than this are deleted (Kafka's `changeExpirationMs`).
const EXPIRY: Duration = Duration::from_secs(15 * 60);

impl ReplicaManager {
    fn partitions_of(&self, topic: &str) -> Vec<Arc<Partition>> {
        self.partitions
            .read()
            .iter()
            .filter(|(TopicPartition { topic: t, .. }, _)| t == topic)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// The settings (`/config/topics/[topic]`) of each topic of this command, read once per
    /// topic before its partitions are taken: leaders and followers both apply them (segment
    /// size and retention are every replica's). A topic whose node cannot be read keeps the
    /// broker's settings, with a warning.
    pub(super) fn read_topic_configs(
        &self,
        cmd: &LeaderAndIsrRequest,
    ) -> HashMap<String, TopicOverrides> {
        let mut topics = HashMap::new();
        for s in &cmd.partition_states {
            if !topics.contains_key(&s.topic) {
                topics.insert(s.topic.clone(), self.topic_overrides(&s.topic));
            }
        }
        topics
    }

    fn topic_overrides(&self, topic: &str) -> TopicOverrides {
        match crate::zk::topic_config::read(&self.zk, topic) {
            Ok(c) => TopicOverrides::from_config(&c),
            Err(e) => {
                log::warn!(
                    "[Broker {}] cannot read the configuration of topic {topic}: {e:?}",
                    self.broker_id
                );
                TopicOverrides::default()
            }
        }
    }

    /// A change notification for `topic`: its partitions here take the new settings.
    pub fn apply_topic_config_change(&self, topic: &str) {
        let o = self.topic_overrides(topic);
        let parts = self.partitions_of(topic);
        for p in &parts {
            p.set_overrides(o.clone());
        }
        if !parts.is_empty() {
            log::info!(
                "[Broker {}] topic {topic}: configuration changed, applied to {} partition(s): {o:?}",
                self.broker_id,
                parts.len()
            );
        }
    }
}

/// Starts the thread that applies change notifications; dropping the sender stops it.
pub fn start_config_change_listener(
    rm: Arc<ReplicaManager>,
    quotas: Arc<ClientQuotaManager>,
    credentials: Arc<CredentialCache>,
    dynamic: Arc<DynamicBrokerConfig>,
) -> (Sender<()>, JoinHandle<()>) {
    let (stop_tx, stop_rx) = bounded::<()>(0);
    let handle = std::thread::Builder::new()
        .name(format!("config-changes-{}", rm.broker_id))
        .spawn(move || {
            let (tx, events) = unbounded::<()>();
            // Notifications from before this start are already in what LeaderAndIsr reads,
            // and in the dynamic configuration read at start (read once more here, for a
            // change made in between).
            let mut last = latest_change(&rm).unwrap_or(-1);
            reload_broker_config(&rm, &dynamic);
            loop {
                let tx = tx.clone();
                let _ = rm.zk.ensure_path(CHANGES);
                if let Err(e) = rm.zk.get_children_w(CHANGES, move |_| {
                    let _ = tx.send(());
                }) {
                    log::warn!(
                        "[Broker {}] cannot watch {CHANGES}: {e:?}; retrying in {RECHECK:?}",
                        rm.broker_id
                    );
                }
                last = apply_changes_after(&rm, &quotas, &credentials, &dynamic, last);
                select! {
                    recv(stop_rx) -> _ => return,
                    recv(events) -> _ => {}
                    default(RECHECK) => {}
                }
            }
        })
        .expect("spawn the config change listener");
    (stop_tx, handle)
}

/// Reads the dynamic broker configuration again; false when ZooKeeper could not be read.
fn reload_broker_config(rm: &ReplicaManager, dynamic: &DynamicBrokerConfig) -> bool {
    match dynamic.reload(&rm.zk) {
        Ok(()) => true,
        Err(e) => {
            log::warn!(
                "[Broker {}] cannot read the dynamic broker configuration: {e:?}",
                rm.broker_id
            );
            false
        }
    }
}

fn latest_change(rm: &ReplicaManager) -> Option<i64> {
    let changes = topic_config::changes_after(&rm.zk, -1).ok()?;
    changes.last().map(|(seq, _)| *seq)
}

/// Applies every notification after `last`; returns the last one applied.
fn apply_changes_after(
    rm: &ReplicaManager,
    quotas: &ClientQuotaManager,
    credentials: &CredentialCache,
    dynamic: &DynamicBrokerConfig,
    mut last: i64,
) -> i64 {
    let before = last;
    match topic_config::changes_after(&rm.zk, last) {
        Ok(changes) => {
            let (mut quotas_changed, mut users_changed) = (false, false);
            let mut brokers_changed = false;
            for (seq, entity_path) in changes {
                if let Some(topic) = entity_path.strip_prefix("topics/") {
                    rm.apply_topic_config_change(topic);
                }
                quotas_changed |= crate::zk::client_quotas::is_quota_path(&entity_path);
                users_changed |= crate::zk::scram_credentials::is_user_path(&entity_path);
                // Another broker's layer changes nothing here; the defaults' and ours do.
                brokers_changed |= broker_config::changed_entity(&entity_path)
                    .is_some_and(|e| e == broker_config::DEFAULT || e == rm.broker_id.to_string());
                last = seq;
            }
            if brokers_changed && !reload_broker_config(rm, dynamic) {
                return before;
            }
            // Users are few: their credentials are read again all at once.
            if users_changed && let Err(e) = credentials.reload(&rm.zk) {
                log::warn!(
                    "[Broker {}] cannot read the SCRAM credentials: {e:?}",
                    rm.broker_id
                );
                return before;
            }
            // Quotas are few: read them all again, once for any number of notices.
            if quotas_changed {
                match quotas.reload(&rm.zk) {
                    Ok(()) => log::info!("[Broker {}] client quotas changed", rm.broker_id),
                    Err(e) => {
                        log::warn!(
                            "[Broker {}] cannot read the client quotas: {e:?}",
                            rm.broker_id
                        );
                        // The whole batch again at the next notice or recheck (applying a
                        // topic's settings twice changes nothing).
                        return before;
                    }
                }
            }
        }
        Err(e) => log::warn!("[Broker {}] cannot read {CHANGES}: {e:?}", rm.broker_id),
    }
    if let Err(e) = topic_config::purge_changes(&rm.zk, EXPIRY) {
        log::debug!("[Broker {}] purging old notifications: {e:?}", rm.broker_id);
    }
    last
}
