//! Compacted topics on real brokers through confluent-kafka (librdkafka): created with
//! `cleanup.policy=compact`, written with keys × versions and tombstones by an idempotent
//! producer with every codec, cleaned by the broker's cleaner; a consumer from the beginning
//! then sees each key's last value at the offset it was written at, far fewer records than
//! were produced, and no tombstone once `delete.retention.ms` has passed; a record without a
//! key is refused. With three replicas: a follower down while the leader cleaned catches up,
//! and after the other two are killed it serves the same key → value.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::Cluster;
use common::prometheus::scrape;
use common::{run_with_deadline, wait_ok};

fn client(bootstrap: &str, args: &[&str]) -> String {
    let mut cmd = common::python();
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/compaction_client.py"
    ))
    .arg(args[0])
    .arg(bootstrap)
    .args(&args[1..]);
    let (ok, out, err) = run_with_deadline(&mut cmd, "", Duration::from_secs(90));
    assert!(ok, "compaction_client {args:?}: {out}\n{err}");
    out
}

/// A compacted topic's settings for the test: small segments, cleaned as soon as a tenth is
/// dirty, tombstones kept 2 s.
const COMPACTED: &[&str] = &[
    "cleanup.policy=compact",
    "segment.bytes=4096",
    "min.cleanable.dirty.ratio=0.1",
    "delete.retention.ms=2000",
];

/// What `read` printed: partition → offset → (key, value or None).
fn read(bootstrap: &str, topic: &str) -> BTreeMap<i32, BTreeMap<i64, (String, Option<String>)>> {
    read_with(bootstrap, "read", topic)
}

/// The same through another client's mode.
fn read_with(
    bootstrap: &str,
    mode: &str,
    topic: &str,
) -> BTreeMap<i32, BTreeMap<i64, (String, Option<String>)>> {
    let out = client(bootstrap, &[mode, topic]);
    assert!(!out.contains("stalled") && !out.contains("error"), "{out}");
    let mut recs: BTreeMap<i32, BTreeMap<i64, _>> = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.splitn(5, ' ').collect();
        if f[0] == "rec" {
            let value = (f[4] != "-").then(|| f[4].to_owned());
            let (p, o) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            recs.entry(p)
                .or_default()
                .insert(o, (f[3].to_owned(), value));
        }
    }
    recs
}

/// Where the producer said each key's last version went: key → (partition, offset), and
/// whether it is a tombstone (every `tomb`-th key; 0: none).
fn produced_last(out: &str, tomb: usize) -> BTreeMap<String, (i32, i64, Option<String>)> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if f[0] == "last" {
            let i: usize = f[1][1..].parse().unwrap();
            let value =
                (tomb == 0 || !i.is_multiple_of(tomb)).then(|| format!("k{i}-v{}", VERSIONS - 1));
            m.insert(
                f[1].to_owned(),
                (f[2].parse().unwrap(), f[3].parse().unwrap(), value),
            );
        }
    }
    assert_eq!(m.len(), KEYS, "{out}");
    m
}

/// Each key's last record: key → (partition, offset, value).
fn latest(
    recs: &BTreeMap<i32, BTreeMap<i64, (String, Option<String>)>>,
) -> BTreeMap<String, (i32, i64, Option<String>)> {
    let mut out = BTreeMap::new();
    for (p, by_offset) in recs {
        for (o, (k, v)) in by_offset {
            out.insert(k.clone(), (*p, *o, v.clone()));
        }
    }
    out
}

/// Records of the keys × versions (not the filler after them).
fn count(recs: &BTreeMap<i32, BTreeMap<i64, (String, Option<String>)>>) -> usize {
    recs.values()
        .flat_map(|m| m.values())
        .filter(|(k, _)| !k.starts_with("filler"))
        .count()
}

fn tombstones(recs: &BTreeMap<i32, BTreeMap<i64, (String, Option<String>)>>) -> usize {
    recs.values()
        .flat_map(|m| m.values())
        .filter(|(_, v)| v.is_none())
        .count()
}

