//! The policy file as written: raw serde structs mirroring the YAML, one `///` doc per
//! field (these comments are the policy reference).
//!
//! Owns: the shape of `policies.<name>` and the strict, path-aware reader that turns a
//! `serde_json::Value` into these structs while collecting **every** problem (unknown
//! key, wrong type, bad value) with its full path, e.g.
//! `policies.strict.url.alowed_hosts: unknown field`.
//! Never: applies defaults or compiles anything (that is `compile.rs`).
//!
//! Each struct is declared once through `section!`, which derives `Deserialize` /
//! `Serialize` with `deny_unknown_fields` (for programmatic use and documentation) and
//! generates the error-collecting reader from the same field list, so the two cannot
//! drift. Every field is optional: a missing field takes the built-in default.
//!
//! Tolerance for the `config` crate: scalars may arrive as strings (environment
//! overrides produce strings), so numbers and booleans are also accepted as `"30"` /
//! `"true"`, and a dotted rule id may arrive split into nested maps
//! (`rules: {url: {pii: deny}}` ≡ `rules: {url.pii: deny}`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Reads one field value at `path`, pushing errors instead of failing fast.
pub trait ParseField: Sized {
    /// Parse `value`; on failure push `"{path}: {reason}"` to `errors` and return `None`.
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self>;
}

fn type_error(path: &str, want: &str, value: &Value, errors: &mut Vec<String>) {
    let got = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    };
    errors.push(format!("{path}: expected {want}, found {got}"));
}

impl ParseField for bool {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        match value {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
            _ => {
                type_error(path, "true or false", value, errors);
                None
            }
        }
    }
}

impl ParseField for u32 {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        let n = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n.and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Some(n),
            None => {
                type_error(
                    path,
                    "a non-negative integer (at most 4294967295)",
                    value,
                    errors,
                );
                None
            }
        }
    }
}

impl ParseField for Vec<String> {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        let Value::Array(items) = value else {
            type_error(path, "a list of strings", value, errors);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    type_error(&format!("{path}[{i}]"), "a string", other, errors);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }
}

/// How a blocked legacy elicitation is answered to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnBlock {
    /// A JSON-RPC error `-32602` with `data.rules` (default).
    #[default]
    Error,
    /// An `ElicitResult` `{"action":"decline"}`, so the tool can carry on.
    Decline,
}

impl ParseField for OnBlock {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        match value.as_str() {
            Some("error") => Some(OnBlock::Error),
            Some("decline") => Some(OnBlock::Decline),
            Some(other) => {
                errors.push(format!(
                    "{path}: unknown value `{other}` (expected `error` or `decline`)"
                ));
                None
            }
            None => {
                type_error(path, "`error` or `decline`", value, errors);
                None
            }
        }
    }
}

/// A duration written as a humantime string (`"10m"`, `"90s"`, `"1h 30m"`) or as an
/// integer number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let mut errors = Vec::new();
        HumanDuration::parse_field(&value, "duration", &mut errors)
            .ok_or_else(|| serde::de::Error::custom(errors.join("; ")))
    }
}

impl ParseField for HumanDuration {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        match value {
            Value::Number(n) => match n.as_u64() {
                Some(secs) => Some(HumanDuration(Duration::from_secs(secs))),
                None => {
                    type_error(path, "a duration such as \"10m\"", value, errors);
                    None
                }
            },
            Value::String(s) => match humantime::parse_duration(s.trim()) {
                Ok(d) => Some(HumanDuration(d)),
                Err(e) => {
                    errors.push(format!("{path}: invalid duration `{s}`: {e}"));
                    None
                }
            },
            _ => {
                type_error(path, "a duration such as \"10m\"", value, errors);
                None
            }
        }
    }
}

/// `rules:` — per rule id, `deny` | `audit` | `off`. Keys are checked against the rule
/// ids in `compile.rs`; here they are only flattened and their values read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RawRules(pub BTreeMap<String, String>);

