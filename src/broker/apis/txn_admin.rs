//! DescribeTransactions (65) and ListTransactions (66), as `kafka-transactions.sh describe`
//! and `list` ask them: the transactional ids this broker coordinates, each needing Describe
//! on the TransactionalId (ListTransactions leaves out those the principal may not see).

use std::collections::BTreeMap;

use regex::Regex;

use super::{KafkaApis, RequestContext};
use crate::broker::txn_coordinator::admin::STATES;
use crate::broker::txn_coordinator::state::{TxnMetadata, TxnState};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::txn_admin::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, DescribedTransaction,
    ListTransactionsRequest, ListTransactionsResponse,
};
use crate::security::acl::{Operation, ResourceType};

impl KafkaApis {
    pub(super) fn handle_describe_transactions(
        &self,
        req: &DescribeTransactionsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let states = req
            .transactional_ids
            .iter()
            .map(|id| {
                let found =
                    if self.allowed(cx, Operation::Describe, ResourceType::TransactionalId, id) {
                        self.txn_coordinator.describe(id)
                    } else {
                        Err(ErrorCode::TransactionalIdAuthorizationFailed)
                    };
                described(id, found)
            })
            .collect();
        cx.answer(out, &DescribeTransactionsResponse { states });
        Action::Respond
    }

    pub(super) fn handle_list_transactions(
        &self,
        req: &ListTransactionsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let pattern = match id_pattern(req.transactional_id_pattern.as_deref()) {
            Ok(p) => p,
            Err(e) => {
                log::info!(
                    "[Broker {}] ListTransactions: pattern {:?} refused: {e}",
                    self.broker_id,
                    req.transactional_id_pattern
                );
                let refused = ListTransactionsResponse {
                    error_code: ErrorCode::InvalidRegularExpression.code(),
                    unknown_state_filters: Vec::new(),
                    states: Vec::new(),
                };
                cx.answer(out, &refused);
                return Action::Respond;
            }
        };
        let (known, unknown): (Vec<&String>, Vec<&String>) = req
            .state_filters
            .iter()
            .partition(|f| STATES.iter().any(|s| s.name() == f.as_str()));
        let keep = |id: &str, m: &TxnMetadata| {
            (req.state_filters.is_empty() || known.iter().any(|f| f.as_str() == m.state.name()))
                && (req.producer_id_filters.is_empty()
                    || req.producer_id_filters.contains(&m.producer_id))
                && pattern.as_ref().is_none_or(|p| p.is_match(id))
                && self.allowed(cx, Operation::Describe, ResourceType::TransactionalId, id)
        };
        // Only unknown filters: nothing can match.
        let states = if !req.state_filters.is_empty() && known.is_empty() {
            Vec::new()
        } else {
            self.txn_coordinator
                .list(req.duration_filter_ms, keep)
                .into_iter()
                .map(|(id, m)| (id, m.producer_id, m.state.name().to_owned()))
                .collect()
        };
        cx.answer(
            out,
            &ListTransactionsResponse {
                error_code: 0,
                unknown_state_filters: unknown.into_iter().cloned().collect(),
                states,
            },
        );
        Action::Respond
    }
}

/// ListTransactions v2's pattern as Kafka applies it (RE2 syntax, matching the whole id); none
/// when absent or empty.
fn id_pattern(pattern: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match pattern {
        None | Some("") => Ok(None),
        // Checked alone first: a pattern unbalanced on its own could balance inside the anchors.
        Some(p) => Regex::new(p).and_then(|_| Regex::new(&format!("^(?:{p})$")).map(Some)),
    }
}

fn described(id: &str, found: Result<TxnMetadata, ErrorCode>) -> DescribedTransaction {
    match found {
        Ok(m) => {
            let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in m.data_partitions() {
                topics.entry(t.clone()).or_default().push(*p);
            }
            DescribedTransaction {
                error_code: 0,
                transactional_id: id.to_owned(),
                state: m.state.name().to_owned(),
                timeout_ms: m.timeout_ms,
                start_time_ms: if m.state == TxnState::Empty {
                    -1
                } else {
                    m.start_ms
                },
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                topics: topics.into_iter().collect(),
            }
        }
        Err(e) => DescribedTransaction {
            error_code: e.code(),
            transactional_id: id.to_owned(),
            state: String::new(),
            timeout_ms: 0,
            start_time_ms: -1,
            producer_id: -1,
            producer_epoch: -1,
            topics: Vec::new(),
        },
    }
}
