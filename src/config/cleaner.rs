//! The log cleaner's keys (`log.cleaner.*`), the cleanup policy and the time a segment may
//! stay active (`log.roll.*`): the broker's defaults, which a topic's own keys override
//! (`cleanup.policy`, `min.cleanable.dirty.ratio`, `delete.retention.ms`,
//! `min.compaction.lag.ms`, `max.compaction.lag.ms`, `segment.ms`).

use std::time::Duration;

use super::ConfigError;
use super::props::Props;

/// `cleanup.policy`: what becomes of old segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Retention deletes whole old segments.
    pub delete: bool,
    /// The cleaner keeps each key's latest record.
    pub compact: bool,
}

impl CleanupPolicy {
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };

    /// From a checked value: `delete`, `compact`, or both, comma-separated.
    pub fn parse(v: &str) -> CleanupPolicy {
        let has = |p: &str| v.split(',').any(|x| x.trim() == p);
        CleanupPolicy {
            delete: has("delete"),
            compact: has("compact"),
        }
    }
}

/// The broker's cleaner settings.
#[derive(Debug, Clone)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`.
    pub enable: bool,
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`: the offset maps' memory, shared by the threads.
    pub dedupe_buffer_size: usize,
    /// `log.cleaner.io.buffer.size`: bytes read at a time.
    pub io_buffer_size: usize,
    /// `log.cleaner.io.max.bytes.per.second`: read and written, over all threads.
    pub io_max_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms`: the wait when no log needs cleaning.
    pub backoff: Duration,
    /// The defaults of the topic keys.
    pub policy: CleanupPolicy,
    pub min_cleanable_ratio: f64,
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
}

impl CleanerConfig {
    /// Whether `other` runs the same cleaner threads: count, memory, buffer, rate and backoff
    /// (the per-log defaults aside, which the threads read as they go).
    pub fn same_threads_as(&self, other: &CleanerConfig) -> bool {
        (
            self.enable,
            self.threads,
            self.dedupe_buffer_size,
            self.io_buffer_size,
        ) == (
            other.enable,
            other.threads,
            other.dedupe_buffer_size,
            other.io_buffer_size,
        ) && self.io_max_bytes_per_second == other.io_max_bytes_per_second
            && self.backoff == other.backoff
    }
}

impl Default for CleanerConfig {
    /// Kafka's defaults.
    fn default() -> Self {
        read(&mut Props::new(Default::default()).expect("no keys")).expect("defaults are valid")
    }
}

/// Reads the cleaner's keys.
pub(super) fn read(p: &mut Props) -> Result<CleanerConfig, ConfigError> {
    let policy: String = p.get("log.cleanup.policy")?;
    Ok(CleanerConfig {
        enable: p.get("log.cleaner.enable")?,
        threads: p.get("log.cleaner.threads")?,
        dedupe_buffer_size: p.get::<u64>("log.cleaner.dedupe.buffer.size")? as usize,
        io_buffer_size: p.get("log.cleaner.io.buffer.size")?,
        io_max_bytes_per_second: p.get("log.cleaner.io.max.bytes.per.second")?,
        backoff: p.millis("log.cleaner.backoff.ms")?,
        policy: CleanupPolicy::parse(&policy),
        min_cleanable_ratio: p.get("log.cleaner.min.cleanable.ratio")?,
        delete_retention_ms: p.get("log.cleaner.delete.retention.ms")?,
        min_compaction_lag_ms: p.get("log.cleaner.min.compaction.lag.ms")?,
        max_compaction_lag_ms: p.get("log.cleaner.max.compaction.lag.ms")?,
    })
}

/// `log.roll.ms`, else `log.roll.hours` (Kafka's precedence): how long a segment stays the
/// active one before it is rolled even when not full.
pub(super) fn read_roll(p: &mut Props) -> Result<Duration, ConfigError> {
    let hours: u64 = p.get("log.roll.hours")?;
    let ms = match p.take("log.roll.ms")? {
        Some(ms) => ms.parse().expect("checked as a long"),
        None => hours.saturating_mul(3_600_000),
    };
    p.derived("log.roll.ms", ms.to_string());
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_defaults_are_kafkas() {
        assert_eq!(CleanupPolicy::parse("delete"), CleanupPolicy::DELETE);
        let both = CleanupPolicy::parse("compact, delete");
        assert!(both.compact && both.delete);
        let c = CleanerConfig::default();
        assert_eq!(c.dedupe_buffer_size, 128 << 20);
        assert_eq!(
            (c.min_cleanable_ratio, c.delete_retention_ms),
            (0.5, 86_400_000)
        );
        let mut p = Props::of(&[("log.roll.hours", "2")]);
        assert_eq!(read_roll(&mut p).unwrap(), Duration::from_secs(7200));
    }
}