const KEYS: usize = 200;
const VERSIONS: usize = 5;

#[test]
fn compacted_topics_keep_each_keys_last_value_with_every_codec_and_drop_tombstones() {
    let cluster = Cluster::start(
        "compaction",
        1,
        &[
            ("log.cleaner.backoff.ms", "100"),
            ("log.segment.delete.delay.ms", "1000"),
            ("metrics.listener", "127.0.0.1:0"),
        ],
    );
    let b = cluster.bootstrap();
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    let mut wanted = BTreeMap::new();
    for codec in codecs {
        let topic = format!("compacted-{codec}");
        let mut args = vec!["create", &topic, "2", "1"];
        args.extend(COMPACTED);
        assert!(client(&b, &args).contains(&format!("created {topic} 0")));
        let out = client(&b, &["produce", &topic, codec, "200", "5", "10"]);
        assert!(
            out.contains("produced 1000") && !out.contains("failed"),
            "{out}"
        );
        wanted.insert(topic, produced_last(&out, 10));
    }
    // The settings as DescribeConfigs reports them, with their sources; one changed live.
    let t = "compacted-none";
    let out = client(&b, &["alter", t, "min.cleanable.dirty.ratio=0.2"]);
    assert!(out.contains("altered min.cleanable.dirty.ratio 0"), "{out}");
    let out = client(
        &b,
        &[
            "describe",
            t,
            "cleanup.policy",
            "min.cleanable.dirty.ratio",
            "min.compaction.lag.ms",
        ],
    );
    for want in [
        "config cleanup.policy compact DYNAMIC_TOPIC_CONFIG",
        "config min.cleanable.dirty.ratio 0.2 DYNAMIC_TOPIC_CONFIG",
        "config min.compaction.lag.ms 0 DEFAULT_CONFIG",
    ] {
        assert!(out.contains(want), "{want}:\n{out}");
    }
    // A compacted topic refuses a record without a key, as Kafka does.
    let out = client(&b, &["keyless", "compacted-none"]);
    assert!(out.contains("keyless INVALID_RECORD"), "{out}");
    // Written: what a consumer saw before cleaning, with every version.
    for codec in codecs {
        let topic = format!("compacted-{codec}");
        let want = &wanted[&topic];
        // Cleaned: every key's last record at its offset, one per key, and once the horizon
        // passed (2 s after the clean that first kept them), no tombstone: 180 of 1,000.
        let r = wait_ok(Duration::from_secs(90), || {
            let after = read(&b, &topic);
            let got = latest(&after);
            let (n, dead) = (count(&after), tombstones(&after));
            let alive = |m: &BTreeMap<String, (i32, i64, Option<String>)>| {
                m.iter()
                    .filter(|(k, v)| v.2.is_some() && !k.starts_with("filler"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>()
            };
            let (got, want) = (alive(&got), alive(want));
            if got != want {
                let wrong: Vec<_> = want
                    .iter()
                    .filter(|(k, v)| got.get(*k) != Some(v))
                    .take(3)
                    .collect();
                return Err(format!("{topic}: last records differ: {wrong:?}"));
            }
            for by_offset in after.values() {
                let offsets: Vec<_> = by_offset.keys().collect();
                assert!(
                    offsets.windows(2).all(|w| w[0] < w[1]),
                    "{topic}: offsets in order"
                );
            }
            if n != KEYS - KEYS / 10 || dead > 0 {
                return Err(format!(
                    "{topic}: {n} records, {dead} tombstones after cleaning"
                ));
            }
            Ok(())
        });
        r.unwrap_or_else(|e| panic!("{e}\n{}", cluster.log_of(1)));
    }
    // kafka-python and the Java client (Kafka 4.4's console consumer) read the cleaned log as
    // librdkafka does: every record, at the same offsets, over the empty batches and the holes.
    let rdkafka = read(&b, "compacted-gzip");
    assert_eq!(
        read_with(&b, "read-kafka-python", "compacted-gzip"),
        rdkafka
    );
    let n = rdkafka
        .values()
        .map(BTreeMap::len)
        .sum::<usize>()
        .to_string();
    let (ok, out, err) = common::java::run_kafka_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &b,
        &[
            "--topic",
            "compacted-gzip",
            "--from-beginning",
            "--max-messages",
            &n,
            "--timeout-ms",
            "30000",
            "--property",
            "print.partition=true",
            "--property",
            "print.offset=true",
            "--property",
            "print.key=true",
            "--property",
            "print.value=false",
        ],
    );
    assert!(ok, "{out}\n{err}");
    let mut java: BTreeMap<i32, BTreeMap<i64, String>> = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if let [p, o, k] = f[..] {
            let p = p.trim_start_matches("Partition:").parse().unwrap();
            let o = o.trim_start_matches("Offset:").parse().unwrap();
            java.entry(p).or_default().insert(o, k.to_owned());
        }
    }
    let expected: BTreeMap<i32, BTreeMap<i64, String>> = rdkafka
        .iter()
        .map(|(p, m)| (*p, m.iter().map(|(o, (k, _))| (*o, k.clone())).collect()))
        .collect();
    assert_eq!(java, expected, "{err}");
    let s = scrape(cluster.metrics_addr(1));
    let cleans = s
        .samples
        .iter()
        .find(|((n, _), _)| n == "gregor_log_cleaner_cleans_total");
    assert!(cleans.is_some_and(|(_, v)| *v >= 5.0), "{cleans:?}");
    let uncleanable = s
        .samples
        .iter()
        .find(|((n, _), _)| n == "kafka_log_logcleanermanager_uncleanable_partitions_count");
    assert_eq!(uncleanable.map(|(_, v)| *v), Some(0.0));
}

