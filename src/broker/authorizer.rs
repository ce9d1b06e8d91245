//! The authorizer (Kafka's `AclAuthorizer`, ZooKeeper mode): every broker holds all ACLs
//! (`zk::acls`), read at start and again whenever a notice appears under
//! `/kafka-acl-changes` or `/kafka-acl-extended-changes` (one watcher thread per broker,
//! with a re-read every `RECHECK` in case a watch was lost with a session), so a change made
//! through any broker holds on every broker within a ZooKeeper round trip. Each request
//! handler asks `allowed` before it acts; without `authorizer.class.name` the answer is
//! always yes and costs one branch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, bounded, select, unbounded};
use parking_lot::RwLock;

use crate::config::security::AuthorizerConfig;
use crate::network::ConnectionContext;
use crate::security::acl::{AclSet, Operation, ResourceType};
use crate::zk::{ZkClient, ZkError, acls};

const RECHECK: Duration = Duration::from_secs(30);
/// Notices older than this are deleted (Kafka's `changeExpirationMs`).
const EXPIRY: Duration = Duration::from_secs(15 * 60);

pub struct Authorizer {
    broker_id: i32,
    config: Option<AuthorizerConfig>,
    acls: RwLock<Arc<AclSet>>,
    denied: AtomicU64,
}

impl Authorizer {
    pub fn new(broker_id: i32, config: Option<AuthorizerConfig>) -> Authorizer {
        Authorizer {
            broker_id,
            acls: RwLock::new(Arc::new(AclSet {
                super_users: config
                    .as_ref()
                    .map(|c| c.super_users.clone())
                    .unwrap_or_default(),
                allow_if_no_acl: config.as_ref().is_some_and(|c| c.allow_if_no_acl),
                ..Default::default()
            })),
            config,
            denied: AtomicU64::new(0),
        }
    }

    /// Whether ACLs are checked at all.
    pub fn enabled(&self) -> bool {
        self.config.is_some()
    }

    /// Reads every ACL again.
    pub fn reload(&self, zk: &ZkClient) -> Result<(), ZkError> {
        let Some(c) = &self.config else {
            return Ok(());
        };
        let bindings = acls::read_all(zk)?;
        *self.acls.write() = Arc::new(AclSet {
            bindings,
            super_users: c.super_users.clone(),
            allow_if_no_acl: c.allow_if_no_acl,
        });
        Ok(())
    }

    /// Every ACL, as last read.
    pub fn current(&self) -> Arc<AclSet> {
        self.acls.read().clone()
    }

    /// Whether the connection's principal may do `op` on the resource. A denial is counted
    /// and logged (at info, as Kafka's authorizer log does).
    pub fn allowed(
        &self,
        conn: &ConnectionContext,
        op: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.config.is_none() {
            return true;
        }
        let (principal, host) = conn.acl_identity();
        let ok = self
            .acls
            .read()
            .authorize(principal, host, op, resource_type, name);
        if !ok {
            self.denied.fetch_add(1, Ordering::Relaxed);
            log::info!(
                "[Broker {}] Principal = {principal} is Denied operation = {} from host = {host} on resource = {}:{name}",
                self.broker_id,
                op.name(),
                resource_type.name()
            );
        }
        ok
    }

    /// KIP-679: whether the principal may do `op` on some resource of the type.
    pub fn allowed_any(&self, conn: &ConnectionContext, op: Operation, t: ResourceType) -> bool {
        if self.config.is_none() {
            return true;
        }
        let (principal, host) = conn.acl_identity();
        let ok = self.acls.read().allows_any(principal, host, op, t);
        if !ok {
            self.denied.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// Requests refused by an ACL so far.
    pub fn denied(&self) -> u64 {
        self.denied.load(Ordering::Relaxed)
    }

    /// Starts the thread that follows the change notices; dropping the sender stops it.
    pub fn start_watcher(
        self: &Arc<Self>,
        zk: Arc<ZkClient>,
    ) -> Option<(Sender<()>, JoinHandle<()>)> {
        self.config.as_ref()?;
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name(format!("acl-changes-{}", self.broker_id))
            .spawn(move || {
                let (tx, events) = unbounded::<()>();
                loop {
                    for dir in [acls::LITERAL_CHANGES, acls::EXTENDED_CHANGES] {
                        let tx = tx.clone();
                        let _ = zk.ensure_path(dir);
                        if let Err(e) = zk.get_children_w(dir, move |_| {
                            let _ = tx.send(());
                        }) {
                            log::warn!("[Broker {}] cannot watch {dir}: {e:?}", me.broker_id);
                        }
                    }
                    match me.reload(&zk) {
                        Ok(()) => log::debug!("[Broker {}] ACLs read", me.broker_id),
                        Err(e) => {
                            log::warn!("[Broker {}] cannot read the ACLs: {e:?}", me.broker_id)
                        }
                    }
                    let _ = acls::purge_changes(&zk, EXPIRY);
                    select! {
                        recv(stop_rx) -> _ => return,
                        recv(events) -> _ => {}
                        default(RECHECK) => {}
                    }
                    // Several notices in a row are read once.
                    while events.try_recv().is_ok() {}
                }
            })
            .expect("spawn the ACL watcher");
        Some((stop_tx, handle))
    }
}
