//! ISR-change notifications: a leader that changes a partition's ISR writes a sequential node
//! under `/isr_change_notification`; the controller re-reads those partitions and sends every
//! broker UpdateMetadata, so Metadata answers (and `gregor status`) show the ISR leaders keep.

use crate::protocol::TopicPartition;
use crate::zk::ZkResult;

use super::channel_manager::CommandBatch;
use super::leader_and_isr::refresh;
use super::{ControllerState, Event};
use crate::zk::paths::{self, PartitionList};

impl ControllerState {
    pub fn on_isr_change(&mut self, batch: &mut CommandBatch) -> ZkResult<()> {
        let tx = self.events.clone();
        self.zk.ensure_path(paths::ISR_CHANGE_NOTIFICATION)?;
        let children = self
            .zk
            .get_children_w(paths::ISR_CHANGE_NOTIFICATION, move |_| {
                let _ = tx.send(Event::IsrChange);
            })?;
        let mut changed = Vec::new();
        for child in &children {
            let path = format!("{}/{child}", paths::ISR_CHANGE_NOTIFICATION);
            if let Some(list) = paths::read_json::<PartitionList>(&self.zk, &path)? {
                for p in list.partitions {
                    let tp = TopicPartition::new(p.topic, p.partition);
                    if self.ctx.assignments.contains_key(&tp) {
                        changed.push(tp);
                    }
                }
            }
        }
        refresh(&self.zk, &mut self.ctx, &changed)?;
        for child in &children {
            self.zk
                .delete_if_exists(&format!("{}/{child}", paths::ISR_CHANGE_NOTIFICATION))?;
        }
        if !children.is_empty() {
            batch.update_metadata();
        }
        Ok(())
    }
}
