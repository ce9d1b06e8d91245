//! A broker's ZooKeeper session at the edges: registering while ZooKeeper restarts, the broker
//! epoch (the registration's session) known before anyone can see the registration, watches
//! after a ZooKeeper restart that the session survives, a server that never answers, sessions
//! left behind by an outage, and a handle used the moment it opens. Each was found by the
//! chaos run (doc/reliability.md, seed 7) or, the last, by CI.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use gregor::broker::Broker;
use gregor::zk::ZkClient;
use gregor::zk::admin;
use gregor::zk::paths;

use common::{
    TestBroker, broker_config, chroot, free_port, spawn_broker_process, start_zookeeper,
    wait_until, zk_address,
};

/// A ZooKeeper of the test's own, to stop and restart; killed on drop.
struct PrivateZk {
    dir: tempfile::TempDir,
    port: u16,
    addr: String,
    child: Option<std::process::Child>,
}

impl PrivateZk {
    fn start() -> PrivateZk {
        let port = free_port();
        let mut zk = PrivateZk {
            dir: tempfile::tempdir().unwrap(),
            port,
            addr: format!("127.0.0.1:{port}"),
            child: None,
        };
        zk.start_again();
        zk
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it on the same data and port, and waits until it serves.
    fn start_again(&mut self) {
        self.child = Some(start_zookeeper(self.dir.path(), self.port));
        wait_until(Duration::from_secs(60), "ZooKeeper to serve", || {
            common::serving(&self.addr)
        });
    }

    fn restart(&mut self) {
        self.stop();
        self.start_again();
    }
}

impl Drop for PrivateZk {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A broker restarted right after a kill -9 waits for its previous incarnation's
/// registration to expire; when ZooKeeper restarts meanwhile it keeps waiting, and registers
/// once ZooKeeper is back. Before the fix the lost connection ended start-up ("cannot
/// register in ZooKeeper: ConnectionLoss") and the broker stayed down.
#[test]
fn a_broker_registering_across_a_zookeeper_restart_registers_when_it_is_back() {
    common::init_logging();
    let mut zk_server = PrivateZk::start();
    let zk_addr = zk_server.addr.clone();
    let connect = format!("{zk_addr}/restart");
    let zk = ZkClient::connect(&connect, Duration::from_secs(10)).unwrap();
    // The previous incarnation: a process with a long session, killed.
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut old = spawn_broker_process(
        data.path(),
        &format!(
            "broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={}\n\
             zookeeper.connect={connect}\nzookeeper.session.timeout.ms=8000\n",
            data.path().join("data").display()
        ),
    );
    wait_until(
        Duration::from_secs(60),
        "the first broker to register",
        || matches!(zk.exists(&paths::broker_path(1)), Ok(Some(_))),
    );
    let _ = old.kill();
    let _ = old.wait();

    let cfg = broker_config(
        1,
        &connect,
        &data.path().join("data"),
        &[
            ("listeners", &format!("PLAINTEXT://127.0.0.1:{port}")),
            ("zookeeper.connection.timeout.ms", "30000"),
        ],
    );
    let starting = std::thread::spawn(move || Broker::start(cfg));
    // The broker listens before it registers: once it does, it is waiting for the old node.
    wait_until(Duration::from_secs(30), "the broker to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(
        !starting.is_finished(),
        "registered before the old session expired"
    );
    zk_server.restart();
    wait_until(
        Duration::from_secs(40),
        "the broker's start-up to end",
        || starting.is_finished(),
    );
    let broker = starting.join().unwrap().expect("the broker registers");
    let owner = broker
        .zk
        .exists(&paths::broker_path(1))
        .unwrap()
        .expect("registered")
        .ephemeral_owner;
    assert_eq!(owner, broker.zk.session_id());
    broker.shutdown();
    zk.close();
}

/// Whoever sees a node we create (the controller watching /brokers/ids) may send its owner
/// back at once as our broker epoch; by then we must know it is ours. Before the fix the id
/// was learned by reading the node back after creating it, and a LeaderAndIsr in between was
/// refused as meant for another incarnation ("ours is 0x0") and never sent again.
#[test]
fn the_session_id_is_known_before_our_ephemeral_node_can_be_seen() {
    common::init_logging();
    let connect = format!("{}{}", zk_address(), chroot("session-id"));
    for round in 0..20 {
        let path = format!("/node-{round}");
        let watcher = ZkClient::connect(&connect, Duration::from_secs(10)).unwrap();
        let creator = ZkClient::connect(&connect, Duration::from_secs(10)).unwrap();
        let seen = Arc::new(AtomicI64::new(-1));
        let (c, s) = (creator.clone(), seen.clone());
        watcher
            .exists_w(&path, move |_| s.store(c.session_id(), Ordering::SeqCst))
            .unwrap();
        creator
            .create_ephemeral(&path, Vec::new(), Duration::ZERO)
            .unwrap();
        wait_until(Duration::from_secs(10), "the watch to fire", || {
            seen.load(Ordering::SeqCst) != -1
        });
        let owner = watcher.exists(&path).unwrap().unwrap().ephemeral_owner;
        assert_eq!(
            seen.load(Ordering::SeqCst),
            owner,
            "round {round}: when the node appeared its creator did not know its session"
        );
        creator.close();
        watcher.close();
    }
}

/// ZooKeeper restarts and every session survives it (it is back within the session timeout).
/// The server forgot every watch with the connection, and gregor's client does not set them
/// again itself (neither did the `zookeeper` crate it used before): before the fix the controller never heard of a broker or topic added afterwards, so the new topic
/// below never got a leader.
#[test]
fn the_controller_sees_changes_after_a_zookeeper_restart_its_session_survives() {
    common::init_logging();
    let mut zk_server = PrivateZk::start();
    let zk_addr = zk_server.addr.clone();
    let connect = format!("{zk_addr}/watches");
    // Sessions long enough to outlive the restart.
    let long = [("zookeeper.session.timeout.ms", "20000")];
    let b1 = TestBroker::start(1, &connect, &long);
    let zk = ZkClient::connect(&connect, Duration::from_secs(20)).unwrap();
    wait_until(Duration::from_secs(30), "a controller", || {
        matches!(zk.exists(paths::CONTROLLER), Ok(Some(_)))
    });
    let controller_session = zk
        .exists(paths::CONTROLLER)
        .unwrap()
        .unwrap()
        .ephemeral_owner;

    zk_server.restart();
    wait_until(
        Duration::from_secs(30),
        "our session to be usable again",
        || zk.exists("/").is_ok(),
    );
    assert_eq!(
        b1.broker.zk.session_id(),
        controller_session,
        "the broker's session did not survive the restart; the test needs it to"
    );

    // A broker joins and a topic is created on it alone: electing its leader needs both the
    // controller's broker watch and its topic watch.
    let b2 = TestBroker::start(2, &connect, &long);
    admin::create_topic(&zk, "after-restart", 1, 1, Some("2")).unwrap();
    wait_until(Duration::from_secs(30), "the new topic's leader", || {
        matches!(
            paths::leader_and_isr(&zk, "after-restart", 0),
            Ok(Some((l, _))) if l.leader == 2
        )
    });
    drop(b2);
    drop(b1);
    zk.close();
}

/// A server that takes the connection and never answers (a ZooKeeper still starting, in the
/// chaos run) must not hold a client for good: before the fix the first request waited
/// without a deadline, and a client replacing its session that way stayed unusable for six
/// minutes, until ZooKeeper restarted again.
#[test]
fn a_zookeeper_that_never_answers_fails_the_connection_in_time() {
    common::init_logging();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let connecting = std::thread::spawn(move || {
        ZkClient::connect(&addr.to_string(), Duration::from_secs(2)).is_ok()
    });
    // The client waits two session timeouts, and at least 4 s, for a first answer.
    wait_until(
        Duration::from_secs(20),
        "the connection attempt to end",
        || connecting.is_finished(),
    );
    assert!(
        !connecting.join().unwrap(),
        "connected to a server that never answered"
    );
}

/// Connections from this process to `port` that are established, read from /proc/net/tcp.
fn established_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[2].ends_with(&format!(":{port:04X}")) && f[3] == "01"
        })
        .count()
}

