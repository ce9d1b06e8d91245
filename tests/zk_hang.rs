//! A ZooKeeper that takes connections and never answers (a server starting up, or hung) must
//! cost a client a bounded number of threads and connections however long it lasts. The
//! `zookeeper` crate gregor used before needed a probe thread and a new handle for every try,
//! and a broker piled them up (#18 item 8). Its own test binary, so that no other test's
//! sessions are counted.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gregor::zk::session::{Session, SessionEvent};

/// Threads of this process with the given name.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|n| n.trim() == name)
        .count()
}

#[test]
fn a_hung_zookeeper_costs_one_thread_and_one_connection_at_a_time() {
    common::init_logging();
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = hole.local_addr().unwrap().to_string();
    // Every connection is taken and held open, never read; `open` counts those still open.
    let open = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (o, a) = (open.clone(), accepted.clone());
    std::thread::spawn(move || {
        for c in hole.incoming().map_while(Result::ok) {
            a.fetch_add(1, Ordering::SeqCst);
            o.fetch_add(1, Ordering::SeqCst);
            let o = o.clone();
            std::thread::spawn(move || {
                // Returns when the client closes its end.
                let _ = std::io::copy(&mut &c, &mut std::io::sink());
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    let (tx, rx) = crossbeam_channel::unbounded();
    let session = Session::open(vec![addr], String::new(), Duration::from_secs(1), tx);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut lost = false;
    let mut most_open = 0;
    // Several handshakes time out in turn (each after a second); the loss is reported once.
    while accepted.load(Ordering::SeqCst) < 5 && Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(SessionEvent::Lost { .. }) => lost = true,
            Ok(e) => panic!("a server that never answers gave {e:?}"),
            Err(_) => {}
        }
        most_open = most_open.max(open.load(Ordering::SeqCst));
        assert_eq!(threads_named("zk-io"), 1, "one I/O thread per session");
    }
    assert!(
        accepted.load(Ordering::SeqCst) >= 5,
        "the client kept trying"
    );
    assert!(
        lost,
        "no contact for a session timeout is reported as a loss"
    );
    assert!(most_open <= 2, "connections held at once: {most_open}");
    assert_eq!(
        session.exists("/", None),
        Err(gregor::zk::ZkError::ConnectionLoss)
    );
    session.close();
    drop(session);
    common::wait_until(Duration::from_secs(10), "the I/O thread to end", || {
        threads_named("zk-io") == 0
    });
}
