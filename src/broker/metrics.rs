//! The broker's sampled metrics: what the replica manager, controller, socket servers,
//! request pool and ZooKeeper session look like at scrape time (`crate::metrics` has the
//! counters and the registry). Samplers hold weak references: the registry lives in the
//! replica manager, which must not keep itself alive through them.

use std::sync::{Arc, Weak};

use prometheus::proto::MetricFamily;

use super::Broker;
use super::partition::Role;
use super::purgatory::Purgatory;
use super::replica_manager::ReplicaManager;
use crate::metrics::Family;
use crate::network::Refusal;

/// What the partitions hosted here look like now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PartitionCounts {
    pub hosted: usize,
    pub leading: usize,
    /// Led here with an ISR smaller than the replica list.
    pub under_replicated: usize,
    /// Led here with an ISR below `min.insync.replicas`.
    pub under_min_isr: usize,
    /// Transactions open in the partitions led here.
    pub open_transactions: usize,
    /// The largest distance from a led partition's last stable offset to its high watermark:
    /// how far read_committed consumers are held behind read_uncommitted ones.
    pub lso_lag_max: i64,
}

impl ReplicaManager {
    /// Counts hosted, led, under-replicated and under-min-ISR partitions, as Kafka's
    /// ReplicaManager gauges do (a follower's view of its partition is not counted).
    pub fn partition_counts(&self) -> PartitionCounts {
        let parts: Vec<_> = self.partitions.read().values().cloned().collect();
        let mut c = PartitionCounts {
            hosted: parts.len(),
            ..Default::default()
        };
        for p in parts {
            let st = p.lock();
            if st.role != Role::Leader {
                continue;
            }
            c.leading += 1;
            if st.isr.len() < st.replicas.len() {
                c.under_replicated += 1;
            }
            if st.isr.len() < p.min_insync_replicas(self.default_min_insync_replicas()) {
                c.under_min_isr += 1;
            }
            drop(st);
            c.open_transactions += p.log.open_transactions();
            c.lso_lag_max = c
                .lso_lag_max
                .max(p.high_watermark() - p.log.last_stable_offset());
        }
        c
    }
}

/// Registers the samplers of `broker`'s state with its registry.
pub(super) fn register_samplers(broker: &Arc<Broker>) {
    let weak = Arc::downgrade(broker);
    let metrics = &broker.replica_manager.metrics;
    metrics.add_sampler(sampler(&weak, replica_families));
    metrics.add_sampler(sampler(&weak, controller_families));
    metrics.add_sampler(sampler(&weak, cleaner_families));
    metrics.add_sampler(sampler(&weak, network_families));
    metrics.add_sampler(sampler(&weak, zookeeper_families));
    metrics.add_sampler(sampler(&weak, super::group_lag::lag_families));
    metrics.add_sampler(sampler(&weak, transaction_families));
}

fn sampler(
    broker: &Weak<Broker>,
    f: fn(&Broker, &mut Vec<MetricFamily>),
) -> crate::metrics::Sampler {
    let broker = broker.clone();
    Box::new(move |out| {
        if let Some(b) = broker.upgrade() {
            f(&b, out);
        }
    })
}

fn replica_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    let c = b.replica_manager.partition_counts();
    for (name, help, v) in [
        (
            "kafka_server_replicamanager_partitioncount",
            "Partitions hosted here",
            c.hosted,
        ),
        (
            "kafka_server_replicamanager_leadercount",
            "Partitions led here",
            c.leading,
        ),
        (
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Partitions led here whose ISR is smaller than their replica list",
            c.under_replicated,
        ),
        (
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Partitions led here whose ISR is below min.insync.replicas",
            c.under_min_isr,
        ),
        (
            "gregor_log_open_transactions",
            "Transactions open in the partitions led here (their markers not written yet)",
            c.open_transactions,
        ),
    ] {
        out.push(Family::gauge(name, help).single(v as f64));
    }
    out.push(
        Family::gauge(
            "gregor_log_last_stable_offset_lag_max",
            "The most a led partition's last stable offset is behind its high watermark (offsets)",
        )
        .single(c.lso_lag_max as f64),
    );
    purgatory_families(&b.replica_manager.purgatory, out);
    replication_quota_families(&b.replica_manager, out);
}

