//! Live enforcement: where the pure decision ([`crate::inspect`]) meets traffic.
//!
//! Owns, for every exchange, the facts the decision needs (era, session, principal, declared
//! capabilities, association), the state between messages ([`state`]), and acting on a
//! verdict: forwarding, removing a blocked elicitation from a stream and answering the server
//! itself, replacing a blocked 2026-07-28 result with an error, and rejecting answers that do
//! not fit what was asked. Every decision is recorded through [`record::Recorder`], the one
//! place that updates metrics and writes audit events.
//!
//! Client side ([`Enforcer::on_client_message`]), in order: capability shaping (`initialize`,
//! 2026 `_meta`), answer checks (legacy JSON-RPC responses, 2026 `inputResponses`, tasks
//! `tasks/update`). Server side ([`judge`]): SSE events one at a time and whole JSON bodies.

pub mod judge;
pub mod prescan;
pub mod record;
pub mod shaping;
pub mod state;
pub mod table;

use crate::elicitation::{self, ClientCaps};
use crate::inspect::{self, Era, UnknownAnswer, Verdict};
use crate::mcp::jsonrpc::{canonical_id, codes, Envelope, ErrorObject, Kind};
use crate::mcp::message;
use crate::policy::{Policy, PolicySet};
use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use record::Recorder;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use state::{AskedKey, PendingKey, Scope, State, StateLimits};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The one session of a stdio connection.
pub const STDIO_SESSION: &str = "stdio";

/// JSON-RPC code the client receives when a 2026-07-28 result was blocked: an application
/// code outside the ranges JSON-RPC and MCP reserve (-32768…-32000).
pub const POLICY_BLOCKED_CODE: i64 = codes::POLICY_BLOCKED;

/// Everything known about one client request, for judging what comes back.
#[derive(Clone)]
pub struct Exchange {
    pub route: usize,
    pub route_name: Arc<str>,
    pub upstream_label: Arc<str>,
    pub era: Era,
    pub session: Option<Arc<str>>,
    /// Identity of the caller (Authorization, else client address), derived on first use.
    principal: Principal,
    pub request_id: Option<Box<RawValue>>,
    pub method: Option<&'static str>,
    pub kind: Kind,
    /// False for a standalone GET stream (server messages not tied to a client request).
    pub associated: bool,
    /// Declared capabilities of an `initialize` request (legacy).
    pub init_caps: Option<ClientCaps>,
    /// Declared capabilities of a 2026-07-28 request (`_meta`).
    pub request_caps: Option<ClientCaps>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    pub call_name: Option<String>,
    /// `params.taskId` of a tasks request.
    pub task_id: Option<String>,
    /// Where and with which headers the gateway itself answers the server.
    pub upstream_uri: http::Uri,
    pub answer_headers: AnswerHeaders,
    /// A stdio exchange: one client, one session the gateway itself named.
    pub stdio: bool,
    /// An HTTP GET (a standalone or resumed stream): some clients read any successful GET
    /// body as an event stream.
    pub get: bool,
}

/// The request headers the gateway repeats when it answers the server on the client's behalf
/// (session, protocol version, credentials). Kept without a map allocation: they are needed
/// only on the rare path where the gateway answers.
#[derive(Clone, Default)]
pub struct AnswerHeaders([Option<HeaderValue>; 4]);

impl AnswerHeaders {
    fn capture(headers: &HeaderMap) -> Self {
        Self(std::array::from_fn(|i| {
            headers.get(&ANSWER_HEADERS[i]).cloned()
        }))
    }

    /// A captured value, as text.
    fn text(&self, which: usize) -> Option<&str> {
        self.0[which].as_ref().and_then(|v| v.to_str().ok())
    }

    /// The headers of an answer POST.
    pub fn to_map(&self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(ANSWER_HEADERS.len() + 2);
        for (name, value) in ANSWER_HEADERS.iter().zip(&self.0) {
            if let Some(v) = value {
                map.insert(name.clone(), v.clone());
            }
        }
        map.insert("content-type", HeaderValue::from_static("application/json"));
        map.insert(
            "accept",
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map
    }
}

/// Who is calling, computed only when an elicitation path needs it.
#[derive(Clone)]
struct Principal {
    authorization: Option<HeaderValue>,
    peer: Option<IpAddr>,
    cell: std::sync::OnceLock<Scope>,
}

impl Principal {
    fn fixed(scope: &str) -> Self {
        let cell = std::sync::OnceLock::new();
        let _ = cell.set(Arc::from(scope));
        Self {
            authorization: None,
            peer: None,
            cell,
        }
    }

