//! Kafka's group membership APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13) and
//! SyncGroup (14).
//!
//! Member metadata and assignments are opaque bytes here: the coordinator relays them, the
//! clients' own assignors read them (`consumer_protocol` decodes the "consumer" kind).

use super::{Decode, DecodeResult, Encode, Out, Reader, Writer, read_array};

/// One protocol a joining member supports, with its metadata (for "consumer": a subscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinProtocol {
    pub name: String,
    pub metadata: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    pub group_id: String,
    pub session_timeout_ms: i32,
    /// v1+; v0 clients rebalance within their session timeout.
    pub rebalance_timeout_ms: i32,
    pub member_id: String,
    /// v5+ (KIP-345 static membership).
    pub group_instance_id: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<JoinProtocol>,
    /// v8+: why the member (re)joins, for the coordinator's log.
    pub reason: Option<String>,
}

impl<'a> Decode<'a> for JoinGroupRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let group_id = r.string("group_id")?.to_owned();
        let session_timeout_ms = r.i32("session_timeout_ms")?;
        let rebalance_timeout_ms =
            r.since(1, session_timeout_ms, |r| r.i32("rebalance_timeout_ms"))?;
        let member_id = r.string("member_id")?.to_owned();
        let group_instance_id = r.since(5, None, |r| r.nullable_owned("group_instance_id"))?;
        let protocol_type = r.string("protocol_type")?.to_owned();
        let protocols = read_array(r, "protocols", 3, |r| {
            let p = JoinProtocol {
                name: r.string("protocol_name")?.to_owned(),
                metadata: bytes(r, "protocol_metadata")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        let reason = r.since(8, None, |r| r.nullable_owned("reason"))?;
        r.tags()?;
        Ok(JoinGroupRequest {
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,
            protocol_type,
            protocols,
            reason,
        })
    }
}

impl Encode for JoinGroupRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.group_id);
        out.put_i32(self.session_timeout_ms);
        out.since(1, |o| o.put_i32(self.rebalance_timeout_ms));
        out.put_str(&self.member_id);
        out.since(5, |o| o.put_nstr(self.group_instance_id.as_deref()));
        out.put_str(&self.protocol_type);
        out.put_array(&self.protocols, |o, p| {
            o.put_str(&p.name);
            o.put_bytes(Some(&p.metadata));
            o.put_tags();
        });
        out.since(8, |o| o.put_nstr(self.reason.as_deref()));
        out.put_tags();
    }
}

/// A member as the leader sees it in its JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    /// v5+.
    pub group_instance_id: Option<String>,
    pub metadata: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    pub error_code: i16,
    pub generation_id: i32,
    /// v7+; `None` in an error answer.
    pub protocol_type: Option<String>,
    pub protocol_name: String,
    pub leader: String,
    pub member_id: String,
    /// Every member, for the leader only; empty for the others.
    pub members: Vec<JoinedMember>,
}

