//! The multi-host harness itself: hosts and what runs on them are removed after a failure, a
//! dead owner's hosts are reaped, and `scripts/cluster.sh --hosts` gives the topology by hand
//! with `gregor status` and the metrics working against it. Needs root and `ip netns`, like
//! `tests/net_partitions.rs`.

mod common;
#[path = "common/lab.rs"]
mod lab;
#[path = "common/lab_checks.rs"]
mod lab_checks;

use std::time::Duration;

use common::poll_until;
use lab::Lab;
use lab_checks::{ONE_LAB, PROPS, SESSION_MS};

/// Nothing is left behind: a lab dropped while its test panics takes its namespaces, veths,
/// bridge and processes with it; and a topology whose owning process died before it could
/// clean up is removed, with what ran in it, by the next `scripts/hosts.sh reap` (which every
/// `Lab::start` runs first).
#[test]
fn hosts_and_their_processes_are_removed_after_a_failure() {
    let _one = ONE_LAB.lock();
    if lab::skipped("net_harness::cleanup") {
        return;
    }
    let namespaces = |prefix: &str| -> Vec<String> {
        let out = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&format!("{prefix}-")))
            .map(str::to_owned)
            .collect()
    };
    // A panicking test.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (tag, mut sleeper) = std::thread::spawn(move || {
        let (tx, rx) = std::sync::mpsc::channel();
        let held = std::thread::spawn(move || {
            let mut lab = Lab::start(&dir, 1, SESSION_MS, 500, PROPS);
            // Not tied to this thread's life, as `Lab::on` would make it: only the lab's
            // cleanup can end it.
            let sleeper = std::process::Command::new("ip")
                .args(["netns", "exec", &format!("{}-b2", lab.tag), "sleep", "600"])
                .spawn()
                .unwrap();
            lab.restart(1);
            tx.send((lab.tag.clone(), sleeper)).unwrap();
            panic!("a test failing with its lab up");
        })
        .join();
        assert!(held.is_err());
        rx.recv().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(
        namespaces(&tag),
        Vec::<String>::new(),
        "namespaces left by a failed test"
    );
    let mut status = None;
    poll_until(Duration::from_secs(10), Duration::from_millis(50), || {
        status = sleeper.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        panic!("a process on a failed test's host was not killed");
    }
    // An owner killed before its cleanup: a process that has exited owns this tag.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let owner = gone.id();
    gone.wait().unwrap();
    let tag = format!("gt{owner}x0");
    let hosts = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hosts.sh");
    assert!(
        std::process::Command::new(hosts)
            .args(["up", &tag])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(namespaces(&tag).len(), 10);
    let mut orphan = std::process::Command::new("ip")
        .args(["netns", "exec", &format!("{tag}-b1"), "sleep", "600"])
        .spawn()
        .unwrap();
    assert!(
        std::process::Command::new(hosts)
            .arg("reap")
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(
        namespaces(&tag),
        Vec::<String>::new(),
        "reap left the dead owner's hosts"
    );
    let killed = poll_until(Duration::from_secs(10), Duration::from_millis(50), || {
        orphan.try_wait().unwrap().is_some()
    });
    if !killed {
        let _ = orphan.kill();
    }
    let _ = orphan.wait();
    assert!(
        killed,
        "the process on the dead owner's host was not killed"
    );
}

/// `scripts/cluster.sh --hosts`: the same topology by hand. It starts the ensemble and five
/// brokers on their own addresses, `status` (run on the client host) sees them, every broker
/// serves its metrics on its own address, an isolated broker drops out and comes back on
/// `heal`, and `stop` leaves no host behind.
#[test]
fn cluster_sh_hosts_starts_isolates_heals_and_stops() {
    let _one = ONE_LAB.lock();
    if lab::skipped("net_harness::cluster_sh_hosts") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let tag = format!("gt{}x900", std::process::id());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh");
    let run = |args: &[&str]| -> (bool, String, String) {
        let mut cmd = std::process::Command::new(script);
        cmd.arg("--hosts")
            .args(args)
            .env("GREGOR_HOME", home.path())
            .env("HOSTS_TAG", &tag)
            .env("GREGOR_BIN", env!("CARGO_BIN_EXE_gregor"));
        common::run_with_deadline(&mut cmd, "", Duration::from_secs(180))
    };
    let status_says = |want: &str| {
        poll_until(Duration::from_secs(60), Duration::from_millis(500), || {
            run(&["status"]).1.contains(want)
        })
    };
    let (ok, out, err) = run(&["start"]);
    let stop = scopeguard(|| {
        run(&["stop"]);
    });
    assert!(ok, "start failed:\n{out}\n{err}");
    assert!(out.contains("5 brokers registered"), "{out}");
    assert_eq!(
        out.matches(" leader").count(),
        1,
        "one ensemble leader: {out}"
    );
    assert!(status_says("Brokers (5)"), "status: {}", run(&["status"]).1);
    // The metrics, scraped from the client host as Prometheus would.
    {
        let _in_client = lab::InNamespace::enter(&format!("{tag}-client"));
        for id in 1..=5 {
            let addr = format!("{}:9404", lab::host_addr(&format!("b{id}")));
            let scrape = common::prometheus::scrape(addr.parse().unwrap());
            assert_eq!(
                scrape.get("kafka_server_replicamanager_underreplicatedpartitions", &[]),
                Some(0.0),
                "broker {id}'s metrics"
            );
        }
    }
    assert!(run(&["isolate", "b5"]).0);
    assert!(
        status_says("Brokers (4)"),
        "b5 isolated: {}",
        run(&["status"]).1
    );
    assert!(run(&["heal"]).0);
    assert!(status_says("Brokers (5)"), "healed: {}", run(&["status"]).1);
    drop(stop);
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&out.stdout)
        .matches(&format!("{tag}-"))
        .count();
    assert_eq!(left, 0, "stop left {left} namespaces");
}

/// Runs `f` on drop: the lab is stopped even when an assertion fails.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

#[test]
fn committed_offsets_are_read_from_the_groups_table() {
    let table = "GROUP g: consumer range Stable, 2 member(s)\n\
                 TOPIC PARTITION COMMITTED LOG-END LAG  OWNER\n\
                 t 0 17 20 3  rdkafka-1\n\
                 t 1 - 5 5  none\n\
                 other 0 4 4 0  rdkafka-1\n";
    assert_eq!(common::parse_committed_offsets(table, "t"), vec![(0, 17)]);
}
