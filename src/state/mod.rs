//! The one interface to everything enforcement remembers between messages, whatever holds it:
//! the embedded tables of [`crate::state::memory::MemoryStore`] (one process, the default) or a shared
//! Redis (`state.backend: redis`, several replicas; implemented outside enforcement, which
//! does no I/O itself).
//!
//! Owns the keys and records of the state, and the semantics every backend keeps:
//!
//! - **sessions**: the modes a legacy client declared in `initialize` and the verified
//!   principal that created the session, by route and `Mcp-Session-Id` (sliding expiry);
//! - **pending**: legacy elicitations forwarded to a client and not yet answered, by route,
//!   session and the server's request id. An answer is consumed atomically ([`Take::Answer`]):
//!   of two replicas taking the same answer, one gets it, the other learns it was answered;
//! - **url ids**: 2025-11-25 URL-mode `elicitationId`s, completed at most once;
//! - **asked**: 2026-07-28 `inputRequests` forwarded to a client, consumed by the retry;
//! - **declines**: fingerprints of elicitations a scope declined or cancelled;
//! - **rate**: elicitations per scope (and per address) in the current minute.
//!
//! Every key expires. Nothing stored holds a raw user value: no answers, no credentials; session
//! ids, scopes and `elicitationId`s appear in backend keys only as digests. What was asked (the
//! server's schema, trimmed for validation) is stored, because an answer arriving through
//! another replica must be validated against it.
//!
//! Methods return boxed futures so the store is a trait object (the memory backend's are ready
//! at once); a backend that cannot answer returns [`Unavailable`], and enforcement fails closed
//! on it (`state.unavailable`).

pub mod memory;
pub mod shared;
pub mod table;

use crate::settings::{Settings, StateBackend};
use anyhow::Context;
use elicitgate_core::elicitation::{ClientCaps, Mode};
use elicitgate_core::inspect::AskedElicitation;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Who an elicitation is put to: a verified principal, a legacy session, or a 2026 retry chain.
pub type Scope = Arc<str>;

/// The store could not answer in time (down, slow, or an unreadable record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

pub type StoreResult<T> = Result<T, Unavailable>;

/// A store operation in flight.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    pub route: Arc<str>,
    pub session: Arc<str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PendingKey {
    pub route: Arc<str>,
    pub session: Arc<str>,
    /// The server's JSON-RPC request id, as its canonical JSON text.
    pub id: String,
}

impl PendingKey {
    pub fn session_key(&self) -> SessionKey {
        SessionKey {
            route: self.route.clone(),
            session: self.session.clone(),
        }
    }
}

/// A URL-mode `elicitationId`, in the scope that was asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlKey {
    pub route: Arc<str>,
    pub scope: Scope,
    pub elicitation_id: String,
}

/// Where a 2026-07-28 `inputRequests` map is remembered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AskedKey {
    /// SHA-256 of the `requestState` the client must echo, for the principal it was asked
    /// of: two users whose servers issue the same `requestState` never share what was asked.
    RequestState {
        route: Arc<str>,
        principal: Scope,
        digest: [u8; 32],
    },
    /// No `requestState`: the principal's next call of the same method and name.
    Call {
        route: Arc<str>,
        principal: Scope,
        method: &'static str,
        name: String,
    },
    /// Tasks extension: `tasks/update` for this task.
    Task {
        route: Arc<str>,
        principal: Scope,
        task_id: String,
    },
}

/// A declined or cancelled elicitation, in its scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclineKey {
    pub route: Arc<str>,
    pub scope: Scope,
    pub fingerprint: u64,
}

/// A legacy session: what its client declared, and who created it (identity on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// `None` for a session an HTTP+SSE server announced whose `initialize` has not come.
    pub caps: Option<ClientCaps>,
    /// The verified principal that created the session, when identity is on.
    #[serde(default)]
    pub principal: Option<String>,
}

/// A forwarded legacy elicitation awaiting its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    pub asked: AskedElicitation,
    /// Wall-clock milliseconds (replicas share no monotonic clock).
    pub asked_at_ms: u64,
    /// After this an answer is no longer accepted; the record is kept a little longer so the
    /// replica that forwarded it can still end the server's call.
    pub deadline_ms: u64,
    pub mode: Mode,
    pub scope: String,
    /// The verified principal that was asked, when identity is on.
    #[serde(default)]
    pub principal: Option<String>,
}

impl PendingRecord {
    /// Approximate bytes the record holds, for the memory backend's byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.asked.approx_bytes()
            + self.scope.len()
            + self.principal.as_ref().map_or(0, String::len)
    }
}

/// One entry of an asked `inputRequests` map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedEntry {
    /// `None` for input requests that are not elicitations (sampling, roots).
    pub asked: Option<AskedElicitation>,
    pub fingerprint: u64,
    pub mode: Mode,
}

/// A remembered 2026-07-28 `inputRequests` map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedRecord {
    pub entries: HashMap<String, AskedEntry>,
    pub asked_at_ms: u64,
    pub scope: String,
    /// The retry chain this request belongs to (the scope of anonymous 2026 users).
    pub chain: String,
    #[serde(default)]
    pub principal: Option<String>,
}

