//! Live enforcement: where the pure decision ([`elicitgate_core::inspect`]) meets traffic.
//!
//! Owns, for every exchange, the facts the decision needs (era, session, caller, declared
//! capabilities, association), the state between messages (behind [`state::StateStore`]:
//! embedded, or shared by replicas), and acting on a verdict: forwarding, removing a blocked
//! elicitation from a stream and answering the server itself, replacing a blocked 2026-07-28
//! result with an error, and rejecting answers that do not fit what was asked. Every decision
//! is recorded through [`record::Recorder`], the one place that updates metrics and writes
//! audit events.
//!
//! Client side ([`Enforcer::on_client_message`]), in order: the session's principal binding
//! (identity on, `sessions`), capability shaping (`initialize`, 2026 `_meta`), answer checks
//! ([`answers`]: legacy JSON-RPC responses, 2026 `inputResponses`, tasks `tasks/update`).
//! Server side ([`judge`]): SSE events one at a time and whole JSON bodies. Only messages
//! that carry an elicitation, an answer or an `initialize` touch the store.

pub mod answers;
pub mod caller;
pub mod judge;
pub mod prescan;
pub mod record;
pub mod refusal;
pub mod releases;
mod resumes;
pub mod server;
mod sessions;
pub mod shaping;

use crate::state::table::TtlTable;
use crate::state::{
    PendingKey, Scope, SessionKey, StateStore, StoreResult, Take, Taken, Unavailable,
};
use arc_swap::ArcSwap;
use bytes::Bytes;
pub use caller::Caller;
use elicitgate_core::elicitation::{self, ClientCaps};
use elicitgate_core::inspect::{self, Era, UnknownAnswer};
use elicitgate_core::mcp::jsonrpc::{Envelope, Kind};
use elicitgate_core::mcp::message;
use elicitgate_core::policy::{Policy, PolicySet};
use elicitgate_core::request::session_of;
use http::{HeaderMap, HeaderName, HeaderValue};
use record::Recorder;
pub use refusal::{Refusal, RefusalKind, SessionRefusal};
use releases::{Release, Releases};
use serde_json::value::RawValue;
use serde_json::Value;
pub use sessions::AnsweredSession;
use sessions::Binding;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The one session of a stdio connection.
pub const STDIO_SESSION: &str = "stdio";

/// How a client message reached the gateway: what enforcement needs to know of its transport,
/// and nothing more (no HTTP method, no status, no URI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// An HTTP POST: one JSON-RPC message (or batch) in the body.
    Post,
    /// An HTTP GET opening a standalone stream of server messages (not tied to a request).
    Get,
    /// An HTTP GET resuming a stream (`Last-Event-ID`): it replays messages of the request
    /// that opened it.
    Resume,
    /// An HTTP DELETE: the client ends its session.
    Delete,
    /// Any other HTTP method: forwarded as it came.
    OtherHttp,
    /// A line from a stdio client: one client, one session the gateway itself names.
    Stdio,
}

impl Carrier {
    /// An HTTP GET (standalone or resumed): some clients read any successful GET body as an
    /// event stream.
    pub fn is_get(self) -> bool {
        matches!(self, Self::Get | Self::Resume)
    }

    /// Carries one client message to judge (a POST body or a stdio line).
    pub fn carries_message(self) -> bool {
        matches!(self, Self::Post | Self::Stdio)
    }

    /// The transport label of audit events.
    pub fn transport(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            _ => "streamable-http",
        }
    }
}