#[test]
fn a_follower_down_while_its_leader_cleaned_catches_up_and_serves_the_same_keys() {
    let mut cluster = Cluster::start(
        "compaction-replicas",
        3,
        &[("log.cleaner.backoff.ms", "100")],
    );
    let b = cluster.bootstrap();
    let topic = "compacted-rf3";
    let mut args = vec!["create", topic, "1", "3"];
    args.extend(COMPACTED);
    assert!(client(&b, &args).contains("created compacted-rf3 0"));
    cluster.wait_all_led(topic);
    let leader = cluster.leader(topic, 0);
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    cluster.kill9(follower);
    let out = client(&b, &["produce", topic, "lz4", "200", "5", "0"]);
    assert!(
        out.contains("produced 1000") && !out.contains("failed"),
        "{out}"
    );
    let want = produced_last(&out, 0);
    // The leader cleans while the follower is down.
    wait_ok(Duration::from_secs(60), || {
        let n = count(&read(&b, topic));
        (n == KEYS)
            .then_some(())
            .ok_or(format!("{n} records, not cleaned yet"))
    })
    .unwrap();
    cluster.restart(follower);
    common::wait_until(
        Duration::from_secs(60),
        "the follower back in the ISR",
        || {
            cluster
                .state(topic, 0)
                .is_some_and(|s| s.isr.contains(&follower))
        },
    );
    // Only the follower is left: it leads, with the same last value of every key.
    for id in (1..=3).filter(|id| *id != follower) {
        cluster.kill9(id);
    }
    common::wait_until(Duration::from_secs(60), "the follower leading", || {
        cluster
            .state(topic, 0)
            .is_some_and(|s| s.leader == follower)
    });
    let b = cluster.bootstrap();
    let got = wait_ok(Duration::from_secs(30), || {
        let got = latest(&read(&b, topic));
        let got: BTreeMap<_, _> = got
            .into_iter()
            .filter(|(k, _)| !k.starts_with("filler"))
            .collect();
        (got == want).then_some(()).ok_or(format!(
            "{} keys differ",
            want.iter().filter(|(k, v)| got.get(*k) != Some(v)).count()
        ))
    });
    got.unwrap_or_else(|e| panic!("{e}\n{}", cluster.log_of(follower)));
}
