//! The shell scripts' own helpers (`scripts/lib.sh`), where they talk to the network.

mod common;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

/// A ZooKeeper that accepted the probe's connection but never answered (one still starting)
/// made `scripts/zk.sh start` — and with it the quickstart and `cluster.sh start` — wait
/// forever: the probe is bounded and says "not serving".
#[test]
fn the_zookeeper_probe_gives_up_on_a_server_that_never_answers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
    let script = format!(
        ". {}/scripts/lib.sh; zk_serving {port}; echo \"returned $?\"",
        env!("CARGO_MANIFEST_DIR")
    );
    let (_, out, err) = common::run_with_deadline(
        Command::new("bash").args(["-c", &script]),
        "",
        Duration::from_secs(30),
    );
    assert_eq!(out.trim(), "returned 1", "{err}");
    drop(held.join());
}