/// Everything known about one client request, for judging what comes back. Built once per
/// request ([`Enforcer::begin`]) and changed only by enforcement; the transports read it
/// through the accessors below.
#[derive(Clone)]
pub struct Exchange {
    route_name: Arc<str>,
    upstream_label: Arc<str>,
    era: Era,
    session: Option<Arc<str>>,
    /// Why the request's headers cannot be read one way (a header the gateway acts on given
    /// twice; its session named in two ways that could disagree): servers read one of the
    /// values, the gateway cannot know which. Refused before anything else.
    ambiguous: Option<&'static str>,
    /// Who sent the request ([`caller`]).
    caller: Caller,
    /// The 2026-07-28 retry chain, decided on first use ([`Exchange::chain`]).
    chain: OnceLock<Scope>,
    request_id: Option<Box<RawValue>>,
    method: Option<&'static str>,
    kind: Kind,
    /// How the request arrived.
    carrier: Carrier,
    /// False for a standalone GET stream (server messages not tied to a client request).
    associated: bool,
    /// Declared capabilities of an `initialize` request (legacy).
    init_caps: Option<ClientCaps>,
    /// Declared capabilities of a 2026-07-28 request (`_meta`).
    request_caps: Option<ClientCaps>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    call_name: Option<String>,
    /// `params.taskId` of a tasks request.
    task_id: Option<String>,
    /// The pending elicitation this exchange's answer consumed (put back if undelivered).
    taken: Option<Arc<answers::Consumed>>,
    /// The carrier's id of the request (HTTP: the access-log line's `request_id`).
    trace_ref: Option<Arc<str>>,
}

impl Exchange {
    /// The carrier's id of the request (HTTP: the access-log line's `request_id`).
    pub fn trace_ref(&self) -> Option<&str> {
        self.trace_ref.as_deref()
    }

    /// The route's name (a metrics and audit label).
    pub fn route_name(&self) -> &Arc<str> {
        &self.route_name
    }

    /// The client's JSON-RPC request id, if it sent a request.
    pub fn request_id(&self) -> Option<&RawValue> {
        self.request_id.as_deref()
    }

    /// What the client sent: a request, a notification, a response, …
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// How the request arrived.
    pub fn carrier(&self) -> Carrier {
        self.carrier
    }

    /// A stream of this exchange forwarded an event with SSE `id`: a request's stream in a
    /// session is remembered, so that a client resuming after it stays associated.
    pub fn forwarded_event(&self, enforcer: &Enforcer, id: &str) {
        if let (true, Some(session)) = (self.associated, &self.session) {
            if matches!(self.carrier, Carrier::Post | Carrier::Resume) {
                enforcer.resumes.remember(&self.route_name, session, id);
            }
        }
    }

    /// The 2024-11-05 HTTP+SSE transport announced this stream's session (its `endpoint`
    /// event): every server message on the stream belongs to it and is associated.
    pub fn announced(&mut self, session: Option<Arc<str>>) {
        self.session = session;
        self.associated = true;
    }

    /// A stdio server's own message (not a response to a client request): associated only
    /// when a client request is in flight (SEP-2260).
    pub fn unsolicited(mut self, associated: bool) -> Self {
        self.associated = associated;
        self
    }

    /// Keyed identity of the caller.
    pub fn principal(&self) -> &Scope {
        self.caller.principal()
    }

    /// The verified principal, when identity is on.
    pub fn verified_principal(&self) -> Option<&Scope> {
        self.caller.verified_principal()
    }

    /// The tool a `tools/call` request runs (`params.name`), for per-tool policy.
    pub fn tool_name(&self) -> Option<&str> {
        if self.method == Some("tools/call") {
            self.call_name.as_deref()
        } else {
            None
        }
    }

    /// The scope rate limits, repeat detection and completions are counted in
    /// ([`caller`]): the verified principal; else the legacy session; else the 2026 retry
    /// chain.
    pub fn scope(&self) -> Scope {
        if let Some(principal) = self.caller.verified_principal() {
            return principal.clone();
        }
        match (&self.era, &self.session) {
            (Era::Stateless2026, _) => self.chain().clone(),
            (_, Some(s)) => caller::digest_scope("s:", s.as_bytes()),
            (_, None) => self.principal().clone(),
        }
    }

    /// The 2026-07-28 retry chain of this request: the one its retry continues, else a new one.
    pub fn chain(&self) -> &Scope {
        self.chain.get_or_init(caller::new_chain)
    }