    /// A digest of the credentials, else the client address.
    fn get(&self) -> &Scope {
        self.cell
            .get_or_init(|| match (&self.authorization, self.peer) {
                (Some(auth), _) => {
                    let digest = Sha256::digest(auth.as_bytes());
                    let mut hex = String::with_capacity(2 + 32);
                    hex.push_str("a:");
                    for b in &digest[..16] {
                        use std::fmt::Write;
                        let _ = write!(hex, "{b:02x}");
                    }
                    Arc::from(hex)
                }
                (None, Some(peer)) => Arc::from(format!("ip:{peer}")),
                (None, None) => Arc::from("unknown"),
            })
    }
}

impl Exchange {
    /// Keyed identity of the caller.
    pub fn principal(&self) -> &Scope {
        self.principal.get()
    }

    /// The scope rate limits, repeat detection and completions are counted in.
    pub fn scope(&self) -> Scope {
        match (&self.era, &self.session) {
            (Era::Stateless2026, _) | (_, None) => self.principal().clone(),
            (_, Some(s)) => Arc::from(format!("s:{s}")),
        }
    }

    /// Whether a JSON response to this request must be read whole and judged.
    pub fn judges_json_response(&self) -> bool {
        self.kind == Kind::Request
    }
}

/// A refused client message: the JSON-RPC error the client gets, and the HTTP status it
/// travels with (stdio ignores the status). The transports turn it into a response or a line.
#[derive(Debug)]
pub struct Rejection {
    pub status: StatusCode,
    pub body: Bytes,
}

/// What to do with a client message.
pub enum ClientVerdict {
    /// Forward this body (the original, or a capability-shaped rewrite).
    Forward(Bytes),
    /// Refuse: answer the client with this, forward nothing.
    Reject(Rejection),
    /// Forward `body` instead of the client's (so the server is not left waiting), then answer
    /// the client with `rejection`.
    Substitute { body: Bytes, rejection: Rejection },
}

/// The enforcement engine shared by all connections.
pub struct Enforcer {
    policies: Arc<ArcSwap<PolicySet>>,
    state: Mutex<State>,
    pub recorder: Recorder,
    /// `limits.max_elicitations_per_response`.
    pub max_per_response: usize,
}

/// Request headers the gateway repeats when it answers the server on the client's behalf.
const ANSWER_HEADERS: [HeaderName; 4] = [
    HeaderName::from_static("mcp-session-id"),
    HeaderName::from_static("mcp-protocol-version"),
    http::header::AUTHORIZATION,
    http::header::COOKIE,
];
/// Positions in [`ANSWER_HEADERS`].
const SESSION_HEADER: usize = 0;
const VERSION_HEADER: usize = 1;
const AUTHORIZATION_HEADER: usize = 2;

impl Enforcer {
    pub fn new(policies: Arc<ArcSwap<PolicySet>>, limits: StateLimits, recorder: Recorder) -> Self {
        Self {
            max_per_response: limits.max_elicitations_per_response.max(1),
            policies,
            state: Mutex::new(State::new(limits)),
            recorder,
        }
    }

    /// The policy snapshot for `route`: read once per message.
    pub fn policy(&self, route: &str) -> Arc<Policy> {
        self.policies.load().for_route(route)
    }

