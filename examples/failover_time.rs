//! Measures how long a partition is without a leader that answers produce, on a cluster run by
//! `scripts/cluster.sh` (it reads the brokers' pid files under GREGOR_HOME).
//!
//!   cargo run --release --example failover_time -- PARTITIONS kill9|term|controller
//!
//! Creates topic `failover-PARTITIONS` (replication factor 3) if missing, stops a broker — the
//! leader of partition 0 (kill -9 or SIGTERM), or the controller (kill -9) — and reports the
//! time until every partition that broker led answers a produce at a new leader.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gregor::client::metadata;
use gregor::network::BlockingChannel;
use gregor::protocol::message;
use gregor::protocol::produce::{ProduceResponse, ProduceSets};
use gregor::zk::admin;
use gregor::zk::{ZkClient, paths};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, mode) = match (args.get(1).and_then(|a| a.parse::<i32>().ok()), args.get(2)) {
        (Some(n), Some(m)) if ["kill9", "term", "controller"].contains(&m.as_str()) => {
            (n, m.clone())
        }
        _ => {
            eprintln!("usage: failover_time PARTITIONS kill9|term|controller");
            std::process::exit(2);
        }
    };
    let home = std::env::var("GREGOR_HOME").unwrap_or_else(|_| ".gregor/cluster".into());
    let zk_port = std::env::var("ZK_PORT").unwrap_or_else(|_| "2181".into());
    let base: u16 = std::env::var("BASE_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(9092);
    let zk = ZkClient::connect(
        &format!("127.0.0.1:{zk_port}/gregor"),
        Duration::from_secs(10),
    )
    .expect("ZooKeeper");
    let topic = format!("failover-{n}");
    if paths::topic_assignment(&zk, &topic).unwrap().is_none() {
        admin::create_topic(&zk, &topic, n, 3, None).expect("create topic");
    }
    let bootstrap: String = (0..3)
        .map(|i| format!("127.0.0.1:{}", base + i))
        .collect::<Vec<_>>()
        .join(",");
    metadata::partition_leaders(&bootstrap, &topic, "failover-time", Duration::from_secs(60))
        .expect("all partitions led");
    let leaders = |zk: &ZkClient| -> BTreeMap<i32, i32> {
        (0..n)
            .map(|p| {
                (
                    p,
                    paths::leader_and_isr(zk, &topic, p)
                        .unwrap()
                        .map_or(-1, |(l, _)| l.leader),
                )
            })
            .collect()
    };
    let before = leaders(&zk);
    let victim = if mode == "controller" {
        let (d, _) = zk.get_data(paths::CONTROLLER).unwrap();
        paths::from_json::<paths::ElectedBroker>(paths::CONTROLLER, &d)
            .unwrap()
            .brokerid
    } else {
        before[&0]
    };
    let moved: Vec<i32> = before
        .iter()
        .filter(|(_, l)| **l == victim)
        .map(|(p, _)| *p)
        .collect();
    let pid: i32 = std::fs::read_to_string(format!("{home}/broker-{victim}/pid"))
        .expect("pid file")
        .trim()
        .parse()
        .unwrap();
    let sig = if mode == "term" {
        libc::SIGTERM
    } else {
        libc::SIGKILL
    };
    let t0 = Instant::now();
    // SAFETY: signalling a broker process started by scripts/cluster.sh.
    unsafe { libc::kill(pid, sig) };
    let mut set = Vec::new();
    message::encode_entry(&mut set, 0, 0, -1, None, Some(b"probe"));
    let mut pending = moved.clone();
    let mut new_controller = None;
    while !pending.is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "partitions {pending:?} still without a serving leader"
        );
        if mode == "controller"
            && new_controller.is_none()
            && let Ok((d, _)) = zk.get_data(paths::CONTROLLER)
            && paths::from_json::<paths::ElectedBroker>(paths::CONTROLLER, &d)
                .is_ok_and(|e| e.brokerid != victim)
        {
            new_controller = Some(t0.elapsed());
        }
        let Ok(m) =
            metadata::fetch_metadata(&bootstrap, std::slice::from_ref(&topic), "failover-time")
        else {
            continue;
        };
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in &m.topics[0].partitions {
            if pending.contains(&p.partition) && p.leader >= 0 && p.leader != victim {
                by_leader.entry(p.leader).or_default().push(p.partition);
            }
        }
        for (leader, parts) in by_leader {
            let Some(b) = m.brokers.iter().find(|b| b.id == leader) else {
                continue;
            };
            let Ok(mut c) = BlockingChannel::connect(
                (b.host.as_str(), b.port as u16),
                "failover-time",
                Duration::from_secs(10),
            ) else {
                continue;
            };
            let sets: Vec<(i32, &[u8])> = parts.iter().map(|p| (*p, &set[..])).collect();
            let body = ProduceSets {
                acks: 1,
                timeout_ms: 10_000,
                topics: &[(topic.as_str(), sets)],
            };
            let Ok(r) = c.send::<ProduceResponse>(0, 0, &body) else {
                continue;
            };
            for p in &r.topics[0].1 {
                if p.error_code == 0 {
                    pending.retain(|x| *x != p.partition);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = t0.elapsed();
    match new_controller {
        Some(c) => println!(
            "{n} partitions, {mode} of controller broker {victim}: new controller after {:.2} s; its {} partitions answer produce after {:.2} s",
            c.as_secs_f64(),
            moved.len(),
            took.as_secs_f64()
        ),
        None => println!(
            "{n} partitions, {mode} of broker {victim}: its {} partitions answer produce at new leaders after {:.2} s",
            moved.len(),
            took.as_secs_f64()
        ),
    }
}
