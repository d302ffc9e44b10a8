//! Server side of enforcement: judging what the upstream sends, one message at a time.
//!
//! Owns the three carriers as they arrive from a server: a legacy `elicitation/create`
//! request (on a POST's SSE stream or the GET stream), an `input_required` result (JSON body or
//! an SSE event; tasks `tasks/get` too), a `-32042` error; plus
//! `notifications/elicitation/complete`. A blocked legacy request is removed from the stream
//! and the gateway answers the server itself (through [`AnswerServer`], which the transports
//! implement); a blocked result or error is replaced by a JSON-RPC error for the client's
//! request id that names the rules and nothing of the blocked content.
//!
//! Every server message text enters through [`Enforcer::judge_server_text`], whatever carried
//! it (SSE event, JSON body, stdio line): byte pre-scan, strict read
//! ([`crate::mcp::message::read`]), exactly one JSON-RPC shape, judgment. A text that names an
//! elicitation carrier but cannot be read that way is [`ServerVerdict::Refuse`]d (fail closed).

use super::state::{Asked, AskedEntry, Pending, PendingKey, Release, SessionKey};
use super::{Enforcer, Exchange};
use crate::elicitation::{self, ClientCaps, ElicitationView, Mode, ModeField};
use crate::inspect::{self, AskedElicitation, Era, InspectContext, RuleId, UnknownAnswer, Verdict};
use crate::mcp::jsonrpc::{self, canonical_id, codes, ErrorObject, Shape};
use crate::mcp::message::{self, Unreadable};
use crate::mcp::sse::{encode_event, SseFields};
use crate::policy::{OnBlock, Policy};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// What to do with one server message.
#[derive(Debug)]
pub enum ServerVerdict {
    Keep,
    /// Remove it (a blocked legacy elicitation, or a completion for an unknown id).
    Drop,
    /// Replace it with this message.
    Replace(Value),
    /// It names an elicitation carrier but cannot be read as a client would read it: not
    /// forwarded; the reason is a bounded label.
    Refuse(&'static str),
}

/// How the gateway answers a server itself (for a blocked legacy elicitation): a POST in the
/// client's session, or a line on the server's stdin. Implemented by the transports, so that
/// enforcement decides and never does I/O itself.
pub trait AnswerServer: Send + Sync {
    /// Sends `body` (a JSON-RPC response) to the server on behalf of `ex`'s client; reports
    /// whether it was taken through `recorder`.
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &super::record::Recorder);
}

/// Refusal reason for a response carrying more than `limits.max_elicitations_per_response`.
pub const TOO_MANY: &str = "elicitations_per_response";

/// The answering side of one exchange.
pub type ServerChannel = Arc<dyn AnswerServer>;

/// Maps the URI a 2024-11-05 HTTP+SSE server announces in its `endpoint` event to the gateway
/// path a client must use instead, and the upstream URI it stands for (implemented by the
/// route table).
pub trait EndpointRewrite: Send + Sync {
    fn map(&self, announced: &str) -> Option<(String, String)>;
}

/// Judges the events of one SSE response; owned by the relay of that response.
pub struct StreamJudge {
    pub enforcer: Arc<Enforcer>,
    pub exchange: Exchange,
    pub channel: ServerChannel,
    /// Rewrites the HTTP+SSE transport's `endpoint` event to a gateway path.
    pub endpoints: Option<Box<dyn EndpointRewrite>>,
    /// Legacy elicitations this stream forwarded. Those still unanswered when the stream
    /// carries the final response are forgotten: their request is over, a late answer is
    /// `response.unknown`. (A stream that closes early — resumable servers poll — keeps them
    /// until their TTL.)
    forwarded: Vec<PendingKey>,
    /// The response to the client's request went out (kept or replaced).
    request_done: bool,
    /// Why an event was refused: if the stream ends without the response, the client gets
    /// the blocked-content error for its request id instead of waiting forever.
    refused: Option<&'static str>,
    /// Elicitations this stream carried so far.
    elicitations: usize,
    /// The stream carried more than `limits.max_elicitations_per_response`: nothing more of
    /// the upstream is read; the relay ends it.
    cut: bool,
}

