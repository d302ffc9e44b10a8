//! The pure policy decision: `inspect` an elicitation, `check_response` an answer.
//!
//! Owns: the order in which rules are evaluated and the facts they need. The proxy
//! computes session facts (`InspectContext`: association, recent decline, rate) and
//! pending-table facts (`UnknownAnswer`); this module decides.
//! Never: I/O, clocks, logging, metrics, or allocation of user content into verdicts.
//! Findings carry locations and detector names only. Every input is bounded: schemas
//! are checked at fixed depth, URLs are capped, findings are capped, and the
//! fingerprint walks at most `FINGERPRINT_MAX_DEPTH` levels.
//!
//! Layout: `rule.rs` (ids, actions, verdicts), `schema.rs` (`form.schema`),
//! `secrets.rs` (`form.secret`, over [`crate::lexicon`] and [`crate::text::fold`]), `urls.rs` (`url.*`,
//! `form.url`), `pii.rs` (value detectors), `response.rs` (`response.invalid`).
//!
//! Resolution: every matching rule whose action is not `off` is listed in
//! `Verdict::rules`; `deny` rules deny, `audit` rules are reported only; `dry_run`
//! turns denies into audits; the kill switch denies with `mode.disabled` regardless of
//! rule actions and `dry_run`. When the params cannot be judged (not an object, unknown
//! mode) the remaining checks are skipped and `request.malformed` decides (fail closed
//! unless the operator set it to `audit`/`off`).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod examples;
mod ids;
pub mod pattern;
pub(crate) mod pii;
pub(crate) mod response;
mod rule;
pub(crate) mod schema;
pub mod secrets;
pub(crate) mod urls;

use std::io::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::elicitation::{Carrier, ClientCaps, ElicitationView, Mode, ModeField};
use crate::policy::{KillSwitch, Policy};
use rule::Hits;
pub use rule::{
    Decision, Enforcement, Finding, RuleAction, RuleId, UnknownRuleId, Verdict, MAX_FINDINGS,
};

pub use crate::mcp::revision::Era;

/// Facts about the exchange that only the live proxy knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InspectContext {
    /// Is the elicitation tied to an in-flight client request? `false` → `request.unassociated`.
    /// The proxy passes `true` for result- and error-borne carriers.
    pub associated: bool,
    /// Was the same fingerprint declined/cancelled within the policy's repeat window?
    /// `true` → `repeat.after_decline`.
    pub declined_recently: bool,
    /// Elicitations in the last minute for this session/principal, including this one.
    /// Above the policy's `rate.max_per_minute` → `rate.limit`.
    pub recent_count: u32,
    /// Elicitations in the last minute from the client's address (the coarse flood limit),
    /// including this one; 0 when that limit is off. Above `rate.max_per_minute_per_address`
    /// → `rate.limit`.
    pub address_count: u32,
    /// The state store could not answer: the facts above are unknown → `state.unavailable`.
    pub state_unavailable: bool,
    /// Protocol era.
    pub protocol: Era,
}

impl InspectContext {
    /// An associated request with no repeat/rate history (the CLI's context).
    pub fn standalone(protocol: Era) -> Self {
        InspectContext {
            associated: true,
            declined_recently: false,
            recent_count: 0,
            address_count: 0,
            state_unavailable: false,
            protocol,
        }
    }
}

pub use crate::text::fold::fold_name;

/// The PII or secret detector that fires on a value (a token of an audit line): what
/// `url.pii` and the answer checks detect, plus identity numbers in their own format even
/// without a name announcing them. Its bounded name (`secret.key:npm`, `pii.phone`, …), or
/// `None`. The audit scrub's source of truth, so whatever the policy detects is never
/// written raw.
pub fn detect_secret(value: &str) -> Option<&'static str> {
    pii::scan_scrub(value)
}

fn enabled(policy: &Policy, rule: RuleId) -> bool {
    policy.action(rule) != RuleAction::Off || policy.kill_switch == KillSwitch::On
}