    pub fn policies(&self) -> &Arc<ArcSwap<PolicySet>> {
        &self.policies
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock must not take enforcement down with it; the tables
        // stay structurally valid whatever was interrupted.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops expired state; called periodically. Servers still waiting for an answer the
    /// gateway stopped tracking are told so.
    pub fn sweep(&self) {
        let mut state = self.state();
        state.sweep(Instant::now());
        let dropped = state.pending.take_dropped();
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
        drop(state);
        self.release(dropped);
        self.recorder.auditor.flush_suppressed(false);
    }

    /// Ends the server's call for each legacy elicitation the gateway stopped tracking without
    /// an answer (expired, evicted, or its client went away): the server gets a JSON-RPC error
    /// for its request id, so no call waits forever for an answer that can no longer come
    /// through the gateway. Called without the state lock.
    pub(crate) fn release(&self, dropped: Vec<(state::Pending, table::Dropped)>) {
        for (pending, why) in dropped {
            let reason = match why {
                table::Dropped::Expired => "expired",
                table::Dropped::Evicted => "evicted",
                table::Dropped::Cleared => "cleared",
            };
            self.release_one(pending, reason);
        }
    }

    pub(crate) fn release_one(&self, pending: state::Pending, reason: &'static str) {
        let Some(release) = pending.release else {
            return;
        };
        let error = ErrorObject::gateway(
            codes::INTERNAL_ERROR,
            "The user's answer did not reach the gateway in time",
            serde_json::json!({ "reason": format!("elicitation_{reason}") }),
        );
        let body = error.response(Some(&release.id));
        self.recorder
            .pending_released(&release.exchange.route_name, reason);
        release
            .channel
            .answer(&release.exchange, body, &self.recorder);
    }

    /// Starts an exchange for a routed client request.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &self,
        route: usize,
        route_name: Arc<str>,
        upstream_label: Arc<str>,
        method: &Method,
        headers: &HeaderMap,
        envelope: &Envelope,
        peer: IpAddr,
        query: Option<&str>,
        upstream_uri: http::Uri,
    ) -> Exchange {
        let answer_headers = AnswerHeaders::capture(headers);
        // Streamable HTTP names the session in a header; the 2024-11-05 HTTP+SSE transport in
        // the POST URI's query (`sessionId` in the TypeScript SDK, `session_id` in Python's).
        let session = answer_headers
            .text(SESSION_HEADER)
            .map(Arc::from)
            .or_else(|| {
                url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                    .find(|(k, _)| k == "sessionId" || k == "session_id")
                    .map(|(_, v)| Arc::from(v.as_ref()))
            });
        let era = match answer_headers.text(VERSION_HEADER) {
            Some("2026-07-28") => Era::Stateless2026,
            Some("2025-06-18") | Some("2025-03-26") | Some("2024-11-05") => Era::Legacy2025_06,
            _ => Era::Legacy2025_11,
        };
        let principal = Principal {
            authorization: answer_headers.0[AUTHORIZATION_HEADER].clone(),
            peer: Some(peer),
            cell: std::sync::OnceLock::new(),
        };
        Exchange {
            route,
            route_name,
            upstream_label,
            era,
            session,
            principal,
            request_id: envelope.id.clone(),
            method: envelope.method,
            kind: envelope.kind,
            // A standalone GET stream carries unsolicited messages; a GET that resumes a
            // stream (Last-Event-ID) replays messages of the request that opened it.
            associated: method != Method::GET
                || headers.contains_key(HeaderName::from_static("last-event-id")),
            init_caps: None,
            request_caps: None,
            call_name: None,
            task_id: None,
            upstream_uri,
            answer_headers,
            stdio: false,
            get: method == Method::GET,
        }
    }

    /// Starts an exchange for one message from a stdio client (one client, one session).
    pub fn begin_stdio(&self, route_name: Arc<str>, envelope: &Envelope) -> Exchange {
        Exchange {
            route: 0,
            route_name,
            upstream_label: Arc::from("stdio"),
            era: Era::Legacy2025_11,
            session: Some(Arc::from(STDIO_SESSION)),
            principal: Principal::fixed("stdio"),
            request_id: envelope.id.clone(),
            method: envelope.method,
            kind: envelope.kind,
            associated: true,
            init_caps: None,
            request_caps: None,
            call_name: None,
            task_id: None,
            upstream_uri: http::Uri::default(),
            answer_headers: AnswerHeaders::default(),
            stdio: true,
            get: false,
        }
    }

