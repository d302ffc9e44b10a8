//! Raw policy → immutable [`Policy`].
//!
//! Owns: defaults, value checks (limits > 0, known rule ids and actions, valid host
//! patterns, usable extra terms), compiling the lexicon and host sets once, and the
//! warnings that flag risky but legal settings. Errors and warnings are pushed, never
//! returned early, so an operator sees every problem in one run.
//! Never: touches the request path.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::hosts::{normalise_host, HostPattern, HostSet, ProtectedHost};
use super::model::{OnBlock, RawPolicy};
use super::{FormPolicy, KillSwitch, Policy, UrlPolicy};
use crate::lexicon::SecretLexicon;
use crate::rules::{Enforcement, RuleAction, RuleId};

/// Default `form.max_properties`.
pub const DEFAULT_MAX_PROPERTIES: u32 = 20;
/// Default `form.max_string_bytes`.
pub const DEFAULT_MAX_STRING_BYTES: u32 = 2048;
/// Default `form.max_message_bytes`.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 4096;
/// Default `form.max_enum_values`.
pub const DEFAULT_MAX_ENUM_VALUES: u32 = 100;
/// Default `repeat.window`, `pending.ttl`.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(600);
/// Default `rate.max_per_minute`.
pub const DEFAULT_RATE_PER_MINUTE: u32 = 10;
/// Default `url.allow_http_hosts`.
pub const DEFAULT_HTTP_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn positive(value: Option<u32>, default: u32, path: &str, errors: &mut Vec<String>) -> u32 {
    match value {
        Some(0) => {
            errors.push(format!("{path}: must be greater than 0"));
            default
        }
        Some(v) => v,
        None => default,
    }
}

fn positive_duration(value: Option<Duration>, path: &str, errors: &mut Vec<String>) -> Duration {
    match value {
        Some(d) if d.is_zero() => {
            errors.push(format!("{path}: must be longer than 0s"));
            DEFAULT_WINDOW
        }
        Some(d) => d,
        None => DEFAULT_WINDOW,
    }
}

