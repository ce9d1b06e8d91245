//! A consumer of a topic's partitions without a group (Kafka's SimpleConsumer, kcat `-C`):
//! it finds each partition's leader, starts at the earliest, the latest or a given offset,
//! and fetches round the partitions, following a leader that moves. Used by
//! `gregor consume` without `--group`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::metadata::partition_leaders;
use crate::network::BlockingChannel;
use crate::protocol::ErrorCode;
use crate::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use crate::protocol::header::FETCH;
use crate::protocol::offsets::{EARLIEST_TIME, LATEST_TIME};
use crate::protocol::records::{OwnedMessage, decode_deep};

/// Where a partition is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    Earliest,
    Latest,
    Offset(i64),
}

/// Bytes asked for per partition and fetch.
const FETCH_BYTES: i32 = 1 << 20;
/// How long a fetch waits at the broker for data.
const MAX_WAIT_MS: i32 = 500;

pub struct PartitionConsumer {
    bootstrap: String,
    topic: String,
    /// One partition only, or all of the topic's.
    only: Option<i32>,
    client_id: String,
    leaders: BTreeMap<i32, String>,
    chans: BTreeMap<String, BlockingChannel>,
    next: BTreeMap<i32, i64>,
}

/// What one round of fetches gave: the messages, by partition, and whether every partition
/// is now read up to its high watermark.
pub struct Round {
    pub messages: Vec<(i32, OwnedMessage)>,
    pub at_end: bool,
}

impl PartitionConsumer {
    pub fn new(
        bootstrap: &str,
        topic: &str,
        only: Option<i32>,
        start: StartAt,
        client_id: &str,
    ) -> Result<Self, String> {
        let mut c = PartitionConsumer {
            bootstrap: bootstrap.to_owned(),
            topic: topic.to_owned(),
            only,
            client_id: client_id.to_owned(),
            leaders: BTreeMap::new(),
            chans: BTreeMap::new(),
            next: BTreeMap::new(),
        };
        c.leaders = c.find_leaders(Duration::from_secs(5))?;
        if let Some(p) = only
            && c.leaders.is_empty()
        {
            return Err(format!("topic `{topic}` has no partition {p}"));
        }
        for (p, addr) in c.leaders.clone() {
            let offset = match start {
                StartAt::Earliest => c.chan(&addr)?.list_offset(topic, p, EARLIEST_TIME)?,
                StartAt::Latest => c.chan(&addr)?.list_offset(topic, p, LATEST_TIME)?,
                StartAt::Offset(n) => n,
            };
            c.next.insert(p, offset);
        }
        Ok(c)
    }

    fn find_leaders(&self, wait: Duration) -> Result<BTreeMap<i32, String>, String> {
        let mut l = partition_leaders(&self.bootstrap, &self.topic, &self.client_id, wait)?;
        if let Some(p) = self.only {
            l.retain(|x, _| *x == p);
        }
        Ok(l)
    }

    /// The connection to `addr`, opened unless one is.
    fn chan(&mut self, addr: &str) -> Result<&mut BlockingChannel, String> {
        if !self.chans.contains_key(addr) {
            let c = BlockingChannel::connect(addr, &self.client_id, Duration::from_secs(30))
                .map_err(|e| format!("{addr}: {e}"))?;
            self.chans.insert(addr.to_owned(), c);
        }
        Ok(self.chans.get_mut(addr).expect("inserted above"))
    }

    fn refresh(&mut self, why: &str) -> Result<(), String> {
        log::info!("[{}] refreshing metadata: {why}", self.topic);
        // A leader that just moved is known to ZooKeeper before every broker's metadata.
        std::thread::sleep(Duration::from_millis(200));
        self.leaders = self.find_leaders(Duration::from_secs(30))?;
        Ok(())
    }

    /// Fetches once from each partition, from where the last round stopped.
    pub fn poll(&mut self) -> Result<Round, String> {
        let mut messages = Vec::new();
        let mut at_end = true;
        for (p, addr) in self.leaders.clone() {
            let offset = self.next[&p];
            let req = FetchRequest::new(
                fetch::CONSUMER_REPLICA_ID,
                MAX_WAIT_MS,
                1,
                vec![(
                    self.topic.clone(),
                    vec![FetchPartition::new(p, offset, FETCH_BYTES)],
                )],
            );
            let v = fetch::CLIENT_VERSION;
            let answer: Result<FetchResponse, _> = self.chan(&addr)?.send(FETCH, v, &req);
            let resp = match answer {
                Ok(r) => r,
                Err(e) => {
                    self.chans.remove(&addr);
                    self.refresh(&e.to_string())?;
                    at_end = false;
                    continue;
                }
            };
            let part = &resp.topics[0].1[0];
            match ErrorCode::from_code(part.error_code) {
                ErrorCode::None => {}
                ErrorCode::NotLeaderForPartition
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::UnknownTopicOrPartition => {
                    self.refresh("leader moved")?;
                    at_end = false;
                    continue;
                }
                e => return Err(format!("partition {p}: broker answered {e:?}")),
            }
            let mut next = offset;
            for m in decode_deep(&part.message_set).map_err(|e| format!("partition {p}: {e:?}"))? {
                // A fetch starts at the batch holding the offset asked for.
                if m.offset < next {
                    continue;
                }
                next = m.offset + 1;
                messages.push((p, m));
            }
            self.next.insert(p, next);
            at_end &= next >= part.high_watermark;
        }
        Ok(Round { messages, at_end })
    }
}