impl StreamJudge {
    pub fn new(
        enforcer: Arc<Enforcer>,
        exchange: Exchange,
        channel: ServerChannel,
        endpoints: Option<Box<dyn EndpointRewrite>>,
    ) -> Self {
        Self {
            enforcer,
            exchange,
            channel,
            endpoints,
            forwarded: Vec::new(),
            request_done: false,
            refused: None,
            elicitations: 0,
            cut: false,
        }
    }

    /// True once the stream must end: it carried more elicitations than one response may.
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// The bytes to forward for one raw event, or `None` to forward nothing.
    pub fn judge_event(&mut self, raw: Bytes) -> Option<Bytes> {
        let fields = SseFields::parse(&raw);
        if fields.event == Some(&b"endpoint"[..]) && self.endpoints.is_some() {
            return self.rewrite_endpoint(&fields);
        }
        let Some(data) = fields.data.as_deref().filter(|d| !d.is_empty()) else {
            return Some(raw);
        };
        let id = fields.id.and_then(|i| std::str::from_utf8(i).ok());
        if !fields.is_message() {
            // Clients ignore other event types: nothing in them may be recorded as "what was
            // asked" (a hidden decoy), and nothing a client ignores needs to reach it. Counted;
            // audited when it names an elicitation carrier.
            let recorder = &self.enforcer.recorder;
            if super::prescan::may_carry_elicitation(data) {
                recorder.refused(&self.exchange, "server", "sse.event_type");
            } else {
                recorder.count_refused(&self.exchange, "server", "sse.event_type");
            }
            return id_only(id);
        }
        if self.elicitations >= self.enforcer.max_per_response
            && super::prescan::may_carry_elicitation(data)
        {
            // One more would be past the cap: the stream ends here (each elicitation costs a
            // pending entry or an answer to the server; a hostile stream must not fan out).
            tracing::warn!(route = %self.exchange.route_name, limit = self.enforcer.max_per_response, "Cut a stream carrying too many elicitations.");
            self.enforcer
                .recorder
                .refused(&self.exchange, "server", TOO_MANY);
            self.refused = Some(TOO_MANY);
            self.cut = true;
            return id_only(id);
        }
        let (message, verdict) =
            match self
                .enforcer
                .judge_server_text(&self.exchange, data, &self.channel)
            {
                Judged::Plain => {
                    self.note_response(data);
                    return Some(raw);
                }
                Judged::Read(message, verdict) => (message, verdict),
            };
        self.elicitations += elicitation::extract_all(&message).len();
        match verdict {
            ServerVerdict::Keep => {
                if let (Some(elicitation::ELICITATION_CREATE), Some(id)) = (
                    message.get("method").and_then(Value::as_str),
                    message.get("id"),
                ) {
                    self.forwarded
                        .push(self.enforcer.pending_key(&self.exchange, id));
                }
                self.note_response_value(&message);
                Some(raw)
            }
            ServerVerdict::Drop => id_only(id),
            ServerVerdict::Replace(replacement) => {
                self.note_response_value(&replacement);
                Some(encode_event(None, id, &replacement.to_string()))
            }
            ServerVerdict::Refuse(reason) => {
                self.refused = Some(reason);
                id_only(id)
            }
        }
    }

    /// The client went away before the upstream stream ended. Elicitations this stream showed
    /// and its request's response never came for are released.
    pub fn client_gone(&mut self) {
        if !self.request_done && !self.forwarded.is_empty() {
            self.enforcer.release_pending(&self.forwarded);
            self.forwarded.clear();
        }
    }

