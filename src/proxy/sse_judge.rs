//! The SSE carrier of server-side enforcement: judging what the upstream sends on an event
//! stream, one event at a time, for the relay of one response.
//!
//! An event that cannot carry an elicitation (the byte pre-scan proves it) is decided at once
//! and never waits for the state store; one that may is judged by
//! [`Enforcer::judge_server_text`] as a future the relay polls ([`Step::Wait`]), and its
//! outcome applied with [`StreamJudge::resume`]. Blocked legacy requests are removed from the
//! stream (the gateway answers the server itself through [`HttpAnswer`]); blocked results and
//! errors are replaced by a JSON-RPC error for the client's request id; an event kept from
//! the client keeps only its `id`, so a client resuming with `Last-Event-ID` stays in step.
//! The 2024-11-05 HTTP+SSE `endpoint` event is rewritten to the gateway's path.
//!
//! Never: deciding anything itself (enforcement does), or writing a refusal's JSON-RPC error
//! (the refusal boundary does).

use super::answer::HttpAnswer;
use super::EndpointMap;
use crate::enforce::judge::{Judged, ServerChannel, ServerVerdict, TOO_MANY};
use crate::enforce::{prescan, Enforcer, Exchange, Refusal};
use crate::error::GatewayError;
use crate::state::PendingKey;
use bytes::Bytes;
use elicitgate_core::elicitation;
use elicitgate_core::inspect::RuleId;
use elicitgate_core::mcp::jsonrpc::{self, canonical_id, Shape};
use elicitgate_core::mcp::sse::{encode_event, SseFields};
use elicitgate_core::request;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The judgment of one event, in flight (it may wait for the state store).
pub type Judging = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What one event comes to.
pub enum Step {
    /// Decided: these bytes (or nothing) go to the client.
    Ready(Option<Bytes>),
    /// Poll this, then hand its output to [`StreamJudge::resume`].
    Wait(Judging),
}

/// A finished [`Judging`].
pub struct Outcome {
    id: Option<String>,
    raw: Bytes,
    what: Finished,
}

enum Finished {
    Judged(Judged),
    /// The request's response, kept: it goes out once the store forgot what the request
    /// left pending.
    Response,
    /// An `endpoint` event, rewritten once its session was announced to the store.
    Endpoint(Option<Bytes>),
}

/// Judges the events of one SSE response; owned by the relay of that response.
pub struct StreamJudge {
    pub enforcer: Arc<Enforcer>,
    exchange: Arc<Exchange>,
    /// How the gateway answers this stream's server itself.
    answer: HttpAnswer,
    /// Rewrites the HTTP+SSE transport's `endpoint` event to a gateway path.
    endpoints: Option<EndpointMap>,
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
    /// The stream carried more than `limits.max_elicitations_per_response`, or an endpoint
    /// that cannot be read one way: nothing more of the upstream is read; the relay ends it.
    cut: bool,
    /// The HTTP+SSE `endpoint` event went out (there is one per stream).
    endpoint_announced: bool,
}

impl StreamJudge {
    pub fn new(
        enforcer: Arc<Enforcer>,
        exchange: Exchange,
        answer: HttpAnswer,
        endpoints: Option<EndpointMap>,
    ) -> Self {
        Self {
            enforcer,
            exchange: Arc::new(exchange),
            answer,
            endpoints,
            forwarded: Vec::new(),
            request_done: false,
            refused: None,
            elicitations: 0,
            cut: false,
            endpoint_announced: false,
        }
    }

