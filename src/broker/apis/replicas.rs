//! The operator's replica APIs: ElectLeaders (`kafka-leader-election.sh`) and
//! AlterPartitionReassignments / ListPartitionReassignments (`kafka-reassign-partitions.sh`),
//! carried out by the controller's event thread (another broker answers NOT_CONTROLLER and the
//! admin client asks the controller the metadata names), and DescribeLogDirs
//! (`kafka-log-dirs.sh`), answered by each broker from its own data directories.

use crate::security::acl::Operation;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{KafkaApis, RequestContext};
use crate::controller::PartitionOutcomes;
use crate::controller::elect_leaders::ElectionType;
use crate::network::{Action, Response};
use crate::protocol::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse, UNCLEAN};
use crate::protocol::log_dirs::{
    DescribeLogDirsRequest, DescribeLogDirsResponse, LogDir, LogDirPartition,
};
use crate::protocol::reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, OngoingReassignment,
};
use crate::protocol::{ErrorCode, PartitionResult, TopicPartition};

impl KafkaApis {
    /// ElectLeaders: preferred (v0, type 0) or unclean (type 1) elections of the partitions
    /// named, or of all.
    pub(super) fn handle_elect_leaders(
        &self,
        req: &ElectLeadersRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let election = if req.election_type == UNCLEAN {
            ElectionType::Unclean
        } else {
            ElectionType::Preferred
        };
        let partitions = req.topic_partitions.as_deref().map(partitions_of);
        let outcome = self.on_controller(cx, Operation::Alter, req.timeout_ms, |timeout| {
            (self.controller).elect_leaders(election, partitions.clone(), timeout)
        });
        let resp = match outcome {
            Ok(results) => ElectLeadersResponse {
                error_code: 0,
                results: partition_results(results),
            },
            // The request's error on every partition it named (v0 has no other place for it).
            Err(code) => ElectLeadersResponse {
                error_code: code.code(),
                results: partition_results(
                    (partitions.unwrap_or_default().into_iter())
                        .map(|tp| (tp, Err((code, format!("{code:?}")))))
                        .collect(),
                ),
            },
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    /// AlterPartitionReassignments: each partition's move started (answered once its new
    /// replicas are told to copy it), given a new target, or cancelled.
    pub(super) fn handle_alter_partition_reassignments(
        &self,
        req: &AlterPartitionReassignmentsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let targets: Vec<(TopicPartition, Option<Vec<i32>>)> = (req.topics.iter())
            .flat_map(|(topic, ps)| {
                ps.iter()
                    .map(|(p, r)| (TopicPartition::new(topic.clone(), *p), r.clone()))
            })
            .collect();
        let allow = req.allow_replication_factor_change;
        let outcome = self.on_controller(cx, Operation::Alter, req.timeout_ms, |timeout| {
            (self.controller).alter_reassignments(targets, allow, timeout)
        });
        let (error_code, error_message, results) = match outcome {
            Ok(results) => (0, None, partition_results(results)),
            Err(code) => (code.code(), Some(format!("{code:?}")), Vec::new()),
        };
        let resp = AlterPartitionReassignmentsResponse {
            allow_replication_factor_change: allow,
            error_code,
            error_message,
            results,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    /// ListPartitionReassignments: the moves in progress, each with its replicas now and what
    /// it adds and removes.
    pub(super) fn handle_list_partition_reassignments(
        &self,
        req: &ListPartitionReassignmentsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let partitions = req.topics.as_deref().map(partitions_of);
        let outcome = self.on_controller(cx, Operation::Describe, req.timeout_ms, |timeout| {
            self.controller.list_reassignments(partitions, timeout)
        });
        let (error_code, error_message, topics) = match outcome {
            Ok(ongoing) => {
                let moves = ongoing.into_iter().map(|(tp, replicas, moving)| {
                    let p = OngoingReassignment {
                        partition: tp.partition,
                        replicas,
                        adding: moving.adding,
                        removing: moving.removing,
                    };
                    (tp, p)
                });
                (0, None, by_topic(moves))
            }
            Err(code) => (code.code(), Some(format!("{code:?}")), Vec::new()),
        };
        let resp = ListPartitionReassignmentsResponse {
            error_code,
            error_message,
            topics,
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    /// Runs `ask` with the request's timeout when this broker is the controller and the
    /// principal may do `op` on the cluster; NOT_CONTROLLER or CLUSTER_AUTHORIZATION_FAILED
    /// otherwise.
    fn on_controller<T>(
        &self,
        cx: &RequestContext<'_>,
        op: Operation,
        timeout_ms: i32,
        ask: impl FnOnce(Duration) -> Result<T, ErrorCode>,
    ) -> Result<T, ErrorCode> {
        if !self.cluster_allowed(cx, op) {
            return Err(ErrorCode::ClusterAuthorizationFailed);
        }
        if !self.controller.is_controller() {
            return Err(ErrorCode::NotController);
        }
        ask(Duration::from_millis(timeout_ms.max(0) as u64))
    }

    /// DescribeLogDirs: every data directory of this broker with the partitions asked for
    /// (all when the request names none) that live in it.
    pub(super) fn handle_describe_log_dirs(
        &self,
        req: &DescribeLogDirsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        if !self.cluster_allowed(cx, Operation::Describe) {
            let resp = DescribeLogDirsResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                dirs: Vec::new(),
            };
            cx.answer(out, &resp);
            return Action::Respond;
        }
        let logs = self.replica_manager.log_manager.all();
        let wanted = |topic: &str, p: i32| match &req.topics {
            None => true,
            Some(t) => t.iter().any(|(name, ps)| name == topic && ps.contains(&p)),
        };
        let dirs = self
            .replica_manager
            .log_manager
            .dirs()
            .iter()
            .map(|dir| {
                let held = logs.iter().filter(|l| {
                    l.dir.parent() == Some(dir.as_path()) && wanted(&l.topic, l.partition)
                });
                let topics = by_topic(held.map(|l| {
                    let end = l.log_end_offset();
                    let hw = (self.replica_manager)
                        .get_partition(&l.topic, l.partition)
                        .map_or(end, |p| p.high_watermark());
                    let p = LogDirPartition {
                        partition: l.partition,
                        size: l.size_bytes() as i64,
                        offset_lag: (hw - end).max(0),
                    };
                    (TopicPartition::new(l.topic.clone(), l.partition), p)
                }));
                let volume = volume_bytes(dir);
                let (total_bytes, usable_bytes) = volume.unwrap_or((-1, -1));
                LogDir {
                    error_code: if volume.is_some() {
                        0
                    } else {
                        ErrorCode::KafkaStorageError.code()
                    },
                    path: std::path::absolute(dir)
                        .unwrap_or_else(|_| dir.clone())
                        .display()
                        .to_string(),
                    topics,
                    total_bytes,
                    usable_bytes,
                }
            })
            .collect();
        cx.answer(
            out,
            &DescribeLogDirsResponse {
                error_code: 0,
                dirs,
            },
        );
        Action::Respond
    }
}

/// A request's `[topic [partition]]` as partitions.
fn partitions_of(topics: &[(String, Vec<i32>)]) -> Vec<TopicPartition> {
    (topics.iter())
        .flat_map(|(topic, ps)| ps.iter().map(|p| TopicPartition::new(topic.clone(), *p)))
        .collect()
}

/// Entries grouped by topic, as answers list them.
fn by_topic<T>(entries: impl IntoIterator<Item = (TopicPartition, T)>) -> Vec<(String, Vec<T>)> {
    let mut topics: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for (tp, e) in entries {
        topics.entry(tp.topic).or_default().push(e);
    }
    topics.into_iter().collect()
}

/// The controller's outcomes as the answer's per-partition results.
fn partition_results(outcomes: PartitionOutcomes) -> Vec<(String, Vec<PartitionResult>)> {
    by_topic(outcomes.into_iter().map(|(tp, r)| {
        let (error_code, error_message) = match r {
            Ok(()) => (0, None),
            Err((code, why)) => (code.code(), Some(why)),
        };
        let p = PartitionResult {
            partition: tp.partition,
            error_code,
            error_message,
        };
        (tp, p)
    }))
}

/// The size of the volume holding `dir`, and the bytes free to an unprivileged writer
/// (`statvfs`); `None` when the directory cannot be looked at.
fn volume_bytes(dir: &Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `st` a statvfs the call fills in.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frag = st.f_frsize as i64;
    Some((st.f_blocks as i64 * frag, st.f_bavail as i64 * frag))
}
