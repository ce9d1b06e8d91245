//! The cleaner's key → last offset map: Kafka's `SkimpyOffsetMap`. A fixed number of slots,
//! each a 16-byte digest of a key and the offset of the key's latest record, open-addressed
//! with linear probing. Its memory is `log.cleaner.dedupe.buffer.size` (divided among the
//! cleaner threads) whatever the number of keys: a log whose dirty section holds more keys
//! than fit is cleaned in several passes, each up to where its map filled.
//!
//! Two keys whose digests collide would share a slot and the older one's records would be
//! dropped; with 128-bit digests (two independent SipHash-1-3 keyings) that takes about 2^64
//! keys, as with Kafka's MD5.

use std::hash::Hasher;

/// Bytes per slot: the digest and the offset.
pub const SLOT_BYTES: usize = 24;

/// The share of slots used before the map counts as full (Kafka's
/// `log.cleaner.io.buffer.load.factor`): probes stay short.
const LOAD_FACTOR: f64 = 0.9;

/// Fixed keys: a digest must be the same in every pass and on every run.
const SEEDS: [(u64, u64); 2] = [
    (0x6772_6567_6f72_2d6b, 0x6579_2d64_6967_6573),
    (0x7433_2e63_6c65_616e, 0x6572_2e6f_6666_7365),
];

/// A slot: the digest's two halves and the offset. All zero is empty (a digest is never all
/// zero), so a new map is zeroed memory the kernel maps as it is first touched: a map of
/// 128 MiB holding a thousand keys costs a few pages.
type Slot = [u64; 3];

fn is_empty(s: &Slot) -> bool {
    s[0] == 0 && s[1] == 0
}

pub struct OffsetMap {
    slots: Vec<Slot>,
    used: usize,
    /// The largest offset put since the last `clear`.
    latest: i64,
}

fn digest(key: &[u8]) -> [u64; 2] {
    let mut d = [0u64; 2];
    for (i, (k0, k1)) in SEEDS.iter().enumerate() {
        // std's SipHash-1-3 has fixed keys (not `RandomState`'s): the seeds go in first, so
        // the two halves are independent and every pass and run agrees.
        let mut h = std::hash::DefaultHasher::new();
        h.write_u64(*k0);
        h.write_u64(*k1);
        h.write(key);
        d[i] = h.finish();
    }
    if d == [0, 0] {
        d[1] = 1;
    }
    d
}

impl OffsetMap {
    /// A map in `memory` bytes (at least 1 slot). The slots are zeroed pages the kernel
    /// hands out as they are first touched.
    pub fn with_memory(memory: usize) -> OffsetMap {
        let n = (memory / SLOT_BYTES).max(2);
        OffsetMap {
            // `vec!` of zeros allocates zeroed memory: no page is written here.
            slots: vec![[0u64; 3]; n],
            used: 0,
            latest: -1,
        }
    }

    /// Keys it takes before `is_full`.
    pub fn capacity(&self) -> usize {
        // At least one slot stays empty, where a search for an absent key ends.
        let n = self.slots.len();
        ((n as f64 * LOAD_FACTOR) as usize).clamp(1, n - 1)
    }

    pub fn is_full(&self) -> bool {
        self.used >= self.capacity()
    }

    pub fn len(&self) -> usize {
        self.used
    }

    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The largest offset put, -1 when none.
    pub fn latest_offset(&self) -> i64 {
        self.latest
    }

    /// The share of the map in use, for the `max_buffer_utilization_percent` metric.
    pub fn utilization(&self) -> f64 {
        self.used as f64 / self.slots.len() as f64
    }

    fn find(&self, d: [u64; 2]) -> usize {
        let n = self.slots.len();
        let mut i = (d[0] % n as u64) as usize;
        loop {
            let s = &self.slots[i];
            if is_empty(s) || (s[0] == d[0] && s[1] == d[1]) {
                return i;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
    }

    /// Records that `key`'s latest record so far is at `offset` (offsets come in order).
    /// Callers check `is_full` first: a full map still takes keys it holds.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        let d = digest(key);
        let i = self.find(d);
        let n = self.slots.len();
        let s = &mut self.slots[i];
        if is_empty(s) {
            assert!(self.used < n, "offset map overfilled");
            self.used += 1;
            s[0] = d[0];
            s[1] = d[1];
        }
        s[2] = offset as u64;
        self.latest = self.latest.max(offset);
    }

    /// The offset of `key`'s latest record, if the map has it.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        let s = &self.slots[self.find(digest(key))];
        (!is_empty(s)).then_some(s[2] as i64)
    }

    /// Whether the map holds `key` already (a put of it takes no new slot).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_offset_per_key_and_fills_at_its_load_factor() {
        let mut m = OffsetMap::with_memory(10 * SLOT_BYTES);
        assert_eq!(m.capacity(), 9);
        for (i, k) in [b"a", b"b", b"a", b"c"].iter().enumerate() {
            m.put(*k, i as i64);
        }
        assert_eq!(
            (m.get(b"a"), m.get(b"b"), m.get(b"c"), m.get(b"d")),
            (Some(2), Some(1), Some(3), None)
        );
        assert_eq!((m.len(), m.latest_offset()), (3, 3));
        for i in 0..6 {
            m.put(format!("k{i}").as_bytes(), 10 + i);
        }
        assert!(m.is_full());
        m.put(b"a", 99);
        assert_eq!((m.len(), m.get(b"a")), (9, Some(99)));
    }

    #[test]
    fn digests_are_stable_and_distinct() {
        assert_eq!(digest(b"key"), digest(b"key"));
        assert_ne!(digest(b"key"), digest(b"kez"));
        assert_ne!(digest(b""), [0, 0]);
    }
}