/// KIP-73's throttles, in the JMX exporter's names of Kafka's `LeaderReplication` and
/// `FollowerReplication` `byte-rate`, with the bytes behind them.
fn replication_quota_families(rm: &ReplicaManager, out: &mut Vec<MetricFamily>) {
    let mut total = Family::counter(
        "gregor_replication_throttled_bytes_total",
        "Bytes of throttled replicas moved (KIP-73), as leader and as follower",
    );
    for (side, quota) in [
        ("leader", &rm.leader_quota),
        ("follower", &rm.follower_quota),
    ] {
        out.push(
            Family::gauge(
                &format!("kafka_server_{side}replication_byte_rate"),
                &format!("Bytes a second of throttled replicas moved as {side}, over the replication quota windows"),
            )
            .single(quota.byte_rate()),
        );
        total.add(&[("side", side)], quota.total_bytes() as f64);
    }
    out.push(total.done());
}

/// The transaction coordinator: its transactional ids by state, and Kafka's
/// `transaction-coordinator-metrics` load time.
fn transaction_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    let tc = &b.txn_coordinator;
    let mut by_state = Family::gauge(
        "gregor_transaction_coordinator_transactional_ids",
        "Transactional ids this broker coordinates, by state",
    );
    for (state, n) in tc.count_by_state() {
        by_state.add(&[("state", state)], n as f64);
    }
    out.push(by_state.done());
    out.push(
        Family::gauge(
            "kafka_server_transaction_coordinator_metrics_partition_load_time_max",
            "The longest load of a __transaction_state partition by this broker (ms)",
        )
        .single(tc.load_time_max_ms() as f64),
    );
}

/// The parked requests, with Kafka's `DelayedOperationPurgatory` names.
fn purgatory_families(p: &Purgatory, out: &mut Vec<MetricFamily>) {
    let kinds = [("Fetch", &p.fetch), ("Produce", &p.produce)];
    let mut parked = Family::gauge(
        "kafka_server_delayedoperationpurgatory_numdelayedoperations",
        "Requests parked now",
    );
    let mut size = Family::gauge(
        "kafka_server_delayedoperationpurgatory_purgatorysize",
        "Partition watch lists the parked requests are in",
    );
    let mut woken = Family::counter(
        "gregor_delayedoperationpurgatory_wakeups_total",
        "Times a parked request was woken by an event on a partition it watches",
    );
    for (kind, s) in kinds {
        let label = [("delayedOperation", kind)];
        parked.add(&label, s.parked() as f64);
        size.add(&label, s.watched() as f64);
        woken.add(&label, s.wakeups() as f64);
    }
    out.extend([parked.done(), size.done(), woken.done()]);
}

/// The log cleaner's gauges, in the JMX exporter's names.
fn cleaner_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    use crate::log::cleaner::load_f64;
    let s = &b.log_manager.cleaner_stats;
    let last_clean = s.last_clean_ms.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1000.0;
    for (name, help, v) in [
        (
            "kafka_log_logcleaner_max_clean_time_secs",
            "How long the last clean took",
            last_clean,
        ),
        (
            "kafka_log_logcleaner_cleaner_recopy_percent",
            "Bytes written over bytes read by the last clean, percent",
            load_f64(&s.recopy_percent),
        ),
        (
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "How full the last clean's offset map was, percent",
            load_f64(&s.buffer_utilization_percent),
        ),
        (
            "kafka_log_logcleanermanager_max_dirty_percent",
            "The dirtiest compacted log's dirty share when a cleaner last looked, percent",
            load_f64(&s.max_dirty_percent),
        ),
        (
            "kafka_log_logcleanermanager_uncleanable_partitions_count",
            "Logs the cleaner gave up on (a corrupt batch) until the broker restarts",
            b.log_manager.uncleanable_count() as f64,
        ),
    ] {
        out.push(Family::gauge(name, help).single(v));
    }
    let cleans = s.cleans.load(std::sync::atomic::Ordering::Relaxed) as f64;
    out.push(Family::counter("gregor_log_cleaner_cleans_total", "Cleans done").single(cleans));
}

