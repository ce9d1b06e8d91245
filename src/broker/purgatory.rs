//! Where parked requests wait, keyed by partition: Kafka's `DelayedOperationPurgatory`, whose
//! watchers are listed per partition (`TopicPartitionOperationKey`), so that an event on one
//! partition touches only the requests waiting on it.
//!
//! A parked request — a long-poll Fetch waiting for `min_bytes`, an acks=all Produce waiting
//! for its followers — keeps its connection thread (one thread per connection) and sleeps on
//! that thread's `Waiter`. Before it sleeps it is listed in the `Watchers` of each partition
//! it waits on, under the event that can complete it there:
//! - `Watch::LogEnd`: a follower's Fetch waits for the leader's log to grow;
//! - `Watch::HighWatermark`: a consumer's Fetch and an acks=all Produce wait for the high
//!   watermark to move.
//!
//! An append wakes the partition's `LogEnd` list; a high-watermark move (`Partition::
//! set_high_watermark`) its `HighWatermark` list; a role change, a truncation, an ISR write
//! or the partition leaving the broker both lists. A woken request looks again at its own
//! partitions only, and answers or sleeps again; its deadline is its only timer. An event on
//! a partition nobody watches costs one uncontended lock of an empty list.
//!
//! No wake-up is lost: a request is listed before it sleeps, and either nothing happened on
//! its partitions between its last look and its listing (their `events` counts are as it read
//! them before looking) or it looks again; and a wake-up sets a flag the sleep reads under
//! the waiter's lock, so an event between the listing and the sleep ends the sleep at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::partition::Partition;

/// What a parked request waits for on one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// The log end offset to move (a follower's Fetch).
    LogEnd,
    /// The high watermark to move (a consumer's Fetch, an acks=all Produce).
    HighWatermark,
}

/// One connection thread's means to sleep until an event concerns its parked request.
#[derive(Default)]
struct Waiter {
    woken: Mutex<bool>,
    cond: Condvar,
}

impl Waiter {
    fn wake(&self) {
        let mut woken = self.woken.lock();
        if !*woken {
            *woken = true;
            self.cond.notify_one();
        }
    }

    /// Sleeps until woken or `deadline`; true when woken. Either way the flag is clear after.
    fn sleep_until(&self, deadline: Instant) -> bool {
        let mut woken = self.woken.lock();
        while !*woken {
            if self.cond.wait_until(&mut woken, deadline).timed_out() {
                break;
            }
        }
        std::mem::take(&mut *woken)
    }

    fn clear(&self) {
        *self.woken.lock() = false;
    }
}

/// How late the kernel may fire a parked request's deadline (the timer slack of a thread
/// that parks; Linux's default is 50 µs). Idle long-polls expire by the thousand a second,
/// each on its own timer; with this slack the kernel fires those that fall due within the
/// same millisecond together, which cut the broker's CPU for 2,000 idle consumers by a fifth
/// on this project's machines (doc/performance.md). Kafka's purgatory expires on a timing
/// wheel with a 1 ms tick: the same precision. Wake-ups by events are not delayed.
const DEADLINE_SLACK_NS: libc::c_ulong = 1_000_000;

/// This thread's waiter, made on its first parked request.
fn new_waiter() -> Arc<Waiter> {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes only the calling thread's slack.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, DEADLINE_SLACK_NS, 0, 0, 0) } != 0 {
        log::debug!(
            "cannot set the timer slack: {}",
            std::io::Error::last_os_error()
        );
    }
    Arc::new(Waiter::default())
}

thread_local! {
    /// A thread carries out one request at a time, so its waiter serves all of them: parking
    /// allocates nothing but the list of partitions watched.
    static WAITER: Arc<Waiter> = new_waiter();
}

/// A partition's parked requests, one list per event (`Watch`), and a count of its events.
#[derive(Default)]
pub struct Watchers {
    log_end: Mutex<Vec<Arc<Waiter>>>,
    high_watermark: Mutex<Vec<Arc<Waiter>>>,
    /// Bumped by every event before its list is looked at: a request that read it before
    /// looking at the partition and finds it unchanged once listed has missed nothing, and
    /// sleeps without looking again.
    events: AtomicU64,
}

impl Watchers {
    fn list(&self, on: Watch) -> &Mutex<Vec<Arc<Waiter>>> {
        match on {
            Watch::LogEnd => &self.log_end,
            Watch::HighWatermark => &self.high_watermark,
        }
    }

