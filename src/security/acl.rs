//! Access control lists as Kafka's `AclAuthorizer` keeps and checks them: bindings of a
//! resource pattern (type, name, LITERAL or PREFIXED; the literal name `*` matches every
//! name) to an entry (principal, host, operation, Allow or Deny), and the rule that decides a
//! request — super users may do anything; a Deny that matches wins; an Allow that matches,
//! directly or by an implied operation, allows; a resource no binding names is decided by
//! `allow.everyone.if.no.acl.found`; anything else is refused. The enums carry Kafka's wire
//! codes and the names its ZooKeeper JSON and tools use.

/// Declares an enum of Kafka's with its wire code and its name (as ZooKeeper's JSON and the
/// tools spell it).
macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant,)* }

        impl $name {
            pub const ALL: &[$name] = &[$($name::$variant,)*];

            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code,)* }
            }

            pub fn from_code(code: i8) -> Option<$name> {
                match code { $($code => Some($name::$variant),)* _ => None }
            }

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// By name, in any case (`Read`, `READ`, `read`; `TransactionalId`,
            /// `transactional-id`).
            pub fn from_name(name: &str) -> Option<$name> {
                let squash = |s: &str| s.replace(['-', '_'], "").to_lowercase();
                let want = squash(name);
                Self::ALL.iter().copied().find(|v| squash(v.name()) == want)
            }
        }
    };
}

kafka_enum!(
    /// `ResourceType`; `Any` only in filters.
    ResourceType {
        Any = 1, "Any";
        Topic = 2, "Topic";
        Group = 3, "Group";
        Cluster = 4, "Cluster";
        TransactionalId = 5, "TransactionalId";
        DelegationToken = 6, "DelegationToken";
        User = 7, "User";
    }
);

kafka_enum!(
    /// `AclOperation`; `Any` only in filters.
    Operation {
        Any = 1, "Any";
        All = 2, "All";
        Read = 3, "Read";
        Write = 4, "Write";
        Create = 5, "Create";
        Delete = 6, "Delete";
        Alter = 7, "Alter";
        Describe = 8, "Describe";
        ClusterAction = 9, "ClusterAction";
        DescribeConfigs = 10, "DescribeConfigs";
        AlterConfigs = 11, "AlterConfigs";
        IdempotentWrite = 12, "IdempotentWrite";
        CreateTokens = 13, "CreateTokens";
        DescribeTokens = 14, "DescribeTokens";
    }
);

kafka_enum!(
    /// `AclPermissionType`; `Any` only in filters.
    Permission {
        Any = 1, "Any";
        Deny = 2, "Deny";
        Allow = 3, "Allow";
    }
);

kafka_enum!(
    /// `PatternType`; `Any` and `Match` only in filters.
    PatternType {
        Any = 1, "Any";
        Match = 2, "Match";
        Literal = 3, "Literal";
        Prefixed = 4, "Prefixed";
    }
);

/// The name of the one cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The literal name (and principal, and host) that matches every one.
pub const WILDCARD: &str = "*";

/// A resource pattern: what a binding applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern: PatternType,
}

/// An entry of a pattern's list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclEntry {
    /// `User:alice`, or `User:*`.
    pub principal: String,
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

impl ResourcePattern {
    /// Whether this pattern applies to the resource `name` of its type.
    fn covers(&self, name: &str) -> bool {
        match self.pattern {
            PatternType::Literal => self.name == name || self.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&self.name),
            _ => false,
        }
    }
}

impl AclEntry {
    fn applies_to(&self, principal: &str, host: &str) -> bool {
        (self.principal == principal || self.principal == "User:*")
            && (self.host == host || self.host == WILDCARD)
    }
}

/// Whether an entry's operation grants `op`: itself, All, or one that implies it (Kafka:
/// Read, Write, Delete and Alter imply Describe; AlterConfigs implies DescribeConfigs).
fn grants(entry: Operation, op: Operation, permission: Permission) -> bool {
    if entry == op || entry == Operation::All {
        return true;
    }
    // Only an Allow implies; a Deny of Read does not deny Describe.
    permission == Permission::Allow
        && match op {
            Operation::Describe => matches!(
                entry,
                Operation::Read | Operation::Write | Operation::Delete | Operation::Alter
            ),
            Operation::DescribeConfigs => entry == Operation::AlterConfigs,
            _ => false,
        }
}

