//! `gregor configs`: kafka-configs.sh for client quotas, users' SCRAM credentials and dynamic
//! broker configuration (`--entity-type brokers`, `broker_configs`) —
//! `--entity-type clients|users|ips` with `--entity-name` or `--entity-default` (or the
//! `--client`, `--user`, `--ip` shorthands, `--client-defaults`, `--user-defaults`,
//! `--ip-defaults`), `--alter` with `--add-config` and `--delete-config`, and `--describe`,
//! through DescribeClientQuotas and AlterClientQuotas (and the user-credential APIs, `scram`;
//! `--zookeeper` writes a credential straight into ZooKeeper). `--command-config` logs in to
//! a SASL listener. Topic settings are `gregor topics --alter --config`.

use clap::Args;

use gregor::protocol::client_quotas::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, EntityParts, MATCH_ANY, MATCH_DEFAULT, MATCH_EXACT,
    QuotaFilterComponent, QuotaOp,
};
use gregor::protocol::{ErrorCode, header};

use super::scram::{self, ScramChange};
use super::topics_wire::connect_as;
use gregor::network::BlockingChannel;

#[derive(Args)]
pub struct ConfigsArgs {
    /// The brokers to talk to, host:port,...
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap_server: String,
    /// Change the entity's quotas (with --add-config and/or --delete-config).
    #[arg(long, group = "action")]
    alter: bool,
    /// Print the quotas of the entity (or of every entity of the type when none is named).
    #[arg(long, group = "action")]
    describe: bool,
    /// `clients`, `users`, `ips` or `brokers`; give it twice (`users` and `clients`) for a
    /// user's client.
    #[arg(long = "entity-type", value_name = "TYPE")]
    entity_type: Vec<String>,
    /// The entity's name, one per --entity-type in the same order.
    #[arg(long = "entity-name", value_name = "NAME")]
    entity_name: Vec<String>,
    /// The type's default entity (`<default>`), in place of a name.
    #[arg(long = "entity-default")]
    entity_default: bool,
    /// Shorthand for --entity-type users --entity-name USER.
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Shorthand for --entity-type clients --entity-name CLIENT.
    #[arg(long, value_name = "CLIENT")]
    client: Option<String>,
    /// Shorthand for --entity-type ips --entity-name IP.
    #[arg(long, value_name = "IP")]
    ip: Option<String>,
    #[arg(long = "user-defaults")]
    user_defaults: bool,
    #[arg(long = "client-defaults")]
    client_defaults: bool,
    #[arg(long = "ip-defaults")]
    ip_defaults: bool,
    /// Shorthand for --entity-type brokers --entity-name ID.
    #[arg(long, value_name = "ID")]
    broker: Option<i32>,
    /// Shorthand for --entity-type brokers --entity-default.
    #[arg(long = "broker-defaults")]
    broker_defaults: bool,
    /// With --describe of a broker: every key with its source, not only the dynamic ones.
    #[arg(long)]
    all: bool,
    /// `key=value,key=value`: quotas to set (producer_byte_rate, consumer_byte_rate,
    /// request_percentage, controller_mutation_rate; connection_creation_rate for ips), or a
    /// broker's keys (a list value in brackets: `log.cleanup.policy=[compact,delete]`).
    #[arg(long = "add-config", value_name = "K=V,...")]
    add_config: Option<String>,
    /// `key,key`: quotas to remove.
    #[arg(long = "delete-config", value_name = "K,...")]
    delete_config: Option<String>,
    /// Write users' SCRAM credentials straight into ZooKeeper (`host:port[/chroot]`), as for
    /// the first user, before any broker runs.
    #[arg(long, value_name = "HOST:PORT")]
    zookeeper: Option<String>,
    /// Client properties for reaching a SASL listener (`security.protocol`, `sasl.mechanism`,
    /// `sasl.jaas.config`).
    #[arg(long = "command-config", value_name = "FILE")]
    command_config: Option<std::path::PathBuf>,
}

impl ConfigsArgs {
    fn security(&self) -> Result<gregor::network::ClientSecurity, String> {
        match &self.command_config {
            Some(path) => super::command_config::read(path),
            None => Ok(gregor::network::ClientSecurity::default()),
        }
    }

    fn connect(&self) -> Result<BlockingChannel, String> {
        connect_as(&self.bootstrap_server, &self.security()?)
    }
}

