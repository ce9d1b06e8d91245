//! The byte budget of one Fetch answer, shared out among its partitions (KIP-74), and the
//! order they are served in (KIP-227's fairness, without fetch sessions).
//!
//! - The answer's records stay within the request's `max_bytes` (and the broker's
//!   `fetch.max.bytes`), each partition's within its own `partition_max_bytes`.
//! - From v3 on, the first partition with data gets at least its whole first entry even
//!   when that entry is larger than both limits, so one large batch never stalls a consumer
//!   or a follower; a later partition whose first entry does not fit in what is left gets
//!   no records (never a piece of one), and is asked for again. v0–2 keep the limits hard.
//! - Kafka's fetch sessions move the partitions that were answered behind the others, so
//!   that with a small budget each is served in turn. gregor keeps no sessions, so the
//!   connection remembers where to start instead: at the first partition that had data but
//!   was left out, else just after the last one served. The answer lists partitions in that
//!   order (a topic split by the starting point appears twice, as in Kafka's session
//!   answers).

use crate::log::FirstEntry;

/// One answer's budget and serving order.
#[derive(Debug)]
pub struct FetchBudget {
    /// Record bytes still allowed in the answer.
    left: usize,
    /// Whether the next partition with data may go over `left` with its first entry.
    min_one: bool,
    /// Fetch v0–2: limits are hard, a first entry is cut where they end.
    hard: bool,
    /// Partitions in the request, counted across its topics.
    partitions: usize,
    /// The request position served first.
    start: usize,
    /// The first partition in serving order that had data and got none.
    first_left_out: Option<usize>,
    /// The last partition in serving order that got records.
    last_served: Option<usize>,
}

impl FetchBudget {
    /// The budget of an answer at `version` allowed `max_bytes` of records, over
    /// `partitions` request partitions served from position `start` (taken modulo their
    /// number: the request may have changed since the position was remembered).
    pub fn new(version: i16, max_bytes: usize, partitions: usize, start: usize) -> Self {
        FetchBudget {
            left: max_bytes,
            min_one: version >= 3,
            hard: version < 3,
            partitions,
            start: if partitions == 0 {
                0
            } else {
                start % partitions
            },
            first_left_out: None,
            last_served: None,
        }
    }

    /// The request position served first.
    pub fn start(&self) -> usize {
        self.start
    }

    /// The byte limit and first-entry rule for the next partition, whose own limit is
    /// `partition_max`.
    pub fn limit(&self, partition_max: usize) -> (usize, FirstEntry) {
        let rule = if self.hard {
            FirstEntry::Cut
        } else if self.min_one {
            FirstEntry::Whole
        } else {
            FirstEntry::Skip
        };
        (partition_max.min(self.left), rule)
    }

    /// Counts what the partition at request position `index` got: `bytes` of records,
    /// when it had `had_data`.
    pub fn took(&mut self, index: usize, bytes: usize, had_data: bool) {
        if bytes > 0 {
            self.min_one = false;
            self.left = self.left.saturating_sub(bytes);
            self.last_served = Some(index);
        } else if had_data && self.first_left_out.is_none() {
            self.first_left_out = Some(index);
        }
    }

    /// Where the connection's next answer starts.
    pub fn next_start(&self) -> usize {
        match (self.first_left_out, self.last_served) {
            (Some(i), _) => i,
            (None, Some(i)) => (i + 1) % self.partitions.max(1),
            (None, None) => self.start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::read_limits::slice_len;
    use proptest::prelude::*;

    /// A partition's log as the property test sees it: entry sizes, and the fetch position.
    #[derive(Debug, Clone)]
    struct Part {
        entries: Vec<usize>,
        next: usize,
    }

    impl Part {
        fn available(&self) -> usize {
            self.entries[self.next..].iter().sum()
        }
        fn first(&self) -> usize {
            self.entries.get(self.next).copied().unwrap_or(0)
        }
        /// Moves past the whole entries of `len` bytes; how many there were.
        fn consume(&mut self, len: usize) -> usize {
            let (mut used, mut n) = (0, 0);
            while self.next < self.entries.len() && used + self.entries[self.next] <= len {
                used += self.entries[self.next];
                self.next += 1;
                n += 1;
            }
            n
        }
    }

    /// One answer over `parts`, with every property KIP-74 asks of it checked; returns
    /// the bytes given to each partition (by request position) and the next start.
    fn answer(
        parts: &[Part],
        version: i16,
        max_bytes: usize,
        partition_max: usize,
        start: usize,
    ) -> (Vec<usize>, usize) {
        let mut b = FetchBudget::new(version, max_bytes, parts.len(), start);
        let mut got = vec![0; parts.len()];
        let mut first_with_data = None;
        for k in 0..parts.len() {
            let i = (b.start() + k) % parts.len();
            let (limit, rule) = b.limit(partition_max);
            let p = &parts[i];
            let len = slice_len(p.available(), p.first(), limit, rule);
            got[i] = len;
            b.took(i, len, p.available() > 0);
            if p.available() > 0 && first_with_data.is_none() {
                first_with_data = Some(i);
            }
        }
        let total: usize = got.iter().sum();
        if version >= 3 {
            for (i, p) in parts.iter().enumerate() {
                // Empty, or beginning with a whole entry.
                assert!(got[i] == 0 || got[i] >= p.first(), "a piece alone: {i}");
            }
            if let Some(i) = first_with_data {
                assert!(got[i] >= parts[i].first(), "no progress on {i}");
                assert!(total <= max_bytes.max(got[i].min(parts[i].first())));
                assert!(got[i] <= partition_max.max(parts[i].first()));
            }
        } else {
            assert!(total <= max_bytes);
        }
        (got, b.next_start())
    }

    proptest! {
        #[test]
        fn every_answer_keeps_the_rules_and_every_partition_is_served_in_turn(
            logs in prop::collection::vec(prop::collection::vec(1usize..40_000, 0..12), 1..40),
            starts in prop::collection::vec(0usize..12, 40),
            max_bytes in 0usize..200_000,
            partition_max in 0usize..100_000,
            version in 0i16..13,
        ) {
            let mut parts: Vec<Part> = logs
                .into_iter()
                .zip(starts)
                .map(|(entries, s)| Part { next: s.min(entries.len()), entries })
                .collect();
            let n = parts.len();
            let mut start = 0;
            // Rounds since each partition with data last got records.
            let mut waiting = vec![0usize; n];
            for _ in 0..(3 * n + 3) {
                let (got, next) = answer(&parts, version, max_bytes, partition_max, start);
                start = next;
                for i in 0..n {
                    let moved = parts[i].consume(got[i]);
                    if version >= 3 && parts[i].available() + moved > 0 {
                        waiting[i] = if moved > 0 { 0 } else { waiting[i] + 1 };
                        // Served at least once every `n` answers while it has data.
                        prop_assert!(waiting[i] <= n, "partition {i} waited {} answers", waiting[i]);
                    }
                }
            }
        }
    }

    #[test]
    fn a_batch_larger_than_every_limit_is_sent_whole_to_the_first_partition_only() {
        let parts = [
            Part {
                entries: vec![5_000],
                next: 0,
            },
            Part {
                entries: vec![5_000],
                next: 0,
            },
        ];
        assert_eq!(answer(&parts, 11, 1, 1, 0), (vec![5_000, 0], 1));
        assert_eq!(answer(&parts, 11, 1, 1, 1), (vec![0, 5_000], 0));
        // v2: the hard limit cuts.
        assert_eq!(answer(&parts, 2, 1, 1, 0).0, vec![1, 0]);
    }
}
