//! Prometheus metrics: one registry per broker, served as `GET /metrics` on `metrics.listener`
//! (`http`). Every name is the one the Prometheus JMX exporter's usual Kafka rules give the
//! matching Kafka MBean — `kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions>`
//! becomes `kafka_server_replicamanager_underreplicatedpartitions` — so dashboards and alerts
//! written for Kafka work unchanged (`doc/metrics.md` lists them).
//!
//! Two kinds of value. Counters are bumped where things happen: a produce costs a few relaxed
//! atomic adds on handles its partition holds, no lookup by name. Everything else is sampled
//! when scraped (partition and leader counts, ISR state, connections, ZooKeeper, lag): the
//! components register a `Sampler` that reads their state, so the hot paths carry nothing.

pub mod http;
pub mod requests;

use std::sync::Arc;

use parking_lot::RwLock;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, MetricFamily, MetricType};
use prometheus::{IntCounter, IntCounterVec, Opts, Registry, TextEncoder};

pub use requests::RequestMetrics;

/// Adds the families it reads from some component's state, at scrape time.
pub type Sampler = Box<dyn Fn(&mut Vec<MetricFamily>) + Send + Sync>;

pub struct BrokerMetrics {
    registry: Registry,
    pub isr_shrinks: IntCounter,
    pub isr_expands: IntCounter,
    messages_in: TopicCounter,
    bytes_in: TopicCounter,
    bytes_out: TopicCounter,
    replication_bytes_in: IntCounter,
    replication_bytes_out: IntCounter,
    pub requests: Arc<RequestMetrics>,
    samplers: Arc<RwLock<Vec<Sampler>>>,
}

impl BrokerMetrics {
    pub fn new() -> Arc<BrokerMetrics> {
        let registry = Registry::new();
        let counter = |name: &str, help: &str| {
            let c = IntCounter::new(name, help).expect("valid metric name");
            registry.register(Box::new(c.clone())).expect("unique");
            c
        };
        let topic_counter = |name: &str, help: &str| {
            let c = TopicCounter::new(name, help);
            registry.register(Box::new(c.clone())).expect("unique");
            c
        };
        let m = BrokerMetrics {
            isr_shrinks: counter(
                "kafka_server_replicamanager_isrshrinks_total",
                "ISR shrinks of partitions led here",
            ),
            isr_expands: counter(
                "kafka_server_replicamanager_isrexpands_total",
                "ISR expansions of partitions led here",
            ),
            messages_in: topic_counter(
                "kafka_server_brokertopicmetrics_messagesin_total",
                "Messages appended by producers",
            ),
            bytes_in: topic_counter(
                "kafka_server_brokertopicmetrics_bytesin_total",
                "Bytes of message sets appended by producers",
            ),
            bytes_out: topic_counter(
                "kafka_server_brokertopicmetrics_bytesout_total",
                "Record bytes sent to consumers",
            ),
            replication_bytes_in: counter(
                "kafka_server_brokertopicmetrics_replicationbytesin_total",
                "Record bytes appended as follower",
            ),
            replication_bytes_out: counter(
                "kafka_server_brokertopicmetrics_replicationbytesout_total",
                "Record bytes sent to followers",
            ),
            requests: Arc::new(RequestMetrics::default()),
            samplers: Arc::new(RwLock::new(Vec::new())),
            registry,
        };
        m.add_sampler({
            let r = m.requests.clone();
            Box::new(move |out| r.sample(out))
        });
        let sampled = Sampled(m.samplers.clone());
        m.registry.register(Box::new(sampled)).expect("unique");
        Arc::new(m)
    }

    /// The counters of `topic` a partition keeps, so appends and reads bump them directly.
    pub fn topic(&self, topic: &str) -> TopicMetrics {
        TopicMetrics {
            messages_in: self.messages_in.handles(topic),
            bytes_in: self.bytes_in.handles(topic),
            bytes_out: self.bytes_out.handles(topic),
            replication_bytes_in: self.replication_bytes_in.clone(),
            replication_bytes_out: self.replication_bytes_out.clone(),
        }
    }

    /// Drops the series of a topic no longer hosted here (Kafka's `removeMetrics`).
    pub fn forget_topic(&self, topic: &str) {
        for c in [&self.messages_in, &self.bytes_in, &self.bytes_out] {
            let _ = c.by_topic.remove_label_values(&[topic]);
        }
    }

    pub fn add_sampler(&self, s: Sampler) {
        self.samplers.write().push(s);
    }

    /// Every metric in the Prometheus text format (version 0.0.4).
    pub fn encode(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|e| format!("# encoding failed: {e}\n"))
    }
}

/// A partition's handles on its topic's counters: `[topic's, all topics']`.
#[derive(Clone)]
pub struct TopicMetrics {
    messages_in: [IntCounter; 2],
    bytes_in: [IntCounter; 2],
    bytes_out: [IntCounter; 2],
    replication_bytes_in: IntCounter,
    replication_bytes_out: IntCounter,
}

