//! Test harness, a module per concern: ZooKeeper (`zookeeper`), brokers in-process or as
//! processes (`brokers`, `cluster`), the raw Kafka-protocol client (`raw_client`), ports and a
//! cutting proxy (`net`), child processes and tools (`processes`), real clients' helpers
//! (`java`, `requests`, `schema`, `prometheus`); and here, waiting on conditions.
//!
//! Processes: ZooKeeper is started from a thread that lives as long as the test binary, with
//! PR_SET_PDEATHSIG, so it dies with the binary even when a test fails; `GREGOR_TEST_ZK`
//! (host:port) uses an already running server instead.

#![allow(dead_code)]

pub mod brokers;
pub mod certs;
pub mod cluster;
pub mod dynamic;
pub mod java;
pub mod logs;
pub mod net;
pub mod processes;
pub mod prometheus;
pub mod raw_client;
pub mod requests;
pub mod schema;
pub mod secure;
pub mod txn;
pub mod zookeeper;

pub use brokers::*;
pub use net::*;
pub use processes::*;
pub use raw_client::*;
pub use zookeeper::*;

use std::time::{Duration, Instant};

/// ZooKeeper session timeout for brokers in tests: short, so expiry tests are quick.
pub const SESSION_TIMEOUT_MS: u64 = 2000;

pub fn init_logging() {
    let _ = env_logger::builder().is_test(true).try_init();
}

/// Writes `text` to the file `name` in `dir` (a test's temporary directory); its path, for a
/// tool's `--…-json-file` argument.
pub fn write_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The bytes of a partition directory's segment files (`*.log`); 0 while it does not exist.
pub fn segment_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Waits for `f` to hold, polling every 20 ms, failing the test with `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    assert!(
        poll_until(limit, Duration::from_millis(20), f),
        "timed out after {limit:?} waiting for {what}"
    );
}

/// Polls `f` every `every` until it holds (true) or `limit` passes (false).
pub fn poll_until(limit: Duration, every: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !f() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
    true
}

/// Wall-clock milliseconds, as ZooKeeper's `ctime` counts them.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Polls `f` every 200 ms until it is `Ok` or `limit` passes; then, the last error.
pub fn wait_ok(limit: Duration, mut f: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let mut last = Ok(());
    if poll_until(limit, Duration::from_millis(200), || {
        last = f();
        last.is_ok()
    }) {
        Ok(())
    } else {
        last
    }
}