    /// This request continues `chain` (its `requestState` was issued in it).
    fn continue_chain(&mut self, chain: &str) {
        self.chain = OnceLock::new();
        let _ = self.chain.set(Scope::from(chain));
    }

    /// The per-address scope, when the policy limits per address.
    fn address_scope(&self, policy: &Policy) -> Option<Scope> {
        policy
            .limits_per_address()
            .then(|| self.caller.address_scope())
            .flatten()
    }

    /// Whether a JSON response to this request must be read whole and judged.
    pub fn judges_json_response(&self) -> bool {
        self.kind == Kind::Request
    }

    fn session_key(&self) -> Option<SessionKey> {
        self.session.as_ref().map(|s| SessionKey {
            route: self.route_name.clone(),
            session: s.clone(),
        })
    }
}

/// What to do with a client message.
#[derive(Debug)]
pub enum ClientVerdict {
    /// Forward this body (the original, or a capability-shaped rewrite).
    Forward(Bytes),
    /// Forward nothing of it; answer the client (and, when [`Refusal::tell_server`], the
    /// waiting server) as the carrier maps the refusal.
    Refuse(Refusal),
}

/// Bounds and times of enforcement that do not depend on the backend.
#[derive(Debug, Clone)]
pub struct EnforcerLimits {
    /// Releases held at once (legacy elicitations this process forwarded, unanswered).
    pub max_pending: usize,
    /// Session bindings cached (identity on).
    pub max_sessions: usize,
    /// Elicitations judged per response before the rest of it is refused.
    pub max_elicitations_per_response: usize,
    /// Sliding expiry of a legacy session's declared modes.
    pub session_ttl: Duration,
}

/// The enforcement engine shared by all connections.
pub struct Enforcer {
    policies: Arc<ArcSwap<PolicySet>>,
    store: Arc<dyn StateStore>,
    /// What this process owes the servers it forwarded legacy elicitations for.
    releases: Releases,
    /// Sessions' principals (identity on), so that a binding costs one store read per
    /// session and process, not one per request. `None`: the store knows no owner.
    bindings: Mutex<TtlTable<SessionKey, Binding>>,
    session_ttl: Duration,
    /// Event ids of request streams, so that resuming one is told from resuming another.
    resumes: resumes::Resumes,
    pub recorder: Recorder,
    /// `limits.max_elicitations_per_response`.
    pub max_per_response: usize,
}

/// What the transport knows of one client request when enforcement begins.
pub struct RequestFacts<'a> {
    pub route_name: Arc<str>,
    pub upstream_label: Arc<str>,
    pub carrier: Carrier,
    /// The request's headers (none for stdio).
    pub headers: Option<&'a HeaderMap>,
    pub envelope: &'a Envelope,
    pub caller: Caller,
    /// The request URI's query (the 2024-11-05 transport names its session there).
    pub query: Option<&'a str>,
    /// The carrier's id of the request (HTTP: the access-log line's), for audit events.
    pub trace_ref: Option<Arc<str>>,
}

impl<'a> RequestFacts<'a> {
    /// The facts of one line from a stdio client.
    pub fn stdio(route_name: Arc<str>, envelope: &'a Envelope) -> Self {
        Self {
            route_name,
            upstream_label: Arc::from("stdio"),
            carrier: Carrier::Stdio,
            headers: None,
            envelope,
            caller: Caller::fixed("stdio"),
            query: None,
            trace_ref: None,
        }
    }
}

impl Enforcer {
    pub fn new(
        policies: Arc<ArcSwap<PolicySet>>,
        store: Arc<dyn StateStore>,
        limits: EnforcerLimits,
        recorder: Recorder,
    ) -> Self {
        Self {
            max_per_response: limits.max_elicitations_per_response.max(1),
            policies,
            store,
            releases: Releases::new(limits.max_pending),
            bindings: Mutex::new(TtlTable::new(limits.max_sessions)),
            resumes: resumes::Resumes::new(limits.max_sessions, limits.session_ttl),
            session_ttl: limits.session_ttl,
            recorder,
        }
    }

