//! What the gateway remembers between messages, all of it bounded in size and time:
//!
//! - **sessions**: the elicitation modes a legacy client declared in `initialize`, by route and
//!   `Mcp-Session-Id` (sliding expiry);
//! - **pending**: legacy elicitations forwarded to a client and not yet answered, by route,
//!   session and the server's request id; **answered** keeps recently answered ids so a
//!   replayed answer is recognised;
//! - **url_ids**: 2025-11-25 URL-mode `elicitationId`s, to vet completion notifications;
//! - **asked**: 2026-07-28 `inputRequests` forwarded to a client, by a hash of the
//!   `requestState` (or principal + method + name, or task id), to vet the retry's
//!   `inputResponses`;
//! - **declined**: fingerprints of elicitations the user declined or cancelled, per scope;
//! - **rate**: elicitations per scope in the current minute.
//!
//! Plain data: the caller passes the time in and holds the lock. The tables of asked
//! elicitations are bounded in bytes too (`limits.max_pending_bytes`: a hostile schema must
//! not make each entry cost megabytes), and the legacy pending table reports what it drops
//! unanswered (expired, evicted) with the [`Release`] that ends the server's call.

use super::table::TtlTable;
use crate::elicitation::{ClientCaps, Mode};
use crate::inspect::AskedElicitation;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bounds on every table.
#[derive(Debug, Clone)]
pub struct StateLimits {
    pub max_sessions: usize,
    pub max_pending: usize,
    /// Byte budget of each table of asked elicitations (legacy pending, 2026 asked).
    pub max_pending_bytes: usize,
    /// Elicitations judged per response (one message, or one SSE stream) before the rest of
    /// it is refused.
    pub max_elicitations_per_response: usize,
    pub session_ttl: Duration,
}

/// Who an elicitation is put to: a legacy session or a 2026 principal.
pub type Scope = Arc<str>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub route: usize,
    pub session: Arc<str>,
}

#[derive(Debug, Clone, Copy)]
pub struct SessionState {
    /// What the client declared (before any capability shaping); `None` for a session the
    /// server announced (HTTP+SSE `endpoint`) whose `initialize` has not arrived yet.
    pub caps: Option<ClientCaps>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PendingKey {
    pub route: usize,
    pub session: Arc<str>,
    /// The server's JSON-RPC request id, as its JSON text.
    pub id: String,
}

/// A forwarded elicitation awaiting its answer.
pub struct Pending {
    pub asked: AskedElicitation,
    pub asked_at: Instant,
    pub fingerprint: u64,
    pub mode: Mode,
    pub scope: Scope,
    pub elicitation_id: Option<String>,
    /// How to end the server's call if the answer never comes.
    pub release: Option<Release>,
}

impl Pending {
    /// Approximate bytes this entry holds, for the table's byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.asked.approx_bytes()
            + self.elicitation_id.as_ref().map_or(0, String::len)
            + self.release.as_ref().map_or(0, Release::weight)
    }
}

/// What the gateway needs to answer a server itself for an elicitation it stopped tracking:
/// the channel back to the server, the exchange it came in, and the server's request id.
pub struct Release {
    pub channel: super::judge::ServerChannel,
    pub exchange: Arc<super::Exchange>,
    pub id: serde_json::Value,
}

impl Release {
    fn weight(&self) -> usize {
        // The exchange is shared by every elicitation of its stream; counted once per entry
        // anyway, which errs on the safe side.
        std::mem::size_of::<super::Exchange>() + 64
    }
}

/// Where a 2026-07-28 `inputRequests` map is remembered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AskedKey {
    /// SHA-256 of the `requestState` the client must echo.
    RequestState { route: usize, digest: [u8; 32] },
    /// No `requestState`: the principal's next call of the same method and name.
    Call {
        route: usize,
        principal: Scope,
        method: &'static str,
        name: String,
    },
    /// Tasks extension: `tasks/update` for this task.
    Task {
        route: usize,
        principal: Scope,
        task_id: String,
    },
}

/// One entry of an asked `inputRequests` map.
pub struct AskedEntry {
    /// `None` for input requests that are not elicitations (sampling, roots).
    pub asked: Option<AskedElicitation>,
    pub fingerprint: u64,
    pub mode: Mode,
}

