//! DescribeAcls (29), CreateAcls (30) and DeleteAcls (31): the ACLs as ZooKeeper holds them
//! (`zk::acls`), read and changed by any broker; a change is written with its notice, every
//! broker's authorizer reads it from there, and this one at once. They need Describe (list)
//! or Alter (change) on the cluster, and an authorizer: without `authorizer.class.name` they
//! are answered SECURITY_DISABLED, as Kafka answers them.

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::acls::{
    AclBinding, AclBindingFilter, CreateAclsRequest, CreateAclsResponse, DeleteAclsFilterResult,
    DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
    DescribedResource,
};
use crate::security::acl::{
    AclEntry, AclFilter, Operation, PatternType, Permission, ResourcePattern, ResourceType,
    check_binding,
};
use crate::zk::acls;

const NO_AUTHORIZER: &str = "No Authorizer is configured on the broker";

/// A wire filter as the authorizer's, or why it is not one.
fn filter_of(f: &AclBindingFilter) -> Result<AclFilter, String> {
    Ok(AclFilter {
        resource_type: ResourceType::from_code(f.resource_type)
            .ok_or_else(|| format!("unknown resource type {}", f.resource_type))?,
        name: f.resource_name.clone(),
        pattern: PatternType::from_code(f.pattern_type)
            .ok_or_else(|| format!("unknown pattern type {}", f.pattern_type))?,
        principal: f.principal.clone(),
        host: f.host.clone(),
        operation: Operation::from_code(f.operation)
            .ok_or_else(|| format!("unknown operation {}", f.operation))?,
        permission: Permission::from_code(f.permission)
            .ok_or_else(|| format!("unknown permission type {}", f.permission))?,
    })
}

/// A wire binding as the authorizer's (pattern, entry), or why it is not one.
fn binding_of(b: &AclBinding) -> Result<(ResourcePattern, AclEntry), String> {
    let pattern = ResourcePattern {
        resource_type: ResourceType::from_code(b.resource_type)
            .ok_or_else(|| format!("unknown resource type {}", b.resource_type))?,
        name: b.resource_name.clone(),
        pattern: PatternType::from_code(b.pattern_type)
            .ok_or_else(|| format!("unknown pattern type {}", b.pattern_type))?,
    };
    let entry = AclEntry {
        principal: b.principal.clone(),
        host: b.host.clone(),
        operation: Operation::from_code(b.operation)
            .ok_or_else(|| format!("unknown operation {}", b.operation))?,
        permission: Permission::from_code(b.permission)
            .ok_or_else(|| format!("unknown permission type {}", b.permission))?,
    };
    check_binding(&pattern, &entry)?;
    Ok((pattern, entry))
}

fn wire_binding(p: &ResourcePattern, e: &AclEntry) -> AclBinding {
    AclBinding {
        resource_type: p.resource_type.code(),
        resource_name: p.name.clone(),
        pattern_type: p.pattern.code(),
        principal: e.principal.clone(),
        host: e.host.clone(),
        operation: e.operation.code(),
        permission: e.permission.code(),
    }
}

impl KafkaApis {
    /// Why an ACL request of `op` on the cluster is refused as a whole, if it is.
    fn acl_refusal(&self, cx: &RequestContext<'_>, op: Operation) -> Option<(ErrorCode, String)> {
        if !self.authorizer.enabled() {
            Some((ErrorCode::SecurityDisabled, NO_AUTHORIZER.into()))
        } else if !self.cluster_allowed(cx, op) {
            Some((
                ErrorCode::ClusterAuthorizationFailed,
                format!("not authorized to {} ACLs", op.name().to_lowercase()),
            ))
        } else {
            None
        }
    }

    /// Every broker reads a change from its notice; this one at once, so a client that
    /// changes ACLs and then acts through the same broker sees them in force.
    fn reload_acls(&self) {
        if let Err(e) = self.authorizer.reload(&self.zk) {
            log::warn!("[Broker {}] cannot read the ACLs: {e:?}", self.broker_id);
        }
    }

