//! ZooKeeper throughput through gregor's client, as the controller uses it: N nodes read and
//! then written from `zk::pipeline`'s threads over one session, five rounds.
//!
//!   cargo run --release --example zk_throughput -- 127.0.0.1:2181/zk-throughput 10000
//!
//! Creates the nodes `/bench/n0..` under the given chroot on its first run.

use std::time::{Duration, Instant};

use gregor::zk::{ZkClient, pipeline};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(connect), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: zk_throughput ZOOKEEPER_CONNECT NODES");
        std::process::exit(2);
    };
    let zk = ZkClient::connect(connect, Duration::from_secs(6)).expect("connect to ZooKeeper");
    let paths: Vec<String> = (0..n).map(|i: usize| format!("/bench/n{i}")).collect();
    if zk.exists("/bench/n0").expect("exists").is_none() {
        pipeline::map(&paths, |p| {
            zk.create_persistent(p, b"{}".to_vec()).expect("create")
        });
    }
    for round in 0..5 {
        let t = Instant::now();
        pipeline::map(&paths, |p| zk.get_data(p).expect("read"));
        let reads = t.elapsed();
        let t = Instant::now();
        pipeline::map(&paths, |p| {
            zk.set_data(p, b"{}".to_vec(), None).expect("write")
        });
        println!(
            "round {round}: {n} reads {reads:?}, {n} writes {:?}",
            t.elapsed()
        );
    }
    zk.close();
}