    /// Judges a client message before it is forwarded.
    pub fn on_client_message(
        &self,
        ex: &mut Exchange,
        method: &Method,
        body: Bytes,
    ) -> ClientVerdict {
        if *method == Method::DELETE {
            if let Some(session) = &ex.session {
                self.state().end_session(ex.route, session, Instant::now());
            }
            return ClientVerdict::Forward(body);
        }
        if *method == Method::POST && ex.kind == Kind::Batch && batch_carries_answers(&body) {
            // Batches ended with 2025-03-26, before elicitation existed: a batch that carries
            // elicitation answers cannot be legitimate, and would slip past the answer checks.
            let policy = self.policy(&ex.route_name);
            let verdict = inspect::unknown_response(UnknownAnswer::UnknownId, &policy);
            self.recorder.answer_rejected(ex, None, &verdict);
            if verdict.is_deny() {
                return ClientVerdict::Reject(answer_rejection(None, &verdict));
            }
        }
        if *method == Method::POST && ex.kind == Kind::Invalid {
            // Not one JSON-RPC message the gateway can read (bad JSON, a member given twice,
            // neither `id` nor `method`, a request and a response at once): refused, not
            // forwarded unread. A server that reads it differently (the last of two `method`
            // members, say) would otherwise act on a message the gateway never judged.
            self.recorder.refused(ex, "client", "jsonrpc.shape");
            return ClientVerdict::Reject(invalid_message_rejection(None, "jsonrpc.shape"));
        }
        if *method != Method::POST
            || !matches!(ex.kind, Kind::Request | Kind::Response | Kind::Notification)
        {
            return ClientVerdict::Forward(body);
        }
        let is_initialize = ex.method == Some("initialize");
        let is_response = ex.kind == Kind::Response;
        // Requests always need their params for 2026 capabilities; otherwise only messages
        // that can carry answers are parsed.
        if !is_initialize
            && !is_response
            && ex.era != Era::Stateless2026
            && !prescan::may_carry_elicitation_or_2026_meta(&body)
        {
            return ClientVerdict::Forward(body);
        }
        // Strict: what serde cannot read (`1e400`, nesting past the bound, a lone surrogate)
        // a server's parser may still read, past the answer checks: refused.
        let mut message = match message::parse(&body) {
            Ok(message) => message,
            Err(why) => {
                self.recorder.refused(ex, "client", why.reason());
                return ClientVerdict::Reject(invalid_message_rejection(
                    ex.request_id.as_deref(),
                    why.reason(),
                ));
            }
        };
        let policy = self.policy(&ex.route_name);
        if let Some(version) = message
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str)
        {
            if version == "2026-07-28" {
                ex.era = Era::Stateless2026;
            }
        }
        if is_response {
            return self.on_client_answer(ex, &policy, &message, body);
        }
        let params = message.get("params");
        ex.call_name = params
            .and_then(|p| p.get("name").or_else(|| p.get("uri")))
            .and_then(Value::as_str)
            .map(str::to_owned);
        ex.task_id = params
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);