/// The wire's entity type for kafka-configs' `--entity-type`.
fn wire_type(t: &str) -> Result<&'static str, String> {
    match t {
        "clients" => Ok("client-id"),
        "users" => Ok("user"),
        "ips" => Ok("ip"),
        "topics" => Err("topic settings are changed with `gregor topics --alter --config`".into()),
        o => Err(format!(
            "--entity-type must be clients, users, ips or brokers, got `{o}`"
        )),
    }
}

/// What the flags ask of a broker's configuration, when they name a broker or the brokers'
/// defaults.
fn broker_action(
    a: &ConfigsArgs,
) -> Result<Option<super::broker_configs::BrokerAction<'_>>, String> {
    let typed = a.entity_type.iter().any(|t| t == "brokers");
    if !typed && a.broker.is_none() && !a.broker_defaults {
        return Ok(None);
    }
    if a.entity_type.len() > usize::from(typed) {
        return Err("--entity-type brokers names a broker alone".into());
    }
    let broker = match (a.broker, a.entity_name.as_slice(), a.entity_default || a.broker_defaults) {
        (Some(id), [], false) => Some(id),
        (None, [name], false) => Some(
            name.parse()
                .map_err(|_| format!("a broker is named by its id, got `{name}`"))?,
        ),
        (None, [], true) => None,
        _ => return Err("name one broker (--entity-name ID or --broker ID) or the defaults (--entity-default or --broker-defaults)".into()),
    };
    Ok(Some(super::broker_configs::BrokerAction {
        bootstrap: &a.bootstrap_server,
        security: a.security()?,
        broker,
        add_config: a.add_config.as_deref(),
        delete_config: a.delete_config.as_deref(),
        all: a.all,
    }))
}

/// The entity named by the flags: (wire type, name or `None` for the default).
fn entity(a: &ConfigsArgs) -> Result<EntityParts, String> {
    let mut parts: EntityParts = Vec::new();
    for (kind, name, default) in [
        ("user", &a.user, a.user_defaults),
        ("client-id", &a.client, a.client_defaults),
        ("ip", &a.ip, a.ip_defaults),
    ] {
        if let Some(n) = name {
            parts.push((kind.into(), Some(n.clone())));
        } else if default {
            parts.push((kind.into(), None));
        }
    }
    let mut names = a.entity_name.iter();
    for t in &a.entity_type {
        let kind = wire_type(t)?;
        let name = match names.next() {
            Some(n) => Some(n.clone()),
            None if a.entity_default => None,
            // --describe of a type without a name: every entity of the type.
            None if a.describe => Some(String::new()),
            None => {
                return Err(format!(
                    "--entity-type {t} needs --entity-name or --entity-default"
                ));
            }
        };
        parts.push((kind.into(), name));
    }
    // kafka-configs names users before clients whatever the order of the flags.
    parts.sort_by_key(|(k, _)| ["user", "client-id", "ip"].iter().position(|o| o == k));
    if parts.is_empty() {
        return Err("name an entity: --entity-type with --entity-name or --entity-default, or --client, --user, --ip".into());
    }
    Ok(parts)
}

pub fn run(a: ConfigsArgs) -> Result<(), String> {
    if let Some(action) = broker_action(&a)? {
        return if a.alter {
            super::broker_configs::alter(&action)
        } else if a.describe {
            super::broker_configs::describe(&action)
        } else {
            Err("one of --alter, --describe is required".into())
        };
    }
    let parts = entity(&a)?;
    if a.alter {
        alter(&a, parts)
    } else if a.describe {
        describe(&a, &parts)
    } else {
        Err("one of --alter, --describe is required".into())
    }
}

