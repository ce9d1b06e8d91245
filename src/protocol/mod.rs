//! Every byte that crosses a socket: primitives, headers, error codes, message sets, the Kafka
//! v0 client APIs and the controller commands.
//!
//! Pure encode/decode with no I/O. Decoders are bounded: a malformed frame is an `Err`, never a
//! panic. Each request and response type implements `Encode` and `Decode` both ways, so the
//! broker, gregor's own clients and the tests share one definition of each layout.

pub mod admin_configs;
pub mod admin_describe;
pub mod admin_topics;
pub mod api_versions;
pub mod compression;
pub mod controller;
pub mod coordinator;
pub mod delete_records;
pub mod errors;
pub mod fetch;
mod file_slice;
pub mod group_admin;
pub mod group_membership;
pub mod group_offsets;
pub mod header;
pub mod init_producer_id;
pub mod message;
pub mod metadata;
pub mod offset_for_leader_epoch;
pub mod offsets;
pub mod primitives;
pub mod produce;
pub mod record_batch;
pub mod records;
mod topic_partition;

pub use errors::ErrorCode;
pub use file_slice::FileSlice;
pub use primitives::{DecodeError, DecodeResult, Reader, Writer};
pub use topic_partition::TopicPartition;

/// A body that can be written to a frame.
pub trait Encode {
    fn encode(&self, out: &mut Vec<u8>);
}

/// A body that can be read from a frame.
pub trait Decode<'a>: Sized {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self>;
}

/// Decodes a whole body and insists nothing is left over.
pub fn decode_all<'a, T: Decode<'a>>(buf: &'a [u8]) -> DecodeResult<T> {
    let mut r = Reader::new(buf);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

/// Reads `n` elements with `f`, after checking `n` against the bytes left.
pub(crate) fn read_array<'a, T>(
    r: &mut Reader<'a>,
    field: &'static str,
    min_elem: usize,
    mut f: impl FnMut(&mut Reader<'a>) -> DecodeResult<T>,
) -> DecodeResult<Vec<T>> {
    let n = r.array_len(field, min_elem)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(f(r)?);
    }
    Ok(v)
}

/// Writes a slice as an ARRAY (COMPACT_ARRAY when `flex`) with `f` for each element.
pub fn write_array_v<T>(
    out: &mut Vec<u8>,
    flex: bool,
    items: &[T],
    mut f: impl FnMut(&mut Vec<u8>, &T),
) {
    out.put_len(flex, Some(items.len()));
    for it in items {
        f(out, it);
    }
}

/// Writes a slice as an ARRAY with `f` for each element.
pub fn write_array<T>(out: &mut Vec<u8>, items: &[T], mut f: impl FnMut(&mut Vec<u8>, &T)) {
    out.put_array_len(items.len());
    for it in items {
        f(out, it);
    }
}

/// Writes Kafka's `[topic [partition …]]` nesting, with `f` for each partition entry.
pub fn write_topics<T>(
    out: &mut Vec<u8>,
    topics: &[(String, Vec<T>)],
    mut f: impl FnMut(&mut Vec<u8>, &T),
) {
    write_array(out, topics, |o, (t, parts)| {
        o.put_string(t);
        write_array(o, parts, &mut f);
    });
}

/// Builds a response's `[topic [partition …]]` from a request's: `f` answers each partition
/// entry, given its topic.
pub fn map_topics<T, U>(
    topics: &[(String, Vec<T>)],
    mut f: impl FnMut(&str, &T) -> U,
) -> Vec<(String, Vec<U>)> {
    topics
        .iter()
        .map(|(t, parts)| (t.clone(), parts.iter().map(|p| f(t, p)).collect()))
        .collect()
}

/// Reads `[topic [partition …]]`; `min_part` is the smallest encoded partition entry. In a
/// flexible body each topic entry ends with its tag buffer (`f` reads the partitions' own).
pub fn read_topics<'a, T>(
    r: &mut Reader<'a>,
    min_part: usize,
    f: impl FnMut(&mut Reader<'a>) -> DecodeResult<T>,
) -> DecodeResult<Vec<(String, Vec<T>)>> {
    let n = r.array_len("topics", 6)?;
    read_topics_n(r, n, min_part, f)
}

