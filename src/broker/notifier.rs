//! Where parked requests wait: a long-poll Fetch waiting for `min_bytes`, a Produce with
//! acks=all waiting for the high watermark. Anything that could satisfy them (an append, a
//! high-watermark move, a role change) calls `notify`; waiters re-check their own condition.
//!
//! One condition variable for the broker: waiters are few (one per parked request) and every
//! wake-up is a cheap re-check, so per-partition wait lists would buy little and cost a map.

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
