//! `LogManager`: the data directories, every partition log in them, the high-watermark
//! checkpoints, and one maintenance thread that applies the flush and retention policies.
//!
//! The map of logs is behind a `RwLock`: lookups (every produce and fetch) share it, and only
//! creating or deleting a partition takes it exclusively.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use parking_lot::{Mutex, RwLock};

use super::checkpoint;
use super::log_config::{LogConfig, SharedLogConfig};
use super::partition_log::{Log, parse_partition_dir, partition_dir};
use crate::protocol::TopicPartition;

/// What a deleted partition's directory name ends with until it is removed (Kafka's).
const DELETED_DIR_SUFFIX: &str = "-delete";

/// The maintenance thread wakes at least this often to look at flush deadlines and at what
/// logs deferred.
const MAINTENANCE_TICK: Duration = Duration::from_millis(200);

/// What the log manager is told of the broker's configuration (the broker fills it from its
/// `log.*` keys).
#[derive(Debug, Clone)]
pub struct LogSettings {
    pub dirs: Vec<PathBuf>,
    /// Each log's own settings.
    pub log: LogConfig,
    pub recovery_threads_per_dir: usize,
    /// Retention by age and by size per partition; `None`: unbounded.
    pub retention: Option<Duration>,
    pub retention_bytes: Option<u64>,
    pub retention_check_interval: Duration,
    /// Force an fsync of a log written to longer ago than this; `None`: leave it to the OS.
    pub flush_interval: Option<Duration>,
    /// `producer.id.expiration.ms`: idle idempotent producers are forgotten after it.
    pub producer_id_expiration: Duration,
    /// `log.cleanup.policy` and the cleaner's settings.
    pub cleaner: crate::config::CleanerConfig,
}

/// The broker's defaults for every log that its dynamic configuration changes, besides
/// `SharedLogConfig`'s: retention and the cleaner's per-log settings.
#[derive(Debug, Clone)]
struct LiveDefaults {
    retention: Option<Duration>,
    retention_bytes: Option<u64>,
    cleaner: crate::config::CleanerConfig,
}

impl From<&LogSettings> for LiveDefaults {
    fn from(s: &LogSettings) -> Self {
        LiveDefaults {
            retention: s.retention,
            retention_bytes: s.retention_bytes,
            cleaner: s.cleaner.clone(),
        }
    }
}

pub struct LogManager {
    /// As the broker started; what dynamic configuration changes is in `log_config` and `live`.
    settings: LogSettings,
    /// Every log's segment, roll, index and flush settings, one copy shared by the logs.
    log_config: Arc<SharedLogConfig>,
    live: RwLock<LiveDefaults>,
    logs: RwLock<HashMap<TopicPartition, Arc<Log>>>,
    /// High watermarks read from the checkpoint files at startup.
    checkpointed: HashMap<TopicPartition, i64>,
    /// Serialises checkpoint writers (the periodic one and shutdown).
    checkpoint_lock: Mutex<()>,
    /// Directories of deleted partitions, renamed, for the maintenance thread to remove.
    doomed: Mutex<Vec<PathBuf>>,
    stop: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The cleaner's threads, once started.
    cleaner: Mutex<Option<super::cleaner::LogCleaner>>,
    pub cleaner_stats: super::cleaner::CleanerStats,
}

