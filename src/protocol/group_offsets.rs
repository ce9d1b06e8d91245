//! Committed consumer offsets and where to find them: OffsetCommit (key 8), OffsetFetch (key 9)
//! and FindCoordinator (key 10; 0.8's GroupCoordinator is its v0).
//!
//! A field's versions are written beside it, as the published JSON schemas give them.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array, read_topics, read_topics_n};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPartition {
    pub partition: i32,
    pub offset: i64,
    /// v1 only; -1 means "now".
    pub timestamp: i64,
    /// v6+; -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    /// v1+: -1 for a commit without group management.
    pub generation_id: i32,
    /// v1+.
    pub member_id: String,
    /// v7+.
    pub group_instance_id: Option<String>,
    /// v2–v4 (Kafka ignores it since 2.1; so does gregor).
    pub retention_time_ms: i64,
    pub topics: Vec<(String, Vec<CommitPartition>)>,
}

impl<'a> Decode<'a> for OffsetCommitRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let group_id = r.string("group_id")?.to_owned();
        let (generation_id, member_id) = if version >= 1 {
            (r.i32("generation_id")?, r.string("member_id")?.to_owned())
        } else {
            (-1, String::new())
        };
        let group_instance_id = r.since(7, None, |r| r.nullable_owned("group_instance_id"))?;
        let retention_time_ms = if (2..=4).contains(&version) {
            r.i64("retention_time_ms")?
        } else {
            -1
        };
        let min = 14 + if version == 1 { 8 } else { 0 } + if version >= 6 { 4 } else { 0 };
        let topics = read_topics(r, min, |r| {
            let partition = r.i32("partition")?;
            let offset = r.i64("offset")?;
            let leader_epoch = r.since(6, -1, |r| r.i32("committed_leader_epoch"))?;
            let timestamp = if version == 1 {
                r.i64("commit_timestamp")?
            } else {
                -1
            };
            let metadata = r.nullable_owned("metadata")?;
            r.tags()?;
            Ok(CommitPartition {
                partition,
                offset,
                timestamp,
                leader_epoch,
                metadata,
            })
        })?;
        r.tags()?;
        Ok(OffsetCommitRequest {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            retention_time_ms,
            topics,
        })
    }
}

impl Encode for OffsetCommitRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_str(&self.group_id);
        if version >= 1 {
            out.put_i32(self.generation_id);
            out.put_str(&self.member_id);
        }
        out.since(7, |o| o.put_nstr(self.group_instance_id.as_deref()));
        if (2..=4).contains(&version) {
            out.put_i64(self.retention_time_ms);
        }
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.offset);
            o.since(6, |o| o.put_i32(p.leader_epoch));
            if version == 1 {
                o.put_i64(p.timestamp);
            }
            o.put_nstr(p.metadata.as_deref());
            o.put_tags();
        });
        out.put_tags();
    }
}

/// OffsetCommit's response: v3+ start with `throttle_time_ms`, then an error code per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    pub topics: Vec<(String, Vec<(i32, i16)>)>,
}

impl Encode for OffsetCommitResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(3, |o| o.put_i32(0));
        out.put_topics(&self.topics, |o, (p, e)| {
            o.put_i32(*p);
            o.put_i16(*e);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for OffsetCommitResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.skip_since(3, |r| r.i32("throttle_time_ms"))?;
        let topics = read_topics(r, 6, |r| {
            let p = (r.i32("partition")?, r.i16("error_code")?);
            r.tags()?;
            Ok(p)
        })?;
        r.tags()?;
        Ok(OffsetCommitResponse { topics })
    }
}

/// OffsetFetch v0–v7. `topics: None` (v2+) asks for every partition the group has committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    pub group_id: String,
    pub topics: Option<Vec<(String, Vec<i32>)>>,
    /// v7 (KIP-447): a partition with an offset pending in an open transaction is answered
    /// UNSTABLE_OFFSET_COMMIT, for the consumer to ask again, rather than its older offset.
    pub require_stable: bool,
}

impl<'a> Decode<'a> for OffsetFetchRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let group_id = r.string("group_id")?.to_owned();
        let topics = if version >= 2 {
            match r.nullable_array_len("topics", 6)? {
                None => None,
                Some(n) => Some(read_topics_n(r, n, 4, |r| r.i32("partition"))?),
            }
        } else {
            Some(read_topics(r, 4, |r| r.i32("partition"))?)
        };
        let require_stable = r.since(7, false, |r| r.bool("require_stable"))?;
        r.tags()?;
        Ok(OffsetFetchRequest {
            group_id,
            topics,
            require_stable,
        })
    }
}

impl Encode for OffsetFetchRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.group_id);
        match &self.topics {
            Some(t) => out.put_topics(t, |o, p| o.put_i32(*p)),
            None => out.put_len(None),
        }
        out.since(7, |o| o.put_i8(i8::from(self.require_stable)));
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition: i32,
    /// -1: nothing committed.
    pub offset: i64,
    /// v5+; -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    pub error_code: i16,
}

/// v3+ start with `throttle_time_ms`; v2+ end with a group-level error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    pub topics: Vec<(String, Vec<FetchedOffset>)>,
    pub error_code: i16,
}

