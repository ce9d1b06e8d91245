//! The log cleaner: compaction of logs whose `cleanup.policy` has `compact` (Kafka's
//! `LogCleaner`). `log.cleaner.threads` threads each take the dirtiest log that is due —
//! its dirty share at least `min.cleanable.dirty.ratio`, or its oldest dirty record older than
//! `max.compaction.lag.ms`, or a tombstone's delete horizon passed — and clean it (`clean`):
//! an offset map of its dirty section (`offset_map`), what each entry keeps (`filter`), new
//! segments swapped in by renames. Where a log's clean stopped is kept in the data
//! directory's `cleaner-offset-checkpoint` (Kafka's file). A log that cannot be cleaned (a
//! corrupt batch) is marked uncleanable and skipped until the broker restarts, with an error
//! log: never a crash loop.

pub mod clean;
mod filter;
pub mod offset_map;
mod throttle;
mod txns;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};
use parking_lot::Mutex;

pub use clean::{Cleanable, Cleaned, Step, StepHook};
pub use filter::Tally;
pub use throttle::Throttle;

use super::manager::LogManager;
use super::partition_log::Log;
use crate::config::CleanerConfig;

/// A log's cleaning state.
pub struct CleaningState {
    /// Below this offset the log is clean (`cleaner-offset-checkpoint`).
    pub(super) first_dirty: AtomicI64,
    /// The earliest delete horizon of the tombstones the last clean kept (`i64::MAX`: none).
    pub(super) earliest_horizon: AtomicI64,
    uncleanable: AtomicBool,
    in_progress: AtomicBool,
}

impl Default for CleaningState {
    fn default() -> Self {
        CleaningState {
            first_dirty: AtomicI64::new(0),
            earliest_horizon: AtomicI64::new(i64::MAX),
            uncleanable: AtomicBool::new(false),
            in_progress: AtomicBool::new(false),
        }
    }
}

impl Log {
    /// Where the dirty section starts: below it the log was cleaned.
    pub fn first_dirty_offset(&self) -> i64 {
        self.cleaning.first_dirty.load(Ordering::Acquire)
    }

    /// From the checkpoint, at start-up.
    pub fn set_first_dirty_offset(&self, offset: i64) {
        self.cleaning.first_dirty.store(offset, Ordering::Release);
    }

    pub fn is_uncleanable(&self) -> bool {
        self.cleaning.uncleanable.load(Ordering::Acquire)
    }
}

/// The cleaners' figures, in the JMX exporter's names (`metrics`).
#[derive(Default)]
pub struct CleanerStats {
    /// `kafka_log_logcleaner_max_clean_time_secs`: the last clean's time, in ms.
    pub last_clean_ms: AtomicU64,
    /// `…_cleaner_recopy_percent`: bytes written over bytes read by the last clean, as f64 bits.
    pub recopy_percent: AtomicU64,
    /// `…_max_buffer_utilization_percent`: the last clean's map use, as f64 bits.
    pub buffer_utilization_percent: AtomicU64,
    /// `kafka_log_logcleanermanager_max_dirty_percent`: the dirtiest compacted log's dirty
    /// share when a cleaner last looked, as f64 bits.
    pub max_dirty_percent: AtomicU64,
    /// Cleans done (gregor's).
    pub cleans: AtomicU64,
}

fn store_f64(a: &AtomicU64, v: f64) {
    a.store(v.to_bits(), Ordering::Relaxed);
}

pub fn load_f64(a: &AtomicU64) -> f64 {
    f64::from_bits(a.load(Ordering::Relaxed))
}

/// The running cleaner threads.
pub struct LogCleaner {
    stop: Mutex<Option<Sender<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    io: Arc<Throttle>,
}

impl LogCleaner {
    /// Starts `log.cleaner.threads` threads over the logs of `logs` (none when
    /// `log.cleaner.enable` is false).
    pub fn start(logs: &Arc<LogManager>, cfg: &CleanerConfig) -> LogCleaner {
        let (tx, rx) = bounded::<()>(0);
        let throttle = Arc::new(Throttle::new(cfg.io_max_bytes_per_second));
        let threads = if cfg.enable { cfg.threads } else { 0 };
        let handles = (0..threads)
            .map(|i| {
                let (logs, cfg, rx, throttle) =
                    (logs.clone(), cfg.clone(), rx.clone(), throttle.clone());
                std::thread::Builder::new()
                    .name(format!("log-cleaner-{i}"))
                    .spawn(move || cleaner_loop(&logs, &cfg, &rx, &throttle))
                    .expect("spawn a log cleaner thread")
            })
            .collect();
        LogCleaner {
            stop: Mutex::new(Some(tx)),
            threads: Mutex::new(handles),
            io: throttle,
        }
    }

    /// Stops the threads; a clean under way gives up at its next read or write.
    pub fn shutdown(&self) {
        self.io.stop();
        self.stop.lock().take();
        for h in self.threads.lock().drain(..) {
            let _ = h.join();
        }
    }
}