impl LogManager {
    /// Creates the data directories and opens (recovering) every partition found in them.
    pub fn open(cfg: &LogSettings) -> io::Result<Arc<LogManager>> {
        let mut logs = HashMap::new();
        let mut checkpointed = HashMap::new();
        let log_config: Arc<SharedLogConfig> = cfg.log.clone().into();
        for dir in &cfg.dirs {
            std::fs::create_dir_all(dir)?;
            match checkpoint::read(dir, checkpoint::HIGH_WATERMARKS) {
                Ok(m) => checkpointed.extend(m),
                Err(e) => log::warn!("ignoring unreadable high-watermark checkpoint: {e}"),
            }
            let starts = checkpoint::read(dir, checkpoint::LOG_START_OFFSETS).unwrap_or_else(|e| {
                log::warn!("ignoring unreadable log-start checkpoint: {e}");
                HashMap::new()
            });
            // Without one, a log is checked from its first segment.
            let cleaned_to =
                checkpoint::read(dir, checkpoint::CLEANER_OFFSETS).unwrap_or_else(|e| {
                    log::warn!("ignoring unreadable cleaner offset checkpoint: {e}");
                    HashMap::new()
                });
            let recovery_points = checkpoint::read(dir, checkpoint::RECOVERY_POINTS)
                .unwrap_or_else(|e| {
                    log::warn!("ignoring unreadable recovery-point checkpoint: {e}");
                    HashMap::new()
                });
            let mut found = Vec::new();
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                if !entry.file_type()?.is_dir() {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(DELETED_DIR_SUFFIX) {
                    // A deleted partition's directory the broker stopped before removing.
                    std::fs::remove_dir_all(entry.path())?;
                    continue;
                }
                let Some((topic, partition)) = parse_partition_dir(&name) else {
                    log::warn!(
                        "ignoring directory {} in {}: not topic-partition",
                        name,
                        dir.display()
                    );
                    continue;
                };
                let rp = recovery_points
                    .get(&TopicPartition::new(topic.clone(), partition))
                    .copied();
                found.push((entry.path(), topic, partition, rp));
            }
            let opened = open_all(found, &log_config, cfg.recovery_threads_per_dir)?;
            for l in opened {
                // Records deleted by DeleteRecords stay deleted across a restart.
                if let Some(&start) = starts.get(&TopicPartition::new(l.topic.clone(), l.partition))
                {
                    l.delete_records_before(start)?;
                }
                if let Some(&o) = cleaned_to.get(&TopicPartition::new(l.topic.clone(), l.partition))
                {
                    l.set_first_dirty_offset(o);
                }
                logs.insert(
                    TopicPartition::new(l.topic.clone(), l.partition),
                    Arc::new(l),
                );
            }
        }
        log::info!("loaded {} partition logs from {:?}", logs.len(), cfg.dirs);
        Ok(Arc::new(LogManager {
            settings: cfg.clone(),
            log_config,
            live: RwLock::new(cfg.into()),
            logs: RwLock::new(logs),
            checkpointed,
            checkpoint_lock: Mutex::new(()),
            doomed: Mutex::new(Vec::new()),
            stop: Mutex::new(None),
            thread: Mutex::new(None),
            cleaner: Mutex::new(None),
            cleaner_stats: Default::default(),
        }))
    }

    /// Takes the broker's new defaults (dynamic configuration): every log without a topic
    /// override of a setting uses the new value from its next append, retention pass or clean.
    /// A change to the cleaner's threads, buffers, rate or backoff restarts it, as Kafka's
    /// `LogCleaner.reconfigure` does: a clean under way gives up and is taken again by the new
    /// threads (its log's dirty section is where it was).
    pub fn reconfigure(self: &Arc<Self>, new: &LogSettings) {
        let restart = !self.live.read().cleaner.same_threads_as(&new.cleaner);
        self.log_config.set(&new.log);
        *self.live.write() = new.into();
        let mut cleaner = self.cleaner.lock();
        if restart && let Some(old) = cleaner.take() {
            old.shutdown();
            let rate = new.cleaner.io_max_bytes_per_second;
            let rate = if rate >= f64::MAX {
                "unlimited".to_owned()
            } else {
                format!("{rate} B/s")
            };
            log::info!(
                "log cleaner restarted: {} thread(s), {} B of offset maps, io {rate}",
                new.cleaner.threads,
                new.cleaner.dedupe_buffer_size,
            );
            *cleaner = Some(super::cleaner::LogCleaner::start(self, &new.cleaner));
        }
    }

    /// The cleaner's settings now (`log.cleanup.policy` and the per-log ones may change
    /// while the broker runs).
    pub fn cleaner_defaults(&self) -> crate::config::CleanerConfig {
        self.live.read().cleaner.clone()
    }

