//! The rule vocabulary shared by the policy (which sets actions) and the decision (which
//! matches rules): the public rule ids (SPEC §3 — a stable interface used in audit events,
//! metric labels and policy files), the per-rule action (`deny` / `audit` / `off`) and how
//! actions resolve (`Enforcement`).
//! Never: decides anything; findings and verdicts live in `inspect`.

use std::fmt;
use std::str::FromStr;

/// A policy rule. `as_str` gives the public id; the declaration order is the stable
/// order used in verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleId {
    /// A mode the client did not declare.
    ModeUndeclared,
    /// A mode the route does not allow, or anything while the kill switch is on.
    ModeDisabled,
    /// A legacy request not tied to an in-flight client request.
    RequestUnassociated,
    /// Params that cannot be judged: not an object, no message, unknown mode, …
    RequestMalformed,
    /// `requestedSchema` outside the restricted subset.
    FormSchema,
    /// A form asking for a secret.
    FormSecret,
    /// A clickable URL inside a form's texts.
    FormUrl,
    /// A form over the policy's size limits.
    FormLimits,
    /// A URL-mode `url` that is not an absolute URL.
    UrlInvalid,
    /// A URL scheme other than https (or http to a development host).
    UrlScheme,
    /// Userinfo in the URL.
    UrlCredentials,
    /// PII or secrets in the URL's path, query or fragment.
    UrlPii,
    /// A suspicious, IP-literal, denied or not-allowed host.
    UrlHost,
    /// A 2025-11-25 URL-mode request without `elicitationId`.
    UrlMissingId,
    /// The same elicitation asked again soon after the user declined it.
    RepeatAfterDecline,
    /// Too many elicitations per minute.
    RateLimit,
    /// A client answer that does not fit what was asked.
    ResponseInvalid,
    /// An answer to something that is not pending.
    ResponseUnknown,
    /// The state store could not answer: what needs state fails closed.
    StateUnavailable,
    /// A session, answer or retry used by a principal other than the one it belongs to.
    SessionMismatch,
}

impl RuleId {
    /// Every rule, in the stable order.
    pub const ALL: [RuleId; 20] = [
        RuleId::ModeUndeclared,
        RuleId::ModeDisabled,
        RuleId::RequestUnassociated,
        RuleId::RequestMalformed,
        RuleId::FormSchema,
        RuleId::FormSecret,
        RuleId::FormUrl,
        RuleId::FormLimits,
        RuleId::UrlInvalid,
        RuleId::UrlScheme,
        RuleId::UrlCredentials,
        RuleId::UrlPii,
        RuleId::UrlHost,
        RuleId::UrlMissingId,
        RuleId::RepeatAfterDecline,
        RuleId::RateLimit,
        RuleId::ResponseInvalid,
        RuleId::ResponseUnknown,
        RuleId::StateUnavailable,
        RuleId::SessionMismatch,
    ];

    /// Number of rules.
    pub const COUNT: usize = Self::ALL.len();

    /// The public rule id.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::ModeUndeclared => "mode.undeclared",
            RuleId::ModeDisabled => "mode.disabled",
            RuleId::RequestUnassociated => "request.unassociated",
            RuleId::RequestMalformed => "request.malformed",
            RuleId::FormSchema => "form.schema",
            RuleId::FormSecret => "form.secret",
            RuleId::FormUrl => "form.url",
            RuleId::FormLimits => "form.limits",
            RuleId::UrlInvalid => "url.invalid",
            RuleId::UrlScheme => "url.scheme",
            RuleId::UrlCredentials => "url.credentials",
            RuleId::UrlPii => "url.pii",
            RuleId::UrlHost => "url.host",
            RuleId::UrlMissingId => "url.missing_id",
            RuleId::RepeatAfterDecline => "repeat.after_decline",
            RuleId::RateLimit => "rate.limit",
            RuleId::ResponseInvalid => "response.invalid",
            RuleId::ResponseUnknown => "response.unknown",
            RuleId::StateUnavailable => "state.unavailable",
            RuleId::SessionMismatch => "session.mismatch",
        }
    }

    /// Index into per-rule tables (the position in [`RuleId::ALL`]).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an unknown rule id string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRuleId(pub String);

impl fmt::Display for UnknownRuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown rule id `{}`", self.0)
    }
}

impl std::error::Error for UnknownRuleId {}

impl FromStr for RuleId {
    type Err = UnknownRuleId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RuleId::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRuleId(s.to_string()))
    }
}

/// What a policy does when a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RuleAction {
    /// Block the elicitation (the default for every rule).
    #[default]
    Deny,
    /// Allow, but report the match (audit event, metric).
    Audit,
    /// Do not evaluate the rule.
    Off,
}

impl RuleAction {
    /// Policy-file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Deny => "deny",
            RuleAction::Audit => "audit",
            RuleAction::Off => "off",
        }
    }

    /// Parse the policy-file spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "deny" => Some(RuleAction::Deny),
            "audit" => Some(RuleAction::Audit),
            "off" => Some(RuleAction::Off),
            _ => None,
        }
    }
}

/// How rule actions resolve into a decision. Built by `crate::policy::Policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    /// Deny rules deny.
    Enforce,
    /// `dry_run: true`: every deny is downgraded to audit.
    DryRun,
}