impl Encode for OffsetFetchResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(3, |o| o.put_i32(0));
        out.put_topics(&self.topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.offset);
            o.since(5, |o| o.put_i32(p.leader_epoch));
            o.put_nstr(Some(&p.metadata));
            o.put_i16(p.error_code);
            o.put_tags();
        });
        out.since(2, |o| o.put_i16(self.error_code));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for OffsetFetchResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.skip_since(3, |r| r.i32("throttle_time_ms"))?;
        let topics = read_topics(r, 15, |r| {
            let p = FetchedOffset {
                partition: r.i32("partition")?,
                offset: r.i64("offset")?,
                leader_epoch: r.since(5, -1, |r| r.i32("committed_leader_epoch"))?,
                metadata: r
                    .nullable_string("metadata")?
                    .unwrap_or_default()
                    .to_owned(),
                error_code: r.i16("error_code")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        let error_code = r.since(2, 0, |r| r.i16("error_code"))?;
        r.tags()?;
        Ok(OffsetFetchResponse { topics, error_code })
    }
}

/// FindCoordinator v0–v4 (v0 is 0.8's GroupCoordinator). `key_type` (v1+): 0 a group, 1 a
/// transactional id. Up to v3 a request names one key; v4 (KIP-699) names any number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindCoordinatorRequest {
    pub key_type: i8,
    /// Exactly one before v4.
    pub keys: Vec<String>,
}

impl FindCoordinatorRequest {
    /// A request for one key.
    pub fn one(key: &str, key_type: i8) -> Self {
        FindCoordinatorRequest {
            key_type,
            keys: vec![key.to_owned()],
        }
    }
}

impl<'a> Decode<'a> for FindCoordinatorRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let req = if version >= 4 {
            FindCoordinatorRequest {
                key_type: r.i8("key_type")?,
                keys: r.string_array("coordinator_keys")?,
            }
        } else {
            let key = r.string("key")?.to_owned();
            let key_type = r.since(1, 0, |r| r.i8("key_type"))?;
            FindCoordinatorRequest {
                key_type,
                keys: vec![key],
            }
        };
        r.tags()?;
        Ok(req)
    }
}

impl Encode for FindCoordinatorRequest {
    fn encode(&self, out: &mut Out<'_>) {
        if out.version() >= 4 {
            out.put_i8(self.key_type);
            out.put_strs(&self.keys);
        } else {
            out.put_str(self.keys.first().map_or("", String::as_str));
            out.since(1, |o| o.put_i8(self.key_type));
        }
        out.put_tags();
    }
}

/// One key's coordinator, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    /// The key asked about (v4+; empty when decoded from an earlier version).
    pub key: String,
    pub error_code: i16,
    /// v1+.
    pub error_message: Option<String>,
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

impl Coordinator {
    /// No coordinator for `key`: `error` and why.
    pub fn refused(key: &str, error_code: i16, why: String) -> Self {
        Coordinator {
            key: key.to_owned(),
            error_code,
            error_message: Some(why),
            node_id: -1,
            host: String::new(),
            port: -1,
        }
    }
}

/// One coordinator per key asked; before v4 exactly one, written without its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindCoordinatorResponse {
    pub coordinators: Vec<Coordinator>,
}

impl Encode for FindCoordinatorResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(1, |o| o.put_i32(0)); // throttle_time_ms
        if out.version() >= 4 {
            out.put_array(&self.coordinators, |o, c| {
                o.put_str(&c.key);
                o.put_i32(c.node_id);
                o.put_str(&c.host);
                o.put_i32(c.port);
                o.put_i16(c.error_code);
                o.put_nstr(c.error_message.as_deref());
                o.put_tags();
            });
        } else if let Some(c) = self.coordinators.first() {
            out.put_i16(c.error_code);
            out.since(1, |o| o.put_nstr(c.error_message.as_deref()));
            out.put_i32(c.node_id);
            out.put_str(&c.host);
            out.put_i32(c.port);
        }
        out.put_tags();
    }
}

impl<'a> Decode<'a> for FindCoordinatorResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let coordinators = if r.version() >= 4 {
            read_array(r, "coordinators", 15, |r| {
                let c = Coordinator {
                    key: r.string("key")?.to_owned(),
                    node_id: r.i32("node_id")?,
                    host: r.string("host")?.to_owned(),
                    port: r.i32("port")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_owned("error_message")?,
                };
                r.tags()?;
                Ok(c)
            })?
        } else {
            let error_code = r.i16("error_code")?;
            let error_message = r.since(1, None, |r| r.nullable_owned("error_message"))?;
            vec![Coordinator {
                key: String::new(),
                error_code,
                error_message,
                node_id: r.i32("node_id")?,
                host: r.string("host")?.to_owned(),
                port: r.i32("port")?,
            }]
        };
        r.tags()?;
        Ok(FindCoordinatorResponse { coordinators })
    }
}

/// OffsetDelete (47) v0: remove a group's committed offsets of these partitions
/// (kafka-consumer-groups.sh --delete-offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    pub group_id: String,
    pub topics: Vec<(String, Vec<i32>)>,
}

impl<'a> Decode<'a> for OffsetDeleteRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(OffsetDeleteRequest {
            group_id: r.string("group_id")?.to_owned(),
            topics: read_topics(r, 4, |r| r.i32("partition_index"))?,
        })
    }
}

impl Encode for OffsetDeleteRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.group_id);
        out.put_topics(&self.topics, |o, p| o.put_i32(*p));
    }
}

/// OffsetDelete's answer: a group-level error, then an error per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    pub error_code: i16,
    pub topics: Vec<(String, Vec<(i32, i16)>)>,
}

impl Encode for OffsetDeleteResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_i32(0);
        out.put_topics(&self.topics, |o, (p, code)| {
            o.put_i32(*p);
            o.put_i16(*code);
        });
    }
}

impl<'a> Decode<'a> for OffsetDeleteResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let error_code = r.i16("error_code")?;
        r.i32("throttle_time_ms")?;
        let topics = read_topics(r, 6, |r| {
            Ok((r.i32("partition_index")?, r.i16("error_code")?))
        })?;
        Ok(OffsetDeleteResponse { error_code, topics })
    }
}

#[cfg(test)]
#[path = "group_offsets_tests.rs"]
mod tests;
