//! What a session has been through, for the metrics: Kafka's `SessionExpireListener` meters
//! (sync connects, disconnects, expires) and whether the session is connected now.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Default)]
pub struct SessionStats {
    connected: AtomicBool,
    sync_connects: AtomicU64,
    disconnects: AtomicU64,
    expires: AtomicU64,
}

impl SessionStats {
    /// Connected, in the session we had or in a new one.
    pub(super) fn connected(&self) {
        self.connected.store(true, Ordering::Relaxed);
        self.sync_connects.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection was lost; the session may still live.
    pub(super) fn disconnected(&self) {
        if self.connected.swap(false, Ordering::Relaxed) {
            self.disconnects.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The session is gone; a new one is being opened.
    pub(super) fn expired(&self) {
        self.disconnected();
        self.expires.fetch_add(1, Ordering::Relaxed);
    }

    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// (sync connects, disconnects, expires) so far.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.sync_connects.load(Ordering::Relaxed),
            self.disconnects.load(Ordering::Relaxed),
            self.expires.load(Ordering::Relaxed),
        )
    }
}