/// ZooKeeper down for longer than the session timeout: the client opens a new session, trying
/// while ZooKeeper is away. Before the fix each failed try left a handle connecting on its own,
/// and the sessions they opened when ZooKeeper came back lived on unused; over the chaos run's
/// restarts they passed ZooKeeper's 60 connections from one address, and a restarted broker
/// could not connect at all.
#[test]
fn a_new_session_after_an_outage_leaves_no_other_connection_behind() {
    common::init_logging();
    let mut zk_server = PrivateZk::start();
    let zk_addr = zk_server.addr.clone();
    let zk = ZkClient::connect(&format!("{zk_addr}/outage"), Duration::from_secs(4)).unwrap();
    wait_until(Duration::from_secs(10), "one connection", || {
        established_to(zk_server.port) == 1
    });
    let (_, _, expired) = zk.stats.counts();
    zk_server.stop();
    // The outage lasts until the client has given the session up (past its timeout), trying
    // to connect again and again meanwhile.
    wait_until(
        Duration::from_secs(30),
        "the client to give the session up",
        || zk.stats.counts().2 > expired,
    );
    zk_server.start_again();
    wait_until(Duration::from_secs(30), "the client to work again", || {
        zk.exists("/").is_ok()
    });
    // Handles that tried during the outage had until a session timeout to connect.
    wait_until(Duration::from_secs(20), "a single connection again", || {
        established_to(zk_server.port) == 1
    });
    zk.close();
}

