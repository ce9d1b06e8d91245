//! How much of a partition one read returns when its byte limit ends inside an entry (a
//! record batch, or a message of format v0/v1): the rules of KIP-74 that Kafka applies in
//! `LogSegment.read` and `ReplicaManager.readFromLog`.
//!
//! A client can only use whole entries; a trailing piece after at least one whole entry is
//! dropped (every client expects that of a fetch), but an answer that is *only* a piece
//! gives it nothing to consume: the Java consumer stops with "no complete records were
//! found", kafka-python waits without end.

/// What a read does with the first entry when it does not fit in the byte limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstEntry {
    /// The bytes that fit, even a piece of it: Fetch v0–2, whose limits are hard (the
    /// client reports the entry as too large), and internal reads that compare or convert.
    Cut,
    /// The whole entry, over the limit if need be: the first partition with data in a
    /// Fetch v3+ answer, so that a batch larger than every limit still makes progress.
    Whole,
    /// Nothing: any later partition of a v3+ answer. It has a high watermark and no
    /// error, and the client asks again.
    Skip,
}

/// The bytes to return of `available` ones starting with an entry `first_len` long, with
/// `max_bytes` allowed.
pub fn slice_len(available: usize, first_len: usize, max_bytes: usize, first: FirstEntry) -> usize {
    if available <= max_bytes {
        return available;
    }
    let first_len = first_len.min(available);
    match first {
        FirstEntry::Cut => max_bytes,
        FirstEntry::Whole => max_bytes.max(first_len),
        FirstEntry::Skip if first_len > max_bytes => 0,
        FirstEntry::Skip => max_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_entry_that_does_not_fit_is_whole_or_skipped_never_cut_above_v2() {
        // Everything fits: every rule returns it all.
        for rule in [FirstEntry::Cut, FirstEntry::Whole, FirstEntry::Skip] {
            assert_eq!(slice_len(300, 100, 300, rule), 300);
        }
        // The limit ends inside the first entry.
        assert_eq!(slice_len(300, 100, 30, FirstEntry::Cut), 30);
        assert_eq!(slice_len(300, 100, 30, FirstEntry::Whole), 100);
        assert_eq!(slice_len(300, 100, 30, FirstEntry::Skip), 0);
        assert_eq!(slice_len(300, 100, 0, FirstEntry::Whole), 100);
        // The limit ends after the first entry: a piece may follow a whole one.
        assert_eq!(slice_len(300, 100, 150, FirstEntry::Skip), 150);
        assert_eq!(slice_len(300, 100, 150, FirstEntry::Whole), 150);
    }
}
