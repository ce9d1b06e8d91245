//! DescribeGroups, ListGroups and DeleteGroups over both kinds of group: Kafka-protocol groups
//! from the coordinator's memory, spec-protocol groups from their sessions and ZooKeeper.
//! A spec-protocol group shows as protocol type `gregor` with the spec's range assignment,
//! each member's partitions in the "consumer" protocol's assignment layout so that Kafka's
//! tools can read them.

use std::collections::{BTreeMap, BTreeSet};

use super::kafka_group::GroupState;
use super::{Coordinator, Term};
use crate::protocol::ErrorCode;
use crate::protocol::group_admin::{
    CLASSIC_GROUP_TYPE, DescribedGroup, DescribedMember, ListedGroup, decode_assignment,
    encode_assignment,
};
use crate::zk::groups;

/// The protocol type a spec-protocol group is listed under.
pub const SPEC_PROTOCOL_TYPE: &str = "gregor";
/// The spec's assignment (consumer-coordinator.txt, rebalance step 2).
const SPEC_PROTOCOL: &str = "range";

impl Coordinator {
    pub fn describe_groups(&self, names: &[String]) -> Vec<DescribedGroup> {
        let term = self.serving_term();
        names
            .iter()
            .map(|name| match &term {
                Err(e) => described_error(name, *e),
                Ok(_) if !super::valid_name(name) => {
                    described_error(name, ErrorCode::InvalidGroupId)
                }
                Ok(t) => t.describe_group(name),
            })
            .collect()
    }

    /// Every group: (name, protocol type, Kafka's state name). A spec-protocol group with
    /// sessions is Stable between rebalances as far as a Kafka client can tell; without, Empty.
    /// Every group is listed as Kafka's `classic` type (ListGroups v5): a Kafka-protocol group
    /// is one, and a spec-protocol group is told apart by its protocol type, since Kafka's
    /// tools know no third kind (KIP-848's `consumer` groups are to come).
    pub fn list_groups(&self) -> Result<Vec<ListedGroup>, ErrorCode> {
        // Every broker answers ListGroups with the groups it coordinates, as Kafka's do: the
        // admin clients ask every broker and fail on any error, so a broker that is not the
        // coordinator answers none, with no error.
        if self.current_term().is_none() {
            return Ok(Vec::new());
        }
        let term = self.serving_term()?;
        let mut out: BTreeMap<String, (String, String)> = BTreeMap::new();
        for g in groups::all_groups(&self.zk).map_err(|_| ErrorCode::CoordinatorNotAvailable)? {
            let (kind, state) = if !term.has_sessions(&g) {
                ("", GroupState::Empty)
            } else {
                (SPEC_PROTOCOL_TYPE, GroupState::Stable)
            };
            out.insert(g, (kind.to_owned(), state.name().to_owned()));
        }
        for (name, g) in term.kafka_groups.lock().iter() {
            let d = g.data.lock();
            let kind = d.protocol_type.clone().unwrap_or_default();
            out.insert(name.clone(), (kind, d.state.name().to_owned()));
        }
        Ok(out
            .into_iter()
            .map(|(group_id, (protocol_type, state))| ListedGroup {
                group_id,
                protocol_type,
                state,
                group_type: CLASSIC_GROUP_TYPE.to_owned(),
            })
            .collect())
    }

    /// OffsetDelete's check: the topics whose committed offsets the group still uses (Kafka's
    /// GROUP_SUBSCRIBED_TO_TOPIC): a Kafka-protocol group's members' subscriptions, a
    /// spec-protocol group's partitions in its live sessions. GROUP_ID_NOT_FOUND for a group
    /// that does not exist.
    pub fn topics_in_use(&self, group: &str) -> Result<BTreeSet<String>, ErrorCode> {
        if !super::valid_name(group) {
            return Err(ErrorCode::InvalidGroupId);
        }
        let term = self.serving_term()?;
        if let Some(g) = term.kafka_group(group) {
            return Ok(g.data.lock().subscribed_topics());
        }
        let d = term.describe_group(group);
        if d.state == "Dead" {
            return Err(ErrorCode::GroupIdNotFound);
        }
        Ok(d.members
            .iter()
            .flat_map(|m| decode_assignment(&m.assignment).unwrap_or_default())
            .map(|(t, _)| t)
            .collect())
    }

