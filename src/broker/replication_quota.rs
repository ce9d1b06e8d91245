//! Replication throttles (KIP-73, Kafka's `ReplicationQuotaManager`): one quota for what this
//! broker serves its throttled followers as leader, one for what it fetches for its throttled
//! replicas as follower. A throttled replica's bytes are recorded in a rate over the
//! replication quota windows; while the rate is above the bound, a leader answers a throttled
//! replica's partition with no records and a follower leaves its throttled partitions out of
//! its next fetch. Only replicas out of sync are ever held back (`Partition::leader_throttles`,
//! the follower's `caught_up`), so the ISR and what clients wait on are untouched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::client_quotas::sensor::{Sampled, Windows};
use crate::config::replication_throttle::UNTHROTTLED;

pub struct ReplicationQuota {
    /// Bytes a second; `UNTHROTTLED` holds nothing back.
    bound: AtomicU64,
    rate: Mutex<Sampled>,
    started: Instant,
    /// One window's length: no window takes more than its share of the rate.
    window: Duration,
    /// Throttled replicas' bytes, ever: the metric's counter.
    total: AtomicU64,
}

impl ReplicationQuota {
    pub fn new(bound: u64, (num, size): (usize, Duration)) -> ReplicationQuota {
        ReplicationQuota {
            bound: AtomicU64::new(bound),
            rate: Mutex::new(Sampled::new(Windows {
                num,
                size_ms: size.as_millis() as u64,
            })),
            started: Instant::now(),
            window: size,
            total: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The rate changed while the broker runs (`kafka-configs`, `kafka-reassign-partitions`).
    pub fn set_bound(&self, bytes_per_second: u64) {
        self.bound.store(bytes_per_second, Ordering::Relaxed);
    }

    /// Whether throttled replicas must wait: their rate over the windows is above the bound
    /// (Kafka's `isQuotaExceeded`), or the window under way holds a window's worth already.
    pub fn exceeded(&self) -> bool {
        !self.delay().is_zero()
    }

    /// How long until the rate is back to the bound (zero when it is not above it): how long
    /// a held replica waits, so it goes again as soon as the throttle allows and no later.
    ///
    /// The second bound is gregor's: the rate over the windows alone lets a throttled replica
    /// take (windows − 1) × the rate at once when a throttle starts and again each time a
    /// window full of bytes expires — bursts of 10 s' worth, then 10 s of nothing, with
    /// Kafka's 11 windows. Capping each window at its share keeps every second near the rate.
    pub fn delay(&self) -> Duration {
        let bound = self.bound.load(Ordering::Relaxed);
        if bound == UNTHROTTLED {
            return Duration::ZERO;
        }
        let now = self.now_ms();
        let mut rate = self.rate.lock();
        let over_windows = if rate.rate(now) > bound as f64 {
            rate.throttle_ms(bound as f64, now).max(1)
        } else {
            0
        };
        let (in_window, ends) = rate.current(now);
        let share = bound as f64 * self.window.as_secs_f64();
        let window_full = if in_window >= share { ends - now } else { 0 };
        Duration::from_millis(over_windows.max(window_full))
    }

    /// `bytes` of throttled replicas moved.
    pub fn record(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.total.fetch_add(bytes, Ordering::Relaxed);
        self.rate.lock().record(bytes as f64, self.now_ms());
    }

    /// Throttled replicas' bytes a second over the windows (Kafka's `byte-rate`).
    pub fn byte_rate(&self) -> f64 {
        self.rate.lock().rate(self.now_ms())
    }

    /// Throttled replicas' bytes since the broker started.
    pub fn total_bytes(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceeded_only_above_a_set_bound() {
        let q = ReplicationQuota::new(UNTHROTTLED, (2, Duration::from_secs(1)));
        q.record(10_000_000);
        assert!(!q.exceeded(), "no bound, never exceeded");
        q.set_bound(1_000_000);
        // 10 MB over at least one window of 1 s: far above 1 MB/s.
        assert!(q.exceeded());
        // 10 MB at 1 MB/s: about 10 s from the first byte, less the window already past.
        let d = q.delay();
        assert!(
            d > Duration::from_secs(7) && d <= Duration::from_secs(9),
            "{d:?}"
        );
        q.set_bound(20_000_000);
        assert!(!q.exceeded());
        assert_eq!(q.delay(), Duration::ZERO);
        assert_eq!(q.total_bytes(), 10_000_000);
    }

    #[test]
    fn no_window_takes_more_than_its_share() {
        // Kafka's 11 windows: 2 MB is 0.2 MB/s over them, well under 1 MB/s...
        let q = ReplicationQuota::new(1_000_000, (11, Duration::from_secs(1)));
        q.record(2_000_000);
        // ...but the window under way holds two windows' worth: it waits for the next.
        let d = q.delay();
        assert!(d > Duration::ZERO && d <= Duration::from_secs(1), "{d:?}");
        assert!(q.exceeded());
    }
}
