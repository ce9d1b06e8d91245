//! Dynamic broker configuration on a broker (KIP-226, Kafka's `DynamicBrokerConfig`): the
//! configuration it runs with is its `server.properties` with two layers from ZooKeeper laid
//! over it (`config::dynamic`), read at start and again whenever a `/config/changes` notice
//! names `brokers/<its id>` or `brokers/<default>` (`topic_configs` follows the notices).
//! Each part of the broker that holds a dynamic key registers to be handed the new
//! configuration (`add_reconfigurable`); request handlers read `current()`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::config::BrokerConfig;
use crate::config::dynamic::{self, Layers};
use crate::zk::{ZkClient, ZkError, broker_config};

type Reconfigurable = Box<dyn Fn(&BrokerConfig) + Send + Sync>;

pub struct DynamicBrokerConfig {
    broker_id: i32,
    current: RwLock<Arc<BrokerConfig>>,
    /// One reload at a time, so an older read never replaces a newer one.
    reload: Mutex<()>,
    reconfigurables: Mutex<Vec<Reconfigurable>>,
}

impl DynamicBrokerConfig {
    /// Starts from the file's configuration, before the layers are read.
    pub fn new(file: BrokerConfig) -> DynamicBrokerConfig {
        DynamicBrokerConfig {
            broker_id: file.broker_id,
            current: RwLock::new(Arc::new(file)),
            reload: Mutex::new(()),
            reconfigurables: Mutex::new(Vec::new()),
        }
    }

    /// The configuration this broker runs with now.
    pub fn current(&self) -> Arc<BrokerConfig> {
        self.current.read().clone()
    }

    /// `f` is called with every new configuration from now on.
    pub fn add_reconfigurable(&self, f: impl Fn(&BrokerConfig) + Send + Sync + 'static) {
        self.reconfigurables.lock().push(Box::new(f));
    }

    /// Reads both layers and, when they changed, runs with them. A stored value the whole
    /// configuration does not accept (written around the checks of the alter requests) keeps
    /// the previous configuration, with an error naming it.
    pub fn reload(&self, zk: &ZkClient) -> Result<(), ZkError> {
        let _one = self.reload.lock();
        let layers = read_layers(zk, self.broker_id)?;
        let old = self.current();
        if old.dynamic == layers {
            return Ok(());
        }
        let new = match old.with_dynamic(&layers) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                log::error!(
                    "[Broker {}] dynamic configuration not applied, the previous one stays: {e}",
                    self.broker_id
                );
                return Ok(());
            }
        };
        log::info!(
            "[Broker {}] dynamic configuration changed: {}",
            self.broker_id,
            changes(&old, &new)
        );
        *self.current.write() = new.clone();
        for f in self.reconfigurables.lock().iter() {
            f(&new);
        }
        Ok(())
    }

    /// Checks `layer` as the new keys of `entity` (this broker's id, another's, or
    /// `<default>`): every key dynamic with a value its row accepts, and the whole
    /// configuration this broker would run with accepted. Another broker's layer is checked
    /// against this broker's file, the nearest this broker can see.
    pub fn validate(&self, entity: &str, layer: &BTreeMap<String, String>) -> Result<(), String> {
        for (k, v) in layer {
            dynamic::check(k, v)?;
        }
        let now = self.current();
        let mut layers = now.dynamic.clone();
        if entity == broker_config::DEFAULT {
            layers.default = layer.clone();
        } else {
            layers.broker = layer.clone();
        }
        now.with_dynamic(&layers).map(|_| ()).map_err(|e| e.0)
    }
}

/// The defaults layer and this broker's, without what may not be stored there.
fn read_layers(zk: &ZkClient, broker_id: i32) -> Result<Layers, ZkError> {
    let id = broker_id.to_string();
    Ok(Layers {
        default: dynamic::accepted(
            broker_config::read(zk, broker_config::DEFAULT)?,
            broker_config::DEFAULT,
        ),
        broker: dynamic::accepted(broker_config::read(zk, &id)?, &id),
    })
}

/// `key=value` for each key whose value changed, secrets without their value.
fn changes(old: &BrokerConfig, new: &BrokerConfig) -> String {
    let changed: Vec<String> = new
        .settings
        .iter()
        .zip(old.settings.iter())
        .filter(|(n, o)| n.value != o.value)
        .map(|(n, _)| match (&n.value, n.key.sensitive) {
            (_, true) => format!("{} (secret)", n.key.name),
            (Some(v), false) => format!("{}={v}", n.key.name),
            (None, false) => format!("{} unset", n.key.name),
        })
        .collect();
    if changed.is_empty() {
        "no value changed".to_owned()
    } else {
        changed.join(", ")
    }
}
