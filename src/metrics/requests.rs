//! Request times, as Kafka's `kafka.network<type=RequestMetrics, name=TotalTimeMs,
//! request=…>` come out of the JMX exporter: quantile gauges
//! `kafka_network_requestmetrics_totaltimems{request, quantile}` (Kafka's percentiles, labelled
//! "0.50" … "0.999"), the count `kafka_network_requestmetrics_totaltimems_count{request}`, and
//! `kafka_network_requestmetrics_requests_total{request, version}`.
//!
//! Total time runs from a request's first byte to the last byte of its answer written, so a
//! parked acks=all produce counts its wait. Fetches are counted as `Fetch` and again as
//! `FetchConsumer` or `FetchFollower`, as Kafka does. Quantiles cover the last one to two
//! minutes (two HDR histograms in turn), where Kafka's reservoir leans on the last five: recent
//! enough to show a change within a scrape or two.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use prometheus::proto::MetricFamily;

use super::Family;
use crate::protocol::header::{FETCH, api_name};

/// Api keys 0..64, then FetchConsumer and FetchFollower.
const KEYS: usize = 64;
const FETCH_CONSUMER: usize = KEYS;
const FETCH_FOLLOWER: usize = KEYS + 1;
const SLOTS: usize = KEYS + 2;
const VERSIONS: usize = 16;
/// How long one histogram collects before it becomes the previous one.
const WINDOW: Duration = Duration::from_secs(60);
/// Kafka's percentiles and the labels the JMX exporter gives them.
const QUANTILES: [(f64, &str); 6] = [
    (0.50, "0.50"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

pub struct RequestMetrics {
    slots: Vec<Slot>,
}

#[derive(Default)]
struct Slot {
    /// Created by the first request of the type: most types never come.
    times: Mutex<Option<Window>>,
    count: AtomicU64,
    versions: [AtomicU64; VERSIONS],
}

struct Window {
    current: Histogram<u64>,
    previous: Histogram<u64>,
    since: Instant,
}

impl Window {
    fn new() -> Window {
        // Microseconds up to ten minutes, two significant digits (1 % error).
        let h = Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid bounds");
        Window {
            previous: h.clone(),
            current: h,
            since: Instant::now(),
        }
    }

    /// Turns the histograms over once a window has passed; two windows without a request
    /// leave nothing.
    fn turn(&mut self) {
        let age = self.since.elapsed();
        if age < WINDOW {
            return;
        }
        std::mem::swap(&mut self.current, &mut self.previous);
        self.current.reset();
        if age >= 2 * WINDOW {
            self.previous.reset();
        }
        self.since = Instant::now();
    }
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
        }
    }
}

impl RequestMetrics {
    /// One request of `key` at `version` took `took`; `follower` tells a Fetch's kind.
    pub fn record(&self, key: i16, version: i16, follower: bool, took: Duration) {
        let Some(slot) = usize::try_from(key).ok().filter(|k| *k < KEYS) else {
            return;
        };
        if api_name(key).is_none() {
            return;
        }
        let s = &self.slots[slot];
        if let Some(v) = usize::try_from(version).ok().filter(|v| *v < VERSIONS) {
            s.versions[v].fetch_add(1, Ordering::Relaxed);
        }
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        s.observe(us);
        if key == FETCH {
            let kind = if follower {
                FETCH_FOLLOWER
            } else {
                FETCH_CONSUMER
            };
            self.slots[kind].observe(us);
        }
    }

    /// The request families, for the registry's sampler.
    pub fn sample(&self, out: &mut Vec<MetricFamily>) {
        let mut times = Family::gauge(
            "kafka_network_requestmetrics_totaltimems",
            "Request total time in ms, from first byte in to answer out, by quantile",
        );
        let mut counts = Family::counter(
            "kafka_network_requestmetrics_totaltimems_count",
            "Requests timed",
        );
        let mut requests = Family::counter(
            "kafka_network_requestmetrics_requests_total",
            "Requests by type and version",
        );
        for (i, s) in self.slots.iter().enumerate() {
            let name = match i {
                FETCH_CONSUMER => "FetchConsumer",
                FETCH_FOLLOWER => "FetchFollower",
                k => match api_name(k as i16) {
                    Some(n) => n,
                    None => continue,
                },
            };
            let count = s.count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            counts.add(&[("request", name)], count as f64);
            for (v, n) in s.versions.iter().enumerate() {
                let n = n.load(Ordering::Relaxed);
                if n > 0 {
                    requests.add(&[("request", name), ("version", &v.to_string())], n as f64);
                }
            }
            let Some(h) = s.recent() else { continue };
            for (q, label) in QUANTILES {
                let ms = h.value_at_quantile(q) as f64 / 1000.0;
                times.add(&[("request", name), ("quantile", label)], ms);
            }
        }
        out.extend([times.done(), counts.done(), requests.done()]);
    }
}

impl Slot {
    fn observe(&self, us: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut t = self.times.lock();
        let w = t.get_or_insert_with(Window::new);
        w.turn();
        w.current.saturating_record(us.max(1));
    }

    /// Both windows together, if they hold anything.
    fn recent(&self) -> Option<Histogram<u64>> {
        let mut t = self.times.lock();
        let w = t.as_mut()?;
        w.turn();
        let mut h = w.current.clone();
        h.add(&w.previous).ok()?;
        (!h.is_empty()).then_some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &RequestMetrics) -> String {
        let mut out = Vec::new();
        r.sample(&mut out);
        prometheus::TextEncoder::new()
            .encode_to_string(&out)
            .unwrap()
    }

    #[test]
    fn quantiles_counts_and_fetch_kinds() {
        let r = RequestMetrics::default();
        for ms in 1..=100 {
            r.record(0, 9, false, Duration::from_millis(ms));
        }
        r.record(1, 12, true, Duration::from_millis(500));
        r.record(1, 11, false, Duration::from_millis(2));
        r.record(999, 0, false, Duration::from_millis(2));
        let t = text(&r);
        let value = |series: &str| -> f64 {
            t.lines()
                .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{series} missing in\n{t}"))
        };
        let p50 = value(
            "kafka_network_requestmetrics_totaltimems{request=\"Produce\",quantile=\"0.50\"}",
        );
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        let p99 = value(
            "kafka_network_requestmetrics_totaltimems{request=\"Produce\",quantile=\"0.99\"}",
        );
        assert!((98.0..=100.5).contains(&p99), "{p99}");
        assert_eq!(
            value("kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"}"),
            100.0
        );
        assert_eq!(
            value("kafka_network_requestmetrics_totaltimems_count{request=\"Fetch\"}"),
            2.0
        );
        assert_eq!(
            value("kafka_network_requestmetrics_totaltimems_count{request=\"FetchFollower\"}"),
            1.0
        );
        assert_eq!(
            value("kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"11\"}"),
            1.0
        );
        assert!(
            !t.contains("Metadata"),
            "no series for a type never asked:\n{t}"
        );
    }
}