        if params.is_some_and(|p| p.get("inputResponses").is_some()) {
            if let Some(reject) = self.on_input_responses(ex, &policy, &message) {
                return reject;
            }
        }
        let mut rewritten = false;
        if is_initialize {
            if let Some(caps) = elicitation::capabilities_from_initialize(&message) {
                ex.init_caps = Some(ClientCaps::from_capabilities(caps));
            } else {
                ex.init_caps = Some(ClientCaps::none());
            }
            rewritten |= shaping::shape_initialize(&mut message, &policy);
            // Transports whose session is known before the answer record it now: stdio (one
            // client), and HTTP+SSE for a session its server announced and nobody declared yet.
            // Streamable HTTP learns it from the response head. An `initialize` naming any
            // other session declares nothing: capabilities belong to the session the server
            // creates, never to an id a client chose.
            if let Some(session) = ex.session.clone() {
                if ex.stdio {
                    self.remember_session(ex, &session);
                } else {
                    self.declare_announced_session(ex, &session);
                }
            }
        } else if ex.era == Era::Stateless2026 {
            ex.request_caps = Some(
                elicitation::capabilities_from_meta(&message)
                    .map(ClientCaps::from_capabilities)
                    .unwrap_or_else(ClientCaps::none),
            );
            rewritten |= shaping::shape_meta(&mut message, &policy);
        }
        if rewritten {
            match serde_json::to_vec(&message) {
                Ok(bytes) => ClientVerdict::Forward(Bytes::from(bytes)),
                Err(_) => ClientVerdict::Forward(body),
            }
        } else {
            ClientVerdict::Forward(body)
        }
    }

    /// A client body that cannot be read as the server would read it (transport stage):
    /// refused and recorded.
    pub fn refuse_client(&self, ex: &Exchange, reason: &'static str) -> Rejection {
        self.recorder.refused(ex, "client", reason);
        let mut rejection = invalid_message_rejection(ex.request_id.as_deref(), reason);
        rejection.status = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        rejection
    }

    /// An upstream response that cannot be read as a client would read it (transport stage):
    /// refused and recorded. A request's client gets the blocked-content error for its own id
    /// (HTTP 200, as for every blocked result, so every SDK surfaces the JSON-RPC error);
    /// anything else a 502.
    pub fn refuse_server(&self, ex: &Exchange, reason: &'static str) -> Rejection {
        tracing::warn!(route = %ex.route_name, reason, "Refused an upstream response the gateway cannot read as a client would.");
        self.recorder.refused(ex, "server", reason);
        let error = ErrorObject::blocked([crate::inspect::RuleId::RequestMalformed.as_str()])
            .with_reason(reason);
        let (status, id) = match (ex.kind, ex.request_id.as_deref()) {
            (Kind::Request, Some(id)) => (StatusCode::OK, Some(id)),
            _ => (StatusCode::BAD_GATEWAY, None),
        };
        Rejection {
            status,
            body: error.response(id),
        }
    }

    /// Records the session a legacy `initialize` created (Streamable HTTP: the response's
    /// `Mcp-Session-Id` to an `initialize` that carried none). A session id already known is
    /// never re-declared: only the server's new session gets the declaring client's modes.
    pub fn on_response_head(&self, ex: &Exchange, headers: &HeaderMap) {
        if ex.init_caps.is_none() || ex.session.is_some() {
            return;
        }
        if let Some(session) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            let key = state::SessionKey {
                route: ex.route,
                session: Arc::from(session),
            };
            if self.state().sessions.get(&key, Instant::now()).is_some() {
                tracing::warn!(route = %ex.route_name, "An upstream answered initialize with a session id already in use; its capabilities are kept.");
                return;
            }
            self.remember_session(ex, session);
        }
    }

    /// An HTTP+SSE server announced `session` in its `endpoint` event: the one `initialize`
    /// that may declare capabilities for it is the first one to arrive.
    pub fn announce_session(&self, route: usize, session: &str) {
        let now = Instant::now();
        let mut state = self.state();
        let ttl = state.limits.session_ttl;
        let key = state::SessionKey {
            route,
            session: Arc::from(session),
        };
        if state.sessions.get(&key, now).is_none() {
            state
                .sessions
                .insert(key, state::SessionState { caps: None }, now, ttl);
        }
    }

    /// Declares `ex`'s capabilities for an announced, not yet declared session.
    fn declare_announced_session(&self, ex: &Exchange, session: &str) {
        let Some(caps) = ex.init_caps else {
            return;
        };
        let now = Instant::now();
        let key = state::SessionKey {
            route: ex.route,
            session: Arc::from(session),
        };
        let mut state = self.state();
        match state.sessions.get_mut(&key, now) {
            Some(s) if s.caps.is_none() => s.caps = Some(caps),
            Some(_) => {
                tracing::warn!(route = %ex.route_name, "A second initialize for a declared session was not allowed to change its capabilities.")
            }
            None => {
                tracing::warn!(route = %ex.route_name, "An initialize named a session no server announced; it declares nothing.")
            }
        }
    }

    /// Remembers the capabilities an `initialize` declared, for `session`.
    pub fn remember_session(&self, ex: &Exchange, session: &str) {
        let Some(caps) = ex.init_caps else {
            return;
        };
        let now = Instant::now();
        let mut state = self.state();
        let ttl = state.limits.session_ttl;
        state.sessions.insert(
            state::SessionKey {
                route: ex.route,
                session: Arc::from(session),
            },
            state::SessionState { caps: Some(caps) },
            now,
            ttl,
        );
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
    }

    /// A legacy client's JSON-RPC response: is it the answer to a pending elicitation?
    fn on_client_answer(
        &self,
        ex: &Exchange,
        policy: &Policy,
        message: &Value,
        body: Bytes,
    ) -> ClientVerdict {
        let Some(id) = message.get("id") else {
            return ClientVerdict::Forward(body);
        };
        let key = PendingKey {
            route: ex.route,
            session: ex.session.clone().unwrap_or_else(|| Arc::from("")),
            id: canonical_id(id),
        };
        let now = Instant::now();
        let mut state = self.state();
        let Some(pending) = state.pending.remove(&key, now) else {
            let replay = state.answered.get(&key, now).is_some();
            let looks_like_answer = message.pointer("/result/action").is_some();
            // An entry that expired without being swept yet: its server is told now.
            let expired = state.pending.take_dropped();
            drop(state);
            self.release(expired);
            if !replay && !looks_like_answer {
                // An answer to some other server request (ping, sampling, roots).
                return ClientVerdict::Forward(body);
            }
            let fact = if replay {
                UnknownAnswer::AlreadyAnswered
            } else {
                UnknownAnswer::UnknownId
            };
            let verdict = inspect::unknown_response(fact, policy);
            self.recorder.answer_rejected(ex, None, &verdict);
            if verdict.is_deny() {
                return ClientVerdict::Reject(answer_rejection(Some(id), &verdict));
            }
            return ClientVerdict::Forward(body);
        };
        let ttl = pending_ttl(policy);
        state.answered.insert(key, (), now, ttl);
        // A JSON-RPC error from the client (e.g. it refused the mode) is a legitimate answer.
        let Some(result) = message.get("result") else {
            drop(state);
            self.recorder.answered(
                ex,
                pending.mode,
                "error",
                now.duration_since(pending.asked_at),
            );
            return ClientVerdict::Forward(body);
        };
        let verdict = inspect::check_response(&pending.asked, result, policy);
        let action = answer_action(result);
        if verdict.is_deny() {
            // Let the client try again with a valid answer.
            drop(state);
            self.recorder
                .answer_rejected(ex, Some(pending.mode), &verdict);
            let to_server = answer_error(&verdict).response(Some(id));
            return ClientVerdict::Substitute {
                body: to_server,
                rejection: answer_rejection(Some(id), &verdict),
            };
        }
        if matches!(action, "decline" | "cancel") {
            let scope = pending.scope.clone();
            state.remember_decline(
                ex.route,
                &scope,
                pending.fingerprint,
                now,
                repeat_window(policy),
            );
        }
        let pending_count = state.pending_count();
        let sessions = state.sessions.len();
        drop(state);
        self.recorder.pending(pending_count, sessions);
        self.recorder.answered(
            ex,
            pending.mode,
            action,
            now.duration_since(pending.asked_at),
        );
        if !verdict.rules.is_empty() {
            self.recorder
                .answer_audited(ex, Some(pending.mode), &verdict);
        }
        ClientVerdict::Forward(body)
    }

    /// A 2026-07-28 retry (or `tasks/update`) carrying `inputResponses`.
    fn on_input_responses(
        &self,
        ex: &Exchange,
        policy: &Policy,
        message: &Value,
    ) -> Option<ClientVerdict> {
        let params = message.get("params")?;
        let responses = params.get("inputResponses")?;
        let key = self.asked_key(ex, params.get("requestState").and_then(Value::as_str));
        let now = Instant::now();
        let mut state = self.state();
        let id = message.get("id");
        let Some(asked) = key.as_ref().and_then(|k| state.asked.remove(k, now)) else {
            drop(state);
            let verdict = inspect::unknown_response(UnknownAnswer::UnknownId, policy);
            self.recorder.answer_rejected(ex, None, &verdict);
            return verdict
                .is_deny()
                .then(|| ClientVerdict::Reject(answer_rejection(id, &verdict)));
        };
        let mut verdict = Verdict::allow();
        let mut answered = Vec::new();
        match responses.as_object() {
            Some(map) => {
                for (k, answer) in map {
                    let one = match asked.entries.get(k) {
                        None => inspect::unknown_response(
                            UnknownAnswer::UnaskedInputResponseKey,
                            policy,
                        ),
                        // Sampling and roots answers are not elicitations: not judged here.
                        Some(entry) => match &entry.asked {
                            None => Verdict::allow(),
                            Some(elicitation) => {
                                answered.push((
                                    entry.mode,
                                    answer_action(answer),
                                    entry.fingerprint,
                                ));
                                inspect::check_response(elicitation, answer, policy)
                            }
                        },
                    };
                    verdict.merge(one);
                }
            }
            None => verdict.merge(inspect::unknown_response(
                UnknownAnswer::UnaskedInputResponseKey,
                policy,
            )),
        }
        if verdict.is_deny() {
            // Keep what was asked so a corrected retry is still accepted.
            if let Some(k) = key {
                let ttl = pending_ttl(policy).saturating_sub(now.duration_since(asked.asked_at));
                state.asked.insert(k, asked, now, ttl);
            }
            drop(state);
            self.recorder.answer_rejected(ex, None, &verdict);
            return Some(ClientVerdict::Reject(answer_rejection(id, &verdict)));
        }
        let scope = asked.scope.clone();
        for (_, action, fingerprint) in &answered {
            if matches!(*action, "decline" | "cancel") {
                state.remember_decline(ex.route, &scope, *fingerprint, now, repeat_window(policy));
            }
        }
        drop(state);
        for (mode, action, _) in answered {
            self.recorder
                .answered(ex, mode, action, now.duration_since(asked.asked_at));
        }
        if !verdict.rules.is_empty() {
            self.recorder.answer_audited(ex, None, &verdict);
        }
        None
    }

    /// Where a 2026 `inputRequests` map for this exchange is (or will be) remembered.
    fn asked_key(&self, ex: &Exchange, request_state: Option<&str>) -> Option<AskedKey> {
        if let Some(rs) = request_state {
            return Some(AskedKey::RequestState {
                route: ex.route,
                digest: Sha256::digest(rs.as_bytes()).into(),
            });
        }
        if let Some(task) = &ex.task_id {
            return Some(AskedKey::Task {
                route: ex.route,
                principal: ex.principal().clone(),
                task_id: task.clone(),
            });
        }
        Some(AskedKey::Call {
            route: ex.route,
            principal: ex.principal().clone(),
            method: ex.method?,
            name: ex.call_name.clone().unwrap_or_default(),
        })
    }
}