/// What the authorizer knows, and the settings it decides by.
#[derive(Debug, Clone, Default)]
pub struct AclSet {
    pub bindings: Vec<(ResourcePattern, Vec<AclEntry>)>,
    /// `super.users`: principals allowed everything.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_if_no_acl: bool,
}

impl AclSet {
    /// Whether `principal` (`User:alice`) connected from `host` may do `op` on the resource.
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        op: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.super_users.iter().any(|s| s == principal) {
            return true;
        }
        let mut any = false;
        let mut allowed = false;
        for (pattern, entries) in &self.bindings {
            if pattern.resource_type != resource_type || !pattern.covers(name) {
                continue;
            }
            any = true;
            for e in entries.iter().filter(|e| e.applies_to(principal, host)) {
                if !grants(e.operation, op, e.permission) {
                    continue;
                }
                match e.permission {
                    Permission::Deny => return false,
                    Permission::Allow => allowed = true,
                    Permission::Any => {}
                }
            }
        }
        allowed || (!any && self.allow_if_no_acl)
    }
}

impl AclSet {
    /// Whether `principal` may do `op` on some resource of the type (KIP-679: an idempotent
    /// producer with Write on any topic may have a producer id): a super user, an Allow of
    /// `op` (or All) on any pattern of that type, or no pattern of the type at all while
    /// `allow.everyone.if.no.acl.found` holds.
    pub fn allows_any(&self, principal: &str, host: &str, op: Operation, t: ResourceType) -> bool {
        if self.super_users.iter().any(|s| s == principal) {
            return true;
        }
        let of_type = self.bindings.iter().filter(|(p, _)| p.resource_type == t);
        let mut any = false;
        for (_, entries) in of_type {
            any = true;
            if entries.iter().any(|e| {
                e.permission == Permission::Allow
                    && e.applies_to(principal, host)
                    && (e.operation == op || e.operation == Operation::All)
            }) {
                return true;
            }
        }
        !any && self.allow_if_no_acl
    }
}

/// A filter of DescribeAcls and DeleteAcls (and `kafka-acls --list`, `--remove`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    /// `None`: any name.
    pub name: Option<String>,
    pub pattern: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclFilter {
    fn matches_pattern(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        match (self.pattern, &self.name) {
            (PatternType::Any, None) => true,
            (PatternType::Any, Some(n)) => &p.name == n,
            // MATCH: every pattern that would apply to a resource of this name.
            (PatternType::Match, None) => true,
            (PatternType::Match, Some(n)) => p.covers(n),
            (t, None) => t == p.pattern,
            (t, Some(n)) => t == p.pattern && &p.name == n,
        }
    }

    fn matches_entry(&self, e: &AclEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == Operation::Any || self.operation == e.operation)
            && (self.permission == Permission::Any || self.permission == e.permission)
    }

    /// The bindings of `set` it matches, pattern by pattern.
    pub fn select<'a>(
        &self,
        bindings: &'a [(ResourcePattern, Vec<AclEntry>)],
    ) -> Vec<(&'a ResourcePattern, Vec<&'a AclEntry>)> {
        bindings
            .iter()
            .filter(|(p, _)| self.matches_pattern(p))
            .map(|(p, es)| {
                (
                    p,
                    es.iter()
                        .filter(|e| self.matches_entry(e))
                        .collect::<Vec<_>>(),
                )
            })
            .filter(|(_, es)| !es.is_empty())
            .collect()
    }
}