    /// The end of the upstream stream. `tail` is what followed the last complete event: a
    /// client may still dispatch it (Python's does when it ends in a lone CR), so it is judged
    /// as an event. If an event was refused and the response never came, the client gets the
    /// blocked-content error for its request id now.
    pub fn finish(&mut self, tail: Option<Bytes>) -> Option<Bytes> {
        let mut out = bytes::BytesMut::new();
        if let Some(tail) = tail {
            if let Some(judged) = self.judge_event(tail) {
                out.extend_from_slice(&judged);
            }
        }
        if let (Some(reason), false) = (self.refused, self.request_done) {
            if let Some(id) = self.exchange.request_id.as_deref() {
                let error =
                    ErrorObject::blocked([RuleId::RequestMalformed.as_str()]).with_reason(reason);
                let body = error.response(Some(id));
                if !out.is_empty() && !out.ends_with(b"\n\n") {
                    out.extend_from_slice(b"\n\n");
                }
                out.extend_from_slice(&encode_event(None, None, &String::from_utf8_lossy(&body)));
                self.request_done = true;
            }
        }
        (!out.is_empty()).then(|| out.freeze())
    }

    /// Notes whether a forwarded text is the response to the client's request. Texts without
    /// a `"result"` or `"error"` member name (progress, logs: most of a stream) are not
    /// parsed for it.
    fn note_response(&mut self, data: &[u8]) {
        if self.request_done || self.exchange.request_id.is_none() {
            return;
        }
        let finder = |needle: &[u8]| memchr::memmem::find(data, needle).is_some();
        if !finder(b"\"result\"") && !finder(b"\"error\"") {
            return;
        }
        let envelope = crate::mcp::jsonrpc::Envelope::peek(data);
        if envelope.kind == crate::mcp::jsonrpc::Kind::Response {
            let theirs = envelope.id.as_deref().map(jsonrpc::canonical_raw_id);
            self.mark_done_if(theirs);
        }
    }

    fn note_response_value(&mut self, message: &Value) {
        if self.request_done || self.exchange.request_id.is_none() {
            return;
        }
        if matches!(jsonrpc::classify(message), Shape::Result | Shape::Error) {
            self.mark_done_if(message.get("id").map(canonical_id));
        }
    }

    fn mark_done_if(&mut self, theirs: Option<String>) {
        let ours = self
            .exchange
            .request_id
            .as_deref()
            .map(jsonrpc::canonical_raw_id);
        if theirs.is_some() && theirs == ours {
            self.request_done = true;
            if !self.forwarded.is_empty() {
                self.enforcer.forget_pending(&self.forwarded);
            }
        }
    }

    /// The 2024-11-05 HTTP+SSE transport announces where the client must POST. The client is
    /// pointed at the gateway instead, this stream learns its session (every server message of
    /// that transport, elicitations included, travels on it), and the gateway's own answers go
    /// to the announced URI. An endpoint that cannot be mapped through this route is dropped:
    /// a client posting straight to the upstream would bypass the gateway.
    fn rewrite_endpoint(&mut self, fields: &SseFields<'_>) -> Option<Bytes> {
        let announced = fields
            .data
            .as_deref()
            .and_then(|d| std::str::from_utf8(d).ok())
            .map(str::trim)?;
        let Some((gateway_uri, upstream_uri)) =
            self.endpoints.as_ref().and_then(|m| m.map(announced))
        else {
            tracing::error!(route = %self.exchange.route_name, "Dropped an HTTP+SSE endpoint that does not map through this route.");
            return None;
        };
        let session = url::Url::parse(&upstream_uri).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "sessionId" || k == "session_id")
                .map(|(_, v)| Arc::<str>::from(v.as_ref()))
        });
        match upstream_uri.parse() {
            Ok(uri) => self.exchange.upstream_uri = uri,
            Err(_) => {
                tracing::error!(route = %self.exchange.route_name, "Dropped an HTTP+SSE endpoint that is not a valid URI.");
                return None;
            }
        }
        // The server created this session: it is the one an `initialize` may declare
        // capabilities for (a forged `?sessionId=` names none).
        if let Some(session) = &session {
            self.enforcer.announce_session(self.exchange.route, session);
        }
        self.exchange.session = session;
        self.exchange.associated = true;
        let id = fields.id.and_then(|i| std::str::from_utf8(i).ok());
        Some(encode_event(Some("endpoint"), id, &gateway_uri))
    }
}

