use super::*;
use crate::elicitation::{extract_all, ElicitationView};
use crate::policy::compile::compile_policy;
use crate::policy::model::RawPolicy;
use serde_json::json;

fn policy(raw: Value) -> Policy {
    let raw: RawPolicy = serde_json::from_value(raw).expect("raw policy");
    let mut errors = Vec::new();
    let p = compile_policy("t", &raw, &mut errors, &mut Vec::new());
    assert!(errors.is_empty(), "{errors:?}");
    p
}

fn ctx() -> InspectContext {
    InspectContext::standalone(Era::Legacy2025_11)
}

fn judge_with(params: Value, caps: ClientCaps, c: InspectContext, p: &Policy) -> Verdict {
    inspect(&ElicitationView::from_params(&params), &caps, &c, p)
}

fn judge(params: Value) -> Verdict {
    judge_with(
        params,
        ClientCaps::form_and_url(),
        ctx(),
        &Policy::builtin_default(),
    )
}

fn rules(v: &Verdict) -> Vec<&'static str> {
    v.rules.iter().map(|r| r.as_str()).collect()
}

fn form(props: Value) -> Value {
    json!({"message":"Please fill in","requestedSchema":{"type":"object","properties":props}})
}

#[test]
fn seed_deployment_form_passes() {
    let msg = json!({"jsonrpc":"2.0","id":42,"method":"elicitation/create","params":{
        "message":"请补充本次部署的目标环境和发布分支",
        "requestedSchema":{"type":"object","properties":{
            "environment":{"type":"string","enum":["staging","production"]},
            "branch":{"type":"string","minLength":1},
            "canary":{"type":"boolean"}},"required":["environment","branch"]}}});
    let views = extract_all(&msg);
    let v = inspect(
        &views[0],
        &ClientCaps::form_only(),
        &InspectContext::standalone(Era::Legacy2025_06),
        &Policy::builtin_default(),
    );
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    assert!(v.rules.is_empty());
}