impl ParseField for RawRules {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        let Value::Object(map) = value else {
            type_error(path, "a map of rule id to deny|audit|off", value, errors);
            return None;
        };
        let mut out = BTreeMap::new();
        let mut ok = true;
        for (key, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(key.clone(), s.clone());
                }
                // `config` may split `url.pii` into `url: {pii: …}`.
                Value::Object(inner) => {
                    for (sub, v2) in inner {
                        let id = format!("{key}.{sub}");
                        match v2 {
                            Value::String(s) => {
                                out.insert(id, s.clone());
                            }
                            other => {
                                type_error(
                                    &format!("{path}.{id}"),
                                    "deny, audit or off",
                                    other,
                                    errors,
                                );
                                ok = false;
                            }
                        }
                    }
                }
                other => {
                    type_error(
                        &format!("{path}.{key}"),
                        "deny, audit or off",
                        other,
                        errors,
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(RawRules(out))
    }
}

/// Declares a policy section: the struct (serde, `deny_unknown_fields`, docs) and its
/// error-collecting reader, from one field list.
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $( $(#[$fmeta])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
        }

        impl $name {
            /// The keys this section accepts.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl ParseField for $name {
            fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
                let Value::Object(map) = value else {
                    type_error(path, "a map", value, errors);
                    return None;
                };
                let mut out = $name::default();
                for (key, v) in map {
                    let p = format!("{path}.{key}");
                    match key.as_str() {
                        $( stringify!($field) => out.$field = <$ty as ParseField>::parse_field(v, &p, errors), )*
                        _ => errors.push(format!(
                            "{p}: unknown field (expected one of: {})",
                            Self::FIELDS.join(", ")
                        )),
                    }
                }
                Some(out)
            }
        }
    };
}

section! {
    /// `modes:` — which elicitation modes the route allows (rule `mode.disabled`).
    pub struct RawModes {
        /// Allow form-mode elicitations (default `true`).
        form: bool,
        /// Allow URL-mode elicitations (default `true`).
        url: bool,
    }
}

section! {
    /// `form:` — limits and lexicon settings for form mode.
    pub struct RawForm {
        /// Maximum number of properties in `requestedSchema` (default 20; rule `form.limits`).
        max_properties: u32,
        /// Maximum UTF-8 bytes of any schema string: property names, titles, descriptions,
        /// string defaults, enum values and labels (default 2048; rule `form.limits`).
        max_string_bytes: u32,
        /// Maximum UTF-8 bytes of `message` (default 4096; rule `form.limits`).
        max_message_bytes: u32,
        /// Maximum options of one enum / single- or multi-select property (default 100; rule
        /// `form.limits`).
        max_enum_values: u32,
        /// Terms added to the built-in multilingual secret lexicon (rule `form.secret`).
        /// Latin-script terms match as whole words (after Unicode and case
        /// normalisation); terms containing CJK, kana, Hangul or Thai match as substrings.
        extra_secret_terms: Vec<String>,
        /// Property names exempt from `form.secret` (exact match after normalisation:
        /// NFKC, lower case, accents removed). The exempt property's name, title,
        /// description, `format` and `writeOnly` are not checked.
        allow_property_names: Vec<String>,
    }
}

section! {
    /// `url:` — checks on URL-mode `url`s.
    pub struct RawUrl {
        /// Hosts for which plain `http` is accepted (default `localhost`, `127.0.0.1`,
        /// `::1`; rule `url.scheme`). Wildcards `*.example.test` allowed.
        allow_http_hosts: Vec<String>,
        /// When non-empty, only matching hosts pass `url.host` (exact host or
        /// `*.example.com`, which matches subdomains but not `example.com` itself).
        allowed_hosts: Vec<String>,
        /// Hosts that always fail `url.host` (same pattern syntax).
        denied_hosts: Vec<String>,
        /// Accept IP-literal hosts (default `false`). IP literals listed in
        /// `allow_http_hosts` or `allowed_hosts` are always accepted.
        allow_ip_literals: bool,
        /// Query/fragment parameter names whose non-empty value fails `url.pii`, in
        /// addition to the built-in list (matched case-insensitively, ignoring `-`, `_`, `.`).
        extra_sensitive_params: Vec<String>,
        /// Domains whose look-alikes fail `url.host` (`host.lookalike`); default: the most
        /// impersonated brands; `[]` turns the check off.
        protected_hosts: Vec<String>,
    }
}

