//! The one place every enforcement decision is recorded: each method updates the metrics
//! *and* writes the audit event from the same facts, so the two cannot disagree.
//!
//! Owns what of a decision is kept: route, carrier, mode, verdict, rule ids, findings (names
//! and detectors only), schema property names and types, the redacted URL, actions and
//! durations, identifiers as keyed hashes. Never values, defaults, messages (unless the policy
//! opts in, then scrubbed), full URLs or headers.

use super::Exchange;
use crate::audit::{AuditEvent, AuditFinding, Auditor, EventKind, PropertyShape};
use crate::metrics::Metrics;
use elicitgate_core::elicitation::Mode;
use elicitgate_core::elicitation::{ElicitationView, ModeField};
use elicitgate_core::inspect::Verdict;
use elicitgate_core::policy::Policy;
use std::sync::Arc;
use std::time::Duration;

/// Metrics and audit, together.
#[derive(Clone)]
pub struct Recorder {
    pub metrics: Metrics,
    pub auditor: Arc<Auditor>,
}

impl Recorder {
    fn base(&self, ex: &Exchange, kind: EventKind) -> AuditEvent {
        AuditEvent {
            event: Some(kind),
            route: Some(ex.route_name.to_string()),
            upstream: Some(ex.upstream_label.to_string()),
            revision: Some(ex.era.name().to_owned()),
            transport: Some(ex.carrier().transport()),
            session: ex
                .session
                .as_deref()
                .map(|s| self.auditor.hash("session", s)),
            principal: Some(self.auditor.hash("principal", ex.principal())),
            request: ex.trace_ref().map(str::to_owned),
            tool: ex
                .tool_name()
                .map(|t| self.auditor.scrub(&t.chars().take(128).collect::<String>())),
            ..AuditEvent::default()
        }
    }

    /// The rule ids and findings of `verdict`, onto `event`.
    fn add_verdict(&self, event: &mut AuditEvent, verdict: &Verdict) {
        event.rules = verdict
            .rules
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect();
        event.findings = self.findings(verdict);
    }

    fn findings(&self, verdict: &Verdict) -> Vec<AuditFinding> {
        verdict
            .findings
            .iter()
            .map(|f| AuditFinding {
                rule: f.rule.as_str().to_owned(),
                location: self.auditor.scrub(&f.location),
                detector: f.detector.to_string(),
            })
            .collect()
    }

    /// An elicitation was judged. Returns the id of its audit event, which a block carries in
    /// the error the client gets and the answer the server gets.
    pub fn elicitation(
        &self,
        ex: &Exchange,
        view: &ElicitationView<'_>,
        verdict: &Verdict,
        policy: &Policy,
        repeated: bool,
    ) -> String {
        let id = crate::audit::new_event_id();
        let mode = match view.mode_field() {
            ModeField::Known(m) => m.as_str(),
            ModeField::Unknown => "unknown",
        };
        let (kind, label) = if verdict.is_deny() {
            (EventKind::Blocked, "deny")
        } else if !verdict.would_deny.is_empty() {
            // `dry_run`: audited, and told apart from rules set to `audit`.
            (EventKind::Audited, "would_deny")
        } else if !verdict.rules.is_empty() {
            (EventKind::Audited, "audit")
        } else {
            (EventKind::Allowed, "allow")
        };
        let route = &*ex.route_name;
        let m = &self.metrics;
        m.elicitations
            .with_label_values(&[route, mode, label])
            .inc();
        for rule in &verdict.rules {
            let action = if verdict.denied_by.contains(rule) {
                "deny"
            } else {
                "audit"
            };
            m.rule_matches
                .with_label_values(&[route, rule.as_str(), action])
                .inc();
        }
        if repeated {
            m.repeated_prompts.with_label_values(&[route]).inc();
        }
        let rules: Vec<&'static str> = verdict.rules.iter().map(|r| r.as_str()).collect();
        crate::spans::verdict_event(label, mode, &rules);
        if !self.auditor.enabled() {
            return id;
        }
        let mut event = self.base(ex, kind);
        event.id = Some(id.clone());
        event.policy = Some(policy.name().to_owned());
        event.carrier = Some(view.carrier.as_str());
        event.method = Some("elicitation/create");
        event.mode = Some(mode);
        event.verdict = Some(label);
        self.add_verdict(&mut event, verdict);
        event.elicitation = view
            .elicitation_id()
            .map(|id| self.auditor.hash("elicitation", id));
        event.schema = schema_shape(view)
            .into_iter()
            .map(|(name, kind)| PropertyShape {
                name: self.auditor.scrub(&name),
                kind,
            })
            .collect();
        event.url = view.url().and_then(|u| self.auditor.redact_url(u));
        if policy.audit_include_message() {
            event.message = view.message().map(|t| self.auditor.scrub(t));
        }
        self.auditor.emit(&event);
        id
    }

