//! ZooKeeper requests for many nodes at once. ZooKeeper answers one session's requests in
//! order and commits the writes that arrive together in one log sync, so issuing them from
//! several threads over the one session turns N round trips — and N syncs — into about
//! N / WORKERS (Kafka 1.1 did the same with asynchronous requests, KAFKA-5642). The callers
//! stay sequential in what they decide; only the ZooKeeper I/O is spread.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Requests in flight at once.
const WORKERS: usize = 64;
/// Below this many items the threads cost more than they save.
const MIN_SPREAD: usize = 4;

/// `f` applied to every item, from up to `WORKERS` threads; the results in the items' order.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < MIN_SPREAD {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS.min(items.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return mine;
                        };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a ZooKeeper pipeline worker panicked"))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u32> = (0..1000).collect();
        assert_eq!(
            super::map(&items, |x| x * 2),
            (0..1000).map(|x| x * 2).collect::<Vec<_>>()
        );
        assert_eq!(super::map(&[7u32], |x| x + 1), vec![8]);
    }
}
