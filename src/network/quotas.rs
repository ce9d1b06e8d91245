//! `ConnectionQuotas`: who may hold a connection, shared by every listener of a broker (Kafka's
//! class of the same name).
//!
//! - `max.connections` bounds the broker's client connections. At the bound, the least
//!   recently used *idle* client connection is closed to make room (KIP-402 does this for the
//!   inter-broker listener; here every newcomer gets it, so a flood of idle connections cannot
//!   lock out anyone — a broker dialling in on a shared listener included). Only when every
//!   connection is busy is the newcomer refused.
//! - `max.connections.per.ip` (+ `max.connections.per.ip.overrides`) bounds one address; a
//!   newcomer over it is refused (closed before a thread is spent on it).
//! - `max.connection.creation.rate` (broker-wide, Kafka's throttle: the acceptor waits) and
//!   `max.connection.creation.rate.per.ip` (one address's storm is refused, others are not
//!   slowed).
//! - Connections on a separate inter-broker listener count against none of these.
//!
//! Every refusal is logged once per interval per address and reason, with how many were
//! refused since — a flood does not become a flood of log lines.

use std::collections::HashMap;
use std::net::{IpAddr, Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What the socket servers of one broker admit (config keys in `config::connection_limits`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionLimits {
    /// `socket.request.max.bytes`: the largest request a client may announce.
    pub socket_request_max_bytes: usize,
    /// `queued.max.request.bytes`: bytes of requests being read that the broker holds at
    /// most (besides each connection's small allowance); `None` is Kafka's -1, unlimited.
    pub queued_max_request_bytes: Option<usize>,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub max_connections_per_ip_overrides: HashMap<IpAddr, usize>,
    /// New connections per second, broker-wide; `None`: unlimited (Kafka's default).
    pub max_connection_creation_rate: Option<f64>,
    /// New connections per second from one address.
    pub max_connection_creation_rate_per_ip: f64,
    /// `connections.max.idle.ms`: an idle connection is closed after this long, and so is one
    /// whose request has been arriving for longer (a client trickling bytes).
    pub idle: Duration,
}

/// The broker's defaults (they are `config::keys`' rows; `config::connection_limits` checks
/// this copy matches), for the tests here.
#[cfg(test)]
impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            socket_request_max_bytes: 104_857_600,
            queued_max_request_bytes: Some(256 << 20),
            max_connections: 1000,
            max_connections_per_ip: 250,
            max_connections_per_ip_overrides: HashMap::new(),
            max_connection_creation_rate: None,
            max_connection_creation_rate_per_ip: 1000.0,
            idle: Duration::from_millis(600_000),
        }
    }
}

/// How often one refusal reason is logged for one address.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// One admitted connection, as the registry and its own thread see it.
pub struct Tracked {
    pub id: u64,
    ip: IpAddr,
    /// Counts against the client limits (false on a separate inter-broker listener).
    counted: bool,
    stream: TcpStream,
    /// Mid-request, parked or adopted: never closed to make room.
    busy: AtomicBool,
    /// When the last request finished, in ms since the registry started.
    last_active_ms: AtomicU64,
}

#[derive(Default)]
struct Registry {
    conns: HashMap<u64, Arc<Tracked>>,
    counted: usize,
    per_ip: HashMap<IpAddr, usize>,
    /// Per-address creation buckets; dropped for an address once it is full again.
    buckets: HashMap<IpAddr, Bucket>,
    broker_bucket: Option<Bucket>,
}

/// A token bucket holding one second of `rate`.
#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: f64) -> Bucket {
        Bucket {
            tokens: rate.max(1.0),
            at: Instant::now(),
        }
    }

    fn refill(&mut self, rate: f64) {
        let now = Instant::now();
        let burst = rate.max(1.0);
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * rate).min(burst);
        self.at = now;
    }
}

pub struct ConnectionQuotas {
    /// Changed while the broker runs by dynamic configuration (`reconfigure`).
    limits: parking_lot::RwLock<ConnectionLimits>,
    registry: Mutex<Registry>,
    next_id: AtomicU64,
    started: Instant,
    /// Last report per (reason, address) and how many refusals it has not reported yet.
    reported: Mutex<HashMap<(Refusal, Option<IpAddr>), Reported>>,
    refused: [AtomicU64; 3],
    /// KIP-612's `connection_creation_rate` quotas (`/config/ips/...`): per address, and the
    /// `<default>` that replaces `max.connection.creation.rate.per.ip`.
    ip_rates: parking_lot::RwLock<(Option<f64>, HashMap<IpAddr, f64>)>,
}

