//! Server side of enforcement: judging what the upstream sends, one message at a time.
//!
//! Owns the three carriers as they arrive from a server: a legacy `elicitation/create`
//! request (on a POST's SSE stream or the GET stream), an `input_required` result (JSON body or
//! the final SSE event; tasks `tasks/get` too), a `-32042` error; plus
//! `notifications/elicitation/complete`. A blocked legacy request is removed from the stream
//! and the gateway answers the server itself; a blocked result or error is replaced by a
//! JSON-RPC error for the client's request id that names the rules and nothing of the blocked
//! content.

use super::state::{Asked, AskedEntry, Pending, PendingKey, SessionKey};
use super::{Enforcer, Exchange, POLICY_BLOCKED_CODE};
use crate::elicitation::{self, Carrier, ClientCaps, ElicitationView, Mode, ModeField};
use crate::inspect::{self, AskedElicitation, InspectContext, RuleId, UnknownAnswer, Verdict};
use crate::mcp::sse::{encode_event, SseFields};
use crate::policy::{OnBlock, Policy};
use crate::proxy::upstream::Upstream;
use crate::proxy::EndpointMap;
use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// What to do with one server message.
pub enum ServerVerdict {
    Keep,
    /// Remove it (a blocked legacy elicitation, or a completion for an unknown id).
    Drop,
    /// Replace it with this message.
    Replace(Value),
}

/// How the gateway reaches the server to answer a blocked elicitation itself.
#[derive(Clone)]
pub enum ServerChannel {
    /// POST to the upstream, in the client's session.
    Http(Upstream),
    /// Write a line to the server process's stdin. Weak, so that the client side alone keeps
    /// the child's stdin open (client EOF must reach the child).
    Stdio(tokio::sync::mpsc::WeakUnboundedSender<Bytes>),
}

/// Judges the events of one SSE response; owned by the relay of that response.
pub struct StreamJudge {
    pub enforcer: Arc<Enforcer>,
    pub exchange: Exchange,
    pub channel: ServerChannel,
    /// Rewrites the HTTP+SSE transport's `endpoint` event to a gateway path.
    pub endpoints: Option<EndpointMap>,
    /// Legacy elicitations this stream forwarded. Those still unanswered when the stream
    /// carries the final response are forgotten: their request is over, a late answer is
    /// `response.unknown`. (A stream that closes early — resumable servers poll — keeps them
    /// until their TTL.)
    forwarded: Vec<PendingKey>,
    request_done: bool,
}

impl StreamJudge {
    pub fn new(
        enforcer: Arc<Enforcer>,
        exchange: Exchange,
        channel: ServerChannel,
        endpoints: Option<EndpointMap>,
    ) -> Self {
        Self {
            enforcer,
            exchange,
            channel,
            endpoints,
            forwarded: Vec::new(),
            request_done: false,
        }
    }
}