impl TopicMetrics {
    /// A producer's set of `messages` in `bytes` was appended.
    pub fn produced(&self, messages: u64, bytes: u64) {
        for c in &self.messages_in {
            c.inc_by(messages);
        }
        for c in &self.bytes_in {
            c.inc_by(bytes);
        }
    }

    /// `bytes` of records went out in a Fetch answer, to a follower or a consumer.
    pub fn fetched(&self, bytes: u64, follower: bool) {
        if follower {
            self.replication_bytes_out.inc_by(bytes);
        } else {
            for c in &self.bytes_out {
                c.inc_by(bytes);
            }
        }
    }

    /// A follower appended `bytes` fetched from its leader.
    pub fn replicated(&self, bytes: u64) {
        self.replication_bytes_in.inc_by(bytes);
    }
}

/// A counter with a series per topic and one for all topics, in one family, as Kafka's
/// BrokerTopicMetrics MBeans come out of the JMX exporter (dashboards pick the per-topic
/// series with `topic!=""`).
#[derive(Clone)]
struct TopicCounter {
    all: IntCounter,
    by_topic: IntCounterVec,
}

impl TopicCounter {
    fn new(name: &str, help: &str) -> TopicCounter {
        TopicCounter {
            all: IntCounter::new(name, help).expect("valid metric name"),
            by_topic: IntCounterVec::new(Opts::new(name, help), &["topic"])
                .expect("valid metric name"),
        }
    }

    fn handles(&self, topic: &str) -> [IntCounter; 2] {
        [self.by_topic.with_label_values(&[topic]), self.all.clone()]
    }
}

impl Collector for TopicCounter {
    fn desc(&self) -> Vec<&Desc> {
        self.by_topic.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families = self.by_topic.collect();
        let all = self
            .all
            .collect()
            .into_iter()
            .flat_map(|mut f| f.take_metric());
        match families.first_mut() {
            Some(f) => {
                let mut metrics = f.take_metric();
                metrics.extend(all);
                f.set_metric(metrics);
            }
            None => families = self.all.collect(),
        }
        families
    }
}

/// The registry's view of every `Sampler`.
struct Sampled(Arc<RwLock<Vec<Sampler>>>);

impl Collector for Sampled {
    fn desc(&self) -> Vec<&Desc> {
        Vec::new()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut out = Vec::new();
        for s in self.0.read().iter() {
            s(&mut out);
        }
        out
    }
}

/// A family built at scrape time.
pub struct Family(MetricFamily);

impl Family {
    pub fn gauge(name: &str, help: &str) -> Family {
        Family::new(name, help, MetricType::GAUGE)
    }

    pub fn counter(name: &str, help: &str) -> Family {
        Family::new(name, help, MetricType::COUNTER)
    }

    fn new(name: &str, help: &str, kind: MetricType) -> Family {
        let mut f = MetricFamily::default();
        f.set_name(name.to_owned());
        f.set_help(help.to_owned());
        f.set_field_type(kind);
        Family(f)
    }

    /// Adds one series.
    pub fn add(&mut self, labels: &[(&str, &str)], value: f64) -> &mut Family {
        let mut m = proto::Metric::default();
        m.set_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = proto::LabelPair::default();
                    l.set_name((*k).to_owned());
                    l.set_value((*v).to_owned());
                    l
                })
                .collect(),
        );
        if self.0.get_field_type() == MetricType::COUNTER {
            let mut c = proto::Counter::default();
            c.set_value(value);
            m.set_counter(c);
        } else {
            let mut g = proto::Gauge::default();
            g.set_value(value);
            m.set_gauge(g);
        }
        let mut metrics = self.0.take_metric();
        metrics.push(m);
        self.0.set_metric(metrics);
        self
    }

    /// A family with one unlabelled series.
    pub fn single(mut self, value: f64) -> MetricFamily {
        self.add(&[], value);
        self.0
    }

    pub fn done(self) -> MetricFamily {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_counters_have_a_series_per_topic_and_one_for_all() {
        let m = BrokerMetrics::new();
        m.topic("a").produced(3, 300);
        m.topic("b").produced(2, 50);
        let text = m.encode();
        for line in [
            "kafka_server_brokertopicmetrics_messagesin_total 5",
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"a\"} 3",
            "kafka_server_brokertopicmetrics_bytesin_total{topic=\"b\"} 50",
            "kafka_server_brokertopicmetrics_bytesin_total 350",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        m.forget_topic("a");
        let text = m.encode();
        assert!(!text.contains("topic=\"a\""), "{text}");
        assert!(text.contains("messagesin_total 5"), "{text}");
    }

    #[test]
    fn sampled_families_are_encoded_with_their_type() {
        let m = BrokerMetrics::new();
        m.add_sampler(Box::new(|out| {
            out.push(Family::gauge("g_value", "a gauge").single(7.0));
            let mut f = Family::counter("c_total", "a counter");
            f.add(&[("reason", "x")], 2.0);
            out.push(f.done());
        }));
        let text = m.encode();
        assert!(text.contains("# TYPE g_value gauge\ng_value 7\n"), "{text}");
        assert!(
            text.contains("# TYPE c_total counter\nc_total{reason=\"x\"} 2\n"),
            "{text}"
        );
    }
}
