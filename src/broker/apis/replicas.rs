//! The operator's replica APIs: ElectLeaders (`kafka-leader-election.sh`), carried out by the
//! controller's event thread, and DescribeLogDirs (`kafka-log-dirs.sh`), answered by each
//! broker from its own data directories.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{KafkaApis, RequestContext};
use crate::controller::elect_leaders::{ElectionResults, ElectionType};
use crate::network::{Action, Response};
use crate::protocol::elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, ElectionResult, UNCLEAN,
};
use crate::protocol::log_dirs::{
    DescribeLogDirsRequest, DescribeLogDirsResponse, LogDir, LogDirPartition,
};
use crate::protocol::{ErrorCode, TopicPartition};

impl KafkaApis {
    /// ElectLeaders: only the controller elects; another broker answers NOT_CONTROLLER and
    /// the admin client asks the controller the metadata names.
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
        let partitions: Option<Vec<TopicPartition>> = req.topic_partitions.as_ref().map(|t| {
            t.iter()
                .flat_map(|(topic, ps)| ps.iter().map(|p| TopicPartition::new(topic.clone(), *p)))
                .collect()
        });
        let outcome = if !self.controller.is_controller() {
            Err(ErrorCode::NotController)
        } else {
            let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
            self.controller
                .elect_leaders(election, partitions.clone(), timeout)
        };
        let resp = match outcome {
            Ok(results) => ElectLeadersResponse {
                error_code: 0,
                results: by_topic(results),
            },
            // The request's error on every partition it named (v0 has no other place for it).
            Err(code) => ElectLeadersResponse {
                error_code: code.code(),
                results: by_topic(
                    partitions
                        .unwrap_or_default()
                        .into_iter()
                        .map(|tp| (tp, Err((code, format!("{code:?}")))))
                        .collect(),
                ),
            },
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    /// DescribeLogDirs: every data directory of this broker with the partitions asked for
    /// (all when the request names none) that live in it.
    pub(super) fn handle_describe_log_dirs(
        &self,
        req: &DescribeLogDirsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
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
                let mut topics: BTreeMap<String, Vec<LogDirPartition>> = BTreeMap::new();
                for l in logs
                    .iter()
                    .filter(|l| l.dir.parent() == Some(dir.as_path()))
                {
                    if !wanted(&l.topic, l.partition) {
                        continue;
                    }
                    let end = l.log_end_offset();
                    let hw = self
                        .replica_manager
                        .get_partition(&l.topic, l.partition)
                        .map_or(end, |p| p.high_watermark());
                    topics
                        .entry(l.topic.clone())
                        .or_default()
                        .push(LogDirPartition {
                            partition: l.partition,
                            size: l.size_bytes() as i64,
                            offset_lag: (hw - end).max(0),
                        });
                }
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
                    topics: topics.into_iter().collect(),
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

/// Results grouped by topic, as the answer lists them.
fn by_topic(results: ElectionResults) -> Vec<(String, Vec<ElectionResult>)> {
    let mut topics: BTreeMap<String, Vec<ElectionResult>> = BTreeMap::new();
    for (tp, r) in results {
        let (error_code, error_message) = match r {
            Ok(()) => (0, None),
            Err((code, why)) => (code.code(), Some(why)),
        };
        topics.entry(tp.topic).or_default().push(ElectionResult {
            partition: tp.partition,
            error_code,
            error_message,
        });
    }
    topics.into_iter().collect()
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
