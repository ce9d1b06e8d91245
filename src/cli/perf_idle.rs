//! `gregor perf idle-fetch`: N consumers each holding a long-poll Fetch on partitions nobody
//! writes to, one connection and thread each, until killed or `--seconds` pass — the load of
//! a deployment's idle consumers, beside which the benchmark measures what an append costs
//! (each parked fetch should cost the broker nothing until its own partitions change).
//! Prints `ready: N fetchers parked` once every fetcher has sent its first fetch. A fetch
//! answered with an error (a partition without a leader yet) is sent again 100 ms later.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use gregor::network::BlockingChannel;
use gregor::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use gregor::protocol::header::FETCH;

#[derive(Args)]
pub struct IdleFetchArgs {
    /// The broker to connect to (host:port); it must lead the partitions.
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// The idle topic.
    #[arg(long)]
    topic: String,
    /// Its partitions each fetcher watches.
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    partitions: Vec<i32>,
    /// How many parked fetchers.
    #[arg(long, default_value_t = 200)]
    fetchers: usize,
    /// Each Fetch's max_wait_ms (min_bytes is 1).
    #[arg(long = "max-wait-ms", default_value_t = 500)]
    max_wait_ms: i32,
    /// How long to keep fetching.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
}

pub fn idle_fetch(a: IdleFetchArgs) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(a.seconds);
    let started = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::with_capacity(a.fetchers);
    let parts: Vec<FetchPartition> = a
        .partitions
        .iter()
        .map(|p| FetchPartition::new(*p, 0, 1 << 20))
        .collect();
    for i in 0..a.fetchers {
        let mut chan = BlockingChannel::connect(
            a.bootstrap.as_str(),
            "gregor-perf-idle",
            Duration::from_secs(30),
        )
        .map_err(|e| format!("fetcher {i}: {e}"))?;
        let req = FetchRequest::new(-1, a.max_wait_ms, 1, vec![(a.topic.clone(), parts.clone())]);
        let (started, failed) = (started.clone(), failed.clone());
        let t = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut first = true;
                while Instant::now() < deadline && !failed.load(Ordering::Relaxed) {
                    if first {
                        started.fetch_add(1, Ordering::Relaxed);
                        first = false;
                    }
                    match chan.send::<FetchResponse>(FETCH, fetch::CLIENT_VERSION, &req) {
                        Ok(r) => {
                            let code = std::iter::once(r.error_code)
                                .chain(
                                    r.topics
                                        .iter()
                                        .flat_map(|t| t.1.iter())
                                        .map(|p| p.error_code),
                                )
                                .find(|c| *c != 0);
                            // A partition not led yet (a topic just created): try again soon.
                            if code.is_some() {
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                        Err(e) => {
                            eprintln!("fetcher {i}: {e}");
                            failed.store(true, Ordering::Relaxed);
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start fetcher {i}: {e}"))?;
        threads.push(t);
    }
    while started.load(Ordering::Relaxed) < a.fetchers && !failed.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("ready: {} fetchers parked", a.fetchers);
    for t in threads {
        let _ = t.join();
    }
    if failed.load(Ordering::Relaxed) {
        return Err("a fetcher failed".into());
    }
    Ok(())
}
