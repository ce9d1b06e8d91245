//! `log.cleaner.io.max.bytes.per.second`: the cleaners' reads and writes together, held below
//! a rate by sleeping the thread that got ahead of it (Kafka's `Throttler`). Every read and
//! write of a clean passes here, so this is also where a clean learns that the broker is
//! stopping and gives up (its `.cleaned` files are removed at the next start).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a measuring window lasts before it starts again.
const WINDOW: Duration = Duration::from_secs(1);

pub struct Throttle {
    bytes_per_second: f64,
    /// Start of the window and the bytes spent in it.
    window: Mutex<(Instant, u64)>,
    stopping: AtomicBool,
}

impl Throttle {
    pub fn new(bytes_per_second: f64) -> Throttle {
        Throttle {
            bytes_per_second,
            window: Mutex::new((Instant::now(), 0)),
            stopping: AtomicBool::new(false),
        }
    }

    fn unlimited(&self) -> bool {
        !self.bytes_per_second.is_finite() || self.bytes_per_second >= 1e15
    }

    /// Counts `bytes` of I/O, and sleeps as long as the rate needs (no lock held meanwhile);
    /// an `Interrupted` error once the broker is stopping.
    pub fn spend(&self, bytes: u64) -> io::Result<()> {
        let ahead = self.count(bytes);
        if ahead > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(ahead.min(1.0)));
        }
        if self.stopping.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the broker is stopping",
            ));
        }
        Ok(())
    }

    /// Makes every clean under way give up at its next read or write.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Counts `bytes`; returns how far ahead of the rate the window is, in seconds.
    fn count(&self, bytes: u64) -> f64 {
        if self.unlimited() {
            return 0.0;
        }
        {
            let mut w = self.window.lock();
            w.1 += bytes;
            let elapsed = w.0.elapsed().as_secs_f64();
            let due = w.1 as f64 / self.bytes_per_second;
            if elapsed >= WINDOW.as_secs_f64() && due <= elapsed {
                *w = (Instant::now(), 0);
            }
            due - elapsed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_past_the_rate_owes_a_sleep_and_unlimited_never_does() {
        let t = Throttle::new(1_000_000.0);
        let owed = t.count(100_000);
        assert!(owed > 0.05 && owed <= 0.1, "{owed}");
        let start = Instant::now();
        t.spend(100_000).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(100));
        t.stop();
        assert_eq!(t.spend(1).unwrap_err().kind(), io::ErrorKind::Interrupted);
        assert_eq!(Throttle::new(f64::MAX).count(u64::MAX / 2), 0.0);
    }
}
