//! `ClientQuotaManager`: byte-rate, request-time and controller-mutation quotas per user and
//! client id, as Kafka's `ClientQuotaManager` holds them (KIP-13, KIP-55, KIP-124, KIP-219,
//! KIP-599), and the per-address connection rates of KIP-612 handed to the socket servers.
//!
//! The quotas live in ZooKeeper (`zk::client_quotas`); every broker reads them all at start
//! and again on each change notice naming a quota entity. A request's client id finds its
//! quota by Kafka's precedence — user+client id, user+default client, user, default
//! user+client id, default user+default client, default user, client id, default client —
//! and the sensor of the entity that matched: clients under one entity share its rate, as in
//! Kafka, and a `<default>` level gives each client (or user) a rate of its own.
//!
//! Holding a client to its quota: the request is carried out, its cost recorded, and when the
//! rate over the windows is above the bound the answer says how long to wait
//! (`throttle_time_ms`) and the connection reads nothing more from the client until then — the
//! connection's own thread waits, no other client's (`network::ConnectionContext::mute_for`).
//! With no quota configured nothing is looked up: the hot path pays one atomic load.
//!
//! The user is the connection's SASL principal; a client on a listener without SASL is Kafka's
//! `User:ANONYMOUS`.

pub(super) mod sensor;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use prometheus::proto::MetricFamily;

pub use sensor::Windows;
use sensor::{Sampled, TokenBucket};

use crate::metrics::Family;
use crate::network::ConnectionQuotas;
use crate::zk::ZkClient;
use crate::zk::client_quotas::{self, QuotaEntity};

/// The principal of a client on a listener without authentication.
pub use crate::security::ANONYMOUS;

/// What a quota bounds, with Kafka's key and the JMX exporter's metric prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    Produce = 0,
    Fetch = 1,
    Request = 2,
    ControllerMutation = 3,
}

impl QuotaKind {
    pub const ALL: [QuotaKind; 4] = [
        QuotaKind::Produce,
        QuotaKind::Fetch,
        QuotaKind::Request,
        QuotaKind::ControllerMutation,
    ];

    pub fn key(self) -> &'static str {
        client_quotas::CLIENT_KEYS[self as usize]
    }

    /// `kafka.server:type=Produce|Fetch|Request|ControllerMutation`, as the exporter names it.
    fn metric(self) -> &'static str {
        ["produce", "fetch", "request", "controllermutation"][self as usize]
    }

    /// The attribute a rate is exported as.
    fn rate_name(self) -> &'static str {
        ["byte_rate", "byte_rate", "request_time", "rate"][self as usize]
    }
}

/// The measures of one entity (user tag, client tag) for one kind.
struct Sensor {
    user: String,
    client: String,
    measured: Sampled,
    throttles: Sampled,
    bucket: TokenBucket,
}

/// A sensor's kind and its entity's (user, client id) tags.
type SensorKey = (QuotaKind, String, String);

/// A client id's quotas, resolved once per configuration: per kind, the bound and the sensor.
#[derive(Default)]
struct Resolved {
    bounds: [Option<(f64, Arc<Mutex<Sensor>>)>; 4],
}

pub struct ClientQuotaManager {
    windows: Windows,
    controller_windows: Windows,
    configs: RwLock<HashMap<QuotaEntity, BTreeMap<String, f64>>>,
    /// Whether any user or client quota is configured.
    active: AtomicBool,
    /// By user, then client id.
    resolved: RwLock<HashMap<String, HashMap<String, Arc<Resolved>>>>,
    sensors: Mutex<HashMap<SensorKey, Arc<Mutex<Sensor>>>>,
    connections: Option<Arc<ConnectionQuotas>>,
    started: Instant,
}