/// A remembered `inputRequests` map.
pub struct Asked {
    pub entries: HashMap<String, AskedEntry>,
    pub asked_at: Instant,
    pub scope: Scope,
}

impl Asked {
    /// Approximate bytes this entry holds, for the table's byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .entries
                .iter()
                .map(|(k, e)| {
                    k.len()
                        + std::mem::size_of::<AskedEntry>()
                        + e.asked.as_ref().map_or(0, AskedElicitation::approx_bytes)
                })
                .sum::<usize>()
    }
}

/// Fixed one-minute window of elicitations for one scope.
#[derive(Debug, Clone, Copy)]
pub struct RateWindow {
    pub started: Instant,
    pub count: u32,
}

const MINUTE: Duration = Duration::from_secs(60);

/// All enforcement state.
pub struct State {
    pub limits: StateLimits,
    pub sessions: TtlTable<SessionKey, SessionState>,
    pub pending: TtlTable<PendingKey, Pending>,
    pub answered: TtlTable<PendingKey, ()>,
    pub url_ids: TtlTable<(usize, Scope, String), bool>,
    pub asked: TtlTable<AskedKey, Asked>,
    pub declined: TtlTable<(usize, Scope, u64), ()>,
    pub rate: TtlTable<(usize, Scope), RateWindow>,
}

impl State {
    pub fn new(limits: StateLimits) -> Self {
        let pending = limits.max_pending;
        let sessions = limits.max_sessions;
        Self {
            sessions: TtlTable::new(sessions),
            pending: TtlTable::with_budget(pending, limits.max_pending_bytes).reporting(),
            answered: TtlTable::new(pending),
            url_ids: TtlTable::new(pending),
            asked: TtlTable::with_budget(pending, limits.max_pending_bytes),
            declined: TtlTable::new(pending),
            rate: TtlTable::new(sessions),
            limits,
        }
    }

    /// Counts one more elicitation for `scope` and returns the count in the current minute.
    pub fn count_elicitation(&mut self, route: usize, scope: &Scope, now: Instant) -> u32 {
        let key = (route, scope.clone());
        match self.rate.get_mut(&key, now) {
            Some(w) if now.duration_since(w.started) < MINUTE => {
                w.count = w.count.saturating_add(1);
                w.count
            }
            _ => {
                self.rate.insert(
                    key,
                    RateWindow {
                        started: now,
                        count: 1,
                    },
                    now,
                    MINUTE,
                );
                1
            }
        }
    }

    /// True when the user declined or cancelled this elicitation within the repeat window.
    pub fn declined_recently(
        &self,
        route: usize,
        scope: &Scope,
        fingerprint: u64,
        now: Instant,
    ) -> bool {
        self.declined
            .get(&(route, scope.clone(), fingerprint), now)
            .is_some()
    }

    /// Remembers a decline or cancel for `window`.
    pub fn remember_decline(
        &mut self,
        route: usize,
        scope: &Scope,
        fingerprint: u64,
        now: Instant,
        window: Duration,
    ) {
        if !window.is_zero() {
            self.declined
                .insert((route, scope.clone(), fingerprint), (), now, window);
        }
    }

    /// Pending elicitations (legacy and 2026), for the gauge.
    pub fn pending_count(&self) -> usize {
        self.pending.len() + self.asked.len()
    }

    /// Forgets everything tied to one legacy session (DELETE).
    pub fn end_session(&mut self, route: usize, session: &Arc<str>, now: Instant) {
        let key = SessionKey {
            route,
            session: session.clone(),
        };
        self.sessions.remove(&key, now);
        self.pending
            .retain_keys(|k| !(k.route == route && &k.session == session));
        // The client ended the session, and the server with it: nothing to answer.
        self.pending.take_dropped();
    }

    /// Drops expired entries everywhere.
    pub fn sweep(&mut self, now: Instant) {
        self.sessions.sweep(now);
        self.pending.sweep(now);
        self.answered.sweep(now);
        self.url_ids.sweep(now);
        self.asked.sweep(now);
        self.declined.sweep(now);
        self.rate.sweep(now);
    }
}
