//! Looking at and removing groups: DescribeGroups (15), ListGroups (16),
//! DeleteGroups (42); and the "consumer" protocol's subscription and assignment, which
//! the coordinator reads (to know a group's topics) and writes (to show a spec-protocol
//! group's ownership in Kafka's own shape).

use super::group_membership::bytes;
use super::{Decode, DecodeResult, Encode, Out, Reader, Writer, read_array, read_topics};

/// DescribeGroups request: v3+ add `include_authorized_operations` (gregor has no ACLs and
/// answers operations unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsRequest {
    pub groups: Vec<String>,
}

impl<'a> Decode<'a> for DescribeGroupsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let groups = read_array(r, "groups", 1, |r| Ok(r.string("group")?.to_owned()))?;
        r.skip_since(3, |r| r.bool("include_authorized_operations"))?;
        r.tags()?;
        Ok(DescribeGroupsRequest { groups })
    }
}

impl Encode for DescribeGroupsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.groups, |o, g| o.put_str(g));
        out.since(3, |o| o.put_i8(0));
        out.put_tags();
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsResponse {
    pub groups: Vec<DescribedGroup>,
}

impl Encode for DescribeGroupsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let groups = &self.groups;
        out.since(1, |o| o.put_i32(0));
        out.put_array(groups, |o, g| {
            o.put_i16(g.error_code);
            o.put_str(&g.group_id);
            o.put_str(&g.state);
            o.put_str(&g.protocol_type);
            o.put_str(&g.protocol);
            o.put_array(&g.members, |o, m| {
                o.put_str(&m.member_id);
                o.since(4, |o| o.put_nstr(m.group_instance_id.as_deref()));
                o.put_str(&m.client_id);
                o.put_str(&m.client_host);
                o.put_bytes(Some(&m.metadata));
                o.put_bytes(Some(&m.assignment));
                o.put_tags();
            });
            o.since(3, |o| o.put_i32(OPERATIONS_UNKNOWN));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeGroupsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
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
                        group_instance_id: r
                            .since(4, None, |r| r.nullable_owned("group_instance_id"))?,
                        client_id: r.string("client_id")?.to_owned(),
                        client_host: r.string("client_host")?.to_owned(),
                        metadata: bytes(r, "member_metadata")?,
                        assignment: bytes(r, "member_assignment")?,
                    };
                    r.tags()?;
                    Ok(m)
                })?,
            };
            r.skip_since(3, |r| r.i32("authorized_operations"))?;
            r.tags()?;
            Ok(g)
        })?;
        r.tags()?;
        Ok(DescribeGroupsResponse { groups })
    }
}

/// ListGroups request: the states to list (v4+) and the group types (v5+, KIP-848); `None`
/// for a filter that is absent or empty, which lists every group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsRequest {
    pub states: Option<Vec<String>>,
    pub types: Option<Vec<String>>,
}

impl<'a> Decode<'a> for ListGroupsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let v = r.version();
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
}

impl Encode for ListGroupsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        let v = out.version();
        for (filter, from) in [(&self.states, 4), (&self.types, 5)] {
            if v >= from {
                let names = filter.as_deref().unwrap_or_default();
                out.put_array(names, |o, s| o.put_str(s));
            }
        }
        out.put_tags();
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

/// ListGroups response; fields a version does not carry read as empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsResponse {
    pub error_code: i16,
    pub groups: Vec<ListedGroup>,
}

impl Encode for ListGroupsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.since(1, |o| o.put_i32(0));
        out.put_i16(self.error_code);
        out.put_array(&self.groups, |o, g| {
            o.put_str(&g.group_id);
            o.put_str(&g.protocol_type);
            o.since(4, |o| o.put_str(&g.state));
            o.since(5, |o| o.put_str(&g.group_type));
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for ListGroupsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let v = r.version();
        r.skip_since(1, |r| r.i32("throttle_time_ms"))?;
        let error_code = r.i16("error_code")?;
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
        Ok(ListGroupsResponse { error_code, groups })
    }
}

/// DeleteGroups request: the groups' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupsRequest {
    pub groups: Vec<String>,
}

impl<'a> Decode<'a> for DeleteGroupsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let groups = r.string_array("groups_names")?;
        r.tags()?;
        Ok(DeleteGroupsRequest { groups })
    }
}

impl Encode for DeleteGroupsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_strs(&self.groups);
        out.put_tags();
    }
}

/// DeleteGroups response (v0 and v1 share it; v2 is flexible): an error per group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupsResponse {
    pub results: Vec<(String, i16)>,
}

impl Encode for DeleteGroupsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let results = &self.results;
        out.put_i32(0);
        out.put_array(results, |o, (g, e)| {
            o.put_str(g);
            o.put_i16(*e);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DeleteGroupsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "results", 3, |r| {
            let g = (r.string("group_id")?.to_owned(), r.i16("error_code")?);
            r.tags()?;
            Ok(g)
        })?;
        r.tags()?;
        Ok(DeleteGroupsResponse { results })
    }
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
    let mut o = Out::classic(&mut out);
    o.put_strs(topics);
    o.put_bytes(None);
    out
}

/// A "consumer" protocol assignment (version 0): `[topic [partition]]`, no user data.
pub fn encode_assignment(partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_i16(0);
    let mut o = Out::classic(&mut out);
    o.put_topics(partitions, |o, p| o.put_i32(*p));
    o.put_bytes(None);
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
    use crate::protocol::header::*;
    use crate::protocol::{decode_body, encode_body, round_trip_at};

    #[test]
    fn describe_round_trips_at_every_version() {
        for v in 0..=5 {
            let req = DescribeGroupsRequest {
                groups: vec!["a".into(), "b".into()],
            };
            round_trip_at(&req, DESCRIBE_GROUPS, v);
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
            round_trip_at(&DescribeGroupsResponse { groups }, DESCRIBE_GROUPS, v);
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
        for v in 0..=5 {
            let g = vec![ListedGroup {
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                state: "Stable".into(),
                group_type: CLASSIC_GROUP_TYPE.into(),
            }];
            let resp = ListGroupsResponse {
                error_code: 0,
                groups: g.clone(),
            };
            let mut b = Vec::new();
            encode_body(&resp, &mut b, LIST_GROUPS, v);
            let mut want = g.clone();
            if v < 4 {
                want[0].state.clear();
            }
            if v < 5 {
                want[0].group_type.clear();
            }
            let got: ListGroupsResponse = decode_body(&b, LIST_GROUPS, v).unwrap();
            assert_eq!((got.error_code, got.groups), (0, want));
            let req = ListGroupsRequest {
                states: Some(vec!["Stable".into()]),
                types: Some(vec!["classic".into()]),
            };
            let mut b = Vec::new();
            encode_body(&req, &mut b, LIST_GROUPS, v);
            let got: ListGroupsRequest = decode_body(&b, LIST_GROUPS, v).unwrap();
            assert_eq!(got.states, req.states.clone().filter(|_| v >= 4));
            assert_eq!(got.types, req.types.clone().filter(|_| v >= 5));
        }
        for v in 0..=2 {
            let results = vec![("g".to_owned(), 69)];
            round_trip_at(&DeleteGroupsResponse { results }, DELETE_GROUPS, v);
            let groups = vec!["g".to_owned()];
            round_trip_at(&DeleteGroupsRequest { groups }, DELETE_GROUPS, v);
        }
    }
}