/// An event that keeps only its `id` (so a client resuming with `Last-Event-ID` stays in
/// step), or nothing.
fn id_only(id: Option<&str>) -> Option<Bytes> {
    id.map(|id| Bytes::from(format!("id: {id}\n\n")))
}

/// What [`Enforcer::judge_server_text`] found.
pub enum Judged {
    /// The pre-scan proved it carries no elicitation: forward as is, unparsed.
    Plain,
    /// Read and judged.
    Read(Value, ServerVerdict),
}

impl Enforcer {
    /// The client left a stream before its request was answered: the legacy elicitations it
    /// was shown can no longer be answered through it, so each is released (its server's
    /// call ends with an error) instead of waiting out its time to live.
    pub fn release_pending(&self, keys: &[PendingKey]) {
        let now = Instant::now();
        let mut state = self.state();
        let gone: Vec<Pending> = keys
            .iter()
            .filter_map(|k| state.pending.remove(k, now))
            .collect();
        let expired = state.pending.take_dropped();
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
        drop(state);
        for pending in gone {
            self.release_one(pending, "client_gone");
        }
        self.release(expired);
    }

    /// Drops pending legacy elicitations whose stream has ended.
    pub fn forget_pending(&self, keys: &[PendingKey]) {
        let now = Instant::now();
        let mut state = self.state();
        for key in keys {
            state.pending.remove(key, now);
        }
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
    }

    /// The key a legacy elicitation with JSON-RPC `id` is pending under for `ex`'s session.
    pub fn pending_key(&self, ex: &Exchange, id: &Value) -> PendingKey {
        PendingKey {
            route: ex.route,
            session: ex.session.clone().unwrap_or_else(|| Arc::from("")),
            id: canonical_id(id),
        }
    }

    /// The one entry for a server message text, whatever carried it: byte pre-scan, strict
    /// read, one shape, judgment. Refusals are recorded here.
    pub fn judge_server_text(&self, ex: &Exchange, text: &[u8], channel: &ServerChannel) -> Judged {
        if !super::prescan::may_carry_elicitation(text) {
            return Judged::Plain;
        }
        // Strict JSON here; the one-shape check is the first step of the judgment (a refused
        // shape keeps its parsed message, whose `id` may still name a waiting request).
        let (message, verdict) = match message::parse(text) {
            Ok(message) if message.is_array() => {
                // Batches (2025-03-26 only) are not judged element by element: one that
                // mentions an elicitation carrier is refused whole.
                (message, ServerVerdict::Refuse("jsonrpc.batch"))
            }
            Ok(message) => {
                let verdict = self.judge_server_message(ex, &message, channel);
                (message, verdict)
            }
            Err(why) => (Value::Null, ServerVerdict::Refuse(why.reason())),
        };
        if let ServerVerdict::Refuse(reason) = verdict {
            tracing::warn!(route = %ex.route_name, reason, "Refused a server message that names an elicitation carrier but cannot be read as a client reads it.");
            self.recorder.refused(ex, "server", reason);
        }
        Judged::Read(message, verdict)
    }

    /// Judges a whole JSON response body to the client's request; returns the body to send.
    /// What is refused or dropped becomes the blocked-content error for the client's own
    /// request id (nothing of the server's message is echoed).
    pub fn judge_json_body(&self, ex: &Exchange, body: Bytes, channel: &ServerChannel) -> Bytes {
        match self.judge_server_text(ex, &body, channel) {
            Judged::Plain | Judged::Read(_, ServerVerdict::Keep) => body,
            Judged::Read(_, ServerVerdict::Replace(v)) => Bytes::from(v.to_string()),
            Judged::Read(_, ServerVerdict::Drop) => {
                blocked_response(ex, &[RuleId::RequestMalformed])
            }
            Judged::Read(_, ServerVerdict::Refuse(reason)) => {
                ErrorObject::blocked([RuleId::RequestMalformed.as_str()])
                    .with_reason(reason)
                    .response(ex.request_id.as_deref())
            }
        }
    }

