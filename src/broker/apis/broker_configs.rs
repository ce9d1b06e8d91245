//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on BROKER resources: dynamic
//! broker configuration (KIP-226). A resource named by a broker id is that broker's layer
//! (`/config/brokers/<id>`), the empty name the cluster-wide defaults
//! (`/config/brokers/<default>`). A change is checked here, against this broker's
//! configuration, before anything is written — an unknown key, a key that cannot change while
//! the broker runs, a value its row refuses, or one the whole configuration refuses is
//! answered INVALID_REQUEST naming it, as Kafka answers — then written and announced; this
//! broker applies it at once, the others on the notice.

use std::collections::BTreeMap;

use super::KafkaApis;
use super::configs::{named_once, wanted};
use crate::config::BrokerConfig;
use crate::config::dynamic::{self, Source};
use crate::config::keys::{self, Type};
use crate::protocol::ErrorCode;
use crate::protocol::admin_configs::{
    AlterConfigsResource, AlterableConfig, OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT,
};
use crate::protocol::admin_describe::{
    ConfigResource, ConfigSynonym, DescribedConfig, SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER,
};
use crate::zk::broker_config;

type Refusal = (ErrorCode, String);

/// Kafka's ConfigSource of a broker key's value.
pub(super) fn source_code(s: Source) -> i8 {
    match s {
        Source::DynamicBroker => SOURCE_DYNAMIC_BROKER,
        Source::DynamicDefault => SOURCE_DYNAMIC_DEFAULT_BROKER,
        Source::Static => SOURCE_STATIC_BROKER,
        Source::Default => SOURCE_DEFAULT,
    }
}

