//! The group consumer's fetchers: one manager thread per StartRequest, which finds each
//! assigned partition's leader and hands the partition to a fetcher thread for that broker.
//! A fetcher gives a partition back when its leader moves (NOT_LEADER_FOR_PARTITION and
//! kin, or a broken connection); the manager then refreshes metadata and finds the new leader.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{
    Receiver, RecvTimeoutError, SendTimeoutError, Sender, after, bounded, never, select, unbounded,
};

use super::{Batch, Shared};
use crate::client::metadata::fetch_metadata;
use crate::network::BlockingChannel;
use crate::protocol::ErrorCode;
use crate::protocol::fetch::{self, FetchPartition, FetchRequest, FetchResponse};
use crate::protocol::header::FETCH;
use crate::protocol::records::decode_deep;

type Tp = (Arc<str>, i32);

/// How long a fetcher waits before handing back partitions it could not fetch.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The fetchers started by one StartRequest; stopping joins every thread.
pub struct Fetchers {
    stop: Arc<AtomicBool>,
    /// Dropped to wake the manager at once (a Stop must not wait out its poll interval).
    wake: Option<Sender<()>>,
    manager: Option<JoinHandle<()>>,
}

impl Fetchers {
    /// Starts fetching `assigned` (offsets ≥ 0, or -2/-1 for earliest/latest).
    pub fn start(shared: Arc<Shared>, generation: u64, assigned: Vec<(Tp, i64)>) -> Fetchers {
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, woken) = bounded(0);
        let st = stop.clone();
        let manager = std::thread::Builder::new()
            .name(format!("fetcher-manager-{}", shared.consumer_id))
            .spawn(move || manage(shared, generation, assigned, st, woken))
            .expect("spawn fetcher manager");
        Fetchers {
            stop,
            wake: Some(wake),
            manager: Some(manager),
        }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        self.wake.take();
        if let Some(h) = self.manager.take() {
            let _ = h.join();
        }
    }
}

struct Worker {
    add: Sender<(Tp, i64)>,
    handle: JoinHandle<()>,
}

fn manage(
    shared: Arc<Shared>,
    generation: u64,
    assigned: Vec<(Tp, i64)>,
    stop: Arc<AtomicBool>,
    woken: Receiver<()>,
) {
    let (back_tx, back_rx) = unbounded::<(Tp, i64)>();
    let mut pending = assigned;
    let mut workers: HashMap<String, Worker> = HashMap::new();
    while !stop.load(Ordering::Acquire) {
        if !pending.is_empty() {
            pending = place(&shared, generation, pending, &mut workers, &back_tx, &stop);
        }
        // Partitions without a leader are looked up again after a pause.
        let retry = if pending.is_empty() {
            never()
        } else {
            after(Duration::from_millis(200))
        };
        select! {
            recv(back_rx) -> p => {
                pending.extend(p);
                // A leader that just failed is not asked again at once (stale metadata would
                // send us straight back to it).
                std::thread::sleep(RETRY_PAUSE);
                pending.extend(back_rx.try_iter());
            }
            recv(woken) -> _ => break,
            recv(retry) -> _ => {}
        }
    }
    for (_, w) in workers.drain() {
        drop(w.add);
        let _ = w.handle.join();
    }
}