    /// A client answered a pending elicitation (and the answer fit).
    pub fn answered(&self, ex: &Exchange, mode: Mode, action: &'static str, waited: Duration) {
        let route = &*ex.route_name;
        self.metrics
            .answers
            .with_label_values(&[route, mode.as_str(), action])
            .inc();
        self.metrics
            .time_to_answer
            .with_label_values(&[route, mode.as_str()])
            .observe(waited.as_secs_f64());
        if !self.auditor.enabled() {
            return;
        }
        let mut event = self.base(ex, EventKind::Answered);
        event.mode = Some(mode.as_str());
        event.action = Some(action);
        event.time_to_answer_ms = Some(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX));
        self.auditor.emit(&event);
    }

    /// A client answer was refused (`response.invalid`, `response.unknown`).
    pub fn answer_rejected(&self, ex: &Exchange, mode: Option<Mode>, verdict: &Verdict) {
        self.answer_outcome(ex, mode, verdict, EventKind::AnswerRejected, "deny");
    }

    /// A client answer matched rules in audit mode only.
    pub fn answer_audited(&self, ex: &Exchange, mode: Option<Mode>, verdict: &Verdict) {
        self.answer_outcome(ex, mode, verdict, EventKind::AnswerRejected, "audit");
    }

    fn answer_outcome(
        &self,
        ex: &Exchange,
        mode: Option<Mode>,
        verdict: &Verdict,
        kind: EventKind,
        label: &'static str,
    ) {
        let route = &*ex.route_name;
        for rule in &verdict.rules {
            self.metrics
                .response_rejections
                .with_label_values(&[route, rule.as_str(), label])
                .inc();
            self.metrics
                .rule_matches
                .with_label_values(&[route, rule.as_str(), label])
                .inc();
        }
        if !self.auditor.enabled() {
            return;
        }
        let mut event = self.base(ex, kind);
        event.mode = mode.map(Mode::as_str);
        event.verdict = Some(label);
        self.add_verdict(&mut event, verdict);
        self.auditor.emit(&event);
    }

    /// A `notifications/elicitation/complete` passed (known id) or was dropped.
    pub fn completion(&self, ex: &Exchange, known: bool) {
        let result = if known { "forwarded" } else { "dropped" };
        self.metrics
            .completions
            .with_label_values(&[&ex.route_name, result])
            .inc();
        if !self.auditor.enabled() {
            return;
        }
        let kind = if known {
            EventKind::Completed
        } else {
            EventKind::CompletionDropped
        };
        let mut event = self.base(ex, kind);
        event.method = Some("notifications/elicitation/complete");
        if !known {
            event.rules = vec!["response.unknown".into()];
        }
        self.auditor.emit(&event);
    }

    /// A message was refused because it cannot be read as a client would read it. `direction`
    /// is `server` or `client`; `reason` a bounded label.
    pub fn refused(&self, ex: &Exchange, direction: &'static str, reason: &'static str) {
        self.count_refused(ex, direction, reason);
        if !self.auditor.enabled() {
            return;
        }
        let mut event = self.base(ex, EventKind::Refused);
        event.direction = Some(direction);
        event.reason = Some(reason);
        event.verdict = Some("deny");
        event.rules = vec!["request.malformed".into()];
        self.auditor.emit(&event);
    }

    /// A refusal counted in the metric only: for what cannot carry an elicitation (an event
    /// of a type clients ignore, with no carrier in it), where an audit line per occurrence
    /// would only let a server flood the audit log.
    pub fn count_refused(&self, ex: &Exchange, direction: &'static str, reason: &'static str) {
        self.metrics
            .refused_messages
            .with_label_values(&[&ex.route_name, direction, reason])
            .inc();
    }

    /// The gateway's own answer to a server (for a blocked elicitation) was or was not taken.
    pub fn gateway_answer(&self, route: &str, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        self.metrics
            .gateway_answers
            .with_label_values(&[route, result])
            .inc();
    }

    /// A legacy elicitation the gateway stopped tracking unanswered (`expired`, `evicted`,
    /// `client_gone`): its server is being told.
    pub fn pending_released(&self, ex: &Exchange, reason: &'static str) {
        tracing::info!(
            route = %ex.route_name,
            reason,
            "Released an unanswered elicitation; the server is told."
        );
        self.metrics
            .pending_released
            .with_label_values(&[&ex.route_name, reason])
            .inc();
        if self.auditor.enabled() {
            let mut event = self.base(ex, EventKind::Released);
            event.direction = Some("server");
            event.reason = Some(reason);
            self.auditor.emit(&event);
        }
    }

    /// The state store answered (`failed: None`) or an operation failed.
    pub fn store_health(&self, ok: bool, failed: Option<&'static str>) {
        self.metrics.state_store_up.set(i64::from(ok));
        if let Some(operation) = failed {
            self.metrics
                .state_store_errors
                .with_label_values(&[operation])
                .inc();
        }
    }

    /// A client message was refused by a rule outside the answer checks (`session.mismatch`):
    /// counted per rule and audited as a refusal with `reason`.
    pub fn client_refused(&self, ex: &Exchange, verdict: &Verdict, reason: &'static str) {
        let label = if verdict.is_deny() { "deny" } else { "audit" };
        for rule in &verdict.rules {
            self.metrics
                .rule_matches
                .with_label_values(&[&ex.route_name, rule.as_str(), label])
                .inc();
        }
        if !self.auditor.enabled() {
            return;
        }
        let mut event = self.base(ex, EventKind::Refused);
        event.direction = Some("client");
        event.reason = Some(reason);
        event.verdict = Some(label);
        self.add_verdict(&mut event, verdict);
        self.auditor.emit(&event);
    }

    /// Sizes of the enforcement tables.
    pub fn pending(&self, pending: usize, sessions: usize) {
        self.metrics.pending_elicitations.set(pending as i64);
        self.metrics.sessions.set(sessions as i64);
    }

    /// A policy reload attempt ended.
    pub fn policy(&self, ok: bool, detail: Option<String>) {
        let kind = if ok {
            EventKind::PolicyLoaded
        } else {
            EventKind::PolicyReloadFailed
        };
        self.auditor.emit(&AuditEvent {
            event: Some(kind),
            detail,
            ..AuditEvent::default()
        });
    }
}

/// Property names and types of a form's schema (never values, defaults or titles).
fn schema_shape(view: &ElicitationView<'_>) -> Vec<(String, String)> {
    let Some(props) = view
        .requested_schema()
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_object())
    else {
        return Vec::new();
    };
    props
        .iter()
        .take(100)
        .map(|(name, schema)| {
            let kind = if schema.get("enum").is_some() || schema.get("oneOf").is_some() {
                "enum"
            } else {
                // A closed set: the server chooses this text.
                schema
                    .get("type")
                    .and_then(|t| t.as_str())
                    .filter(|t| {
                        matches!(
                            *t,
                            "string" | "number" | "integer" | "boolean" | "array" | "object"
                        )
                    })
                    .unwrap_or("other")
            };
            let kind = kind.to_owned();
            (name.chars().take(64).collect(), kind)
        })
        .collect()
}
