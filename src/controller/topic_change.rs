//! Spec section B: `on_topic_change` (topics created or deleted) and `init_leaders`.

use std::collections::BTreeSet;

use crate::zk::{ZkError, ZkResult};

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::election_rules::{Election, init_leader};
use crate::protocol::TopicPartition;
use crate::zk::paths::{self, LeaderAndIsr};
use crate::zk::{ZkClient, pipeline};

impl ControllerState {
    /// Spec B, on_topic_change: the controller keeps the list of existing topics in memory
    /// (the context's assignments) and compares it with `/brokers/topics`.
    pub fn on_topic_change(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        let now: BTreeSet<String> = self.read_topics()?.into_iter().collect();
        let before = self.ctx.topics();
        // step 1: a new topic: read its replica assignment from TopicPath...
        let mut added = Vec::new();
        for topic in now.difference(&before) {
            let Some(replicas) = self.read_topic_assignment(topic)? else {
                continue;
            };
            for (p, ar) in replicas.assignment {
                let tp = TopicPartition::new(topic.clone(), p);
                self.ctx.assignments.insert(tp.clone(), ar);
                added.push(tp);
            }
            log::info!(
                "[Controller {} epoch {}] new topic {topic}",
                self.broker_id,
                self.ctx.epoch
            );
        }
        let new_partitions = self.record_leaders(added)?;
        // step 1.1: ...and init_leaders on all newly created partitions.
        init_leaders(self, &new_partitions, batch)?;
        // step 2: a deleted topic: StopReplica (with delete) to every affected broker.
        for topic in before.difference(&now) {
            for tp in self.ctx.partitions_of(topic) {
                let ar = self.ctx.assignments.remove(&tp).unwrap_or_default();
                self.ctx.leaders.remove(&tp);
                self.ctx.reassigning.remove(&tp);
                for b in ar.iter().filter(|b| self.ctx.is_live(**b)) {
                    batch.stop_replica(*b, true, &tp);
                }
                batch.deleted(tp);
            }
            log::info!(
                "[Controller {} epoch {}] topic {topic} deleted",
                self.broker_id,
                self.ctx.epoch
            );
        }
        Ok(())
    }

    /// Partitions added to an existing topic (`gregor topics --alter --partitions`), as Kafka
    /// 0.8.1's AddPartitionsListener: new partition ids get replicas and leaders like a new
    /// topic's (init_leaders). Existing partitions are left to reassignment, which also
    /// rewrites this node.
    pub fn on_partitions_change(&mut self, topic: &str, batch: &mut CommandBatch) -> ZkResult<()> {
        if !self.ctx.topics().contains(topic) {
            return Ok(()); // a deleted topic, or one on_topic_change has not seen yet
        }
        let Some(replicas) = self.read_topic_assignment(topic)? else {
            return Ok(());
        };
        let mut added = Vec::new();
        for (p, ar) in replicas.assignment {
            let tp = TopicPartition::new(topic.to_owned(), p);
            if !self.ctx.assignments.contains_key(&tp) {
                self.ctx.assignments.insert(tp.clone(), ar);
                added.push(tp);
            }
        }
        if !added.is_empty() {
            log::info!(
                "[Controller {} epoch {}] {topic}: {} partitions added",
                self.broker_id,
                self.ctx.epoch,
                added.len()
            );
            init_leaders(self, &added, batch)?;
        }
        Ok(())
    }

    /// Reads the leaderAndISR nodes of `tps` (pipelined) into the context; returns the
    /// partitions that have none yet.
    pub fn record_leaders(&mut self, tps: Vec<TopicPartition>) -> ZkResult<Vec<TopicPartition>> {
        let states = super::leader_and_isr::read_many(&self.zk, &tps)?;
        let mut without = Vec::new();
        for (tp, l) in tps.into_iter().zip(states) {
            match l {
                Some(l) => {
                    self.ctx.leaders.insert(tp, l);
                }
                None => without.push(tp),
            }
        }
        Ok(without)
    }

