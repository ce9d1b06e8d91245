//! `gregor perf ceiling`: what the machine itself allows, measured in the same run as the
//! figures it bounds: raw loopback TCP and sequential disk write for throughput, and how late a
//! sleeping thread wakes for latency.

use std::time::{Duration, Instant};

use clap::Args;

use super::perf::mb;

#[derive(Args)]
pub struct CeilingArgs {
    /// Bytes to move (bench.sh passes what the produce runs write).
    #[arg(long, default_value_t = 500_000_000)]
    bytes: u64,
    /// Directory for the disk test (the brokers' data disk).
    #[arg(long, default_value = ".")]
    dir: std::path::PathBuf,
    /// Seconds to watch how late a sleeping thread wakes (0: not at all).
    #[arg(long, default_value_t = 0)]
    stall_seconds: u64,
}

/// Chunk size for the ceiling tests: a typical produce request.
const CEILING_CHUNK: usize = 64 * 1024;

pub fn ceiling(a: CeilingArgs) -> Result<(), String> {
    use std::io::{Read, Write};
    let chunk = vec![0x5au8; CEILING_CHUNK];
    let chunks = a.bytes.div_ceil(CEILING_CHUNK as u64);
    // Loopback TCP: one thread writes, this one reads.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let data = chunk.clone();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = std::net::TcpStream::connect(addr)?;
        for _ in 0..chunks {
            s.write_all(&data)?;
        }
        Ok(())
    });
    let (mut conn, _) = listener.accept().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut buf = vec![0u8; CEILING_CHUNK];
    let mut got = 0u64;
    while got < chunks * CEILING_CHUNK as u64 {
        let n = conn.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    let tcp_secs = start.elapsed().as_secs_f64();
    writer
        .join()
        .map_err(|_| "writer thread panicked")?
        .map_err(|e| e.to_string())?;
    // Sequential write of the same bytes, then fsync, into a file removed afterwards.
    let path = a.dir.join(".gregor-ceiling-test");
    let start = Instant::now();
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&path)?;
        for _ in 0..chunks {
            f.write_all(&chunk)?;
        }
        f.sync_all()
    })();
    let disk_secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    result.map_err(|e| format!("{}: {e}", path.display()))?;
    println!("loopback tcp: {:.1} MB/s", mb(got) / tcp_secs);
    println!(
        "disk write + fsync: {:.1} MB/s",
        mb(chunks * CEILING_CHUNK as u64) / disk_secs
    );
    if a.stall_seconds > 0 {
        let s = watch_wakeups(Duration::from_secs(a.stall_seconds));
        println!(
            "scheduling: a thread sleeping {} µs at a time woke more than {} ms late {} times in {} s \
             ({:.2} % of the time), the latest {:.1} ms",
            NAP.as_micros(),
            LATE.as_millis(),
            s.late,
            a.stall_seconds,
            100.0 * s.late_time.as_secs_f64() / a.stall_seconds as f64,
            s.worst.as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

/// How long the watching thread sleeps at a time, and how late a wake-up counts as a stall.
const NAP: Duration = Duration::from_micros(500);
const LATE: Duration = Duration::from_millis(2);

/// The wake-ups that came more than `LATE` after they were due, and the time they lost.
#[derive(Debug, Default)]
struct Stalls {
    late: u64,
    late_time: Duration,
    worst: Duration,
}

/// Sleeps `NAP` at a time for `span` and counts the late wake-ups: the floor under any latency
/// measured here, since a request passes several threads that each wait to be run. On a quiet
/// machine of its own this is zero; a shared virtual machine can lose its cores for
/// milliseconds at a time.
fn watch_wakeups(span: Duration) -> Stalls {
    let mut s = Stalls::default();
    let start = Instant::now();
    let mut last = start;
    while last - start < span {
        std::thread::sleep(NAP);
        let now = Instant::now();
        let late = (now - last).saturating_sub(NAP);
        if late > LATE {
            s.late += 1;
            s.late_time += late;
            s.worst = s.worst.max(late);
        }
        last = now;
    }
    s
}