    /// Judges one parsed message from the server, of exactly one JSON-RPC shape.
    pub fn judge_server_message(
        &self,
        ex: &Exchange,
        message: &Value,
        channel: &ServerChannel,
    ) -> ServerVerdict {
        match jsonrpc::classify(message) {
            Shape::Invalid => ServerVerdict::Refuse(Unreadable::Envelope.reason()),
            Shape::Request | Shape::Notification => {
                match message.get("method").and_then(Value::as_str) {
                    Some(elicitation::ELICITATION_CREATE) => {
                        self.judge_legacy(ex, message, channel)
                    }
                    Some("notifications/elicitation/complete") => {
                        self.judge_completion(ex, message)
                    }
                    // A task status notification (or any server message) whose params carry
                    // an `inputRequests` map: a client that shows what it finds would show
                    // these too, so they are judged; a blocked one is removed.
                    _ => match message.get("params") {
                        Some(params) if carries_input_requests(params) => {
                            match self.judge_input_required(ex, params, params) {
                                ServerVerdict::Replace(_) => ServerVerdict::Drop,
                                verdict => verdict,
                            }
                        }
                        _ => ServerVerdict::Keep,
                    },
                }
            }
            Shape::Result => {
                let result = &message["result"];
                if carries_input_requests(result) {
                    self.judge_input_required(ex, message, result)
                } else {
                    ServerVerdict::Keep
                }
            }
            Shape::Error => {
                let code = message
                    .pointer("/error/code")
                    .and_then(jsonrpc::numeric_code);
                if code == Some(codes::URL_ELICITATION_REQUIRED) {
                    self.judge_url_required(ex, message)
                } else {
                    ServerVerdict::Keep
                }
            }
        }
    }

    fn session_caps(&self, ex: &Exchange, now: Instant) -> ClientCaps {
        let Some(session) = &ex.session else {
            return ClientCaps::none();
        };
        let key = SessionKey {
            route: ex.route,
            session: session.clone(),
        };
        let mut state = self.state();
        let ttl = state.limits.session_ttl;
        state.sessions.touch(&key, now, ttl);
        state
            .sessions
            .get(&key, now)
            .and_then(|s| s.caps)
            .unwrap_or_else(ClientCaps::none)
    }

    /// Runs `inspect` on one view with the live facts, counting it for rate limits.
    fn decide(
        &self,
        ex: &Exchange,
        view: &ElicitationView<'_>,
        caps: &ClientCaps,
        policy: &Policy,
        now: Instant,
    ) -> (Verdict, u64) {
        let scope = ex.scope();
        let fingerprint = inspect::fingerprint(view);
        let (declined_recently, recent_count) = {
            let mut state = self.state();
            let declined = state.declined_recently(ex.route, &scope, fingerprint, now);
            (declined, state.count_elicitation(ex.route, &scope, now))
        };
        let ctx = InspectContext {
            associated: ex.associated,
            declined_recently,
            recent_count,
            protocol: ex.era,
        };
        let verdict = inspect::inspect(view, caps, &ctx, policy);
        self.recorder
            .elicitation(ex, view, &verdict, policy, declined_recently);
        (verdict, fingerprint)
    }

