//! RegisterRequest: a consumer joins its group. The coordinator checks the request, keeps the
//! connection as the consumer's session, creates `/consumers/groups/[group]/ids/[consumer]`
//! (which fires GroupMemberChangeListener, hence a rebalance), answers, and runs the ping loop
//! on the connection's thread until the consumer leaves or is declared dead.

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use super::assignment::TopicFilter;
use super::session::{ConsumerSession, OffsetReset, SessionParams, write_register_response};
use super::{Coordinator, Term};
use crate::protocol::ErrorCode;
use crate::protocol::coordinator::{RegisterRequest, Subscription};
use crate::zk::admin::validate_topic_name;
use crate::zk::groups::{self, ConsumerRegistration};

const PING_INTERVAL_MS: std::ops::RangeInclusive<i32> = 10..=60_000;
const MAX_PING_RETRIES: std::ops::RangeInclusive<i16> = 0..=100;
const STREAMS: std::ops::RangeInclusive<i32> = 1..=1000;

/// A group or consumer id becomes a ZooKeeper path segment: it must be one.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && name.len() <= 249
}

/// Why a RegisterRequest cannot be accepted, as the error code to answer and a log message.
fn check(req: &RegisterRequest) -> Result<(OffsetReset, TopicFilter), (ErrorCode, String)> {
    let invalid = |m: String| Err((ErrorCode::InvalidRequest, m));
    if !valid_name(&req.group_id) {
        return Err((
            ErrorCode::InvalidGroupId,
            format!("bad group id {:?}", req.group_id),
        ));
    }
    if !valid_name(&req.consumer_id) {
        return invalid(format!("bad consumer id {:?}", req.consumer_id));
    }
    let Some(reset) = OffsetReset::parse(&req.auto_offset_reset) else {
        return invalid(format!(
            "auto_offset_reset {:?} is neither smallest nor largest",
            req.auto_offset_reset
        ));
    };
    if !PING_INTERVAL_MS.contains(&req.ping_interval_ms) {
        return invalid(format!(
            "ping_interval_ms {} outside {PING_INTERVAL_MS:?}",
            req.ping_interval_ms
        ));
    }
    if !MAX_PING_RETRIES.contains(&req.max_ping_retries) {
        return invalid(format!(
            "max_ping_retries {} outside {MAX_PING_RETRIES:?}",
            req.max_ping_retries
        ));
    }
    match &req.subscription {
        Subscription::Static(t) if t.is_empty() => return invalid("no topics".into()),
        Subscription::Static(t) => {
            for (topic, n) in t {
                if validate_topic_name(topic).is_err() {
                    return Err((ErrorCode::InvalidTopic, format!("bad topic {topic:?}")));
                }
                if !STREAMS.contains(n) {
                    return invalid(format!("{n} streams for {topic}, outside {STREAMS:?}"));
                }
            }
        }
        Subscription::Whitelist { streams, .. } if !STREAMS.contains(streams) => {
            return invalid(format!("{streams} streams, outside {STREAMS:?}"));
        }
        Subscription::Whitelist { .. } => {}
    }
    let filter = TopicFilter::new(&req.subscription)
        .map_err(|e| (ErrorCode::InvalidTopic, format!("bad whitelist: {e}")))?;
    Ok((reset, filter))
}

