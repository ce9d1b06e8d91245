//! Looking at and removing groups: DescribeGroups (15) v0–v4, ListGroups (16) v0–v2,
//! DeleteGroups (42) v0–v1; and the "consumer" protocol's subscription and assignment, which
//! the coordinator reads (to know a group's topics) and writes (to show a spec-protocol
//! group's ownership in Kafka's own shape).

use super::group_membership::bytes;
use super::{DecodeResult, Reader, Writer, read_array, read_topics, write_array, write_topics};

/// DescribeGroups request: v3+ add `include_authorized_operations` (gregor has no ACLs and
/// answers operations unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsRequest {
    pub groups: Vec<String>,
}

impl DescribeGroupsRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let groups = read_array(r, "groups", 2, |r| Ok(r.string("group")?.to_owned()))?;
        if version >= 3 {
            r.bool("include_authorized_operations")?;
        }
        Ok(DescribeGroupsRequest { groups })
    }

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        write_array(out, &self.groups, |o, g| o.put_string(g));
        if version >= 3 {
            out.put_i8(0);
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    /// v4+.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: i16,
    pub group_id: String,
    /// Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
    pub state: String,
    pub protocol_type: String,
    /// The chosen protocol (the assignor's name).
    pub protocol: String,
    pub members: Vec<DescribedMember>,
}

/// Kafka's "unknown" for `authorized_operations`.
const OPERATIONS_UNKNOWN: i32 = i32::MIN;

pub fn encode_describe_groups(out: &mut Vec<u8>, groups: &[DescribedGroup], version: i16) {
    if version >= 1 {
        out.put_i32(0);
    }
    write_array(out, groups, |o, g| {
        o.put_i16(g.error_code);
        o.put_string(&g.group_id);
        o.put_string(&g.state);
        o.put_string(&g.protocol_type);
        o.put_string(&g.protocol);
        write_array(o, &g.members, |o, m| {
            o.put_string(&m.member_id);
            if version >= 4 {
                o.put_nullable_string(m.group_instance_id.as_deref());
            }
            o.put_string(&m.client_id);
            o.put_string(&m.client_host);
            o.put_nullable_bytes(Some(&m.metadata));
            o.put_nullable_bytes(Some(&m.assignment));
        });
        if version >= 3 {
            o.put_i32(OPERATIONS_UNKNOWN);
        }
    });
}

pub fn decode_describe_groups(
    r: &mut Reader<'_>,
    version: i16,
) -> DecodeResult<Vec<DescribedGroup>> {
    if version >= 1 {
        r.i32("throttle_time_ms")?;
    }
    read_array(r, "groups", 14, |r| {
        let g = DescribedGroup {
            error_code: r.i16("error_code")?,
            group_id: r.string("group_id")?.to_owned(),
            state: r.string("group_state")?.to_owned(),
            protocol_type: r.string("protocol_type")?.to_owned(),
            protocol: r.string("protocol_data")?.to_owned(),
            members: read_array(r, "members", 16, |r| {
                Ok(DescribedMember {
                    member_id: r.string("member_id")?.to_owned(),
                    group_instance_id: if version >= 4 {
                        r.nullable_string("group_instance_id")?.map(str::to_owned)
                    } else {
                        None
                    },
                    client_id: r.string("client_id")?.to_owned(),
                    client_host: r.string("client_host")?.to_owned(),
                    metadata: bytes(r, "member_metadata")?,
                    assignment: bytes(r, "member_assignment")?,
                })
            })?,
        };
        if version >= 3 {
            r.i32("authorized_operations")?;
        }
        Ok(g)
    })
}

/// ListGroups response (the v0–v2 request is empty): `(group id, protocol type)`.
pub fn encode_list_groups(out: &mut Vec<u8>, error_code: i16, groups: &[(String, String)], v: i16) {
    if v >= 1 {
        out.put_i32(0);
    }
    out.put_i16(error_code);
    write_array(out, groups, |o, (g, t)| {
        o.put_string(g);
        o.put_string(t);
    });
}

