//! Replication throttles (KIP-73) as Kafka configures them: which replicas are throttled is a
//! topic's setting — `leader.replication.throttled.replicas` and
//! `follower.replication.throttled.replicas`, each a list of `partition:broker` or `*` — and
//! how fast they may go is a broker's — `leader.replication.throttled.rate` and
//! `follower.replication.throttled.rate` in bytes a second, measured over
//! `replication.quota.window.num` windows of `replication.quota.window.size.seconds`.

use std::time::Duration;

use super::{ConfigError, Props};

/// A topic's throttled replicas: none, every replica (`*`), or the listed `partition:broker`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ThrottledReplicas {
    #[default]
    None,
    All,
    Listed(Vec<(i32, i32)>),
}

/// Reads a throttled replicas list; an error says what is wrong with it.
pub fn parse(text: &str) -> Result<ThrottledReplicas, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(ThrottledReplicas::None);
    }
    if text == "*" {
        return Ok(ThrottledReplicas::All);
    }
    let mut listed = Vec::new();
    for item in text.split(',').map(str::trim) {
        let pair = item
            .split_once(':')
            .and_then(|(p, b)| Some((p.trim().parse().ok()?, b.trim().parse().ok()?)));
        match pair {
            Some((p, b)) if p >= 0 && b >= 0 => listed.push((p, b)),
            _ => {
                return Err(format!(
                    "`{item}` is not partition:broker (a list of them, or `*` alone)"
                ));
            }
        }
    }
    Ok(ThrottledReplicas::Listed(listed))
}

impl ThrottledReplicas {
    /// Whether the replica of `partition` on `broker` is throttled.
    pub fn covers(&self, partition: i32, broker: i32) -> bool {
        match self {
            ThrottledReplicas::None => false,
            ThrottledReplicas::All => true,
            ThrottledReplicas::Listed(l) => l.contains(&(partition, broker)),
        }
    }
}

/// The broker's side: the rates and the windows they are measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicationRates {
    /// Bytes a second this broker serves its throttled followers, as leader.
    pub leader: u64,
    /// Bytes a second this broker fetches for its throttled replicas, as follower.
    pub follower: u64,
    pub windows: (usize, Duration),
}

/// Kafka's default rate: `Long.MAX_VALUE`, no throttle.
pub const UNTHROTTLED: u64 = i64::MAX as u64;

pub(super) fn read(p: &mut Props) -> Result<ReplicationRates, ConfigError> {
    Ok(ReplicationRates {
        leader: p.get("leader.replication.throttled.rate")?,
        follower: p.get("follower.replication.throttled.rate")?,
        windows: (
            p.get("replication.quota.window.num")?,
            Duration::from_secs(p.get("replication.quota.window.size.seconds")?),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_list_forms() {
        assert_eq!(parse(""), Ok(ThrottledReplicas::None));
        assert_eq!(parse("*"), Ok(ThrottledReplicas::All));
        let l = parse("0:1, 0:2,1:3").unwrap();
        assert!(l.covers(0, 2) && l.covers(1, 3) && !l.covers(1, 1));
        assert!(ThrottledReplicas::All.covers(7, 7));
        for bad in ["0", "0:x", "*,0:1", "-1:2", "0:1,"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
