//! Looking at and removing groups: DescribeGroups (15), ListGroups (16),
//! DeleteGroups (42); and the "consumer" protocol's subscription and assignment, which
//! the coordinator reads (to know a group's topics) and writes (to show a spec-protocol
//! group's ownership in Kafka's own shape).

use super::group_membership::bytes;
use super::header::{DELETE_GROUPS, DESCRIBE_GROUPS, LIST_GROUPS, is_flexible};
use super::{
    DecodeResult, Reader, Writer, read_array, read_topics, write_array, write_array_v, write_topics,
};

/// DescribeGroups request: v3+ add `include_authorized_operations` (gregor has no ACLs and
/// answers operations unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsRequest {
    pub groups: Vec<String>,
}

impl DescribeGroupsRequest {
    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let groups = read_array(r, "groups", 1, |r| Ok(r.string("group")?.to_owned()))?;
        if version >= 3 {
            r.bool("include_authorized_operations")?;
        }
        r.tags()?;
        Ok(DescribeGroupsRequest { groups })
    }

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(DESCRIBE_GROUPS, version);
        write_array_v(out, flex, &self.groups, |o, g| o.put_str(flex, g));
        if version >= 3 {
            out.put_i8(0);
        }
        out.put_tags(flex);
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
    let flex = is_flexible(DESCRIBE_GROUPS, version);
    if version >= 1 {
        out.put_i32(0);
    }
    write_array_v(out, flex, groups, |o, g| {
        o.put_i16(g.error_code);
        o.put_str(flex, &g.group_id);
        o.put_str(flex, &g.state);
        o.put_str(flex, &g.protocol_type);
        o.put_str(flex, &g.protocol);
        write_array_v(o, flex, &g.members, |o, m| {
            o.put_str(flex, &m.member_id);
            if version >= 4 {
                o.put_nstr(flex, m.group_instance_id.as_deref());
            }
            o.put_str(flex, &m.client_id);
            o.put_str(flex, &m.client_host);
            o.put_bytes(flex, Some(&m.metadata));
            o.put_bytes(flex, Some(&m.assignment));
            o.put_tags(flex);
        });
        if version >= 3 {
            o.put_i32(OPERATIONS_UNKNOWN);
        }
        o.put_tags(flex);
    });
    out.put_tags(flex);
}

pub fn decode_describe_groups(
    r: &mut Reader<'_>,
    version: i16,
) -> DecodeResult<Vec<DescribedGroup>> {
    if version >= 1 {
        r.i32("throttle_time_ms")?;
    }
    let groups = read_array(r, "groups", 9, |r| {
        let g = DescribedGroup {
            error_code: r.i16("error_code")?,
            group_id: r.string("group_id")?.to_owned(),
            state: r.string("group_state")?.to_owned(),
            protocol_type: r.string("protocol_type")?.to_owned(),
            protocol: r.string("protocol_data")?.to_owned(),
            members: read_array(r, "members", 8, |r| {
                let m = DescribedMember {
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
                };
                r.tags()?;
                Ok(m)
            })?,
        };
        if version >= 3 {
            r.i32("authorized_operations")?;
        }
        r.tags()?;
        Ok(g)
    })?;
    r.tags()?;
    Ok(groups)
}

/// ListGroups request: the states to list (v4+) and the group types (v5+, KIP-848); `None`
/// for a filter that is absent or empty, which lists every group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsRequest {
    pub states: Option<Vec<String>>,
    pub types: Option<Vec<String>>,
}

impl ListGroupsRequest {
    pub fn decode(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let mut filter = |name, from: i16| -> DecodeResult<Option<Vec<String>>> {
            Ok(if v >= from {
                Some(r.string_array(name)?).filter(|s| !s.is_empty())
            } else {
                None
            })
        };
        let states = filter("states_filter", 4)?;
        let types = filter("types_filter", 5)?;
        r.tags()?;
        Ok(ListGroupsRequest { states, types })
    }

    pub fn encode(&self, out: &mut Vec<u8>, v: i16) {
        let flex = is_flexible(LIST_GROUPS, v);
        for (filter, from) in [(&self.states, 4), (&self.types, 5)] {
            if v >= from {
                let names = filter.as_deref().unwrap_or_default();
                write_array_v(out, flex, names, |o, s| o.put_str(flex, s));
            }
        }
        out.put_tags(flex);
    }
}

/// Kafka's name of the group type its classic group protocol makes.
pub const CLASSIC_GROUP_TYPE: &str = "classic";

/// A group as ListGroups lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    /// v4+.
    pub state: String,
    /// v5+: Kafka's group type (`classic`, `consumer`, …).
    pub group_type: String,
}

/// ListGroups response.
pub fn encode_list_groups(out: &mut Vec<u8>, error_code: i16, groups: &[ListedGroup], v: i16) {
    let flex = is_flexible(LIST_GROUPS, v);
    if v >= 1 {
        out.put_i32(0);
    }
    out.put_i16(error_code);
    write_array_v(out, flex, groups, |o, g| {
        o.put_str(flex, &g.group_id);
        o.put_str(flex, &g.protocol_type);
        if v >= 4 {
            o.put_str(flex, &g.state);
        }
        if v >= 5 {
            o.put_str(flex, &g.group_type);
        }
        o.put_tags(flex);
    });
    out.put_tags(flex);
}

