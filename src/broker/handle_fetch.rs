//! Fetch (key 1) v0: bytes straight from the segment files, parked until `min_bytes` or
//! `max_wait_ms`.

use std::time::{Duration, Instant};

use super::apis::KafkaApis;
use super::partition::Role;
use crate::log::LogError;
use crate::network::Action;
use crate::protocol::fetch::{self, FetchRequest};
use crate::protocol::{ErrorCode, Writer, write_array};

impl KafkaApis {
    /// Fetch v0: bytes straight from the segment files, up to the high watermark for consumers
    /// and the log end offset for followers. Parks (no polling) until `min_bytes` are readable
    /// or `max_wait_ms` passes.
    pub(super) fn handle_fetch(&self, req: &FetchRequest, out: &mut Vec<u8>) -> Action {
        let from_follower = req.replica_id >= 0;
        if from_follower {
            for (t, parts) in &req.topics {
                for p in parts {
                    if let Some(part) = self.replica_manager.get_partition(t, p.partition) {
                        self.replica_manager.record_follower_position(
                            &part,
                            req.replica_id,
                            p.fetch_offset,
                        );
                    }
                }
            }
        }
        let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
        let start = out.len();
        loop {
            let seen = self.replica_manager.notifier.seq();
            out.truncate(start);
            let (bytes, errors) = self.write_fetch_response(req, out);
            let enough = bytes >= req.min_bytes.max(0) as usize;
            if req.max_wait_ms <= 0
                || errors
                || enough
                || req.topics.is_empty()
                || Instant::now() >= deadline
            {
                return Action::Respond;
            }
            self.replica_manager.notifier.wait_after(seen, deadline);
        }
    }

    /// Writes the whole fetch response; returns the message bytes included and whether any
    /// partition had an error.
    fn write_fetch_response(&self, req: &FetchRequest, out: &mut Vec<u8>) -> (usize, bool) {
        let mut total = 0;
        let mut errors = false;
        write_array(out, &req.topics, |o, (topic, parts)| {
            o.put_string(topic);
            write_array(o, parts, |o, p| {
                match self.read_partition(topic, p, req.replica_id, o) {
                    Ok(n) => total += n,
                    Err(e) => {
                        errors = true;
                        let at = fetch::write_partition_head(o, p.partition, e.code(), -1);
                        o.patch_size(at);
                    }
                }
            });
        });
        (total, errors)
    }

    /// Writes one partition's response (head + set) into `o` and returns the set's size; on
    /// error writes nothing.
    fn read_partition(
        &self,
        topic: &str,
        p: &fetch::FetchPartition,
        replica_id: i32,
        o: &mut Vec<u8>,
    ) -> Result<usize, ErrorCode> {
        let part = self.partition(topic, p.partition)?;
        let hw = part.high_watermark();
        if replica_id != fetch::DEBUGGING_REPLICA_ID && part.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderForPartition);
        }
        // Followers read to the log end offset; consumers only what the ISR has.
        let max_offset = (replica_id < 0).then_some(hw);
        if p.max_bytes < 0 {
            return Err(ErrorCode::InvalidFetchSize);
        }
        let at = fetch::write_partition_head(o, p.partition, 0, hw);
        match part
            .log
            .read(p.fetch_offset, p.max_bytes as usize, max_offset, o)
        {
            Ok(n) => {
                o.patch_size(at);
                Ok(n)
            }
            Err(e) => {
                o.truncate(at - 14);
                match e {
                    LogError::OffsetOutOfRange { .. } => {
                        // A consumer between HW and LEO is not out of range: it just waits.
                        if max_offset.is_some()
                            && p.fetch_offset > hw
                            && p.fetch_offset <= part.log.log_end_offset()
                        {
                            let at = fetch::write_partition_head(o, p.partition, 0, hw);
                            o.patch_size(at);
                            return Ok(0);
                        }
                        log::debug!(
                            "[Broker {} {topic}-{}] fetch {e}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::OffsetOutOfRange)
                    }
                    LogError::Io(io) => {
                        log::error!(
                            "[Broker {} {topic}-{}] read failed: {io}",
                            self.broker_id,
                            p.partition
                        );
                        Err(ErrorCode::UnknownServerError)
                    }
                }
            }
        }
    }
}
