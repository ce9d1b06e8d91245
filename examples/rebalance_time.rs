//! Measures how long a consumer group stops consuming when its membership changes, on a
//! cluster run by `scripts/cluster.sh`.
//!
//!   cargo run --release --example rebalance_time -- CONSUMERS PARTITIONS ROUNDS
//!
//! Creates topic `rebalance-PARTITIONS` (replication factor 2) if missing, keeps a producer
//! writing to every partition, starts CONSUMERS group consumers, then alternately adds and
//! removes one more member. For each change it reports the time until every member has been
//! told its new partitions (Start) and until every member has received a message again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gregor::client::consumer::{ConsumerConfig, GroupConsumer};
use gregor::client::metadata;
use gregor::client::producer::{Producer, ProducerConfig};
use gregor::protocol::coordinator::Subscription;
use gregor::zk::ZkClient;
use gregor::zk::admin;
use parking_lot::Mutex;

/// What a member's polling thread reports: Starts seen, and when the latest Start was first
/// followed by a message.
#[derive(Default)]
struct Progress {
    starts: u64,
    start_seen: Option<Instant>,
    fetching_since: Option<Instant>,
}

struct Member {
    progress: Arc<Mutex<Progress>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Member {
    fn start(cfg: ConsumerConfig) -> Member {
        let mut c = GroupConsumer::start(cfg).expect("consumer registers");
        let progress: Arc<Mutex<Progress>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (p, st) = (progress.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Acquire) {
                let got = c.poll(Duration::from_millis(10)).is_some();
                let starts = c.start_count();
                let mut p = p.lock();
                if starts != p.starts {
                    *p = Progress {
                        starts,
                        start_seen: Some(Instant::now()),
                        fetching_since: None,
                    };
                } else if got && p.fetching_since.is_none() && p.starts > 0 {
                    p.fetching_since = Some(Instant::now());
                }
            }
            c.close();
        });
        Member {
            progress,
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let [consumers, partitions, rounds] = args[..] else {
        eprintln!("usage: rebalance_time CONSUMERS PARTITIONS ROUNDS");
        std::process::exit(2);
    };
    let zk_port = std::env::var("ZK_PORT").unwrap_or_else(|_| "2181".into());
    let base: u16 = std::env::var("BASE_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(9092);
    let boot = format!("127.0.0.1:{base},127.0.0.1:{}", base + 1);
    let zk = ZkClient::connect(
        &format!("127.0.0.1:{zk_port}/gregor"),
        Duration::from_secs(10),
    )
    .expect("ZooKeeper");
    let topic = format!("rebalance-{partitions}");
    let _ = admin::create_topic(&zk, &topic, partitions as i32, 2, None);
    metadata::partition_leaders(&boot, &topic, "rebalance", Duration::from_secs(60))
        .expect("partitions led");

    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (boot, topic, stop) = (boot.clone(), topic.clone(), stop.clone());
        std::thread::spawn(move || {
            let p = Producer::new(ProducerConfig::new(&boot)).expect("producer");
            // About 20,000 messages a second over every partition, bounded by the run.
            while !stop.load(Ordering::Acquire) {
                for _ in 0..200 {
                    p.send(&topic, None, Some(b"tick"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            p.close();
        })
    };
    let group = format!("rebalance-{}", std::process::id());
    let cfg = || {
        let mut c = ConsumerConfig::new(
            &boot,
            &group,
            Subscription::Static([(topic.clone(), 1)].into()),
        );
        c.auto_offset_reset = "largest".into();
        c
    };
    let mut members: Vec<Member> = (0..consumers).map(|_| Member::start(cfg())).collect();
    wait_all_fetching(&members, Instant::now() + Duration::from_secs(60));
    println!(
        "{consumers} consumers on {partitions} partitions; change → all started / all fetching again"
    );
    let mut extra: Option<Member> = None;
    for round in 0..rounds {
        let before: Vec<u64> = members.iter().map(|m| m.progress.lock().starts).collect();
        let t0 = Instant::now();
        let what = match extra.take() {
            None => {
                extra = Some(Member::start(cfg()));
                "join"
            }
            Some(m) => {
                m.stop();
                "leave"
            }
        };
        let all: Vec<&Member> = members.iter().chain(extra.iter()).collect();
        let deadline = t0 + Duration::from_secs(60);
        let (started, fetching) = loop {
            let newer = all
                .iter()
                .enumerate()
                .all(|(i, m)| m.progress.lock().starts > before.get(i).copied().unwrap_or(0));
            let times: Vec<(Option<Instant>, Option<Instant>)> = all
                .iter()
                .map(|m| {
                    let p = m.progress.lock();
                    (p.start_seen, p.fetching_since)
                })
                .collect();
            if newer && times.iter().all(|t| t.1.is_some()) {
                let s = times.iter().filter_map(|t| t.0).max().expect("started");
                let f = times.iter().filter_map(|t| t.1).max().expect("fetching");
                break (s - t0, f - t0);
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: no recovery in 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        println!(
            "round {round} ({what}): all started after {} ms, all fetching after {} ms",
            started.as_millis(),
            fetching.as_millis()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Release);
    let _ = producer.join();
    for m in members.drain(..).chain(extra) {
        m.stop();
    }
}

fn wait_all_fetching(members: &[Member], deadline: Instant) {
    while !members
        .iter()
        .all(|m| m.progress.lock().fetching_since.is_some())
    {
        assert!(Instant::now() < deadline, "the group never settled");
        std::thread::sleep(Duration::from_millis(10));
    }
}