    /// Reads a topic's assignment, with its reassignments in progress, and watches it for
    /// added partitions.
    pub fn read_topic_assignment(&self, topic: &str) -> ZkResult<Option<paths::TopicReplicas>> {
        let tx = self.events.clone();
        let t = topic.to_owned();
        let path = paths::topic_path(topic);
        match self.zk.get_data_w(&path, move |ev| {
            if ev.event_type == crate::zk::WatchedEventType::NodeDataChanged {
                let _ = tx.send(super::Event::PartitionsChange(t.clone()));
            }
        }) {
            Ok((data, _)) => paths::TopicReplicas::parse(&path, &data).map(Some),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads `/brokers/topics` and re-installs the child watch that feeds TopicChange events.
    pub fn read_topics(&self) -> ZkResult<Vec<String>> {
        let tx = self.events.clone();
        self.zk.ensure_path(paths::BROKER_TOPICS)?;
        self.zk.get_children_w(paths::BROKER_TOPICS, move |_| {
            let _ = tx.send(super::Event::TopicChange);
        })
    }
}

/// Spec B, init_leaders(set_p). The elections are made in memory, in order; the writes of
/// step 1.2 go to ZooKeeper pipelined (`zk::pipeline`), and their outcomes are applied in
/// order again.
pub fn init_leaders(
    c: &mut ControllerState,
    set_p: &[TopicPartition],
    batch: &mut CommandBatch,
) -> ZkResult<()> {
    // step 0: the live brokers (kept current by on_broker_change).
    let eligible = c.ctx.eligible_brokers();
    // step 1: for each partition P in set_p...
    let plans: Vec<(TopicPartition, Vec<i32>, LeaderAndIsr)> = set_p
        .iter()
        .map(|tp| {
            let ar = c.ctx.assignments.get(tp).cloned().unwrap_or_default();
            // step 1.1: a live replica of AR leads; every live replica of AR is in the ISR.
            let (leader, isr) = match init_leader(&ar, |r| eligible.contains(&r)) {
                Election::Leader { leader, isr } => (leader, isr),
                Election::NoLeader { isr } => (-1, isr),
            };
            let l = LeaderAndIsr {
                leader,
                leader_epoch: 0,
                isr,
                controller_epoch: c.ctx.epoch,
            };
            (tp.clone(), ar, l)
        })
        .collect();
    // step 1.2: write the leader and ISR to the leaderAndISR path.
    let zk = &c.zk;
    let session = c.ctx.session;
    let outcomes = pipeline::map(&plans, |(tp, _, l)| first_write(zk, session, tp, l));
    for ((tp, ar, l), outcome) in plans.into_iter().zip(outcomes) {
        match outcome? {
            FirstWrite::Written(v) => {
                log::info!(
                    "[Controller epoch {}] {}-{}: initial leader {} isr {:?}",
                    c.ctx.epoch,
                    tp.topic,
                    tp.partition,
                    l.leader,
                    l.isr
                );
                c.ctx.leaders.insert(tp.clone(), (l, v));
            }
            FirstWrite::Existing(cur, v) => {
                c.ctx.leaders.insert(tp.clone(), (cur, v));
            }
            FirstWrite::Raced => {
                super::leader_and_isr::refresh(&c.zk, &mut c.ctx, std::slice::from_ref(&tp))?;
            }
            // The topic was deleted meanwhile: the TopicChange it caused deletes the partition.
            FirstWrite::TopicGone => {
                log::info!(
                    "[Controller epoch {}] {}-{}: topic deleted before its first leader",
                    c.ctx.epoch,
                    tp.topic,
                    tp.partition
                );
                continue;
            }
        }
        // step 2: LeaderAndIsr to the affected brokers.
        batch.leader_and_isr(&c.ctx, &ar, &tp);
    }
    Ok(())
}

/// What the first write of a partition's leaderAndISR node found.
enum FirstWrite {
    /// Written; the node's version.
    Written(i32),
    /// A leader was there already (a previous controller's): kept.
    Existing(LeaderAndIsr, i32),
    /// Someone wrote between our read and our write: read it again.
    Raced,
    TopicGone,
}

/// Step 1.2 for one partition: write `l` unless the node already names a leader or an ISR
/// (an empty node — no live replica when the topic was made — is overwritten).
fn first_write(
    zk: &ZkClient,
    session: i64,
    tp: &TopicPartition,
    l: &LeaderAndIsr,
) -> ZkResult<FirstWrite> {
    let version = match paths::leader_and_isr(zk, &tp.topic, tp.partition)? {
        Some((cur, v)) if !(cur.leader == -1 && cur.isr.is_empty()) => {
            return Ok(FirstWrite::Existing(cur, v));
        }
        Some((_, v)) => Some(v),
        None => None,
    };
    super::leader_and_isr::in_session(zk, session)?;
    match paths::write_leader_and_isr(zk, &tp.topic, tp.partition, l, version) {
        Ok(v) => Ok(FirstWrite::Written(v)),
        Err(ZkError::NodeExists) | Err(ZkError::BadVersion) => Ok(FirstWrite::Raced),
        Err(ZkError::NoNode) => Ok(FirstWrite::TopicGone),
        Err(e) => Err(e),
    }
}