pub fn decode_list_groups(
    r: &mut Reader<'_>,
    v: i16,
) -> DecodeResult<(i16, Vec<(String, String)>)> {
    if v >= 1 {
        r.i32("throttle_time_ms")?;
    }
    let code = r.i16("error_code")?;
    let groups = read_array(r, "groups", 4, |r| {
        Ok((
            r.string("group_id")?.to_owned(),
            r.string("protocol_type")?.to_owned(),
        ))
    })?;
    Ok((code, groups))
}

/// DeleteGroups response (v0 and v1 share it): an error per group.
pub fn encode_delete_groups(out: &mut Vec<u8>, results: &[(String, i16)]) {
    out.put_i32(0);
    write_array(out, results, |o, (g, e)| {
        o.put_string(g);
        o.put_i16(*e);
    });
}

pub fn decode_delete_groups(r: &mut Reader<'_>) -> DecodeResult<Vec<(String, i16)>> {
    r.i32("throttle_time_ms")?;
    read_array(r, "results", 4, |r| {
        Ok((r.string("group_id")?.to_owned(), r.i16("error_code")?))
    })
}

/// The topics of a "consumer" protocol subscription (version, topics, then fields the
/// coordinator does not need: user data, owned partitions, generation, rack). `None` when the
/// bytes are not one.
pub fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(metadata);
    r.i16("version").ok()?;
    r.string_array("topics").ok()
}

/// A "consumer" protocol subscription (version 0) for `topics`.
pub fn encode_subscription(topics: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_i16(0);
    write_array(&mut out, topics, |o, t| o.put_string(t));
    out.put_nullable_bytes(None);
    out
}

/// A "consumer" protocol assignment (version 0): `[topic [partition]]`, no user data.
pub fn encode_assignment(partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_i16(0);
    write_topics(&mut out, partitions, |o, p| o.put_i32(*p));
    out.put_nullable_bytes(None);
    out
}

/// The partitions of a "consumer" protocol assignment; empty bytes (a member not yet given
/// one) are no partitions.
pub fn decode_assignment(b: &[u8]) -> DecodeResult<Vec<(String, Vec<i32>)>> {
    if b.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Reader::new(b);
    r.i16("version")?;
    read_topics(&mut r, 4, |r| r.i32("partition"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_round_trips_at_every_version() {
        for v in 0..=4 {
            let req = DescribeGroupsRequest {
                groups: vec!["a".into(), "b".into()],
            };
            let mut b = Vec::new();
            req.encode(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(DescribeGroupsRequest::decode(&mut r, v).unwrap(), req);
            r.finish().unwrap();
            let groups = vec![DescribedGroup {
                error_code: 0,
                group_id: "a".into(),
                state: "Stable".into(),
                protocol_type: "consumer".into(),
                protocol: "range".into(),
                members: vec![DescribedMember {
                    member_id: "m".into(),
                    group_instance_id: (v >= 4).then(|| "i".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    metadata: vec![1],
                    assignment: encode_assignment(&[("t".into(), vec![0, 1])]),
                }],
            }];
            let mut b = Vec::new();
            encode_describe_groups(&mut b, &groups, v);
            let mut r = Reader::new(&b);
            assert_eq!(decode_describe_groups(&mut r, v).unwrap(), groups);
            r.finish().unwrap();
        }
    }

    #[test]
    fn consumer_protocol_parts_round_trip() {
        let s = encode_subscription(&["a".into(), "bb".into()]);
        assert_eq!(subscription_topics(&s), Some(vec!["a".into(), "bb".into()]));
        assert_eq!(subscription_topics(&[0, 0, 0, 0, 0, 9]), None);
        let a = vec![("t".to_owned(), vec![2, 5])];
        assert_eq!(decode_assignment(&encode_assignment(&a)).unwrap(), a);
        assert_eq!(decode_assignment(&[]).unwrap(), Vec::new());
    }

    #[test]
    fn list_and_delete_round_trip() {
        for v in 0..=2 {
            let g = vec![("g".to_owned(), "consumer".to_owned())];
            let mut b = Vec::new();
            encode_list_groups(&mut b, 0, &g, v);
            assert_eq!(decode_list_groups(&mut Reader::new(&b), v).unwrap(), (0, g));
        }
        let res = vec![("g".to_owned(), 69)];
        let mut b = Vec::new();
        encode_delete_groups(&mut b, &res);
        assert_eq!(decode_delete_groups(&mut Reader::new(&b)).unwrap(), res);
    }
}