impl JoinGroupResponse {
    /// An error answer: no generation, and the member id to use next (MEMBER_ID_REQUIRED
    /// carries the one the coordinator chose).
    pub fn error(code: super::ErrorCode, member_id: &str) -> Self {
        JoinGroupResponse {
            error_code: code.code(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: String::new(),
            leader: String::new(),
            member_id: member_id.to_owned(),
            members: Vec::new(),
        }
    }
}

impl Encode for JoinGroupResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.since(2, |o| o.put_i32(0));
        out.put_i16(self.error_code);
        out.put_i32(self.generation_id);
        if version >= 7 {
            out.put_nstr(self.protocol_type.as_deref());
            // Nullable from v7: an error answer names no protocol.
            let name = (self.error_code == 0).then_some(self.protocol_name.as_str());
            out.put_nstr(name);
        } else {
            out.put_str(&self.protocol_name);
        }
        out.put_str(&self.leader);
        out.since(9, |o| o.put_i8(0)); // skip_assignment: the leader always assigns
        out.put_str(&self.member_id);
        out.put_array(&self.members, |o, m| {
            o.put_str(&m.member_id);
            o.since(5, |o| o.put_nstr(m.group_instance_id.as_deref()));
            o.put_bytes(Some(&m.metadata));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for JoinGroupResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(2, |r| r.i32("throttle_time_ms"))?;
        let error_code = r.i16("error_code")?;
        let generation_id = r.i32("generation_id")?;
        let (protocol_type, protocol_name) = if version >= 7 {
            (
                r.nullable_owned("protocol_type")?,
                r.nullable_string("protocol_name")?
                    .unwrap_or_default()
                    .to_owned(),
            )
        } else {
            (None, r.string("protocol_name")?.to_owned())
        };
        let leader = r.string("leader")?.to_owned();
        r.skip_since(9, |r| r.bool("skip_assignment"))?;
        let member_id = r.string("member_id")?.to_owned();
        let members = read_array(r, "members", 3, |r| {
            let m = JoinedMember {
                member_id: r.string("member_id")?.to_owned(),
                group_instance_id: r.since(5, None, |r| r.nullable_owned("group_instance_id"))?,
                metadata: bytes(r, "metadata")?,
            };
            r.tags()?;
            Ok(m)
        })?;
        r.tags()?;
        Ok(JoinGroupResponse {
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            member_id,
            members,
        })
    }
}

/// The fields that name a member of a generation: Heartbeat, and the head of SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationMember {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    /// v3+ of Heartbeat and SyncGroup.
    pub group_instance_id: Option<String>,
}

/// The fields alone: a Heartbeat request is these and its tag buffer, a SyncGroup request
/// starts with them.
impl<'a> Decode<'a> for GenerationMember {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(GenerationMember {
            group_id: r.string("group_id")?.to_owned(),
            generation_id: r.i32("generation_id")?,
            member_id: r.string("member_id")?.to_owned(),
            group_instance_id: if r.version() >= 3 {
                r.nullable_owned("group_instance_id")?
            } else {
                None
            },
        })
    }
}

impl Encode for GenerationMember {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.group_id);
        out.put_i32(self.generation_id);
        out.put_str(&self.member_id);
        if out.version() >= 3 {
            out.put_nstr(self.group_instance_id.as_deref());
        }
    }
}

/// Heartbeat (12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub member: GenerationMember,
}

impl<'a> Decode<'a> for HeartbeatRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let member = GenerationMember::decode(r)?;
        r.tags()?;
        Ok(HeartbeatRequest { member })
    }
}

impl Encode for HeartbeatRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put(&self.member);
        out.put_tags();
    }
}

/// Heartbeat's answer: `throttle_time_ms` from v1, then the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub error_code: i16,
}

impl Encode for HeartbeatResponse {
    fn encode(&self, out: &mut Out<'_>) {
        if out.version() >= 1 {
            out.put_i32(0);
        }
        out.put_i16(self.error_code);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for HeartbeatResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        if r.version() >= 1 {
            r.i32("throttle_time_ms")?;
        }
        let error_code = r.i16("error_code")?;
        r.tags()?;
        Ok(HeartbeatResponse { error_code })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupRequest {
    pub member: GenerationMember,
    /// v5+: the protocol type and name the member believes the group chose.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// member id → assignment; only the leader sends any.
    pub assignments: Vec<(String, Vec<u8>)>,
}

impl<'a> Decode<'a> for SyncGroupRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let member = GenerationMember::decode(r)?;
        let (protocol_type, protocol_name) = if version >= 5 {
            (
                r.nullable_owned("protocol_type")?,
                r.nullable_owned("protocol_name")?,
            )
        } else {
            (None, None)
        };
        let assignments = read_array(r, "assignments", 3, |r| {
            let a = (r.string("member_id")?.to_owned(), bytes(r, "assignment")?);
            r.tags()?;
            Ok(a)
        })?;
        r.tags()?;
        Ok(SyncGroupRequest {
            member,
            protocol_type,
            protocol_name,
            assignments,
        })
    }
}

impl Encode for SyncGroupRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put(&self.member);
        if version >= 5 {
            out.put_nstr(self.protocol_type.as_deref());
            out.put_nstr(self.protocol_name.as_deref());
        }
        out.put_array(&self.assignments, |o, (m, a)| {
            o.put_str(m);
            o.put_bytes(Some(a));
            o.put_tags();
        });
        out.put_tags();
    }
}

