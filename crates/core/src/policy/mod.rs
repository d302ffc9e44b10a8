//! Policies: the immutable, compiled form the inspector evaluates, and the per-route set.
//!
//! Owns: `Policy` (every rule action resolved, lexicon and host patterns compiled,
//! limits and windows filled in), `PolicySet` (route → `Arc<Policy>`), the built-in
//! strict default, and `compile_all`, the single entry point from configuration.
//! Layout: `model.rs` is the file format, `compile.rs` turns it into `Policy`,
//! `hosts.rs` compiles host patterns.
//! Never: reads files, watches for reloads or logs (the proxy does, with these results).
//!
//! Defaults (also the built-in policy used by routes without one): every rule `deny`,
//! both modes allowed, `on_block: error`, 20 properties, 2048-byte strings, 4096-byte
//! message, `http` only to `localhost` / `127.0.0.1` / `::1`, no IP literals, repeat
//! window 10 minutes, 10 elicitations per minute, pending TTL 10 minutes, no message
//! in audit events.
//!
//! Shared default: if the configuration defines a policy named `default`, routes
//! without a policy get it instead of the built-in one.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod compile;
pub mod hosts;
pub mod model;
pub mod tools;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::elicitation::Mode;
use crate::lexicon::SecretLexicon;
use crate::rules::{Enforcement, RuleAction, RuleId};
pub use hosts::{HostPattern, HostSet};
pub use model::OnBlock;

/// Name of the policy that, when defined, replaces the built-in default.
pub const SHARED_DEFAULT_NAME: &str = "default";

/// Whether the kill switch is engaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillSwitch {
    /// Normal operation.
    Off,
    /// Deny every elicitation with `mode.disabled`.
    On,
}

/// Form-mode settings, compiled.
#[derive(Debug, Clone)]
pub struct FormPolicy {
    /// Maximum properties.
    pub max_properties: usize,
    /// Maximum bytes of any schema string.
    pub max_string_bytes: usize,
    /// Maximum bytes of `message`.
    pub max_message_bytes: usize,
    /// Maximum options of one choice property.
    pub max_enum_values: usize,
    /// The secret lexicon (built-in, plus extra terms when configured).
    pub lexicon: Arc<SecretLexicon>,
    /// Folded property names exempt from `form.secret`.
    pub allow_property_names: HashSet<String>,
}

/// URL-mode settings, compiled.
#[derive(Debug, Clone)]
pub struct UrlPolicy {
    /// Hosts where plain `http` is accepted.
    pub allow_http_hosts: HostSet,
    /// When non-empty, the only hosts that pass `url.host`.
    pub allowed_hosts: HostSet,
    /// Hosts that always fail `url.host`.
    pub denied_hosts: HostSet,
    /// Accept IP-literal hosts.
    pub allow_ip_literals: bool,
    /// Extra sensitive parameter names, normalised (lower case, no `-`, `_`, `.`).
    pub extra_sensitive_params: HashSet<String>,
    /// Domains whose look-alikes fail `url.host`, lower case, names folded.
    pub protected_hosts: Vec<hosts::ProtectedHost>,
}

/// A compiled, immutable policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) name: String,
    pub(crate) enforcement: Enforcement,
    pub(crate) kill_switch: KillSwitch,
    pub(crate) on_block: OnBlock,
    pub(crate) allow_form: bool,
    pub(crate) allow_url: bool,
    pub(crate) actions: [RuleAction; RuleId::COUNT],
    pub(crate) form: FormPolicy,
    pub(crate) url: UrlPolicy,
    pub(crate) repeat_window: Duration,
    pub(crate) rate_max_per_minute: u32,
    /// `rate.max_per_minute_per_address`; `None` = off.
    pub(crate) rate_max_per_minute_per_address: Option<u32>,
    pub(crate) pending_ttl: Duration,
    pub(crate) audit_include_message: bool,
    /// Per-tool overrides, in order ([`tools`]).
    pub(crate) tools: Arc<[tools::ToolOverride]>,
}

impl Policy {
    /// The built-in strict policy: every rule `deny`, URL mode only to https hosts
    /// (http only for `localhost`, `127.0.0.1`, `::1`).
    pub fn builtin_default() -> Policy {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        compile::compile_policy(
            "builtin:strict",
            &model::RawPolicy::default(),
            &mut errors,
            &mut warnings,
        )
    }

    /// Policy name (`builtin:strict` for the built-in default).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `Enforce`, or `DryRun` when every deny is downgraded to audit.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// The kill switch.
    pub fn kill_switch(&self) -> KillSwitch {
        self.kill_switch
    }

    /// How blocked legacy elicitations are answered.
    pub fn on_block(&self) -> OnBlock {
        self.on_block
    }

