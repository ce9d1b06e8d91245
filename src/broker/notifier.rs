//! Where parked requests wait: a long-poll Fetch waiting for `min_bytes`, a Produce with
//! acks=all waiting for the high watermark. Anything that could satisfy them calls `notify`;
//! waiters re-check their own condition.
//!
//! A broker has two (`ReplicaManager::notifier` and `appended`): followers' fetches wait for
//! appends, everything else for high-watermark moves and role changes. With one, every append
//! woke the consumers' fetches and parked produces to find nothing new, and every
//! high-watermark move woke the followers' fetches the same way: about a third of an acks=all
//! leader's wake-ups. Within each, one condition variable: waiters are few (one per parked
//! request) and a wake-up is a cheap re-check, so per-partition wait lists would buy little.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
pub struct Notifier {
    seq: Mutex<u64>,
    cond: Condvar,
}

impl Notifier {
    pub fn notify(&self) {
        *self.seq.lock() += 1;
        self.cond.notify_all();
    }

    /// The current sequence number, to pass to `wait_after`.
    pub fn seq(&self) -> u64 {
        *self.seq.lock()
    }

    /// Waits until something was notified after `seen` or `deadline` passes; true if notified.
    pub fn wait_after(&self, seen: u64, deadline: Instant) -> bool {
        let mut seq = self.seq.lock();
        while *seq == seen {
            if self.cond.wait_until(&mut seq, deadline).timed_out() {
                return *seq != seen;
            }
        }
        true
    }
}
