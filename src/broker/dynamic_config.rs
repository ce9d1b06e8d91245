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
use crate::network::tls::TlsAcceptor;
use crate::security::password_encoder::PasswordEncoder;
use crate::security::tls::TlsSettings;
use crate::zk::{ZkClient, ZkError, broker_config};

type Reconfigurable = Box<dyn Fn(&BrokerConfig) + Send + Sync>;
type Validator = Box<dyn Fn(&BrokerConfig) -> Result<(), String> + Send + Sync>;

pub struct DynamicBrokerConfig {
    broker_id: i32,
    current: RwLock<Arc<BrokerConfig>>,
    /// One reload at a time, so an older read never replaces a newer one.
    reload: Mutex<()>,
    reconfigurables: Mutex<Vec<Reconfigurable>>,
    /// Called at every reload, whether a value changed or not: parts that read files a value
    /// names (a keystore rewritten in place is read again, as Kafka reads a modified one).
    rereaders: Mutex<Vec<Reconfigurable>>,
    /// Checks a configuration this broker would run with beyond what reading it checks
    /// (a keystore that loads and names itself as the served one).
    validators: Mutex<Vec<Validator>>,
}

impl DynamicBrokerConfig {
    /// Starts from the file's configuration, before the layers are read.
    pub fn new(file: BrokerConfig) -> DynamicBrokerConfig {
        DynamicBrokerConfig {
            broker_id: file.broker_id,
            current: RwLock::new(Arc::new(file)),
            reload: Mutex::new(()),
            reconfigurables: Mutex::new(Vec::new()),
            rereaders: Mutex::new(Vec::new()),
            validators: Mutex::new(Vec::new()),
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

    /// A TLS listener's acceptor, whose keystore and truststore follow the configuration: a
    /// change is checked against what the listener serves before it is stored, and served to
    /// new connections once it is, as is a keystore file rewritten in place.
    pub fn tls_listener(
        &self,
        name: &str,
        settings: &TlsSettings,
    ) -> Result<Arc<TlsAcceptor>, String> {
        let acceptor = Arc::new(TlsAcceptor::new(name, settings)?);
        let (check, reread) = (acceptor.clone(), acceptor.clone());
        let (n1, n2) = (name.to_owned(), name.to_owned());
        self.add_validator(move |c| match c.security.tls.get(&n1) {
            Some(s) => check.check(s),
            None => Ok(()),
        });
        self.add_rereader(move |c| {
            if let Some(s) = c.security.tls.get(&n2) {
                reread.reconfigure(s);
            }
        });
        Ok(acceptor)
    }

    /// `f` is called with the configuration at every reload, changed or not.
    pub fn add_rereader(&self, f: impl Fn(&BrokerConfig) + Send + Sync + 'static) {
        self.rereaders.lock().push(Box::new(f));
    }

    /// `f` must accept a configuration before this broker's layer is changed to it.
    pub fn add_validator(
        &self,
        f: impl Fn(&BrokerConfig) -> Result<(), String> + Send + Sync + 'static,
    ) {
        self.validators.lock().push(Box::new(f));
    }

    /// Reads both layers and, when they changed, runs with them. A stored value the whole
    /// configuration does not accept (written around the checks of the alter requests) keeps
    /// the previous configuration, with an error naming it.
    pub fn reload(&self, zk: &ZkClient) -> Result<(), ZkError> {
        let _one = self.reload.lock();
        let old = self.current();
        let layers = read_layers(zk, self.broker_id, old.password_encoder.as_ref())?;
        if old.dynamic == layers {
            for f in self.rereaders.lock().iter() {
                f(&old);
            }
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
        for f in self.rereaders.lock().iter() {
            f(&new);
        }
        Ok(())
    }

    /// Checks `layer` as the new keys of `entity` (this broker's id, another's, or
    /// `<default>`): every key dynamic with a value its row accepts, and the whole
    /// configuration this broker would run with accepted. Another broker's layer is checked
    /// against this broker's file, the nearest this broker can see, and only this broker's
    /// own layer against its files (a keystore is on the broker that serves it).
    pub fn validate(&self, entity: &str, layer: &BTreeMap<String, String>) -> Result<(), String> {
        let default = entity == broker_config::DEFAULT;
        for (k, v) in layer {
            dynamic::check(k, v)?;
            if default {
                dynamic::check_default(k)?;
            }
        }
        let now = self.current();
        let mut layers = now.dynamic.clone();
        if default {
            layers.default = layer.clone();
        } else {
            layers.broker = layer.clone();
        }
        let new = now.with_dynamic(&layers).map_err(|e| e.0)?;
        if default || entity == self.broker_id.to_string() {
            for f in self.validators.lock().iter() {
                f(&new)?;
            }
        }
        Ok(())
    }

    /// `entity`'s layer as stored, with its secrets decrypted.
    pub fn read_layer(
        &self,
        zk: &ZkClient,
        entity: &str,
    ) -> Result<BTreeMap<String, String>, ZkError> {
        let encoder = self.current().password_encoder.clone();
        Ok(dynamic::decode_secrets(broker_config::read(zk, entity)?, encoder.as_ref(), entity).0)
    }

    /// Stores `layer` as `entity`'s, its secrets encrypted; an error when a secret cannot be.
    pub fn encoded(
        &self,
        layer: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        dynamic::encode_secrets(layer, self.current().password_encoder.as_ref())
    }
}

/// The defaults layer and this broker's, their secrets decrypted, without what may not be
/// stored there. Secrets stored under `password.encoder.old.secret` are stored again under
/// the new one, as Kafka does at start.
fn read_layers(
    zk: &ZkClient,
    broker_id: i32,
    encoder: Option<&PasswordEncoder>,
) -> Result<Layers, ZkError> {
    let id = broker_id.to_string();
    let (default, _) = dynamic::decode_secrets(
        broker_config::read(zk, broker_config::DEFAULT)?,
        encoder,
        broker_config::DEFAULT,
    );
    let (broker, under_old) = dynamic::decode_secrets(broker_config::read(zk, &id)?, encoder, &id);
    if under_old && let Ok(stored) = dynamic::encode_secrets(&broker, encoder) {
        log::info!(
            "[Broker {id}] dynamic configuration's secrets stored again under the new `password.encoder.secret`"
        );
        broker_config::write(zk, &id, &stored)?;
    }
    Ok(Layers {
        default: dynamic::accepted(default, broker_config::DEFAULT),
        broker: dynamic::accepted(broker, &id),
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