impl ClientQuotaManager {
    pub fn new(
        windows: Windows,
        controller_windows: Windows,
        connections: Option<Arc<ConnectionQuotas>>,
    ) -> ClientQuotaManager {
        ClientQuotaManager {
            windows,
            controller_windows,
            configs: RwLock::new(HashMap::new()),
            active: AtomicBool::new(false),
            resolved: RwLock::new(HashMap::new()),
            sensors: Mutex::new(HashMap::new()),
            connections,
            started: Instant::now(),
        }
    }

    /// Whether any client quota is configured (with none, nothing is recorded).
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Reads every entity's quotas from ZooKeeper and applies them.
    pub fn reload(&self, zk: &ZkClient) -> Result<(), crate::zk::ZkError> {
        let all = client_quotas::read_all(zk)?;
        self.apply(all.into_iter().collect());
        Ok(())
    }

    /// Takes `configs` as the whole configuration.
    pub fn apply(&self, configs: HashMap<QuotaEntity, BTreeMap<String, f64>>) {
        let clients = configs.keys().any(|e| e.ip.is_none());
        let mut ip_default = None;
        let mut per_ip = HashMap::new();
        for (e, q) in &configs {
            let (Some(ip), Some(rate)) = (&e.ip, q.get("connection_creation_rate")) else {
                continue;
            };
            match ip.as_deref().map(str::parse::<IpAddr>) {
                None => ip_default = Some(*rate),
                Some(Ok(a)) => {
                    per_ip.insert(a, *rate);
                }
                Some(Err(_)) => {}
            }
        }
        if let Some(c) = &self.connections {
            c.set_ip_rates(ip_default, per_ip);
        }
        *self.configs.write() = configs;
        self.resolved.write().clear();
        self.active.store(clients, Ordering::Relaxed);
    }

    /// The bound of `kind` for `client_id` and the tags of the entity that sets it, by Kafka's
    /// precedence; `None` where no entity bounds it.
    fn find(
        &self,
        kind: QuotaKind,
        user_name: &str,
        client_id: &str,
    ) -> Option<(f64, String, String)> {
        let configs = self.configs.read();
        let user = Some(Some(user_name.to_owned()));
        let client = Some(Some(client_id.to_owned()));
        let levels = [
            (user.clone(), client.clone(), true, true),
            (user.clone(), Some(None), true, true),
            (user.clone(), None, true, false),
            (Some(None), client.clone(), true, true),
            (Some(None), Some(None), true, true),
            (Some(None), None, true, false),
            (None, client.clone(), false, true),
            (None, Some(None), false, true),
        ];
        levels.into_iter().find_map(|(u, c, user_tag, client_tag)| {
            let e = QuotaEntity {
                user: u,
                client_id: c,
                ip: None,
            };
            let bound = *configs.get(&e)?.get(kind.key())?;
            let tag = |on: bool, v: &str| if on { v.to_owned() } else { String::new() };
            Some((bound, tag(user_tag, user_name), tag(client_tag, client_id)))
        })
    }

    fn resolve(&self, user_name: &str, client_id: &str) -> Arc<Resolved> {
        if let Some(r) = self
            .resolved
            .read()
            .get(user_name)
            .and_then(|u| u.get(client_id))
        {
            return r.clone();
        }
        let mut r = Resolved::default();
        for kind in QuotaKind::ALL {
            if let Some((bound, user, client)) = self.find(kind, user_name, client_id) {
                let sensor = self
                    .sensors
                    .lock()
                    .entry((kind, user.clone(), client.clone()))
                    .or_insert_with(|| {
                        let w = self.windows_of(kind);
                        Arc::new(Mutex::new(Sensor {
                            user,
                            client,
                            measured: Sampled::new(w),
                            throttles: Sampled::new(w),
                            bucket: TokenBucket::new(),
                        }))
                    })
                    .clone();
                r.bounds[kind as usize] = Some((bound, sensor));
            }
        }
        let r = Arc::new(r);
        let mut cache = self.resolved.write();
        // Bounded against clients inventing ids: past 10,000 the cache starts again, and the
        // sensors no one holds now go with it (Kafka expires idle sensors after an hour).
        if cache.values().map(HashMap::len).sum::<usize>() > 10_000 {
            cache.clear();
            self.sensors.lock().retain(|_, s| Arc::strong_count(s) > 1);
        }
        cache
            .entry(user_name.to_owned())
            .or_default()
            .insert(client_id.to_owned(), r.clone());
        r
    }

