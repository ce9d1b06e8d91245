//! Spec section D, `on_controller_failover`: this broker just won `/controller`.

use crate::zk::{ZkError, ZkResult};

use super::ControllerState;
use super::channel_manager::CommandBatch;
use super::context::ControllerContext;
use super::topic_change::init_leaders;
use crate::protocol::TopicPartition;
use crate::zk::paths;

impl ControllerState {
    /// Steps 1 and 2 (create `/controller`, return if that fails) are the election's; this is
    /// what follows a win.
    /// `session`: the ZooKeeper session that won the election; the term writes only in it.
    pub fn on_controller_failover(&mut self, session: i64) -> ZkResult<()> {
        let started = std::time::Instant::now();
        self.ctx = ControllerContext {
            session,
            ..Default::default()
        };
        self.ctx.epoch = self.increment_controller_epoch()?;
        log::info!(
            "[Controller {} epoch {}] became controller",
            self.broker_id,
            self.ctx.epoch
        );
        let mut batch = CommandBatch::default();
        // The broker list and topic assignments, installing their watches.
        for (b, endpoints, session) in self.read_live_brokers()? {
            self.channels.add_broker(&b);
            self.ctx.broker_sessions.insert(b.id, session);
            self.ctx.endpoints.insert(b.id, endpoints);
            self.ctx.live_brokers.insert(b.id, b);
        }
        let mut partitions: Vec<TopicPartition> = Vec::new();
        for topic in self.read_topics()? {
            let Some(replicas) = self.read_topic_assignment(&topic)? else {
                continue;
            };
            for (p, ar) in replicas.assignment {
                let tp = TopicPartition::new(topic.clone(), p);
                self.ctx.assignments.insert(tp.clone(), ar);
                partitions.push(tp);
            }
            // Reassignments a former controller had begun (step 7 goes on with them).
            for (p, moving) in replicas.moving {
                self.ctx
                    .reassigning
                    .insert(TopicPartition::new(topic.clone(), p), moving);
            }
        }
        // step 3: read the LeaderAndISR path of each partition (pipelined).
        let without_leader = self.record_leaders(partitions)?;
        // step 4: LeaderAndIsr with INIT to every live broker, each with all its partitions.
        let ids: Vec<i32> = self.ctx.live_brokers.keys().copied().collect();
        for id in ids {
            batch.init(id);
            for tp in self.ctx.partitions_on(id) {
                batch.leader_and_isr(&self.ctx, &[id], &tp);
            }
        }
        // step 5: on_broker_change().
        self.on_broker_change(&mut batch)?;
        // step 6: init_leaders() for the partitions without a leader.
        init_leaders(self, &without_leader, &mut batch)?;
        // step 7: on_partitions_reassigned(), and pending preferred-replica elections.
        self.on_partitions_reassigned(&mut batch)?;
        self.on_preferred_replica_election(&mut batch)?;
        // ISR changes announced while there was no controller, and the watch for new ones.
        self.on_isr_change(&mut batch)?;
        batch.update_metadata();
        batch.send(&self.ctx, &self.channels, self.broker_id);
        log::info!(
            "[Controller {} epoch {}] failover done in {} ms: {} partitions, {} live brokers",
            self.broker_id,
            self.ctx.epoch,
            started.elapsed().as_millis(),
            self.ctx.assignments.len(),
            self.ctx.live_brokers.len()
        );
        Ok(())
    }

    /// `/controller_epoch` + 1, written conditionally so two controllers never share an epoch.
    fn increment_controller_epoch(&self) -> ZkResult<i32> {
        loop {
            match self.zk.get_data(paths::CONTROLLER_EPOCH) {
                Ok((data, stat)) => {
                    let current: i32 = std::str::from_utf8(&data)
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(0);
                    let next = current + 1;
                    match self.zk.set_data(
                        paths::CONTROLLER_EPOCH,
                        next.to_string().into_bytes(),
                        Some(stat.version),
                    ) {
                        Ok(_) => return Ok(next),
                        Err(ZkError::BadVersion) => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(ZkError::NoNode) => match self
                    .zk
                    .create_persistent(paths::CONTROLLER_EPOCH, b"1".to_vec())
                {
                    Ok(()) => return Ok(1),
                    Err(ZkError::NodeExists) => continue,
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    }
}