/// When a refusal was last logged, and how many followed unlogged.
type Reported = (Option<Instant>, u64);

/// Why a connection was refused (also the metrics' reason label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    MaxConnections = 0,
    PerIp = 1,
    CreationRate = 2,
}

impl ConnectionQuotas {
    pub fn new(limits: ConnectionLimits) -> Arc<ConnectionQuotas> {
        Arc::new(ConnectionQuotas {
            limits: parking_lot::RwLock::new(limits),
            registry: Mutex::new(Registry::default()),
            next_id: AtomicU64::new(0),
            started: Instant::now(),
            reported: Mutex::new(HashMap::new()),
            refused: Default::default(),
            ip_rates: Default::default(),
        })
    }

    /// Takes the `connection_creation_rate` quotas: `default` for every address without its
    /// own (`None`: `max.connection.creation.rate.per.ip`), and those of `per_ip`.
    pub fn set_ip_rates(&self, default: Option<f64>, per_ip: HashMap<IpAddr, f64>) {
        *self.ip_rates.write() = (default, per_ip);
    }

    /// New connections per second that `ip` may open.
    fn creation_rate_of(&self, ip: IpAddr) -> f64 {
        let r = self.ip_rates.read();
        r.1.get(&ip)
            .copied()
            .or(r.0)
            .unwrap_or(self.limits.read().max_connection_creation_rate_per_ip)
    }

    /// The limits now.
    pub fn limits(&self) -> ConnectionLimits {
        self.limits.read().clone()
    }

    /// Takes new limits (dynamic broker configuration): the connection counts and rates
    /// apply to the next connection; open connections stay, as in Kafka.
    pub fn reconfigure(&self, limits: ConnectionLimits) {
        *self.limits.write() = limits;
    }

    /// How many connections were refused for `why` since start.
    pub fn refused(&self, why: Refusal) -> u64 {
        self.refused[why as usize].load(Ordering::Relaxed)
    }

    /// Open connections: (counted against the client limits, all).
    pub fn open(&self) -> (usize, usize) {
        let r = self.registry.lock();
        (r.counted, r.conns.len())
    }

    fn limit_for(&self, ip: IpAddr) -> usize {
        let l = self.limits.read();
        l.max_connections_per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(l.max_connections_per_ip)
    }