/// The nice value of a cleaner thread: below the request threads, so that on a busy machine a
/// clean takes the CPU they leave (one core's worth of hashing and copying would otherwise
/// compete with them and raise their latency) but still gets a share when they take it all.
const CLEANER_NICE: libc::c_int = 10;

fn cleaner_loop(logs: &LogManager, cfg: &CleanerConfig, stop: &Receiver<()>, io: &Throttle) {
    // SAFETY: setpriority with this thread's id changes only this thread's nice value (Linux
    // keeps one per thread).
    if unsafe {
        libc::setpriority(
            libc::PRIO_PROCESS,
            libc::gettid() as libc::id_t,
            CLEANER_NICE,
        )
    } != 0
    {
        log::debug!(
            "cannot lower the cleaner's priority: {}",
            std::io::Error::last_os_error()
        );
    }
    let map_memory = cfg.dedupe_buffer_size / cfg.threads.max(1);
    loop {
        // The per-log defaults (policy, ratio, lags) as they are now: dynamic configuration
        // may change them; the threads, buffers and rate stay as started.
        let defaults = logs.cleaner_defaults();
        match grab_dirtiest(logs, &defaults) {
            Some(log) => {
                clean_one(logs, &log, &defaults, map_memory, io);
                log.cleaning.in_progress.store(false, Ordering::Release);
                if !matches!(stop.try_recv(), Err(crossbeam_channel::TryRecvError::Empty)) {
                    return;
                }
            }
            None => match stop.recv_timeout(cfg.backoff) {
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                _ => return,
            },
        }
    }
}

/// The compacted log that is due and dirtiest (overdue ones first), taken for this thread.
fn grab_dirtiest(logs: &LogManager, cfg: &CleanerConfig) -> Option<Arc<Log>> {
    let now = clean::now_ms();
    let mut best: Option<(bool, f64, Arc<Log>)> = None;
    let mut max_dirty = 0.0f64;
    for l in logs.all() {
        let c = l.overrides.compaction(cfg);
        if !c.policy.compact || l.is_uncleanable() {
            continue;
        }
        let r = l.cleanable(&c, now);
        max_dirty = max_dirty.max(r.dirty_ratio());
        if !r.is_due(&c) || l.cleaning.in_progress.load(Ordering::Acquire) {
            continue;
        }
        let rank = (r.overdue, r.dirty_ratio());
        if best.as_ref().is_none_or(|(o, d, _)| rank > (*o, *d)) {
            best = Some((rank.0, rank.1, l));
        }
    }
    store_f64(&logs.cleaner_stats.max_dirty_percent, max_dirty * 100.0);
    let (_, _, log) = best?;
    log.cleaning
        .in_progress
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .ok()
        .map(|_| log)
}

fn clean_one(logs: &LogManager, log: &Log, cfg: &CleanerConfig, map_memory: usize, io: &Throttle) {
    let c = log.overrides.compaction(cfg);
    match log.clean(&c, map_memory, io, cfg.io_buffer_size, None) {
        Ok(done) => {
            let stats = &logs.cleaner_stats;
            stats
                .last_clean_ms
                .store(done.elapsed.as_millis() as u64, Ordering::Relaxed);
            let recopy = if done.bytes_read == 0 {
                0.0
            } else {
                done.bytes_written as f64 / done.bytes_read as f64 * 100.0
            };
            store_f64(&stats.recopy_percent, recopy);
            store_f64(
                &stats.buffer_utilization_percent,
                done.map_utilization * 100.0,
            );
            stats.cleans.fetch_add(1, Ordering::Relaxed);
            let secs = done.elapsed.as_secs_f64().max(1e-6);
            log::info!(
                "[{}-{}] cleaned up to offset {}: read {:.1} MB, wrote {:.1} MB in {:.2} s ({:.1} MB/s); kept {} of {} records; segments {} -> {}; offset map {:.1}% full{}",
                log.topic,
                log.partition,
                done.first_dirty,
                done.bytes_read as f64 / 1e6,
                done.bytes_written as f64 / 1e6,
                secs,
                done.bytes_read as f64 / 1e6 / secs,
                done.tally.records_kept,
                done.tally.records_read,
                done.segments_before,
                done.segments_after,
                done.map_utilization * 100.0,
                if done.swapped {
                    ""
                } else {
                    " (log changed: not swapped)"
                }
            );
            if let Err(e) = logs.checkpoint_cleaner_offsets() {
                log::warn!("cannot write the cleaner offset checkpoint: {e}");
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
            log::info!("[{}-{}] clean given up: {e}", log.topic, log.partition);
        }
        // A log deleted while it was cleaned: its directory went from under the clean.
        Err(e)
            if logs
                .get(&log.topic, log.partition)
                .is_none_or(|l| !std::ptr::eq(&*l, log)) =>
        {
            log::info!(
                "[{}-{}] deleted while cleaned ({e})",
                log.topic,
                log.partition
            );
        }
        Err(e) => {
            log.cleaning.uncleanable.store(true, Ordering::Release);
            log::error!(
                "[{}-{}] cannot be cleaned, and is left uncleanable until restart: {e}",
                log.topic,
                log.partition
            );
        }
    }
}
