//! What this process owes the servers it forwarded legacy elicitations for: a way to end each
//! server's call if the answer never comes through the gateway.
//!
//! Owns the local half of a pending elicitation (the shared half, what was asked, is in the
//! state store): the channel back to the server, the exchange it came in, and the server's
//! request id, bounded in count and time. When an entry expires or is evicted, the caller takes
//! the elicitation from the store for release; only if it was still pending (nobody answered
//! through any replica) is the server told.

use super::judge::ServerChannel;
use super::Exchange;
use crate::state::table::{Dropped, TtlTable};
use crate::state::PendingKey;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How to end a server's call for one elicitation.
pub struct Release {
    pub channel: ServerChannel,
    pub exchange: Arc<Exchange>,
    pub id: serde_json::Value,
}

/// A release the table let go of, and why.
pub type Due = (PendingKey, Release, Dropped);

/// The releases this process holds.
pub struct Releases {
    table: Mutex<TtlTable<PendingKey, Release>>,
}

impl Releases {
    pub fn new(capacity: usize) -> Self {
        Self {
            table: Mutex::new(TtlTable::new(capacity).reporting()),
        }
    }

    fn table(&self) -> MutexGuard<'_, TtlTable<PendingKey, Release>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `release` for `ttl`; returns what was evicted to make room.
    pub fn insert(&self, key: PendingKey, release: Release, ttl: Duration) -> Vec<Due> {
        let mut table = self.table();
        table.insert(key, release, Instant::now(), ttl);
        table.take_dropped_entries()
    }

    /// The release for `key`, if this process holds it (its elicitation was answered or its
    /// stream ended).
    /// (An expired entry is not returned: the table keeps it for the next sweep, which owes
    /// its server the release.)
    pub fn remove(&self, key: &PendingKey) -> Option<Release> {
        self.table().remove(key, Instant::now())
    }

    /// Releases whose time ran out (and any dropped since the last call).
    pub fn sweep(&self) -> Vec<Due> {
        let mut table = self.table();
        table.sweep(Instant::now());
        table.take_dropped_entries()
    }

    /// Held releases, for the pending gauge.
    pub fn len(&self) -> usize {
        self.table().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
