//! Faults chosen by a seed. An episode is one fault, or two overlapping (the second starts while
//! the first holds, and each is healed in turn); then the run waits for the cluster to heal.
//!
//! Process faults run in both topologies. The loopback one adds a broker cut off behind its
//! proxy and a restart of its single ZooKeeper; `--hosts` adds faults made in the network
//! (`scripts/hosts.sh`): a host isolated, partitions between groups of hosts, one-way loss,
//! ZooKeeper losing its quorum or its leader, and a slow link.

use std::time::Duration;

use crate::cluster::{Cluster, PARTITIONS, wait_healthy};
use crate::env::{Env, SESSION_TIMEOUT_MS};
use crate::lab::ZK_HOSTS;

/// splitmix64: a seeded generator small enough to keep here, so a seed replays a run's choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo + 1))
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    KillBroker,
    KillController,
    KillCoordinator,
    PauseLeader,
    RollingRestart,
    /// Loopback: the single ZooKeeper killed and restarted.
    RestartZooKeeper,
    /// Loopback: a broker unreachable behind its proxy (it still reaches ZooKeeper).
    CutBroker,
    /// A broker's host with its link down.
    IsolateHost,
    /// Jepsen's case: a leader with its clients, cut from ZooKeeper and the other brokers.
    LeaderAloneWithClients,
    /// A leader that keeps ZooKeeper and loses its followers.
    LeaderWithoutFollowers,
    ControllerFromZooKeeper,
    CoordinatorFromMembers,
    /// A follower's packets to its leader dropped, or the leader's to it.
    OneWayLoss,
    /// Two of the three ensemble members cut off.
    ZooKeeperQuorumLoss,
    KillZooKeeperLeader,
    /// A broker's link shaped to 2 Mbit/s each way.
    SlowLink,
}

/// The faults of the loopback run.
pub const LOOPBACK: [Fault; 7] = [
    Fault::KillBroker,
    Fault::KillController,
    Fault::KillCoordinator,
    Fault::PauseLeader,
    Fault::RollingRestart,
    Fault::RestartZooKeeper,
    Fault::CutBroker,
];

/// The faults of the `--hosts` run: the process faults and the network's.
pub const HOSTS: [Fault; 14] = [
    Fault::KillBroker,
    Fault::KillController,
    Fault::KillCoordinator,
    Fault::PauseLeader,
    Fault::RollingRestart,
    Fault::IsolateHost,
    Fault::LeaderAloneWithClients,
    Fault::LeaderWithoutFollowers,
    Fault::ControllerFromZooKeeper,
    Fault::CoordinatorFromMembers,
    Fault::OneWayLoss,
    Fault::ZooKeeperQuorumLoss,
    Fault::KillZooKeeperLeader,
    Fault::SlowLink,
];

impl Fault {
    /// A partition made in the network between hosts (the summary's `net_partitions`).
    pub fn is_net_partition(self) -> bool {
        matches!(
            self,
            Fault::IsolateHost
                | Fault::LeaderAloneWithClients
                | Fault::LeaderWithoutFollowers
                | Fault::ControllerFromZooKeeper
                | Fault::CoordinatorFromMembers
                | Fault::OneWayLoss
        )
    }

    /// Runs alone: it restarts every broker, or it is the loopback run's single ZooKeeper.
    fn is_solo(self) -> bool {
        matches!(self, Fault::RollingRestart | Fault::RestartZooKeeper)
    }
}

/// Process faults that may start while another fault holds; each has its own exact heal,
/// which a network fault (healed all at once by `scripts/hosts.sh heal`) would not.
const OVERLAPPING: [Fault; 3] = [
    Fault::KillBroker,
    Fault::PauseLeader,
    Fault::KillCoordinator,
];

/// The scheduler's choice for the next episode: its first fault, and the fault to overlap it
/// with, if any. Draws the same numbers whatever the cluster's state, so a seed replays.
pub fn choose(rng: &mut Rng, kinds: &[Fault]) -> (Fault, Option<Fault>) {
    let first = rng.pick(kinds);
    if first.is_solo() {
        return (first, None);
    }
    let overlap = rng.below(10) < 4;
    let loopback = kinds.contains(&Fault::CutBroker);
    let second = match (overlap, loopback) {
        (false, _) => None,
        (true, true) => Some(rng.pick(&[
            Fault::KillBroker,
            Fault::PauseLeader,
            Fault::CutBroker,
            Fault::KillCoordinator,
        ])),
        (true, false) => Some(rng.pick(&OVERLAPPING)),
    };
    (first, second)
}

/// How to undo a fault that is holding.
enum Heal {
    Restart(i32),
    Resume(i32),
    Reconnect(i32),
    Network,
    StartZooKeeper(usize),
    Nothing,
}

/// A fault in progress: what it did, how long it holds, how to undo it.
struct Active {
    what: String,
    hold: Duration,
    heal: Heal,
}