/// Gives each pending partition to the fetcher of its leader; returns those without one.
fn place(
    shared: &Arc<Shared>,
    generation: u64,
    pending: Vec<(Tp, i64)>,
    workers: &mut HashMap<String, Worker>,
    back: &Sender<(Tp, i64)>,
    stop: &Arc<AtomicBool>,
) -> Vec<(Tp, i64)> {
    let mut topics: Vec<String> = pending.iter().map(|((t, _), _)| t.to_string()).collect();
    topics.sort();
    topics.dedup();
    let meta = match fetch_metadata(&shared.bootstrap(), &topics, &shared.consumer_id) {
        Ok(m) => m,
        Err(e) => {
            log::warn!("[consumer {}] metadata: {e}", shared.consumer_id);
            return pending;
        }
    };
    let leader_of = |t: &str, p: i32| -> Option<String> {
        let tm = meta.topics.iter().find(|x| x.topic == t)?;
        let pm = tm.partitions.iter().find(|x| x.partition == p)?;
        let b = meta.brokers.iter().find(|b| b.id == pm.leader)?;
        Some(format!("{}:{}", b.host, b.port))
    };
    let mut left = Vec::new();
    for (tp, offset) in pending {
        let Some(addr) = leader_of(&tp.0, tp.1) else {
            left.push((tp, offset));
            continue;
        };
        if workers.get(&addr).is_some_and(|w| w.handle.is_finished()) {
            workers.remove(&addr);
        }
        let w = workers.entry(addr.clone()).or_insert_with(|| {
            let (tx, rx) = unbounded();
            let (s, b, st, a) = (shared.clone(), back.clone(), stop.clone(), addr.clone());
            let handle = std::thread::Builder::new()
                .name(format!("fetcher-{addr}"))
                .spawn(move || fetch_loop(s, generation, a, rx, b, st))
                .expect("spawn fetcher");
            Worker { add: tx, handle }
        });
        if let Err(e) = w.add.send((tp, offset)) {
            left.push(e.0);
        }
    }
    left
}

