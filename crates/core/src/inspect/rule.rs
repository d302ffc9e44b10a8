//! Findings and verdicts: what one inspection concluded.
//!
//! Owns: the `Verdict` / `Finding` types with the builder that resolves rule matches into a
//! decision. The rule ids and actions themselves are [`crate::rules`].
//! Never: records user content. A `Finding` holds a location (schema keys and fixed
//! words) and a detector name, never a matched value.

pub use crate::rules::{Enforcement, RuleAction, RuleId, UnknownRuleId};

/// The outcome of an inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Forward (possibly with audited matches).
    Allow,
    /// Block.
    Deny,
}

impl Decision {
    /// `"allow"` / `"deny"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

/// One reason behind a verdict. Never contains user content: `location` is built from
/// fixed words and schema keys / query-parameter names chosen by the server, `detector`
/// names the check that fired, `because` is a fixed sentence and `term` a word of the
/// lexicon (built-in or the operator's `extra_secret_terms`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    /// The rule this finding belongs to.
    pub rule: RuleId,
    /// Where it was found, e.g. `properties.password.title`, `url.query.token`, `message`.
    pub location: String,
    /// Which detector fired, e.g. `secret.term:password@en`, `pii.email`, `host.punycode`.
    pub detector: String,
    /// Which step of the decision procedure decided (`form.secret`: docs/policy.md
    /// "Secret detection"), when the detector name alone does not say.
    pub because: Option<&'static str>,
    /// The lexicon term that matched, as the word list writes it (`mot de passe`).
    pub term: Option<String>,
}

/// What [`Hits::explain`] adds to a finding: the procedure step and the matched term.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Why<'a> {
    pub because: &'static str,
    pub term: Option<&'a str>,
}