/// Decide on one elicitation.
pub fn inspect(
    view: &ElicitationView<'_>,
    caps: &ClientCaps,
    ctx: &InspectContext,
    policy: &Policy,
) -> Verdict {
    // Every rule reads the form's texts from one splitting of each, forgotten on return.
    let _memo = crate::text::fold::memo_scope();
    let mut hits = Hits::new();
    let forced = match policy.kill_switch {
        KillSwitch::On => {
            hits.add(RuleId::ModeDisabled, "policy", "policy.kill_switch");
            Some(RuleId::ModeDisabled)
        }
        KillSwitch::Off => None,
    };
    if !ctx.associated {
        hits.add(
            RuleId::RequestUnassociated,
            "request",
            "request.unassociated",
        );
    }
    if ctx.declined_recently {
        hits.add(
            RuleId::RepeatAfterDecline,
            "request",
            "repeat.after_decline",
        );
    }
    if ctx.state_unavailable {
        hits.add(RuleId::StateUnavailable, "request", "state.unavailable");
    }
    if ctx.recent_count > policy.rate_max_per_minute {
        hits.add(RuleId::RateLimit, "request", "rate.per_minute");
    }
    if policy
        .rate_max_per_minute_per_address
        .is_some_and(|max| ctx.address_count > max)
    {
        hits.add(RuleId::RateLimit, "request", "rate.per_address");
    }
    inspect_params(view, caps, ctx, policy, &mut hits);
    hits.resolve(|r| policy.action(r), policy.enforcement, forced)
}

fn inspect_params(
    view: &ElicitationView<'_>,
    caps: &ClientCaps,
    ctx: &InspectContext,
    policy: &Policy,
    hits: &mut Hits,
) {
    let Some(params) = view.object() else {
        hits.add(RuleId::RequestMalformed, "params", "request.not_object");
        return;
    };
    match params.get("message") {
        None => hits.add(RuleId::RequestMalformed, "message", "request.no_message"),
        Some(Value::String(m)) if m.trim().is_empty() => {
            hits.add(RuleId::RequestMalformed, "message", "request.empty_message")
        }
        Some(Value::String(_)) => {}
        Some(_) => hits.add(RuleId::RequestMalformed, "message", "request.bad_message"),
    }
    let mode = match view.mode_field() {
        ModeField::Known(m) => m,
        ModeField::Unknown => {
            hits.add(RuleId::RequestMalformed, "mode", "request.unknown_mode");
            return;
        }
    };
    if !params.contains_key("mode")
        && (params.contains_key("url") || params.contains_key("elicitationId"))
    {
        // Without `mode` this is a form to the gateway and the spec, yet a client that picks
        // the params shape by its members shows the URL: ambiguous, so malformed.
        hits.add(RuleId::RequestMalformed, "mode", "request.url_without_mode");
    }
    if !caps.declares(mode) {
        let d = match mode {
            Mode::Form => "mode.undeclared:form",
            Mode::Url => "mode.undeclared:url",
        };
        hits.add(RuleId::ModeUndeclared, "mode", d);
    }
    if !policy.allows_mode(mode) {
        let d = match mode {
            Mode::Form => "mode.disabled:form",
            Mode::Url => "mode.disabled:url",
        };
        hits.add(RuleId::ModeDisabled, "mode", d);
    }
    match mode {
        Mode::Form => inspect_form(view, policy, hits),
        Mode::Url => inspect_url(view, ctx, policy, hits),
    }
}

