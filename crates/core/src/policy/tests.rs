use super::*;
use serde_json::json;

/// Asserts that `reported` holds exactly one message starting with each of `want`, and no more.
pub(crate) fn assert_reported_exactly(reported: &[String], want: &[&str]) {
    for w in want {
        assert!(
            reported.iter().any(|e| e.starts_with(w)),
            "missing {w}: {reported:?}"
        );
    }
    assert_eq!(reported.len(), want.len(), "{reported:?}");
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn routes(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    list.iter()
        .map(|(r, p)| (r.to_string(), p.map(str::to_string)))
        .collect()
}

#[test]
fn empty_config_is_valid_and_strict() {
    let (set, warnings) = compile_all(&Map::new(), &routes(&[("api", None)])).expect("valid");
    assert!(warnings.is_empty(), "{warnings:?}");
    let p = set.for_route("api");
    assert_eq!(p.name(), "builtin:strict");
    for rule in RuleId::ALL {
        assert_eq!(p.action(rule), RuleAction::Deny);
    }
    assert_eq!(p.enforcement(), Enforcement::Enforce);
    assert_eq!(p.kill_switch(), KillSwitch::Off);
    assert!(p.allows_mode(Mode::Form) && p.allows_mode(Mode::Url));
    assert!(
        p.url().allow_http_hosts.matches("localhost") && p.url().allow_http_hosts.matches("::1")
    );
    assert!(!p.url().allow_http_hosts.matches("example.com"));
    assert_eq!(p.rate_max_per_minute(), 10);
    assert_eq!(p.repeat_window(), Duration::from_secs(600));
    assert_eq!(set.for_route("unknown-route").name(), "builtin:strict");
}

#[test]
fn documented_example_compiles() {
    let policies = map(json!({
        "strict": {
            "dry_run": false, "kill_switch": false, "on_block": "error",
            "modes": {"form": true, "url": true},
            "rules": {"url.pii": "deny", "form.url": "audit"},
            "form": {"max_properties": 20, "max_string_bytes": 2048, "max_message_bytes": 4096,
                     "extra_secret_terms": ["numéro fiscal"], "allow_property_names": []},
            "url": {"allow_http_hosts": ["localhost", "127.0.0.1", "::1"], "allowed_hosts": [],
                    "denied_hosts": [], "allow_ip_literals": false, "extra_sensitive_params": []},
            "repeat": {"window": "10m"}, "rate": {"max_per_minute": 10},
            "pending": {"ttl": "10m"}, "audit": {"include_message": false}
        },
        "lenient": {"on_block": "decline", "rules": {"form.secret": "audit"}}
    }));
    let (set, warnings) = compile_all(
        &policies,
        &routes(&[("a", Some("strict")), ("b", Some("lenient")), ("c", None)]),
    )
    .expect("valid");
    assert!(warnings.is_empty(), "{warnings:?}");
    let strict = set.for_route("a");
    assert_eq!(strict.action(RuleId::FormUrl), RuleAction::Audit);
    assert_eq!(set.for_route("b").on_block(), OnBlock::Decline);
    assert_eq!(set.for_route("c").name(), "builtin:strict");
    assert_eq!(set.names().collect::<Vec<_>>(), ["lenient", "strict"]);
}

#[test]
fn all_errors_are_reported_at_once() {
    let policies = map(json!({
        "a": {"url": {"alowed_hosts": []}, "rules": {"form.secrets": "deny", "url.pii": "block"}},
        "b": {"form": {"max_properties": 0}, "url": {"denied_hosts": ["*"]}, "repeat": {"window": "0s"}}
    }));
    let errors = compile_all(&policies, &routes(&[("r", Some("missing"))])).expect_err("invalid");
    let want = [
        "policies.a.url.alowed_hosts: unknown field",
        "policies.a.rules.form.secrets: unknown rule id",
        "policies.a.rules.url.pii: unknown action `block`",
        "policies.b.form.max_properties: must be greater than 0",
        "policies.b.url.denied_hosts[0]:",
        "policies.b.repeat.window: must be longer than 0s",
        "routes.r.policy: unknown policy `missing`",
    ];
    assert_reported_exactly(&errors, &want);
}

#[test]
fn warnings_are_separate() {
    let policies = map(json!({
        "p": {"dry_run": true, "rules": {"form.url": "off"}, "url": {"allow_http_hosts": ["dev.example.com"], "allow_ip_literals": true}},
        "unused": {}
    }));
    let (_, warnings) = compile_all(&policies, &routes(&[("r", Some("p"))])).expect("valid");
    for w in [
        "policies.p.dry_run",
        "policies.p.rules.form.url",
        "policies.p.url.allow_http_hosts",
        "policies.p.url.allow_ip_literals",
        "policies.unused: not used",
    ] {
        assert!(
            warnings.iter().any(|x| x.starts_with(w)),
            "missing {w}: {warnings:?}"
        );
    }
}

#[test]
fn named_default_replaces_builtin() {
    let policies = map(json!({"default": {"rules": {"form.url": "audit"}}}));
    let (set, warnings) = compile_all(&policies, &routes(&[("r", None)])).expect("valid");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(set.for_route("r").name(), "default");
    assert_eq!(
        set.for_route("other").action(RuleId::FormUrl),
        RuleAction::Audit
    );
}

#[test]
fn extra_terms_and_exempt_names_take_effect() {
    use crate::elicitation::{ClientCaps, ElicitationView};
    use crate::inspect::{inspect, Era, InspectContext};
    let policies = map(
        json!({"p": {"form": {"extra_secret_terms": ["numéro fidélité"], "allow_property_names": ["Password_Hint"]}}}),
    );
    let (set, _) = compile_all(&policies, &routes(&[("r", Some("p"))])).expect("valid");
    let p = set.for_route("r");
    let judge = |params: Value| {
        inspect(
            &ElicitationView::from_params(&params),
            &ClientCaps::form_only(),
            &InspectContext::standalone(Era::Legacy2025_06),
            &p,
        )
    };
    let v = judge(
        json!({"message":"m","requestedSchema":{"type":"object","properties":{"nf":{"type":"string","title":"Numéro fidélité"}}}}),
    );
    assert_eq!(v.findings[0].detector, "secret.term:custom");
    let v = judge(
        json!({"message":"Optional","requestedSchema":{"type":"object","properties":{"password_hint":{"type":"string"}}}}),
    );
    assert!(!v.is_deny(), "{v:?}");
}

#[test]
fn bad_policy_body_types() {
    let policies = map(json!({"p": "strict", "": {}}));
    let errors = compile_all(&policies, &[]).expect_err("invalid");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("policies.p: expected a map")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("policies.: policy name must not be empty")),
        "{errors:?}"
    );
}