    pub(super) fn handle_describe_acls(
        &self,
        req: &DescribeAclsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let answer = match self.acl_refusal(cx, Operation::Describe) {
            Some(refusal) => Err(refusal),
            None => filter_of(&req.filter)
                .map_err(|why| (ErrorCode::InvalidRequest, why))
                .and_then(|f| {
                    let all = acls::read_all(&self.zk).map_err(|e| {
                        (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"))
                    })?;
                    Ok(f.select(&all)
                        .into_iter()
                        .map(|(p, es)| -> DescribedResource {
                            let entries = es
                                .into_iter()
                                .map(|e| {
                                    let (op, perm) = (e.operation.code(), e.permission.code());
                                    (e.principal.clone(), e.host.clone(), op, perm)
                                })
                                .collect();
                            (
                                p.resource_type.code(),
                                p.name.clone(),
                                p.pattern.code(),
                                entries,
                            )
                        })
                        .collect())
                }),
        };
        let resp = match answer {
            Ok(resources) => DescribeAclsResponse {
                error_code: 0,
                error_message: None,
                resources,
            },
            Err((code, why)) => DescribeAclsResponse {
                error_code: code.code(),
                error_message: Some(why),
                resources: Vec::new(),
            },
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_create_acls(
        &self,
        req: &CreateAclsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let refusal = self.acl_refusal(cx, Operation::Alter);
        let results = req
            .creations
            .iter()
            .map(|b| {
                if let Some((code, why)) = &refusal {
                    return (code.code(), Some(why.clone()));
                }
                let (pattern, entry) = match binding_of(b) {
                    Ok(x) => x,
                    Err(why) => return (ErrorCode::InvalidRequest.code(), Some(why)),
                };
                let added = acls::update(&self.zk, &pattern, |entries| {
                    if !entries.contains(&entry) {
                        entries.push(entry.clone());
                    }
                });
                match added {
                    Ok(()) => {
                        log::info!(
                            "[Broker {}] ACL added: {pattern:?} {entry:?}",
                            self.broker_id
                        );
                        (0, None)
                    }
                    Err(e) => (
                        ErrorCode::UnknownServerError.code(),
                        Some(format!("ZooKeeper: {e:?}")),
                    ),
                }
            })
            .collect();
        self.reload_acls();
        cx.answer(out, &CreateAclsResponse { results });
        Action::Respond
    }

    pub(super) fn handle_delete_acls(
        &self,
        req: &DeleteAclsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let refusal = self.acl_refusal(cx, Operation::Alter);
        let results = req
            .filters
            .iter()
            .map(|f| {
                let outcome = match &refusal {
                    Some(r) => Err(r.clone()),
                    None => filter_of(f)
                        .map_err(|why| (ErrorCode::InvalidRequest, why))
                        .and_then(|f| self.delete_matching(&f)),
                };
                match outcome {
                    Ok(matching) => DeleteAclsFilterResult {
                        error_code: 0,
                        error_message: None,
                        matching,
                    },
                    Err((code, why)) => DeleteAclsFilterResult {
                        error_code: code.code(),
                        error_message: Some(why),
                        matching: Vec::new(),
                    },
                }
            })
            .collect();
        self.reload_acls();
        cx.answer(out, &DeleteAclsResponse { results });
        Action::Respond
    }

    /// Removes every binding `f` matches; the bindings removed.
    fn delete_matching(&self, f: &AclFilter) -> Result<Vec<AclBinding>, (ErrorCode, String)> {
        let zk_error = |e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"));
        let all = acls::read_all(&self.zk).map_err(zk_error)?;
        let mut removed = Vec::new();
        for (pattern, entries) in f.select(&all) {
            let gone: Vec<AclEntry> = entries.into_iter().cloned().collect();
            acls::update(&self.zk, pattern, |now| now.retain(|e| !gone.contains(e)))
                .map_err(zk_error)?;
            log::info!(
                "[Broker {}] ACLs removed from {pattern:?}: {gone:?}",
                self.broker_id
            );
            removed.extend(gone.iter().map(|e| wire_binding(pattern, e)));
        }
        Ok(removed)
    }
}