impl StreamJudge {
    /// The bytes to forward for one raw event, or `None` to forward nothing.
    pub fn judge_event(&mut self, raw: Bytes) -> Option<Bytes> {
        let fields = SseFields::parse(&raw);
        if fields.event == Some(&b"endpoint"[..]) {
            return self.rewrite_endpoint(&fields);
        }
        let Some(data) = fields.data.as_deref().filter(|d| !d.is_empty()) else {
            return Some(raw);
        };
        if !self.forwarded.is_empty() && !self.request_done {
            let envelope = crate::mcp::jsonrpc::Envelope::peek(data);
            self.request_done = envelope.kind == crate::mcp::jsonrpc::Kind::Response
                && envelope.id.as_deref().map(|i| i.get())
                    == self.exchange.request_id.as_deref().map(|i| i.get());
            if self.request_done {
                self.enforcer.forget_pending(&self.forwarded);
            }
        }
        if !super::prescan::may_carry_elicitation(data) {
            return Some(raw);
        }
        let verdict = match serde_json::from_slice::<Value>(data) {
            Ok(message) => {
                let verdict =
                    self.enforcer
                        .judge_server_message(&self.exchange, &message, &self.channel);
                if let (ServerVerdict::Keep, Some(elicitation::ELICITATION_CREATE), Some(id)) = (
                    &verdict,
                    message.get("method").and_then(Value::as_str),
                    message.get("id"),
                ) {
                    self.forwarded.push(PendingKey {
                        route: self.exchange.route,
                        session: self
                            .exchange
                            .session
                            .clone()
                            .unwrap_or_else(|| Arc::from("")),
                        id: id.to_string(),
                    });
                }
                verdict
            }
            // It names an elicitation but cannot be judged: fail closed.
            Err(_) => {
                tracing::warn!(route = %self.exchange.route_name, "Dropped an SSE event that mentions elicitation but is not JSON.");
                ServerVerdict::Drop
            }
        };
        let id = fields.id.and_then(|i| std::str::from_utf8(i).ok());
        match verdict {
            ServerVerdict::Keep => Some(raw),
            // Keep the event id so a client resuming with Last-Event-ID stays in step.
            ServerVerdict::Drop => id.map(|id| Bytes::from(format!("id: {id}\n\n"))),
            ServerVerdict::Replace(message) => {
                let event = fields.event.and_then(|e| std::str::from_utf8(e).ok());
                Some(encode_event(event, id, &message.to_string()))
            }
        }
    }
}

impl StreamJudge {
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
        self.exchange.session = session;
        match upstream_uri.parse() {
            Ok(uri) => self.exchange.upstream_uri = uri,
            Err(_) => {
                tracing::error!(route = %self.exchange.route_name, "Dropped an HTTP+SSE endpoint that is not a valid URI.");
                return None;
            }
        }
        self.exchange.associated = true;
        let id = fields.id.and_then(|i| std::str::from_utf8(i).ok());
        Some(encode_event(Some("endpoint"), id, &gateway_uri))
    }
}

impl Enforcer {
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

    /// Judges a whole JSON response body; returns the body to send.
    pub fn judge_json_body(&self, ex: &Exchange, body: Bytes, channel: &ServerChannel) -> Bytes {
        if !super::prescan::may_carry_elicitation(&body) {
            return body;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        match self.judge_server_message(ex, &message, channel) {
            ServerVerdict::Keep => body,
            ServerVerdict::Replace(v) => Bytes::from(v.to_string()),
            ServerVerdict::Drop => Bytes::from(
                blocked_error(message.get("id"), &[RuleId::RequestMalformed]).to_string(),
            ),
        }
    }

    /// Judges one message from the server.
    pub fn judge_server_message(
        &self,
        ex: &Exchange,
        message: &Value,
        channel: &ServerChannel,
    ) -> ServerVerdict {
        if message.is_array() {
            // Batches (2025-03-26 only) are not judged element by element: one that carries an
            // elicitation is removed whole.
            tracing::warn!(route = %ex.route_name, "Dropped a JSON-RPC batch that mentions elicitation.");
            return ServerVerdict::Drop;
        }
        match message.get("method").and_then(Value::as_str) {
            Some(elicitation::ELICITATION_CREATE) => {
                return self.judge_legacy(ex, message, channel)
            }
            Some("notifications/elicitation/complete") => {
                return self.judge_completion(ex, message)
            }
            Some(_) => return ServerVerdict::Keep,
            None => {}
        }
        if let Some(result) = message.get("result") {
            if result.get("inputRequests").is_some()
                || result.get("resultType").and_then(Value::as_str) == Some("input_required")
            {
                return self.judge_input_required(ex, message, result);
            }
        }
        if let Some(code) = message.pointer("/error/code").and_then(Value::as_f64) {
            if code == -32042.0 {
                return self.judge_url_required(ex, message);
            }
        }
        ServerVerdict::Keep
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
            .map(|s| s.caps)
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
                OnBlock::Decline => json!({"jsonrpc":"2.0","id":id,"result":{"action":"decline"}}),
                OnBlock::Error => blocked_error_with_code(Some(id), -32602, &verdict.denied_by),
            };
            answer_server(self, ex, channel, Bytes::from(answer.to_string()));
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
        state.pending.insert(
            PendingKey {
                route: ex.route,
                session: ex.session.clone().unwrap_or_else(|| Arc::from("")),
                id: id.to_string(),
            },
            Pending {
                asked,
                asked_at: now,
                fingerprint,
                mode,
                scope,
                elicitation_id,
            },
            now,
            ttl,
        );
        self.recorder
            .pending(state.pending_count(), state.sessions.len());
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
            return ServerVerdict::Replace(blocked_error(message.get("id"), &denied));
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
            state.asked.insert(
                key,
                Asked {
                    entries,
                    asked_at: now,
                    scope: ex.scope(),
                },
                now,
                policy.pending_ttl(),
            );
            self.recorder
                .pending(state.pending_count(), state.sessions.len());
        }
        ServerVerdict::Keep
    }

    fn judge_url_required(&self, ex: &Exchange, message: &Value) -> ServerVerdict {
        let now = Instant::now();
        let policy = self.policy(&ex.route_name);
        let caps = self.session_caps(ex, now);
        let views = elicitation::from_url_required_error(message);
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
            return ServerVerdict::Replace(blocked_error(message.get("id"), &denied));
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

fn mode_of(view: &ElicitationView<'_>) -> Mode {
    match view.mode_field() {
        ModeField::Known(mode) => mode,
        ModeField::Unknown => Mode::Form,
    }
}

/// The error a client gets instead of a blocked result: its own request id, the rule ids,
/// nothing of the blocked content.
pub fn blocked_error(id: Option<&Value>, rules: &[RuleId]) -> Value {
    blocked_error_with_code(id, POLICY_BLOCKED_CODE, rules)
}

fn blocked_error_with_code(id: Option<&Value>, code: i64, rules: &[RuleId]) -> Value {
    let rules: Vec<&str> = rules.iter().map(|r| r.as_str()).collect();
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {
            "code": code,
            "message": "Elicitation blocked by gateway policy",
            "data": {"gateway": "elicitgate", "rules": rules}
        }
    })
}

