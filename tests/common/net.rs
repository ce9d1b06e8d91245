//! Ports and connections: free ports, connections from another loopback address, and a TCP
//! proxy that can cut a connection.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A port free now, below Linux's ephemeral range (32768–60999): between this check and the
/// broker binding it (seconds later, after its start-up), the kernel never gives it to an
/// outgoing connection, which a port from the ephemeral range could be (CI run of b0359f3: a
/// broker found its port in use). Ports are handed out in turn from a start that differs per
/// process, so parallel tests of one binary never draw the same.
pub fn free_port() -> u16 {
    static NEXT: OnceLock<AtomicUsize> = OnceLock::new();
    let next = NEXT.get_or_init(|| AtomicUsize::new(std::process::id() as usize * 7919));
    loop {
        let port = 20_000 + (next.fetch_add(1, Ordering::Relaxed) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A connection to `to` from source address `from` (another 127.x address on loopback: a
/// test's stand-in for another host).
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let SocketAddr::V4(to) = to else {
        panic!("IPv4 only");
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we own, with sockaddr_in values that live
    // across each call; on failure the descriptor is closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let src = sockaddr(from, 0);
        let dst = sockaddr(*to.ip(), to.port());
        if libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len) != 0
            || libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len) != 0
        {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(TcpStream::from_raw_fd(fd))
    }
}

/// A TCP proxy on 127.0.0.1 that forwards to `target` until `cut`, which drops every
/// connection and refuses new ones until `heal`.
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// The live connections (both sides), so `cut` can shut them; each leaves the map when it
    /// ends, so a long run does not pile up descriptors.
    streams: Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>,
}

impl Proxy {
    pub fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>> = Arc::default();
        let (c, s, st, target) = (
            cut.clone(),
            stop.clone(),
            streams.clone(),
            target.to_owned(),
        );
        std::thread::spawn(move || {
            let mut next_id = 0u64;
            for inbound in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(inbound) = inbound else { continue };
                if c.load(Ordering::Acquire) {
                    continue; // dropped: refused while cut
                }
                let Ok(outbound) = TcpStream::connect(&target) else {
                    continue;
                };
                let clones = (|| {
                    Some((
                        (inbound.try_clone().ok()?, outbound.try_clone().ok()?),
                        (inbound.try_clone().ok()?, outbound.try_clone().ok()?),
                    ))
                })();
                let Some((kept, (inb, outb))) = clones else {
                    continue; // out of descriptors: drop this connection, keep serving
                };
                next_id += 1;
                st.lock().insert(next_id, kept);
                pipe(inb, outb, None);
                pipe(outbound, inbound, Some((st.clone(), next_id)));
            }
        });
        Proxy {
            port,
            cut,
            stop,
            streams,
        }
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        for (_, (a, b)) in self.streams.lock().drain() {
            let _ = a.shutdown(std::net::Shutdown::Both);
            let _ = b.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::Release);
    }
}

type ProxyStreams = Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>;

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` until either ends; then shuts both, and forgets the connection.
fn pipe(mut from: TcpStream, mut to: TcpStream, forget: Option<(ProxyStreams, u64)>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
        let _ = from.shutdown(std::net::Shutdown::Both);
        if let Some((streams, id)) = forget {
            streams.lock().remove(&id);
        }
    });
}

/// Asks ApiVersions v0 on `sock` and reads the answer's size within 5 s: whether the broker
/// answered (it answers only a connection it admitted).
pub fn api_versions_answered(sock: &mut TcpStream) -> bool {
    let req = [0u8, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let mut size = [0u8; 4];
    sock.write_all(&req).is_ok() && sock.read_exact(&mut size).is_ok()
}