/// `read_topics` after its count `n` has been read (a nullable topic list).
pub fn read_topics_n<'a, T>(
    r: &mut Reader<'a>,
    n: usize,
    min_part: usize,
    mut f: impl FnMut(&mut Reader<'a>) -> DecodeResult<T>,
) -> DecodeResult<Vec<(String, Vec<T>)>> {
    let mut topics = Vec::with_capacity(n);
    for _ in 0..n {
        let topic = r.string("topic")?.to_owned();
        let parts = read_array(r, "partitions", min_part, &mut f)?;
        r.tags()?;
        topics.push((topic, parts));
    }
    Ok(topics)
}

/// `write_topics` in either encoding: compact names and counts and a tag buffer per topic when
/// `flex` (`f` writes each partition's own).
pub fn write_topics_v<T>(
    out: &mut Vec<u8>,
    flex: bool,
    topics: &[(String, Vec<T>)],
    mut f: impl FnMut(&mut Vec<u8>, &T),
) {
    out.put_len(flex, Some(topics.len()));
    for (t, parts) in topics {
        out.put_str(flex, t);
        out.put_len(flex, Some(parts.len()));
        for p in parts {
            f(out, p);
        }
        out.put_tags(flex);
    }
}

/// A broker as the protocol lists it (0.8's `kafka.cluster.Broker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

impl Encode for BrokerInfo {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.id);
        out.put_string(&self.host);
        out.put_i32(self.port);
    }
}

impl<'a> Decode<'a> for BrokerInfo {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(BrokerInfo {
            id: r.i32("broker.id")?,
            host: r.string("broker.host")?.to_owned(),
            port: r.i32("broker.port")?,
        })
    }
}

/// One listener's address of a broker (Kafka's `EndPoint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndPoint {
    pub listener: String,
    pub host: String,
    pub port: i32,
}

/// A broker with every endpoint it registered, one per listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndPoints {
    pub id: i32,
    pub endpoints: Vec<EndPoint>,
}

impl BrokerEndPoints {
    /// The broker as it is reached on `listener`; `None` when it has no such listener.
    pub fn on(&self, listener: &str) -> Option<BrokerInfo> {
        self.endpoints
            .iter()
            .find(|e| e.listener == listener)
            .map(|e| BrokerInfo {
                id: self.id,
                host: e.host.clone(),
                port: e.port,
            })
    }
}

/// Smallest encoded `BrokerInfo`: id, empty host, port.
pub(crate) const BROKER_MIN: usize = 10;

#[cfg(test)]
pub(crate) fn round_trip<T>(v: &T) -> T
where
    T: Encode + for<'a> Decode<'a> + PartialEq + std::fmt::Debug,
{
    let mut buf = Vec::new();
    v.encode(&mut buf);
    let back: T = decode_all(&buf).expect("decodes what it encoded");
    assert_eq!(&back, v);
    // Every strict prefix must fail cleanly rather than panic or succeed.
    for cut in 0..buf.len() {
        assert!(
            decode_all::<T>(&buf[..cut]).is_err(),
            "prefix {cut} decoded"
        );
    }
    back
}

/// `round_trip` for a versioned layout: encodes with `enc`, decodes with `dec`, compares, and
/// checks that every strict prefix fails cleanly.
#[cfg(test)]
pub(crate) fn round_trip_with<T: PartialEq + std::fmt::Debug>(
    v: &T,
    enc: impl Fn(&T, &mut Vec<u8>),
    dec: impl Fn(&mut Reader<'_>) -> DecodeResult<T>,
) {
    let mut buf = Vec::new();
    enc(v, &mut buf);
    let mut r = Reader::new(&buf);
    assert_eq!(&dec(&mut r).unwrap(), v);
    r.finish().unwrap();
    for cut in 0..buf.len() {
        let mut r = Reader::new(&buf[..cut]);
        assert!(
            dec(&mut r).and_then(|_| r.finish()).is_err(),
            "prefix {cut}"
        );
    }
}