/// The decision for one elicitation (or one answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Allow or deny.
    pub decision: Decision,
    /// Every matching rule whose action is not `off`, deduplicated, in [`RuleId::ALL`] order.
    pub rules: Vec<RuleId>,
    /// The rules that caused the denial (empty when allowed).
    pub denied_by: Vec<RuleId>,
    /// The rules that matched in audit mode (or were downgraded by `dry_run`).
    pub audited: Vec<RuleId>,
    /// The rules that would have denied but for `dry_run` (a subset of `audited`).
    pub would_deny: Vec<RuleId>,
    /// Evidence for `rules`, in detection order.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// An allow verdict with no matches.
    pub fn allow() -> Self {
        Verdict {
            decision: Decision::Allow,
            rules: Vec::new(),
            denied_by: Vec::new(),
            audited: Vec::new(),
            would_deny: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// Is this a denial?
    pub fn is_deny(&self) -> bool {
        self.decision == Decision::Deny
    }

    /// Merge another verdict (e.g. several elicitations in one message): deny if either
    /// denies; rules stay deduplicated and ordered.
    pub fn merge(&mut self, other: Verdict) {
        if other.decision == Decision::Deny {
            self.decision = Decision::Deny;
        }
        for (dst, src) in [
            (&mut self.rules, other.rules),
            (&mut self.denied_by, other.denied_by),
            (&mut self.audited, other.audited),
        ] {
            dst.extend(src);
            dst.sort();
            dst.dedup();
        }
        self.findings.extend(other.findings);
    }
}

/// Upper bound on findings kept per verdict; a hostile schema cannot blow up audit events.
pub const MAX_FINDINGS: usize = 64;

/// Collects rule matches during one inspection and resolves them into a [`Verdict`].
#[derive(Debug)]
pub(crate) struct Hits {
    matched: [bool; RuleId::COUNT],
    findings: Vec<Finding>,
    truncated: bool,
}

impl Hits {
    pub(crate) fn new() -> Self {
        Hits {
            matched: [false; RuleId::COUNT],
            findings: Vec::new(),
            truncated: false,
        }
    }

    /// How many findings are kept so far.
    pub(crate) fn count(&self) -> usize {
        self.findings.len()
    }

    /// Record a match. Duplicate (rule, location, detector) triples are kept once.
    pub(crate) fn add(
        &mut self,
        rule: RuleId,
        location: impl Into<String>,
        detector: impl Into<String>,
    ) {
        self.push(Finding {
            rule,
            location: location.into(),
            detector: detector.into(),
            because: None,
            term: None,
        });
    }

    /// Record a match with the procedure step that decided it and the term it read.
    pub(crate) fn explain(
        &mut self,
        rule: RuleId,
        location: impl Into<String>,
        detector: impl Into<String>,
        why: Why<'_>,
    ) {
        self.push(Finding {
            rule,
            location: location.into(),
            detector: detector.into(),
            because: Some(why.because),
            term: why.term.map(str::to_owned),
        });
    }

    fn push(&mut self, finding: Finding) {
        self.matched[finding.rule.index()] = true;
        if self.findings.iter().any(|f| {
            f.rule == finding.rule
                && f.location == finding.location
                && f.detector == finding.detector
        }) {
            return;
        }
        if self.findings.len() >= MAX_FINDINGS {
            self.truncated = true;
            return;
        }
        self.findings.push(finding);
    }

    /// Resolve with per-rule actions. `forced` rules deny regardless of action and
    /// enforcement (the kill switch).
    pub(crate) fn resolve(
        self,
        action_of: impl Fn(RuleId) -> RuleAction,
        enforcement: Enforcement,
        forced: Option<RuleId>,
    ) -> Verdict {
        let mut verdict = Verdict::allow();
        for rule in RuleId::ALL {
            if !self.matched[rule.index()] {
                continue;
            }
            let action = if forced == Some(rule) {
                RuleAction::Deny
            } else {
                match (action_of(rule), enforcement) {
                    (RuleAction::Deny, Enforcement::DryRun) => {
                        verdict.would_deny.push(rule);
                        RuleAction::Audit
                    }
                    (a, _) => a,
                }
            };
            match action {
                RuleAction::Deny => {
                    verdict.rules.push(rule);
                    verdict.denied_by.push(rule);
                }
                RuleAction::Audit => {
                    verdict.rules.push(rule);
                    verdict.audited.push(rule);
                }
                RuleAction::Off => {}
            }
        }
        if !verdict.denied_by.is_empty() {
            verdict.decision = Decision::Deny;
        }
        let kept = &verdict.rules;
        verdict.findings = self
            .findings
            .into_iter()
            .filter(|f| kept.contains(&f.rule))
            .collect();
        if self.truncated {
            if let Some(rule) = verdict.rules.first().copied() {
                verdict.findings.push(Finding {
                    rule,
                    location: "*".to_string(),
                    detector: "findings.truncated".to_string(),
                    because: None,
                    term: None,
                });
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (i, rule) in RuleId::ALL.iter().enumerate() {
            assert_eq!(rule.index(), i);
            assert_eq!(rule.as_str().parse::<RuleId>(), Ok(*rule));
            assert!(seen.insert(rule.as_str()));
        }
        assert!("form.secrets".parse::<RuleId>().is_err());
    }

    #[test]
    fn exact_public_ids() {
        let ids: Vec<_> = RuleId::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            ids,
            [
                "mode.undeclared",
                "mode.disabled",
                "request.unassociated",
                "request.malformed",
                "form.schema",
                "form.secret",
                "form.url",
                "form.limits",
                "url.invalid",
                "url.scheme",
                "url.credentials",
                "url.pii",
                "url.host",
                "url.missing_id",
                "repeat.after_decline",
                "rate.limit",
                "response.invalid",
                "response.unknown",
                "state.unavailable",
                "session.mismatch"
            ]
        );
    }

    #[test]
    fn resolve_orders_and_splits_actions() {
        let mut hits = Hits::new();
        hits.add(RuleId::UrlPii, "url.query.token", "url.param:token");
        hits.add(RuleId::FormUrl, "message", "link.scheme");
        hits.add(RuleId::UrlPii, "url.query.token", "url.param:token");
        let v = hits.resolve(
            |r| {
                if r == RuleId::FormUrl {
                    RuleAction::Audit
                } else {
                    RuleAction::Deny
                }
            },
            Enforcement::Enforce,
            None,
        );
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.rules, vec![RuleId::FormUrl, RuleId::UrlPii]);
        assert_eq!(v.denied_by, vec![RuleId::UrlPii]);
        assert_eq!(v.audited, vec![RuleId::FormUrl]);
        assert_eq!(v.findings.len(), 2);
    }

    #[test]
    fn off_rules_vanish_and_dry_run_downgrades() {
        let mut hits = Hits::new();
        hits.add(RuleId::FormSecret, "message", "d");
        hits.add(RuleId::FormLimits, "message", "d");
        let v = hits.resolve(
            |r| {
                if r == RuleId::FormLimits {
                    RuleAction::Off
                } else {
                    RuleAction::Deny
                }
            },
            Enforcement::DryRun,
            None,
        );
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.rules, vec![RuleId::FormSecret]);
        assert_eq!(v.audited, vec![RuleId::FormSecret]);
        assert_eq!(v.findings.len(), 1);
    }

    #[test]
    fn forced_rule_denies_through_dry_run_and_off() {
        let mut hits = Hits::new();
        hits.add(RuleId::ModeDisabled, "policy", "kill_switch");
        let v = hits.resolve(
            |_| RuleAction::Off,
            Enforcement::DryRun,
            Some(RuleId::ModeDisabled),
        );
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.denied_by, vec![RuleId::ModeDisabled]);
    }

    #[test]
    fn findings_are_bounded() {
        let mut hits = Hits::new();
        for i in 0..200 {
            hits.add(
                RuleId::FormSchema,
                format!("properties.p{i}"),
                "schema.nested_object",
            );
        }
        let v = hits.resolve(|_| RuleAction::Deny, Enforcement::Enforce, None);
        assert_eq!(v.findings.len(), MAX_FINDINGS + 1);
        assert_eq!(
            v.findings.last().map(|f| f.detector.as_str()),
            Some("findings.truncated")
        );
    }
}