    fn windows_of(&self, kind: QuotaKind) -> Windows {
        match kind {
            QuotaKind::ControllerMutation => self.controller_windows,
            _ => self.windows,
        }
    }

    /// Records `value` (bytes, or percent of a thread for requests) against the client's
    /// quota of `kind`; how long the client must now wait, in ms (0 within its quota).
    pub fn record(&self, kind: QuotaKind, user: &str, client_id: &str, value: f64) -> u64 {
        if !self.active() {
            return 0;
        }
        let r = self.resolve(user, client_id);
        let Some((bound, sensor)) = &r.bounds[kind as usize] else {
            return 0;
        };
        let now = self.now_ms();
        let mut s = sensor.lock();
        s.measured.record(value, now);
        let w = self.windows;
        // Kafka caps a request-time throttle at one window; a byte-rate one by what the
        // windows can still be over the bound.
        let cap = match kind {
            QuotaKind::Request => w.size_ms,
            _ => w.size_ms * w.num as u64,
        };
        let t = s.measured.throttle_ms(*bound, now).min(cap);
        s.throttles.record(t as f64, now);
        t
    }

    /// What one window of the client's `kind` quota allows, in its units: Kafka bounds a
    /// consumer's Fetch answer by it, so one answer cannot take many windows' worth at once.
    pub fn window_allowance(&self, kind: QuotaKind, user: &str, client_id: &str) -> Option<f64> {
        if !self.active() {
            return None;
        }
        let r = self.resolve(user, client_id);
        let (bound, _) = r.bounds[kind as usize].as_ref()?;
        Some(bound * self.windows.size_ms as f64 / 1000.0)
    }

    /// KIP-599 for CreateTopics, CreatePartitions and DeleteTopics: whether `n` partition
    /// mutations may go ahead, and how long the client must then wait. A `strict` request
    /// (the versions that know THROTTLING_QUOTA_EXCEEDED) is refused while the bucket is below
    /// zero; an older one goes ahead and is throttled.
    pub fn take_mutations(&self, user: &str, client_id: &str, n: f64, strict: bool) -> (bool, u64) {
        if !self.active() {
            return (true, 0);
        }
        let r = self.resolve(user, client_id);
        let Some((bound, sensor)) = &r.bounds[QuotaKind::ControllerMutation as usize] else {
            return (true, 0);
        };
        let (now, w) = (self.now_ms(), self.controller_windows);
        let mut s = sensor.lock();
        let before = s.bucket.throttle_ms(*bound, w, now);
        let allowed = before == 0 || !strict;
        if allowed {
            s.bucket.take(n, *bound, w, now);
            s.measured.record(n, now);
        }
        // A strict request is throttled only when refused (the next one then is); an older
        // one by what it overdrew.
        let t = match (allowed, strict) {
            (true, true) => 0,
            (true, false) => s.bucket.throttle_ms(*bound, w, now),
            (false, _) => before,
        };
        s.throttles.record(t as f64, now);
        (allowed, t)
    }