    fn add(&self, on: Watch, w: &Arc<Waiter>) {
        self.list(on).lock().push(w.clone());
    }

    fn remove(&self, on: Watch, w: &Arc<Waiter>) {
        let mut list = self.list(on).lock();
        if let Some(i) = list.iter().rposition(|x| Arc::ptr_eq(x, w)) {
            list.swap_remove(i);
        }
    }

    /// Events here so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::SeqCst)
    }

    /// Wakes the requests waiting for `on` here.
    pub fn wake(&self, on: Watch) {
        self.events.fetch_add(1, Ordering::SeqCst);
        for w in self.list(on).lock().iter() {
            w.wake();
        }
    }

    /// Wakes every request waiting here: the partition's role, log or ISR changed.
    pub fn wake_all(&self) {
        self.wake(Watch::LogEnd);
        self.wake(Watch::HighWatermark);
    }
}

/// Counts of one kind of parked request (Kafka's `delayedOperation` tag: `Fetch`,
/// `Produce`), for the metrics and the tests.
#[derive(Default)]
pub struct OperationStats {
    /// Requests parked now (Kafka's `NumDelayedOperations`).
    parked: AtomicUsize,
    /// Partition lists they are in now (Kafka's `PurgatorySize`: one per watched key).
    watched: AtomicUsize,
    /// Times a parked request was woken to look again (not counting its deadline).
    wakeups: AtomicU64,
}

impl OperationStats {
    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::Relaxed)
    }

    pub fn watched(&self) -> usize {
        self.watched.load(Ordering::Relaxed)
    }

    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }
}

/// The broker's parked requests, by kind.
#[derive(Default)]
pub struct Purgatory {
    pub fetch: OperationStats,
    pub produce: OperationStats,
}

/// A request parked on some partitions, listed in their watchers until dropped.
pub struct Parked<'a> {
    waiter: Arc<Waiter>,
    watching: Vec<(Arc<Partition>, Watch)>,
    stats: &'a OperationStats,
}

impl<'a> Parked<'a> {
    /// Lists this thread's request in the watchers of `on`. The caller then looks at its
    /// partitions once more before it sleeps: what happened before the listing is seen by
    /// that look, what happens after it by a wake-up.
    pub fn watch(
        stats: &'a OperationStats,
        on: impl IntoIterator<Item = (Arc<Partition>, Watch)>,
    ) -> Parked<'a> {
        let waiter = WAITER.with(Arc::clone);
        // A wake-up meant for this thread's previous request is not one for this request.
        waiter.clear();
        let watching: Vec<_> = on.into_iter().collect();
        for (p, w) in &watching {
            p.watchers.add(*w, &waiter);
        }
        stats.parked.fetch_add(1, Ordering::Relaxed);
        stats.watched.fetch_add(watching.len(), Ordering::Relaxed);
        Parked {
            waiter,
            watching,
            stats,
        }
    }

    /// The events counts of the watched partitions, summed (`Watchers::events`).
    pub fn events(&self) -> u64 {
        self.watching.iter().map(|(p, _)| p.watchers.events()).sum()
    }

    /// Sleeps until an event on a watched partition or `deadline`; true when woken.
    pub fn sleep_until(&self, deadline: Instant) -> bool {
        let woken = self.waiter.sleep_until(deadline);
        if woken {
            self.stats.wakeups.fetch_add(1, Ordering::Relaxed);
        }
        woken
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        for (p, w) in &self.watching {
            p.watchers.remove(*w, &self.waiter);
        }
        self.stats.parked.fetch_sub(1, Ordering::Relaxed);
        self.stats
            .watched
            .fetch_sub(self.watching.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that parks lets the kernel fire its deadlines up to 1 ms late, so that the
    /// deadlines of many idle long-polls fire together (`DEADLINE_SLACK_NS`).
    #[test]
    fn a_thread_that_parks_has_the_deadline_slack() {
        // SAFETY: PR_GET_TIMERSLACK reads the calling thread's slack.
        let slack = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) } as u64;
        let (before, after) = std::thread::spawn(move || {
            let before = slack();
            let stats = OperationStats::default();
            let parked = Parked::watch(&stats, std::iter::empty());
            assert!(!parked.sleep_until(Instant::now()), "nothing woke it");
            drop(parked);
            (before, slack())
        })
        .join()
        .unwrap();
        assert_ne!(
            before, DEADLINE_SLACK_NS,
            "the thread starts with another slack"
        );
        assert_eq!(after, DEADLINE_SLACK_NS);
    }
}
