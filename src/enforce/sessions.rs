//! Sessions: the legacy session a request names, the modes its `initialize` declared, and
//! (identity on) the principal it belongs to.
//!
//! Owns reading the session from a request (header or HTTP+SSE query, refusing ambiguity),
//! recording what an `initialize` declares (Streamable HTTP from the response head, HTTP+SSE
//! for the session its server announced, stdio at once), ending a session when the server
//! confirms a DELETE, and the principal binding checked on every request that names a session.

use super::refusal::{Refusal, SessionRefusal};
use super::server;
use super::{Carrier, ClientVerdict, Enforcer, Exchange};
use crate::state::{Declared, Scope, SessionKey, SessionRecord, Unavailable};
use elicitgate_core::inspect::{self, RuleId};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A session's owner as this process last read it, and when its stored record was last
/// kept alive.
#[derive(Clone)]
pub(super) struct Binding {
    owner: Option<Scope>,
    refreshed: Instant,
}

/// How long "this session has no known owner" is believed before the store is asked again.
const UNBOUND_TTL: Duration = Duration::from_secs(1);

impl Enforcer {
    /// Identity on: a request naming a legacy session must come from the principal that
    /// created it ([`SessionRefusal::Mismatch`], `session.mismatch`). A session the store
    /// knows no owner for (unknown, expired, created before identity was on) is
    /// [`SessionRefusal::Unknown`] (HTTP maps it to 404, which MCP clients answer by starting a
    /// new session); a store that cannot answer, [`SessionRefusal::StoreUnavailable`]
    /// (`state.unavailable`).
    /// The owner is read once per session and process, then cached; the cached binding keeps
    /// the stored record alive (a touch at most every quarter of `timeouts.session_idle`, off
    /// the request path), so a session in use does not expire for want of elicitations.
    pub(super) async fn check_binding(&self, ex: &Exchange) -> Option<ClientVerdict> {
        let principal = ex.verified_principal()?;
        let key = ex.session_key()?;
        let now = Instant::now();
        let cached = {
            let bindings = self.bindings.lock().unwrap_or_else(|p| p.into_inner());
            bindings.get(&key, now).cloned()
        };
        let owner = match cached {
            Some(binding) => {
                if binding.owner.is_some()
                    && now.duration_since(binding.refreshed) >= self.session_ttl / 4
                {
                    self.refresh_binding(&key, binding.owner.clone());
                }
                binding.owner
            }
            None => {
                let found = self.store.session(&key).await;
                let owner = match self.noted("session", found) {
                    Ok(record) => record.and_then(|r| r.principal).map(Scope::from),
                    Err(Unavailable) => {
                        let policy = self.policy(&ex.route_name);
                        let verdict = inspect::state_unavailable(&policy);
                        self.recorder
                            .client_refused(ex, &verdict, "state.unavailable");
                        return verdict.is_deny().then(|| {
                            ClientVerdict::Refuse(Refusal::session(
                                ex.request_id.as_deref(),
                                SessionRefusal::StoreUnavailable,
                                &verdict,
                            ))
                        });
                    }
                };
                let ttl = if owner.is_some() {
                    self.session_ttl
                } else {
                    UNBOUND_TTL
                };
                self.bind(key, owner.clone(), ttl);
                owner
            }
        };
        if owner.as_ref() == Some(principal) {
            return None;
        }
        let policy = self.policy(&ex.route_name);
        let verdict = inspect::session_mismatch(&policy, "session");
        let (reason, why) = match owner {
            Some(_) => ("session.mismatch", SessionRefusal::Mismatch),
            None => ("session.unknown", SessionRefusal::Unknown),
        };
        self.recorder.client_refused(ex, &verdict, reason);
        verdict.is_deny().then(|| {
            ClientVerdict::Refuse(Refusal::session(ex.request_id.as_deref(), why, &verdict))
        })
    }

    /// Pushes a bound session's stored expiry out, in the background.
    fn refresh_binding(&self, key: &SessionKey, owner: Option<Scope>) {
        self.bind(key.clone(), owner, self.session_ttl);
        let (store, key, ttl) = (self.store.clone(), key.clone(), self.session_ttl);
        let recorder = self.recorder.clone();
        server::spawn(async move {
            if store.touch_session(&key, ttl).await.is_err() {
                recorder.store_health(false, Some("touch_session"));
            }
        });
    }

    pub(super) fn bind(&self, key: SessionKey, owner: Option<Scope>, ttl: Duration) {
        let mut bindings = self.bindings.lock().unwrap_or_else(|p| p.into_inner());
        let binding = Binding {
            owner,
            refreshed: Instant::now(),
        };
        bindings.insert(key, binding, Instant::now(), ttl);
    }

