//! `server.properties` read through the key table (`keys::BROKER`): a key not in the table is
//! refused before anything is read; each key read gets its row's check and, when unset, its
//! row's default; and what each key came to is kept, with whether the file set it, for
//! DescribeConfigs.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use super::ConfigError;
use super::keys::{self, Key};

/// One key as the broker runs with it.
#[derive(Debug, Clone)]
pub struct Setting {
    pub key: &'static Key,
    /// The file's text, else the default (or what was derived from other keys); `None` when
    /// there is none, as for an unset `metrics.listener`.
    pub value: Option<String>,
    /// Whether `server.properties` (or `--override`) set it.
    pub from_file: bool,
}

/// Every key of the table, in its order, as the broker runs with it.
#[derive(Debug, Clone, Default)]
pub struct Settings(Vec<Setting>);

impl Settings {
    pub fn iter(&self) -> impl Iterator<Item = &Setting> {
        self.0.iter()
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|s| s.key.name == name)
            .and_then(|s| s.value.as_deref())
    }
}

/// Takes keys out of the file's map as fields are filled.
pub(crate) struct Props {
    given: BTreeMap<String, String>,
    read: BTreeMap<&'static str, Setting>,
}

/// A key the code reads must be a row of the table: a programming error otherwise, which
/// `every_key_of_the_table_is_read` (config tests) would catch first.
fn row(name: &str) -> &'static Key {
    keys::find(name).unwrap_or_else(|| panic!("`{name}` is read but not in config::keys"))
}

impl Props {
    /// Refuses a key the table does not have, naming it, so a typo never falls back to a
    /// default.
    pub fn new(given: BTreeMap<String, String>) -> Result<Props, ConfigError> {
        if let Some(k) = given
            .keys()
            .find(|k| keys::find(k).is_none() && keys::listener_key(k).is_none())
        {
            return Err(ConfigError(format!("unknown configuration key `{k}`")));
        }
        Ok(Props {
            given,
            read: BTreeMap::new(),
        })
    }

    #[cfg(test)]
    pub fn of(pairs: &[(&str, &str)]) -> Props {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Props::new(map).expect("known keys")
    }

    /// The file's value of `name`, checked by its row; `None` when unset. Its setting is the
    /// file's value or the row's default.
    pub fn take(&mut self, name: &str) -> Result<Option<String>, ConfigError> {
        let key = row(name);
        let given = self.given.remove(name);
        if let Some(v) = &given {
            key.check(v).map_err(ConfigError)?;
        }
        self.read.insert(
            key.name,
            Setting {
                key,
                value: given
                    .clone()
                    .or_else(|| key.default_text().map(str::to_owned)),
                from_file: given.is_some(),
            },
        );
        Ok(given)
    }

    /// Takes every `listener.name.<listener>.<key>` setting: (listener, key, value).
    pub fn take_listener_keys(&mut self) -> Vec<(String, &'static str, String)> {
        let names: Vec<String> = self
            .given
            .keys()
            .filter(|k| keys::listener_key(k).is_some())
            .cloned()
            .collect();
        names
            .into_iter()
            .filter_map(|n| {
                let (listener, key) = keys::listener_key(&n)?;
                let v = self.given.remove(&n)?;
                Some((listener, key, v))
            })
            .collect()
    }

    /// The value of `name`, or its row's default, parsed.
    pub fn get<T: FromStr>(&mut self, name: &str) -> Result<T, ConfigError> {
        let text = match self.take(name)? {
            Some(v) => v,
            None => row(name)
                .default_text()
                .unwrap_or_else(|| panic!("`{name}` has no default to read"))
                .to_owned(),
        };
        text.parse()
            .map_err(|_| ConfigError(format!("bad value `{text}` for `{name}`")))
    }

    pub fn millis(&mut self, name: &str) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.get(name)?))
    }

    /// What a derived key came to, for DescribeConfigs (`take` must have read it).
    pub fn derived(&mut self, name: &str, value: String) {
        if let Some(s) = self.read.get_mut(name) {
            s.value = Some(value);
        }
    }

    /// The settings in the table's order; every key the code did not read is missing, which
    /// the tests refuse.
    pub fn settings(&self) -> Settings {
        Settings(
            keys::BROKER
                .iter()
                .filter_map(|k| self.read.get(k.name).cloned())
                .collect(),
        )
    }
}
