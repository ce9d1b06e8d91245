//! The measures client quotas are held to, as Kafka's metrics library keeps them: a rate over
//! `quota.window.num` windows of `quota.window.size.seconds` (its `Rate` on a `SampledStat`),
//! the throttle time that brings a rate back to its bound (`QuotaUtils.throttleTime`), and the
//! token bucket of controller mutations (KIP-599's `TokenBucket`).

/// Windows of samples; times are milliseconds on any monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Windows {
    pub num: usize,
    pub size_ms: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    /// When its window began; `None`: unused or expired.
    start: Option<u64>,
    value: f64,
    count: u64,
}

/// A sum and a count per window, over the last `num` windows.
#[derive(Debug, Clone)]
pub struct Sampled {
    w: Windows,
    samples: Vec<Sample>,
    current: usize,
}

impl Sampled {
    pub fn new(w: Windows) -> Sampled {
        Sampled {
            w,
            samples: vec![Sample::default(); w.num.max(1)],
            current: 0,
        }
    }

    pub fn record(&mut self, value: f64, now: u64) {
        self.expire(now);
        let size = self.w.size_ms;
        let cur = &self.samples[self.current];
        if cur.start.is_none_or(|s| now >= s + size) {
            self.current = (self.current + 1) % self.samples.len();
            self.samples[self.current] = Sample {
                start: Some(now),
                value: 0.0,
                count: 0,
            };
        }
        let s = &mut self.samples[self.current];
        s.value += value;
        s.count += 1;
    }

    /// What was recorded in the window under way, and when (ms) that window ends; nothing,
    /// ending now, when no window is under way.
    pub fn current(&mut self, now: u64) -> (f64, u64) {
        self.expire(now);
        let s = &self.samples[self.current];
        match s.start {
            Some(t) if now < t + self.w.size_ms => (s.value, t + self.w.size_ms),
            _ => (0.0, now),
        }
    }

    /// Forgets samples older than the whole span of windows.
    fn expire(&mut self, now: u64) {
        let span = self.w.size_ms * self.samples.len() as u64;
        for s in &mut self.samples {
            if s.start.is_some_and(|t| now.saturating_sub(t) >= span) {
                *s = Sample::default();
            }
        }
    }

    /// The span the rate divides by, in ms: from the oldest window's start, and never less than
    /// all windows but one (Kafka's `Rate.windowSize`), so a new client's first bytes are not
    /// divided by a few milliseconds.
    pub fn window_ms(&mut self, now: u64) -> u64 {
        self.expire(now);
        let oldest = self.samples.iter().filter_map(|s| s.start).min();
        let elapsed = oldest.map_or(0, |t| now.saturating_sub(t));
        let min = (self.samples.len() as u64 - 1) * self.w.size_ms;
        elapsed.max(min).max(1)
    }

    /// Per second over the windows.
    pub fn rate(&mut self, now: u64) -> f64 {
        let span = self.window_ms(now);
        self.total() / (span as f64 / 1000.0)
    }

    /// The mean of what was recorded in the windows (0 when nothing was).
    pub fn mean(&mut self, now: u64) -> f64 {
        self.expire(now);
        let n: u64 = self.samples.iter().map(|s| s.count).sum();
        if n == 0 { 0.0 } else { self.total() / n as f64 }
    }

    fn total(&self) -> f64 {
        self.samples.iter().map(|s| s.value).sum()
    }

    /// How long the client must wait for the rate to come back to `bound` (0 within it):
    /// the excess over the bound, in the windows' time (Kafka's `QuotaUtils.throttleTime`).
    pub fn throttle_ms(&mut self, bound: f64, now: u64) -> u64 {
        let span = self.window_ms(now) as f64;
        let rate = self.rate(now);
        if rate <= bound || bound <= 0.0 {
            return 0;
        }
        ((rate - bound) / bound * span).round() as u64
    }
}

/// Kafka's `TokenBucket` for controller mutations: `rate` tokens a second, up to a burst of
/// what the windows hold; a request may take it below zero, and the next waits until it is
/// back to zero.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    at: Option<u64>,
}

impl TokenBucket {
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: f64::INFINITY,
            at: None,
        }
    }

    fn refill(&mut self, rate: f64, w: Windows, now: u64) {
        let burst = rate * (w.num as u64 * w.size_ms) as f64 / 1000.0;
        let elapsed = self
            .at
            .map_or(f64::INFINITY, |t| now.saturating_sub(t) as f64);
        self.tokens = (self.tokens + rate * elapsed / 1000.0).min(burst);
        self.at = Some(now);
    }

    /// How long until the bucket is back to zero (0: it is not below).
    pub fn throttle_ms(&mut self, rate: f64, w: Windows, now: u64) -> u64 {
        self.refill(rate, w, now);
        if self.tokens >= 0.0 || rate <= 0.0 {
            0
        } else {
            (-self.tokens / rate * 1000.0).ceil() as u64
        }
    }

    pub fn take(&mut self, n: f64, rate: f64, w: Windows, now: u64) {
        self.refill(rate, w, now);
        self.tokens -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows {
        num: 11,
        size_ms: 1000,
    };

    #[test]
    fn a_rate_divides_by_at_least_all_windows_but_one() {
        let mut s = Sampled::new(W);
        s.record(10_000.0, 0);
        // 10 KB at the start: 1 KB/s over the ten-window minimum, not 10 KB over 1 ms.
        assert_eq!(s.rate(1), 1000.0);
        s.record(10_000.0, 15_000);
        // The first sample expired with the span: only the second one counts.
        assert_eq!(s.rate(15_000), 1000.0);
    }

    #[test]
    fn the_throttle_brings_the_rate_back_to_its_bound() {
        let mut s = Sampled::new(W);
        for t in 0..10 {
            s.record(2000.0, t * 1000);
        }
        // 20 KB over 10 s is 2 KB/s: at a bound of 1 KB/s the client waits 10 s more, after
        // which the same bytes over 20 s... are what the bound allows.
        assert_eq!(s.throttle_ms(1000.0, 9_999), 10_000);
        assert_eq!(s.throttle_ms(4000.0, 9_999), 0);
        assert_eq!(s.mean(9_999), 2000.0);
    }

    #[test]
    fn a_bucket_lets_one_request_overdraw_then_holds_the_next() {
        let mut b = TokenBucket::new();
        let rate = 1.0;
        assert_eq!(b.throttle_ms(rate, W, 0), 0);
        b.take(30.0, rate, W, 0); // burst 11: 19 below zero
        assert_eq!(b.throttle_ms(rate, W, 0), 19_000);
        assert_eq!(b.throttle_ms(rate, W, 19_000), 0);
    }
}
