//! The transaction coordinator's keys (`transaction.*`, `transaction.state.log.*`,
//! `transactional.id.expiration.ms`), in Kafka's names and with Kafka's defaults.

use std::time::Duration;

use super::ConfigError;
use super::props::Props;

/// The topic holding the coordinators' state (`doc/transactions.md`).
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`.
    pub state_log_partitions: i32,
    /// `transaction.state.log.replication.factor`.
    pub state_log_replication_factor: i32,
    /// `transaction.state.log.min.isr`.
    pub state_log_min_isr: i32,
    /// `transaction.state.log.segment.bytes`.
    pub state_log_segment_bytes: i32,
    /// `transaction.max.timeout.ms`.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`.
    pub id_expiration: Duration,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_timed_out_interval: Duration,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub remove_expired_interval: Duration,
}

impl Default for TxnConfig {
    /// Kafka's defaults.
    fn default() -> Self {
        read(&mut Props::new(Default::default()).expect("no keys")).expect("defaults are valid")
    }
}

pub(super) fn read(p: &mut Props) -> Result<TxnConfig, ConfigError> {
    Ok(TxnConfig {
        state_log_partitions: p.get("transaction.state.log.num.partitions")?,
        state_log_replication_factor: p.get("transaction.state.log.replication.factor")?,
        state_log_min_isr: p.get("transaction.state.log.min.isr")?,
        state_log_segment_bytes: p.get("transaction.state.log.segment.bytes")?,
        max_timeout_ms: p.get("transaction.max.timeout.ms")?,
        id_expiration: p.millis("transactional.id.expiration.ms")?,
        abort_timed_out_interval: p
            .millis("transaction.abort.timed.out.transaction.cleanup.interval.ms")?,
        remove_expired_interval: p
            .millis("transaction.remove.expired.transaction.cleanup.interval.ms")?,
    })
}