impl AskedRecord {
    /// Approximate bytes the record holds, for the memory backend's byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.scope.len()
            + self.chain.len()
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

/// What judging the elicitations of one server message needs to know, in one round trip.
#[derive(Debug, Clone)]
pub struct FactsQuery {
    pub route: Arc<str>,
    /// The legacy session whose declared modes apply, touched for `session_ttl`.
    pub session: Option<SessionKey>,
    pub session_ttl: Duration,
    /// The scope the elicitations are put to.
    pub scope: Scope,
    /// One per elicitation: each is checked against recent declines and counted.
    pub fingerprints: Vec<u64>,
    /// Counted per client address as well (the coarse flood limit), when it is on.
    pub address: Option<Scope>,
}

/// The answers to a [`FactsQuery`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub session: Option<SessionRecord>,
    /// Per fingerprint: declined or cancelled within the repeat window.
    pub declined: Vec<bool>,
    /// Per fingerprint: the scope's elicitation count this minute, this one included.
    pub counts: Vec<u32>,
    /// Per fingerprint: the address's count this minute (empty when not asked).
    pub address_counts: Vec<u32>,
}

/// Why a pending elicitation is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The client's answer: only before the deadline; marks the id answered.
    Answer,
    /// The gateway stopped tracking it (expired, evicted, client gone): whatever its
    /// deadline, so the server's call can be ended.
    Release,
}

/// What taking a pending elicitation found.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// It was pending; it is not any more, and nobody else will get it.
    Pending(Box<PendingRecord>),
    /// Already answered (a replay).
    Answered,
    /// Not pending (never, or past its deadline).
    Absent,
}

/// The outcome of declaring capabilities for a session a server announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// The first `initialize` for the announced session: its modes now apply.
    Declared,
    /// The session had declared modes already: unchanged.
    AlreadyDeclared,
    /// No server announced this session.
    Unknown,
}

/// The outcome of a `notifications/elicitation/complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    Completed,
    AlreadyCompleted,
    Unknown,
}

/// Everything enforcement remembers, behind one interface.
pub trait StateStore: Send + Sync {
    /// `"memory"` or `"redis"`.
    fn backend(&self) -> &'static str;

    /// Declared modes, recent declines and rate counts for one message's elicitations.
    fn facts<'a>(&'a self, query: &'a FactsQuery) -> StoreFuture<'a, Facts>;

    /// Records a session; with `only_new`, not over an existing one (returns whether written).
    fn put_session<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        ttl: Duration,
        only_new: bool,
    ) -> StoreFuture<'a, bool>;

    /// The first `initialize` for a session a server announced declares its modes.
    fn declare_announced<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, Declared>;

    /// A session's record (for the principal binding), without touching its expiry.
    fn session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Pushes a session's expiry `ttl` from now (a bound session in use).
    fn touch_session<'a>(&'a self, key: &'a SessionKey, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Forgets a session and what is pending in it (the client ended it).
    fn end_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, ()>;

    /// Records a forwarded legacy elicitation (and its URL-mode id). Returns the keys a
    /// bounded backend evicted to make room (their servers must be told).
    fn put_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        record: &'a PendingRecord,
        ttl: Duration,
        url: Option<&'a UrlKey>,
    ) -> StoreFuture<'a, Vec<PendingKey>>;

    /// Takes a pending elicitation, atomically. `answered_ttl` is how long an answered id
    /// is remembered as answered.
    fn take_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        purpose: Take,
        answered_ttl: Duration,
    ) -> StoreFuture<'a, Taken>;

    /// Forgets pending elicitations whose request is over (no answer can come any more).
    fn forget_pending<'a>(&'a self, keys: &'a [PendingKey]) -> StoreFuture<'a, ()>;

    /// Records URL-mode ids of a `-32042` error the client may complete.
    fn put_url_ids<'a>(&'a self, keys: &'a [UrlKey], ttl: Duration) -> StoreFuture<'a, ()>;

    /// Marks a URL-mode id completed, once.
    fn complete_url<'a>(&'a self, key: &'a UrlKey) -> StoreFuture<'a, Completion>;

    /// Records an asked `inputRequests` map.
    fn put_asked<'a>(
        &'a self,
        key: &'a AskedKey,
        record: &'a AskedRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, ()>;

    /// Takes an asked map, atomically (the retry that consumes it).
    fn take_asked<'a>(&'a self, key: &'a AskedKey) -> StoreFuture<'a, Option<AskedRecord>>;

    /// Remembers a decline or cancel for `window`.
    fn remember_decline<'a>(&'a self, key: &'a DeclineKey, window: Duration)
        -> StoreFuture<'a, ()>;

    /// A health check (one round trip) for the store gauge.
    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Drops expired entries (backends whose keys do not expire by themselves).
    fn sweep(&self) {}

    /// Sessions and asked maps this process holds, for the gauges (0 where the backend is
    /// shared and counting would cost a round trip).
    fn counts(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// Wall-clock milliseconds since the epoch.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// How long past its deadline a pending record is kept, so the replica that forwarded the
/// elicitation can still take it and end the server's call.
pub const RELEASE_GRACE: Duration = Duration::from_secs(60);

/// The store the settings name: the embedded tables, or a shared Redis.
pub fn store_for(settings: &Settings) -> anyhow::Result<Arc<dyn StateStore>> {
    Ok(match settings.state.backend {
        StateBackend::Memory => Arc::new(memory::MemoryStore::new(&memory::MemoryLimits {
            max_sessions: settings.limits.max_sessions,
            max_pending: settings.limits.max_pending,
            max_pending_bytes: usize::try_from(settings.limits.max_pending_bytes.as_u64())
                .unwrap_or(usize::MAX),
        })),
        StateBackend::Redis => Arc::new(
            shared::RedisStore::new(&settings.state.redis)
                .context("configuring the Redis state store")?,
        ),
    })
}
