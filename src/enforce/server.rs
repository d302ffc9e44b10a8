//! Server side of enforcement, per message: what the upstream sends, judged one message at a
//! time, whatever carried it (SSE event, JSON body, stdio line).
//!
//! Owns the three carriers as they arrive from a server: a legacy `elicitation/create`
//! request (on a POST's SSE stream or the GET stream), an `input_required` result (JSON body or
//! an SSE event; tasks `tasks/get` too), a `-32042` error; plus
//! `notifications/elicitation/complete`. Every text enters through
//! [`Enforcer::judge_server_text`]: byte pre-scan, strict read
//! ([`elicitgate_core::mcp::message::read`]), exactly one JSON-RPC shape, judgment. A text that names an
//! elicitation carrier but cannot be read that way is [`ServerVerdict::Refuse`]d (fail closed).
//!
//! The stages of a judgment: the facts of all the message's elicitations in one store round
//! trip ([`state::FactsQuery`](crate::state::FactsQuery)), the pure decision
//! ([`inspect::inspect`]) for each, then what was forwarded is recorded (and must be, before
//! the message goes out: an answer may reach another replica at once). A store that cannot
//! answer makes every step that needs it fail closed (`state.unavailable`).

use super::judge::{ServerChannel, ServerVerdict, TOO_MANY};
use super::refusal;
use super::releases::Release;
use super::{Enforcer, Exchange};
use crate::state::{
    self, AskedEntry, AskedKey, AskedRecord, Completion, FactsQuery, PendingKey, PendingRecord,
    UrlKey,
};
use elicitgate_core::elicitation::{self, ClientCaps, ElicitationView, Mode, ModeField};
use elicitgate_core::inspect::{
    self, AskedElicitation, Era, InspectContext, RuleId, UnknownAnswer, Verdict,
};
use elicitgate_core::mcp::jsonrpc::{self, canonical_id, codes, Shape};
use elicitgate_core::mcp::message::{self, Unreadable};
use elicitgate_core::policy::Policy;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// What [`Enforcer::judge_server_text`] found.
pub enum Judged {
    /// The pre-scan proved it carries no elicitation: forward as is, unparsed.
    Plain,
    /// Read and judged.
    Read(Value, ServerVerdict),
}

/// Where a message's elicitations take the client's declared modes from.
#[derive(Clone, Copy)]
enum CapsFrom {
    /// The legacy session's `initialize` (read from the store with the other facts).
    Session,
    /// The 2026-07-28 request's own `_meta`.
    Request(ClientCaps),
}

impl Enforcer {
    /// The client left a stream before its request was answered: the legacy elicitations it
    /// was shown can no longer be answered through it, so each is released (its server's
    /// call ends with an error) instead of waiting out its time to live.
    pub fn spawn_release_pending(self: &Arc<Self>, keys: Vec<PendingKey>) {
        let enforcer = self.clone();
        spawn(async move {
            for key in keys {
                if let Some(release) = enforcer.releases.remove(&key) {
                    enforcer
                        .release_if_pending(&key, release, "client_gone")
                        .await;
                }
            }
            enforcer.gauges();
        });
    }

    /// Forgets pending legacy elicitations whose request is over, in the background.
    pub fn spawn_forget_pending(self: &Arc<Self>, keys: Vec<PendingKey>) {
        spawn(self.forget_pending(keys));
    }

    /// Forgets pending legacy elicitations whose request is over: this process's releases at
    /// once, the store's entries when the returned future runs. A transport that awaits it
    /// before forwarding the request's response makes sure no answer sent after the client
    /// saw that response is accepted.
    pub fn forget_pending(
        self: &Arc<Self>,
        keys: Vec<PendingKey>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        for key in &keys {
            self.releases.remove(key);
        }
        let enforcer = self.clone();
        async move {
            let forgot = enforcer.store.forget_pending(&keys).await;
            let _ = enforcer.noted("forget_pending", forgot);
            enforcer.gauges();
        }
    }

    /// The key a legacy elicitation with JSON-RPC `id` is pending under for `ex`'s session.
    pub fn pending_key(&self, ex: &Exchange, id: &Value) -> PendingKey {
        PendingKey {
            route: ex.route_name.clone(),
            session: ex.session.clone().unwrap_or_else(|| Arc::from("")),
            id: canonical_id(id),
        }
    }

