//! Every byte that crosses a socket: primitives, headers, error codes, message sets, the Kafka
//! v0 client APIs and the controller commands.
//!
//! Pure encode/decode with no I/O. Decoders are bounded: a malformed frame is an `Err`, never a
//! panic. Every request and response body has one codec convention: it implements `Decode`
//! (read from a `Reader`) and `Encode` (written to an `Out`), and both learn the version from
//! the reader or writer, which the API table set to the right encoding — so a module states
//! only its fields and the version each appears in. The broker, gregor's own clients and the
//! tests share one definition of each layout.

pub mod acls;
pub mod admin_configs;
pub mod admin_describe;
pub mod admin_topics;
pub mod api_versions;
pub mod client_quotas;
pub mod compression;
pub mod controller;
pub mod coordinator;
pub mod delete_records;
pub mod describe_producers;
pub mod elect_leaders;
pub mod errors;
pub mod fetch;
mod file_slice;
pub mod group_admin;
pub mod group_membership;
pub mod group_offsets;
pub mod header;
pub mod init_producer_id;
pub mod log_dirs;
pub mod message;
pub mod metadata;
pub mod offset_for_leader_epoch;
pub mod offsets;
pub mod primitives;
pub mod produce;
pub mod reassignments;
pub mod record_batch;
pub mod records;
pub mod sasl;
pub mod scram_credentials;
mod topic_partition;
pub mod txn_admin;
pub mod txn_markers;
pub mod txn_requests;

pub use errors::ErrorCode;
pub use file_slice::FileSlice;
pub use primitives::{DecodeError, DecodeResult, Out, Reader, Writer};
pub use topic_partition::TopicPartition;

/// A body (or a part of one) written at the version, and in the encoding, `out` carries.
pub trait Encode {
    fn encode(&self, out: &mut Out<'_>);
}

/// A body (or a part of one) read at the version, and in the encoding, `r` carries.
pub trait Decode<'a>: Sized {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self>;
}

/// Appends the body of `api_key` at `version` to `buf`.
pub fn encode_body<T: Encode + ?Sized>(body: &T, buf: &mut Vec<u8>, api_key: i16, version: i16) {
    body.encode(&mut Out::body(buf, api_key, version));
}

/// Reads a whole body of `api_key` at `version` and insists nothing is left over.
pub fn decode_body<'a, T: Decode<'a>>(
    buf: &'a [u8],
    api_key: i16,
    version: i16,
) -> DecodeResult<T> {
    let mut r = Reader::body(buf, api_key, version);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

/// `encode_body` for bytes with a single classic layout: the spec's coordinator protocol, and
/// what gregor keeps in ZooKeeper.
pub fn encode_classic<T: Encode + ?Sized>(body: &T, buf: &mut Vec<u8>) {
    body.encode(&mut Out::classic(buf));
}

/// `decode_body` for bytes with a single classic layout.
pub fn decode_classic<'a, T: Decode<'a>>(buf: &'a [u8]) -> DecodeResult<T> {
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

/// One partition's answer to an admin request that acts per partition (ElectLeaders,
/// AlterPartitionReassignments): 0 or an error code, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl Encode for PartitionResult {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.partition);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_tags();
    }
}

impl<'a> Decode<'a> for PartitionResult {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let p = PartitionResult {
            partition: r.i32("partition")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_owned("error_message")?,
        };
        r.tags()?;
        Ok(p)
    }
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

/// A broker as the protocol lists it (0.8's `kafka.cluster.Broker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

impl Encode for BrokerInfo {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(self.id);
        out.put_str(&self.host);
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

/// Encodes `v` as a body of `api_key` at `version`, decodes it back, compares, and checks that
/// every strict prefix fails cleanly rather than panicking or succeeding.
#[cfg(test)]
pub(crate) fn round_trip_at<T>(v: &T, api_key: i16, version: i16) -> T
where
    T: Encode + for<'a> Decode<'a> + PartialEq + std::fmt::Debug,
{
    let mut buf = Vec::new();
    encode_body(v, &mut buf, api_key, version);
    let back: T = decode_body(&buf, api_key, version).expect("decodes what it encoded");
    assert_eq!(&back, v, "{api_key} v{version}");
    for cut in 0..buf.len() {
        assert!(
            decode_body::<T>(&buf[..cut], api_key, version).is_err(),
            "{api_key} v{version}: prefix {cut} decoded"
        );
    }
    back
}

/// `round_trip_at` for a body whose layout has one version (0.8's inter-broker requests, the
/// spec's coordinator protocol).
#[cfg(test)]
pub(crate) fn round_trip<T>(v: &T) -> T
where
    T: Encode + for<'a> Decode<'a> + PartialEq + std::fmt::Debug,
{
    round_trip_at(v, -1, 0)
}
