//! Dynamic broker configuration in Kafka's ZooKeeper layout (KIP-226): `/config/brokers/<id>`
//! for one broker and `/config/brokers/<default>` for every broker, each
//! `{"version":1,"config":{…}}`, announced as `brokers/<id>` or `brokers/<default>` under
//! `/config/changes` like every other entity.

use std::collections::BTreeMap;

use super::{ZkClient, ZkError, entity_config, topic_config};

/// The entity name of the cluster-wide defaults (Kafka's `ConfigEntityName.DEFAULT`).
pub const DEFAULT: &str = "<default>";

/// The entity a broker resource names: its id, or `<default>` for the empty name that
/// DescribeConfigs and the alter requests use for the cluster-wide defaults.
pub fn entity(resource_name: &str) -> &str {
    if resource_name.is_empty() {
        DEFAULT
    } else {
        resource_name
    }
}

fn path(entity: &str) -> String {
    format!("/config/brokers/{entity}")
}

/// The keys set for `entity` (a broker id or `<default>`); empty when none are.
pub fn read(zk: &ZkClient, entity: &str) -> Result<BTreeMap<String, String>, ZkError> {
    entity_config::read(zk, &path(entity))
}

/// Makes `config` the whole of `entity`'s keys and tells every broker.
pub fn write(
    zk: &ZkClient,
    entity: &str,
    config: &BTreeMap<String, String>,
) -> Result<(), ZkError> {
    zk.ensure_path("/config/brokers")?;
    entity_config::update(zk, &path(entity), |c| *c = config.clone())?;
    topic_config::notify(zk, &format!("brokers/{entity}"))
}

/// The entity a change notice names, when it is a broker's or the defaults.
pub fn changed_entity(entity_path: &str) -> Option<&str> {
    entity_path.strip_prefix("brokers/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_name_is_the_default_entity() {
        assert_eq!(entity(""), "<default>");
        assert_eq!(entity("2"), "2");
        assert_eq!(changed_entity("brokers/<default>"), Some("<default>"));
        assert_eq!(changed_entity("topics/t"), None);
    }
}
