//! Kafka's group membership APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13) and
//! SyncGroup (14). Decoders read the encoding the reader is in; encoders write compact types
//! and tag buffers for the versions `header::SUPPORTED_APIS` calls flexible (`flex`).
//!
//! Member metadata and assignments are opaque bytes here: the coordinator relays them, the
//! clients' own assignors read them (`consumer_protocol` decodes the "consumer" kind).

use super::header::{HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP, is_flexible};
use super::{DecodeResult, Reader, Writer, read_array, write_array_v};

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

impl JoinGroupRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id")?.to_owned();
        let session_timeout_ms = r.i32("session_timeout_ms")?;
        let rebalance_timeout_ms = if version >= 1 {
            r.i32("rebalance_timeout_ms")?
        } else {
            session_timeout_ms
        };
        let member_id = r.string("member_id")?.to_owned();
        let group_instance_id = if version >= 5 {
            r.nullable_string("group_instance_id")?.map(str::to_owned)
        } else {
            None
        };
        let protocol_type = r.string("protocol_type")?.to_owned();
        let protocols = read_array(r, "protocols", 3, |r| {
            let p = JoinProtocol {
                name: r.string("protocol_name")?.to_owned(),
                metadata: bytes(r, "protocol_metadata")?,
            };
            r.tags()?;
            Ok(p)
        })?;
        let reason = if version >= 8 {
            r.nullable_string("reason")?.map(str::to_owned)
        } else {
            None
        };
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

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(JOIN_GROUP, version);
        out.put_str(flex, &self.group_id);
        out.put_i32(self.session_timeout_ms);
        if version >= 1 {
            out.put_i32(self.rebalance_timeout_ms);
        }
        out.put_str(flex, &self.member_id);
        if version >= 5 {
            out.put_nstr(flex, self.group_instance_id.as_deref());
        }
        out.put_str(flex, &self.protocol_type);
        write_array_v(out, flex, &self.protocols, |o, p| {
            o.put_str(flex, &p.name);
            o.put_bytes(flex, Some(&p.metadata));
            o.put_tags(flex);
        });
        if version >= 8 {
            out.put_nstr(flex, self.reason.as_deref());
        }
        out.put_tags(flex);
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

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(JOIN_GROUP, version);
        if version >= 2 {
            out.put_i32(0);
        }
        out.put_i16(self.error_code);
        out.put_i32(self.generation_id);
        if version >= 7 {
            out.put_nstr(flex, self.protocol_type.as_deref());
            // Nullable from v7: an error answer names no protocol.
            let name = (self.error_code == 0).then_some(self.protocol_name.as_str());
            out.put_nstr(flex, name);
        } else {
            out.put_str(flex, &self.protocol_name);
        }
        out.put_str(flex, &self.leader);
        if version >= 9 {
            out.put_i8(0); // skip_assignment: the leader always assigns
        }
        out.put_str(flex, &self.member_id);
        write_array_v(out, flex, &self.members, |o, m| {
            o.put_str(flex, &m.member_id);
            if version >= 5 {
                o.put_nstr(flex, m.group_instance_id.as_deref());
            }
            o.put_bytes(flex, Some(&m.metadata));
            o.put_tags(flex);
        });
        out.put_tags(flex);
    }

    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        if version >= 2 {
            r.i32("throttle_time_ms")?;
        }
        let error_code = r.i16("error_code")?;
        let generation_id = r.i32("generation_id")?;
        let (protocol_type, protocol_name) = if version >= 7 {
            (
                r.nullable_string("protocol_type")?.map(str::to_owned),
                r.nullable_string("protocol_name")?
                    .unwrap_or_default()
                    .to_owned(),
            )
        } else {
            (None, r.string("protocol_name")?.to_owned())
        };
        let leader = r.string("leader")?.to_owned();
        if version >= 9 {
            r.bool("skip_assignment")?;
        }
        let member_id = r.string("member_id")?.to_owned();
        let members = read_array(r, "members", 3, |r| {
            let m = JoinedMember {
                member_id: r.string("member_id")?.to_owned(),
                group_instance_id: if version >= 5 {
                    r.nullable_string("group_instance_id")?.map(str::to_owned)
                } else {
                    None
                },
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

impl GenerationMember {
    /// The fields alone; a Heartbeat request is these and its tag buffer (`decode_heartbeat`).
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        Ok(GenerationMember {
            group_id: r.string("group_id")?.to_owned(),
            generation_id: r.i32("generation_id")?,
            member_id: r.string("member_id")?.to_owned(),
            group_instance_id: if version >= 3 {
                r.nullable_string("group_instance_id")?.map(str::to_owned)
            } else {
                None
            },
        })
    }

    /// The fields alone, in the encoding of the request they are part of.
    pub fn encode(&self, out: &mut Vec<u8>, version: i16, flex: bool) {
        out.put_str(flex, &self.group_id);
        out.put_i32(self.generation_id);
        out.put_str(flex, &self.member_id);
        if version >= 3 {
            out.put_nstr(flex, self.group_instance_id.as_deref());
        }
    }

    /// A whole Heartbeat request.
    pub fn decode_heartbeat(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let m = Self::decode(r, version)?;
        r.tags()?;
        Ok(m)
    }

    pub fn encode_heartbeat(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(HEARTBEAT, version);
        self.encode(out, version, flex);
        out.put_tags(flex);
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

impl SyncGroupRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let member = GenerationMember::decode(r, version)?;
        let (protocol_type, protocol_name) = if version >= 5 {
            (
                r.nullable_string("protocol_type")?.map(str::to_owned),
                r.nullable_string("protocol_name")?.map(str::to_owned),
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

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(SYNC_GROUP, version);
        self.member.encode(out, version, flex);
        if version >= 5 {
            out.put_nstr(flex, self.protocol_type.as_deref());
            out.put_nstr(flex, self.protocol_name.as_deref());
        }
        write_array_v(out, flex, &self.assignments, |o, (m, a)| {
            o.put_str(flex, m);
            o.put_bytes(flex, Some(a));
            o.put_tags(flex);
        });
        out.put_tags(flex);
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

impl SyncGroupResponse {
    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(SYNC_GROUP, version);
        if version >= 1 {
            out.put_i32(0);
        }
        out.put_i16(self.error_code);
        if version >= 5 {
            out.put_nstr(flex, self.protocol_type.as_deref());
            out.put_nstr(flex, self.protocol_name.as_deref());
        }
        out.put_bytes(flex, Some(&self.assignment));
        out.put_tags(flex);
    }

    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        if version >= 1 {
            r.i32("throttle_time_ms")?;
        }
        let error_code = r.i16("error_code")?;
        let (protocol_type, protocol_name) = if version >= 5 {
            (
                r.nullable_string("protocol_type")?.map(str::to_owned),
                r.nullable_string("protocol_name")?.map(str::to_owned),
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

/// Heartbeat's answer, and LeaveGroup v0–v2's: `throttle_time_ms` from v1, then the error
/// (and a tag buffer when flexible, v4+).
pub fn encode_error_response(out: &mut Vec<u8>, error_code: i16, version: i16) {
    if version >= 1 {
        out.put_i32(0);
    }
    out.put_i16(error_code);
}

pub fn decode_error_response(r: &mut Reader<'_>, version: i16) -> DecodeResult<i16> {
    if version >= 1 {
        r.i32("throttle_time_ms")?;
    }
    r.i16("error_code")
}

pub fn encode_heartbeat_response(out: &mut Vec<u8>, error_code: i16, version: i16) {
    encode_error_response(out, error_code, version);
    out.put_tags(is_flexible(HEARTBEAT, version));
}

pub fn decode_heartbeat_response(r: &mut Reader<'_>, version: i16) -> DecodeResult<i16> {
    let e = decode_error_response(r, version)?;
    r.tags()?;
    Ok(e)
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

impl LeaveGroupRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id")?.to_owned();
        let members = if version >= 3 {
            read_array(r, "members", 2, |r| {
                let m = LeavingMember {
                    member_id: r.string("member_id")?.to_owned(),
                    group_instance_id: r.nullable_string("group_instance_id")?.map(str::to_owned),
                    reason: if version >= 5 {
                        r.nullable_string("reason")?.map(str::to_owned)
                    } else {
                        None
                    },
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

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(LEAVE_GROUP, version);
        out.put_str(flex, &self.group_id);
        if version >= 3 {
            write_array_v(out, flex, &self.members, |o, m| {
                o.put_str(flex, &m.member_id);
                o.put_nstr(flex, m.group_instance_id.as_deref());
                if version >= 5 {
                    o.put_nstr(flex, m.reason.as_deref());
                }
                o.put_tags(flex);
            });
        } else {
            let first = self.members.first().map_or("", |m| m.member_id.as_str());
            out.put_string(first);
        }
        out.put_tags(flex);
    }
}

/// LeaveGroup's answer; v3+ adds one error per member after the group's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    pub error_code: i16,
    pub members: Vec<(LeavingMember, i16)>,
}

impl LeaveGroupResponse {
    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(LEAVE_GROUP, version);
        encode_error_response(out, self.error_code, version);
        if version >= 3 {
            write_array_v(out, flex, &self.members, |o, (m, e)| {
                o.put_str(flex, &m.member_id);
                o.put_nstr(flex, m.group_instance_id.as_deref());
                o.put_i16(*e);
                o.put_tags(flex);
            });
        }
        out.put_tags(flex);
    }

    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let error_code = decode_error_response(r, version)?;
        let members = if version >= 3 {
            read_array(r, "members", 4, |r| {
                let m = LeavingMember {
                    member_id: r.string("member_id")?.to_owned(),
                    group_instance_id: r.nullable_string("group_instance_id")?.map(str::to_owned),
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
