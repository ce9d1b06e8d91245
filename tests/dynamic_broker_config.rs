//! Dynamic broker configuration (KIP-226) through the tools an operator uses: Apache Kafka
//! 4.4's own `kafka-configs` and confluent-kafka's AdminClient against real brokers and a real
//! ZooKeeper. Values set per broker and as cluster-wide defaults are stored in Kafka's layout
//! (`/config/brokers/<id>`, `/config/brokers/<default>`), reported by every broker with their
//! source, kept across restarts, and take effect while the brokers run.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::dynamic::*;
use common::wait_until;
use gregor::zk::broker_config;

#[test]
fn defaults_and_per_broker_values_are_reported_by_every_broker_and_kept_across_restarts() {
    let mut c = Cluster::start("dyn-layers", 3, &[("log.retention.bytes", "1000000")]);
    let key = "log.retention.bytes";
    wait_reported(&c, &[1, 2, 3], key, "1000000", "STATIC_BROKER_CONFIG");
    let out = add_config(&c, "", "log.retention.bytes=2000000");
    assert!(
        out.contains("Completed updating default config for brokers in the cluster."),
        "{out}"
    );
    // Kafka's layout in ZooKeeper.
    let stored = broker_config::read(&c.zk, "<default>").unwrap();
    assert_eq!(stored.get(key).map(String::as_str), Some("2000000"));
    wait_reported(
        &c,
        &[1, 2, 3],
        key,
        "2000000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    );
    // One broker's own value wins over the defaults, there only.
    let out = add_config(&c, "2", "log.retention.bytes=3000000");
    assert!(
        out.contains("Completed updating config for broker 2."),
        "{out}"
    );
    wait_reported(&c, &[2], key, "3000000", "DYNAMIC_BROKER_CONFIG");
    wait_reported(&c, &[1, 3], key, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG");
    // kafka-configs' own describe: the broker's dynamic value, and the defaults'.
    let out = configs(&c, &[&broker_args("2")[..], &["--describe"]].concat());
    assert!(
        out.contains("Dynamic configs for broker 2 are:")
            && out.contains("log.retention.bytes=3000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.bytes=3000000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=2000000, STATIC_BROKER_CONFIG:log.retention.bytes=1000000, DEFAULT_CONFIG:log.retention.bytes=-1}"),
        "{out}"
    );
    let out = configs(&c, &[&broker_args("")[..], &["--describe"]].concat());
    assert!(
        out.contains("Default configs for brokers in the cluster are:")
            && out.contains("log.retention.bytes=2000000"),
        "{out}"
    );
    // Kept across a restart of every broker: read from ZooKeeper at start.
    for id in [1, 2, 3] {
        c.terminate(id);
        c.restart(id);
    }
    wait_reported(&c, &[2], key, "3000000", "DYNAMIC_BROKER_CONFIG");
    wait_reported(&c, &[1, 3], key, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG");
    // Deleted, each falls back to the next source.
    delete_config(&c, "2", key);
    wait_reported(&c, &[2], key, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG");
    delete_config(&c, "", key);
    wait_reported(&c, &[1, 2, 3], key, "1000000", "STATIC_BROKER_CONFIG");
    assert!(broker_config::read(&c.zk, "<default>").unwrap().is_empty());
}

#[test]
fn refused_changes_name_the_key_and_write_nothing() {
    let c = Cluster::start("dyn-refused", 1, &[]);
    for (pair, says) in [
        (
            "broker.id=7",
            "Cannot update these configs dynamically: broker.id",
        ),
        (
            "log.dirs=/tmp/elsewhere",
            "Cannot update these configs dynamically: log.dirs",
        ),
        (
            "log.retention.bytes=lots",
            "`log.retention.bytes` must be a number",
        ),
        (
            "min.insync.replicas=0",
            "`min.insync.replicas` must be at least 1",
        ),
        (
            "log.cleanup.policy=shred",
            "`log.cleanup.policy` must be a comma-separated list",
        ),
    ] {
        let args = [&broker_args("1")[..], &["--alter", "--add-config", pair]].concat();
        let out = configs_refused(&c, &args);
        assert!(out.contains(says), "{pair}: {out}");
        let out = configs_refused(
            &c,
            &[&broker_args("")[..], &["--alter", "--add-config", pair]].concat(),
        );
        assert!(out.contains(says), "{pair} as a default: {out}");
    }
    // A key no broker has (kafka-configs lets it through to the broker).
    let said = alter(&c, "1", &["log.retention.byte=5"]);
    assert!(
        said.contains("unknown broker configuration key `log.retention.byte`"),
        "{said}"
    );
    // validate_only checks and writes nothing.
    assert_eq!(
        alter(&c, "1", &["--validate-only", "log.retention.bytes=5000"]),
        "ok"
    );
    let said = alter(&c, "1", &["--validate-only", "log.retention.bytes=x"]);
    assert!(said.contains("log.retention.bytes"), "{said}");
    for entity in ["1", "<default>"] {
        assert!(
            broker_config::read(&c.zk, entity).unwrap().is_empty(),
            "something was written for {entity}"
        );
    }
    assert_eq!(
        value_and_source(&c, 1, "log.retention.bytes"),
        ("-1".to_owned(), "DEFAULT_CONFIG".to_owned())
    );
    // Read-only keys say so.
    let d = describe(&c, "1", &["broker.id", "log.retention.bytes"]);
    assert_eq!(d["broker.id"]["read_only"], true);
    assert_eq!(d["log.retention.bytes"]["read_only"], false);
}

/// The `.log` files of a partition on broker `id`.
fn segments(c: &Cluster, id: i32, topic: &str) -> usize {
    std::fs::read_dir(c.data_dir(id).join(format!("{topic}-0")))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .count()
        })
        .unwrap_or(0)
}

fn log_start(c: &Cluster, topic: &str) -> i64 {
    c.client(1).list_offsets(topic, 0, -2).1[0]
}

/// The topic defaults take effect live: a smaller `log.segment.bytes` rolls the next appends, a
/// retention default deletes old segments of a topic without its own retention but not of
/// one with it, and `min.insync.replicas` refuses acks=all until it is deleted again.
#[test]
fn topic_defaults_take_effect_on_running_brokers() {
    let c = Cluster::start(
        "dyn-effect",
        1,
        &[("log.retention.check.interval.ms", "200")],
    );
    c.create_topic("plain", 1, 1);
    c.create_topic("own", 1, 1);
    let own: std::collections::BTreeMap<String, String> =
        [("retention.ms".to_owned(), "-1".to_owned())].into();
    gregor::zk::topic_config::write(&c.zk, "own", &own).unwrap();
    gregor::zk::topic_config::notify_change(&c.zk, "own").unwrap();
    let value = vec![b'v'; 700];
    let produce = |topic: &str, n: usize| {
        let mut client = c.client(1);
        for _ in 0..n {
            let (code, _) = client.produce(1, topic, 0, &[&value[..]]);
            assert_eq!(code, 0, "produce to {topic}");
        }
    };
    produce("plain", 2);
    produce("own", 2);
    assert_eq!((segments(&c, 1, "plain"), segments(&c, 1, "own")), (1, 1));
    add_config(&c, "", "log.segment.bytes=1024");
    produce("plain", 4);
    produce("own", 4);
    assert!(segments(&c, 1, "plain") >= 3, "plain did not roll");
    assert!(segments(&c, 1, "own") >= 3, "own did not roll");
    add_config(&c, "", "log.retention.ms=1");
    wait_until(Duration::from_secs(30), "retention of plain", || {
        log_start(&c, "plain") > 0
    });
    // One more pass, begun after the one that deleted plain's segments, also saw own.
    let first = log_start(&c, "plain");
    produce("plain", 3);
    wait_until(Duration::from_secs(30), "retention of plain again", || {
        log_start(&c, "plain") > first
    });
    assert_eq!(
        log_start(&c, "own"),
        0,
        "own's retention.ms=-1 was overridden"
    );
    // min.insync.replicas above the replication factor refuses acks=all, live.
    add_config(&c, "", "min.insync.replicas=2");
    let (code, _) = c.client(1).produce(-1, "plain", 0, &[&value[..]]);
    assert_eq!(
        code, 19,
        "acks=all with an ISR of 1 under min.insync.replicas=2"
    );
    delete_config(&c, "", "min.insync.replicas");
    let (code, _) = c.client(1).produce(-1, "plain", 0, &[&value[..]]);
    assert_eq!(code, 0);
}

/// Fresh connections from 127.0.0.1, all held open at once, served out of `n` opened (each
/// asked a Produce, which a refused connection never answers).
fn served_of(c: &Cluster, n: usize) -> usize {
    let mut held = Vec::new();
    for _ in 0..n {
        if let Some(mut k) = common::Client::try_connect(c.addr(1))
            && k.try_produce_empty("t", 0).is_some()
        {
            held.push(k);
        }
    }
    held.len()
}

/// `max.connections.per.ip` lowered refuses connections past it at once; deleted, they are
/// served again.
#[test]
fn max_connections_per_ip_lowered_refuses_the_next_connection() {
    let c = Cluster::start("dyn-connections", 1, &[]);
    c.create_topic("t", 1, 1);
    assert_eq!(served_of(&c, 8), 8);
    // 4: the broker's own connections to itself and kafka-configs' next run still fit.
    add_config(&c, "1", "max.connections.per.ip=4");
    wait_until(
        Duration::from_secs(30),
        "connections past 4 to be refused",
        || served_of(&c, 8) <= 4,
    );
    delete_config(&c, "1", "max.connections.per.ip");
    wait_until(
        Duration::from_secs(30),
        "connections to be served again",
        || served_of(&c, 8) == 8,
    );
}

/// `gregor configs` takes kafka-configs' flags for brokers, list values in brackets; a list key
/// takes IncrementalAlterConfigs' APPEND and SUBTRACT (confluent-kafka), from the value the
/// broker runs with.
#[test]
fn gregor_configs_and_list_operations_on_broker_keys() {
    let c = Cluster::start("dyn-cli", 1, &[]);
    let b = c.bootstrap();
    let out = common::gregor_ok(
        &[
            "configs",
            "-b",
            &b,
            "--entity-type",
            "brokers",
            "--entity-default",
            "--alter",
            "--add-config",
            "log.cleanup.policy=[compact,delete],log.retention.bytes=5000",
        ],
        "",
    );
    assert_eq!(
        out.trim(),
        "Completed updating default config for brokers in the cluster."
    );
    let out = common::gregor_ok(
        &["configs", "-b", &b, "--broker-defaults", "--describe"],
        "",
    );
    assert!(
        out.contains("Default configs for brokers in the cluster are:")
            && out.contains("  log.cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=compact,delete}"),
        "{out}"
    );
    let out = common::gregor_ok(
        &["configs", "-b", &b, "--broker", "1", "--describe", "--all"],
        "",
    );
    assert!(
        out.contains("All configs for broker 1 are:")
            && out.contains("  log.cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}")
            && out.contains("  broker.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=1}"),
        "{out}"
    );
    // Nothing of broker 1's own yet.
    let out = common::gregor_ok(&["configs", "-b", &b, "--broker", "1", "--describe"], "");
    assert_eq!(out.trim(), "Dynamic configs for broker 1 are:");
    // SUBTRACT and APPEND on broker 1's layer start from what it runs with.
    assert_eq!(alter(&c, "1", &["-log.cleanup.policy=delete"]), "ok");
    wait_reported(
        &c,
        &[1],
        "log.cleanup.policy",
        "compact",
        "DYNAMIC_BROKER_CONFIG",
    );
    assert_eq!(alter(&c, "1", &["+log.cleanup.policy=delete"]), "ok");
    wait_reported(
        &c,
        &[1],
        "log.cleanup.policy",
        "compact,delete",
        "DYNAMIC_BROKER_CONFIG",
    );
    let said = alter(&c, "1", &["+log.retention.bytes=7"]);
    assert!(
        said.contains("`log.retention.bytes` is not a list"),
        "{said}"
    );
    common::assert_cli_fails(
        &[
            "configs",
            "-b",
            &b,
            "--broker",
            "1",
            "--alter",
            "--add-config",
            "num.partitions=3",
        ],
        "Cannot update these configs dynamically: num.partitions",
    );
}

/// The threads of broker `id` whose name starts with `prefix`.
fn threads_named(c: &Cluster, id: i32, prefix: &str) -> usize {
    let tasks = format!("/proc/{}/task", c.pid(id));
    std::fs::read_dir(tasks)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|n| n.starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

/// `log.cleaner.threads` resized live restarts the cleaner with as many threads, and the new
/// threads clean: a compacted topic's duplicate keys are gone after the change.
#[test]
fn the_cleaner_is_resized_live_and_keeps_cleaning() {
    let c = Cluster::start("dyn-cleaner", 1, &[("log.cleaner.backoff.ms", "100")]);
    assert_eq!(threads_named(&c, 1, "log-cleaner-"), 1);
    add_config(&c, "", "log.cleaner.threads=3");
    wait_until(Duration::from_secs(30), "three cleaner threads", || {
        threads_named(&c, 1, "log-cleaner-") == 3
    });
    add_config(&c, "1", "log.cleaner.threads=2");
    wait_until(Duration::from_secs(30), "two cleaner threads", || {
        threads_named(&c, 1, "log-cleaner-") == 2
    });
    // The new threads clean: 50 values of one key in small segments become one.
    c.create_topic("kv", 1, 1);
    let set: std::collections::BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "200"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into();
    gregor::zk::topic_config::write(&c.zk, "kv", &set).unwrap();
    gregor::zk::topic_config::notify_change(&c.zk, "kv").unwrap();
    // (Records produced before the notice applies are cleaned as well once it has.)
    let b = c.bootstrap();
    // One batch per run, so the 200-byte segments roll every few records.
    for i in 0..20 {
        let args = [
            "produce",
            "-b",
            &b,
            "--topic",
            "kv",
            "--key-separator",
            "\t",
        ];
        common::gregor_ok(&args, &format!("k\t{i}\n"));
    }
    wait_until(Duration::from_secs(60), "the duplicates cleaned", || {
        let out = common::gregor_ok(
            &[
                "consume",
                "-b",
                &b,
                "--topic",
                "kv",
                "--from-beginning",
                "--max-messages",
                "20",
                "--timeout-ms",
                "2000",
            ],
            "",
        );
        out.lines().count() < 10
    });
}

/// `num.replica.fetchers` 1 → 4 → 1 while a producer with acks=all writes to every partition:
/// the fetcher threads follow the count, every acknowledged message is in the log (end
/// offsets equal the acknowledgements), and every replica is back in every ISR.
#[test]
fn replica_fetchers_are_resized_under_an_acks_all_producer_and_nothing_is_lost() {
    let c = Cluster::start("dyn-fetchers", 3, &[]);
    let partitions = 24;
    c.create_topic("r", partitions, 3);
    for id in [1, 2, 3] {
        c.wait_in_isr("r", id);
    }
    let fetchers = |id| threads_named(&c, id, "replica-fetcher");
    for id in [1, 2, 3] {
        assert_eq!(fetchers(id), 2, "broker {id}: one fetcher per other broker");
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let b = c.bootstrap();
    let acked = std::thread::scope(|s| {
        let producer = s.spawn(|| {
            let mut acked = vec![0i64; partitions as usize];
            let mut clients: std::collections::BTreeMap<i32, common::Client> = Default::default();
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) || round < 3 {
                for p in 0..partitions {
                    let leader = c.leader("r", p);
                    let client = clients.entry(leader).or_insert_with(|| c.client(leader));
                    let (code, _) = client.produce(-1, "r", p, &[b"m".as_slice(); 10]);
                    assert_eq!(code, 0, "partition {p} refused acks=all");
                    acked[p as usize] += 10;
                }
                round += 1;
            }
            acked
        });
        // The producer stops however this thread leaves, a failed wait included.
        let _stop = StopOnDrop(&stop);
        // gregor's own tool here: the changes must come while the writer writes.
        let defaults = |change: &str, what: &str| {
            let args = [
                "configs",
                "-b",
                &b,
                "--broker-defaults",
                "--alter",
                change,
                what,
            ];
            common::gregor_ok(&args, "")
        };
        defaults("--add-config", "num.replica.fetchers=4");
        for id in [1, 2, 3] {
            wait_until(Duration::from_secs(30), "more fetchers", || {
                fetchers(id) > 2
            });
        }
        defaults("--delete-config", "num.replica.fetchers");
        for id in [1, 2, 3] {
            wait_until(
                Duration::from_secs(30),
                "one fetcher per source again",
                || fetchers(id) == 2,
            );
        }
        drop(_stop);
        producer.join().unwrap()
    });
    for p in 0..partitions {
        let leader = c.leader("r", p);
        let end = c.client(leader).list_offsets("r", p, -1).1[0];
        assert_eq!(end, acked[p as usize], "partition {p}");
    }
    for id in [1, 2, 3] {
        c.wait_in_isr("r", id);
    }
}

/// Sets its flag when dropped, unwinding included.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// `unclean.leader.election.enable` turned on as a default: a partition left without a live
/// ISR member gets its out-of-sync replica as leader at once, as Kafka's controller elects on
/// the change rather than at the next broker change.
#[test]
fn unclean_leader_election_turned_on_elects_an_offline_partition() {
    let mut c = Cluster::start("dyn-unclean", 2, &[]);
    c.create_topic_on("u", "1:2");
    c.wait_in_isr("u", 2);
    c.kill9(2);
    wait_until(Duration::from_secs(30), "broker 2 out of the ISR", || {
        c.state("u", 0).is_some_and(|s| s.isr == [1])
    });
    c.kill9(1);
    c.restart(2);
    // Broker 2 is alive but not in the ISR: without unclean election, no leader.
    wait_until(Duration::from_secs(30), "u-0 marked leaderless", || {
        c.controller() == Some(2) && c.leader("u", 0) == -1
    });
    add_config(&c, "", "unclean.leader.election.enable=true");
    wait_until(Duration::from_secs(30), "broker 2 leading u-0", || {
        c.leader("u", 0) == 2
    });
}