section! {
    /// `repeat:` — the `repeat.after_decline` rule.
    pub struct RawRepeat {
        /// How long after a decline/cancel the same elicitation is refused (default `10m`).
        window: HumanDuration,
    }
}

section! {
    /// `rate:` — the `rate.limit` rule.
    pub struct RawRate {
        /// Elicitations allowed per scope per minute (default 10): per verified principal,
        /// else per legacy session or 2026-07-28 retry chain.
        max_per_minute: u32,
        /// Elicitations allowed per client address per minute, whoever the users behind it
        /// are (a coarse flood limit; off unless set).
        max_per_minute_per_address: u32,
    }
}

section! {
    /// `pending:` — bookkeeping of asked elicitations.
    pub struct RawPending {
        /// How long an asked elicitation stays answerable (default `10m`); later answers
        /// fail `response.unknown`.
        ttl: HumanDuration,
    }
}

section! {
    /// `audit:` — what audit events may contain.
    pub struct RawAudit {
        /// Include the elicitation `message` (PII-redacted) in audit events (default `false`).
        include_message: bool,
    }
}

section! {
    /// One entry of `tools:` — overrides for elicitations raised while a `tools/call` runs.
    /// The first entry whose `names` match the call's tool name applies, on top of the
    /// policy: `modes` and `url` fields it sets replace the policy's, `rules` entries are
    /// added to the policy's. Elicitations not raised by a `tools/call` (standalone
    /// streams, other requests) get the policy itself.
    pub struct RawToolOverride {
        /// Tool-name globs: `*` any run of characters, `?` one, `[abc]` a class; e.g.
        /// `connect_*`. Required, at least one.
        names: Vec<String>,
        /// Modes allowed while these tools run.
        modes: RawModes,
        /// Rule actions for these tools (added to, and winning over, the policy's).
        rules: RawRules,
        /// URL-mode settings for these tools (each field set replaces the policy's).
        url: RawUrl,
    }
}

impl ParseField for Vec<RawToolOverride> {
    fn parse_field(value: &Value, path: &str, errors: &mut Vec<String>) -> Option<Self> {
        let Value::Array(items) = value else {
            type_error(path, "a list", value, errors);
            return None;
        };
        let out: Vec<RawToolOverride> = items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| RawToolOverride::parse_field(v, &format!("{path}[{i}]"), errors))
            .collect();
        (out.len() == items.len()).then_some(out)
    }
}

