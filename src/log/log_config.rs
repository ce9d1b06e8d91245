//! The broker's settings for every log (`log.segment.bytes`, `log.roll.ms`,
//! `log.index.interval.bytes`, `log.flush.interval.messages`, `log.segment.delete.delay.ms`):
//! one copy shared by all the logs of a broker and changed in place when its dynamic
//! configuration changes (`LogManager::reconfigure`), so a new default reaches every log
//! without a topic override at once. Atomics, since appends read them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Per-log settings taken from the broker configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub index_interval_bytes: u32,
    pub flush_interval_messages: u64,
    /// `log.segment.delete.delay.ms`: how long a segment's files outlive its leaving the log.
    pub file_delete_delay: Duration,
    /// `log.roll.ms`: the longest a segment stays the active one.
    pub roll: Duration,
}

/// A `LogConfig` every log of a broker reads, changed in place.
#[derive(Debug)]
pub struct SharedLogConfig {
    segment_bytes: AtomicU64,
    index_interval_bytes: AtomicU32,
    flush_interval_messages: AtomicU64,
    file_delete_delay_ms: AtomicU64,
    roll_ms: AtomicU64,
}

impl From<LogConfig> for Arc<SharedLogConfig> {
    fn from(c: LogConfig) -> Self {
        let shared = SharedLogConfig {
            segment_bytes: AtomicU64::new(0),
            index_interval_bytes: AtomicU32::new(0),
            flush_interval_messages: AtomicU64::new(0),
            file_delete_delay_ms: AtomicU64::new(0),
            roll_ms: AtomicU64::new(0),
        };
        shared.set(&c);
        Arc::new(shared)
    }
}

impl SharedLogConfig {
    /// Every log reads `c` from its next use of each setting on.
    pub fn set(&self, c: &LogConfig) {
        let ms = |d: Duration| d.as_millis().min(u128::from(u64::MAX)) as u64;
        self.segment_bytes.store(c.segment_bytes, Ordering::Relaxed);
        self.index_interval_bytes
            .store(c.index_interval_bytes, Ordering::Relaxed);
        self.flush_interval_messages
            .store(c.flush_interval_messages, Ordering::Relaxed);
        self.file_delete_delay_ms
            .store(ms(c.file_delete_delay), Ordering::Relaxed);
        self.roll_ms.store(ms(c.roll), Ordering::Relaxed);
    }

    pub fn get(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes(),
            index_interval_bytes: self.index_interval_bytes(),
            flush_interval_messages: self.flush_interval_messages(),
            file_delete_delay: self.file_delete_delay(),
            roll: self.roll(),
        }
    }

    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes.load(Ordering::Relaxed)
    }

    pub fn index_interval_bytes(&self) -> u32 {
        self.index_interval_bytes.load(Ordering::Relaxed)
    }

    pub fn flush_interval_messages(&self) -> u64 {
        self.flush_interval_messages.load(Ordering::Relaxed)
    }

    pub fn file_delete_delay(&self) -> Duration {
        Duration::from_millis(self.file_delete_delay_ms.load(Ordering::Relaxed))
    }

    pub fn roll(&self) -> Duration {
        Duration::from_millis(self.roll_ms.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reaches_every_holder() {
        let c = LogConfig {
            segment_bytes: 1000,
            index_interval_bytes: 10,
            flush_interval_messages: u64::MAX,
            file_delete_delay: Duration::from_secs(60),
            roll: Duration::from_secs(3600),
        };
        let shared: Arc<SharedLogConfig> = c.clone().into();
        let other = shared.clone();
        assert_eq!(other.get(), c);
        shared.set(&LogConfig {
            segment_bytes: 2000,
            ..c.clone()
        });
        assert_eq!(other.segment_bytes(), 2000);
        assert_eq!(other.roll(), c.roll);
    }
}