/// Runs one episode and returns the faults it made, with what each did, for the run's log.
pub fn episode(env: &mut dyn Cluster, rng: &mut Rng, kinds: &[Fault]) -> Vec<(Fault, String)> {
    let (first, second) = choose(rng, kinds);
    if first.is_solo() {
        return vec![(first, solo(env, rng, first))];
    }
    let a = begin(env, rng, first);
    let mut done = vec![(first, a.what.clone())];
    let b = if let Some(second) = second {
        let lead = rng.millis(500, 2500).min(a.hold);
        std::thread::sleep(lead);
        let b = begin(env, rng, second);
        done.push((second, format!("overlapping {}", b.what)));
        std::thread::sleep(a.hold.saturating_sub(lead));
        Some(b)
    } else {
        std::thread::sleep(a.hold);
        None
    };
    heal(env, a.heal);
    if let Some(b) = b {
        std::thread::sleep(rng.millis(500, 2000));
        heal(env, b.heal);
    }
    done
}

/// A broker that is running and not already paused, chosen at random; `prefer` when it is.
fn pick(env: &mut dyn Cluster, rng: &mut Rng, prefer: Option<i32>) -> Option<i32> {
    // Always one draw, so a seed replays the same sequence of choices whoever is hit.
    let r = rng.below(5) as usize;
    let up: Vec<i32> = env
        .broker_ids()
        .into_iter()
        .filter(|id| env.is_running(*id) && !env.is_paused(*id))
        .collect();
    if let Some(p) = prefer.filter(|p| up.contains(p)) {
        return Some(p);
    }
    (!up.is_empty()).then(|| up[r % up.len()])
}

fn host(id: i32) -> String {
    crate::lab::Lab::broker_host(id)
}

fn begin(env: &mut dyn Cluster, rng: &mut Rng, f: Fault) -> Active {
    let nothing = |what: &str| Active {
        what: format!("{f:?}: {what}"),
        hold: Duration::ZERO,
        heal: Heal::Nothing,
    };
    let p = rng.below(PARTITIONS as u64) as i32;
    let hold = rng.millis(2000, 8000);
    let session = Duration::from_millis(SESSION_TIMEOUT_MS);
    let brokers = env.broker_ids();
    match f {
        Fault::KillBroker | Fault::KillController | Fault::KillCoordinator => {
            let prefer = match f {
                Fault::KillController => env.controller(),
                Fault::KillCoordinator => env.coordinator(),
                _ => None,
            };
            let Some(id) = pick(env, rng, prefer) else {
                return nothing("no broker to act on");
            };
            env.kill9(id);
            Active {
                what: format!("{f:?}: kill -9 broker {id}"),
                hold: rng.millis(1000, 6000),
                heal: Heal::Restart(id),
            }
        }
        Fault::PauseLeader => {
            let leader = env.leader(p);
            let Some(id) = pick(env, rng, leader) else {
                return nothing("no broker to act on");
            };
            env.pause(id);
            Active {
                what: format!("PauseLeader: SIGSTOP broker {id} (leader of {p})"),
                hold: session * 3 / 2 + rng.millis(0, 2000),
                heal: Heal::Resume(id),
            }
        }
        Fault::CutBroker => {
            let Some(id) = pick(env, rng, None) else {
                return nothing("no broker to act on");
            };
            let Some(proxy) = loopback(env).map(|l| &l.brokers[&id].proxy) else {
                return nothing("only in the loopback run");
            };
            proxy.cut();
            Active {
                what: format!("CutBroker: broker {id} unreachable (it still reaches ZooKeeper)"),
                hold,
                heal: Heal::Reconnect(id),
            }
        }
        Fault::RollingRestart | Fault::RestartZooKeeper => unreachable!("solo faults"),
        _ => {
            let leader = env.leader(p);
            let followers: Vec<String> = env
                .replicas(p)
                .into_iter()
                .filter(|r| Some(*r) != leader)
                .map(host)
                .collect();
            let controller = env.controller();
            let coordinator = env.coordinator();
            let some = rng.pick(&brokers);
            let keep = rng.below(3) as usize;
            let Some(lab) = env.network() else {
                return nothing("only in the --hosts run");
            };
            let others = |id: i32| -> Vec<String> {
                ZK_HOSTS
                    .iter()
                    .map(|h| h.to_string())
                    .chain(brokers.iter().filter(|b| **b != id).map(|b| host(*b)))
                    .collect()
            };
            let (what, heal) = match f {
                Fault::IsolateHost => {
                    lab.isolate(&host(some));
                    (format!("broker {some}'s host isolated"), Heal::Network)
                }
                Fault::LeaderAloneWithClients => {
                    let Some(l) = leader else {
                        return nothing("partition without a leader");
                    };
                    lab.cut(&[&host(l)], &strs(&others(l)));
                    (
                        format!(
                            "leader {l} of {p} cut from ZooKeeper and the brokers, not its clients"
                        ),
                        Heal::Network,
                    )
                }
                Fault::LeaderWithoutFollowers => {
                    let Some(l) = leader else {
                        return nothing("partition without a leader");
                    };
                    lab.cut(&[&host(l)], &strs(&followers));
                    (
                        format!("leader {l} of {p} cut from its followers {followers:?}"),
                        Heal::Network,
                    )
                }
                Fault::ControllerFromZooKeeper => {
                    let Some(c) = controller else {
                        return nothing("no controller");
                    };
                    lab.cut(&[&host(c)], &ZK_HOSTS);
                    (format!("controller {c} cut from ZooKeeper"), Heal::Network)
                }
                Fault::CoordinatorFromMembers => {
                    let Some(c) = coordinator else {
                        return nothing("no coordinator");
                    };
                    lab.cut(&[&host(c)], &["client"]);
                    (
                        format!("coordinator {c} cut from its members (the client host)"),
                        Heal::Network,
                    )
                }
                Fault::OneWayLoss => {
                    let (Some(l), Some(f)) = (leader, followers.first()) else {
                        return nothing("partition without a leader");
                    };
                    let (from, to) = if rng.below(2) == 0 {
                        (f.clone(), host(l))
                    } else {
                        (host(l), f.clone())
                    };
                    lab.oneway(&from, &to);
                    (
                        format!("packets {from} -> {to} dropped (partition {p})"),
                        Heal::Network,
                    )
                }
                Fault::ZooKeeperQuorumLoss => {
                    let cut: Vec<&str> = ZK_HOSTS
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != keep)
                        .map(|(_, h)| *h)
                        .collect();
                    for h in &cut {
                        lab.isolate(h);
                    }
                    (
                        format!("ZooKeeper quorum lost: {cut:?} isolated"),
                        Heal::Network,
                    )
                }
                Fault::KillZooKeeperLeader => {
                    let Some(i) = lab.zookeeper_leader() else {
                        return nothing("the ensemble has no leader");
                    };
                    lab.kill_zookeeper(i);
                    (
                        format!("ZooKeeper leader {} killed", ZK_HOSTS[i]),
                        Heal::StartZooKeeper(i),
                    )
                }
                Fault::SlowLink => {
                    lab.slow(&host(some), 2000);
                    (format!("broker {some}'s link at 2 Mbit/s"), Heal::Network)
                }
                _ => unreachable!("process faults above"),
            };
            Active {
                what: format!("{f:?}: {what}"),
                hold,
                heal,
            }
        }
    }
}

