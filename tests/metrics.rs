//! `GET /metrics` from real brokers (`metrics.listener`), read with a strict parser of the
//! Prometheus text format: the Kafka names dashboards use, values that follow what the
//! cluster does (kcat producing and consuming, librdkafka committing), counters that never
//! fall, and a killed broker seen by both the survivors' gauges and `gregor status`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use common::cluster::Cluster;
use common::prometheus::{Scrape, http_get, parse, scrape};
use common::{gregor_cli, kcat, poll_until, python, run_with_deadline, wait_until};
use gregor::protocol::EndPoint;
use gregor::zk::paths;

const UNDER: &str = "kafka_server_replicamanager_underreplicatedpartitions";
const ACTIVE: &str = "kafka_controller_kafkacontroller_activecontrollercount";
const OFFLINE: &str = "kafka_controller_kafkacontroller_offlinepartitionscount";
const LEADERS: &str = "kafka_server_replicamanager_leadercount";
const MESSAGES_IN: &str = "kafka_server_brokertopicmetrics_messagesin_total";
const BYTES_OUT: &str = "kafka_server_brokertopicmetrics_bytesout_total";
const LAG: &str = "kafka_consumergroup_lag";

fn scrape_all(addrs: &BTreeMap<i32, SocketAddr>) -> BTreeMap<i32, Scrape> {
    addrs.iter().map(|(id, a)| (*id, scrape(*a))).collect()
}

/// The sum over brokers of the series `name` with `labels`.
fn total(s: &BTreeMap<i32, Scrape>, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.values().filter_map(|x| x.get(name, labels)).sum()
}

