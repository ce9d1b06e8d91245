//! `gregor configs --entity-type brokers`: kafka-configs' dynamic broker configuration —
//! `--entity-name ID` (or `--broker ID`) for one broker, `--entity-default` (or
//! `--broker-defaults`) for every broker; `--alter` with `--add-config k=v,k=[a,b]` and
//! `--delete-config k,k` through IncrementalAlterConfigs, `--describe` (with `--all` for every
//! key, not only the dynamic ones) through DescribeConfigs at the broker itself, printed as
//! kafka-configs prints them.

use gregor::client::metadata::fetch_metadata_as;
use gregor::network::{BlockingChannel, ClientSecurity};
use gregor::protocol::admin_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResponse, AlterableConfig, OP_DELETE,
    OP_SET,
};
use gregor::protocol::admin_describe::{
    ConfigResource, DescribeConfigsRequest, DescribeConfigsResponse, DescribedConfig,
    RESOURCE_BROKER, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
};
use gregor::protocol::{ErrorCode, header};

use super::scram::split_entries;
use super::topics_wire::connect_as;

const CLIENT_ID: &str = "gregor-configs";

/// What the flags ask of broker configuration.
pub struct BrokerAction<'a> {
    pub bootstrap: &'a str,
    pub security: ClientSecurity,
    /// A broker id, or `None` for the cluster-wide defaults.
    pub broker: Option<i32>,
    pub add_config: Option<&'a str>,
    pub delete_config: Option<&'a str>,
    pub all: bool,
}

/// kafka-configs' name of a value's source.
fn source_name(source: i8) -> &'static str {
    match source {
        SOURCE_TOPIC => "DYNAMIC_TOPIC_CONFIG",
        SOURCE_DYNAMIC_BROKER => "DYNAMIC_BROKER_CONFIG",
        SOURCE_DYNAMIC_DEFAULT_BROKER => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        SOURCE_STATIC_BROKER => "STATIC_BROKER_CONFIG",
        _ => "DEFAULT_CONFIG",
    }
}

fn resource_name(broker: Option<i32>) -> String {
    broker.map_or(String::new(), |id| id.to_string())
}

fn refused(code: i16, message: Option<String>) -> String {
    let e = ErrorCode::from_code(code);
    format!("{} ({e:?}, error {code})", message.unwrap_or_default())
}

pub fn alter(a: &BrokerAction<'_>) -> Result<(), String> {
    let mut configs = Vec::new();
    for kv in a.add_config.iter().flat_map(|s| split_entries(s)) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--add-config expects key=value, got `{kv}`"))?;
        // kafka-configs writes a list value in brackets: `log.cleanup.policy=[compact,delete]`.
        let v = v.trim();
        let v = v
            .strip_prefix('[')
            .and_then(|v| v.strip_suffix(']'))
            .unwrap_or(v);
        configs.push(AlterableConfig {
            name: k.trim().to_owned(),
            op: Some(OP_SET),
            value: Some(v.to_owned()),
        });
    }
    for k in a.delete_config.iter().flat_map(|s| s.split(',')) {
        if !k.trim().is_empty() {
            configs.push(AlterableConfig {
                name: k.trim().to_owned(),
                op: Some(OP_DELETE),
                value: None,
            });
        }
    }
    if configs.is_empty() {
        return Err("--alter needs --add-config or --delete-config".into());
    }
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: RESOURCE_BROKER,
            name: resource_name(a.broker),
            configs,
        }],
        validate_only: false,
    };
    let answer: AlterConfigsResponse = connect_to_broker(a)?
        .send(header::INCREMENTAL_ALTER_CONFIGS, 1, &req)
        .map_err(|e| e.to_string())?;
    for (code, message, _, _) in answer.results {
        if code != 0 {
            return Err(refused(code, message));
        }
    }
    match a.broker {
        Some(id) => println!("Completed updating config for broker {id}."),
        None => println!("Completed updating default config for brokers in the cluster."),
    }
    Ok(())
}

pub fn describe(a: &BrokerAction<'_>) -> Result<(), String> {
    let req = DescribeConfigsRequest {
        resources: vec![ConfigResource {
            resource_type: RESOURCE_BROKER,
            name: resource_name(a.broker),
            keys: None,
        }],
        include_synonyms: true,
        include_documentation: false,
    };
    let answer: DescribeConfigsResponse = connect_to_broker(a)?
        .send(header::DESCRIBE_CONFIGS, 4, &req)
        .map_err(|e| e.to_string())?;
    let result = answer.results.into_iter().next().ok_or("no answer")?;
    if result.error_code != 0 {
        return Err(refused(result.error_code, result.error_message));
    }
    // As kafka-configs: without --all, only what the entity itself sets.
    let own = if a.broker.is_some() {
        SOURCE_DYNAMIC_BROKER
    } else {
        SOURCE_DYNAMIC_DEFAULT_BROKER
    };
    let shown: Vec<&DescribedConfig> = result
        .configs
        .iter()
        .filter(|c| a.all || c.source == own)
        .collect();
    match (a.broker, a.all) {
        (Some(id), true) => println!("All configs for broker {id} are:"),
        (Some(id), false) => println!("Dynamic configs for broker {id} are:"),
        (None, _) => println!("Default configs for brokers in the cluster are:"),
    }
    for c in shown {
        let synonyms: Vec<String> = c
            .synonyms
            .iter()
            .map(|s| {
                let v = s.value.as_deref().unwrap_or("null");
                format!("{}:{}={v}", source_name(s.source), s.name)
            })
            .collect();
        println!(
            "  {}={} sensitive={} synonyms={{{}}}",
            c.name,
            c.value.as_deref().unwrap_or("null"),
            c.sensitive,
            synonyms.join(", ")
        );
    }
    Ok(())
}

/// A connection to the broker a broker resource belongs to (Kafka answers it only there), or
/// to any broker for the defaults.
fn connect_to_broker(a: &BrokerAction<'_>) -> Result<BlockingChannel, String> {
    let Some(id) = a.broker else {
        return connect_as(a.bootstrap, &a.security);
    };
    let m = fetch_metadata_as(a.bootstrap, &[], CLIENT_ID, false, &a.security)?;
    let b = m
        .brokers
        .iter()
        .find(|b| b.id == id)
        .ok_or_else(|| format!("broker {id} is not in the cluster"))?;
    connect_as(&format!("{}:{}", b.host, b.port), &a.security)
}
