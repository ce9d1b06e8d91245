//! coordinatorStartup steps 1–4 and 6, and the four listeners.
//!
//! ZooKeeper watches fire once; each listener re-arms its watch by reading the node again
//! with a new watch before acting, so no change between the firing and the read is missed.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::zk::{WatchedEvent, WatchedEventType, ZkError, ZkResult};
use crossbeam_channel::select;
use regex::Regex;

use super::assignment::TopicFilter;
use super::{ListenerEvent, Term};
use crate::zk::groups::{self, GROUPS};
use crate::zk::paths::{BROKER_TOPICS, topic_path};

/// What a group's members are interested in, read from their ZooKeeper nodes.
struct GroupInterest {
    topics: BTreeSet<String>,
    patterns: Vec<Regex>,
    has_members: bool,
}

impl Term {
    /// coordinatorStartup steps 1–4 and 6 (step 5 is `Coordinator::startup`).
    pub(super) fn startup(self: &Arc<Self>) -> ZkResult<()> {
        // The listener thread runs the listeners that steps 3 and 4 register.
        self.spawn("coordinator-listeners", |t| t.run_listeners());
        // step 3.1 (before step 1, so that no topic created in between is missed)
        let topics = self.watch_topics()?;
        // step 1: read all the topics and initialise consumerGroupsPerTopic
        {
            let mut per_topic = self.consumer_groups_per_topic.lock();
            for t in &topics {
                per_topic.entry(t.clone()).or_default();
            }
        }
        *self.known_topics.lock() = topics.iter().cloned().collect();
        // step 3.2
        for t in &topics {
            self.watch_topic_partitions(t)?;
        }
        // step 4.1
        let groups = self.watch_groups()?;
        *self.known_groups.lock() = groups.iter().cloned().collect();
        // step 2: read all the consumer groups (a Kafka-protocol group carries on its
        // stored generation)
        for g in &groups {
            self.load_kafka_group(g)?;
            // step 4.2
            self.watch_group_members(g)?;
            // steps 2.1 and 2.2
            self.update_group_interest(g)?;
            // step 2.3: always try to rebalance every group
            self.request_rebalance(g);
        }
        // step 6
        self.spawn("rebalance-request-handler", |t| t.run_request_handler());
        self.loaded
            .store(true, std::sync::atomic::Ordering::Release);
        log::info!(
            "[Coordinator {}] started: {} topics, {} groups",
            self.broker_id,
            topics.len(),
            groups.len()
        );
        Ok(())
    }

