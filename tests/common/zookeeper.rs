//! The test binary's ZooKeeper (one real server per binary, or `GREGOR_TEST_ZK`), a chroot per
//! test, and standing in for the controller.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::*;

/// The address of this binary's ZooKeeper, starting it on first use.
pub fn zk_address() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| {
        if let Ok(a) = std::env::var("GREGOR_TEST_ZK") {
            return a;
        }
        let port = free_port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("zookeeper-owner".into())
            .spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let mut child = start_zookeeper(dir.path(), port);
                tx.send(()).unwrap();
                // This thread must outlive every test (PDEATHSIG fires when it exits): it
                // waits on ZooKeeper, which only ends when the test binary does.
                let status = child.wait();
                eprintln!("test ZooKeeper exited: {status:?}");
            })
            .unwrap();
        rx.recv().unwrap();
        let addr = format!("127.0.0.1:{port}");
        wait_until(
            Duration::from_secs(60),
            "ZooKeeper to serve requests",
            || serving(&addr),
        );
        addr
    })
}

pub fn start_zookeeper(dir: &Path, port: u16) -> Child {
    let cfg = dir.join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             minSessionTimeout=1000\nmaxSessionTimeout=60000\nadmin.enableServer=false\n\
             4lw.commands.whitelist=ruok,srvr\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("java");
    cmd.args([
        "-Xmx256m",
        "-cp",
        "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
    ])
    .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
    .arg(&cfg)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    die_with_parent(&mut cmd);
    cmd.spawn()
        .expect("java and the Debian zookeeper package are needed (scripts/test.sh installs them)")
}

/// `ruok` answers before the server takes sessions; `srvr` names the mode only once it does.
pub fn serving(addr: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"srvr").is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.contains("Mode:")
}

/// Holds `/controller` in a chroot so no broker there becomes controller: the test sends the
/// controller's commands itself. Released on drop.
pub struct FakeController {
    pub zk: Arc<gregor::zk::ZkClient>,
}

impl FakeController {
    pub fn claim(zk_connect: &str) -> FakeController {
        let zk = gregor::zk::ZkClient::connect(zk_connect, Duration::from_secs(10)).unwrap();
        zk.create_ephemeral(
            "/controller",
            gregor::zk::paths::elected_broker(0),
            Duration::ZERO,
        )
        .unwrap();
        FakeController { zk }
    }
}

impl Drop for FakeController {
    fn drop(&mut self) {
        self.zk.close();
    }
}

/// A fresh chroot for one test, so tests in a binary never see each other's nodes.
pub fn chroot(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "/gregor-test/{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The epochs up to which tests may act as the controller themselves.
pub const TEST_CONTROLLER_EPOCHS: i32 = 100;

/// Tests send controller commands of their own (controller id 0, small epochs). A broker
/// believes an epoch newer than it knows only once ZooKeeper's `/controller_epoch` has reached
/// it, so the harness advances that node past every epoch a test uses (conditionally: a real
/// controller may be counting its own epoch at the same moment).
pub(super) fn vouch_for_test_controller_epochs(zk: &gregor::zk::ZkClient) {
    loop {
        let (current, version) = match zk.get_data(gregor::zk::paths::CONTROLLER_EPOCH) {
            Ok((d, stat)) => (
                String::from_utf8_lossy(&d).trim().parse().unwrap_or(0),
                Some(stat.version),
            ),
            Err(gregor::zk::ZkError::NoNode) => (0, None),
            Err(e) => panic!("cannot read /controller_epoch: {e:?}"),
        };
        if current >= TEST_CONTROLLER_EPOCHS {
            return;
        }
        let data = TEST_CONTROLLER_EPOCHS.to_string().into_bytes();
        let written = match version {
            Some(v) => zk
                .set_data(gregor::zk::paths::CONTROLLER_EPOCH, data, Some(v))
                .map(|_| ()),
            None => zk.create_persistent(gregor::zk::paths::CONTROLLER_EPOCH, data),
        };
        if written.is_ok() {
            return;
        }
    }
}