    fn judge_legacy(
        &self,
        ex: &Exchange,
        message: &Value,
        channel: &ServerChannel,
    ) -> ServerVerdict {
        let now = Instant::now();
        let policy = self.policy(&ex.route_name);
        let caps = self.session_caps(ex, now);
        let Some(view) = elicitation::from_request(message) else {
            return ServerVerdict::Drop;
        };
        let (verdict, fingerprint) = self.decide(ex, &view, &caps, &policy, now);
        let Some(id) = message.get("id") else {
            // A notification-shaped elicitation cannot be answered; never show it.
            return ServerVerdict::Drop;
        };
        if verdict.is_deny() {
            let answer = match policy.on_block() {
                OnBlock::Decline => Bytes::from(
                    json!({"jsonrpc":"2.0","id":id,"result":{"action":"decline"}}).to_string(),
                ),
                OnBlock::Error => {
                    ErrorObject::blocked(verdict.denied_by.iter().map(|r| r.as_str()))
                        .with_code(codes::INVALID_PARAMS)
                        .response(Some(id))
                }
            };
            channel.answer(ex, answer, &self.recorder);
            return ServerVerdict::Drop;
        }
        let Some(asked) = AskedElicitation::from_view(&view) else {
            // An unknown mode is denied as malformed before this point; never pending.
            return ServerVerdict::Drop;
        };
        let mode = mode_of(&view);
        let scope = ex.scope();
        let elicitation_id = view.elicitation_id().map(str::to_owned);
        let ttl = policy.pending_ttl();
        let mut state = self.state();
        if let (Mode::Url, Some(eid)) = (mode, &elicitation_id) {
            state
                .url_ids
                .insert((ex.route, scope.clone(), eid.clone()), false, now, ttl);
        }
        let key = self.pending_key(ex, id);
        let pending = Pending {
            asked,
            asked_at: now,
            fingerprint,
            mode,
            scope,
            elicitation_id,
            release: Some(Release {
                channel: channel.clone(),
                exchange: Arc::new(ex.clone()),
                id: id.clone(),
            }),
        };
        let weight = pending.weight();
        state
            .pending
            .insert_weighted(key, pending, weight, now, ttl);
        let dropped = state.pending.take_dropped();
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
        drop(state);
        self.release(dropped);
        ServerVerdict::Keep
    }