    /// The policy snapshot for `route`: read once per message.
    pub fn policy(&self, route: &str) -> Arc<Policy> {
        self.policies.load().for_route(route)
    }

    /// The policy that judges the elicitations of `ex`: its route's, or the per-tool
    /// override for the `tools/call` that raised them.
    pub fn policy_for(&self, ex: &Exchange) -> Arc<Policy> {
        self.policy(&ex.route_name).for_tool(ex.tool_name())
    }

    pub fn policies(&self) -> &Arc<ArcSwap<PolicySet>> {
        &self.policies
    }

    /// The state store (for its health check).
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// Counts a store failure (`operation` is a bounded label) or marks the store healthy.
    fn noted<T>(&self, operation: &'static str, result: StoreResult<T>) -> StoreResult<T> {
        match &result {
            Ok(_) => self.recorder.store_health(true, None),
            Err(Unavailable) => self.recorder.store_health(false, Some(operation)),
        }
        result
    }

    /// Drops expired state; called periodically. Servers still waiting for an answer the
    /// gateway stopped tracking are told so.
    pub async fn sweep(&self) {
        self.store.sweep();
        let due = self.releases.sweep();
        self.release(due).await;
        self.gauges();
        self.recorder.auditor.flush_suppressed(false);
    }

    fn gauges(&self) {
        let (sessions, asked) = self.store.counts();
        self.recorder.pending(self.releases.len() + asked, sessions);
    }

    /// Ends the server's call for each legacy elicitation this process stopped tracking
    /// (expired, evicted) if it is still unanswered in the store: the server gets a JSON-RPC
    /// error for its request id, so no call waits forever for an answer that can no longer
    /// come through the gateway.
    pub(crate) async fn release(&self, due: Vec<releases::Due>) {
        for (key, release, why) in due {
            let reason = match why {
                crate::state::table::Dropped::Expired => "expired",
                crate::state::table::Dropped::Evicted => "evicted",
                crate::state::table::Dropped::Cleared => "cleared",
            };
            self.release_if_pending(&key, release, reason).await;
        }
    }

    /// Takes `key` from the store for release; tells the server unless somebody answered.
    /// This process still holds the release, so nobody forgot the elicitation on purpose: an
    /// entry the store no longer has (restarted, flushed, failed over, evicted) was lost, and
    /// is released like an expired one. With the store unavailable the server is told anyway.
    /// A late error for an answered call is ignored by its server; a call left waiting is not.
    async fn release_if_pending(&self, key: &PendingKey, release: Release, reason: &'static str) {
        let taken = self
            .store
            .take_pending(key, Take::Release, Duration::ZERO)
            .await;
        match self.noted("take_pending", taken) {
            Ok(Taken::Pending(_)) | Err(Unavailable) => self.release_one(release, reason),
            Ok(Taken::Absent) => {
                tracing::warn!(route = %release.exchange.route_name, reason, "The state store lost a pending elicitation; its server's call is ended as if it expired.");
                self.release_one(release, reason)
            }
            Ok(Taken::Answered) => {}
        }
    }

    pub(crate) fn release_one(&self, release: Release, reason: &'static str) {
        let body = refusal::undeliverable(&release.id, reason);
        self.recorder.pending_released(&release.exchange, reason);
        release
            .channel
            .answer(&release.exchange, body, &self.recorder);
    }

