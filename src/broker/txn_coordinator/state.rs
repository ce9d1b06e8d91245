//! One transactional id's state, as the coordinator holds it and as it is written to
//! `__transaction_state`: Kafka's `TransactionLogKey` (v0: the id) and `TransactionLogValue`
//! (v0, classic encoding), so Kafka's tools read the topic as they read Kafka's.

use std::collections::BTreeSet;

use byteorder::{BigEndian, ByteOrder};

/// The states of KIP-98's coordinator, with Kafka's numbers in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    /// Nothing open.
    Empty = 0,
    /// A partition was added: the transaction is open.
    Ongoing = 1,
    /// Commit decided and durable; markers being written.
    PrepareCommit = 2,
    /// Abort decided and durable; markers being written.
    PrepareAbort = 3,
    /// Every marker written.
    CompleteCommit = 4,
    CompleteAbort = 5,
    /// Forgotten (`transactional.id.expiration.ms`); written as a tombstone.
    Dead = 6,
}

impl TxnState {
    pub fn from_code(c: i8) -> Option<TxnState> {
        Some(match c {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            // 7, PrepareEpochFence, is never written by Kafka either.
            _ => return None,
        })
    }

    /// Kafka's name, as DescribeTransactions and ListTransactions report it.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
        }
    }

    /// A decision is taken and its markers are not all written yet.
    pub fn is_preparing(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// What the coordinator knows of one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The partitions the open (or ending) transaction wrote to, and the groups whose
    /// offsets it commits (AddOffsetsToTxn) as `group_entry`s: Kafka names the group's
    /// `__consumer_offsets` partition there, but gregor's groups keep their offsets in
    /// ZooKeeper, and the coordinator must know which group to tell.
    pub partitions: BTreeSet<(String, i32)>,
    pub last_update_ms: i64,
    /// When the open transaction began (its first partition); -1 when none is open.
    pub start_ms: i64,
}

impl TxnMetadata {
    /// The groups whose offsets the transaction holds.
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.partitions
            .iter()
            .filter_map(|(t, _)| t.strip_prefix(GROUP_PREFIX))
    }

    /// The data partitions (not the groups).
    pub fn data_partitions(&self) -> impl Iterator<Item = &(String, i32)> {
        self.partitions
            .iter()
            .filter(|(t, _)| !t.starts_with(GROUP_PREFIX))
    }
}

const GROUP_PREFIX: &str = "__consumer_offsets/";

/// The partition entry that stands for `group`'s offsets in a transaction.
pub fn group_entry(group: &str) -> (String, i32) {
    (format!("{GROUP_PREFIX}{group}"), -1)
}

/// The key of a transactional id's records: version 0, the id.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_str(&mut out, transactional_id);
    out
}

/// The value of a state record, version 0.
pub fn encode_value(m: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&m.producer_id.to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.to_be_bytes());
    out.extend_from_slice(&m.timeout_ms.to_be_bytes());
    out.push(m.state as u8);
    // Grouped by topic, as Kafka writes them.
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for (t, p) in &m.partitions {
        match topics.last_mut() {
            Some((last, ps)) if *last == t.as_str() => ps.push(*p),
            _ => topics.push((t, vec![*p])),
        }
    }
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (t, ps) in topics {
        put_str(&mut out, t);
        out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&m.last_update_ms.to_be_bytes());
    out.extend_from_slice(&m.start_ms.to_be_bytes());
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Reads a key; `None` for another version or a malformed one.
pub fn decode_key(b: &[u8]) -> Option<String> {
    let mut r = Cursor(b);
    if r.i16()? != 0 {
        return None;
    }
    r.str()
}

/// Reads a state value (versions 0 and 1: version 1 adds tagged fields after the same ones,
/// which are skipped — the fields gregor keeps are all in version 0's layout order).
pub fn decode_value(b: &[u8]) -> Option<TxnMetadata> {
    let mut r = Cursor(b);
    if r.i16()? != 0 {
        return None;
    }
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let timeout_ms = r.i32()?;
    let state = TxnState::from_code(r.i8()?)?;
    let mut partitions = BTreeSet::new();
    let topics = r.i32()?;
    for _ in 0..topics.max(0) {
        let topic = r.str()?;
        let n = r.i32()?;
        for _ in 0..n.max(0) {
            partitions.insert((topic.clone(), r.i32()?));
        }
    }
    Some(TxnMetadata {
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        last_update_ms: r.i64()?,
        start_ms: r.i64()?,
    })
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn i8(&mut self) -> Option<i8> {
        self.take(1).map(|b| b[0] as i8)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(BigEndian::read_i16)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4).map(BigEndian::read_i32)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8).map(BigEndian::read_i64)
    }
    fn str(&mut self) -> Option<String> {
        let n = self.i16()?;
        let b = self.take(usize::try_from(n).ok()?)?;
        String::from_utf8(b.to_vec()).ok()
    }
}

/// Kafka's partition of `__transaction_state` for a transactional id: Java's
/// `String.hashCode` (over UTF-16 code units), made non-negative as Kafka's `Utils.abs`
/// does, modulo the partition count — so a Kafka tool finds the same coordinator.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in transactional_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_round_trips_through_its_record() {
        let m = TxnMetadata {
            producer_id: 4001,
            producer_epoch: 3,
            timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [("a".into(), 0), ("a".into(), 2), group_entry("g")]
                .into_iter()
                .collect(),
            last_update_ms: 17,
            start_ms: 11,
        };
        assert_eq!(decode_value(&encode_value(&m)), Some(m.clone()));
        assert_eq!(decode_key(&encode_key("tx-1")).as_deref(), Some("tx-1"));
        assert_eq!(m.groups().collect::<Vec<_>>(), ["g"]);
        assert_eq!(m.data_partitions().count(), 2);
        assert_eq!(decode_value(&encode_value(&m)[..20]), None);
    }

    #[test]
    fn the_partition_is_javas_string_hash_code() {
        // "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == i32::MIN.
        assert_eq!(partition_for("hello", 50), 99162322 % 50);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // A negative hash code is made positive.
        let h = "zzzzzzzz"
            .encode_utf16()
            .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
        assert!(h < 0);
        assert_eq!(partition_for("zzzzzzzz", 50), h.abs() % 50);
    }
}
