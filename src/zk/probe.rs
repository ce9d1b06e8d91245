//! Whether a ZooKeeper handle answers, asked with a deadline. The crate's requests wait
//! without one, and one sent to a server that took the connection but never answers (a
//! ZooKeeper starting up) waits for good: the chaos run saw a client stuck so for six
//! minutes, until the next restart. So the request runs on a helper thread, and a probe that
//! has not come back is waited on again, never sent anew: each handle has at most one helper
//! thread, however long ZooKeeper hangs.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use zookeeper::{ZkError, ZkResult, ZooKeeper};

/// One probe of one handle, possibly still out.
pub(super) struct Probe {
    handle: Arc<ZooKeeper>,
    answer: Option<Receiver<ZkResult<()>>>,
}

impl Probe {
    pub(super) fn new(handle: Arc<ZooKeeper>) -> Probe {
        Probe {
            handle,
            answer: None,
        }
    }

    /// Whether this probe is for `handle`.
    pub(super) fn is_for(&self, handle: &Arc<ZooKeeper>) -> bool {
        Arc::ptr_eq(&self.handle, handle)
    }

    /// Whether a request is still out, unanswered.
    pub(super) fn is_stuck(&self) -> bool {
        self.answer.as_ref().is_some_and(|rx| rx.is_empty())
    }

    /// Whether the handle answers within `limit`: the request still out is waited on, or a
    /// new one sent. `OperationTimeout` when no answer comes in time.
    pub(super) fn answers_within(&mut self, limit: Duration) -> ZkResult<()> {
        if self.answer.is_none() {
            let (tx, rx) = crossbeam_channel::bounded(1);
            let zk = self.handle.clone();
            std::thread::Builder::new()
                .name("zk-probe".into())
                .spawn(move || {
                    let _ = tx.send(zk.exists("/", false).map(|_| ()));
                })
                .map_err(|_| ZkError::SystemError)?;
            self.answer = Some(rx);
        }
        let rx = self.answer.as_ref().expect("sent above");
        match rx.recv_timeout(limit) {
            Ok(r) => {
                self.answer = None;
                r
            }
            Err(RecvTimeoutError::Timeout) => Err(ZkError::OperationTimeout),
            Err(RecvTimeoutError::Disconnected) => {
                self.answer = None;
                Err(ZkError::SystemError)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads of this process named `zk-probe`.
    fn probe_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.trim() == "zk-probe")
            .count()
    }

    /// A server that takes the connection and never answers (a ZooKeeper starting up): the
    /// probe times out every time, and however often it is asked, one thread waits.
    #[test]
    fn a_hung_server_costs_one_probe_thread_however_often_asked() {
        let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = hole.local_addr().unwrap().to_string();
        let zk = Arc::new(ZooKeeper::connect(&addr, Duration::from_secs(30), |_| {}).unwrap());
        // Taken and held open, never read.
        let (held, _) = hole.accept().unwrap();
        let before = probe_threads();
        let mut probe = Probe::new(zk.clone());
        for _ in 0..5 {
            assert!(matches!(
                probe.answers_within(Duration::from_millis(50)),
                Err(ZkError::OperationTimeout)
            ));
            assert!(probe.is_stuck());
        }
        assert_eq!(probe_threads(), before + 1);
        assert!(probe.is_for(&zk));
        drop(held);
    }
}