    /// Starts an exchange for one client request, whatever carried it.
    pub fn begin(&self, facts: RequestFacts<'_>) -> Exchange {
        let RequestFacts {
            route_name,
            upstream_label,
            carrier,
            headers,
            envelope,
            caller,
            query,
            trace_ref,
        } = facts;
        let acted_on = headers.map(ActedOn::read).unwrap_or_default();
        let header = |i: usize| acted_on.values[i].and_then(|v| v.to_str().ok());
        let mut ambiguous = acted_on.repeated;
        let (session, era) = match carrier {
            Carrier::Stdio => (Some(Arc::from(STDIO_SESSION)), Era::Legacy2025_11),
            _ => {
                let (session, two_ways) = session_of(header(SESSION), query);
                if two_ways {
                    ambiguous = ambiguous.or(Some("session.ambiguous"));
                }
                (session, Era::of_header(header(PROTOCOL)))
            }
        };
        // A resumed stream replays the messages of the request stream that carried the event
        // it resumes after; resuming any other stream (the standalone one, or after an id the
        // gateway never forwarded on a request stream of this session) is not associated with
        // a request.
        let associated = match carrier {
            Carrier::Get => false,
            Carrier::Resume => match (&session, header(LAST_EVENT)) {
                (Some(s), Some(id)) => self.resumes.resumes_request(&route_name, s, id),
                _ => false,
            },
            _ => true,
        };
        Exchange {
            route_name,
            upstream_label,
            era,
            session,
            ambiguous,
            caller,
            chain: OnceLock::new(),
            request_id: envelope.id.clone(),
            method: envelope.method,
            kind: envelope.kind,
            carrier,
            associated,
            init_caps: None,
            request_caps: None,
            call_name: envelope.tool.clone(),
            task_id: None,
            taken: None,
            trace_ref,
        }
    }

