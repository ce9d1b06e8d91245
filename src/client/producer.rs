//! The producer: `send` hands a record to a sender thread that batches per partition
//! (`batch.size` bytes or `linger.ms`, whichever comes first), sends one Produce request per
//! leader, and retries with backoff on NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE,
//! REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION and broken connections, refreshing metadata
//! first. Every accepted record ends in exactly one outcome on its handle: its offset, or the
//! error that made it undeliverable. `flush` and `close` wait for every accepted record.
//!
//! Thread model: callers only touch a channel; the sender thread owns the batches, the
//! metadata and the connections.

mod sender;

use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use super::metadata::fetch_metadata;
use crate::protocol::ErrorCode;
use sender::SenderState;

#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `host:port[,host:port...]`.
    pub bootstrap: String,
    /// 0, 1 or -1 (all).
    pub acks: i16,
    /// Bytes of messages per partition batch before it is sent.
    pub batch_size: usize,
    /// How long a batch waits for more messages.
    pub linger: Duration,
    pub retries: u32,
    pub retry_backoff: Duration,
    /// The broker's wait for acks=all, and our wait for any answer.
    pub request_timeout: Duration,
    /// `None`, or a codec of `compression` (zstd needs format v2).
    pub compression: Option<i8>,
    pub client_id: String,
    /// The message format written: 2 (record batches, Produce v3) by default; 0 or 1 for a
    /// broker of the 0.8–0.10 era (Produce v0 / v2).
    pub magic: i8,
}

impl ProducerConfig {
    pub fn new(bootstrap: &str) -> Self {
        ProducerConfig {
            bootstrap: bootstrap.to_owned(),
            acks: 1,
            batch_size: 16 * 1024,
            linger: Duration::from_millis(5),
            retries: 10,
            retry_backoff: Duration::from_millis(200),
            request_timeout: Duration::from_secs(30),
            compression: None,
            client_id: "gregor-producer".into(),
            magic: 2,
        }
    }
}

/// Where a record was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMetadata {
    pub partition: i32,
    /// -1 with acks=0 (the broker does not answer).
    pub offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProduceError {
    /// The broker answered this error, or kept answering it until retries ran out.
    Broker(ErrorCode),
    /// No broker could be reached or the topic has no usable metadata.
    Unavailable(String),
    UnknownTopic(String),
    Closed,
}

impl std::fmt::Display for ProduceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProduceError::Broker(e) => write!(f, "broker answered {e:?}"),
            ProduceError::Unavailable(why) => write!(f, "cluster unavailable: {why}"),
            ProduceError::UnknownTopic(t) => write!(f, "topic `{t}` does not exist"),
            ProduceError::Closed => write!(f, "producer closed"),
        }
    }
}

impl std::error::Error for ProduceError {}

type Outcome = Result<RecordMetadata, ProduceError>;

/// The outcome of one `send`.
pub struct SendHandle(Receiver<Outcome>);

impl SendHandle {
    pub fn wait(self) -> Outcome {
        self.0.recv().unwrap_or(Err(ProduceError::Closed))
    }
}

enum Command {
    Send {
        topic: String,
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        done: Sender<Outcome>,
    },
    Flush(Sender<()>),
}

pub struct Producer {
    tx: Option<Sender<Command>>,
    thread: Option<JoinHandle<()>>,
}

impl Producer {
    /// Starts the sender thread after one metadata round trip, so an unreachable cluster is an
    /// error here rather than on every record.
    pub fn new(config: ProducerConfig) -> Result<Producer, ProduceError> {
        fetch_metadata(&config.bootstrap, &[], &config.client_id)
            .map_err(ProduceError::Unavailable)?;
        let (tx, rx) = unbounded();
        let thread = std::thread::Builder::new()
            .name("producer-sender".into())
            .spawn(move || SenderState::new(config).run(rx))
            .map_err(|e| ProduceError::Unavailable(e.to_string()))?;
        Ok(Producer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Queues a record; the handle yields where it was stored.
    pub fn send(&self, topic: &str, key: Option<&[u8]>, value: Option<&[u8]>) -> SendHandle {
        let (done, rx) = bounded(1);
        let cmd = Command::Send {
            topic: topic.to_owned(),
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            done: done.clone(),
        };
        if self.tx.as_ref().is_none_or(|tx| tx.send(cmd).is_err()) {
            let _ = done.send(Err(ProduceError::Closed));
        }
        SendHandle(rx)
    }

    pub fn send_blocking(&self, topic: &str, key: Option<&[u8]>, value: Option<&[u8]>) -> Outcome {
        self.send(topic, key, value).wait()
    }

    /// Sends everything queued now and waits until every accepted record has its outcome.
    pub fn flush(&self) {
        let (tx, rx) = bounded(1);
        if let Some(t) = &self.tx
            && t.send(Command::Flush(tx)).is_ok()
        {
            let _ = rx.recv();
        }
    }

    /// Flushes, then stops the sender thread.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.flush();
        self.tx.take();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
