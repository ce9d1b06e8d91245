//! A topic's settings that override the broker's for one partition log: `segment.bytes`,
//! `retention.ms`, `retention.bytes` and `file.delete.delay.ms` from `/config/topics/[topic]`. Changed live (a
//! configuration change reaches every broker holding the topic) while appends and the
//! retention pass read them, so each is an atomic with a value meaning "not set".

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

const UNSET: i64 = i64::MIN;

pub struct LogOverrides {
    /// 0: the broker's `log.segment.bytes`.
    segment_bytes: AtomicU64,
    /// UNSET: the broker's; -1: unlimited; else milliseconds / bytes.
    retention_ms: AtomicI64,
    retention_bytes: AtomicI64,
    /// UNSET: the broker's; else milliseconds.
    file_delete_delay_ms: AtomicI64,
}

impl Default for LogOverrides {
    fn default() -> Self {
        LogOverrides {
            segment_bytes: AtomicU64::new(0),
            retention_ms: AtomicI64::new(UNSET),
            retention_bytes: AtomicI64::new(UNSET),
            file_delete_delay_ms: AtomicI64::new(UNSET),
        }
    }
}

/// Kafka's "-1 is unlimited" for a retention value.
fn limit(v: i64) -> Option<u64> {
    (v >= 0).then_some(v as u64)
}

impl LogOverrides {
    /// Sets them all at once; `None` returns each to the broker's value.
    pub fn set(
        &self,
        segment_bytes: Option<u64>,
        retention_ms: Option<i64>,
        retention_bytes: Option<i64>,
        file_delete_delay_ms: Option<i64>,
    ) {
        self.file_delete_delay_ms
            .store(file_delete_delay_ms.unwrap_or(UNSET), Ordering::Release);
        self.segment_bytes
            .store(segment_bytes.unwrap_or(0), Ordering::Release);
        self.retention_ms
            .store(retention_ms.unwrap_or(UNSET), Ordering::Release);
        self.retention_bytes
            .store(retention_bytes.unwrap_or(UNSET), Ordering::Release);
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
        o.set(Some(50), Some(-1), Some(1000), Some(5));
        assert_eq!(o.segment_bytes(100), 50);
        assert_eq!(o.retention(day), None);
        assert_eq!(o.retention_bytes(None), Some(1000));
        let minute = Duration::from_secs(60);
        assert_eq!(o.file_delete_delay(minute), Duration::from_millis(5));
        o.set(None, None, None, None);
        assert_eq!(
            (o.retention(day), o.retention_bytes(Some(7))),
            (day, Some(7))
        );
    }
}
