//! `gregor acls`: kafka-acls.sh's flags and output — `--add`, `--remove`, `--list`;
//! `--allow-principal`/`--deny-principal` with `--allow-host`/`--deny-host`, `--operation`;
//! resources `--topic`, `--group`, `--cluster`, `--transactional-id` with
//! `--resource-pattern-type`; the `--producer` and `--consumer` shorthands — through
//! CreateAcls, DeleteAcls and DescribeAcls (`--command-config` to log in).

use clap::Args;

use gregor::protocol::acls::{
    AclBinding, AclBindingFilter, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest,
    DeleteAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
};
use gregor::protocol::{ErrorCode, header};
use gregor::security::acl::{CLUSTER_NAME, Operation, PatternType, Permission, ResourceType};

use super::topics_wire::connect_as;

/// The versions gregor's tool speaks (flexible, with pattern types).
const VERSION: i16 = 2;

#[derive(Args)]
pub struct AclsArgs {
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap_server: String,
    /// Client properties for reaching a secured listener.
    #[arg(long = "command-config", value_name = "FILE")]
    command_config: Option<std::path::PathBuf>,
    #[arg(long, group = "action")]
    add: bool,
    #[arg(long, group = "action")]
    remove: bool,
    #[arg(long, group = "action")]
    list: bool,
    #[arg(long = "allow-principal", value_name = "TYPE:NAME")]
    allow_principal: Vec<String>,
    #[arg(long = "deny-principal", value_name = "TYPE:NAME")]
    deny_principal: Vec<String>,
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_host: Vec<String>,
    #[arg(long = "deny-host", value_name = "HOST")]
    deny_host: Vec<String>,
    /// Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
    /// AlterConfigs, IdempotentWrite, All.
    #[arg(long, value_name = "OPERATION")]
    operation: Vec<String>,
    #[arg(long, value_name = "TOPIC")]
    topic: Vec<String>,
    #[arg(long, value_name = "GROUP")]
    group: Vec<String>,
    #[arg(long)]
    cluster: bool,
    #[arg(long = "transactional-id", value_name = "ID")]
    transactional_id: Vec<String>,
    /// literal, prefixed; for --list and --remove also any and match.
    #[arg(long = "resource-pattern-type", value_name = "TYPE")]
    resource_pattern_type: Option<String>,
    /// Only the ACLs of this principal (--list).
    #[arg(long, value_name = "TYPE:NAME")]
    principal: Vec<String>,
    /// Write, Describe and Create on the topics (and IdempotentWrite on the cluster).
    #[arg(long)]
    producer: bool,
    /// Read and Describe on the topics, Read on the groups.
    #[arg(long)]
    consumer: bool,
    /// kafka-acls' "no prompt"; gregor never prompts.
    #[arg(long)]
    force: bool,
}