impl Coordinator {
    /// Serves a RegisterRequest on `stream`, which from now on belongs to the session.
    pub fn register(&self, req: RegisterRequest, stream: TcpStream) {
        let peer = stream.peer_addr().ok();
        let (reset, filter) = match check(&req) {
            Ok(v) => v,
            Err((code, why)) => {
                log::warn!(
                    "[Coordinator {}] refusing RegisterRequest from {peer:?}: {why}",
                    self.broker_id
                );
                return answer_error(stream, code);
            }
        };
        let Some(term) = self.current_term() else {
            return answer_error(stream, ErrorCode::NotCoordinator);
        };
        // A group is of one kind: one with Kafka-protocol members takes no RegisterRequest.
        if term
            .kafka_group(&req.group_id)
            .is_some_and(|g| !g.data.lock().members.is_empty())
        {
            log::warn!(
                "[Coordinator {}] refusing RegisterRequest from {peer:?}: group {} has Kafka-protocol members",
                self.broker_id,
                req.group_id
            );
            return answer_error(stream, ErrorCode::InconsistentGroupProtocol);
        }
        let session = ConsumerSession::new(
            SessionParams {
                group: req.group_id,
                consumer_id: req.consumer_id,
                auto_commit: req.auto_commit,
                offset_reset: reset,
                ping_interval: Duration::from_millis(req.ping_interval_ms as u64),
                max_ping_retries: req.max_ping_retries as u32,
                subscription: req.subscription,
                filter,
            },
            stream,
        );
        match session {
            Ok(s) => term.serve(Arc::new(s)),
            Err(e) => log::warn!(
                "[Coordinator {}] RegisterRequest from {peer:?}: {e}",
                self.broker_id
            ),
        }
    }
}

fn answer_error(mut stream: TcpStream, code: ErrorCode) {
    let _ = write_register_response(&mut stream, code.code(), Duration::ZERO);
}

impl Term {
    fn serve(&self, s: Arc<ConsumerSession>) {
        let (g, c) = (s.group.clone(), s.consumer_id.clone());
        // In the session map before its node exists, so the rebalance its node triggers sees it.
        let replaced = self
            .sessions
            .lock()
            .entry(g.clone())
            .or_default()
            .insert(c.clone(), s.clone());
        if let Some(old) = replaced {
            log::info!(
                "[Coordinator {}] group {g}: {c} registered again; closing its old connection",
                self.broker_id
            );
            old.close();
        }
        // The connection stays locked until the RegisterResponse is out: the rebalance that
        // the new node triggers must not send its StopRequest ahead of it.
        let mut conn = s.lock();
        let reg = ConsumerRegistration::new(&s.subscription);
        if let Err(e) = groups::register_member(&self.zk, &g, &c, &reg) {
            log::error!(
                "[Coordinator {}] group {g}: cannot register {c}: {e:?}",
                self.broker_id
            );
            self.remove_session(&s);
            let _ = conn.answer_register(ErrorCode::UnknownServerError.code(), Duration::ZERO);
            return;
        }
        let answered = conn.answer_register(ErrorCode::None.code(), self.config.rebalance_timeout);
        drop(conn);
        if answered.is_err() {
            self.end_session(&s, "gone before its RegisterResponse");
            return;
        }
        log::info!(
            "[Coordinator {}] group {g}: {c} registered ({:?}, ping every {:?}, {} retries)",
            self.broker_id,
            s.subscription,
            s.ping_interval,
            s.max_ping_retries
        );
        let why = s.run_ping_loop(&|offsets| {
            if let Some(owned) = s.started() {
                self.commit_offsets(&s, &owned, offsets);
            }
        });
        self.end_session(&s, &why);
    }

    /// Removes `s` from the map if it is still the session registered under its id.
    fn remove_session(&self, s: &Arc<ConsumerSession>) -> bool {
        let mut all = self.sessions.lock();
        let Some(group) = all.get_mut(&s.group) else {
            return false;
        };
        if group
            .get(&s.consumer_id)
            .is_some_and(|cur| Arc::ptr_eq(cur, s))
        {
            group.remove(&s.consumer_id);
            return true;
        }
        false
    }

    /// The consumer left or died: its node goes, which rebalances the group.
    fn end_session(&self, s: &Arc<ConsumerSession>, why: &str) {
        s.close();
        if self.remove_session(s) && !self.is_ended() {
            log::info!(
                "[Coordinator {}] group {}: {} removed: {why}",
                self.broker_id,
                s.group,
                s.consumer_id
            );
            self.delete_member_node(s);
        }
    }
}