    /// Waits, on the acceptor, while the broker-wide creation rate is used up (Kafka's
    /// throttle). Exempt listeners never wait.
    pub fn throttle_creation(&self, exempt: bool) {
        let rate = self.limits.read().max_connection_creation_rate;
        let Some(rate) = rate.filter(|_| !exempt) else {
            return;
        };
        loop {
            let wait = {
                let mut r = self.registry.lock();
                let b = r.broker_bucket.get_or_insert_with(|| Bucket::full(rate));
                b.refill(rate);
                if b.tokens >= 1.0 {
                    b.tokens -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - b.tokens) / rate)
            };
            std::thread::sleep(wait);
        }
    }

    /// Admits `stream` from `ip`, or says why not (the caller closes it). `exempt`: it arrived
    /// on a separate inter-broker listener.
    pub fn admit(
        self: &Arc<Self>,
        stream: &TcpStream,
        ip: IpAddr,
        exempt: bool,
    ) -> Result<Ticket, Refusal> {
        let clone = stream.try_clone().map_err(|_| Refusal::MaxConnections)?;
        let mut evicted = None;
        let tracked = {
            let mut r = self.registry.lock();
            if !exempt {
                self.check_rate(&mut r, ip)?;
                let here = r.per_ip.get(&ip).copied().unwrap_or(0);
                let limit = self.limit_for(ip);
                if here >= limit {
                    drop(r);
                    self.report(
                        Refusal::PerIp,
                        Some(ip),
                        format!("max.connections.per.ip ({limit}) reached"),
                    );
                    return Err(Refusal::PerIp);
                }
                let max_connections = self.limits.read().max_connections;
                if r.counted >= max_connections {
                    match least_recently_used_idle(&r) {
                        Some(t) => {
                            Self::forget(&mut r, t.id);
                            evicted = Some(t);
                        }
                        None => {
                            drop(r);
                            self.report(
                                Refusal::MaxConnections,
                                Some(ip),
                                format!(
                                    "max.connections ({max_connections}) reached and none idle"
                                ),
                            );
                            return Err(Refusal::MaxConnections);
                        }
                    }
                }
            }
            let t = Arc::new(Tracked {
                id: self.next_id.fetch_add(1, Ordering::Relaxed),
                ip,
                counted: !exempt,
                stream: clone,
                busy: AtomicBool::new(false),
                last_active_ms: AtomicU64::new(self.now_ms()),
            });
            if t.counted {
                r.counted += 1;
                *r.per_ip.entry(ip).or_insert(0) += 1;
            }
            r.conns.insert(t.id, t.clone());
            t
        };
        if let Some(old) = evicted {
            self.report(
                Refusal::MaxConnections,
                None,
                format!(
                    "max.connections ({}) reached: closed the least recently used idle connection (from {}) to make room",
                    self.limits.read().max_connections, old.ip
                ),
            );
            let _ = old.stream.shutdown(Shutdown::Both);
        }
        Ok(Ticket {
            quotas: self.clone(),
            tracked,
        })
    }

    /// Takes one token of `ip`'s creation bucket, or refuses.
    fn check_rate(&self, r: &mut Registry, ip: IpAddr) -> Result<(), Refusal> {
        let rate = self.creation_rate_of(ip);
        let b = r.buckets.entry(ip).or_insert_with(|| Bucket::full(rate));
        b.refill(rate);
        if b.tokens < 1.0 {
            self.report(
                Refusal::CreationRate,
                Some(ip),
                format!("connection creation rate of {ip} ({rate}/s) reached"),
            );
            return Err(Refusal::CreationRate);
        }
        b.tokens -= 1.0;
        // Full buckets carry no information: keep the map to the addresses now active.
        if r.buckets.len() > 4096 {
            r.buckets.retain(|ip, b| {
                let rate = self.creation_rate_of(*ip);
                b.refill(rate);
                b.tokens < rate.max(1.0)
            });
        }
        Ok(())
    }

    fn forget(r: &mut Registry, id: u64) -> bool {
        let Some(t) = r.conns.remove(&id) else {
            return false;
        };
        if t.counted {
            r.counted -= 1;
            if let Some(n) = r.per_ip.get_mut(&t.ip) {
                *n -= 1;
                if *n == 0 {
                    r.per_ip.remove(&t.ip);
                }
            }
        }
        true
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Counts a refusal and logs it, at most once per interval per reason and address.
    fn report(&self, why: Refusal, ip: Option<IpAddr>, what: String) {
        self.refused[why as usize].fetch_add(1, Ordering::Relaxed);
        let mut reported = self.reported.lock();
        let now = Instant::now();
        let entry = reported.entry((why, ip)).or_insert((None, 0));
        if entry
            .0
            .is_some_and(|at| now.duration_since(at) < LOG_INTERVAL)
        {
            entry.1 += 1;
            return;
        }
        let from = ip.map_or(String::new(), |ip| format!(" from {ip}"));
        let more = match entry.1 {
            0 => String::new(),
            n => format!(" ({n} more since the last report)"),
        };
        log::warn!("refusing connections{from}: {what}{more}");
        *entry = (Some(now), 0);
        if reported.len() > 1024 {
            reported.retain(|_, (at, n)| {
                *n > 0 || at.is_some_and(|at| now.duration_since(at) < LOG_INTERVAL)
            });
        }
    }

    /// Closes every connection (shutdown).
    pub fn close_all(&self) {
        for t in self.registry.lock().conns.values() {
            let _ = t.stream.shutdown(Shutdown::Both);
        }
    }
}

/// The client connection idle longest: not in a request, and nothing sent that is not read
/// yet (a request whose bytes wait in the socket is not idle, even before its thread looks).
fn least_recently_used_idle(r: &Registry) -> Option<Arc<Tracked>> {
    let mut idle: Vec<(u64, &Arc<Tracked>)> = r
        .conns
        .values()
        .filter(|t| t.counted && !t.busy.load(Ordering::Acquire))
        .map(|t| (t.last_active_ms.load(Ordering::Relaxed), t))
        .collect();
    idle.sort_unstable_by_key(|(at, _)| *at);
    idle.into_iter()
        .map(|(_, t)| t)
        .find(|t| bytes_queued(&t.stream) == 0)
        .cloned()
}

/// Bytes the peer has sent that have not been read yet (FIONREAD).
pub fn bytes_queued(stream: &TcpStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r == 0 { n.max(0) as usize } else { 0 }
}

/// An admitted connection's place, given back when its thread ends however it ends.
pub struct Ticket {
    quotas: Arc<ConnectionQuotas>,
    tracked: Arc<Tracked>,
}