    /// Judges a client message before it is forwarded.
    pub async fn on_client_message(&self, ex: &mut Exchange, body: Bytes) -> ClientVerdict {
        if let Some(why) = ex.ambiguous {
            // Streamable HTTP servers read the session header, HTTP+SSE servers the query (the
            // TypeScript SDK the first `sessionId`, Python's Starlette the last `session_id`);
            // of a repeated header, Starlette reads the first value, Node joins them with
            // ", ": judged as one thing, acted on as another. Refused.
            self.recorder.refused(ex, "client", why);
            return ClientVerdict::Refuse(Refusal::unreadable(ex.request_id.as_deref(), why));
        }
        if let Some(refused) = self.check_binding(ex).await {
            return refused;
        }
        if ex.carrier == Carrier::Delete {
            // The session's state goes once the server confirms it ended the session
            // ([`Enforcer::on_server_answer`]): a DELETE the server refuses changes nothing.
            return ClientVerdict::Forward(body);
        }
        let message_carrier = ex.carrier.carries_message();
        if message_carrier && ex.kind == Kind::Batch && batch_carries_answers(&body) {
            // Batches ended with 2025-03-26, before elicitation existed: a batch that carries
            // elicitation answers cannot be legitimate, and would slip past the answer checks.
            let policy = self.policy(&ex.route_name);
            let verdict = inspect::unknown_response(UnknownAnswer::UnknownId, &policy);
            self.recorder.answer_rejected(ex, None, &verdict);
            if verdict.is_deny() {
                return ClientVerdict::Refuse(Refusal::answer(None::<&Value>, &verdict));
            }
        }
        if message_carrier && ex.kind == Kind::Invalid {
            // Not one JSON-RPC message the gateway can read (bad JSON, a member given twice,
            // neither `id` nor `method`, a request and a response at once): refused, not
            // forwarded unread. A server that reads it differently (the last of two `method`
            // members, say) would otherwise act on a message the gateway never judged.
            self.recorder.refused(ex, "client", "jsonrpc.shape");
            return ClientVerdict::Refuse(Refusal::unreadable(None::<&Value>, "jsonrpc.shape"));
        }
        if !message_carrier
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
                return ClientVerdict::Refuse(Refusal::unreadable(
                    ex.request_id.as_deref(),
                    why.reason(),
                ));
            }
        };
        let policy = self.policy(&ex.route_name);
        if let Some(version) = message::member(
            &message,
            &["params", "_meta", "io.modelcontextprotocol/protocolVersion"],
        )
        .and_then(Value::as_str)
        {
            if Era::from_protocol_version(version) == Some(Era::Stateless2026) {
                ex.era = Era::Stateless2026;
            }
        }
        if is_response {
            return self.on_client_answer(ex, &policy, &message, body).await;
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
            if let Some(reject) = self.on_input_responses(ex, &policy, &message).await {
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
                if ex.carrier == Carrier::Stdio {
                    let _ = self.remember_session(ex, &session, false).await;
                } else {
                    self.declare_announced_session(ex, &session).await;
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
    pub fn refuse_client(&self, ex: &Exchange, reason: &'static str) -> Refusal {
        self.recorder.refused(ex, "client", reason);
        Refusal::encoding(ex.request_id.as_deref(), reason)
    }

    /// An upstream response that cannot be read as a client would read it (transport stage):
    /// refused and recorded. A request's client gets the blocked-content error for its own id;
    /// anything else an error without one.
    pub fn refuse_server(&self, ex: &Exchange, reason: &'static str) -> Refusal {
        tracing::warn!(route = %ex.route_name, reason, "Refused an upstream response the gateway cannot read as a client would.");
        self.recorder.refused(ex, "server", reason);
        let id = match ex.kind {
            Kind::Request => ex.request_id.as_deref(),
            _ => None,
        };
        Refusal::server_content(
            id,
            &[elicitgate_core::inspect::RuleId::RequestMalformed],
            Some(reason),
        )
    }
}

/// Request headers the gateway acts on, each allowed once, with the label of its refusal.
/// Readers of a repeated field disagree: Starlette (the Python SDK's servers) takes the first
/// value, Node's `http` (the TypeScript SDK's) joins the values with ", ", hyper's `get` the
/// first; the gateway would judge one session, version or credential and the server use
/// another.
static SINGLE_HEADERS: [(HeaderName, &str); 5] = [
    (
        HeaderName::from_static("mcp-session-id"),
        "header.mcp-session-id.repeated",
    ),
    (
        HeaderName::from_static("mcp-protocol-version"),
        "header.mcp-protocol-version.repeated",
    ),
    (
        HeaderName::from_static("last-event-id"),
        "header.last-event-id.repeated",
    ),
    (http::header::AUTHORIZATION, "header.authorization.repeated"),
    (http::header::CONTENT_TYPE, "header.content-type.repeated"),
];

/// Indexes into [`SINGLE_HEADERS`] of the headers `begin` reads.
const SESSION: usize = 0;
const PROTOCOL: usize = 1;
const LAST_EVENT: usize = 2;

/// The headers of [`SINGLE_HEADERS`] as one pass over the request's headers found them:
/// each one's value, and the refusal label of the first given more than once.
#[derive(Default)]
struct ActedOn<'a> {
    values: [Option<&'a HeaderValue>; 5],
    repeated: Option<&'static str>,
}

impl<'a> ActedOn<'a> {
    fn read(headers: &'a HeaderMap) -> Self {
        let mut out = ActedOn::default();
        let mut seen = [0u8; 5];
        for (name, value) in headers {
            let Some(i) = SINGLE_HEADERS.iter().position(|(n, _)| n == name) else {
                continue;
            };
            seen[i] = seen[i].saturating_add(1);
            out.values[i].get_or_insert(value);
        }
        out.repeated = SINGLE_HEADERS
            .iter()
            .zip(seen)
            .find(|(_, n)| *n > 1)
            .map(|((_, label), _)| *label);
        out
    }
}

/// True when a JSON-RPC batch holds an elicitation answer (an `ElicitResult`-shaped result or
/// `inputResponses`) or anything the pre-scan flags. Batches are rare; they are parsed whole.
fn batch_carries_answers(body: &[u8]) -> bool {
    if prescan::may_carry_elicitation(body) {
        return true;
    }
    match serde_json::from_slice::<Vec<Value>>(body) {
        Ok(items) => items
            .iter()
            .any(|m| message::member(m, &["result", "action"]).is_some()),
        // Not a batch a client could mean: left to the server to refuse.
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests;
