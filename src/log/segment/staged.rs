//! A segment written beside the log before it replaces some of its segments (the cleaner's):
//! its files carry a suffix after the usual names while they are written (`.cleaned`), once
//! complete and on disk (`.swap`: the replacement is decided), and none once swapped in —
//! Kafka's names and steps, which `Log::open` finishes or undoes after a crash.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use super::Segment;

/// A segment being written by the cleaner; deleted at start-up.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// A complete cleaned segment whose swap is decided; finished at start-up.
pub const SWAP_SUFFIX: &str = ".swap";

fn with_suffix(path: &Path, from: &str, to: &str) -> PathBuf {
    let name = path.as_os_str().to_string_lossy();
    let stem = name.strip_suffix(from).unwrap_or(&name);
    PathBuf::from(format!("{stem}{to}"))
}

impl Segment {
    /// An empty segment at `base_offset` whose files end with `suffix`; files left there by
    /// an earlier attempt are removed first.
    pub fn create_staged(
        dir: &Path,
        base_offset: i64,
        index_interval: u32,
        suffix: &str,
    ) -> io::Result<Segment> {
        let stem = super::file_stem(base_offset);
        for ext in super::FILE_EXTENSIONS {
            match std::fs::remove_file(dir.join(format!("{stem}.{ext}{suffix}"))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Self::open_named(dir, base_offset, index_interval, suffix)
    }

    /// The same segment, its files renamed from suffix `from` to `to` (a rename each; the
    /// open files and what is loaded of them stay). The log file goes last: where it has the
    /// new name, so have the indexes.
    pub fn renamed(mut self, from: &str, to: &str) -> io::Result<Segment> {
        for path in [
            &mut self.index_path,
            &mut self.time_index_path,
            &mut self.log_path,
        ] {
            let new = with_suffix(path, from, to);
            match std::fs::rename(&*path, &new) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            *path = new;
        }
        let txn = self.txn_index.path();
        let new = with_suffix(&txn, from, to);
        match std::fs::rename(&txn, &new) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        self.txn_index.moved_to(new);
        self.opened_at = Instant::now();
        Ok(self)
    }

    /// Gives the log file a last-modified time (a cleaned segment takes its sources': time
    /// retention and old-format tombstones count from when the data was written).
    pub fn set_last_modified(&self, t: SystemTime) -> io::Result<()> {
        self.log.set_modified(t)
    }

    /// Starts writing out (without waiting) the log file's bytes from `from` to its end: a
    /// segment written in one go and fsynced at the end would otherwise send all its bytes to
    /// the disk at that fsync, a burst during which the appends of every partition on the same
    /// file system wait on the journal.
    pub fn start_writeback(&self, from: u64) {
        let len = self.size().saturating_sub(from);
        // SAFETY: sync_file_range on our own open descriptor; SYNC_FILE_RANGE_WRITE only
        // queues the dirty pages of that range for writing.
        let r = unsafe {
            libc::sync_file_range(
                std::os::fd::AsRawFd::as_raw_fd(&self.log),
                from as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if r != 0 {
            log::debug!("sync_file_range: {}", io::Error::last_os_error());
        }
    }

    /// When this broker opened the segment.
    pub fn opened_at(&self) -> Instant {
        self.opened_at
    }
}

/// Finishes or undoes, in a partition directory, a segment replacement a crash interrupted:
/// `.cleaned` files (a replacement not yet decided) are deleted; a `.log.swap` (decided) takes
/// the place of the segment of its base offset, and of the later ones its offsets cover, whose
/// files are deleted. Index files of a swap whose log is gone are deleted.
pub(in crate::log) fn finish_interrupted_swaps(dir: &Path, index_interval: u32) -> io::Result<()> {
    let mut swaps = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(CLEANED_SUFFIX) {
            std::fs::remove_file(dir.join(&name))?;
        } else if let Some(stem) = name.strip_suffix(".log.swap")
            && let Ok(base) = stem.parse::<i64>()
        {
            swaps.push(base);
        }
    }
    // Indexes renamed before their log was: the swap was not decided.
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix(".index.swap")
            .or_else(|| name.strip_suffix(".timeindex.swap"))
            .or_else(|| name.strip_suffix(".txnindex.swap"))
            && !dir.join(format!("{stem}.log.swap")).exists()
        {
            std::fs::remove_file(dir.join(&name))?;
        }
    }
    swaps.sort_unstable();
    for base in swaps {
        let stem = super::file_stem(base);
        for ext in super::FILE_EXTENSIONS {
            match std::fs::remove_file(dir.join(format!("{stem}.{ext}"))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let seg = Segment::open_named(dir, base, index_interval, SWAP_SUFFIX)?
            .renamed(SWAP_SUFFIX, "")?;
        let end = seg.next_offset();
        drop(seg);
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let Some((stem, ext)) = name.split_once('.') else {
                continue;
            };
            if let Ok(b) = stem.parse::<i64>()
                && b > base
                && b < end
                && super::FILE_EXTENSIONS.contains(&ext)
            {
                std::fs::remove_file(dir.join(&name))?;
            }
        }
        log::warn!(
            "{}: finished the swap of cleaned segment {base} (offsets below {end}) a stop interrupted",
            dir.display()
        );
    }
    Ok(())
}