fn controller_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    let active = b.controller.is_controller();
    out.push(
        Family::gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, 0 elsewhere",
        )
        .single(if active { 1.0 } else { 0.0 }),
    );
    let s = &b.controller.stats;
    let seen = |n: &std::sync::atomic::AtomicUsize| {
        if active {
            n.load(std::sync::atomic::Ordering::Relaxed) as f64
        } else {
            0.0
        }
    };
    for (name, help, v) in [
        (
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a live leader (on the controller)",
            seen(&s.offline_partitions),
        ),
        (
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions in the cluster (on the controller)",
            seen(&s.partitions),
        ),
        (
            "kafka_controller_kafkacontroller_globaltopiccount",
            "Topics in the cluster (on the controller)",
            seen(&s.topics),
        ),
    ] {
        out.push(Family::gauge(name, help).single(v));
    }
}

fn network_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    let mut conns = Family::gauge(
        "kafka_server_socket_server_metrics_connection_count",
        "Open connections per listener",
    );
    for (l, s) in b.config.listeners.bind.iter().zip(&b.servers) {
        conns.add(&[("listener", &l.name)], s.open_connections() as f64);
    }
    out.push(conns.done());
    let tls_failures: Vec<(String, u64)> = b
        .config
        .listeners
        .bind
        .iter()
        .zip(&b.servers)
        .filter(|(_, s)| s.tls().is_some())
        .map(|(l, s)| (l.name.clone(), s.tls_handshake_failures()))
        .collect();
    b.credentials.families(out, &tls_failures);
    if b.authorizer.enabled() {
        out.push(
            Family::counter(
                "kafka_server_authorizer_metrics_authorization_denied_total",
                "Requests (or parts of them) refused by an ACL",
            )
            .single(b.authorizer.denied() as f64),
        );
    }
    let mut refused = Family::counter(
        "gregor_network_connections_rejected_total",
        "Connections refused, by the limit that refused them",
    );
    for (reason, why) in [
        ("max_connections", Refusal::MaxConnections),
        ("max_connections_per_ip", Refusal::PerIp),
        ("max_connection_creation_rate", Refusal::CreationRate),
    ] {
        refused.add(&[("reason", reason)], b.quotas.refused(why) as f64);
    }
    out.push(refused.done());
    let held = b.pool.held();
    out.push(
        Family::gauge(
            "kafka_network_socketserver_memorypoolused",
            "Bytes of requests being read or queued, held in the request pool",
        )
        .single(held as f64),
    );
    if let Some(limit) = b.config.connection_limits.queued_max_request_bytes {
        out.push(
            Family::gauge(
                "kafka_network_socketserver_memorypoolavailable",
                "Bytes left in the request pool (queued.max.request.bytes)",
            )
            .single(limit.saturating_sub(held) as f64),
        );
    }
}

fn zookeeper_families(b: &Broker, out: &mut Vec<MetricFamily>) {
    let s = &b.zk.stats;
    let (connects, disconnects, expires) = s.counts();
    out.push(
        Family::gauge(
            "gregor_zookeeper_session_connected",
            "1 while the ZooKeeper session is connected",
        )
        .single(if s.is_connected() { 1.0 } else { 0.0 }),
    );
    for (name, help, v) in [
        (
            "kafka_server_sessionexpirelistener_zookeepersyncconnects_total",
            "Connections to ZooKeeper made, in the old session or a new one",
            connects,
        ),
        (
            "kafka_server_sessionexpirelistener_zookeeperdisconnects_total",
            "Connections to ZooKeeper lost",
            disconnects,
        ),
        (
            "kafka_server_sessionexpirelistener_zookeeperexpires_total",
            "ZooKeeper sessions lost",
            expires,
        ),
    ] {
        out.push(Family::counter(name, help).single(v as f64));
    }
}