    fn judge_completion(&self, ex: &Exchange, message: &Value) -> ServerVerdict {
        let now = Instant::now();
        let policy = self.policy(&ex.route_name);
        let eid = message
            .pointer("/params/elicitationId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let key = (ex.route, ex.scope(), eid);
        let fact = {
            let mut state = self.state();
            match state.url_ids.get_mut(&key, now) {
                Some(done) if !*done => {
                    *done = true;
                    None
                }
                Some(_) => Some(UnknownAnswer::CompletionAlreadyCompleted),
                None => Some(UnknownAnswer::CompletionUnknownId),
            }
        };
        self.recorder.completion(ex, fact.is_none());
        let Some(fact) = fact else {
            return ServerVerdict::Keep;
        };
        if inspect::unknown_response(fact, &policy).is_deny() {
            ServerVerdict::Drop
        } else {
            ServerVerdict::Keep
        }
    }

    fn judge_input_required(
        &self,
        ex: &Exchange,
        message: &Value,
        result: &Value,
    ) -> ServerVerdict {
        let now = Instant::now();
        let policy = self.policy(&ex.route_name);
        let caps = ex.request_caps.unwrap_or_else(ClientCaps::none);
        let views: Vec<ElicitationView<'_>> = elicitation::from_input_required(message);
        if views.len() > self.max_per_response {
            return ServerVerdict::Refuse(TOO_MANY);
        }
        let mut denied: Vec<RuleId> = Vec::new();
        let mut entries = HashMap::new();
        for view in &views {
            let (verdict, fingerprint) = self.decide(ex, view, &caps, &policy, now);
            if verdict.is_deny() {
                denied.extend(verdict.denied_by.iter().copied());
            } else if let Some(key) = view.key {
                entries.insert(
                    key.to_owned(),
                    AskedEntry {
                        asked: AskedElicitation::from_view(view),
                        fingerprint,
                        mode: mode_of(view),
                    },
                );
            }
        }
        if !denied.is_empty() {
            denied.sort_by_key(|r| r.as_str());
            denied.dedup();
            return ServerVerdict::Replace(blocked_value(ex, message, &denied));
        }
        // Non-elicitation input requests (sampling, roots) are answered too; remember every
        // key so their answers are not mistaken for unknown ones.
        if let Some(map) = result.get("inputRequests").and_then(Value::as_object) {
            for key in map.keys() {
                entries.entry(key.clone()).or_insert_with(|| AskedEntry {
                    asked: None,
                    fingerprint: 0,
                    mode: Mode::Form,
                });
            }
        }
        let task_id = result
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let key = match (&task_id, result.get("requestState").and_then(Value::as_str)) {
            (_, Some(rs)) => self.asked_key(ex, Some(rs)),
            (Some(task), None) => Some(super::state::AskedKey::Task {
                route: ex.route,
                principal: ex.principal().clone(),
                task_id: task.clone(),
            }),
            (None, None) => self.asked_key(ex, None),
        };
        if let Some(key) = key {
            let mut state = self.state();
            let asked = Asked {
                entries,
                asked_at: now,
                scope: ex.scope(),
            };
            let weight = asked.weight();
            state
                .asked
                .insert_weighted(key, asked, weight, now, policy.pending_ttl());
            self.recorder
                .pending(state.pending_count(), state.sessions.len());
        }
        ServerVerdict::Keep
    }

    fn judge_url_required(&self, ex: &Exchange, message: &Value) -> ServerVerdict {
        let now = Instant::now();
        let policy = self.policy(&ex.route_name);
        // A 2026-07-28 client declares its modes on each request; a legacy one per session.
        let caps = match ex.era {
            Era::Stateless2026 => ex.request_caps.unwrap_or_else(ClientCaps::none),
            _ => self.session_caps(ex, now),
        };
        let views = elicitation::from_url_required_error(message);
        if views.len() > self.max_per_response {
            return ServerVerdict::Refuse(TOO_MANY);
        }
        let mut denied: Vec<RuleId> = Vec::new();
        let mut ids = Vec::new();
        for view in &views {
            let (verdict, _) = self.decide(ex, view, &caps, &policy, now);
            if verdict.is_deny() {
                denied.extend(verdict.denied_by.iter().copied());
            } else if let Some(eid) = view.elicitation_id() {
                ids.push(eid.to_owned());
            }
        }
        if !denied.is_empty() {
            denied.sort_by_key(|r| r.as_str());
            denied.dedup();
            return ServerVerdict::Replace(blocked_value(ex, message, &denied));
        }
        let mut state = self.state();
        for eid in ids {
            state.url_ids.insert(
                (ex.route, ex.scope(), eid),
                false,
                now,
                policy.pending_ttl(),
            );
        }
        ServerVerdict::Keep
    }
}

/// True when `value` (a result, or a message's params) holds an `inputRequests` map, on
/// itself or on its `task`, or says it is `input_required`.
fn carries_input_requests(value: &Value) -> bool {
    value.get("inputRequests").is_some()
        || value.pointer("/task/inputRequests").is_some()
        || value.get("resultType").and_then(Value::as_str) == Some("input_required")
}

fn mode_of(view: &ElicitationView<'_>) -> Mode {
    match view.mode_field() {
        ModeField::Known(mode) => mode,
        ModeField::Unknown => Mode::Form,
    }
}

/// The error a client gets instead of a blocked result: its own request id (the carrying
/// message's when the exchange has none), the rule ids, nothing of the blocked content.
fn blocked_value(ex: &Exchange, message: &Value, rules: &[RuleId]) -> Value {
    let error = ErrorObject::blocked(rules.iter().map(|r| r.as_str()));
    match ex.request_id.as_deref() {
        Some(id) => error.response_value(Some(id)),
        None => error.response_value(message.get("id")),
    }
}

/// [`blocked_value`] for a body that could not be read at all: the client's request id only.
pub fn blocked_response(ex: &Exchange, rules: &[RuleId]) -> Bytes {
    ErrorObject::blocked(rules.iter().map(|r| r.as_str())).response(ex.request_id.as_deref())
}