    /// Does the route allow this mode?
    pub fn allows_mode(&self, mode: Mode) -> bool {
        match mode {
            Mode::Form => self.allow_form,
            Mode::Url => self.allow_url,
        }
    }

    /// The configured action for a rule (before `dry_run`).
    pub fn action(&self, rule: RuleId) -> RuleAction {
        self.actions[rule.index()]
    }

    /// Form settings.
    pub fn form(&self) -> &FormPolicy {
        &self.form
    }

    /// URL settings.
    pub fn url(&self) -> &UrlPolicy {
        &self.url
    }

    /// `repeat.after_decline` window.
    pub fn repeat_window(&self) -> Duration {
        self.repeat_window
    }

    /// `rate.limit`: elicitations allowed per minute.
    pub fn rate_max_per_minute(&self) -> u32 {
        self.rate_max_per_minute
    }

    /// Whether the per-address flood limit is on.
    pub fn limits_per_address(&self) -> bool {
        self.rate_max_per_minute_per_address.is_some()
    }

    /// How long an asked elicitation stays answerable.
    pub fn pending_ttl(&self) -> Duration {
        self.pending_ttl
    }

    /// May audit events include the (redacted) message?
    pub fn audit_include_message(&self) -> bool {
        self.audit_include_message
    }
}

/// Every route's policy.
#[derive(Debug, Clone)]
pub struct PolicySet {
    by_route: HashMap<String, Arc<Policy>>,
    by_name: BTreeMap<String, Arc<Policy>>,
    default: Arc<Policy>,
}

impl PolicySet {
    /// The policy for a route; routes without one (or unknown routes) get the default.
    pub fn for_route(&self, route: &str) -> Arc<Policy> {
        self.by_route
            .get(route)
            .map(Arc::clone)
            .unwrap_or_else(|| Arc::clone(&self.default))
    }

    /// A named policy.
    pub fn by_name(&self, name: &str) -> Option<Arc<Policy>> {
        self.by_name.get(name).map(Arc::clone)
    }

    /// The policy given to routes without one.
    pub fn default_policy(&self) -> Arc<Policy> {
        Arc::clone(&self.default)
    }

    /// Defined policy names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// Compile the `policies` map (name → policy body) and bind routes to policies.
///
/// `route_refs` lists `(route name, policy name or None)`. Returns the set and the
/// warnings, or **every** error found (unknown keys, bad values, unknown rule ids or
/// actions, bad host patterns, references to undefined policies), each prefixed with
/// its path (`policies.<name>.…` or `routes.<route>.policy`).
pub fn compile_all(
    policies: &Map<String, Value>,
    route_refs: &[(String, Option<String>)],
) -> Result<(PolicySet, Vec<String>), Vec<String>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut by_name = BTreeMap::new();
    for (name, body) in policies {
        let path = format!("policies.{name}");
        if name.trim().is_empty() {
            errors.push(format!("{path}: policy name must not be empty"));
            continue;
        }
        let raw = <model::RawPolicy as model::ParseField>::parse_field(body, &path, &mut errors);
        if let Some(raw) = raw {
            let mut policy = compile::compile_policy(name, &raw, &mut errors, &mut warnings);
            policy.tools = tools::compile_tools(name, &raw, &mut errors, &mut warnings).into();
            by_name.insert(name.clone(), Arc::new(policy));
        }
    }
    let default = by_name
        .get(SHARED_DEFAULT_NAME)
        .map(Arc::clone)
        .unwrap_or_else(|| Arc::new(Policy::builtin_default()));
    let mut by_route = HashMap::new();
    let mut used: HashSet<&str> = HashSet::new();
    for (route, policy) in route_refs {
        match policy {
            Some(p) => match by_name.get(p) {
                Some(pol) => {
                    used.insert(p.as_str());
                    by_route.insert(route.clone(), Arc::clone(pol));
                }
                None => errors.push(format!(
                    "routes.{route}.policy: unknown policy `{p}` (defined: {})",
                    if by_name.is_empty() {
                        "none".to_string()
                    } else {
                        by_name.keys().cloned().collect::<Vec<_>>().join(", ")
                    }
                )),
            },
            None => {
                used.insert(SHARED_DEFAULT_NAME);
                by_route.insert(route.clone(), Arc::clone(&default));
            }
        }
    }
    for name in by_name.keys() {
        if !used.contains(name.as_str()) {
            warnings.push(format!("policies.{name}: not used by any route"));
        }
    }
    if errors.is_empty() {
        Ok((
            PolicySet {
                by_route,
                by_name,
                default,
            },
            warnings,
        ))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
pub(crate) mod tests;