/// Fields a version does not carry are empty.
pub fn decode_list_groups(r: &mut Reader<'_>, v: i16) -> DecodeResult<(i16, Vec<ListedGroup>)> {
    if v >= 1 {
        r.i32("throttle_time_ms")?;
    }
    let code = r.i16("error_code")?;
    let groups = read_array(r, "groups", 2, |r| {
        let mut g = ListedGroup {
            group_id: r.string("group_id")?.to_owned(),
            protocol_type: r.string("protocol_type")?.to_owned(),
            ..ListedGroup::default()
        };
        if v >= 4 {
            g.state = r.string("group_state")?.to_owned();
        }
        if v >= 5 {
            g.group_type = r.string("group_type")?.to_owned();
        }
        r.tags()?;
        Ok(g)
    })?;
    r.tags()?;
    Ok((code, groups))
}

/// DeleteGroups request: the groups' names (v2 flexible).
pub fn decode_delete_groups_request(r: &mut Reader<'_>) -> DecodeResult<Vec<String>> {
    let groups = r.string_array("groups_names")?;
    r.tags()?;
    Ok(groups)
}

pub fn encode_delete_groups_request(out: &mut Vec<u8>, groups: &[String], v: i16) {
    let flex = is_flexible(DELETE_GROUPS, v);
    write_array_v(out, flex, groups, |o, g| o.put_str(flex, g));
    out.put_tags(flex);
}

/// DeleteGroups response (v0 and v1 share it; v2 is flexible): an error per group.
pub fn encode_delete_groups(out: &mut Vec<u8>, results: &[(String, i16)], v: i16) {
    let flex = is_flexible(DELETE_GROUPS, v);
    out.put_i32(0);
    write_array_v(out, flex, results, |o, (g, e)| {
        o.put_str(flex, g);
        o.put_i16(*e);
        o.put_tags(flex);
    });
    out.put_tags(flex);
}

pub fn decode_delete_groups(r: &mut Reader<'_>) -> DecodeResult<Vec<(String, i16)>> {
    r.i32("throttle_time_ms")?;
    let results = read_array(r, "results", 3, |r| {
        let g = (r.string("group_id")?.to_owned(), r.i16("error_code")?);
        r.tags()?;
        Ok(g)
    })?;
    r.tags()?;
    Ok(results)
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
        for v in 0..=5 {
            let req = DescribeGroupsRequest {
                groups: vec!["a".into(), "b".into()],
            };
            let mut b = Vec::new();
            req.encode(&mut b, v);
            let mut r = Reader::new(&b);
            r.set_flexible(is_flexible(DESCRIBE_GROUPS, v));
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
            r.set_flexible(is_flexible(DESCRIBE_GROUPS, v));
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

    fn reader(b: &[u8], flex: bool) -> Reader<'_> {
        let mut r = Reader::new(b);
        r.set_flexible(flex);
        r
    }

    #[test]
    fn list_and_delete_round_trip() {
        for v in 0..=5 {
            let g = vec![ListedGroup {
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                state: "Stable".into(),
                group_type: CLASSIC_GROUP_TYPE.into(),
            }];
            let mut b = Vec::new();
            encode_list_groups(&mut b, 0, &g, v);
            let mut r = reader(&b, is_flexible(LIST_GROUPS, v));
            let mut want = g.clone();
            if v < 4 {
                want[0].state.clear();
            }
            if v < 5 {
                want[0].group_type.clear();
            }
            assert_eq!(decode_list_groups(&mut r, v).unwrap(), (0, want));
            r.finish().unwrap();
            let req = ListGroupsRequest {
                states: Some(vec!["Stable".into()]),
                types: Some(vec!["classic".into()]),
            };
            let mut b = Vec::new();
            req.encode(&mut b, v);
            let mut r = reader(&b, is_flexible(LIST_GROUPS, v));
            let got = ListGroupsRequest::decode(&mut r, v).unwrap();
            assert_eq!(got.states, req.states.clone().filter(|_| v >= 4));
            assert_eq!(got.types, req.types.clone().filter(|_| v >= 5));
            r.finish().unwrap();
        }
        for v in 0..=2 {
            let res = vec![("g".to_owned(), 69)];
            let mut b = Vec::new();
            encode_delete_groups(&mut b, &res, v);
            let mut r = reader(&b, is_flexible(DELETE_GROUPS, v));
            assert_eq!(decode_delete_groups(&mut r).unwrap(), res);
            r.finish().unwrap();
            let names = vec!["g".to_owned()];
            let mut b = Vec::new();
            encode_delete_groups_request(&mut b, &names, v);
            let mut r = reader(&b, is_flexible(DELETE_GROUPS, v));
            assert_eq!(decode_delete_groups_request(&mut r).unwrap(), names);
            r.finish().unwrap();
        }
    }
}
