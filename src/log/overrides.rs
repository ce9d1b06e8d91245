//! A topic's settings that override the broker's for one partition log: `segment.bytes`,
//! `segment.ms`, `retention.ms`, `retention.bytes`, `file.delete.delay.ms` and the cleaner's
//! (`cleanup.policy`, `min.cleanable.dirty.ratio`, `delete.retention.ms`,
//! `min.compaction.lag.ms`, `max.compaction.lag.ms`) from `/config/topics/[topic]`. Changed
//! live (a configuration change reaches every broker holding the topic) while appends, the
//! retention pass and the cleaner read them: those every append reads are atomics with a value
//! meaning "not set", the others sit behind a lock only the maintenance threads take.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::RwLock;

use crate::config::{CleanerConfig, CleanupPolicy};

/// A topic's log settings; `None` where the topic sets nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicLogSettings {
    pub segment_bytes: Option<u64>,
    pub segment_ms: Option<i64>,
    pub retention_ms: Option<i64>,
    pub retention_bytes: Option<i64>,
    pub file_delete_delay_ms: Option<i64>,
    pub cleanup_policy: Option<CleanupPolicy>,
    pub min_cleanable_ratio: Option<f64>,
    pub delete_retention_ms: Option<i64>,
    pub min_compaction_lag_ms: Option<i64>,
    pub max_compaction_lag_ms: Option<i64>,
}

/// The cleaner's settings for one log: the topic's over the broker's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compaction {
    pub policy: CleanupPolicy,
    pub min_cleanable_ratio: f64,
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
}

const UNSET: i64 = i64::MIN;

pub struct LogOverrides {
    /// 0: the broker's `log.segment.bytes`.
    segment_bytes: AtomicU64,
    /// UNSET: the broker's; -1: unlimited; else milliseconds / bytes.
    retention_ms: AtomicI64,
    retention_bytes: AtomicI64,
    /// UNSET: the broker's; else milliseconds.
    file_delete_delay_ms: AtomicI64,
    /// UNSET: the broker's `log.roll.ms`; else milliseconds.
    segment_ms: AtomicI64,
    /// What the topic sets of the rest.
    topic: RwLock<TopicLogSettings>,
}

impl Default for LogOverrides {
    fn default() -> Self {
        LogOverrides {
            segment_bytes: AtomicU64::new(0),
            retention_ms: AtomicI64::new(UNSET),
            retention_bytes: AtomicI64::new(UNSET),
            file_delete_delay_ms: AtomicI64::new(UNSET),
            segment_ms: AtomicI64::new(UNSET),
            topic: RwLock::new(TopicLogSettings::default()),
        }
    }
}

/// Kafka's "-1 is unlimited" for a retention value.
fn limit(v: i64) -> Option<u64> {
    (v >= 0).then_some(v as u64)
}

impl LogOverrides {
    /// Sets them all at once; `None` returns each to the broker's value.
    pub fn set(&self, t: &TopicLogSettings) {
        let unset = |v: Option<i64>| v.unwrap_or(UNSET);
        self.file_delete_delay_ms
            .store(unset(t.file_delete_delay_ms), Ordering::Release);
        self.segment_bytes
            .store(t.segment_bytes.unwrap_or(0), Ordering::Release);
        self.segment_ms
            .store(unset(t.segment_ms), Ordering::Release);
        self.retention_ms
            .store(unset(t.retention_ms), Ordering::Release);
        self.retention_bytes
            .store(unset(t.retention_bytes), Ordering::Release);
        *self.topic.write() = t.clone();
    }

    /// `segment.ms`, or the broker's `log.roll.ms`.
    pub fn segment_ms(&self, broker: Duration) -> Duration {
        match self.segment_ms.load(Ordering::Acquire) {
            UNSET => broker,
            v => Duration::from_millis(v.max(1) as u64),
        }
    }

    /// The cleaner's settings: the topic's, else the broker's.
    pub fn compaction(&self, broker: &CleanerConfig) -> Compaction {
        let t = self.topic.read();
        Compaction {
            policy: t.cleanup_policy.unwrap_or(broker.policy),
            min_cleanable_ratio: t.min_cleanable_ratio.unwrap_or(broker.min_cleanable_ratio),
            delete_retention_ms: t.delete_retention_ms.unwrap_or(broker.delete_retention_ms),
            min_compaction_lag_ms: t
                .min_compaction_lag_ms
                .unwrap_or(broker.min_compaction_lag_ms),
            max_compaction_lag_ms: t
                .max_compaction_lag_ms
                .unwrap_or(broker.max_compaction_lag_ms),
        }
    }

    pub fn segment_bytes(&self, broker: u64) -> u64 {
        match self.segment_bytes.load(Ordering::Acquire) {
            0 => broker,
            n => n,
        }
    }

    pub fn retention(&self, broker: Option<Duration>) -> Option<Duration> {
        match self.retention_ms.load(Ordering::Acquire) {
            UNSET => broker,
            v => limit(v).map(Duration::from_millis),
        }
    }

    pub fn file_delete_delay(&self, broker: Duration) -> Duration {
        match self.file_delete_delay_ms.load(Ordering::Acquire) {
            UNSET => broker,
            v => Duration::from_millis(v.max(0) as u64),
        }
    }

    pub fn retention_bytes(&self, broker: Option<u64>) -> Option<u64> {
        match self.retention_bytes.load(Ordering::Acquire) {
            UNSET => broker,
            v => limit(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_values_fall_back_to_the_broker_and_minus_one_is_unlimited() {
        let o = LogOverrides::default();
        let day = Some(Duration::from_secs(86_400));
        assert_eq!((o.segment_bytes(100), o.retention(day)), (100, day));
        o.set(&TopicLogSettings {
            segment_bytes: Some(50),
            retention_ms: Some(-1),
            retention_bytes: Some(1000),
            file_delete_delay_ms: Some(5),
            cleanup_policy: Some(CleanupPolicy::parse("compact")),
            ..Default::default()
        });
        let broker = CleanerConfig::default();
        assert!(o.compaction(&broker).policy.compact);
        assert_eq!(o.compaction(&broker).delete_retention_ms, 86_400_000);
        assert_eq!(o.segment_bytes(100), 50);
        assert_eq!(o.retention(day), None);
        assert_eq!(o.retention_bytes(None), Some(1000));
        let minute = Duration::from_secs(60);
        assert_eq!(o.file_delete_delay(minute), Duration::from_millis(5));
        o.set(&TopicLogSettings::default());
        assert!(!o.compaction(&broker).policy.compact);
        assert_eq!(
            (o.retention(day), o.retention_bytes(Some(7))),
            (day, Some(7))
        );
    }
}
