//! Client side of enforcement: answers. A legacy client's JSON-RPC response to a pending
//! `elicitation/create`, and a 2026-07-28 retry's (or `tasks/update`'s) `inputResponses`, are
//! checked against what was asked before anything is forwarded.
//!
//! Owns consuming what was asked from the store (atomically: an answer is accepted once,
//! whichever replica it reaches), validating the answer, remembering declines for
//! `repeat.after_decline`, and refusing what does not fit: an unknown or replayed answer
//! (`response.unknown`), an invalid one (`response.invalid`), one from another principal
//! than the one asked (`session.mismatch`), or one whose state the store cannot give
//! (`state.unavailable`).

use super::refusal::Refusal;
use super::{ClientVerdict, Enforcer, Exchange};
use crate::state::{AskedKey, AskedRecord, DeclineKey, PendingKey, Take, Taken, Unavailable};
use bytes::Bytes;
use elicitgate_core::inspect::{self, UnknownAnswer, Verdict};
use elicitgate_core::mcp::jsonrpc::canonical_id;
use elicitgate_core::policy::Policy;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// An answer taken from the store for the exchange that carries it to the server: put back
/// if it never gets there.
pub struct Consumed {
    key: PendingKey,
    record: crate::state::PendingRecord,
    release: std::sync::Mutex<Option<super::releases::Release>>,
}

impl Enforcer {
    /// The client's answer taken by this exchange never reached the server (the upstream
    /// could not be reached): the elicitation is pending again, so the client may answer
    /// again and the server's call is still ended if nobody does.
    pub async fn undelivered(&self, ex: &Exchange) {
        let Some(taken) = ex.taken.as_ref() else {
            return;
        };
        let remaining = Duration::from_millis(
            taken
                .record
                .deadline_ms
                .saturating_sub(crate::state::wall_ms()),
        );
        if remaining.is_zero() {
            return;
        }
        let put = self
            .store
            .put_pending(&taken.key, &taken.record, remaining, None)
            .await;
        if self.noted("put_pending", put).is_ok() {
            let release = taken.release.lock().ok().and_then(|mut r| r.take());
            if let Some(release) = release {
                let due = self.releases.insert(taken.key.clone(), release, remaining);
                self.release(due).await;
            }
        }
    }

    /// A legacy client's JSON-RPC response: is it the answer to a pending elicitation?
    pub(super) async fn on_client_answer(
        &self,
        ex: &mut Exchange,
        policy: &Policy,
        message: &Value,
        body: Bytes,
    ) -> ClientVerdict {
        let Some(id) = message.get("id") else {
            return ClientVerdict::Forward(body);
        };
        let key = PendingKey {
            route: ex.route_name.clone(),
            session: ex.session.clone().unwrap_or_else(|| Arc::from("")),
            id: canonical_id(id),
        };
        let looks_like_answer =
            elicitgate_core::mcp::message::member(message, &["result", "action"]).is_some();
        let taken = self
            .store
            .take_pending(&key, Take::Answer, policy.pending_ttl())
            .await;
        let pending = match self.noted("take_pending", taken) {
            Ok(Taken::Pending(pending)) => pending,
            Ok(found) => {
                if found == Taken::Absent && !looks_like_answer {
                    // An answer to some other server request (ping, sampling, roots).
                    return ClientVerdict::Forward(body);
                }
                let fact = if found == Taken::Answered {
                    UnknownAnswer::AlreadyAnswered
                } else {
                    UnknownAnswer::UnknownId
                };
                let verdict = inspect::unknown_response(fact, policy);
                self.recorder.answer_rejected(ex, None, &verdict);
                if verdict.is_deny() {
                    return ClientVerdict::Refuse(Refusal::answer(Some(id), &verdict));
                }
                return ClientVerdict::Forward(body);
            }
            Err(Unavailable) if !looks_like_answer => return ClientVerdict::Forward(body),
            Err(Unavailable) => {
                // The answer cannot be checked: the server's call ends with an error (so it
                // does not wait), and the client learns why.
                let verdict = inspect::state_unavailable(policy);
                self.recorder.answer_rejected(ex, None, &verdict);
                if !verdict.is_deny() {
                    return ClientVerdict::Forward(body);
                }
                return ClientVerdict::Refuse(Refusal::answer_to_waiting_server(
                    Some(id),
                    &verdict,
                ));
            }
        };
        // This process no longer owes the server a release for it (if it held one) — unless
        // the answer cannot be delivered ([`Enforcer::undelivered`]).
        let release = self.releases.remove(&key);
        ex.taken = Some(Arc::new(Consumed {
            key: key.clone(),
            record: (*pending).clone(),
            release: std::sync::Mutex::new(release),
        }));
        let waited =
            Duration::from_millis(crate::state::wall_ms().saturating_sub(pending.asked_at_ms));
        if let (Some(asked_by), Some(answering)) =
            (pending.principal.as_deref(), ex.verified_principal())
        {
            if asked_by != &**answering {
                let verdict = inspect::session_mismatch(policy, "response");
                self.recorder
                    .answer_rejected(ex, Some(pending.mode), &verdict);
                if verdict.is_deny() {
                    return ClientVerdict::Refuse(Refusal::answer_to_waiting_server(
                        Some(id),
                        &verdict,
                    ));
                }
            }
        }
        // A JSON-RPC error from the client (e.g. it refused the mode) is a legitimate answer.
        let Some(result) = message.get("result") else {
            self.recorder.answered(ex, pending.mode, "error", waited);
            self.gauges();
            return ClientVerdict::Forward(body);
        };
        let verdict = inspect::check_response(&pending.asked, result, policy);
        let action = answer_action(result);
        if verdict.is_deny() {
            // The server's call ends with the error; the client learns why its answer was
            // refused.
            self.recorder
                .answer_rejected(ex, Some(pending.mode), &verdict);
            return ClientVerdict::Refuse(Refusal::answer_to_waiting_server(Some(id), &verdict));
        }
        if matches!(action, "decline" | "cancel") {
            let key = DeclineKey {
                route: ex.route_name.clone(),
                scope: Arc::from(pending.scope.as_str()),
                fingerprint: pending.asked.fingerprint,
            };
            let remembered = self
                .store
                .remember_decline(&key, policy.repeat_window())
                .await;
            let _ = self.noted("remember_decline", remembered);
        }
        self.gauges();
        self.recorder.answered(ex, pending.mode, action, waited);
        if !verdict.rules.is_empty() {
            self.recorder
                .answer_audited(ex, Some(pending.mode), &verdict);
        }
        ClientVerdict::Forward(body)
    }

