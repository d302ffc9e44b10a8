//! Per-tool overrides (`policies.<name>.tools`): which policy judges an elicitation raised
//! while a given `tools/call` runs.
//!
//! Owns: compiling each override once, at load, into a whole [`Policy`] (the policy's raw
//! settings with the override's `modes`, `url` and `rules` laid over them), the tool-name
//! globs, and the first-match lookup ([`Policy::for_tool`]).
//! Never: sees traffic; the caller passes the tool name it read from the client's request.

use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};

use super::compile::compile_policy;
use super::model::{RawModes, RawPolicy, RawToolOverride, RawUrl};
use super::Policy;

/// One compiled override.
#[derive(Debug, Clone)]
pub struct ToolOverride {
    globs: Vec<GlobMatcher>,
    policy: Arc<Policy>,
}

impl ToolOverride {
    fn matches(&self, tool: &str) -> bool {
        self.globs.iter().any(|g| g.is_match(tool))
    }
}

impl Policy {
    /// Whether any `tools:` override is configured (the caller then reads tool names).
    pub fn has_tool_overrides(&self) -> bool {
        !self.tools.is_empty()
    }

    /// The policy for an elicitation raised while `tool` runs: the first override whose
    /// globs match, else this policy. `None` (no originating `tools/call`) is this policy.
    pub fn for_tool(self: &Arc<Self>, tool: Option<&str>) -> Arc<Policy> {
        tool.and_then(|t| self.tools.iter().find(|o| o.matches(t)))
            .map_or_else(|| Arc::clone(self), |o| Arc::clone(&o.policy))
    }
}

fn lay_modes(base: &Option<RawModes>, over: &Option<RawModes>) -> Option<RawModes> {
    let (Some(over), base) = (over, base.clone().unwrap_or_default()) else {
        return base.clone();
    };
    Some(RawModes {
        form: over.form.or(base.form),
        url: over.url.or(base.url),
    })
}

fn lay_url(base: &Option<RawUrl>, over: &Option<RawUrl>) -> Option<RawUrl> {
    let (Some(over), base) = (over, base.clone().unwrap_or_default()) else {
        return base.clone();
    };
    Some(RawUrl {
        allow_http_hosts: over.allow_http_hosts.clone().or(base.allow_http_hosts),
        allowed_hosts: over.allowed_hosts.clone().or(base.allowed_hosts),
        denied_hosts: over.denied_hosts.clone().or(base.denied_hosts),
        allow_ip_literals: over.allow_ip_literals.or(base.allow_ip_literals),
        extra_sensitive_params: over
            .extra_sensitive_params
            .clone()
            .or(base.extra_sensitive_params),
        protected_hosts: over.protected_hosts.clone().or(base.protected_hosts),
    })
}

/// The raw policy an override stands for.
fn laid_over(base: &RawPolicy, over: &RawToolOverride) -> RawPolicy {
    let mut raw = base.clone();
    raw.tools = None;
    raw.modes = lay_modes(&base.modes, &over.modes);
    raw.url = lay_url(&base.url, &over.url);
    if let Some(rules) = &over.rules {
        let mut merged = base.rules.clone().unwrap_or_default();
        merged.0.extend(rules.0.clone());
        raw.rules = Some(merged);
    }
    raw
}

/// Compiles `policies.<name>.tools`. Problems of the policy's own settings are reported
/// once, by the policy; those the override brings are reported at its path.
pub fn compile_tools(
    name: &str,
    raw: &RawPolicy,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Vec<ToolOverride> {
    let Some(list) = &raw.tools else {
        return Vec::new();
    };
    let mut base_errors = Vec::new();
    let mut base_warnings = Vec::new();
    let mut base_only = raw.clone();
    base_only.tools = None;
    compile_policy(name, &base_only, &mut base_errors, &mut base_warnings);
    let mut out = Vec::new();
    for (i, over) in list.iter().enumerate() {
        let at = format!("{name}.tools[{i}]");
        let mut globs = Vec::new();
        let names = over.names.as_deref().unwrap_or_default();
        if names.is_empty() {
            errors.push(format!(
                "policies.{at}.names: at least one tool-name glob is required"
            ));
        }
        for (j, g) in names.iter().enumerate() {
            match GlobBuilder::new(g).literal_separator(false).build() {
                Ok(glob) => globs.push(glob.compile_matcher()),
                Err(e) => errors.push(format!("policies.{at}.names[{j}]: {e}")),
            }
        }
        let mut own_errors = Vec::new();
        let mut own_warnings = Vec::new();
        let policy = compile_policy(
            &at,
            &laid_over(raw, over),
            &mut own_errors,
            &mut own_warnings,
        );
        let base_path = format!("policies.{name}");
        let own_path = format!("policies.{at}");
        let fresh = |m: &String, base: &[String]| {
            let as_base = m.replacen(&own_path, &base_path, 1);
            !base.contains(&as_base)
        };
        errors.extend(own_errors.into_iter().filter(|e| fresh(e, &base_errors)));
        warnings.extend(
            own_warnings
                .into_iter()
                .filter(|w| fresh(w, &base_warnings)),
        );
        out.push(ToolOverride {
            globs,
            policy: Arc::new(policy),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled(body: serde_json::Value) -> (Arc<Policy>, Vec<String>) {
        let mut m = serde_json::Map::new();
        m.insert("p".into(), body);
        match super::super::compile_all(&m, &[("r".into(), Some("p".into()))]) {
            Ok((set, _)) => (set.for_route("r"), Vec::new()),
            Err(e) => (Arc::new(Policy::builtin_default()), e),
        }
    }

    #[test]
    fn the_first_matching_override_applies_on_top_of_the_policy() {
        let (p, errors) = compiled(json!({
            "modes": {"url": false},
            "rules": {"form.url": "audit"},
            "tools": [
                {"names": ["connect_*"], "modes": {"url": true},
                 "url": {"allowed_hosts": ["accounts.example.com"]}},
                {"names": ["connect_github", "debug_?"], "rules": {"form.secret": "audit"}}
            ]
        }));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!p.allow_url);
        let connect = p.for_tool(Some("connect_github"));
        assert!(connect.allow_url);
        assert_eq!(connect.name(), "p.tools[0]");
        assert_eq!(
            connect.action(crate::rules::RuleId::FormUrl),
            crate::rules::RuleAction::Audit
        );
        let debug = p.for_tool(Some("debug_x"));
        assert!(!debug.allow_url);
        assert_eq!(
            debug.action(crate::rules::RuleId::FormSecret),
            crate::rules::RuleAction::Audit
        );
        assert_eq!(p.for_tool(Some("search")).name(), "p");
        assert_eq!(p.for_tool(None).name(), "p");
    }

    #[test]
    fn override_problems_are_reported_at_their_path_once() {
        let (_, errors) = compiled(json!({
            "rate": {"max_per_minute": 0},
            "tools": [{"names": [], "rules": {"no.such": "deny"}}, {"names": ["a[", "b"]}]
        }));
        let joined = errors.join("\n");
        assert!(
            joined.contains("policies.p.tools[0].names: at least one"),
            "{joined}"
        );
        assert!(
            joined.contains("policies.p.tools[0].rules.no.such: unknown rule id"),
            "{joined}"
        );
        assert!(joined.contains("policies.p.tools[1].names[0]"), "{joined}");
        assert_eq!(joined.matches("max_per_minute").count(), 1, "{joined}");
    }
}