section! {
    /// One named policy under `policies:`.
    pub struct RawPolicy {
        /// Report instead of block: every `deny` becomes `audit` (default `false`).
        /// The kill switch still denies.
        dry_run: bool,
        /// Deny every elicitation with `mode.disabled`, whatever `rules` and `dry_run`
        /// say (default `false`).
        kill_switch: bool,
        /// How a blocked legacy elicitation is answered to the server: `error`
        /// (JSON-RPC `-32602` naming the rules, default) or `decline`.
        on_block: OnBlock,
        /// Modes the route allows (rule `mode.disabled`).
        modes: RawModes,
        /// Per rule id: `deny` (default), `audit` or `off`.
        rules: RawRules,
        /// Form-mode settings.
        form: RawForm,
        /// URL-mode settings.
        url: RawUrl,
        /// `repeat.after_decline` settings.
        repeat: RawRepeat,
        /// `rate.limit` settings.
        rate: RawRate,
        /// Pending-elicitation settings.
        pending: RawPending,
        /// Audit-event settings.
        audit: RawAudit,
        /// Per-tool overrides, by the name of the originating `tools/call` (first match wins).
        tools: Vec<RawToolOverride>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> (Option<RawPolicy>, Vec<String>) {
        let mut errors = Vec::new();
        let p = RawPolicy::parse_field(&v, "policies.p", &mut errors);
        (p, errors)
    }

    #[test]
    fn full_document_reads_like_serde() {
        let doc = json!({
            "dry_run": false, "kill_switch": false, "on_block": "decline",
            "modes": {"form": true, "url": false},
            "rules": {"url.pii": "audit", "form.url": "off"},
            "form": {"max_properties": 12, "max_string_bytes": 100, "max_message_bytes": 200,
                     "extra_secret_terms": ["numéro fiscal"], "allow_property_names": ["password_hint"]},
            "url": {"allow_http_hosts": ["localhost"], "allowed_hosts": ["*.example.com"],
                    "denied_hosts": ["evil.example.com"], "allow_ip_literals": true,
                    "extra_sensitive_params": ["ticket"]},
            "repeat": {"window": "5m"}, "rate": {"max_per_minute": 3},
            "pending": {"ttl": "2m"}, "audit": {"include_message": true}
        });
        let (walked, errors) = read(doc.clone());
        assert!(errors.is_empty(), "{errors:?}");
        let via_serde: RawPolicy = serde_json::from_value(doc).expect("serde");
        assert_eq!(walked, Some(via_serde));
    }

    #[test]
    fn every_error_is_reported_with_its_path() {
        let (_, errors) = read(json!({
            "dryrun": true,
            "url": {"alowed_hosts": [], "allow_ip_literals": "maybe"},
            "form": {"max_properties": -1, "extra_secret_terms": ["ok", 3]},
            "repeat": {"window": "soon"},
            "on_block": "explode",
            "rules": {"url.pii": 1}
        }));
        let want = [
            "policies.p.dryrun: unknown field",
            "policies.p.url.alowed_hosts: unknown field",
            "policies.p.url.allow_ip_literals: expected true or false",
            "policies.p.form.max_properties: expected a non-negative integer",
            "policies.p.form.extra_secret_terms[1]: expected a string",
            "policies.p.repeat.window: invalid duration",
            "policies.p.on_block: unknown value `explode`",
            "policies.p.rules.url.pii: expected deny, audit or off",
        ];
        crate::policy::tests::assert_reported_exactly(&errors, &want);
    }

    #[test]
    fn serde_derive_also_rejects_unknown_fields() {
        let r: Result<RawUrl, _> = serde_json::from_value(json!({"alowed_hosts": []}));
        assert!(r.is_err());
    }

    #[test]
    fn config_crate_tolerance() {
        let (p, errors) = read(json!({
            "dry_run": "true", "rate": {"max_per_minute": "30"},
            "rules": {"url": {"pii": "audit"}}, "pending": {"ttl": 90}
        }));
        assert!(errors.is_empty(), "{errors:?}");
        let p = p.expect("policy");
        assert_eq!(p.dry_run, Some(true));
        assert_eq!(p.rate.and_then(|r| r.max_per_minute), Some(30));
        assert_eq!(
            p.rules.map(|r| r.0.get("url.pii").cloned()),
            Some(Some("audit".into()))
        );
        assert_eq!(
            p.pending.and_then(|x| x.ttl),
            Some(HumanDuration(Duration::from_secs(90)))
        );
    }

    #[test]
    fn fields_constant_matches_serde_names() {
        let full = RawPolicy {
            dry_run: Some(true),
            kill_switch: Some(true),
            on_block: Some(OnBlock::Error),
            modes: Some(RawModes::default()),
            rules: Some(RawRules::default()),
            form: Some(RawForm::default()),
            url: Some(RawUrl::default()),
            repeat: Some(RawRepeat::default()),
            rate: Some(RawRate::default()),
            pending: Some(RawPending::default()),
            audit: Some(RawAudit::default()),
            tools: Some(vec![RawToolOverride::default()]),
        };
        let v = serde_json::to_value(full).expect("serialize");
        let keys: Vec<_> = v
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let mut want: Vec<String> = RawPolicy::FIELDS.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(keys, want);
    }
}