    /// The one entry for a server message text, whatever carried it: byte pre-scan, strict
    /// read, one shape, judgment. Refusals are recorded here.
    pub async fn judge_server_text(
        &self,
        ex: &Exchange,
        text: &[u8],
        channel: &ServerChannel,
    ) -> Judged {
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
                let verdict = self.judge_server_message(ex, &message, channel).await;
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

    /// Judges one parsed message from the server, of exactly one JSON-RPC shape.
    pub async fn judge_server_message(
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
                        self.judge_legacy(ex, message, channel).await
                    }
                    Some("notifications/elicitation/complete") => {
                        self.judge_completion(ex, message).await
                    }
                    // A task status notification (or any server message) whose params carry
                    // an `inputRequests` map: a client that shows what it finds would show
                    // these too, so they are judged; a blocked one is removed.
                    _ => match message.get("params") {
                        Some(params) if carries_input_requests(params) => {
                            match self.judge_input_required(ex, params, params).await {
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
                    self.judge_input_required(ex, message, result).await
                } else {
                    ServerVerdict::Keep
                }
            }
            Shape::Error => {
                let code =
                    message::member(message, &["error", "code"]).and_then(jsonrpc::numeric_code);
                if code == Some(codes::URL_ELICITATION_REQUIRED) {
                    self.judge_url_required(ex, message).await
                } else {
                    ServerVerdict::Keep
                }
            }
        }
    }

