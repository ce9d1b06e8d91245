//! The broker-wide bound on decompressed produce data. Each compressed set a producer sends
//! inflates to at most `compression::MAX_DECOMPRESSED` (64 MiB), and a request's partitions
//! are validated and appended one at a time, so one request holds at most that much. Across
//! connections only this bounds it: a compressed set is inflated only while its connection
//! holds one of `INFLATION_SLOTS`, so however many connections send bombs at once the broker
//! holds at most `INFLATION_SLOTS` × 64 MiB of inflated data. Holders never wait for anything
//! else while holding one (validation and append), so a connection waiting here always gets
//! a slot.

use parking_lot::{Condvar, Mutex};

use crate::protocol::{message, record_batch};

/// Compressed sets inflated at once on one broker.
pub const INFLATION_SLOTS: usize = 2;

#[derive(Default)]
pub struct InflationSlots {
    held: Mutex<usize>,
    freed: Condvar,
}

/// A slot, given back on drop.
pub struct Slot<'a>(&'a InflationSlots);

impl InflationSlots {
    /// Waits for a slot.
    pub fn acquire(&self) -> Slot<'_> {
        let mut held = self.held.lock();
        while *held >= INFLATION_SLOTS {
            self.freed.wait(&mut held);
        }
        *held += 1;
        Slot(self)
    }

    pub fn held(&self) -> usize {
        *self.held.lock()
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.held.lock() -= 1;
        self.0.freed.notify_one();
    }
}

/// Whether a produced set has compressed data to inflate: a format v2 batch with a codec, or
/// a format 0/1 set with a compressed wrapper among its top-level entries.
pub fn needs_inflating(set: &[u8], is_batch: bool) -> bool {
    if is_batch {
        record_batch::codec_of(set).is_some_and(|c| c != 0)
    } else {
        message::has_compressed_entry(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = std::sync::Arc::new(InflationSlots::default());
        let a = slots.acquire();
        let b = slots.acquire();
        assert_eq!(slots.held(), INFLATION_SLOTS);
        let s = slots.clone();
        let third = std::thread::spawn(move || {
            let _c = s.acquire();
            s.held()
        });
        // The third waits until one is given back (it cannot finish while both are held).
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!third.is_finished());
        drop(a);
        assert_eq!(third.join().unwrap(), INFLATION_SLOTS);
        drop(b);
        assert_eq!(slots.held(), 0);
    }

    #[test]
    fn compressed_sets_are_told_from_plain_ones() {
        use crate::protocol::compression;
        let mut plain = Vec::new();
        message::encode_entry(&mut plain, 0, 0, -1, None, Some(b"v"));
        assert!(!needs_inflating(&plain, false));
        let mut set = plain.clone();
        message::encode_entry_with_attributes(
            &mut set,
            0,
            0,
            compression::GZIP,
            -1,
            None,
            Some(&compression::compress(compression::GZIP, &plain).unwrap()),
        );
        assert!(needs_inflating(&set, false));
        assert!(!needs_inflating(b"garbage", false));
    }
}