    /// The server answered the request (before its body is read): `succeeded` says whether
    /// it accepted it, `session` what session its answer names (Streamable HTTP's
    /// `Mcp-Session-Id` response header).
    ///
    /// Records the session a legacy `initialize` created (an `initialize` that named none),
    /// and refuses the answer when the session cannot be the client's own: an id named twice
    /// (clients join repeated fields, `"a, b"`, and would use a session the gateway never
    /// recorded) or an id already known (the server handed another client's session to this
    /// one, whose declared modes would then be the other client's). The gateway never lets two
    /// clients share a session's capabilities or principal. Ends the session the client
    /// deleted once the server confirms it. Awaited before the response goes out, so no
    /// replica can see the session before its record exists.
    pub async fn on_server_answer(
        &self,
        ex: &Exchange,
        succeeded: bool,
        session: AnsweredSession<'_>,
    ) -> Option<Refusal> {
        if ex.carrier == Carrier::Delete {
            if let (true, Some(key)) = (succeeded, ex.session_key()) {
                let ended = self.store.end_session(&key).await;
                let _ = self.noted("end_session", ended);
            }
            return None;
        }
        if ex.init_caps.is_none() || ex.session.is_some() {
            return None;
        }
        let refused = |reason: &'static str| {
            tracing::warn!(route = %ex.route_name, reason, "Refused an initialize answer whose session cannot be this client's own.");
            self.recorder.refused(ex, "server", reason);
            Some(Refusal::server_content(
                ex.request_id.as_deref(),
                &[RuleId::SessionMismatch],
                Some(reason),
            ))
        };
        match session {
            AnsweredSession::None => None,
            AnsweredSession::Repeated => refused("session.repeated"),
            AnsweredSession::One(session) => match self.remember_session(ex, session, true).await {
                Remembered::AlreadyKnown => refused("session.reused"),
                Remembered::New | Remembered::NotRecorded => None,
            },
        }
    }

    /// An HTTP+SSE server announced `session` in its `endpoint` event: the one `initialize`
    /// that may declare capabilities for it is the first one to arrive.
    /// The session belongs to the principal that opened the stream (identity on).
    /// Returns whether the session is new; a session already known (announced or declared
    /// before) is not this stream's.
    pub async fn announce_session(
        &self,
        route: &Arc<str>,
        session: &str,
        owner: Option<&Scope>,
    ) -> bool {
        let key = SessionKey {
            route: route.clone(),
            session: Arc::from(session),
        };
        let record = SessionRecord {
            caps: None,
            principal: owner.map(|p| p.to_string()),
        };
        let put = self
            .store
            .put_session(&key, record, self.session_ttl, true)
            .await;
        match self.noted("put_session", put) {
            Ok(true) => {
                self.bind(key, owner.cloned(), self.session_ttl);
                true
            }
            Ok(false) => false,
            // Not recorded: an `initialize` for it declares nothing, and its elicitations
            // fail closed; the client may still use the session.
            Err(Unavailable) => true,
        }
    }

    /// Declares `ex`'s capabilities for an announced, not yet declared session.
    pub(super) async fn declare_announced_session(&self, ex: &Exchange, session: &str) {
        let Some((key, record)) = declared_record(ex, session) else {
            return;
        };
        let declared = self
            .store
            .declare_announced(&key, record, self.session_ttl)
            .await;
        match self.noted("declare_session", declared) {
            Ok(Declared::Declared) => {
                self.bind(key, ex.verified_principal().cloned(), self.session_ttl)
            }
            Ok(Declared::AlreadyDeclared) => {
                tracing::warn!(route = %ex.route_name, "A second initialize for a declared session was not allowed to change its capabilities.")
            }
            Ok(Declared::Unknown) => {
                tracing::warn!(route = %ex.route_name, "An initialize named a session no server announced; it declares nothing.")
            }
            Err(Unavailable) => {
                tracing::warn!(route = %ex.route_name, "The state store did not record an initialize; the session's elicitations fail closed.")
            }
        }
    }

    /// Remembers the capabilities an `initialize` declared, for `session` (with `only_new`,
    /// never over a session already known).
    pub(super) async fn remember_session(
        &self,
        ex: &Exchange,
        session: &str,
        only_new: bool,
    ) -> Remembered {
        let Some((key, record)) = declared_record(ex, session) else {
            return Remembered::NotRecorded;
        };
        let put = self
            .store
            .put_session(&key, record, self.session_ttl, only_new)
            .await;
        let remembered = match self.noted("put_session", put) {
            Ok(true) => {
                self.bind(key, ex.verified_principal().cloned(), self.session_ttl);
                Remembered::New
            }
            Ok(false) => Remembered::AlreadyKnown,
            Err(Unavailable) => {
                tracing::warn!(route = %ex.route_name, "The state store did not record an initialize; the session's elicitations fail closed.");
                Remembered::NotRecorded
            }
        };
        self.gauges();
        remembered
    }
}

/// The session a server's answer names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredSession<'a> {
    /// None named.
    None,
    /// Exactly one value.
    One(&'a str),
    /// Named more than once (or not as visible ASCII): readers disagree on which is meant.
    Repeated,
}

/// What recording a declared session came to.
pub(super) enum Remembered {
    New,
    /// The store already held a session by that id (only with `only_new`).
    AlreadyKnown,
    /// Nothing recorded: no capabilities were declared, or the store could not answer (the
    /// session's elicitations then fail closed).
    NotRecorded,
}

/// What an `initialize` declares for `session`: its modes and (identity on) its owner.
fn declared_record(ex: &Exchange, session: &str) -> Option<(SessionKey, SessionRecord)> {
    let caps = ex.init_caps?;
    let key = SessionKey {
        route: ex.route_name.clone(),
        session: Arc::from(session),
    };
    let record = SessionRecord {
        caps: Some(caps),
        principal: ex.verified_principal().map(|p| p.to_string()),
    };
    Some((key, record))
}
