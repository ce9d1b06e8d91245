//! ZooKeeper's requests for many nodes in one: `multi` (opcode 14), a transaction of
//! conditional writes that all happen or none do, and `multiRead` (opcode 22, ZooKeeper 3.6
//! and later), reads answered each on its own. A controller with thousands of partitions
//! reads and writes their leaderAndISR nodes a few hundred per request: one round trip, one
//! request through the server's pipeline and, for writes, one transaction-log entry, instead
//! of one each.
//!
//! Both carry their operations as (`MultiHeader`: type, done, err) + the operation's own
//! request, ended by a header with done set; the answer lists each operation's result the same
//! way, a failed one as type -1 with its error code.

use super::jute::{Frame, Reader, Stat, ZkError, ZkResult, op};
use super::session::Session;

/// One node's answer within a multiRead: its data and metadata, or its own error.
pub type ReadAnswer = ZkResult<(Vec<u8>, Stat)>;

/// The end of a multi's operation list.
fn end(f: &mut Frame) {
    f.i32(-1).bool(true).i32(-1);
}

/// Each result of a multi's answer: its type and error code, the reader left at its body.
fn results<'a>(
    body: &'a [u8],
    mut each: impl FnMut(i32, i32, &mut Reader<'a>) -> ZkResult<()>,
) -> ZkResult<()> {
    let mut r = Reader::new(body);
    loop {
        let (kind, done, err) = (r.i32()?, r.bool()?, r.i32()?);
        if done {
            return Ok(());
        }
        // A failed operation's body (ErrorResponse) is its error code again.
        let err = if kind == op::ERROR { r.i32()? } else { err };
        each(kind, err, &mut r)?;
    }
}

impl Session {
    /// Reads every node of `paths` in one request (`multiRead`); each answer is the node's data
    /// and metadata, or its own error (`NoNode` for a missing one).
    pub fn get_data_each(&self, paths: &[String]) -> ZkResult<Vec<ReadAnswer>> {
        let body = self.call(
            op::MULTI_READ,
            |f| {
                for p in paths {
                    f.i32(op::GET_DATA).bool(false).i32(-1);
                    f.string(&self.server_path(p)).bool(false);
                }
                end(f);
            },
            None,
        )?;
        let mut out = Vec::with_capacity(paths.len());
        results(&body, |kind, err, r| {
            out.push(match kind {
                op::GET_DATA => {
                    let data = r.bytes()?.unwrap_or_default().to_vec();
                    Ok((data, r.stat()?))
                }
                op::ERROR => Err(ZkError::from_code(err)),
                _ => return Err(ZkError::MarshallingError),
            });
            Ok(())
        })?;
        if out.len() != paths.len() {
            return Err(ZkError::MarshallingError);
        }
        Ok(out)
    }

    /// Writes every (path, data, version) conditionally, all or none (`multi`): the new
    /// metadata of each, or the position and error of the first write that failed (when one
    /// fails, none is made).
    pub fn set_data_all(
        &self,
        writes: &[(String, Vec<u8>, i32)],
    ) -> ZkResult<Result<Vec<Stat>, (usize, ZkError)>> {
        let body = self.call(
            op::MULTI,
            |f| {
                for (p, data, version) in writes {
                    f.i32(op::SET_DATA).bool(false).i32(-1);
                    f.string(&self.server_path(p)).bytes(data).i32(*version);
                }
                end(f);
            },
            None,
        )?;
        let mut stats = Vec::with_capacity(writes.len());
        let mut failed = None;
        results(&body, |kind, err, r| {
            match kind {
                op::SET_DATA => stats.push(r.stat()?),
                // Operations undone because another failed answer 0, or RuntimeInconsistency
                // after the failure: the first real error is the cause.
                op::ERROR
                    if err != 0 && ZkError::from_code(err) != ZkError::RuntimeInconsistency =>
                {
                    failed.get_or_insert((stats.len(), ZkError::from_code(err)));
                    stats.push(Stat::default());
                }
                op::ERROR => stats.push(Stat::default()),
                _ => return Err(ZkError::MarshallingError),
            }
            Ok(())
        })?;
        match failed {
            Some(f) => Ok(Err(f)),
            None if stats.len() == writes.len() => Ok(Ok(stats)),
            None => Err(ZkError::MarshallingError),
        }
    }
}
