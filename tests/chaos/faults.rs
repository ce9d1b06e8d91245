//! Faults chosen by a seed. An episode is one fault, or two overlapping (the second starts while
//! the first holds, and each is healed in turn); then the run waits for the cluster to heal.

use std::time::Duration;

use crate::common::poll_until;
use crate::env::{Env, PARTITIONS, SESSION_TIMEOUT_MS};

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    KillBroker,
    KillController,
    KillCoordinator,
    PauseLeader,
    RollingRestart,
    RestartZooKeeper,
    CutBroker,
}

const ALL: [Fault; 7] = [
    Fault::KillBroker,
    Fault::KillController,
    Fault::KillCoordinator,
    Fault::PauseLeader,
    Fault::RollingRestart,
    Fault::RestartZooKeeper,
    Fault::CutBroker,
];

/// How to undo a fault that is holding.
enum Heal {
    Restart(i32),
    Resume(i32),
    Reconnect(i32),
    Nothing,
}

/// A fault in progress: what it did, how long it holds, how to undo it.
struct Active {
    what: String,
    hold: Duration,
    heal: Heal,
}

/// Runs one episode and returns what it did, for the run's log.
pub fn episode(env: &mut Env, rng: &mut Rng) -> Vec<String> {
    let first = ALL[rng.below(ALL.len() as u64) as usize];
    if matches!(first, Fault::RollingRestart | Fault::RestartZooKeeper) {
        return vec![solo(env, rng, first)];
    }
    let a = begin(env, rng, first);
    let mut done = vec![a.what.clone()];
    let overlap = rng.below(10) < 4;
    let b = if overlap {
        let lead = rng.millis(500, 2500).min(a.hold);
        std::thread::sleep(lead);
        let kinds = [
            Fault::KillBroker,
            Fault::PauseLeader,
            Fault::CutBroker,
            Fault::KillCoordinator,
        ];
        let second = kinds[rng.below(kinds.len() as u64) as usize];
        let b = begin(env, rng, second);
        done.push(format!("overlapping {}", b.what));
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
fn pick(env: &Env, rng: &mut Rng, prefer: Option<i32>) -> Option<i32> {
    // Always one draw, so a seed replays the same sequence of choices whoever is hit.
    let r = rng.below(3) as usize;
    let up: Vec<i32> = (1..=3)
        .filter(|id| env.is_running(*id) && !env.brokers[id].paused)
        .collect();
    if let Some(p) = prefer.filter(|p| up.contains(p)) {
        return Some(p);
    }
    (!up.is_empty()).then(|| up[r % up.len()])
}

fn begin(env: &mut Env, rng: &mut Rng, f: Fault) -> Active {
    let nothing = |what: &str| Active {
        what: format!("{what}: no broker to act on"),
        hold: Duration::ZERO,
        heal: Heal::Nothing,
    };
    match f {
        Fault::KillBroker | Fault::KillController | Fault::KillCoordinator => {
            let prefer = match f {
                Fault::KillController => env.controller(),
                Fault::KillCoordinator => env.coordinator(),
                _ => None,
            };
            let Some(id) = pick(env, rng, prefer) else {
                return nothing("kill");
            };
            env.kill9(id);
            Active {
                what: format!("{f:?}: kill -9 broker {id}"),
                hold: rng.millis(1000, 6000),
                heal: Heal::Restart(id),
            }
        }
        Fault::PauseLeader => {
            let p = rng.below(PARTITIONS as u64) as i32;
            let Some(id) = pick(env, rng, env.leader(p)) else {
                return nothing("pause");
            };
            env.pause(id);
            Active {
                what: format!("PauseLeader: SIGSTOP broker {id} (leader of {p})"),
                hold: Duration::from_millis(SESSION_TIMEOUT_MS * 3 / 2) + rng.millis(0, 2000),
                heal: Heal::Resume(id),
            }
        }
        Fault::CutBroker => {
            let Some(id) = pick(env, rng, None) else {
                return nothing("cut");
            };
            env.brokers[&id].proxy.cut();
            Active {
                what: format!("CutBroker: broker {id} unreachable (it still reaches ZooKeeper)"),
                hold: rng.millis(2000, 8000),
                heal: Heal::Reconnect(id),
            }
        }
        Fault::RollingRestart | Fault::RestartZooKeeper => unreachable!("solo faults"),
    }
}

fn heal(env: &mut Env, h: Heal) {
    match h {
        Heal::Restart(id) => env.restart(id),
        Heal::Resume(id) => env.resume(id),
        Heal::Reconnect(id) => env.brokers[&id].proxy.heal(),
        Heal::Nothing => {}
    }
}

fn solo(env: &mut Env, rng: &mut Rng, f: Fault) -> String {
    match f {
        Fault::RestartZooKeeper => {
            let down = rng.millis(500, 4000);
            env.restart_zookeeper(down);
            format!("RestartZooKeeper: down {} ms", down.as_millis())
        }
        Fault::RollingRestart => {
            for id in 1..=3 {
                env.terminate(id);
                env.restart(id);
                let _ = wait_healthy(env, Duration::from_secs(60));
            }
            "RollingRestart: SIGTERM and restart of brokers 1, 2, 3 in turn".into()
        }
        _ => unreachable!("only solo faults"),
    }
}

/// Waits until the cluster is healthy; when `limit` passes first, what was still wrong.
pub fn wait_healthy(env: &mut Env, limit: Duration) -> Result<(), String> {
    let mut last = Ok(());
    if poll_until(limit, Duration::from_millis(200), || {
        last = env.health();
        last.is_ok()
    }) {
        Ok(())
    } else {
        last
    }
}