/// One broker's partitions: fetch, hand the messages to the consumer's queue, repeat.
/// One broker's partitions: fetch, hand the messages to the consumer's queue, repeat. On a
/// failure it hands its partitions back (the manager looks for their leader again) and stays:
/// a fetcher that exited could take with it a partition the manager had just sent it.
fn fetch_loop(
    shared: Arc<Shared>,
    generation: u64,
    addr: String,
    add: Receiver<(Tp, i64)>,
    back: Sender<(Tp, i64)>,
    stop: Arc<AtomicBool>,
) {
    let mut parts: Vec<(Tp, i64)> = Vec::new();
    let mut chan: Option<BlockingChannel> = None;
    let give_up = |parts: &mut Vec<(Tp, i64)>, why: String| {
        log::info!("[consumer {}] {addr}: {why}", shared.consumer_id);
        // A pause, so an unreachable leader is not asked again at once.
        std::thread::sleep(RETRY_PAUSE);
        for p in parts.drain(..) {
            let _ = back.send(p);
        }
    };
    while !stop.load(Ordering::Acquire) {
        parts.extend(add.try_iter());
        if parts.is_empty() {
            match add.recv_timeout(Duration::from_millis(100)) {
                Ok(p) => parts.push(p),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if chan.is_none() {
            match BlockingChannel::connect(&addr, &shared.consumer_id, Duration::from_secs(10)) {
                Ok(c) => chan = Some(c),
                Err(e) => {
                    give_up(&mut parts, e.to_string());
                    continue;
                }
            }
        }
        let c = chan.as_mut().expect("connected above");
        if let Err(e) = fetch_once(&shared, generation, c, &mut parts, &back, &stop) {
            chan = None;
            give_up(&mut parts, format!("fetching: {e}"));
        }
    }
}

/// One FetchRequest for every partition; partitions whose leader moved go back.
fn fetch_once(
    shared: &Shared,
    generation: u64,
    chan: &mut BlockingChannel,
    parts: &mut Vec<(Tp, i64)>,
    back: &Sender<(Tp, i64)>,
    stop: &AtomicBool,
) -> Result<(), String> {
    for (tp, offset) in parts.iter_mut().filter(|(_, o)| *o < 0) {
        *offset = chan.list_offset(&tp.0, tp.1, *offset)?;
        shared.note_start(generation, tp, *offset);
    }
    let mut by_topic: Vec<(String, Vec<FetchPartition>)> = Vec::new();
    for ((t, p), offset) in parts.iter() {
        let fp = FetchPartition::new(*p, *offset, shared.config.fetch_max_bytes);
        match by_topic.iter_mut().find(|(x, _)| **x == **t) {
            Some((_, v)) => v.push(fp),
            None => by_topic.push((t.to_string(), vec![fp])),
        }
    }
    let req = FetchRequest::new(
        -1,
        shared.config.fetch_max_wait.as_millis() as i32,
        1,
        by_topic,
    );
    let v = fetch::CLIENT_VERSION;
    let resp: FetchResponse = chan.send(FETCH, v, &req).map_err(|e| e.to_string())?;
    let mut moved = Vec::new();
    for (topic, prs) in resp.topics {
        for pr in prs {
            let Some(i) = parts
                .iter()
                .position(|((t, p), _)| **t == *topic && *p == pr.partition)
            else {
                continue;
            };
            match ErrorCode::from_code(pr.error_code) {
                ErrorCode::None => {
                    let from = parts[i].1;
                    let msgs: Vec<_> = decode_deep(&pr.message_set)
                        .map_err(|e| format!("{topic}-{}: {e:?}", pr.partition))?
                        .into_iter()
                        .filter(|m| m.offset >= from)
                        .collect();
                    if let Some(last) = msgs.last() {
                        parts[i].1 = last.offset + 1;
                        let batch = Batch {
                            generation,
                            topic: parts[i].0.0.clone(),
                            partition: pr.partition,
                            messages: msgs,
                        };
                        if !deliver(shared, batch, stop) {
                            return Ok(());
                        }
                    }
                }
                ErrorCode::OffsetOutOfRange => {
                    let time = shared.reset_time();
                    parts[i].1 = chan.list_offset(&topic, pr.partition, time)?;
                    log::warn!(
                        "[consumer {}] {topic}-{}: offset out of range, reset to {}",
                        shared.consumer_id,
                        pr.partition,
                        parts[i].1
                    );
                }
                e => {
                    log::info!(
                        "[consumer {}] {topic}-{}: {e:?}; looking for its leader",
                        shared.consumer_id,
                        pr.partition
                    );
                    moved.push(i);
                }
            }
        }
    }
    for p in take_positions(parts, moved) {
        let _ = back.send(p);
    }
    Ok(())
}

/// Takes out of `parts` the elements at `positions`, given in any order. A broker may answer
/// partitions in any order (gregor's and Kafka's rotate them), so the positions are sorted and
/// taken from the highest down: taken in answer order, an earlier removal shifted a later
/// position past the end (a panic the chaos run found once answers rotated).
fn take_positions<T>(parts: &mut Vec<T>, mut positions: Vec<usize>) -> Vec<T> {
    positions.sort_unstable();
    positions.dedup();
    positions
        .into_iter()
        .rev()
        .map(|i| parts.remove(i))
        .collect()
}

/// Queues a batch, waiting while the queue is full; false when told to stop meanwhile.
fn deliver(shared: &Shared, mut batch: Batch, stop: &AtomicBool) -> bool {
    loop {
        match shared
            .queue_tx
            .send_timeout(batch, Duration::from_millis(100))
        {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(b)) => {
                if stop.load(Ordering::Acquire) {
                    return false;
                }
                batch = b;
            }
            Err(SendTimeoutError::Disconnected(_)) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::take_positions;

    #[test]
    fn partitions_moved_away_are_taken_out_whatever_the_answer_order() {
        let mut parts = vec!["a", "b", "c", "d"];
        let mut taken = take_positions(&mut parts, vec![1, 3, 3]);
        taken.sort_unstable();
        assert_eq!(taken, ["b", "d"]);
        assert_eq!(parts, ["a", "c"]);
        let mut parts = vec!["a", "b"];
        assert_eq!(take_positions(&mut parts, vec![0, 1]), ["b", "a"]);
        assert!(parts.is_empty());
    }
}