    /// A 2026-07-28 retry (or `tasks/update`) carrying `inputResponses`.
    pub(super) async fn on_input_responses(
        &self,
        ex: &mut Exchange,
        policy: &Policy,
        message: &Value,
    ) -> Option<ClientVerdict> {
        let params = message.get("params")?;
        let responses = params.get("inputResponses")?;
        let key = self.asked_key(ex, params.get("requestState").and_then(Value::as_str));
        let id = message.get("id");
        let taken = match &key {
            Some(k) => self.noted("take_asked", self.store.take_asked(k).await),
            None => Ok(None),
        };
        let asked = match taken {
            Ok(Some(asked)) => asked,
            Ok(None) => {
                let verdict = inspect::unknown_response(UnknownAnswer::UnknownId, policy);
                self.recorder.answer_rejected(ex, None, &verdict);
                return verdict
                    .is_deny()
                    .then(|| ClientVerdict::Refuse(Refusal::answer(id, &verdict)));
            }
            Err(Unavailable) => {
                let verdict = inspect::state_unavailable(policy);
                self.recorder.answer_rejected(ex, None, &verdict);
                return verdict
                    .is_deny()
                    .then(|| ClientVerdict::Refuse(Refusal::answer(id, &verdict)));
            }
        };
        // The server's next answer belongs to the same retry chain.
        ex.continue_chain(&asked.chain);
        let mut verdict = Verdict::allow();
        if let (Some(asked_by), Some(answering)) =
            (asked.principal.as_deref(), ex.verified_principal())
        {
            if asked_by != &**answering {
                verdict.merge(inspect::session_mismatch(policy, "response"));
            }
        }
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
        let waited =
            Duration::from_millis(crate::state::wall_ms().saturating_sub(asked.asked_at_ms));
        if verdict.is_deny() {
            // Keep what was asked so a corrected retry is still accepted (unless it was the
            // wrong principal's: that map stays with its own).
            if let Some(k) = key {
                let ttl = policy.pending_ttl().saturating_sub(waited);
                if !ttl.is_zero() {
                    let put = self.store.put_asked(&k, &asked, ttl).await;
                    let _ = self.noted("put_asked", put);
                }
            }
            self.recorder.answer_rejected(ex, None, &verdict);
            return Some(ClientVerdict::Refuse(Refusal::answer(id, &verdict)));
        }
        self.remember_declines(ex, policy, &asked, &answered).await;
        for (mode, action, _) in answered {
            self.recorder.answered(ex, mode, action, waited);
        }
        if !verdict.rules.is_empty() {
            self.recorder.answer_audited(ex, None, &verdict);
        }
        None
    }

    async fn remember_declines(
        &self,
        ex: &Exchange,
        policy: &Policy,
        asked: &AskedRecord,
        answered: &[(elicitgate_core::elicitation::Mode, &'static str, u64)],
    ) {
        for (_, action, fingerprint) in answered {
            if matches!(*action, "decline" | "cancel") {
                let key = DeclineKey {
                    route: ex.route_name.clone(),
                    scope: Arc::from(asked.scope.as_str()),
                    fingerprint: *fingerprint,
                };
                let remembered = self
                    .store
                    .remember_decline(&key, policy.repeat_window())
                    .await;
                let _ = self.noted("remember_decline", remembered);
            }
        }
    }

    /// Where a 2026 `inputRequests` map for this exchange is (or will be) remembered.
    pub(super) fn asked_key(&self, ex: &Exchange, request_state: Option<&str>) -> Option<AskedKey> {
        if let Some(rs) = request_state {
            return Some(AskedKey::RequestState {
                route: ex.route_name.clone(),
                principal: ex.principal().clone(),
                digest: Sha256::digest(rs.as_bytes()).into(),
            });
        }
        if let Some(task) = &ex.task_id {
            return Some(AskedKey::Task {
                route: ex.route_name.clone(),
                principal: ex.principal().clone(),
                task_id: task.clone(),
            });
        }
        Some(AskedKey::Call {
            route: ex.route_name.clone(),
            principal: ex.principal().clone(),
            method: ex.method?,
            name: ex.call_name.clone().unwrap_or_default(),
        })
    }
}

/// `accept`, `decline`, `cancel`, or `invalid`.
pub(super) fn answer_action(result: &Value) -> &'static str {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => "accept",
        Some("decline") => "decline",
        Some("cancel") => "cancel",
        _ => "invalid",
    }
}