fn is_loopback_pattern(p: &HostPattern) -> bool {
    match p {
        HostPattern::Exact(h) => {
            h == "localhost"
                || h.ends_with(".localhost")
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        HostPattern::Subdomains(s) => s == ".localhost",
    }
}

/// Normalise a query/fragment parameter name for comparison.
pub fn normalise_param_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Compile one policy. Always returns a usable policy (defaults stand in for invalid
/// fields); the caller decides from `errors` whether to use it.
pub fn compile_policy(
    name: &str,
    raw: &RawPolicy,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Policy {
    let path = format!("policies.{name}");
    let mut actions = [RuleAction::Deny; RuleId::COUNT];
    if let Some(rules) = &raw.rules {
        for (id, action) in &rules.0 {
            let rule = id.parse::<RuleId>();
            let act = RuleAction::parse(action);
            match (rule, act) {
                (Ok(rule), Some(act)) => {
                    actions[rule.index()] = act;
                    if act == RuleAction::Off {
                        warnings.push(format!(
                            "{path}.rules.{id}: rule is off and will not be evaluated"
                        ));
                    }
                }
                (rule, act) => {
                    if rule.is_err() {
                        errors.push(format!(
                            "{path}.rules.{id}: unknown rule id (known: {})",
                            RuleId::ALL
                                .iter()
                                .map(|r| r.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    if act.is_none() {
                        errors.push(format!(
                            "{path}.rules.{id}: unknown action `{action}` (expected deny, audit or off)"
                        ));
                    }
                }
            }
        }
    }

    let dry_run = raw.dry_run.unwrap_or(false);
    let kill = raw.kill_switch.unwrap_or(false);
    if dry_run {
        warnings.push(format!(
            "{path}.dry_run: nothing is blocked; every deny is only audited"
        ));
    }
    if kill {
        warnings.push(format!("{path}.kill_switch: every elicitation is denied"));
    }
    let modes = raw.modes.clone().unwrap_or_default();
    let allow_form = modes.form.unwrap_or(true);
    let allow_url = modes.url.unwrap_or(true);
    if !allow_form && !allow_url && !kill {
        warnings.push(format!(
            "{path}.modes: both modes are disabled; every elicitation is denied"
        ));
    }

    let form_raw = raw.form.clone().unwrap_or_default();
    let fpath = format!("{path}.form");
    let max_properties = positive(
        form_raw.max_properties,
        DEFAULT_MAX_PROPERTIES,
        &format!("{fpath}.max_properties"),
        errors,
    );
    let max_string_bytes = positive(
        form_raw.max_string_bytes,
        DEFAULT_MAX_STRING_BYTES,
        &format!("{fpath}.max_string_bytes"),
        errors,
    );
    let max_message_bytes = positive(
        form_raw.max_message_bytes,
        DEFAULT_MAX_MESSAGE_BYTES,
        &format!("{fpath}.max_message_bytes"),
        errors,
    );
    let max_enum_values = positive(
        form_raw.max_enum_values,
        DEFAULT_MAX_ENUM_VALUES,
        &format!("{fpath}.max_enum_values"),
        errors,
    );
    let extra_terms = form_raw.extra_secret_terms.unwrap_or_default();
    let lexicon = if extra_terms.is_empty() {
        SecretLexicon::builtin()
    } else {
        match SecretLexicon::build(&extra_terms) {
            Ok(l) => Arc::new(l),
            Err(errs) => {
                errors.extend(errs.into_iter().map(|e| format!("{fpath}.{e}")));
                SecretLexicon::builtin()
            }
        }
    };
    let mut allow_property_names = HashSet::new();
    for (i, n) in form_raw
        .allow_property_names
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let folded = crate::text::fold::fold_name(n);
        if folded.is_empty() {
            errors.push(format!("{fpath}.allow_property_names[{i}]: empty name"));
        } else {
            allow_property_names.insert(folded);
        }
    }
    if !allow_property_names.is_empty() {
        warnings.push(format!(
            "{fpath}.allow_property_names: {} property name(s) exempt from form.secret",
            allow_property_names.len()
        ));
    }

    let url_raw = raw.url.clone().unwrap_or_default();
    let upath = format!("{path}.url");
    let allow_http_hosts = match &url_raw.allow_http_hosts {
        Some(list) => HostSet::compile(list, &format!("{upath}.allow_http_hosts"), errors),
        None => HostSet::from_patterns(
            DEFAULT_HTTP_HOSTS
                .iter()
                .filter_map(|h| HostPattern::parse(h).ok())
                .collect(),
        ),
    };
    for p in allow_http_hosts.patterns() {
        if !is_loopback_pattern(p) {
            warnings.push(format!(
                "{upath}.allow_http_hosts: plain http allowed to a non-loopback host ({})",
                match p {
                    HostPattern::Exact(h) => h.clone(),
                    HostPattern::Subdomains(s) => format!("*{s}"),
                }
            ));
        }
    }
    let allowed_hosts = HostSet::compile(
        &url_raw.allowed_hosts.unwrap_or_default(),
        &format!("{upath}.allowed_hosts"),
        errors,
    );
    let denied_hosts = HostSet::compile(
        &url_raw.denied_hosts.unwrap_or_default(),
        &format!("{upath}.denied_hosts"),
        errors,
    );
    for p in allowed_hosts.patterns() {
        if denied_hosts.patterns().contains(p) {
            warnings.push(format!(
                "{upath}: a pattern is both allowed and denied; deny wins"
            ));
        }
    }
    let protected_hosts: Vec<ProtectedHost> = match &url_raw.protected_hosts {
        None => super::hosts::DEFAULT_PROTECTED_HOSTS
            .iter()
            .map(|h| ProtectedHost::new(h))
            .collect(),
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let host = normalise_host(h);
                let ok = host.contains('.')
                    && host.len() <= 253
                    && host
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
                if !ok {
                    errors.push(format!(
                        "{upath}.protected_hosts[{i}]: `{h}` is not a domain name (`paypal.com`)"
                    ));
                }
                ok.then(|| ProtectedHost::new(&host))
            })
            .collect(),
    };
    let allow_ip_literals = url_raw.allow_ip_literals.unwrap_or(false);
    if allow_ip_literals {
        warnings.push(format!(
            "{upath}.allow_ip_literals: IP-literal hosts are accepted"
        ));
    }
    let mut extra_sensitive_params = HashSet::new();
    for (i, p) in url_raw
        .extra_sensitive_params
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let n = normalise_param_name(p);
        if n.is_empty() {
            errors.push(format!("{upath}.extra_sensitive_params[{i}]: empty name"));
        } else {
            extra_sensitive_params.insert(n);
        }
    }

    let repeat_window = positive_duration(
        raw.repeat.as_ref().and_then(|r| r.window).map(|d| d.0),
        &format!("{path}.repeat.window"),
        errors,
    );
    let rate_max_per_minute = positive(
        raw.rate.as_ref().and_then(|r| r.max_per_minute),
        DEFAULT_RATE_PER_MINUTE,
        &format!("{path}.rate.max_per_minute"),
        errors,
    );
    let rate_max_per_minute_per_address = raw
        .rate
        .as_ref()
        .and_then(|r| r.max_per_minute_per_address)
        .map(|v| {
            positive(
                Some(v),
                1,
                &format!("{path}.rate.max_per_minute_per_address"),
                errors,
            )
        });
    let pending_ttl = positive_duration(
        raw.pending.as_ref().and_then(|p| p.ttl).map(|d| d.0),
        &format!("{path}.pending.ttl"),
        errors,
    );

    Policy {
        name: name.to_string(),
        enforcement: if dry_run {
            Enforcement::DryRun
        } else {
            Enforcement::Enforce
        },
        kill_switch: if kill {
            KillSwitch::On
        } else {
            KillSwitch::Off
        },
        on_block: raw.on_block.unwrap_or(OnBlock::Error),
        allow_form,
        allow_url,
        actions,
        form: FormPolicy {
            max_properties: max_properties as usize,
            max_string_bytes: max_string_bytes as usize,
            max_message_bytes: max_message_bytes as usize,
            max_enum_values: max_enum_values as usize,
            lexicon,
            allow_property_names,
        },
        url: UrlPolicy {
            allow_http_hosts,
            allowed_hosts,
            denied_hosts,
            allow_ip_literals,
            extra_sensitive_params,
            protected_hosts,
        },
        repeat_window,
        rate_max_per_minute,
        rate_max_per_minute_per_address,
        pending_ttl,
        audit_include_message: raw
            .audit
            .as_ref()
            .and_then(|a| a.include_message)
            .unwrap_or(false),
        tools: Arc::from(Vec::new()),
    }
}
