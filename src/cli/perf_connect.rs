//! `gregor perf connect`: how many connections per second one broker completes, each with
//! what `--command-config` asks (a TLS handshake, a SASL login — SCRAM's cost is the
//! client's PBKDF2 and the broker's HMACs), from several threads at once, and how long one
//! takes. Each connection is closed once it is logged in; one the broker refuses (its
//! per-address limits, `max.connection.creation.rate.per.ip`) is counted as refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use gregor::network::{BlockingChannel, ClientSecurity};

#[derive(Args)]
pub struct ConnectArgs {
    /// The broker to connect to, host:port.
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// Client properties (`security.protocol`, `ssl.*`, `sasl.*`); none: plaintext.
    #[arg(long = "command-config", value_name = "FILE")]
    command_config: Option<std::path::PathBuf>,
    /// How long to keep connecting.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Connecting threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

pub fn connect(a: ConnectArgs) -> Result<(), String> {
    let security = match &a.command_config {
        Some(p) => super::command_config::read(p)?,
        None => ClientSecurity::default(),
    };
    let addr = a.bootstrap.split(',').next().unwrap_or_default().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let workers: Vec<_> = (0..a.threads.max(1))
        .map(|_| {
            let (addr, security, stop) = (addr.clone(), security.clone(), stop.clone());
            std::thread::spawn(move || worker(&addr, &security, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(a.seconds));
    stop.store(true, Ordering::Relaxed);
    let (mut all, mut refused, mut why) = (Vec::new(), 0, None);
    for w in workers {
        let (took, r, last) = w.join().map_err(|_| "a connecting thread panicked")?;
        all.extend(took);
        refused += r;
        why = why.or(last);
    }
    if all.is_empty() {
        return Err(format!(
            "no connection completed ({})",
            why.unwrap_or_default()
        ));
    }
    let secs = start.elapsed().as_secs_f64();
    all.sort();
    let at = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{} connections in {secs:.1} s: {:.0}/s; connect and log in ms p50 {:.2} p99 {:.2}; {refused} refused{}",
        all.len(),
        all.len() as f64 / secs,
        at(0.5),
        at(0.99),
        why.map_or(String::new(), |w| format!(" (last: {w})"))
    );
    Ok(())
}

/// Connects and logs in until told to stop: each completed connection's time, how many the
/// broker refused, and the last refusal.
fn worker(
    addr: &str,
    security: &ClientSecurity,
    stop: &AtomicBool,
) -> (Vec<Duration>, u64, Option<String>) {
    let (mut took, mut refused, mut last) = (Vec::new(), 0, None);
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let timeout = Duration::from_secs(30);
        match BlockingChannel::connect_to(addr, "gregor-perf-connect", timeout, security) {
            Ok(_) => took.push(t.elapsed()),
            Err(e) => {
                refused += 1;
                last = Some(e.to_string());
            }
        }
    }
    (took, refused, last)
}
