//! What operators ask of the coordinator (DescribeTransactions, ListTransactions): its view
//! of the transactional ids it coordinates, read without changing anything.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::state::{TxnMetadata, TxnState};
use super::{Owned, TransactionCoordinator, now_ms};
use crate::config::transactions::TRANSACTION_STATE_TOPIC;
use crate::protocol::ErrorCode;

/// The states a transactional id is kept in (`Dead` is not kept).
pub const STATES: [TxnState; 6] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
];

impl TransactionCoordinator {
    /// The state of a transactional id this broker coordinates.
    pub fn describe(&self, transactional_id: &str) -> Result<TxnMetadata, ErrorCode> {
        let owned = self.owned(self.partition_for(transactional_id))?;
        let slot = owned.txns.lock().get(transactional_id).cloned();
        let state = slot.and_then(|s| s.lock().clone());
        state.ok_or(ErrorCode::TransactionalIdNotFound)
    }

    /// Every transactional id of the partitions this broker leads, with its state, that
    /// `keep` admits; `duration_ms` (≥ 0) keeps only transactions open longer than that.
    pub fn list(
        &self,
        duration_ms: i64,
        keep: impl Fn(&str, &TxnMetadata) -> bool,
    ) -> Vec<(String, TxnMetadata)> {
        let partitions = self.metadata.partition_count(TRANSACTION_STATE_TOPIC) as i32;
        let led: Vec<Arc<Owned>> = (0..partitions).filter_map(|p| self.owned(p).ok()).collect();
        let now = now_ms();
        let mut out = Vec::new();
        for owned in led {
            for (id, slot) in owned.slots() {
                let Some(m) = slot.lock().clone() else {
                    continue;
                };
                let open_long = duration_ms < 0
                    || (m.state == TxnState::Ongoing && now - m.start_ms > duration_ms);
                if open_long && keep(&id, &m) {
                    out.push((id, m));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// How many transactional ids this broker coordinates in each state (the metrics), read
    /// from the partitions already loaded.
    pub fn count_by_state(&self) -> Vec<(&'static str, usize)> {
        let mut counts = [0usize; 7];
        for (_, _, s) in self.slots_of_owned() {
            if let Some(m) = s.lock().as_ref() {
                counts[m.state as usize] += 1;
            }
        }
        STATES
            .iter()
            .map(|s| (s.name(), counts[*s as usize]))
            .collect()
    }

    /// The longest load of a partition so far, in ms.
    pub fn load_time_max_ms(&self) -> u64 {
        self.load_time_max_ms.load(Ordering::Relaxed)
    }
}