#[test]
fn seed_github_username_and_thai_confirm_forms_pass() {
    let v = judge(
        json!({"mode":"form","message":"請提供您的 GitHub 使用者名稱",
        "requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}),
    );
    assert_eq!(v.decision, Decision::Allow);
    let v = judge(
        json!({"mode":"form","message":"Confirm the deployment","requestedSchema":{"type":"object","properties":{
        "environment":{"type":"string","title":"Environment","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}],"default":"stg"},
        "notify":{"type":"boolean","title":"Notify the on-call channel","default":true},
        "window":{"type":"string","format":"date-time","title":"Deploy at"}},"required":["environment"]}}),
    );
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    let v = judge(
        json!({"message":"How was the demo?","requestedSchema":{"type":"object","properties":{
        "rating":{"type":"number","title":"Rating (1-5)","minimum":1,"maximum":5},"comment":{"type":"string","title":"Comment"}},"required":["rating"]}}),
    );
    assert_eq!(v.decision, Decision::Allow);
}

#[test]
fn seed_url_mode_examples_pass() {
    let v = judge(
        json!({"mode":"url","url":"https://mcp.example.com/ui/set_api_key","message":"請完成 API key 設定後繼續。","elicitationId":"e1"}),
    );
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    let v = judge_with(
        json!({"mode":"url","url":"https://mcp.example.com/connect/github?flow=8f1c","message":"Connect your GitHub account to continue."}),
        ClientCaps::form_and_url(),
        InspectContext::standalone(Era::Stateless2026),
        &Policy::builtin_default(),
    );
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
}

#[test]
fn seed_secret_forms_are_denied() {
    for (props, message) in [
        (
            json!({"api_key":{"type":"string"}}),
            "Configure the integration",
        ),
        (json!({"密码":{"type":"string"}}), "请输入"),
        (
            json!({"value":{"type":"string","title":"รหัสผ่าน"}}),
            "กรุณากรอก",
        ),
        (
            json!({"v":{"type":"string"}}),
            "Saisissez votre mot de passe",
        ),
        (json!({"token":{"type":"string"}}), "GitHub"),
        (
            json!({"card":{"type":"string","title":"Numéro de carte bancaire"}}),
            "Paiement",
        ),
    ] {
        let v = judge(
            json!({"message":message,"requestedSchema":{"type":"object","properties":props}}),
        );
        assert_eq!(rules(&v), ["form.secret"], "{props}");
        assert!(v.is_deny());
    }
}

#[test]
fn mode_undeclared() {
    let url = json!({"mode":"url","url":"https://a.example/x","message":"m","elicitationId":"e"});
    let v = judge_with(
        url.clone(),
        ClientCaps::form_only(),
        ctx(),
        &Policy::builtin_default(),
    );
    assert_eq!(rules(&v), ["mode.undeclared"]);
    assert_eq!(v.findings[0].detector, "mode.undeclared:url");
    let f = form(json!({"a":{"type":"string"}}));
    let v = judge_with(
        f.clone(),
        ClientCaps::url_only(),
        ctx(),
        &Policy::builtin_default(),
    );
    assert_eq!(rules(&v), ["mode.undeclared"]);
    let v = judge_with(f, ClientCaps::none(), ctx(), &Policy::builtin_default());
    assert_eq!(rules(&v), ["mode.undeclared"]);
    let v = judge_with(
        url,
        ClientCaps::url_only(),
        ctx(),
        &Policy::builtin_default(),
    );
    assert!(v.rules.is_empty());
}

#[test]
fn mode_disabled_and_kill_switch() {
    let p = policy(json!({"modes":{"url":false}}));
    let url = json!({"mode":"url","url":"https://a.example/x","message":"m","elicitationId":"e"});
    let v = judge_with(url, ClientCaps::form_and_url(), ctx(), &p);
    assert_eq!(rules(&v), ["mode.disabled"]);
    let p = policy(json!({"kill_switch":true,"dry_run":true,"rules":{"mode.disabled":"off"}}));
    let v = judge_with(form(json!({})), ClientCaps::form_and_url(), ctx(), &p);
    assert!(v.is_deny());
    assert_eq!(v.denied_by, [RuleId::ModeDisabled]);
    assert_eq!(v.findings[0].detector, "policy.kill_switch");
}

#[test]
fn request_unassociated() {
    let c = InspectContext {
        associated: false,
        ..ctx()
    };
    let v = judge_with(
        form(json!({})),
        ClientCaps::form_only(),
        c,
        &Policy::builtin_default(),
    );
    assert_eq!(rules(&v), ["request.unassociated"]);
}

#[test]
fn request_malformed() {
    for (params, det) in [
        (json!("text"), "request.not_object"),
        (
            json!({"requestedSchema":{"type":"object","properties":{}}}),
            "request.no_message",
        ),
        (
            json!({"message":"  ","requestedSchema":{"type":"object","properties":{}}}),
            "request.empty_message",
        ),
        (
            json!({"message":5,"requestedSchema":{"type":"object","properties":{}}}),
            "request.bad_message",
        ),
        (
            json!({"mode":"voice","message":"m"}),
            "request.unknown_mode",
        ),
        (json!({"mode":"form","message":"m"}), "request.no_schema"),
        (
            json!({"mode":"url","message":"m","elicitationId":"e"}),
            "request.no_url",
        ),
        (
            json!({"mode":"url","message":"m","url":7,"elicitationId":"e"}),
            "request.bad_url",
        ),
    ] {
        let v = judge(params.clone());
        assert_eq!(rules(&v), ["request.malformed"], "{params}");
        assert_eq!(v.findings[0].detector, det);
    }
}

#[test]
fn form_schema_secret_url_limits() {
    let v = judge(form(json!({"o":{"type":"object","properties":{}}})));
    assert_eq!(rules(&v), ["form.schema"]);
    let v = judge(form(json!({"p":{"type":"string","format":"password"}})));
    assert_eq!(rules(&v), ["form.schema", "form.secret"]);
    let v = judge(
        json!({"message":"Read https://evil.example first","requestedSchema":{"type":"object","properties":{}}}),
    );
    assert_eq!(rules(&v), ["form.url"]);
    let v = judge(form(
        json!({"a":{"type":"string","enum":["www.evil.example","b"]}}),
    ));
    assert_eq!(rules(&v), ["form.url"]);
    let v = judge(form(
        json!({"a":{"type":"string","default":"https://example.com"}}),
    ));
    assert!(v.rules.is_empty(), "defaults are not rendered as links");
    let many: serde_json::Map<String, Value> = (0..21)
        .map(|i| (format!("f{i}"), json!({"type":"boolean"})))
        .collect();
    let v = judge(form(Value::Object(many)));
    assert_eq!(rules(&v), ["form.limits"]);
    let v = judge(form(
        json!({"a":{"type":"string","description":"x".repeat(2049)}}),
    ));
    assert_eq!(rules(&v), ["form.limits"]);
    let v = judge(
        json!({"message":"m".repeat(4097),"requestedSchema":{"type":"object","properties":{}}}),
    );
    assert_eq!(rules(&v), ["form.limits"]);
}

#[test]
fn url_rules() {
    let base = |url: &str| json!({"mode":"url","url":url,"message":"Open","elicitationId":"e1"});
    assert_eq!(rules(&judge(base("relative"))), ["url.invalid"]);
    assert_eq!(rules(&judge(base("http://example.com/x"))), ["url.scheme"]);
    assert_eq!(
        rules(&judge(base("https://u:p@example.com/x"))),
        ["url.credentials"]
    );
    assert_eq!(
        rules(&judge(base("https://example.com/x?email=a%40b.example"))),
        ["url.pii"]
    );
    assert_eq!(
        rules(&judge(base("https://xn--pple-43d.com/"))),
        ["url.host"]
    );
    let v = judge(json!({"mode":"url","url":"https://example.com/x","message":"Open"}));
    assert_eq!(rules(&v), ["url.missing_id"]);
}

#[test]
fn missing_id_depends_on_carrier_and_era() {
    let params = json!({"mode":"url","url":"https://example.com/x","message":"Open"});
    let p = Policy::builtin_default();
    let caps = ClientCaps::form_and_url();
    let legacy_06 = judge_with(
        params.clone(),
        caps,
        InspectContext::standalone(Era::Legacy2025_06),
        &p,
    );
    assert!(legacy_06.rules.is_empty());
    let modern = json!({"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":params}}}});
    let v = inspect(
        &extract_all(&modern)[0],
        &caps,
        &InspectContext::standalone(Era::Stateless2026),
        &p,
    );
    assert!(v.rules.is_empty(), "2026 removed elicitationId");
    let err = json!({"error":{"code":-32042,"message":"x","data":{"elicitations":[params]}}});
    let v = inspect(
        &extract_all(&err)[0],
        &caps,
        &InspectContext::standalone(Era::Stateless2026),
        &p,
    );
    assert_eq!(rules(&v), ["url.missing_id"]);
}