fn inspect_form(view: &ElicitationView<'_>, policy: &Policy, hits: &mut Hits) {
    let message = view.message();
    let Some(schema) = view.requested_schema() else {
        hits.add(
            RuleId::RequestMalformed,
            "requestedSchema",
            "request.no_schema",
        );
        if let Some(m) = message {
            check_message_only(m, policy, hits);
        }
        return;
    };
    if enabled(policy, RuleId::FormSchema) {
        schema::check(schema, hits);
    }
    if enabled(policy, RuleId::FormSecret) {
        let form = policy.form();
        secrets::check_form(
            schema,
            message,
            &form.lexicon,
            &form.allow_property_names,
            hits,
        );
    }
    let check_urls = enabled(policy, RuleId::FormUrl);
    let check_limits = enabled(policy, RuleId::FormLimits);
    if let Some(m) = message {
        check_message_only(m, policy, hits);
    }
    if !(check_urls || check_limits) {
        return;
    }
    let max_string = policy.form().max_string_bytes;
    if check_limits {
        let properties = schema::properties(schema);
        let count = properties.map_or(0, |p| p.len());
        if count > policy.form().max_properties {
            hits.add(
                RuleId::FormLimits,
                "requestedSchema.properties",
                "limits.properties",
            );
        }
        let max_values = policy.form().max_enum_values;
        for (name, prop) in properties.into_iter().flatten() {
            if schema::choice_count(prop) > max_values {
                hits.add(
                    RuleId::FormLimits,
                    format!("requestedSchema.properties.{}", schema::key_loc(name)),
                    "limits.enum_values",
                );
            }
        }
    }
    schema::for_each_text(schema, |loc, role, s| {
        if check_limits && s.len() > max_string {
            hits.add(RuleId::FormLimits, loc.render(), "limits.string_bytes");
        }
        // Defaults pre-fill inputs and are not rendered as links; untitled enum values
        // are the option labels.
        let shown = role != schema::TextRole::Value || matches!(loc.field, "enum" | "items.enum");
        if check_urls && shown {
            if let Some(d) = urls::find_link(s, &|t| policy.form().lexicon.gives_example(t)) {
                hits.add(RuleId::FormUrl, loc.render(), d);
            }
        }
    });
}

fn check_message_only(message: &str, policy: &Policy, hits: &mut Hits) {
    if enabled(policy, RuleId::FormLimits) && message.len() > policy.form().max_message_bytes {
        hits.add(RuleId::FormLimits, "message", "limits.message_bytes");
    }
    if enabled(policy, RuleId::FormUrl) {
        if let Some(d) = urls::find_link(message, &|t| policy.form().lexicon.gives_example(t)) {
            hits.add(RuleId::FormUrl, "message", d);
        }
    }
}

fn inspect_url(view: &ElicitationView<'_>, ctx: &InspectContext, policy: &Policy, hits: &mut Hits) {
    match view.params.get("url") {
        None => hits.add(RuleId::RequestMalformed, "url", "request.no_url"),
        Some(Value::String(u)) if u.trim().is_empty() => {
            hits.add(RuleId::RequestMalformed, "url", "request.empty_url")
        }
        Some(Value::String(u)) => urls::check_url(u, policy.url(), hits),
        Some(_) => hits.add(RuleId::RequestMalformed, "url", "request.bad_url"),
    }
    let needs_id = match view.carrier {
        Carrier::UrlRequiredError => true,
        Carrier::LegacyRequest => ctx.protocol == Era::Legacy2025_11,
        Carrier::InputRequest => false,
    };
    if needs_id && view.elicitation_id().is_none_or(str::is_empty) {
        hits.add(RuleId::UrlMissingId, "elicitationId", "url.missing_id");
    }
}

/// What was asked, kept by the proxy until the answer arrives (in the state store, which may
/// be shared: hence serialisable).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AskedElicitation {
    /// Form or URL.
    pub mode: Mode,
    /// What answer validation needs of the asked `requestedSchema` (form mode): the schema
    /// without what is only shown to the user (titles, descriptions, defaults, labels), up to
    /// [`ASKED_SCHEMA_MAX_DEPTH`] levels.
    pub requested_schema: Option<Value>,
    /// `elicitationId` (2025-11-25 URL mode).
    pub elicitation_id: Option<String>,
    /// The `inputRequests` key (2026-07-28).
    pub key: Option<String>,
    /// [`fingerprint`] of the request, for `repeat.after_decline`.
    pub fingerprint: u64,
}

impl AskedElicitation {
    /// Record what `view` asks. `None` when the mode is unknown (such a request is
    /// denied as malformed and never pending).
    pub fn from_view(view: &ElicitationView<'_>) -> Option<AskedElicitation> {
        let mode = view.mode()?;
        Some(AskedElicitation {
            mode,
            requested_schema: match mode {
                Mode::Form => view
                    .requested_schema()
                    .map(|s| clone_for_validation(s, ASKED_SCHEMA_MAX_DEPTH)),
                Mode::Url => None,
            },
            elicitation_id: view.elicitation_id().map(str::to_string),
            key: view.key.map(str::to_string),
            fingerprint: fingerprint(view),
        })
    }
}