/// The loopback environment, for its proxies.
fn loopback(env: &mut dyn Cluster) -> Option<&mut Env> {
    env.as_loopback()
}

fn heal(env: &mut dyn Cluster, h: Heal) {
    match h {
        Heal::Restart(id) => env.restart(id),
        Heal::Resume(id) => env.resume(id),
        Heal::Reconnect(id) => {
            if let Some(l) = loopback(env) {
                l.brokers[&id].proxy.heal();
            }
        }
        Heal::Network => {
            if let Some(lab) = env.network() {
                lab.heal();
            }
        }
        Heal::StartZooKeeper(i) => {
            if let Some(lab) = env.network() {
                lab.start_zookeeper(i);
            }
        }
        Heal::Nothing => {}
    }
}

fn solo(env: &mut dyn Cluster, rng: &mut Rng, f: Fault) -> String {
    match f {
        Fault::RestartZooKeeper => {
            let down = rng.millis(500, 4000);
            match loopback(env) {
                Some(l) => {
                    l.restart_zookeeper(down);
                    format!("RestartZooKeeper: down {} ms", down.as_millis())
                }
                None => "RestartZooKeeper: only in the loopback run".into(),
            }
        }
        Fault::RollingRestart => {
            let ids = env.broker_ids();
            for id in &ids {
                env.terminate(*id);
                env.restart(*id);
                let _ = wait_healthy(env, Duration::from_secs(60));
            }
            format!("RollingRestart: SIGTERM and restart of brokers {ids:?} in turn")
        }
        _ => unreachable!("only solo faults"),
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seed: u64, kinds: &[Fault], n: usize) -> Vec<(Fault, Option<Fault>)> {
        let mut rng = Rng::new(seed);
        (0..n).map(|_| choose(&mut rng, kinds)).collect()
    }

    #[test]
    fn a_seed_replays_the_same_faults() {
        assert_eq!(plan(7, &HOSTS, 200), plan(7, &HOSTS, 200));
        assert_ne!(plan(7, &HOSTS, 200), plan(8, &HOSTS, 200));
    }

    #[test]
    fn every_fault_of_a_topology_comes_up_and_no_other() {
        for kinds in [&HOSTS[..], &LOOPBACK[..]] {
            let chosen: std::collections::BTreeSet<Fault> = plan(1, kinds, 300)
                .into_iter()
                .flat_map(|(a, b)| [Some(a), b])
                .flatten()
                .collect();
            let all: std::collections::BTreeSet<Fault> = kinds.iter().copied().collect();
            assert_eq!(chosen, all);
        }
    }

    #[test]
    fn solo_and_network_faults_never_overlap_another() {
        for (first, second) in plan(3, &HOSTS, 500) {
            if first.is_solo() {
                assert_eq!(second, None);
            }
            if let Some(s) = second {
                assert!(OVERLAPPING.contains(&s), "{s:?} overlapping {first:?}");
            }
        }
    }
}