    /// Per entity sensor, its rate and mean throttle time, in the JMX exporter's names
    /// (`kafka_server_produce_byte_rate{user,client_id}`, `…_throttle_time`).
    pub fn families(&self, out: &mut Vec<MetricFamily>) {
        let sensors: Vec<_> = self
            .sensors
            .lock()
            .iter()
            .map(|((k, _, _), s)| (*k, s.clone()))
            .collect();
        let now = self.now_ms();
        for kind in QuotaKind::ALL {
            let name = |what: &str| format!("kafka_server_{}_{what}", kind.metric());
            let mut rate = Family::gauge(
                &name(kind.rate_name()),
                "Per second over the quota windows, per quota entity",
            );
            let mut throttle = Family::gauge(
                &name("throttle_time"),
                "Mean throttle time in ms over the quota windows, per quota entity",
            );
            let mut any = false;
            for (_, s) in sensors.iter().filter(|(k, _)| *k == kind) {
                let mut s = s.lock();
                let labels = [("user", s.user.clone()), ("client_id", s.client.clone())];
                let labels: Vec<(&str, &str)> =
                    labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let r = s.measured.rate(now);
                let t = s.throttles.mean(now);
                rate.add(&labels, r);
                throttle.add(&labels, t);
                any = true;
            }
            if any {
                out.push(rate.done());
                out.push(throttle.done());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
        let own = |v: Option<Option<&str>>| v.map(|n| n.map(str::to_owned));
        QuotaEntity {
            user: own(user),
            client_id: own(client),
            ip: None,
        }
    }

    const W: Windows = Windows {
        num: 11,
        size_ms: 1000,
    };

    #[test]
    fn the_most_specific_entity_wins_and_sets_the_sensors_tags() {
        let m = ClientQuotaManager::new(W, W, None);
        let q = |v: f64| BTreeMap::from([("producer_byte_rate".to_owned(), v)]);
        let mut c = HashMap::new();
        c.insert(entity(None, Some(None)), q(1.0));
        c.insert(entity(None, Some(Some("a"))), q(2.0));
        c.insert(entity(Some(None), None), q(3.0));
        c.insert(entity(Some(Some(ANONYMOUS)), Some(Some("b"))), q(4.0));
        m.apply(c);
        let p = QuotaKind::Produce;
        // The default user outranks every client-only entity.
        assert_eq!(
            m.find(p, ANONYMOUS, "a"),
            Some((3.0, ANONYMOUS.into(), String::new()))
        );
        assert_eq!(
            m.find(p, ANONYMOUS, "b"),
            Some((4.0, ANONYMOUS.into(), "b".into()))
        );
        let mut c = HashMap::new();
        c.insert(entity(None, Some(None)), q(1.0));
        c.insert(entity(None, Some(Some("a"))), q(2.0));
        m.apply(c);
        assert_eq!(
            m.find(p, ANONYMOUS, "a"),
            Some((2.0, String::new(), "a".into()))
        );
        assert_eq!(
            m.find(p, ANONYMOUS, "z"),
            Some((1.0, String::new(), "z".into()))
        );
        assert_eq!(m.find(QuotaKind::Fetch, ANONYMOUS, "a"), None);
        m.apply(HashMap::new());
        assert!(!m.active());
        assert_eq!(m.record(p, ANONYMOUS, "a", 1e9), 0);
    }

    #[test]
    fn a_client_over_its_rate_is_told_to_wait_and_another_is_not() {
        let m = ClientQuotaManager::new(W, W, None);
        let mut c = HashMap::new();
        c.insert(
            entity(None, Some(Some("slow"))),
            BTreeMap::from([("producer_byte_rate".to_owned(), 1000.0)]),
        );
        m.apply(c);
        // 20 KB at once: 2 KB/s over the ten-second minimum span, twice the bound.
        let t = m.record(QuotaKind::Produce, ANONYMOUS, "slow", 20_000.0);
        assert!((9_900..=10_000).contains(&t), "{t}");
        assert_eq!(m.record(QuotaKind::Produce, ANONYMOUS, "fast", 20_000.0), 0);
        let mut out = Vec::new();
        m.families(&mut out);
        let names: Vec<_> = out.iter().map(|f| f.name().to_owned()).collect();
        assert_eq!(
            names,
            [
                "kafka_server_produce_byte_rate",
                "kafka_server_produce_throttle_time"
            ]
        );
    }
}