/// A JSON-RPC error response the gateway sends to the server for `id`.
pub fn error_response_body(id: &Value, code: i64, message: &str, verdict: &Verdict) -> Bytes {
    let rules: Vec<&str> = verdict.denied_by.iter().map(|r| r.as_str()).collect();
    Bytes::from(
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message, "data": {"gateway": "elicitgate", "rules": rules}}
        })
        .to_string(),
    )
}

/// Sends the gateway's own answer to the server: a line on its stdin, or a POST in the
/// background.
fn answer_server(enforcer: &Enforcer, ex: &Exchange, channel: &ServerChannel, body: Bytes) {
    let upstream = match channel {
        ServerChannel::Stdio(tx) => {
            let ok = tx.upgrade().is_some_and(|tx| tx.send(body).is_ok());
            enforcer.recorder.gateway_answer(&ex.route_name, ok);
            return;
        }
        ServerChannel::Http(upstream) => upstream.clone(),
    };
    let uri = ex.upstream_uri.clone();
    let headers: HeaderMap = ex.answer_headers.to_map();
    let recorder = enforcer.recorder.clone();
    let route = ex.route_name.clone();
    tokio::spawn(async move {
        let mut request = match Request::post(uri).body(Full::new(body)) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "Could not build the gateway's answer.");
                return;
            }
        };
        *request.headers_mut() = headers;
        let ok = match upstream.send(request).await {
            Ok((response, lease)) => {
                let status = response.status();
                if response.into_body().collect().await.is_ok() {
                    crate::proxy::upstream::release(lease);
                }
                status.is_success()
            }
            Err(e) => {
                tracing::warn!(route = %route, error = %e, "The server did not take the gateway's answer.");
                false
            }
        };
        recorder.gateway_answer(&route, ok);
    });
}

/// The carrier name of a view, for records.
pub fn carrier_name(carrier: Carrier) -> &'static str {
    carrier.as_str()
}