impl KafkaApis {
    /// A broker's settings with their sources; Kafka answers a broker resource only at that
    /// broker. The empty name describes the cluster-wide defaults: the keys set there.
    pub(super) fn describe_broker_configs(
        &self,
        res: &ConfigResource,
        include_synonyms: bool,
        include_documentation: bool,
    ) -> Result<Vec<DescribedConfig>, Refusal> {
        let config = self.dynamic.current();
        let entry = |key: &'static keys::Key, value: Option<String>, source: i8, synonyms| {
            DescribedConfig {
                name: key.name.to_owned(),
                value: value.filter(|_| !key.sensitive),
                read_only: !key.dynamic,
                source,
                sensitive: key.sensitive,
                config_type: key.ty as i8,
                documentation: include_documentation.then(|| key.doc.to_owned()),
                synonyms,
            }
        };
        if res.name.is_empty() {
            return Ok(config
                .dynamic
                .default
                .iter()
                .filter(|(k, _)| wanted(&res.keys, k))
                .filter_map(|(k, v)| {
                    let key = keys::find(k)?;
                    let synonym = ConfigSynonym {
                        name: key.name.to_owned(),
                        value: Some(v.clone()).filter(|_| !key.sensitive),
                        source: SOURCE_DYNAMIC_DEFAULT_BROKER,
                    };
                    let synonyms = if include_synonyms {
                        vec![synonym]
                    } else {
                        Vec::new()
                    };
                    Some(entry(
                        key,
                        Some(v.clone()),
                        SOURCE_DYNAMIC_DEFAULT_BROKER,
                        synonyms,
                    ))
                })
                .collect());
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
        let mut described: Vec<DescribedConfig> = config
            .settings
            .iter()
            .filter(|s| wanted(&res.keys, s.key.name))
            .map(|s| {
                let synonyms = config.synonyms(s.key);
                let source = synonyms
                    .first()
                    .map_or(SOURCE_DEFAULT, |x| source_code(x.source));
                let synonyms = if include_synonyms {
                    synonyms
                        .into_iter()
                        .map(|x| ConfigSynonym {
                            name: x.name.to_owned(),
                            value: x.value,
                            source: source_code(x.source),
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                entry(s.key, s.value.clone(), source, synonyms)
            })
            .collect();
        described.extend(listener_entries(&config, res, include_synonyms));
        Ok(described)
    }

    /// Sets a broker's layer or the defaults: checked here, written, announced, and applied
    /// here at once when it concerns this broker.
    pub(super) fn alter_broker_configs(
        &self,
        res: &AlterConfigsResource,
        incremental: bool,
        validate_only: bool,
    ) -> Result<(), Refusal> {
        let zk_err = |e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"));
        let invalid = |m: String| (ErrorCode::InvalidRequest, m);
        if !res.name.is_empty() && res.name.parse::<u32>().is_err() {
            return Err(invalid(format!(
                "a broker resource is named by a broker id, or empty for the cluster-wide defaults; got `{}`",
                res.name
            )));
        }
        let entity = broker_config::entity(&res.name);
        let mut layer = if incremental {
            self.dynamic.read_layer(&self.zk, entity).map_err(zk_err)?
        } else {
            BTreeMap::new()
        };
        named_once(res)?;
        for c in &res.configs {
            self.apply_op(&mut layer, c, incremental).map_err(invalid)?;
        }
        self.dynamic
            .validate(entity, &layer)
            .map_err(|e| invalid(format!("Invalid config value for broker `{entity}`: {e}")))?;
        let stored = self.dynamic.encoded(&layer).map_err(invalid)?;
        if validate_only {
            return Ok(());
        }
        broker_config::write(&self.zk, entity, &stored).map_err(zk_err)?;
        log::info!(
            "[Broker {}] dynamic configuration of {entity} set to {}",
            self.broker_id,
            shown(&layer)
        );
        if entity == broker_config::DEFAULT || entity == self.broker_id.to_string() {
            self.dynamic.reload(&self.zk).map_err(zk_err)?;
        }
        Ok(())
    }

    /// One key's operation on the layer being built.
    fn apply_op(
        &self,
        layer: &mut BTreeMap<String, String>,
        c: &AlterableConfig,
        incremental: bool,
    ) -> Result<(), String> {
        match (c.op.unwrap_or(OP_SET), c.value.as_deref()) {
            (OP_SET, Some(v)) => {
                layer.insert(c.name.clone(), v.to_owned());
            }
            // AlterConfigs: a null value leaves the key unset.
            (OP_SET, None) if !incremental => {}
            (OP_SET, None) => return Err(format!("`{}` needs a value", c.name)),
            (OP_DELETE, _) => {
                layer.remove(&c.name);
            }
            (op @ (OP_APPEND | OP_SUBTRACT), v) => {
                let key = keys::find(&c.name)
                    .ok_or_else(|| format!("unknown broker configuration key `{}`", c.name))?;
                if key.ty != Type::List {
                    return Err(format!("`{}` is not a list", c.name));
                }
                // From the layer's value, else the value the broker runs with.
                let now = self.dynamic.current();
                let base = layer
                    .get(&c.name)
                    .cloned()
                    .or_else(|| now.settings.value(&c.name).map(str::to_owned))
                    .unwrap_or_default();
                let mut items: Vec<String> = split_list(&base);
                for item in split_list(v.unwrap_or_default()) {
                    let present = items.contains(&item);
                    if op == OP_APPEND && !present {
                        items.push(item);
                    } else if op == OP_SUBTRACT {
                        items.retain(|x| *x != item);
                    }
                }
                layer.insert(c.name.clone(), items.join(","));
            }
            (op, _) => return Err(format!("unknown config operation {op}")),
        }
        Ok(())
    }
}

/// The per-listener keys set for this broker (`listener.name.<l>.…`), from its dynamic
/// layer or its file: the most specific value with its source, secrets without a value.
fn listener_entries(
    config: &BrokerConfig,
    res: &ConfigResource,
    include_synonyms: bool,
) -> Vec<DescribedConfig> {
    let layers = [
        (&config.dynamic.broker, SOURCE_DYNAMIC_BROKER),
        (&config.file, SOURCE_STATIC_BROKER),
    ];
    let mut names: Vec<&String> = layers
        .iter()
        .flat_map(|(m, _)| m.keys())
        .filter(|k| keys::listener_key(k).is_some() && wanted(&res.keys, k))
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let secret = dynamic::is_secret(name);
            let found: Vec<ConfigSynonym> = layers
                .iter()
                .filter_map(|(m, source)| {
                    Some(ConfigSynonym {
                        name: name.clone(),
                        value: m.get(name).cloned().filter(|_| !secret),
                        source: *source,
                    })
                    .filter(|_| m.contains_key(name))
                })
                .collect();
            DescribedConfig {
                name: name.clone(),
                value: found[0].value.clone(),
                read_only: dynamic::dynamic_listener_key(name).is_none(),
                source: found[0].source,
                sensitive: secret,
                config_type: if secret { Type::Password } else { Type::String } as i8,
                documentation: None,
                synonyms: if include_synonyms { found } else { Vec::new() },
            }
        })
        .collect()
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A layer for the log, secrets without their values.
fn shown(layer: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = layer
        .iter()
        .map(|(k, v)| {
            if dynamic::is_secret(k) {
                format!("{k}=(secret)")
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    format!("{{{}}}", entries.join(", "))
}
