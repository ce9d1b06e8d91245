//! Transactions through a clean (Kafka's `CleanedTransactionMetadata`, with one difference
//! said below). Reading the log in offset order with the aborted transactions its `.txnindex`
//! files list, the cleaner knows at each batch whether its producer is inside an aborted
//! transaction:
//!
//! - an aborted transaction's records are removed, and never enter the offset map (an
//!   aborted value must not shadow an earlier committed one of its key);
//! - a marker stays while any batch of its transaction is left in the log (read back without
//!   it, the batches would look like an open transaction), then like a tombstone until its
//!   delete horizon (`delete.retention.ms` after the first clean that kept it), so that a
//!   consumer that read the batches also reads how they ended.
//!
//! Kafka asks whether a batch of the transaction was *read* in the same group of segments; here
//! it is whether one was *kept* anywhere before the marker in the same clean, which reads the
//! log from its start: a committed transaction whose batches lie in an earlier group than its
//! marker keeps its marker as long as they are there.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::log::txn_index::AbortedTxn;

/// The transactions' state at the clean's read position.
#[derive(Debug, Default)]
pub struct CleanedTxns {
    /// Aborted transactions not yet begun at the read position, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Producers inside an aborted transaction at the read position.
    aborting: HashMap<i64, AbortedTxn>,
    /// Producers with a batch of their current transaction kept by this clean.
    kept: HashSet<i64>,
    /// Index entries of the ABORT markers kept since the last `take_index`.
    index: Vec<AbortedTxn>,
}

impl CleanedTxns {
    /// For a read of the log from its start, with the aborted transactions of that range.
    pub fn new(mut aborted: Vec<AbortedTxn>) -> CleanedTxns {
        aborted.sort_by_key(|a| a.first_offset);
        CleanedTxns {
            pending: aborted.into(),
            ..Default::default()
        }
    }

    fn begin_up_to(&mut self, offset: i64) {
        while let Some(a) = self.pending.front().filter(|a| a.first_offset <= offset) {
            self.aborting.insert(a.producer_id, *a);
            self.pending.pop_front();
        }
    }

    /// Whether the data batch ending at `last_offset` belongs to an aborted transaction.
    pub fn is_aborted(&mut self, producer_id: i64, transactional: bool, last_offset: i64) -> bool {
        self.begin_up_to(last_offset);
        transactional && self.aborting.contains_key(&producer_id)
    }

    /// A transactional batch of `producer_id` stays in the log (records, or empty).
    pub fn kept_batch(&mut self, producer_id: i64) {
        self.kept.insert(producer_id);
    }

    /// The marker at `offset` ending `producer_id`'s transaction: whether it may go once its
    /// delete horizon has passed (no batch of the transaction is left). A kept ABORT marker's
    /// index entry goes to the new segment's index.
    pub fn marker_removable(&mut self, producer_id: i64, commit: bool, offset: i64) -> bool {
        self.begin_up_to(offset);
        let aborted = self.aborting.remove(&producer_id);
        let batches_left = self.kept.remove(&producer_id);
        if batches_left
            && !commit
            && let Some(entry) = aborted
        {
            self.index.push(entry);
        }
        !batches_left
    }

    /// The index entries of the ABORT markers kept since the last call.
    pub fn take_index(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::log::txn_index::aborted_for_test as aborted;

    #[test]
    fn aborted_batches_go_and_markers_stay_while_their_batches_do() {
        // Producer 1 aborts [0, 4] at 4; producer 2 commits [1, 5] at 5; producer 1 aborts
        // again from 6 to its marker at 8.
        let mut t = CleanedTxns::new(vec![aborted(1, 6, 8), aborted(1, 0, 4)]);
        assert!(t.is_aborted(1, true, 0));
        assert!(!t.is_aborted(2, true, 1), "a committed transaction");
        t.kept_batch(2);
        assert!(!t.is_aborted(1, false, 2), "not a transactional batch");
        // Producer 1's aborted batch at 3 was its last: kept empty.
        assert!(t.is_aborted(1, true, 3));
        t.kept_batch(1);
        assert!(!t.marker_removable(1, false, 4), "its batch is left");
        assert_eq!(t.take_index(), vec![aborted(1, 0, 4)]);
        assert!(!t.marker_removable(2, true, 5));
        assert!(t.is_aborted(1, true, 6));
        assert!(t.marker_removable(1, false, 8), "nothing of it was kept");
        assert!(t.take_index().is_empty());
        // A marker for a transaction that wrote nothing here.
        assert!(t.marker_removable(3, true, 9));
    }
}