    fn spawn(self: &Arc<Self>, name: &str, f: fn(&Term)) {
        let t = self.clone();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || f(&t))
            .expect("spawn coordinator thread");
    }

    fn run_listeners(&self) {
        loop {
            select! {
                recv(self.stop_rx) -> _ => return,
                recv(self.events_rx) -> ev => {
                    let Ok(ev) = ev else { return };
                    if self.is_ended() {
                        return;
                    }
                    let res = match &ev {
                        ListenerEvent::GroupChange => self.handle_group_change(),
                        ListenerEvent::GroupMemberChange(g) => self.handle_group_member_change(g),
                        ListenerEvent::TopicChange => self.handle_topic_change(),
                        ListenerEvent::TopicPartitionChange(t) => {
                            self.handle_topic_partition_change(t)
                        }
                    };
                    if let Err(e) = res {
                        log::warn!("[Coordinator {}] handling {ev:?}: {e:?}", self.broker_id);
                    }
                }
            }
        }
    }

    fn watcher(&self, ev: ListenerEvent) -> impl Fn(WatchedEvent) + Send + 'static {
        let tx = self.events.clone();
        let ev = std::sync::Mutex::new(Some(ev));
        move |w: WatchedEvent| {
            if w.event_type != WatchedEventType::None
                && let Some(e) = ev.lock().ok().and_then(|mut e| e.take())
            {
                let _ = tx.send(e);
            }
        }
    }

    fn watch_topics(&self) -> ZkResult<Vec<String>> {
        self.zk.ensure_path(BROKER_TOPICS)?;
        let mut t = self
            .zk
            .get_children_w(BROKER_TOPICS, self.watcher(ListenerEvent::TopicChange))?;
        t.sort();
        Ok(t)
    }

    /// Children of `/brokers/topics/[topic]` are its partitions (their leaderAndISR nodes
    /// live below them). `false` when the topic is gone.
    fn watch_topic_partitions(&self, topic: &str) -> ZkResult<bool> {
        let ev = ListenerEvent::TopicPartitionChange(topic.to_owned());
        match self.zk.get_children_w(&topic_path(topic), self.watcher(ev)) {
            Ok(_) => Ok(true),
            Err(ZkError::NoNode) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn watch_groups(&self) -> ZkResult<Vec<String>> {
        self.zk.ensure_path(GROUPS)?;
        let mut g = self
            .zk
            .get_children_w(GROUPS, self.watcher(ListenerEvent::GroupChange))?;
        g.sort();
        Ok(g)
    }

    /// A group made by OffsetCommit alone has no `ids` yet: watch for its creation instead.
    fn watch_group_members(&self, group: &str) -> ZkResult<()> {
        let path = groups::ids_path(group);
        let ev = || ListenerEvent::GroupMemberChange(group.to_owned());
        match self.zk.get_children_w(&path, self.watcher(ev())) {
            Ok(_) => Ok(()),
            Err(ZkError::NoNode) => match self.zk.exists_w(&path, self.watcher(ev()))? {
                // Created between the two calls: the exists watch will fire on its next change,
                // so look at it now as a member change.
                Some(_) => self.events.send(ev()).map_err(|_| ZkError::SystemError),
                None => Ok(()),
            },
            Err(e) => Err(e),
        }
    }

    /// Reads the group's members and records their interest: steps 2.1/2.2 of startup, 3/4 of
    /// GroupChangeListener, 1 of GroupMemberChangeListener. Topics no member wants any more
    /// lose the group.
    fn update_group_interest(&self, group: &str) -> ZkResult<GroupInterest> {
        let mut interest = GroupInterest {
            topics: self.kafka_group_topics(group),
            patterns: Vec::new(),
            has_members: false,
        };
        for m in groups::members(&self.zk, group)? {
            interest.has_members = true;
            let Some(sub) = m.registration.subscription() else {
                continue;
            };
            match TopicFilter::new(&sub) {
                Ok(TopicFilter::Static(t)) => interest.topics.extend(t.into_keys()),
                Ok(TopicFilter::Whitelist { regex, .. }) => interest.patterns.push(regex),
                Err(e) => log::warn!(
                    "[Coordinator {}] group {group}, consumer {}: bad pattern: {e}",
                    self.broker_id,
                    m.consumer_id
                ),
            }
        }
        {
            let mut per_topic = self.consumer_groups_per_topic.lock();
            for (topic, gs) in per_topic.iter_mut() {
                if !interest.topics.contains(topic) {
                    gs.remove(group);
                }
            }
            for t in &interest.topics {
                per_topic
                    .entry(t.clone())
                    .or_default()
                    .insert(group.to_owned());
            }
        }
        let mut wild = self.groups_with_wildcard_topics.lock();
        if interest.patterns.is_empty() {
            wild.remove(group);
        } else {
            wild.insert(group.to_owned(), interest.patterns.clone());
        }
        Ok(interest)
    }

    /// The groups interested in `topic`: by name, or by a wildcard pattern that matches it.
    fn groups_interested_in(&self, topic: &str) -> BTreeSet<String> {
        let mut out = self
            .consumer_groups_per_topic
            .lock()
            .get(topic)
            .cloned()
            .unwrap_or_default();
        for (g, patterns) in self.groups_with_wildcard_topics.lock().iter() {
            if patterns.iter().any(|p| p.is_match(topic)) {
                out.insert(g.clone());
            }
        }
        out
    }

    /// GroupChangeListener.handleChildChange.
    fn handle_group_change(&self) -> ZkResult<()> {
        let now = self.watch_groups()?;
        // step 1: the newly added groups (group nodes are persistent: none is deleted)
        let added: Vec<String> = {
            let mut known = self.known_groups.lock();
            now.into_iter()
                .filter(|g| known.insert(g.clone()))
                .collect()
        };
        for g in added {
            // step 2
            self.watch_group_members(&g)?;
            // steps 3 and 4
            let interest = self.update_group_interest(&g)?;
            // step 5: rebalance when the group wants a topic that exists
            let known = self.known_topics.lock().clone();
            let wants_existing = interest.topics.iter().any(|t| known.contains(t))
                || known
                    .iter()
                    .any(|t| interest.patterns.iter().any(|p| p.is_match(t)));
            if wants_existing {
                self.request_rebalance(&g);
            } else {
                self.groups_being_rebalanced
                    .lock()
                    .entry(g.clone())
                    .or_insert_with(|| Arc::new(false.into()));
            }
            log::info!("[Coordinator {}] new group {g}", self.broker_id);
        }
        Ok(())
    }

    /// GroupMemberChangeListener.handleChildChange.
    fn handle_group_member_change(&self, group: &str) -> ZkResult<()> {
        self.watch_group_members(group)?;
        // step 1
        let interest = self.update_group_interest(group)?;
        // step 2: an empty group needs nothing
        if interest.has_members {
            self.try_request_rebalance(group);
        }
        Ok(())
    }

    /// TopicChangeListener.handleChildChange.
    fn handle_topic_change(&self) -> ZkResult<()> {
        let now: BTreeSet<String> = self.watch_topics()?.into_iter().collect();
        // step 1: the newly added topics. gregor can delete topics, so deleted ones are
        // handled too: the groups reading them rebalance (check 3.3 then drops them).
        let (added, removed): (Vec<String>, Vec<String>) = {
            let mut known = self.known_topics.lock();
            let added = now.difference(&known).cloned().collect();
            let removed = known.difference(&now).cloned().collect();
            *known = now;
            (added, removed)
        };
        for t in &added {
            // step 2.1
            self.watch_topic_partitions(t)?;
            // step 2.2
            for g in self.groups_interested_in(t) {
                self.kafka_group_wants_rebalance(&g, &format!("topic {t} created"));
                self.try_request_rebalance(&g);
            }
        }
        for t in &removed {
            for g in self.groups_interested_in(t) {
                self.kafka_group_wants_rebalance(&g, &format!("topic {t} deleted"));
                self.try_request_rebalance(&g);
            }
        }
        Ok(())
    }

    /// TopicPartitionChangeListener.handleChildChange.
    fn handle_topic_partition_change(&self, topic: &str) -> ZkResult<()> {
        if self.watch_topic_partitions(topic)? {
            for g in self.groups_interested_in(topic) {
                let why = format!("partitions of {topic} changed");
                self.kafka_group_wants_rebalance(&g, &why);
                self.try_request_rebalance(&g);
            }
        }
        Ok(())
    }
}
