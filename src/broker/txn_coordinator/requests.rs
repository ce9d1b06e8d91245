//! The coordinator's side of each client request (Kafka's `TransactionCoordinator.handle*`):
//! InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn; and
//! the two steps of ending a transaction, `end` (the decision, Prepare*) and `complete` (the
//! markers, then Complete*).

use std::time::Duration;

use super::markers::PATIENCE_IN_REQUEST;
use super::state::{TxnMetadata, TxnState, group_entry};
use super::{Owned, TransactionCoordinator, now_ms};
use crate::protocol::ErrorCode;

impl TransactionCoordinator {
    /// InitProducerId with a transactional id: a new id gets a producer id at epoch 0; a known
    /// one the next epoch, which fences its previous producer — whose open transaction is
    /// aborted first. `expected` is the (id, epoch) a KIP-360 producer says it holds.
    pub fn init_producer_id(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ErrorCode> {
        if timeout_ms <= 0 || timeout_ms > self.cfg.max_timeout_ms {
            return Err(ErrorCode::InvalidTransactionTimeout);
        }
        let (owned, slot) = self.slot(transactional_id)?;
        let mut g = slot.lock();
        let now = now_ms();
        let current = match g.clone() {
            None => {
                let producer_id = self.new_producer_id()?;
                let m = TxnMetadata {
                    producer_id,
                    producer_epoch: 0,
                    timeout_ms,
                    state: TxnState::Empty,
                    partitions: Default::default(),
                    last_update_ms: now,
                    start_ms: -1,
                };
                self.write_state(&owned, transactional_id, Some(&m))?;
                *g = Some(m);
                return Ok((producer_id, 0));
            }
            Some(m) => m,
        };
        if let Some((id, epoch)) = expected
            && (id != current.producer_id
                || (epoch != current.producer_epoch && epoch != current.producer_epoch - 1))
        {
            return Err(ErrorCode::ProducerFenced);
        }
        let current = match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                // Decided, markers not all written: finish first (the lock is ours); while a
                // partition has no leader, the producer is told to come back.
                let done = self.complete_in_request(&owned, transactional_id, current)?;
                *g = Some(done.clone());
                done
            }
            TxnState::Ongoing => {
                // The previous producer's transaction is aborted under a bumped epoch, which
                // its next request meets as PRODUCER_FENCED.
                let fenced = TxnMetadata {
                    producer_epoch: current.producer_epoch.saturating_add(1),
                    ..current
                };
                let done = self.end(&owned, transactional_id, fenced, false)?;
                *g = Some(done.clone());
                done
            }
            _ => current,
        };
        // The next epoch; at the last one, a new producer id (Kafka's rule).
        let (producer_id, producer_epoch) = if current.producer_epoch >= i16::MAX - 1 {
            (self.new_producer_id()?, 0)
        } else {
            (current.producer_id, current.producer_epoch + 1)
        };
        let m = TxnMetadata {
            producer_id,
            producer_epoch,
            timeout_ms,
            state: TxnState::Empty,
            partitions: Default::default(),
            last_update_ms: now,
            start_ms: -1,
        };
        self.write_state(&owned, transactional_id, Some(&m))?;
        *g = Some(m);
        Ok((producer_id, producer_epoch))
    }

    fn new_producer_id(&self) -> Result<i64, ErrorCode> {
        self.producer_ids.next_id().map_err(|e| {
            log::warn!(
                "[TransactionCoordinator {}] cannot reserve producer ids: {e:?}",
                self.broker_id
            );
            ErrorCode::CoordinatorNotAvailable
        })
    }

    /// AddPartitionsToTxn: the transaction is open (Ongoing) from its first partition on.
    pub fn add_partitions(
        &self,
        transactional_id: &str,
        producer: (i64, i16),
        partitions: &[(String, i32)],
    ) -> Result<(), ErrorCode> {
        self.add_entries(transactional_id, producer, partitions)
    }

    /// AddOffsetsToTxn: the transaction will commit offsets of `group`.
    pub fn add_offsets(
        &self,
        transactional_id: &str,
        producer: (i64, i16),
        group: &str,
    ) -> Result<(), ErrorCode> {
        self.add_entries(transactional_id, producer, &[group_entry(group)])
    }

    fn add_entries(
        &self,
        transactional_id: &str,
        (producer_id, producer_epoch): (i64, i16),
        entries: &[(String, i32)],
    ) -> Result<(), ErrorCode> {
        let (owned, slot) = self.slot(transactional_id)?;
        let mut g = slot.lock();
        let m = check_producer(g.as_ref(), producer_id, producer_epoch)?;
        if m.state.is_preparing() {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        let open = m.state == TxnState::Ongoing;
        if open && entries.iter().all(|e| m.partitions.contains(e)) {
            return Ok(());
        }
        let now = now_ms();
        let mut next = m.clone();
        if !open {
            next.partitions.clear();
            next.start_ms = now;
        }
        next.state = TxnState::Ongoing;
        next.partitions.extend(entries.iter().cloned());
        next.last_update_ms = now;
        self.write_state(&owned, transactional_id, Some(&next))?;
        *g = Some(next);
        Ok(())
    }

    /// EndTxn: commit or abort the open transaction. Answered once the decision is durable;
    /// the markers are written before that too when they can be, else by `tick`.
    pub fn end_txn(
        &self,
        transactional_id: &str,
        (producer_id, producer_epoch): (i64, i16),
        commit: bool,
    ) -> Result<(), ErrorCode> {
        let (owned, slot) = self.slot(transactional_id)?;
        let mut g = slot.lock();
        let m = check_producer(g.as_ref(), producer_id, producer_epoch)?.clone();
        let wanted = if commit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        match m.state {
            TxnState::Ongoing => {
                let done = self.end(&owned, transactional_id, m, commit)?;
                *g = Some(done);
                Ok(())
            }
            // A retry of an EndTxn already carried out.
            s if s == wanted => Ok(()),
            // The opposite of what was decided.
            TxnState::PrepareCommit | TxnState::PrepareAbort
                if (m.state == TxnState::PrepareCommit) != commit =>
            {
                Err(ErrorCode::InvalidTxnState)
            }
            // A retry of an EndTxn decided, its markers not all written: Kafka's answer is
            // CONCURRENT_TRANSACTIONS until they are.
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                let done = self.complete_in_request(&owned, transactional_id, m)?;
                *g = Some(done);
                Ok(())
            }
            _ => Err(ErrorCode::InvalidTxnState),
        }
    }

    /// Writes the decision (Prepare*), then completes; a transaction whose markers cannot all
    /// be written yet stays decided, for `tick` to complete.
    pub(super) fn end(
        &self,
        owned: &Owned,
        transactional_id: &str,
        m: TxnMetadata,
        commit: bool,
    ) -> Result<TxnMetadata, ErrorCode> {
        let prepared = TxnMetadata {
            state: if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            },
            last_update_ms: now_ms(),
            ..m
        };
        self.write_state(owned, transactional_id, Some(&prepared))?;
        match self.complete(
            owned,
            transactional_id,
            prepared.clone(),
            PATIENCE_IN_REQUEST,
        ) {
            Ok(done) => Ok(done),
            Err(e) => {
                log::warn!(
                    "[TransactionCoordinator {}] transaction of {transactional_id} decided, its markers not all written yet ({e:?}): will retry",
                    self.broker_id
                );
                Ok(prepared)
            }
        }
    }

    /// `complete` on behalf of a request that met a decided transaction: markers that cannot
    /// all be written within the request's patience answer CONCURRENT_TRANSACTIONS (the
    /// client comes back); any other refusal (NOT_COORDINATOR, …) is the client's to act on.
    fn complete_in_request(
        &self,
        owned: &Owned,
        transactional_id: &str,
        prepared: TxnMetadata,
    ) -> Result<TxnMetadata, ErrorCode> {
        self.complete(owned, transactional_id, prepared, PATIENCE_IN_REQUEST)
            .map_err(|e| match e {
                ErrorCode::RequestTimedOut => ErrorCode::ConcurrentTransactions,
                other => other,
            })
    }

    /// Has the markers of a decided transaction written (and its groups' offsets applied or
    /// dropped), trying for `patience`, then records it complete.
    pub(super) fn complete(
        &self,
        owned: &Owned,
        transactional_id: &str,
        prepared: TxnMetadata,
        patience: Duration,
    ) -> Result<TxnMetadata, ErrorCode> {
        let commit = prepared.state == TxnState::PrepareCommit;
        self.write_markers(owned, &prepared, commit, patience)?;
        let done = TxnMetadata {
            state: if commit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            },
            partitions: Default::default(),
            last_update_ms: now_ms(),
            ..prepared
        };
        self.write_state(owned, transactional_id, Some(&done))?;
        Ok(done)
    }
}

/// The state a request of `producer_id` at `producer_epoch` may act on.
fn check_producer(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    producer_epoch: i16,
) -> Result<&TxnMetadata, ErrorCode> {
    let m = m.ok_or(ErrorCode::InvalidProducerIdMapping)?;
    if m.producer_id != producer_id {
        return Err(ErrorCode::InvalidProducerIdMapping);
    }
    if m.producer_epoch != producer_epoch {
        return Err(ErrorCode::ProducerFenced);
    }
    Ok(m)
}