/// A handle used the moment it is opened must work. The `zookeeper` crate gregor used before
/// its own client had a lost-wakeup race in its I/O thread (mio-extras 2.0.6): a request sent
/// while the thread registered its channel was never read, nor anything after it, pings
/// included, so the session expired again and again. Seen in CI as a test broker that could
/// not reach ZooKeeper, about once in a thousand handles; this opens thousands, several at
/// once, and keeps any client honest about its first request.
#[test]
fn handles_used_as_soon_as_they_open_all_answer() {
    common::init_logging();
    let zk_server = PrivateZk::start();
    let opened = std::sync::atomic::AtomicUsize::new(0);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..500 {
                    if std::time::Instant::now() > deadline {
                        return;
                    }
                    let zk = ZkClient::connect(&zk_server.addr, Duration::from_secs(4))
                        .expect("a new handle answers its first request");
                    zk.close();
                    opened.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert!(
        opened.load(Ordering::Relaxed) >= 1000,
        "opened only {opened:?}"
    );
}

/// A fake ZooKeeper that establishes sessions and answers pings, but no other request: the
/// server of a session that is alive while one request is lost or stuck behind it. Returns its
/// address and how many requests it has taken (pings aside).
fn server_answering_only_pings() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = taken.clone();
    std::thread::spawn(move || {
        for mut c in listener.incoming().map_while(Result::ok) {
            let count = count.clone();
            std::thread::spawn(move || -> Option<()> {
                let frame = |c: &mut std::net::TcpStream| -> Option<Vec<u8>> {
                    let mut len = [0u8; 4];
                    c.read_exact(&mut len).ok()?;
                    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                    c.read_exact(&mut body).ok()?;
                    Some(body)
                };
                frame(&mut c)?;
                // ConnectResponse: protocol version, timeout 2000 ms, session id, password.
                let mut hello = vec![0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0x07, 0xd0];
                hello.extend_from_slice(&0x5eed_i64.to_be_bytes());
                hello.extend_from_slice(&16i32.to_be_bytes());
                hello.extend_from_slice(&[7; 16]);
                c.write_all(&hello).ok()?;
                loop {
                    let body = frame(&mut c)?;
                    if body[..4] == (-2i32).to_be_bytes() {
                        let mut pong = vec![0, 0, 0, 16];
                        pong.extend_from_slice(&(-2i32).to_be_bytes());
                        pong.extend_from_slice(&[0; 12]);
                        c.write_all(&pong).ok()?;
                    } else {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    (addr, taken)
}

/// Every ZooKeeper call has a deadline: a request the server takes and never answers, on a
/// session whose pings are answered, fails with OperationTimeout (the `zookeeper` crate, which
/// gregor used before its own client, waited for it without end), and the session stays up.
#[test]
fn a_request_the_server_never_answers_fails_at_its_deadline() {
    use gregor::zk::ZkError;
    use gregor::zk::session::{Session, SessionEvent, request_deadline};
    common::init_logging();
    let (addr, taken) = server_answering_only_pings();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timeout = Duration::from_secs(2);
    let session = Session::open(vec![addr], String::new(), timeout, tx);
    assert!(matches!(
        rx.recv_timeout(Duration::from_secs(10)),
        Ok(SessionEvent::Connected {
            session_id: 0x5eed,
            same_session: false
        })
    ));
    let asked = std::thread::spawn(move || {
        let r = session.exists("/never", None);
        (r, session)
    });
    wait_until(
        request_deadline(timeout) + Duration::from_secs(10),
        "the unanswered request to give up",
        || asked.is_finished(),
    );
    let (result, session) = asked.join().unwrap();
    assert_eq!(result, Err(ZkError::OperationTimeout));
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    assert!(session.is_connected(), "pings kept the session up");
    assert!(
        rx.try_iter()
            .all(|e| matches!(e, SessionEvent::Connected { .. })),
        "no disconnection while pings were answered"
    );
}

/// Watches through gregor's client, under a chroot: a data watch fires once on a change, an
/// exists watch on a missing node fires on its creation, a child watch on a new child, each
/// with the path as the caller named it; a server that refuses connections, listed first in
/// the connect string, is passed over.
#[test]
fn watches_fire_once_with_the_callers_path_and_a_dead_server_is_passed_over() {
    use gregor::zk::WatchedEventType;
    common::init_logging();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let root = chroot("watches");
    let zk = ZkClient::connect(
        &format!("{dead_addr},{}{root}", zk_address()),
        Duration::from_secs(6),
    )
    .unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    zk.create_persistent("/a/node", b"1".to_vec()).unwrap();
    let t = tx.clone();
    zk.get_data_w("/a/node", move |e| t.send(("data", e)).unwrap())
        .unwrap();
    let t = tx.clone();
    assert!(
        zk.exists_w("/a/later", move |e| t.send(("exists", e)).unwrap())
            .unwrap()
            .is_none()
    );
    let t = tx.clone();
    zk.get_children_w("/a", move |e| t.send(("children", e)).unwrap())
        .unwrap();
    zk.set_data("/a/node", b"2".to_vec(), None).unwrap();
    zk.set_data("/a/node", b"3".to_vec(), None).unwrap();
    zk.create_persistent("/a/later", Vec::new()).unwrap();
    let mut got: Vec<(&str, WatchedEventType, String)> = (0..3)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .map(|(k, e)| (k, e.event_type, e.path))
        .collect();
    got.sort_by_key(|(k, _, _)| *k);
    assert_eq!(
        got,
        vec![
            (
                "children",
                WatchedEventType::NodeChildrenChanged,
                "/a".to_owned()
            ),
            (
                "data",
                WatchedEventType::NodeDataChanged,
                "/a/node".to_owned()
            ),
            (
                "exists",
                WatchedEventType::NodeCreated,
                "/a/later".to_owned()
            ),
        ]
    );
    // Fired once: the second change and the new node's own changes reach nobody. A
    // sequential node is numbered by its parent's child version (two children so far).
    zk.set_data("/a/later", b"x".to_vec(), None).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert_eq!(zk.get_data("/a/node").unwrap().0, b"3");
    assert_eq!(
        zk.create_sequential("/a/seq-", Vec::new()).unwrap(),
        "/a/seq-0000000002"
    );
    zk.delete_recursive("/a").unwrap();
    assert_eq!(zk.exists("/a"), Ok(None));
    zk.close();
}

/// A controller command with a newer epoch is checked against ZooKeeper first; when the
/// connection drops under that read, the read is asked again once ZooKeeper answers instead
/// of refusing the command: a refusal is final (the controller does not send the command
/// again). Found by a 10-minute chaos run: a broker resumed from a pause lost its ZooKeeper
/// connection while checking the new controller's LeaderAndIsr, refused it, and stayed out of
/// a partition's ISR for minutes.
#[test]
fn a_newer_controller_epoch_is_checked_again_when_the_connection_drops_under_the_read() {
    use common::{FakeController, TestBroker, partition_state, tps};
    common::init_logging();
    let zk_server = PrivateZk::start();
    let connect = format!("{}/epoch-check", zk_server.addr);
    let controller = FakeController::claim(&connect);
    controller
        .zk
        .create_persistent(paths::CONTROLLER_EPOCH, b"7".to_vec())
        .unwrap();
    let b = TestBroker::start(1, &connect, &[("zookeeper.session.timeout.ms", "6000")]);
    let (mut c, info) = (b.client(), b.info());
    let zk_pid = zk_server.child.as_ref().unwrap().id() as i32;
    // SAFETY: stopping and resuming our own child process.
    unsafe { libc::kill(zk_pid, libc::SIGSTOP) };
    let asking = std::thread::spawn(move || {
        let state = tps("x", 0, partition_state(1, 0, &[1], &[1], 7));
        c.leader_and_isr(7, vec![state], vec![info], false)
            .error_code
    });
    // The read of /controller_epoch is out when the broker gives the silent connection up.
    wait_until(
        Duration::from_secs(30),
        "the broker to drop its ZooKeeper connection",
        || !b.broker.zk.stats.is_connected(),
    );
    // SAFETY: as above.
    unsafe { libc::kill(zk_pid, libc::SIGCONT) };
    assert_eq!(
        asking.join().unwrap(),
        0,
        "the command from the controller ZooKeeper names, at the epoch it holds"
    );
}
