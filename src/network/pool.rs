//! `RequestPool`: the broker-wide bound on bytes held by requests being read
//! (`queued.max.request.bytes`, KIP-72's memory pool).
//!
//! A connection grows its request buffer as the bytes arrive, never by the size a client
//! announces; every request's first `ALLOWANCE` bytes are its own (so small requests never
//! wait, and they cost at most `max.connections` × `ALLOWANCE`), and each chunk past them is
//! drawn from the pool first. When the pool is used up the connection waits before reading
//! further — the client's bytes stay in its socket, nothing is failed or half-handled.
//!
//! So that partial requests cannot hold the whole pool waiting on each other, one connection
//! at a time may read past the bound (the overdraft): some request always completes. The
//! bound is therefore `queued.max.request.bytes` + one `socket.request.max.bytes`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// The bytes of each request that do not come from the pool.
pub const ALLOWANCE: usize = 64 << 10;

pub struct RequestPool {
    limit: Option<usize>,
    state: Mutex<State>,
    freed: Condvar,
    closed: AtomicBool,
    /// Bytes held, readable without the lock (metrics).
    held: AtomicUsize,
}

#[derive(Default)]
struct State {
    used: usize,
    /// The connection reading past the bound.
    overdraft: Option<u64>,
}

/// The pool was closed (the broker is stopping).
#[derive(Debug)]
pub struct Closed;

impl RequestPool {
    pub fn new(limit: Option<usize>) -> RequestPool {
        RequestPool {
            limit,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
            closed: AtomicBool::new(false),
            held: AtomicUsize::new(0),
        }
    }

    /// Bytes held by requests being read.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes for connection `conn`, waiting while the pool is used up and another
    /// connection has the overdraft.
    pub fn acquire(&self, conn: u64, n: usize) -> Result<(), Closed> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let mut st = self.state.lock();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(Closed);
            }
            let fits = st.used + n <= limit;
            if fits || st.overdraft.is_none() || st.overdraft == Some(conn) {
                if !fits {
                    st.overdraft = Some(conn);
                }
                st.used += n;
                self.held.store(st.used, Ordering::Relaxed);
                return Ok(());
            }
            // Woken by a release; the timeout only bounds how long a close goes unseen.
            self.freed.wait_for(&mut st, Duration::from_millis(200));
        }
    }

    /// Gives back what connection `conn` took for its request, and its overdraft.
    pub fn release(&self, conn: u64, n: usize) {
        if self.limit.is_none() {
            return;
        }
        let mut st = self.state.lock();
        st.used -= n;
        if st.overdraft == Some(conn) {
            st.overdraft = None;
        }
        self.held.store(st.used, Ordering::Relaxed);
        drop(st);
        self.freed.notify_all();
    }

    /// Fails every wait, now and later.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.freed.notify_all();
    }
}

/// The pool bytes one request holds, given back on drop (also when reading it fails).
pub struct Held<'a> {
    pool: &'a RequestPool,
    conn: u64,
    pub bytes: usize,
}

impl<'a> Held<'a> {
    pub fn new(pool: &'a RequestPool, conn: u64) -> Held<'a> {
        Held {
            pool,
            conn,
            bytes: 0,
        }
    }

    pub fn take(&mut self, n: usize) -> Result<(), Closed> {
        self.pool.acquire(self.conn, n)?;
        self.bytes += n;
        Ok(())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.pool.release(self.conn, self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn waits_at_the_bound_and_lends_one_overdraft() {
        let pool = Arc::new(RequestPool::new(Some(100)));
        pool.acquire(1, 80).unwrap();
        // Over the bound: connection 2 takes the overdraft and may go on.
        pool.acquire(2, 50).unwrap();
        pool.acquire(2, 50).unwrap();
        assert_eq!(pool.held(), 180);
        // Connection 3 must wait until someone gives back.
        let p = pool.clone();
        let waiter = std::thread::spawn(move || p.acquire(3, 30).map(|_| p.held()));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "waited while the pool is used up");
        pool.release(2, 100);
        assert_eq!(waiter.join().unwrap().unwrap(), 110);
        pool.close();
        assert!(pool.acquire(4, 1000).is_err());
    }

    #[test]
    fn unlimited_never_waits() {
        let pool = RequestPool::new(None);
        pool.acquire(1, usize::MAX / 2).unwrap();
        pool.acquire(2, usize::MAX / 2).unwrap();
        pool.release(1, usize::MAX / 2);
    }
}