    /// True once the stream must end: it carried more elicitations than one response may.
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// The first step of judging one raw event.
    pub fn judge_event(&mut self, raw: Bytes) -> Step {
        let fields = SseFields::parse(&raw);
        if fields.event == Some(&b"endpoint"[..]) && self.endpoints.is_some() {
            return self.rewrite_endpoint(&fields, raw.clone());
        }
        // Every event id reaches the client (a refused event keeps its `id`): one of a request
        // stream is one the client may resume after, still associated.
        if let Some(id) = fields.id.and_then(|i| std::str::from_utf8(i).ok()) {
            self.exchange.forwarded_event(&self.enforcer, id);
        }
        let Some(data) = fields.data.as_deref().filter(|d| !d.is_empty()) else {
            return Step::Ready(Some(raw.clone()));
        };
        let id = fields.id.and_then(|i| std::str::from_utf8(i).ok());
        if !fields.is_message() {
            // Clients ignore other event types: nothing in them may be recorded as "what was
            // asked" (a hidden decoy), and nothing a client ignores needs to reach it. Counted;
            // audited when it names an elicitation carrier.
            let recorder = &self.enforcer.recorder;
            if prescan::may_carry_elicitation(data) {
                recorder.refused(&self.exchange, "server", "sse.event_type");
            } else {
                recorder.count_refused(&self.exchange, "server", "sse.event_type");
            }
            return Step::Ready(id_only(id));
        }
        let carries = prescan::may_carry_elicitation(data);
        if carries && self.elicitations >= self.enforcer.max_per_response {
            // One more would be past the cap: the stream ends here (each elicitation costs a
            // pending entry or an answer to the server; a hostile stream must not fan out).
            tracing::warn!(route = %self.exchange.route_name(), limit = self.enforcer.max_per_response, "Cut a stream carrying too many elicitations.");
            self.enforcer
                .recorder
                .refused(&self.exchange, "server", TOO_MANY);
            self.refused = Some(TOO_MANY);
            self.cut = true;
            return Step::Ready(id_only(id));
        }
        if !carries {
            if let Some(keys) = self.note_response(data) {
                // The response goes out only once the elicitations its request left pending
                // are forgotten: an answer the client sends after seeing it is refused.
                let forgetting = self.enforcer.forget_pending(keys);
                return Step::Wait(Box::pin(async move {
                    forgetting.await;
                    Outcome {
                        id: None,
                        raw,
                        what: Finished::Response,
                    }
                }));
            }
            return Step::Ready(Some(raw.clone()));
        }
        let text = Bytes::copy_from_slice(data);
        let id = id.map(str::to_owned);
        let channel: ServerChannel = Arc::new(self.answer.clone());
        let (enforcer, exchange) = (self.enforcer.clone(), self.exchange.clone());
        // The request's trace context (when traced) goes with the judgment, so its verdict
        // becomes an event of the request's span.
        let judging = opentelemetry::context::FutureExt::with_current_context(async move {
            enforcer.judge_server_text(&exchange, &text, &channel).await
        });
        // The judgment runs as its own task: a client that leaves mid-judgment (the relay
        // dropped) must not cut it between recording an elicitation and holding the means to
        // end its server's call.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Step::Wait(Box::pin(async move {
                Outcome {
                    id,
                    raw,
                    what: Finished::Judged(judging.await),
                }
            }));
        };
        let task = runtime.spawn(judging);
        Step::Wait(Box::pin(async move {
            let judged = task.await.unwrap_or(Judged::Read(
                Value::Null,
                ServerVerdict::Refuse("judge.failed"),
            ));
            Outcome {
                id,
                raw,
                what: Finished::Judged(judged),
            }
        }))
    }

    /// Applies a finished judgment: the bytes to forward, or `None` to forward nothing.
    pub fn resume(&mut self, outcome: Outcome) -> Option<Bytes> {
        let Outcome { id, raw, what } = outcome;
        let id = id.as_deref();
        let (message, verdict) = match what {
            Finished::Endpoint(Some(bytes)) => return Some(bytes),
            Finished::Endpoint(None) => {
                tracing::warn!(route = %self.exchange.route_name(), "Refused an HTTP+SSE endpoint naming a session already in use and ended its stream.");
                self.enforcer
                    .recorder
                    .refused(&self.exchange, "server", "session.reused");
                self.cut = true;
                return None;
            }
            Finished::Judged(Judged::Plain) | Finished::Response => return Some(raw),
            Finished::Judged(Judged::Read(message, verdict)) => (message, verdict),
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
            let keys = std::mem::take(&mut self.forwarded);
            self.enforcer.spawn_release_pending(keys);
        }
    }

    /// The end of the upstream stream. `tail` is what followed the last complete event: a
    /// client may still dispatch it (Python's does when it ends in a lone CR), so it is judged
    /// as an event (its [`Step`] is returned for the relay to finish). If an event was refused
    /// and the response never came, [`StreamJudge::closing`] gives the client the
    /// blocked-content error for its request id.
    pub fn finish(&mut self, tail: Option<Bytes>) -> Option<Step> {
        tail.map(|tail| self.judge_event(tail))
    }

    /// The rest of the upstream cannot be read (an event over its bound): it is refused and
    /// recorded, and the client gets what it is still owed — the blocked-content error for
    /// its request, when the response has not gone out — or `None` when nothing is owed.
    pub fn refuse_rest(&mut self, reason: &'static str) -> Option<Bytes> {
        self.enforcer
            .recorder
            .refused(&self.exchange, "server", reason);
        self.refused = Some(reason);
        self.cut = true;
        self.closing(None)
    }

    /// The upstream failed mid-stream (silent past `timeouts.stream_idle`): the client gets
    /// the gateway's error for its request, as the JSON path would answer it, when the
    /// response has not gone out; `None` when nothing is owed (a GET stream, or an answered
    /// call).
    pub fn owe_failure(&mut self, failure: &GatewayError) -> Option<Bytes> {
        if self.request_done {
            return None;
        }
        let id = self.exchange.request_id()?;
        let body = failure.error_object().response(Some(id));
        self.request_done = true;
        self.cut = true;
        Some(encode_event(None, None, &String::from_utf8_lossy(&body)))
    }

    /// What the client still gets once the upstream ended and the tail was judged.
    pub fn closing(&mut self, judged_tail: Option<Bytes>) -> Option<Bytes> {
        let mut out = bytes::BytesMut::new();
        if let Some(tail) = judged_tail {
            out.extend_from_slice(&tail);
        }
        if let (Some(reason), false) = (self.refused, self.request_done) {
            if let Some(id) = self.exchange.request_id() {
                let refusal =
                    Refusal::server_content(Some(id), &[RuleId::RequestMalformed], Some(reason));
                let body = refusal.message();
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
    /// Returns the pending elicitations to forget first when it is.
    fn note_response(&mut self, data: &[u8]) -> Option<Vec<PendingKey>> {
        if self.request_done || self.exchange.request_id().is_none() {
            return None;
        }
        let finder = |needle: &[u8]| memchr::memmem::find(data, needle).is_some();
        if !finder(b"\"result\"") && !finder(b"\"error\"") {
            return None;
        }
        let envelope = elicitgate_core::mcp::jsonrpc::Envelope::peek(data);
        if envelope.kind == elicitgate_core::mcp::jsonrpc::Kind::Response {
            let theirs = envelope.id.as_deref().map(jsonrpc::canonical_raw_id);
            return self.mark_done_if(theirs);
        }
        None
    }

    fn note_response_value(&mut self, message: &Value) {
        if self.request_done || self.exchange.request_id().is_none() {
            return;
        }
        if matches!(jsonrpc::classify(message), Shape::Result | Shape::Error) {
            if let Some(keys) = self.mark_done_if(message.get("id").map(canonical_id)) {
                self.enforcer.spawn_forget_pending(keys);
            }
        }
    }

    /// Marks the request done when `theirs` is its id; returns the elicitations its stream
    /// forwarded, now to be forgotten.
    fn mark_done_if(&mut self, theirs: Option<String>) -> Option<Vec<PendingKey>> {
        let ours = self.exchange.request_id().map(jsonrpc::canonical_raw_id);
        if theirs.is_some() && theirs == ours {
            self.request_done = true;
            if !self.forwarded.is_empty() {
                return Some(std::mem::take(&mut self.forwarded));
            }
        }
        None
    }

    /// The 2024-11-05 HTTP+SSE transport announces where the client must POST. The client is
    /// pointed at the gateway instead, this stream learns its session (every server message of
    /// that transport, elicitations included, travels on it), and the gateway's own answers go
    /// to the announced URI. An endpoint that cannot be mapped through this route is dropped:
    /// a client posting straight to the upstream would bypass the gateway. The event goes out
    /// once the session is announced to the store, so the client's `initialize` finds it.
    fn rewrite_endpoint(&mut self, fields: &SseFields<'_>, raw: Bytes) -> Step {
        let Some(announced) = fields
            .data
            .as_deref()
            .and_then(|d| std::str::from_utf8(d).ok())
            .map(str::trim)
        else {
            return Step::Ready(None);
        };
        let Some((gateway_uri, upstream_uri)) =
            self.endpoints.as_ref().and_then(|m| m.map(announced))
        else {
            tracing::error!(route = %self.exchange.route_name(), "Dropped an HTTP+SSE endpoint that does not map through this route.");
            return Step::Ready(None);
        };
        if self.endpoint_announced {
            // Clients differ on a second endpoint (one posts to the first, another to the
            // last): the stream ends here rather than be read two ways.
            return self.refuse_endpoint("endpoint.repeated");
        }
        let query = url::Url::parse(&upstream_uri)
            .ok()
            .and_then(|u| u.query().map(str::to_owned));
        let (session, ambiguous) = request::session_of(None, query.as_deref());
        if ambiguous {
            return self.refuse_endpoint("endpoint.session_repeated");
        }
        let Ok(uri) = upstream_uri.parse() else {
            tracing::error!(route = %self.exchange.route_name(), "Dropped an HTTP+SSE endpoint that is not a valid URI.");
            return Step::Ready(None);
        };
        self.endpoint_announced = true;
        // The gateway's own answers now go to the announced URI.
        self.answer = self.answer.to(uri);
        Arc::make_mut(&mut self.exchange).announced(session.clone());
        let id = fields
            .id
            .and_then(|i| std::str::from_utf8(i).ok())
            .map(str::to_owned);
        let event = encode_event(Some("endpoint"), id.as_deref(), &gateway_uri);
        // The server created this session: it is the one an `initialize` may declare
        // capabilities for (a forged `?sessionId=` names none).
        let Some(session) = session else {
            return Step::Ready(Some(event));
        };
        let enforcer = self.enforcer.clone();
        let route = self.exchange.route_name().clone();
        let owner = self.exchange.verified_principal().cloned();
        Step::Wait(Box::pin(async move {
            let new = enforcer
                .announce_session(&route, &session, owner.as_ref())
                .await;
            Outcome {
                id,
                raw,
                // A session another stream was given already is never this client's: its
                // capabilities and owner belong to the first.
                what: Finished::Endpoint(new.then_some(event)),
            }
        }))
    }

    /// An endpoint event that cannot be read one way: dropped, recorded, and the stream ends
    /// (without an endpoint, or with a second one, its client cannot be served safely).
    fn refuse_endpoint(&mut self, reason: &'static str) -> Step {
        tracing::warn!(route = %self.exchange.route_name(), reason, "Refused an HTTP+SSE endpoint event and ended its stream.");
        self.enforcer
            .recorder
            .refused(&self.exchange, "server", reason);
        self.cut = true;
        Step::Ready(None)
    }
}

/// An event that keeps only its `id` (so a client resuming with `Last-Event-ID` stays in
/// step), or nothing.
fn id_only(id: Option<&str>) -> Option<Bytes> {
    id.map(|id| Bytes::from(format!("id: {id}\n\n")))
}