#[test]
fn the_parser_refuses_what_prometheus_refuses() {
    let good = "# HELP a_total x\n# TYPE a_total counter\na_total{topic=\"t\\\"q\"} 3\na_total 4\n";
    let s = parse(good).unwrap();
    assert_eq!(s.get("a_total", &[("topic", "t\"q")]), Some(3.0));
    assert_eq!(s.get("a_total", &[]), Some(4.0));
    for bad in [
        "a 1\n",
        "# TYPE a gauge\na{x=\"1\"\n",
        "# TYPE a gauge\na{1x=\"1\"} 2\n",
        "# TYPE a gauge\na{x=\"1\" y=\"2\"} 2\n",
        "# TYPE a gauge\na 1\na 2\n",
        "# TYPE a counter\na -1\n",
        "# TYPE a weird\n",
        "# TYPE a gauge\na one\n",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn metrics_follow_the_cluster_and_agree_with_status() {
    let mut c = Cluster::start("metrics", 3, &[("metrics.listener", "127.0.0.1:0")]);
    c.create_topic("metered", 3, 3);
    // One partition only broker 3 holds: offline once it dies.
    c.create_topic_on("solo", "3");
    c.wait_all_led("metered");
    c.wait_all_led("solo");
    let addrs: BTreeMap<i32, SocketAddr> = (1..=3).map(|id| (id, c.metrics_addr(id))).collect();
    let (code, _, _) = http_get(addrs[&1], "/").unwrap();
    assert_eq!(code, 404, "only /metrics is served");

    let b = c.bootstrap();
    let input: String = (0..30).map(|i| format!("k{i}:v{i}\n")).collect();
    kcat(&["-P", "-b", &b, "-t", "metered", "-K:"], &input);
    let mut s = BTreeMap::new();
    let settled = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        s = scrape_all(&addrs);
        total(&s, LEADERS, &[]) == 4.0
            && total(&s, UNDER, &[]) == 0.0
            && total(&s, MESSAGES_IN, &[("topic", "metered")]) == 30.0
    });
    assert!(settled, "leaders, ISR and messages in: {s:#?}");
    let first = s.clone();

    // Exactly one broker is the active controller, the one ZooKeeper names.
    let active: Vec<i32> = s
        .iter()
        .filter(|(_, x)| x.get(ACTIVE, &[]) == Some(1.0))
        .map(|(id, _)| *id)
        .collect();
    let (data, _) = c.zk.get_data(paths::CONTROLLER).unwrap();
    let elected: paths::ElectedBroker = serde_json::from_slice(&data).unwrap();
    assert_eq!(active, [elected.brokerid], "{s:#?}");
    for (id, x) in &s {
        let hosted = if *id == 3 { 4.0 } else { 3.0 };
        assert_eq!(
            x.get("kafka_server_replicamanager_partitioncount", &[]),
            Some(hosted),
            "broker {id}"
        );
        assert_eq!(x.get("gregor_zookeeper_session_connected", &[]), Some(1.0));
        assert!(
            x.get("kafka_network_socketserver_memorypoolused", &[])
                .is_some()
        );
        assert!(
            x.get(
                "kafka_server_socket_server_metrics_connection_count",
                &[("listener", "PLAINTEXT")]
            )
            .is_some_and(|n| n >= 1.0),
            "broker {id}: the scrape's own broker connections"
        );
        let controller_view = x.get(OFFLINE, &[]);
        assert_eq!(controller_view, Some(0.0), "broker {id}");
    }
    // The broker-wide series is the sum of the topics'.
    assert_eq!(total(&s, MESSAGES_IN, &[]), 30.0);
    assert!(
        total(
            &s,
            "kafka_server_brokertopicmetrics_bytesin_total",
            &[("topic", "metered")]
        ) > 0.0
    );
    let produced = total(
        &s,
        "kafka_network_requestmetrics_totaltimems_count",
        &[("request", "Produce")],
    );
    assert!(produced >= 1.0, "{s:#?}");
    assert!(
        s.values().any(|x| x
            .get(
                "kafka_network_requestmetrics_totaltimems",
                &[("request", "Produce"), ("quantile", "0.99")]
            )
            .is_some()),
        "p99 of Produce"
    );
    assert!(
        total(
            &s,
            "kafka_network_requestmetrics_totaltimems_count",
            &[("request", "FetchFollower")]
        ) > 0.0
    );

    // A consumer's bytes out, and a group's lag on the coordinator.
    let read = kcat(&["-C", "-b", &b, "-t", "metered", "-e", "-q"], "");
    assert_eq!(read.lines().count(), 30, "{read}");
    let leader = c.leader("metered", 0);
    let (code, ends) = c.client(leader).list_offsets("metered", 0, -1);
    assert_eq!(code, 0);
    let end = ends[0];
    assert!(
        end >= 1,
        "30 keyed messages over 3 partitions leave none in 0? {end}"
    );
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/commit_offset.py"
    );
    let (ok, out, err) = run_with_deadline(
        python().args([script, &b, "metered-g", "metered", "0", "1"]),
        "",
        Duration::from_secs(60),
    );
    assert!(
        ok && out.trim() == "1",
        "commit through librdkafka: {out} {err}"
    );
    let lag_labels = [
        ("consumergroup", "metered-g"),
        ("topic", "metered"),
        ("partition", "0"),
    ];
    let mut later = BTreeMap::new();
    let lagged = poll_until(Duration::from_secs(30), Duration::from_millis(200), || {
        later = scrape_all(&addrs);
        let reporting: Vec<f64> = later
            .values()
            .filter_map(|x| x.get(LAG, &lag_labels))
            .collect();
        reporting == [(end - 1) as f64] && total(&later, BYTES_OUT, &[("topic", "metered")]) > 0.0
    });
    assert!(
        lagged,
        "one broker, the coordinator, reports the lag: {later:#?}"
    );
    let coordinator = later
        .iter()
        .find(|(_, x)| x.get(LAG, &lag_labels).is_some())
        .map(|(id, _)| *id)
        .unwrap();
    assert_eq!(
        later[&coordinator].get("kafka_consumergroup_current_offset", &lag_labels),
        Some(1.0)
    );
    for (id, x) in &later {
        let fell = x.counters_that_fell(&first[id]);
        assert!(fell.is_empty(), "broker {id}: counters went down: {fell:?}");
    }

    // A registered broker that does not answer is named by status, with why it still counts.
    let silent = common::free_port();
    let endpoint = EndPoint {
        listener: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: i32::from(silent),
    };
    let protocols = [("PLAINTEXT".to_owned(), "PLAINTEXT".to_owned())].into();
    c.zk.create_ephemeral(
        &paths::broker_path(9),
        paths::broker_registration(&[endpoint], &protocols),
        Duration::from_secs(10),
    )
    .unwrap();
    let status = |args: &[&str]| {
        let mut all = vec!["status", "--bootstrap", &b];
        all.extend_from_slice(args);
        let (ok, out, err) = gregor_cli(&all, "");
        assert!(ok, "{err}");
        out
    };
    let mut out = String::new();
    let named = poll_until(Duration::from_secs(30), Duration::from_millis(200), || {
        out = status(&[]);
        out.lines()
            .any(|l| l == format!("  9\t127.0.0.1:{silent}\tNOT ANSWERING"))
    });
    assert!(named, "{out}");
    assert!(
        out.contains("Note: broker(s) 9 registered but not answering"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l == format!("Controller: {}", elected.brokerid)),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l == format!("Coordinator: {coordinator}")),
        "{out}"
    );
    c.zk.delete_ephemeral(&paths::broker_path(9)).unwrap();

    // Kill broker 3: the survivors' gauges and status both count its partitions.
    c.kill9(3);
    let survivors: BTreeMap<i32, SocketAddr> = addrs
        .iter()
        .filter(|(id, _)| **id != 3)
        .map(|(i, a)| (*i, *a))
        .collect();
    let mut s = BTreeMap::new();
    let seen = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        s = scrape_all(&survivors);
        total(&s, UNDER, &[]) == 3.0 && total(&s, OFFLINE, &[]) == 1.0
    });
    assert!(
        seen,
        "survivors report 3 under-replicated and 1 offline: {s:#?}"
    );
    wait_until(Duration::from_secs(30), "status to agree", || {
        status(&[]).contains("Partitions: 4, under-replicated: 3, offline: 1")
    });
    let under = status(&["--under-replicated"]);
    let listed = under
        .lines()
        .filter(|l| l.trim_start().starts_with("partition "))
        .count();
    assert_eq!(listed, 3, "{under}");

    // Back again, broker 3 rejoins every ISR: its leaders count the expansions.
    let expanded_before = total(&s, "kafka_server_replicamanager_isrexpands_total", &[]);
    c.restart(3);
    let mut addrs = addrs;
    addrs.insert(3, c.metrics_addr(3));
    let healed = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        s = scrape_all(&addrs);
        total(&s, UNDER, &[]) == 0.0
            && total(&s, OFFLINE, &[]) == 0.0
            && total(&s, "kafka_server_replicamanager_isrexpands_total", &[])
                >= expanded_before + 3.0
    });
    assert!(healed, "{s:#?}");

    // The example dashboard queries only what brokers serve.
    let served: BTreeSet<&str> = [&first, &later, &s]
        .iter()
        .flat_map(|scrapes| scrapes.values())
        .flat_map(|x| x.types.keys().map(String::as_str))
        .collect();
    for name in dashboard_metrics() {
        assert!(
            served.contains(name.as_str()),
            "the dashboard queries {name}, never served"
        );
    }
}

/// Every metric name the queries of `doc/grafana-dashboard.json` use, after checking it is in
/// Grafana's import format (a Prometheus data source input that every panel and query uses).
fn dashboard_metrics() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/doc/grafana-dashboard.json");
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .expect("the dashboard is JSON");
    let input = &d["__inputs"][0];
    assert_eq!(input["name"], "DS_PROMETHEUS");
    assert_eq!(input["pluginId"], "prometheus");
    assert!(d["title"].is_string() && d["schemaVersion"].is_u64());
    let panels = d["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10);
    let mut names = BTreeSet::new();
    for p in panels {
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{p}");
        assert!(p["gridPos"]["w"].is_u64() && p["title"].is_string(), "{p}");
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{p}");
        for t in targets {
            let expr = t["expr"].as_str().expect("expr");
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("kafka_") || word.starts_with("gregor_") {
                    names.insert(word.to_owned());
                }
            }
        }
    }
    assert!(names.len() >= 15, "{names:?}");
    names
}