fn alter(a: &ConfigsArgs, parts: EntityParts) -> Result<(), String> {
    if parts.iter().any(|(_, n)| n.as_deref() == Some("")) {
        return Err("--alter needs --entity-name or --entity-default".into());
    }
    let mut ops = Vec::new();
    let mut scram_change = ScramChange {
        set: Vec::new(),
        delete: Vec::new(),
    };
    for kv in a.add_config.iter().flat_map(|s| scram::split_entries(s)) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--add-config expects key=value, got `{kv}`"))?;
        if scram::is_scram_key(k.trim()) {
            scram_change.set.push(scram::parse_set(k.trim(), v)?);
            continue;
        }
        let value: f64 = v
            .trim()
            .parse()
            .map_err(|_| format!("the value of `{k}` must be a number, got `{v}`"))?;
        ops.push(QuotaOp {
            key: k.trim().into(),
            value,
            remove: false,
        });
    }
    for k in a
        .delete_config
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        if let Some(m) = gregor::security::ScramMechanism::from_name(k.trim()) {
            scram_change.delete.push(m);
            continue;
        }
        ops.push(QuotaOp {
            key: k.trim().into(),
            value: 0.0,
            remove: true,
        });
    }
    let scram = !scram_change.set.is_empty() || !scram_change.delete.is_empty();
    if ops.is_empty() && !scram {
        return Err("--alter needs --add-config or --delete-config".into());
    }
    if scram {
        let user = match parts.as_slice() {
            [(kind, Some(user))] if kind == "user" => user.clone(),
            _ => return Err("SCRAM credentials belong to one named user: --entity-type users --entity-name NAME".into()),
        };
        match &a.zookeeper {
            Some(zk) => scram::alter_via_zookeeper(zk, &user, &scram_change)?,
            None => scram::alter_via_broker(&mut a.connect()?, &user, &scram_change)?,
        }
    }
    if !ops.is_empty() {
        if a.zookeeper.is_some() {
            return Err(
                "--zookeeper changes SCRAM credentials only; quotas go through --bootstrap-server"
                    .into(),
            );
        }
        alter_quotas(a, &parts, ops)?;
    }
    println!("Completed updating config for {}.", name_entity(&parts));
    Ok(())
}

fn alter_quotas(a: &ConfigsArgs, parts: &EntityParts, ops: Vec<QuotaOp>) -> Result<(), String> {
    let req = AlterClientQuotasRequest {
        entries: vec![(parts.clone(), ops)],
        validate_only: false,
    };
    let answer: AlterClientQuotasResponse = a
        .connect()?
        .send(header::ALTER_CLIENT_QUOTAS, 1, &req)
        .map_err(|e| e.to_string())?;
    for (code, message, _) in answer.entries {
        if code != 0 {
            let e = ErrorCode::from_code(code);
            return Err(format!(
                "{}: {e:?} (error {code})",
                message.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

fn describe(a: &ConfigsArgs, parts: &EntityParts) -> Result<(), String> {
    let components = parts
        .iter()
        .map(|(kind, name)| {
            let (match_type, name) = match name.as_deref() {
                Some("") => (MATCH_ANY, None),
                Some(n) => (MATCH_EXACT, Some(n.to_owned())),
                None => (MATCH_DEFAULT, None),
            };
            QuotaFilterComponent {
                entity_type: kind.clone(),
                match_type,
                name,
            }
        })
        .collect();
    let req = DescribeClientQuotasRequest {
        components,
        strict: true,
    };
    let mut chan = a.connect()?;
    let answer: DescribeClientQuotasResponse = chan
        .send(header::DESCRIBE_CLIENT_QUOTAS, 1, &req)
        .map_err(|e| e.to_string())?;
    if answer.error_code != 0 {
        let e = ErrorCode::from_code(answer.error_code);
        return Err(format!(
            "{}: {e:?} (error {})",
            answer.error_message.unwrap_or_default(),
            answer.error_code
        ));
    }
    for (entity, values) in answer.entries.unwrap_or_default() {
        let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        println!(
            "Quota configs for {} are {}",
            describe_entity(&entity),
            values.join(", ")
        );
    }
    // A user (or every user) has SCRAM credentials besides quotas.
    if let [(kind, name)] = parts.as_slice()
        && kind == "user"
        && name.is_some()
    {
        let user = name.as_deref().filter(|n| !n.is_empty());
        for line in scram::describe(&mut chan, user)? {
            println!("{line}");
        }
    }
    Ok(())
}

/// `user alice client c` (`client default` for a default), as kafka-configs names what it
/// altered.
fn name_entity(parts: &EntityParts) -> String {
    parts
        .iter()
        .map(|(kind, name)| {
            let kind = if kind == "client-id" {
                "client"
            } else {
                kind.as_str()
            };
            format!("{kind} {}", name.as_deref().unwrap_or("default"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `user-principal 'alice', client-id 'c'`, as kafka-configs describes an entity.
fn describe_entity(parts: &EntityParts) -> String {
    parts
        .iter()
        .map(|(kind, name)| {
            let kind = if kind == "user" {
                "user-principal"
            } else {
                kind.as_str()
            };
            match name {
                Some(n) => format!("{kind} '{n}'"),
                None => format!("the default {kind}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
