//! Which leader and ISR a partition gets, one function per situation — pure, so each rule is a
//! one-file question with its own unit tests. Replicas are always tried in assignment (AR)
//! order, so the preferred replica (AR's first) wins whenever it qualifies.

/// The outcome of a leader election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Election {
    Leader {
        leader: i32,
        isr: Vec<i32>,
    },
    /// No eligible replica: leader -1, with this ISR kept so that a returning member can lead.
    NoLeader {
        isr: Vec<i32>,
    },
}

fn in_ar_order(assigned: &[i32], pick: impl Fn(i32) -> bool) -> Vec<i32> {
    assigned.iter().copied().filter(|r| pick(*r)).collect()
}

/// Spec A step 3.2, a partition whose leader died:
/// 1. some ISR member is live → the first live ISR member leads; ISR = the live ISR members;
/// 2. else, only with unclean election, a live assigned replica leads alone (potential data loss);
/// 3. else leader -1, ISR unchanged (the partition waits for an ISR member to return).
pub fn offline_partition_leader(
    assigned: &[i32],
    isr: &[i32],
    live: impl Fn(i32) -> bool,
    unclean: bool,
) -> Election {
    let live_isr = in_ar_order(assigned, |r| isr.contains(&r) && live(r));
    if let Some(&leader) = live_isr.first() {
        return Election::Leader {
            leader,
            isr: live_isr,
        };
    }
    if unclean && let Some(&leader) = in_ar_order(assigned, &live).first() {
        return Election::Leader {
            leader,
            isr: vec![leader],
        };
    }
    Election::NoLeader { isr: isr.to_vec() }
}

/// Spec B step 1.1, a new partition: a live assigned replica leads; ISR = every live assigned
/// replica.
pub fn init_leader(assigned: &[i32], live: impl Fn(i32) -> bool) -> Election {
    let live_ar = in_ar_order(assigned, live);
    match live_ar.first() {
        Some(&leader) => Election::Leader {
            leader,
            isr: live_ar,
        },
        None => Election::NoLeader { isr: Vec::new() },
    }
}

/// Preferred replica election: the first assigned replica, if it is live and in the ISR.
pub fn preferred_leader(assigned: &[i32], isr: &[i32], live: impl Fn(i32) -> bool) -> Option<i32> {
    assigned
        .first()
        .copied()
        .filter(|p| isr.contains(p) && live(*p))
}

/// Controlled shutdown of `leaving`: another live ISR member leads and `leaving` leaves the
/// ISR. `None` when no other ISR member is live (the partition stays where it is).
pub fn controlled_shutdown_leader(
    assigned: &[i32],
    isr: &[i32],
    live: impl Fn(i32) -> bool,
    leaving: i32,
) -> Option<Election> {
    let rest = in_ar_order(assigned, |r| r != leaving && isr.contains(&r) && live(r));
    rest.first().map(|&leader| Election::Leader {
        leader,
        isr: rest.clone(),
    })
}

/// Reassignment: the first replica of the new assignment that is live and in the ISR.
pub fn reassigned_leader(
    new_assigned: &[i32],
    isr: &[i32],
    live: impl Fn(i32) -> bool,
) -> Option<i32> {
    new_assigned
        .iter()
        .copied()
        .find(|r| isr.contains(r) && live(*r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ids: &'static [i32]) -> impl Fn(i32) -> bool {
        move |r| ids.contains(&r)
    }

    #[test]
    fn offline_partition_prefers_live_isr_in_assignment_order() {
        let e = offline_partition_leader(&[1, 2, 3], &[3, 2], live(&[2, 3]), false);
        assert_eq!(
            e,
            Election::Leader {
                leader: 2,
                isr: vec![2, 3]
            }
        );
    }

    #[test]
    fn offline_partition_without_live_isr_waits_unless_unclean() {
        assert_eq!(
            offline_partition_leader(&[1, 2, 3], &[1], live(&[2, 3]), false),
            Election::NoLeader { isr: vec![1] }
        );
        assert_eq!(
            offline_partition_leader(&[1, 2, 3], &[1], live(&[3]), true),
            Election::Leader {
                leader: 3,
                isr: vec![3]
            }
        );
        assert_eq!(
            offline_partition_leader(&[1, 2], &[1], live(&[]), true),
            Election::NoLeader { isr: vec![1] }
        );
    }

    #[test]
    fn init_takes_every_live_replica() {
        assert_eq!(
            init_leader(&[3, 1, 2], live(&[1, 2])),
            Election::Leader {
                leader: 1,
                isr: vec![1, 2]
            }
        );
        assert_eq!(
            init_leader(&[3], live(&[1])),
            Election::NoLeader { isr: vec![] }
        );
    }

    #[test]
    fn preferred_controlled_shutdown_and_reassignment_rules() {
        assert_eq!(preferred_leader(&[1, 2], &[2, 1], live(&[1, 2])), Some(1));
        assert_eq!(preferred_leader(&[1, 2], &[2], live(&[1, 2])), None);
        assert_eq!(
            controlled_shutdown_leader(&[1, 2, 3], &[1, 2, 3], live(&[1, 2, 3]), 1),
            Some(Election::Leader {
                leader: 2,
                isr: vec![2, 3]
            })
        );
        assert_eq!(controlled_shutdown_leader(&[1], &[1], live(&[1]), 1), None);
        assert_eq!(
            reassigned_leader(&[4, 5], &[1, 5], live(&[1, 4, 5])),
            Some(5)
        );
    }
}