    /// Reads the facts of every view (one store round trip), then decides each with
    /// `inspect`, counting it for rate limits. Returns each verdict with its fingerprint and
    /// the id of its audit event.
    async fn decide_all(
        &self,
        ex: &Exchange,
        views: &[ElicitationView<'_>],
        caps_from: CapsFrom,
        policy: &Policy,
    ) -> Vec<(Verdict, u64, String)> {
        let fingerprints: Vec<u64> = views.iter().map(inspect::fingerprint).collect();
        let query = FactsQuery {
            route: ex.route_name.clone(),
            session: match caps_from {
                CapsFrom::Session => ex.session_key(),
                CapsFrom::Request(_) => None,
            },
            session_ttl: self.session_ttl,
            scope: ex.scope(),
            fingerprints: fingerprints.clone(),
            address: ex.address_scope(policy),
        };
        let facts = self.store.facts(&query).await;
        let (facts, unavailable) = match self.noted("facts", facts) {
            Ok(facts) => (facts, false),
            Err(state::Unavailable) => (state::Facts::default(), true),
        };
        let caps = match caps_from {
            CapsFrom::Request(caps) => caps,
            CapsFrom::Session => facts
                .session
                .as_ref()
                .and_then(|s| s.caps)
                .unwrap_or_else(ClientCaps::none),
        };
        views
            .iter()
            .zip(fingerprints)
            .enumerate()
            .map(|(i, (view, fingerprint))| {
                let declined = facts.declined.get(i).copied().unwrap_or(false);
                let ctx = InspectContext {
                    associated: ex.associated,
                    declined_recently: declined,
                    recent_count: facts.counts.get(i).copied().unwrap_or(0),
                    address_count: facts.address_counts.get(i).copied().unwrap_or(0),
                    state_unavailable: unavailable,
                    protocol: ex.era,
                };
                let verdict = inspect::inspect(view, &caps, &ctx, policy);
                let event = self
                    .recorder
                    .elicitation(ex, view, &verdict, policy, declined);
                (verdict, fingerprint, event)
            })
            .collect()
    }

    async fn judge_legacy(
        &self,
        ex: &Exchange,
        message: &Value,
        channel: &ServerChannel,
    ) -> ServerVerdict {
        let policy = self.policy_for(ex);
        let Some(view) = elicitation::from_request(message) else {
            return ServerVerdict::Drop;
        };
        let decided = self
            .decide_all(ex, std::slice::from_ref(&view), CapsFrom::Session, &policy)
            .await;
        let Some((verdict, _, event)) = decided.into_iter().next() else {
            return ServerVerdict::Drop;
        };
        let Some(id) = message.get("id") else {
            // A notification-shaped elicitation cannot be answered; never show it.
            return ServerVerdict::Drop;
        };
        if verdict.is_deny() {
            self.answer_blocked(ex, id, &verdict.denied_by, Some(&event), &policy, channel);
            return ServerVerdict::Drop;
        }
        let Some(asked) = AskedElicitation::from_view(&view) else {
            // An unknown mode is denied as malformed before this point; never pending.
            return ServerVerdict::Drop;
        };
        let mode = mode_of(&view);
        let scope = ex.scope();
        let ttl = policy.pending_ttl();
        let now = state::wall_ms();
        let url = match (mode, view.elicitation_id()) {
            (Mode::Url, Some(eid)) => Some(UrlKey {
                route: ex.route_name.clone(),
                scope: scope.clone(),
                elicitation_id: eid.to_owned(),
            }),
            _ => None,
        };
        let record = PendingRecord {
            asked,
            asked_at_ms: now,
            deadline_ms: now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
            mode,
            scope: scope.to_string(),
            principal: ex.verified_principal().map(|p| p.to_string()),
        };
        let key = self.pending_key(ex, id);
        let put = self
            .store
            .put_pending(&key, &record, ttl, url.as_ref())
            .await;
        let evicted = match self.noted("put_pending", put) {
            Ok(evicted) => evicted,
            Err(state::Unavailable) => {
                // Not recorded: its answer could not be checked. Never shown; the server is
                // answered as for any block.
                tracing::warn!(route = %ex.route_name, "The state store did not record an elicitation; it is blocked (state.unavailable).");
                self.answer_blocked(ex, id, &[RuleId::StateUnavailable], None, &policy, channel);
                return ServerVerdict::Drop;
            }
        };
        let release = Release {
            channel: channel.clone(),
            exchange: Arc::new(ex.clone()),
            id: id.clone(),
        };
        let due = self.releases.insert(key, release, ttl);
        self.release(due).await;
        for key in evicted {
            if let Some(release) = self.releases.remove(&key) {
                self.release_one(release, "evicted");
            }
        }
        self.gauges();
        ServerVerdict::Keep
    }

    /// Answers the server for a blocked legacy elicitation, as the policy says (a decline, or
    /// an error naming the rules), through the transport's channel.
    fn answer_blocked(
        &self,
        ex: &Exchange,
        id: &Value,
        rules: &[RuleId],
        event: Option<&str>,
        policy: &Policy,
        channel: &ServerChannel,
    ) {
        let answer = refusal::to_server_blocked(policy.on_block(), id, rules, event);
        channel.answer(ex, answer, &self.recorder);
    }

    async fn judge_completion(&self, ex: &Exchange, message: &Value) -> ServerVerdict {
        let policy = self.policy(&ex.route_name);
        let key = UrlKey {
            route: ex.route_name.clone(),
            scope: ex.scope(),
            elicitation_id: message::member(message, &["params", "elicitationId"])
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        let completed = self.store.complete_url(&key).await;
        let fact = match self.noted("complete_url", completed) {
            Ok(Completion::Completed) => None,
            Ok(Completion::AlreadyCompleted) => Some(UnknownAnswer::CompletionAlreadyCompleted),
            Ok(Completion::Unknown) => Some(UnknownAnswer::CompletionUnknownId),
            Err(state::Unavailable) => {
                // Cannot be vetted: not forwarded.
                self.recorder.completion(ex, false);
                return ServerVerdict::Drop;
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

    async fn judge_input_required(
        &self,
        ex: &Exchange,
        message: &Value,
        result: &Value,
    ) -> ServerVerdict {
        let policy = self.policy_for(ex);
        let caps = ex.request_caps.unwrap_or_else(ClientCaps::none);
        let views: Vec<ElicitationView<'_>> = elicitation::from_input_required(message);
        if views.len() > self.max_per_response {
            return ServerVerdict::Refuse(TOO_MANY);
        }
        let decided = self
            .decide_all(ex, &views, CapsFrom::Request(caps), &policy)
            .await;
        let mut denied: Vec<RuleId> = Vec::new();
        let mut event = None;
        let mut entries = HashMap::new();
        for (view, (verdict, fingerprint, id)) in views.iter().zip(decided) {
            if verdict.is_deny() {
                denied.extend(verdict.denied_by.iter().copied());
                event.get_or_insert(id);
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
            return ServerVerdict::Replace(blocked_value(ex, message, &denied, event.as_deref()));
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
            (Some(task), None) => Some(AskedKey::Task {
                route: ex.route_name.clone(),
                principal: ex.principal().clone(),
                task_id: task.clone(),
            }),
            (None, None) => self.asked_key(ex, None),
        };
        let Some(key) = key else {
            // Nowhere to remember it (a GET stream, an unknown method): its retry could not
            // be checked, so it is not shown.
            return ServerVerdict::Replace(blocked_value(
                ex,
                message,
                &[RuleId::RequestMalformed],
                None,
            ));
        };
        {
            let record = AskedRecord {
                entries,
                asked_at_ms: state::wall_ms(),
                scope: ex.scope().to_string(),
                chain: ex.chain().to_string(),
                principal: ex.verified_principal().map(|p| p.to_string()),
            };
            let put = self
                .store
                .put_asked(&key, &record, policy.pending_ttl())
                .await;
            if self.noted("put_asked", put).is_err() {
                return ServerVerdict::Replace(blocked_value(
                    ex,
                    message,
                    &[RuleId::StateUnavailable],
                    None,
                ));
            }
            self.gauges();
        }
        ServerVerdict::Keep
    }

    async fn judge_url_required(&self, ex: &Exchange, message: &Value) -> ServerVerdict {
        let policy = self.policy_for(ex);
        // A 2026-07-28 client declares its modes on each request; a legacy one per session.
        let caps_from = match ex.era {
            Era::Stateless2026 => {
                CapsFrom::Request(ex.request_caps.unwrap_or_else(ClientCaps::none))
            }
            _ => CapsFrom::Session,
        };
        let views = elicitation::from_url_required_error(message);
        if views.len() > self.max_per_response {
            return ServerVerdict::Refuse(TOO_MANY);
        }
        let decided = self.decide_all(ex, &views, caps_from, &policy).await;
        let mut denied: Vec<RuleId> = Vec::new();
        let mut event = None;
        let mut ids = Vec::new();
        for (view, (verdict, _, id)) in views.iter().zip(decided) {
            if verdict.is_deny() {
                denied.extend(verdict.denied_by.iter().copied());
                event.get_or_insert(id);
            } else if let Some(eid) = view.elicitation_id() {
                ids.push(UrlKey {
                    route: ex.route_name.clone(),
                    scope: ex.scope(),
                    elicitation_id: eid.to_owned(),
                });
            }
        }
        if !denied.is_empty() {
            denied.sort_by_key(|r| r.as_str());
            denied.dedup();
            return ServerVerdict::Replace(blocked_value(ex, message, &denied, event.as_deref()));
        }
        let put = self.store.put_url_ids(&ids, policy.pending_ttl()).await;
        if self.noted("put_url_ids", put).is_err() {
            return ServerVerdict::Replace(blocked_value(
                ex,
                message,
                &[RuleId::StateUnavailable],
                None,
            ));
        }
        ServerVerdict::Keep
    }
}

/// Runs `work` on the current runtime (none: at once, on this thread — only tests and
/// shutdown get there, and the memory store's futures are ready at once).
pub(super) fn spawn(work: impl std::future::Future<Output = ()> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(work);
        }
        Err(_) => futures_util::FutureExt::now_or_never(work).unwrap_or(()),
    }
}

/// True when `value` (a result, or a message's params) holds an `inputRequests` map, on
/// itself or on its `task`, or says it is `input_required`.
fn carries_input_requests(value: &Value) -> bool {
    value.get("inputRequests").is_some()
        || message::member(value, &["task", "inputRequests"]).is_some()
        || value.get("resultType").and_then(Value::as_str) == Some("input_required")
}

fn mode_of(view: &ElicitationView<'_>) -> Mode {
    match view.mode_field() {
        ModeField::Known(mode) => mode,
        ModeField::Unknown => Mode::Form,
    }
}

/// The error a client gets instead of a blocked result: its own request id (the carrying
/// message's when the exchange has none), the rule ids and the audit event's id, nothing of
/// the blocked content.
fn blocked_value(ex: &Exchange, message: &Value, rules: &[RuleId], event: Option<&str>) -> Value {
    match ex.request_id.as_deref() {
        Some(id) => refusal::blocked_value(Some(id), rules, event),
        None => refusal::blocked_value(message.get("id"), rules, event),
    }
}