/// Deepest level of `requestedSchema` kept in an [`AskedElicitation`]; the validator
/// reads at most four levels, and a bounded copy keeps hostile nesting cheap.
pub const ASKED_SCHEMA_MAX_DEPTH: usize = 16;

/// Schema keywords only shown to the user; answer validation never reads them.
const DISPLAY_ONLY: [&str; 6] = [
    "title",
    "description",
    "default",
    "enumNames",
    "examples",
    "$comment",
];

/// Clone `v` for answer validation: display-only keywords of schema objects left out (a
/// property *named* like one, under `properties`, is kept), anything deeper than `depth`
/// levels replaced with `null`.
fn clone_for_validation(v: &Value, depth: usize) -> Value {
    clone_schema(v, depth, false)
}

fn clone_schema(v: &Value, depth: usize, property_map: bool) -> Value {
    if depth == 0 {
        return Value::Null;
    }
    match v {
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| clone_schema(x, depth - 1, false))
                .collect(),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| property_map || !DISPLAY_ONLY.contains(&k.as_str()))
                .map(|(k, x)| {
                    let next = !property_map && k == "properties";
                    (k.clone(), clone_schema(x, depth - 1, next))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Approximate heap bytes of a JSON value (strings and keys, plus a per-node overhead), for
/// byte budgets.
fn approx_value_bytes(v: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    NODE + match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(approx_value_bytes).sum(),
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| k.len() + 2 * NODE + approx_value_bytes(x))
            .sum(),
        _ => 0,
    }
}

impl AskedElicitation {
    /// Approximate heap bytes this record holds, for the pending tables' byte budget.
    pub fn approx_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.requested_schema.as_ref().map_or(0, approx_value_bytes)
            + self.elicitation_id.as_ref().map_or(0, String::len)
            + self.key.as_ref().map_or(0, String::len)
    }
}

/// Decide on a client answer (`ElicitResult`) to `asked` (`response.invalid`).
pub fn check_response(asked: &AskedElicitation, answer: &Value, policy: &Policy) -> Verdict {
    let _memo = crate::text::fold::memo_scope();
    let mut hits = Hits::new();
    if policy.action(RuleId::ResponseInvalid) != RuleAction::Off {
        response::check(asked, answer, &mut hits);
    }
    hits.resolve(|r| policy.action(r), policy.enforcement, None)
}

/// Why an answer or completion is not for a pending elicitation (facts from the
/// proxy's pending table), for `response.unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownAnswer {
    /// A response id that matches no elicitation the gateway forwarded.
    UnknownId,
    /// A second answer to an already answered elicitation (replay).
    AlreadyAnswered,
    /// An answer after the pending TTL.
    Expired,
    /// An `inputResponses` key that was not among the forwarded `inputRequests`.
    UnaskedInputResponseKey,
    /// `notifications/elicitation/complete` for an id never asked.
    CompletionUnknownId,
    /// `notifications/elicitation/complete` for an id already completed.
    CompletionAlreadyCompleted,
}

impl UnknownAnswer {
    fn location_and_detector(self) -> (&'static str, &'static str) {
        match self {
            UnknownAnswer::UnknownId => ("id", "response.unknown_id"),
            UnknownAnswer::AlreadyAnswered => ("id", "response.already_answered"),
            UnknownAnswer::Expired => ("id", "response.expired"),
            UnknownAnswer::UnaskedInputResponseKey => ("inputResponses", "response.unasked_key"),
            UnknownAnswer::CompletionUnknownId => ("params.elicitationId", "completion.unknown_id"),
            UnknownAnswer::CompletionAlreadyCompleted => {
                ("params.elicitationId", "completion.already_completed")
            }
        }
    }
}

/// The verdict for an answer that is not pending (`response.unknown`).
pub fn unknown_response(fact: UnknownAnswer, policy: &Policy) -> Verdict {
    let mut hits = Hits::new();
    let (loc, det) = fact.location_and_detector();
    hits.add(RuleId::ResponseUnknown, loc, det);
    hits.resolve(|r| policy.action(r), policy.enforcement, None)
}

