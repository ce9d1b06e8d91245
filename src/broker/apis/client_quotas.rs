//! DescribeClientQuotas (48) and AlterClientQuotas (49): the quotas of users, client ids and
//! addresses as stored in ZooKeeper (`zk::client_quotas`). Any broker answers: a change is
//! written to the entity's node and announced, and every broker applies it from the notice.

use crate::security::acl::Operation;
use std::collections::BTreeMap;

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::client_quotas::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, EntityParts, MATCH_ANY, MATCH_DEFAULT, MATCH_EXACT,
    QuotaFilterComponent, QuotaOp,
};
use crate::zk::client_quotas::{self, QuotaEntity};

impl KafkaApis {
    pub(super) fn handle_describe_client_quotas(
        &self,
        req: &DescribeClientQuotasRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let answer = match check_filter(&req.components) {
            _ if !self.cluster_allowed(cx, Operation::DescribeConfigs) => Err((
                ErrorCode::ClusterAuthorizationFailed,
                "not authorized to describe client quotas".to_owned(),
            )),
            Err(why) => Err((ErrorCode::InvalidRequest, why)),
            Ok(()) => client_quotas::read_all(&self.zk)
                .map_err(|e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"))),
        };
        let resp = match answer {
            Ok(all) => DescribeClientQuotasResponse {
                error_code: 0,
                error_message: None,
                entries: Some(
                    all.into_iter()
                        .filter(|(e, _)| matches(e, &req.components, req.strict))
                        .map(|(e, q)| {
                            let keys = e.keys();
                            let values = q.into_iter().filter(|(k, _)| keys.contains(&k.as_str()));
                            (e.parts(), values.collect())
                        })
                        .collect(),
                ),
            },
            Err((code, why)) => DescribeClientQuotasResponse {
                error_code: code.code(),
                error_message: Some(why),
                entries: None,
            },
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    pub(super) fn handle_alter_client_quotas(
        &self,
        req: &AlterClientQuotasRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let may_alter = self.cluster_allowed(cx, Operation::AlterConfigs);
        let entries = req
            .entries
            .iter()
            .map(|(parts, ops)| {
                let altered = if may_alter {
                    self.alter_entity(parts, ops, req.validate_only)
                } else {
                    Err((
                        ErrorCode::ClusterAuthorizationFailed,
                        "not authorized to alter client quotas".to_owned(),
                    ))
                };
                let (code, why) = match altered {
                    Ok(()) => (0, None),
                    Err((code, why)) => (code.code(), Some(why)),
                };
                (code, why, parts.clone())
            })
            .collect();
        cx.answer(out, &AlterClientQuotasResponse { entries });
        Action::Respond
    }

    /// Checks one entry whole, then (unless `validate_only`) writes the entity's new quotas and
    /// announces them.
    fn alter_entity(
        &self,
        parts: &EntityParts,
        ops: &[QuotaOp],
        validate_only: bool,
    ) -> Result<(), (ErrorCode, String)> {
        let invalid = |why: String| (ErrorCode::InvalidRequest, why);
        let entity = QuotaEntity::from_parts(parts).map_err(invalid)?;
        for op in ops {
            check_op(&entity, op).map_err(invalid)?;
        }
        if validate_only {
            return Ok(());
        }
        let zk_error = |e| (ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}"));
        let mut quotas: BTreeMap<String, f64> =
            client_quotas::read(&self.zk, &entity).map_err(zk_error)?;
        for op in ops {
            if op.remove {
                quotas.remove(&op.key);
            } else {
                quotas.insert(op.key.clone(), op.value);
            }
        }
        client_quotas::write(&self.zk, &entity, &quotas).map_err(zk_error)?;
        log::info!(
            "[Broker {}] quotas of {} are now {quotas:?}",
            self.broker_id,
            entity.entity_path()
        );
        Ok(())
    }
}

/// A key the entity's kind takes, and a value Kafka's `QuotaConfig` would accept: positive,
/// and whole for the byte and connection rates (Kafka's LONG and INT keys).
fn check_op(entity: &QuotaEntity, op: &QuotaOp) -> Result<(), String> {
    let keys = entity.keys();
    if !keys.contains(&op.key.as_str()) {
        return Err(format!(
            "`{}` is not a quota of this entity (its keys: {})",
            op.key,
            keys.join(", ")
        ));
    }
    if op.remove {
        return Ok(());
    }
    let v = op.value;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("`{}` must be positive, got {v}", op.key));
    }
    let whole = matches!(
        op.key.as_str(),
        "producer_byte_rate" | "consumer_byte_rate" | "connection_creation_rate"
    );
    if whole && v.fract() != 0.0 {
        return Err(format!("`{}` must be a whole number, got {v}", op.key));
    }
    Ok(())
}

/// Known entity types, each once, and ip never beside a user or client id.
fn check_filter(components: &[QuotaFilterComponent]) -> Result<(), String> {
    let mut seen = Vec::new();
    for c in components {
        if !matches!(c.entity_type.as_str(), "user" | "client-id" | "ip") {
            return Err(format!("unknown quota entity type `{}`", c.entity_type));
        }
        if seen.contains(&c.entity_type.as_str()) {
            return Err(format!("entity type `{}` given twice", c.entity_type));
        }
        if !matches!(c.match_type, MATCH_EXACT | MATCH_DEFAULT | MATCH_ANY) {
            return Err(format!("unknown match type {}", c.match_type));
        }
        if c.match_type == MATCH_EXACT && c.name.is_none() {
            return Err("an exact match needs a name".into());
        }
        seen.push(&c.entity_type);
    }
    if seen.contains(&"ip") && seen.len() > 1 {
        return Err("an ip filter cannot be combined with a user or a client id".into());
    }
    Ok(())
}

/// Whether `e` passes the filter: each component matches its type's name (exactly, the
/// default, or any), and with `strict` the entity has no other types.
fn matches(e: &QuotaEntity, components: &[QuotaFilterComponent], strict: bool) -> bool {
    let parts = e.parts();
    let each = components.iter().all(|c| {
        let Some((_, name)) = parts.iter().find(|(k, _)| *k == c.entity_type) else {
            return false;
        };
        match c.match_type {
            MATCH_EXACT => name == &c.name,
            MATCH_DEFAULT => name.is_none(),
            _ => true,
        }
    });
    each && (!strict || parts.len() == components.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(kind: &str, match_type: i8, name: Option<&str>) -> QuotaFilterComponent {
        QuotaFilterComponent {
            entity_type: kind.into(),
            match_type,
            name: name.map(str::to_owned),
        }
    }

    #[test]
    fn filters_match_as_kafkas_do() {
        let e = QuotaEntity {
            user: Some(Some("alice".into())),
            client_id: Some(None),
            ip: None,
        };
        assert!(matches(&e, &[], false));
        assert!(!matches(&e, &[], true));
        let alice = component("user", MATCH_EXACT, Some("alice"));
        assert!(matches(&e, std::slice::from_ref(&alice), false));
        assert!(!matches(&e, std::slice::from_ref(&alice), true));
        let default_client = component("client-id", MATCH_DEFAULT, None);
        assert!(matches(&e, &[alice.clone(), default_client], true));
        assert!(!matches(
            &e,
            &[component("client-id", MATCH_EXACT, Some("x"))],
            false
        ));
        assert!(check_filter(&[alice.clone(), alice]).is_err());
        assert!(
            check_filter(&[
                component("ip", MATCH_ANY, None),
                component("user", MATCH_ANY, None)
            ])
            .is_err()
        );
    }

    #[test]
    fn values_are_checked_by_key() {
        let client = QuotaEntity {
            client_id: Some(Some("c".into())),
            ..Default::default()
        };
        let op = |key: &str, value: f64| QuotaOp {
            key: key.into(),
            value,
            remove: false,
        };
        assert!(check_op(&client, &op("producer_byte_rate", 1024.0)).is_ok());
        assert!(
            check_op(&client, &op("producer_byte_rate", 0.5))
                .unwrap_err()
                .contains("whole")
        );
        assert!(check_op(&client, &op("request_percentage", 0.5)).is_ok());
        assert!(
            check_op(&client, &op("request_percentage", -1.0))
                .unwrap_err()
                .contains("positive")
        );
        let err = check_op(&client, &op("connection_creation_rate", 5.0)).unwrap_err();
        assert!(err.contains("connection_creation_rate"), "{err}");
    }
}