    /// Deletes groups that have no members, with their committed offsets.
    pub fn delete_groups(&self, names: &[String]) -> Vec<(String, i16)> {
        let term = self.serving_term();
        names
            .iter()
            .map(|name| {
                let code = match &term {
                    Err(e) => *e,
                    Ok(_) if !super::valid_name(name) => ErrorCode::InvalidGroupId,
                    Ok(t) => t.delete_group(name),
                };
                (name.clone(), code.code())
            })
            .collect()
    }
}

impl Term {
    fn describe_group(&self, name: &str) -> DescribedGroup {
        if let Some(g) = self.kafka_group(name) {
            let d = g.data.lock();
            let protocol = d.protocol.clone().unwrap_or_default();
            // Kafka shows member metadata and assignments only once a generation is running.
            let running = matches!(
                d.state,
                GroupState::Stable | GroupState::CompletingRebalance
            );
            return DescribedGroup {
                error_code: 0,
                group_id: name.to_owned(),
                state: d.state.name().to_owned(),
                protocol_type: d.protocol_type.clone().unwrap_or_default(),
                protocol: if running {
                    protocol.clone()
                } else {
                    String::new()
                },
                members: d
                    .members
                    .values()
                    .map(|m| DescribedMember {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        metadata: if running {
                            m.metadata_for(&protocol).to_vec()
                        } else {
                            Vec::new()
                        },
                        assignment: if d.state == GroupState::Stable {
                            m.assignment.clone()
                        } else {
                            Vec::new()
                        },
                    })
                    .collect(),
            };
        }
        let sessions = self.sessions_of(name);
        let exists = !sessions.is_empty()
            || self
                .zk
                .exists(&groups::group_path(name))
                .is_ok_and(|s| s.is_some());
        let state = match (exists, sessions.is_empty()) {
            (false, _) => "Dead",
            (true, true) => GroupState::Empty.name(),
            (true, false) => GroupState::Stable.name(),
        };
        DescribedGroup {
            error_code: 0,
            group_id: name.to_owned(),
            state: state.to_owned(),
            protocol_type: if sessions.is_empty() {
                String::new()
            } else {
                SPEC_PROTOCOL_TYPE.to_owned()
            },
            protocol: if sessions.is_empty() {
                String::new()
            } else {
                SPEC_PROTOCOL.to_owned()
            },
            members: sessions
                .values()
                .map(|s| {
                    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                    for (t, p) in s.started().unwrap_or_default() {
                        by_topic.entry(t).or_default().push(p);
                    }
                    DescribedMember {
                        member_id: s.consumer_id.clone(),
                        group_instance_id: None,
                        client_id: s.consumer_id.clone(),
                        client_host: s.client_host(),
                        metadata: Vec::new(),
                        assignment: encode_assignment(&by_topic.into_iter().collect::<Vec<_>>()),
                    }
                })
                .collect(),
        }
    }

    fn delete_group(&self, name: &str) -> ErrorCode {
        if self.has_sessions(name) {
            return ErrorCode::NonEmptyGroup;
        }
        let kafka = self.kafka_group(name);
        if let Some(g) = &kafka
            && !g.data.lock().members.is_empty()
        {
            return ErrorCode::NonEmptyGroup;
        }
        let path = groups::group_path(name);
        match self.zk.exists(&path) {
            Ok(None) if kafka.is_none() => return ErrorCode::GroupIdNotFound,
            Ok(_) => {}
            Err(_) => return ErrorCode::CoordinatorNotAvailable,
        }
        if let Err(e) = self.zk.delete_recursive(&path) {
            log::warn!(
                "[Coordinator {}] group {name}: deleting failed: {e:?}",
                self.broker_id
            );
            return ErrorCode::UnknownServerError;
        }
        self.kafka_groups.lock().remove(name);
        log::info!("[Coordinator {}] group {name}: deleted", self.broker_id);
        ErrorCode::None
    }
}

fn described_error(name: &str, e: ErrorCode) -> DescribedGroup {
    DescribedGroup {
        error_code: e.code(),
        group_id: name.to_owned(),
        state: String::new(),
        protocol_type: String::new(),
        protocol: String::new(),
        members: Vec::new(),
    }
}