/// SyncGroup's answer; v1+ start with `throttle_time_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResponse {
    pub error_code: i16,
    /// v5+: the group's protocol type and name.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Vec<u8>,
}

impl Encode for SyncGroupResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.since(1, |o| o.put_i32(0));
        out.put_i16(self.error_code);
        if version >= 5 {
            out.put_nstr(self.protocol_type.as_deref());
            out.put_nstr(self.protocol_name.as_deref());
        }
        out.put_bytes(Some(&self.assignment));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for SyncGroupResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let error_code = r.i16("error_code")?;
        let (protocol_type, protocol_name) = if version >= 5 {
            (
                r.nullable_owned("protocol_type")?,
                r.nullable_owned("protocol_name")?,
            )
        } else {
            (None, None)
        };
        let assignment = bytes(r, "assignment")?;
        r.tags()?;
        Ok(SyncGroupResponse {
            error_code,
            protocol_type,
            protocol_name,
            assignment,
        })
    }
}

/// A member leaving: v0–v2 name one by member id, v3+ a batch with instance ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: why it leaves, for the coordinator's log.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    pub group_id: String,
    pub members: Vec<LeavingMember>,
}

impl<'a> Decode<'a> for LeaveGroupRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let group_id = r.string("group_id")?.to_owned();
        let members = if version >= 3 {
            read_array(r, "members", 2, |r| {
                let m = LeavingMember {
                    member_id: r.string("member_id")?.to_owned(),
                    group_instance_id: r.nullable_owned("group_instance_id")?,
                    reason: r.since(5, None, |r| r.nullable_owned("reason"))?,
                };
                r.tags()?;
                Ok(m)
            })?
        } else {
            vec![LeavingMember {
                member_id: r.string("member_id")?.to_owned(),
                group_instance_id: None,
                reason: None,
            }]
        };
        r.tags()?;
        Ok(LeaveGroupRequest { group_id, members })
    }
}

impl Encode for LeaveGroupRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.put_str(&self.group_id);
        if version >= 3 {
            out.put_array(&self.members, |o, m| {
                o.put_str(&m.member_id);
                o.put_nstr(m.group_instance_id.as_deref());
                o.since(5, |o| o.put_nstr(m.reason.as_deref()));
                o.put_tags();
            });
        } else {
            let first = self.members.first().map_or("", |m| m.member_id.as_str());
            out.put_string(first);
        }
        out.put_tags();
    }
}

/// LeaveGroup's answer; v3+ adds one error per member after the group's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    pub error_code: i16,
    pub members: Vec<(LeavingMember, i16)>,
}

impl Encode for LeaveGroupResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        out.since(1, |o| o.put_i32(0));
        out.put_i16(self.error_code);
        if version >= 3 {
            out.put_array(&self.members, |o, (m, e)| {
                o.put_str(&m.member_id);
                o.put_nstr(m.group_instance_id.as_deref());
                o.put_i16(*e);
                o.put_tags();
            });
        }
        out.put_tags();
    }
}

impl<'a> Decode<'a> for LeaveGroupResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let error_code = r.i16("error_code")?;
        let members = if version >= 3 {
            read_array(r, "members", 4, |r| {
                let m = LeavingMember {
                    member_id: r.string("member_id")?.to_owned(),
                    group_instance_id: r.nullable_owned("group_instance_id")?,
                    reason: None,
                };
                let e = r.i16("error_code")?;
                r.tags()?;
                Ok((m, e))
            })?
        } else {
            Vec::new()
        };
        r.tags()?;
        Ok(LeaveGroupResponse {
            error_code,
            members,
        })
    }
}

/// BYTES that the protocol does not allow to be null; a null from a lenient client reads as
/// empty, which is what every coordinator treats it as.
pub(crate) fn bytes(r: &mut Reader<'_>, field: &'static str) -> DecodeResult<Vec<u8>> {
    Ok(r.nullable_bytes(field)?.unwrap_or_default().to_vec())
}

#[cfg(test)]
#[path = "group_membership_tests.rs"]
mod tests;