/// True when a JSON-RPC batch holds an elicitation answer (an `ElicitResult`-shaped result or
/// `inputResponses`) or anything the pre-scan flags. Batches are rare; they are parsed whole.
fn batch_carries_answers(body: &[u8]) -> bool {
    if prescan::may_carry_elicitation(body) {
        return true;
    }
    match serde_json::from_slice::<Vec<Value>>(body) {
        Ok(items) => items.iter().any(|m| m.pointer("/result/action").is_some()),
        // Not a batch a client could mean: left to the server to refuse.
        Err(_) => false,
    }
}

/// `accept`, `decline`, `cancel`, or `invalid`.
fn answer_action(result: &Value) -> &'static str {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => "accept",
        Some("decline") => "decline",
        Some("cancel") => "cancel",
        _ => "invalid",
    }
}

fn pending_ttl(policy: &Policy) -> std::time::Duration {
    policy.pending_ttl()
}

fn repeat_window(policy: &Policy) -> std::time::Duration {
    policy.repeat_window()
}

/// The answer to a POST body that is not one readable JSON-RPC message: `reason` is always
/// `invalid_message`, `detail` the bounded label of what could not be read.
pub fn invalid_message_rejection(id: Option<&RawValue>, detail: &'static str) -> Rejection {
    let error = ErrorObject::gateway(
        codes::INVALID_REQUEST,
        "Not a JSON-RPC message the gateway can read",
        serde_json::json!({ "reason": "invalid_message", "detail": detail }),
    );
    Rejection {
        status: StatusCode::BAD_REQUEST,
        body: error.response(id),
    }
}

/// The error for an answer that does not fit what was asked.
fn answer_error(verdict: &Verdict) -> ErrorObject {
    ErrorObject::gateway(
        codes::INVALID_PARAMS,
        "Elicitation answer rejected by gateway policy",
        serde_json::json!({ "rules": verdict.denied_by.iter().map(|r| r.as_str()).collect::<Vec<_>>() }),
    )
}

/// The client's answer was refused: 400 with a JSON-RPC error naming the rules.
fn answer_rejection(id: Option<&Value>, verdict: &Verdict) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        body: answer_error(verdict).response(id),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