/// Why a binding cannot be created, if it cannot (CreateAcls' checks).
pub fn check_binding(p: &ResourcePattern, e: &AclEntry) -> Result<(), String> {
    if matches!(p.resource_type, ResourceType::Any) {
        return Err("an ACL needs a resource type".into());
    }
    if !matches!(p.pattern, PatternType::Literal | PatternType::Prefixed) {
        return Err("an ACL's pattern type is LITERAL or PREFIXED".into());
    }
    if p.name.is_empty() {
        return Err("an ACL needs a resource name".into());
    }
    if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
        return Err(format!("the cluster resource is named {CLUSTER_NAME}"));
    }
    if matches!(e.operation, Operation::Any) || matches!(e.permission, Permission::Any) {
        return Err("an ACL needs an operation and a permission (not ANY)".into());
    }
    match e.principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(()),
        _ => Err(format!(
            "`{}` is not a principal (`User:alice`)",
            e.principal
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(
        t: ResourceType,
        name: &str,
        pattern: PatternType,
        entries: &[(&str, Operation, Permission)],
    ) -> (ResourcePattern, Vec<AclEntry>) {
        (
            ResourcePattern {
                resource_type: t,
                name: name.into(),
                pattern,
            },
            entries
                .iter()
                .map(|(p, o, perm)| AclEntry {
                    principal: p.to_string(),
                    host: "*".into(),
                    operation: *o,
                    permission: *perm,
                })
                .collect(),
        )
    }

    #[test]
    fn kafkas_rules_decide() {
        use Operation::*;
        use Permission::*;
        use ResourceType::*;
        let set = AclSet {
            bindings: vec![
                binding(
                    Topic,
                    "orders",
                    PatternType::Literal,
                    &[("User:alice", Read, Allow), ("User:bob", Write, Allow)],
                ),
                binding(
                    Topic,
                    "orders",
                    PatternType::Literal,
                    &[("User:bob", Write, Deny)],
                ),
                binding(
                    Topic,
                    "logs-",
                    PatternType::Prefixed,
                    &[("User:*", Write, Allow)],
                ),
                binding(
                    Group,
                    "*",
                    PatternType::Literal,
                    &[("User:alice", Read, Allow)],
                ),
                binding(
                    Cluster,
                    CLUSTER_NAME,
                    PatternType::Literal,
                    &[("User:ops", All, Allow)],
                ),
            ],
            super_users: vec!["User:broker".into()],
            allow_if_no_acl: false,
        };
        let ok = |p: &str, op, t, n: &str| set.authorize(p, "10.0.0.1", op, t, n);
        assert!(ok("User:alice", Read, Topic, "orders"));
        // Read implies Describe; Write is not granted.
        assert!(ok("User:alice", Describe, Topic, "orders"));
        assert!(!ok("User:alice", Write, Topic, "orders"));
        // Deny wins over Allow.
        assert!(!ok("User:bob", Write, Topic, "orders"));
        assert!(ok("User:carol", Write, Topic, "logs-app"));
        assert!(!ok("User:carol", Write, Topic, "log"));
        assert!(ok("User:alice", Read, Group, "any-group"));
        assert!(ok("User:ops", AlterConfigs, Cluster, CLUSTER_NAME));
        assert!(ok("User:broker", ClusterAction, Cluster, CLUSTER_NAME));
        // No binding names the topic: allow.everyone.if.no.acl.found decides.
        assert!(!ok("User:alice", Read, Topic, "other"));
        let open = AclSet {
            allow_if_no_acl: true,
            ..set.clone()
        };
        assert!(open.authorize("User:x", "h", Read, Topic, "other"));
        assert!(!open.authorize("User:x", "h", Read, Topic, "orders"));
    }

    #[test]
    fn filters_select_as_kafka_does() {
        use Operation::*;
        use Permission::*;
        let bindings = vec![
            binding(
                ResourceType::Topic,
                "orders",
                PatternType::Literal,
                &[("User:alice", Read, Allow)],
            ),
            binding(
                ResourceType::Topic,
                "ord",
                PatternType::Prefixed,
                &[("User:bob", Write, Allow)],
            ),
            binding(
                ResourceType::Group,
                "g",
                PatternType::Literal,
                &[("User:alice", Read, Allow)],
            ),
        ];
        let f = |t, name: Option<&str>, pattern, principal: Option<&str>| AclFilter {
            resource_type: t,
            name: name.map(str::to_owned),
            pattern,
            principal: principal.map(str::to_owned),
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        };
        assert_eq!(
            f(ResourceType::Any, None, PatternType::Any, None)
                .select(&bindings)
                .len(),
            3
        );
        assert_eq!(
            f(
                ResourceType::Topic,
                Some("orders"),
                PatternType::Match,
                None
            )
            .select(&bindings)
            .len(),
            2
        );
        assert_eq!(
            f(
                ResourceType::Topic,
                Some("orders"),
                PatternType::Literal,
                None
            )
            .select(&bindings)
            .len(),
            1
        );
        assert_eq!(
            f(
                ResourceType::Any,
                None,
                PatternType::Any,
                Some("User:alice")
            )
            .select(&bindings)
            .len(),
            2
        );
    }

    #[test]
    fn names_and_codes_are_kafkas() {
        assert_eq!(
            Operation::from_name("IDEMPOTENT_WRITE"),
            Some(Operation::IdempotentWrite)
        );
        assert_eq!(
            ResourceType::from_name("transactional-id"),
            Some(ResourceType::TransactionalId)
        );
        assert_eq!(Operation::Describe.code(), 8);
        assert_eq!(PatternType::from_code(4), Some(PatternType::Prefixed));
        assert!(Permission::from_code(0).is_none());
    }
}