/// An answer (or retry) that needs state the store could not give: `state.unavailable`.
pub fn state_unavailable(policy: &Policy) -> Verdict {
    let mut hits = Hits::new();
    hits.add(RuleId::StateUnavailable, "response", "state.unavailable");
    hits.resolve(|r| policy.action(r), policy.enforcement, None)
}

/// A session, answer or retry presented by a principal other than its own:
/// `session.mismatch`.
pub fn session_mismatch(policy: &Policy, location: &'static str) -> Verdict {
    let mut hits = Hits::new();
    hits.add(RuleId::SessionMismatch, location, "session.principal");
    hits.resolve(|r| policy.action(r), policy.enforcement, None)
}

/// Deepest level of a value the fingerprint reads; deeper content is summarised.
pub const FINGERPRINT_MAX_DEPTH: usize = 32;

/// A stable 64-bit fingerprint of what an elicitation asks: mode, message, and the
/// `requestedSchema` (form, canonicalised: object keys sorted) or `url` (URL mode).
/// SHA-256 truncated to 64 bits; independent of process, platform and key order.
pub fn fingerprint(view: &ElicitationView<'_>) -> u64 {
    // The canonical bytes are gathered first and hashed in one call: feeding the hasher
    // a few bytes at a time cost more than the hashing itself (its block buffer is managed
    // per call). The bytes, and so the value, are the same either way.
    let mut buf = Vec::with_capacity(512);
    match view.mode_field() {
        ModeField::Known(Mode::Form) => buf.extend_from_slice(b"form\0"),
        ModeField::Known(Mode::Url) => buf.extend_from_slice(b"url\0"),
        ModeField::Unknown => {
            buf.extend_from_slice(b"unknown\0");
            canonical(view.params.get("mode").unwrap_or(&Value::Null), 0, &mut buf);
        }
    }
    canonical(
        view.params.get("message").unwrap_or(&Value::Null),
        0,
        &mut buf,
    );
    match view.mode() {
        Some(Mode::Url) => canonical(view.params.get("url").unwrap_or(&Value::Null), 0, &mut buf),
        _ => canonical(
            view.params.get("requestedSchema").unwrap_or(&Value::Null),
            0,
            &mut buf,
        ),
    }
    let digest = Sha256::digest(&buf);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// Appends the canonical form of `v` (type tags, lengths, object keys in byte order) to
/// `out`. Its size is bounded by the value's own: a few bytes of framing per value.
fn canonical(v: &Value, depth: usize, out: &mut Vec<u8>) {
    if depth >= FINGERPRINT_MAX_DEPTH {
        out.push(b'~');
        return;
    }
    match v {
        Value::Null => out.push(b'n'),
        Value::Bool(b) => out.push(if *b { b't' } else { b'f' }),
        Value::Number(n) => {
            out.push(b'#');
            // Writing into a Vec cannot fail; the text is the number's Display form.
            let _ = write!(out, "{n}");
            out.push(b';');
        }
        Value::String(s) => {
            out.push(b's');
            out.extend_from_slice(&(s.len() as u64).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Array(a) => {
            out.push(b'[');
            out.extend_from_slice(&(a.len() as u64).to_be_bytes());
            for x in a {
                canonical(x, depth + 1, out);
            }
        }
        Value::Object(o) => {
            out.push(b'{');
            out.extend_from_slice(&(o.len() as u64).to_be_bytes());
            let member = |out: &mut Vec<u8>, k: &String, x: &Value| {
                out.extend_from_slice(&(k.len() as u64).to_be_bytes());
                out.extend_from_slice(k.as_bytes());
                canonical(x, depth + 1, out);
            };
            // serde_json's map iterates in key order unless a dependency turns on its
            // `preserve_order` feature; sort only when the order is not already the one
            // the fingerprint is defined by.
            if o.keys().zip(o.keys().skip(1)).all(|(a, b)| a <= b) {
                for (k, x) in o {
                    member(out, k, x);
                }
            } else {
                let mut keys: Vec<(&String, &Value)> = o.iter().collect();
                keys.sort_by(|a, b| a.0.cmp(b.0));
                for (k, x) in keys {
                    member(out, k, x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