    /// The data directories (`log.dirs`).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.settings.dirs
    }

    pub fn get(&self, topic: &str, partition: i32) -> Option<Arc<Log>> {
        self.logs
            .read()
            .get(&TopicPartition::new(topic.to_owned(), partition))
            .cloned()
    }

    /// The log of a partition, created in the data directory holding the fewest partitions.
    pub fn get_or_create(&self, topic: &str, partition: i32) -> io::Result<Arc<Log>> {
        if let Some(l) = self.get(topic, partition) {
            return Ok(l);
        }
        let mut logs = self.logs.write();
        let key = TopicPartition::new(topic.to_owned(), partition);
        if let Some(l) = logs.get(&key) {
            return Ok(l.clone());
        }
        // The directory with the fewest logs (counting costs a pass over every log: skipped
        // when there is one directory, the usual case, so 10,000 creations stay linear).
        let dir = match self.settings.dirs.as_slice() {
            [only] => only,
            dirs => dirs
                .iter()
                .min_by_key(|d| logs.values().filter(|l| l.dir.starts_with(d)).count())
                .expect("config has at least one log dir"),
        };
        let (l, _) = Log::open(
            partition_dir(dir, topic, partition),
            topic,
            partition,
            self.log_config.clone(),
            None,
        )?;
        log::info!("[{topic}-{partition}] created log in {}", dir.display());
        let l = Arc::new(l);
        logs.insert(key, l.clone());
        Ok(l)
    }

    /// Removes a partition's log: its directory is renamed `<topic>-<partition>.<n>-delete`
    /// (Kafka's naming) at once and removed by the maintenance thread, so the controller's
    /// command that deletes it does not wait on the unlink of its segments.
    pub fn delete(&self, topic: &str, partition: i32) -> io::Result<bool> {
        let removed = self
            .logs
            .write()
            .remove(&TopicPartition::new(topic.to_owned(), partition));
        let Some(l) = removed else {
            return Ok(false);
        };
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let mut doomed = l.dir.clone().into_os_string();
        doomed.push(format!(".{stamp}{DELETED_DIR_SUFFIX}"));
        std::fs::rename(&l.dir, &doomed)?;
        self.doomed.lock().push(doomed.into());
        log::info!("[{topic}-{partition}] deleted log {}", l.dir.display());
        Ok(true)
    }

    /// Removes the directories of deleted partitions (no lock held while it does).
    fn remove_doomed(&self) {
        let doomed = std::mem::take(&mut *self.doomed.lock());
        for dir in doomed {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                log::error!("cannot remove {}: {e}", dir.display());
            }
        }
    }

    /// The disk work logs left for later (`deferred`): rolled segments' fsyncs, retired
    /// segments' unlinks (all of them when `all`), deleted partitions' directories.
    fn do_deferred(&self, all: bool) {
        for l in self.all() {
            if let Err(e) = l.flush_rolled() {
                log::error!(
                    "[{}-{}] flush of a rolled segment failed: {e}",
                    l.topic,
                    l.partition
                );
            }
            l.delete_retired(all);
        }
        self.remove_doomed();
    }

    pub fn all(&self) -> Vec<Arc<Log>> {
        self.logs.read().values().cloned().collect()
    }

    /// The checkpointed high watermark of a partition, capped at its log end offset.
    pub fn checkpointed_high_watermark(&self, log: &Log) -> i64 {
        let hw = self
            .checkpointed
            .get(&TopicPartition::new(log.topic.clone(), log.partition))
            .copied()
            .unwrap_or(0);
        hw.min(log.log_end_offset()).max(log.log_start_offset())
    }

    /// Writes one checkpoint file per data directory with the given high watermarks, and one
    /// with every log's start offset.
    pub fn checkpoint_high_watermarks(&self, hws: &[(TopicPartition, i64)]) -> io::Result<()> {
        let _g = self.checkpoint_lock.lock();
        let logs = self.logs.read();
        for dir in &self.settings.dirs {
            let in_dir: Vec<_> = hws
                .iter()
                .filter(|(tp, _)| logs.get(tp).is_some_and(|l| l.dir.starts_with(dir)))
                .cloned()
                .collect();
            checkpoint::write(dir, checkpoint::HIGH_WATERMARKS, &in_dir)?;
        }
        drop(logs);
        self.checkpoint_each_log(checkpoint::LOG_START_OFFSETS, Log::log_start_offset)?;
        self.checkpoint_each_log(checkpoint::RECOVERY_POINTS, Log::recovery_point)
    }

    /// Writes the cleaner's checkpoint: where each compacted log's dirty section starts.
    pub fn checkpoint_cleaner_offsets(&self) -> io::Result<()> {
        let _g = self.checkpoint_lock.lock();
        self.checkpoint_logs(checkpoint::CLEANER_OFFSETS, Log::first_dirty_offset, |l| {
            l.first_dirty_offset() > 0
        })
    }

    /// Writes, in each data directory, the checkpoint `name` with `offset` of each of its logs.
    fn checkpoint_each_log(&self, name: &str, offset: fn(&Log) -> i64) -> io::Result<()> {
        self.checkpoint_logs(name, offset, |_| true)
    }

    fn checkpoint_logs(
        &self,
        name: &str,
        offset: fn(&Log) -> i64,
        which: fn(&Log) -> bool,
    ) -> io::Result<()> {
        let logs = self.logs.read();
        for dir in &self.settings.dirs {
            let offsets: Vec<_> = logs
                .iter()
                .filter(|(_, l)| l.dir.starts_with(dir) && which(l))
                .map(|(tp, l)| (tp.clone(), offset(l)))
                .collect();
            checkpoint::write(dir, name, &offsets)?;
        }
        Ok(())
    }

    /// Starts the cleaner's threads (`log.cleaner.threads`, when `log.cleaner.enable`).
    pub fn start_cleaner(self: &Arc<Self>) {
        let settings = self.cleaner_defaults();
        *self.cleaner.lock() = Some(super::cleaner::LogCleaner::start(self, &settings));
    }

    /// Logs the cleaner gave up on (`uncleanable_partitions_count`).
    pub fn uncleanable_count(&self) -> usize {
        self.logs
            .read()
            .values()
            .filter(|l| l.is_uncleanable())
            .count()
    }

    /// Starts the thread that flushes logs past `log.flush.interval.ms` and applies retention
    /// every `log.retention.check.interval.ms`.
    pub fn start_maintenance(self: &Arc<Self>) {
        let (tx, rx) = bounded(0);
        *self.stop.lock() = Some(tx);
        let me = self.clone();
        let h = std::thread::Builder::new()
            .name("log-maintenance".into())
            .spawn(move || me.maintenance_loop(rx))
            .expect("spawn log-maintenance thread");
        *self.thread.lock() = Some(h);
    }

    fn maintenance_loop(&self, stop: Receiver<()>) {
        let tick = self
            .settings
            .flush_interval
            .map_or(MAINTENANCE_TICK, |f| f.min(MAINTENANCE_TICK))
            .min(self.settings.retention_check_interval);
        let mut last_retention = Instant::now();
        loop {
            match stop.recv_timeout(tick) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            self.do_deferred(false);
            if let Some(interval) = self.settings.flush_interval {
                for l in self.all() {
                    if l.unflushed_for().is_some_and(|t| t >= interval)
                        && let Err(e) = l.flush()
                    {
                        log::error!("[{}-{}] flush failed: {e}", l.topic, l.partition);
                    }
                }
            }
            if last_retention.elapsed() >= self.settings.retention_check_interval {
                last_retention = Instant::now();
                self.apply_retention();
            }
        }
    }

    /// Deletes old segments by the retention policy, and forgets idle producers.
    pub fn apply_retention(&self) {
        let cutoff = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(self.settings.producer_id_expiration)
            .as_millis() as i64;
        let live = self.live.read().clone();
        for l in self.all() {
            let retention = l.overrides.retention(live.retention);
            let retention_bytes = l.overrides.retention_bytes(live.retention_bytes);
            // `cleanup.policy=compact` alone: the cleaner, not retention, bounds the log.
            let deletes = l.overrides.compaction(&live.cleaner).policy.delete;
            if deletes && let Err(e) = l.delete_old_segments(retention, retention_bytes) {
                log::error!("[{}-{}] retention failed: {e}", l.topic, l.partition);
            }
            let n = l.expire_producers(cutoff);
            if n > 0 {
                log::info!(
                    "[{}-{}] expired {n} idle producer id(s)",
                    l.topic,
                    l.partition
                );
            }
        }
    }

    /// Stops the maintenance thread, flushes every log, does what was deferred and records
    /// the recovery points (every log on disk to its end: nothing to check at the next start
    /// but the active segments).
    pub fn shutdown(&self) {
        if let Some(c) = self.cleaner.lock().take() {
            c.shutdown();
        }
        self.stop.lock().take();
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
        for l in self.all() {
            if let Err(e) = l.flush().and_then(|_| l.snapshot_producers()) {
                log::error!(
                    "[{}-{}] flush at shutdown failed: {e}",
                    l.topic,
                    l.partition
                );
            }
        }
        self.do_deferred(true);
        let _g = self.checkpoint_lock.lock();
        if let Err(e) = self.checkpoint_each_log(checkpoint::RECOVERY_POINTS, Log::recovery_point) {
            log::error!("recovery-point checkpoint at shutdown failed: {e}");
        }
        drop(_g);
        if let Err(e) = self.checkpoint_cleaner_offsets() {
            log::error!("cleaner offset checkpoint at shutdown failed: {e}");
        }
    }
}

/// Opens (and recovers) the logs of one data directory on `threads` threads, as Kafka's
/// `num.recovery.threads.per.data.dir`: opening is mostly waiting on the file system, which
/// several threads overlap.
fn open_all(
    found: Vec<(PathBuf, String, i32, Option<i64>)>,
    config: &Arc<SharedLogConfig>,
    threads: usize,
) -> io::Result<Vec<Log>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let open_some = || -> io::Result<Vec<Log>> {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((path, topic, partition, recovery_point)) = found.get(i) else {
                return Ok(out);
            };
            out.push(
                Log::open(
                    path.clone(),
                    topic,
                    *partition,
                    config.clone(),
                    *recovery_point,
                )?
                .0,
            );
        }
    };
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1)).map(|_| s.spawn(open_some)).collect();
        let mut all = Vec::with_capacity(found.len());
        for w in workers {
            all.extend(w.join().expect("a log recovery thread panicked")?);
        }
        Ok(all)
    })
}