impl Ticket {
    pub fn id(&self) -> u64 {
        self.tracked.id
    }

    /// The connection is mid-request (or parked, or adopted): not idle.
    pub fn set_busy(&self) {
        self.tracked.busy.store(true, Ordering::Release);
    }

    /// The connection finished its requests and waits for the next one.
    pub fn set_idle(&self) {
        let now = self.quotas.now_ms();
        self.tracked.last_active_ms.store(now, Ordering::Relaxed);
        self.tracked.busy.store(false, Ordering::Release);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        ConnectionQuotas::forget(&mut self.quotas.registry.lock(), self.tracked.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected stream (its peer is irrelevant: `admit` is told the address).
    fn stream(l: &TcpListener) -> TcpStream {
        TcpStream::connect(l.local_addr().unwrap()).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn quotas(max: usize, per_ip: usize) -> Arc<ConnectionQuotas> {
        ConnectionQuotas::new(ConnectionLimits {
            max_connections: max,
            max_connections_per_ip: per_ip,
            max_connections_per_ip_overrides: [(ip("10.0.0.9"), 1)].into_iter().collect(),
            max_connection_creation_rate_per_ip: 1000.0,
            ..Default::default()
        })
    }

    #[test]
    fn one_address_is_held_to_its_limit_and_others_are_not() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let q = quotas(100, 3);
        let held: Vec<Ticket> = (0..3)
            .map(|_| q.admit(&stream(&l), ip("10.0.0.1"), false).unwrap())
            .collect();
        assert_eq!(
            q.admit(&stream(&l), ip("10.0.0.1"), false).err(),
            Some(Refusal::PerIp)
        );
        assert!(q.admit(&stream(&l), ip("10.0.0.2"), false).is_ok());
        // The override is the limit for its address.
        let _one = q.admit(&stream(&l), ip("10.0.0.9"), false).unwrap();
        assert!(q.admit(&stream(&l), ip("10.0.0.9"), false).is_err());
        assert_eq!(q.refused(Refusal::PerIp), 2);
        // A closed connection frees its address's place.
        drop(held);
        assert!(q.admit(&stream(&l), ip("10.0.0.1"), false).is_ok());
    }

    #[test]
    fn at_max_connections_the_least_recently_used_idle_one_makes_room() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let q = quotas(3, 10);
        let a = q.admit(&stream(&l), ip("10.0.0.1"), false).unwrap();
        let b = q.admit(&stream(&l), ip("10.0.0.2"), false).unwrap();
        let c = q.admit(&stream(&l), ip("10.0.0.3"), false).unwrap();
        a.set_busy();
        std::thread::sleep(Duration::from_millis(5));
        c.set_idle(); // c used after b: b is the least recently used idle one
        let d = q.admit(&stream(&l), ip("10.0.0.4"), false).unwrap();
        assert_eq!(q.open(), (3, 3));
        let tracked = |t: &Ticket| q.registry.lock().conns.contains_key(&t.id());
        assert!(!tracked(&b), "b was closed to make room");
        assert!(tracked(&a) && tracked(&c) && tracked(&d));
        drop(b); // its thread ending later does not count it out twice
        assert_eq!(q.open(), (3, 3));
        // All busy: the newcomer is refused.
        for t in [&a, &c, &d] {
            t.set_busy();
        }
        assert_eq!(
            q.admit(&stream(&l), ip("10.0.0.5"), false).err(),
            Some(Refusal::MaxConnections)
        );
        // A separate inter-broker listener's connection counts against nothing.
        let e = q.admit(&stream(&l), ip("10.0.0.5"), true).unwrap();
        assert_eq!(q.open(), (3, 4));
        drop(e);
    }

    #[test]
    fn one_address_storming_is_refused_past_its_rate() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let q = ConnectionQuotas::new(ConnectionLimits {
            max_connection_creation_rate_per_ip: 5.0,
            ..Default::default()
        });
        let mut admitted = Vec::new();
        for _ in 0..20 {
            if let Ok(t) = q.admit(&stream(&l), ip("10.0.0.1"), false) {
                admitted.push(t);
            }
        }
        // One second's burst, and whatever refilled while the loop ran (well under a second).
        assert!(
            (5..=7).contains(&admitted.len()),
            "{} admitted",
            admitted.len()
        );
        assert!(q.refused(Refusal::CreationRate) >= 13);
        assert!(q.admit(&stream(&l), ip("10.0.0.2"), false).is_ok());
    }
}