/// `IDEMPOTENT_WRITE` for `IdempotentWrite`, as Kafka's tool prints enum names.
fn screaming(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn resources(a: &AclsArgs, pattern: PatternType) -> Vec<(ResourceType, String, PatternType)> {
    let mut out = Vec::new();
    for t in &a.topic {
        out.push((ResourceType::Topic, t.clone(), pattern));
    }
    for g in &a.group {
        out.push((ResourceType::Group, g.clone(), pattern));
    }
    for t in &a.transactional_id {
        out.push((ResourceType::TransactionalId, t.clone(), pattern));
    }
    if a.cluster {
        out.push((
            ResourceType::Cluster,
            CLUSTER_NAME.to_owned(),
            PatternType::Literal,
        ));
    }
    out
}

fn pattern_type(a: &AclsArgs, default: PatternType) -> Result<PatternType, String> {
    match &a.resource_pattern_type {
        None => Ok(default),
        Some(t) => PatternType::from_name(t).ok_or_else(|| {
            format!("--resource-pattern-type must be literal, prefixed, any or match, got `{t}`")
        }),
    }
}

fn operations(a: &AclsArgs) -> Result<Vec<Operation>, String> {
    if a.operation.is_empty() {
        return Ok(vec![Operation::All]);
    }
    a.operation
        .iter()
        .map(|o| Operation::from_name(o).ok_or_else(|| format!("unknown operation `{o}`")))
        .collect()
}

/// The bindings `--add` and `--remove` name: each resource × principal × host × operation.
fn bindings(a: &AclsArgs, pattern: PatternType) -> Result<Vec<AclBinding>, String> {
    let mut entries = Vec::new();
    for (principals, hosts, permission) in [
        (&a.allow_principal, &a.allow_host, Permission::Allow),
        (&a.deny_principal, &a.deny_host, Permission::Deny),
    ] {
        let hosts = if hosts.is_empty() {
            vec!["*".to_owned()]
        } else {
            hosts.clone()
        };
        for p in principals {
            for h in &hosts {
                entries.push((p.clone(), h.clone(), permission));
            }
        }
    }
    if entries.is_empty() {
        return Err("name a principal: --allow-principal or --deny-principal".into());
    }
    // What the resources get: the shorthands' operations, or --operation's.
    let mut per_resource: Vec<((ResourceType, String, PatternType), Vec<Operation>)> = Vec::new();
    if a.producer || a.consumer {
        for r in resources(a, pattern) {
            let ops = match (r.0, a.producer, a.consumer) {
                (ResourceType::Topic, true, false) => {
                    vec![Operation::Write, Operation::Describe, Operation::Create]
                }
                (ResourceType::Topic, false, true) => vec![Operation::Read, Operation::Describe],
                (ResourceType::Topic, true, true) => vec![
                    Operation::Write,
                    Operation::Describe,
                    Operation::Create,
                    Operation::Read,
                ],
                (ResourceType::Group, _, true) => vec![Operation::Read],
                _ => continue,
            };
            per_resource.push((r, ops));
        }
        if a.producer {
            let cluster = (
                ResourceType::Cluster,
                CLUSTER_NAME.to_owned(),
                PatternType::Literal,
            );
            per_resource.push((cluster, vec![Operation::IdempotentWrite]));
        }
    } else {
        let ops = operations(a)?;
        for r in resources(a, pattern) {
            per_resource.push((r, ops.clone()));
        }
    }
    if per_resource.is_empty() {
        return Err("name a resource: --topic, --group, --cluster or --transactional-id".into());
    }
    let mut out = Vec::new();
    for ((t, name, pattern), ops) in per_resource {
        for (principal, host, permission) in &entries {
            for op in &ops {
                out.push(AclBinding {
                    resource_type: t.code(),
                    resource_name: name.clone(),
                    pattern_type: pattern.code(),
                    principal: principal.clone(),
                    host: host.clone(),
                    operation: op.code(),
                    permission: permission.code(),
                });
            }
        }
    }
    Ok(out)
}

fn resource_line(t: i8, name: &str, pattern: i8) -> String {
    let name_of = |n: Option<&'static str>| screaming(n.unwrap_or("UNKNOWN"));
    format!(
        "ResourcePattern(resourceType={}, name={name}, patternType={})",
        name_of(ResourceType::from_code(t).map(|t| t.name())),
        name_of(PatternType::from_code(pattern).map(|p| p.name()))
    )
}

fn entry_line(principal: &str, host: &str, op: i8, perm: i8) -> String {
    format!(
        "\t(principal={principal}, host={host}, operation={}, permissionType={})",
        screaming(Operation::from_code(op).map_or("UNKNOWN", |o| o.name())),
        screaming(Permission::from_code(perm).map_or("UNKNOWN", |p| p.name()))
    )
}

fn check(code: i16, message: Option<String>) -> Result<(), String> {
    if code == 0 {
        return Ok(());
    }
    let e = ErrorCode::from_code(code);
    Err(format!(
        "{} ({e:?}, error {code})",
        message.unwrap_or_default()
    ))
}

pub fn run(a: AclsArgs) -> Result<(), String> {
    let security = match &a.command_config {
        Some(p) => super::command_config::read(p)?,
        None => gregor::network::ClientSecurity::default(),
    };
    let mut chan = connect_as(&a.bootstrap_server, &security)?;
    if a.add {
        let bindings = bindings(&a, pattern_type(&a, PatternType::Literal)?)?;
        for b in &bindings {
            println!(
                "Adding ACLs for resource `{}`: \n {}",
                resource_line(b.resource_type, &b.resource_name, b.pattern_type),
                entry_line(&b.principal, &b.host, b.operation, b.permission)
            );
        }
        let answer: CreateAclsResponse = chan
            .send(
                header::CREATE_ACLS,
                VERSION,
                &CreateAclsRequest {
                    creations: bindings,
                },
            )
            .map_err(|e| e.to_string())?;
        for (code, message) in answer.results {
            check(code, message)?;
        }
        Ok(())
    } else if a.remove {
        let filters = bindings(&a, pattern_type(&a, PatternType::Literal)?)?
            .into_iter()
            .map(|b| AclBindingFilter {
                resource_type: b.resource_type,
                resource_name: Some(b.resource_name),
                pattern_type: b.pattern_type,
                principal: Some(b.principal),
                host: Some(b.host),
                operation: b.operation,
                permission: b.permission,
            })
            .collect();
        let answer: DeleteAclsResponse = chan
            .send(header::DELETE_ACLS, VERSION, &DeleteAclsRequest { filters })
            .map_err(|e| e.to_string())?;
        for r in answer.results {
            check(r.error_code, r.error_message)?;
            for b in r.matching {
                println!(
                    "Removed ACL from resource `{}`: \n {}",
                    resource_line(b.resource_type, &b.resource_name, b.pattern_type),
                    entry_line(&b.principal, &b.host, b.operation, b.permission)
                );
            }
        }
        Ok(())
    } else if a.list {
        list(&a, &mut chan)
    } else {
        Err("one of --add, --remove, --list is required".into())
    }
}

fn list(a: &AclsArgs, chan: &mut gregor::network::BlockingChannel) -> Result<(), String> {
    let pattern = pattern_type(a, PatternType::Any)?;
    let mut filters: Vec<(i8, Option<String>)> = resources(a, pattern)
        .into_iter()
        .map(|(t, n, _)| (t.code(), Some(n)))
        .collect();
    if filters.is_empty() {
        filters.push((ResourceType::Any.code(), None));
    }
    let principals: Vec<Option<String>> = if a.principal.is_empty() {
        vec![None]
    } else {
        a.principal.iter().cloned().map(Some).collect()
    };
    for (t, name) in filters {
        for principal in &principals {
            let filter = AclBindingFilter {
                resource_type: t,
                resource_name: name.clone(),
                pattern_type: pattern.code(),
                principal: principal.clone(),
                host: None,
                operation: Operation::Any.code(),
                permission: Permission::Any.code(),
            };
            let answer: DescribeAclsResponse = chan
                .send(
                    header::DESCRIBE_ACLS,
                    VERSION,
                    &DescribeAclsRequest { filter },
                )
                .map_err(|e| e.to_string())?;
            check(answer.error_code, answer.error_message)?;
            for (t, name, pattern, acls) in answer.resources {
                println!(
                    "Current ACLs for resource `{}`: ",
                    resource_line(t, &name, pattern)
                );
                for (principal, host, op, perm) in acls {
                    println!(" {}", entry_line(&principal, &host, op, perm));
                }
                println!();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_print_as_kafkas_tool_prints_them() {
        assert_eq!(screaming("IdempotentWrite"), "IDEMPOTENT_WRITE");
        assert_eq!(screaming("Topic"), "TOPIC");
        assert_eq!(
            resource_line(2, "t", 4),
            "ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)"
        );
    }
}