#[test]
fn repeat_and_rate() {
    let c = InspectContext {
        declined_recently: true,
        recent_count: 11,
        ..ctx()
    };
    let v = judge_with(
        form(json!({})),
        ClientCaps::form_only(),
        c,
        &Policy::builtin_default(),
    );
    assert_eq!(rules(&v), ["repeat.after_decline", "rate.limit"]);
    let c = InspectContext {
        recent_count: 10,
        ..ctx()
    };
    assert!(judge_with(
        form(json!({})),
        ClientCaps::form_only(),
        c,
        &Policy::builtin_default()
    )
    .rules
    .is_empty());
}

#[test]
fn actions_audit_off_and_dry_run() {
    let p = policy(json!({"rules":{"form.secret":"audit","form.url":"off"}}));
    let params = json!({"message":"See https://x.example","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}});
    let v = judge_with(params.clone(), ClientCaps::form_only(), ctx(), &p);
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(rules(&v), ["form.secret"]);
    assert_eq!(v.audited, [RuleId::FormSecret]);
    let p = policy(json!({"dry_run":true}));
    let v = judge_with(params, ClientCaps::form_only(), ctx(), &p);
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(rules(&v), ["form.secret", "form.url"]);
    assert!(v.denied_by.is_empty());
}

#[test]
fn response_rules() {
    let params = json!({"message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}});
    let asked = AskedElicitation::from_view(&ElicitationView::from_params(&params)).expect("asked");
    let p = Policy::builtin_default();
    assert!(!check_response(
        &asked,
        &json!({"action":"accept","content":{"ok":true}}),
        &p
    )
    .is_deny());
    let v = check_response(
        &asked,
        &json!({"action":"accept","content":{"ok":"yes"}}),
        &p,
    );
    assert_eq!(rules(&v), ["response.invalid"]);
    let v = unknown_response(UnknownAnswer::AlreadyAnswered, &p);
    assert_eq!(rules(&v), ["response.unknown"]);
    assert_eq!(v.findings[0].detector, "response.already_answered");
    let audit = policy(json!({"rules":{"response.unknown":"audit"}}));
    assert!(!unknown_response(UnknownAnswer::CompletionUnknownId, &audit).is_deny());
}

#[test]
fn every_rule_id_is_reachable() {
    // One deny per rule, gathered from the tests above, to guarantee coverage stays total.
    let mut seen = std::collections::BTreeSet::new();
    let p = Policy::builtin_default();
    let all = ClientCaps::form_and_url();
    let url = |u: &str| json!({"mode":"url","url":u,"message":"m","elicitationId":"e"});
    let cases: Vec<(Value, ClientCaps, InspectContext)> = vec![
        (url("https://a.example"), ClientCaps::form_only(), ctx()),
        (
            form(json!({})),
            all,
            InspectContext {
                associated: false,
                declined_recently: true,
                recent_count: 99,
                state_unavailable: true,
                ..ctx()
            },
        ),
        (json!({"mode":"x","message":"m"}), all, ctx()),
        (
            form(
                json!({"o":{"type":"object"},"password":{"type":"string"},"d":{"type":"string","title":"https://x.example"}}),
            ),
            all,
            ctx(),
        ),
        (
            json!({"message":"m".repeat(5000),"requestedSchema":{"type":"object","properties":{}}}),
            all,
            ctx(),
        ),
        (url("nope"), all, ctx()),
        (
            json!({"mode":"url","url":"http://u:p@xn--pple-43d.com/?token=abcdef","message":"m"}),
            all,
            ctx(),
        ),
    ];
    for (params, caps, c) in cases {
        seen.extend(judge_with(params, caps, c, &p).rules);
    }
    let kill = policy(json!({"kill_switch":true}));
    seen.extend(judge_with(form(json!({})), all, ctx(), &kill).rules);
    let asked = AskedElicitation::from_view(&ElicitationView::from_params(&form(json!({}))))
        .expect("asked");
    seen.extend(check_response(&asked, &json!({"action":"nope"}), &p).rules);
    seen.extend(unknown_response(UnknownAnswer::UnknownId, &p).rules);
    seen.extend(session_mismatch(&p, "session").rules);
    let missing: Vec<_> = RuleId::ALL.iter().filter(|r| !seen.contains(r)).collect();
    assert!(missing.is_empty(), "unreached: {missing:?}");
}

#[test]
fn the_address_flood_limit_is_off_unless_set() {
    let busy = InspectContext {
        address_count: 10_000,
        ..ctx()
    };
    let all = ClientCaps::form_and_url();
    let colour = form(json!({"colour":{"type":"string"}}));
    let off = Policy::builtin_default();
    assert!(!judge_with(colour.clone(), all, busy, &off).is_deny());
    let on = policy(json!({"rate":{"max_per_minute_per_address":50}}));
    let v = judge_with(colour.clone(), all, busy, &on);
    assert_eq!(v.denied_by, [RuleId::RateLimit]);
    let calm = InspectContext {
        address_count: 50,
        ..ctx()
    };
    assert!(!judge_with(colour, all, calm, &on).is_deny());
}

#[test]
fn an_unavailable_store_fails_closed_with_its_own_rule() {
    let down = InspectContext {
        state_unavailable: true,
        ..ctx()
    };
    let colour = form(json!({"colour":{"type":"string"}}));
    let v = judge_with(
        colour,
        ClientCaps::form_and_url(),
        down,
        &Policy::builtin_default(),
    );
    assert_eq!(v.denied_by, [RuleId::StateUnavailable]);
    assert!(state_unavailable(&Policy::builtin_default()).is_deny());
}

#[test]
fn findings_never_contain_values() {
    let secret_default = "hunter2-super-secret";
    let v = judge(
        json!({"message":"Enter your password, john@example.com","requestedSchema":{"type":"object","properties":{
        "password":{"type":"string","default":secret_default,"description":"Your password https://evil.example/a"}}}}),
    );
    let dump = format!("{v:?}");
    for needle in [secret_default, "john@example.com", "evil.example"] {
        assert!(!dump.contains(needle), "{needle} leaked: {dump}");
    }
    let v = judge(
        json!({"mode":"url","url":"https://example.com/u/jane@example.com?token=s3cr3tvalue&e=bob%40example.com#id_token=xyz123456","message":"m","elicitationId":"e"}),
    );
    let dump = format!("{v:?}");
    for needle in ["jane@example.com", "s3cr3tvalue", "bob", "xyz123456"] {
        assert!(!dump.contains(needle), "{needle} leaked: {dump}");
    }
}

const PINNED_FINGERPRINT: u64 = 0x7166_a685_fe3b_132a;

#[test]
fn fingerprint_is_stable_and_sensitive() {
    let a = json!({"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}}}});
    let b: Value = serde_json::from_str(r#"{"requestedSchema":{"properties":{"b":{"type":"boolean"},"a":{"type":"string"}},"type":"object"},"message":"m"}"#).expect("json");
    let fa = fingerprint(&ElicitationView::from_params(&a));
    assert_eq!(fa, fingerprint(&ElicitationView::from_params(&b)));
    // Pinned value: the algorithm must not change between releases (pending tables survive reloads).
    assert_eq!(
        fa, PINNED_FINGERPRINT,
        "fingerprint algorithm changed: {fa:#018x}"
    );
    let c = json!({"message":"m2","requestedSchema":a["requestedSchema"].clone()});
    assert_ne!(fa, fingerprint(&ElicitationView::from_params(&c)));
    let u1 = json!({"mode":"url","url":"https://a.example/1","message":"m"});
    let u2 = json!({"mode":"url","url":"https://a.example/2","message":"m"});
    assert_ne!(
        fingerprint(&ElicitationView::from_params(&u1)),
        fingerprint(&ElicitationView::from_params(&u2))
    );
    assert_ne!(fingerprint(&ElicitationView::from_params(&u1)), fa);
}

/// The fingerprint as first defined: the same canonical walk fed to the hasher piece by
/// piece, keys sorted explicitly. The one-buffer implementation must give the same values
/// (declined-elicitation records in a shared store outlive a rolling upgrade).
fn reference_fingerprint(view: &ElicitationView<'_>) -> u64 {
    use sha2::{Digest, Sha256};
    fn walk(v: &Value, depth: usize, h: &mut Sha256) {
        if depth >= FINGERPRINT_MAX_DEPTH {
            h.update(b"~");
            return;
        }
        match v {
            Value::Null => h.update(b"n"),
            Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                h.update(b"#");
                h.update(n.to_string().as_bytes());
                h.update(b";");
            }
            Value::String(s) => {
                h.update(b"s");
                h.update((s.len() as u64).to_be_bytes());
                h.update(s.as_bytes());
            }
            Value::Array(a) => {
                h.update(b"[");
                h.update((a.len() as u64).to_be_bytes());
                for x in a {
                    walk(x, depth + 1, h);
                }
            }
            Value::Object(o) => {
                h.update(b"{");
                h.update((o.len() as u64).to_be_bytes());
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                for k in keys {
                    h.update((k.len() as u64).to_be_bytes());
                    h.update(k.as_bytes());
                    walk(&o[k], depth + 1, h);
                }
            }
        }
    }
    let mut h = Sha256::new();
    match view.mode_field() {
        ModeField::Known(Mode::Form) => h.update(b"form\0"),
        ModeField::Known(Mode::Url) => h.update(b"url\0"),
        ModeField::Unknown => {
            h.update(b"unknown\0");
            walk(view.params.get("mode").unwrap_or(&Value::Null), 0, &mut h);
        }
    }
    walk(
        view.params.get("message").unwrap_or(&Value::Null),
        0,
        &mut h,
    );
    match view.mode() {
        Some(Mode::Url) => walk(view.params.get("url").unwrap_or(&Value::Null), 0, &mut h),
        _ => walk(
            view.params.get("requestedSchema").unwrap_or(&Value::Null),
            0,
            &mut h,
        ),
    }
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

#[test]
fn fingerprint_matches_its_first_definition_on_every_value_type() {
    let mut deep = json!("bottom");
    for i in 0..(FINGERPRINT_MAX_DEPTH + 5) {
        deep = if i % 2 == 0 {
            json!([deep, i])
        } else {
            json!({"k": deep, "n": null})
        };
    }
    let cases = [
        json!({"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"number","minimum":-1.5e300,"maximum":18446744073709551615u64},"b":{"type":"boolean","default":true},"c":{"type":"string","enum":["x","ü","日本"]}},"required":["a"]}}),
        json!({"mode":"url","url":"https://a.example/p?q=1","message":"Zoë","elicitationId":"e1"}),
        json!({"mode":"form","message":null,"requestedSchema":deep}),
        json!({"mode":7,"message":["m",{"z":0,"a":-0.0,"É":false}]}),
        json!({"mode":"carrier-pigeon","message":"m"}),
        json!({}),
    ];
    for params in &cases {
        let view = ElicitationView::from_params(params);
        assert_eq!(fingerprint(&view), reference_fingerprint(&view), "{params}");
    }
}
