//! Property tests: `extract_all`, `inspect`, `check_response`, `fingerprint` and the CLI
//! never panic, whatever JSON arrives (unicode strings, huge numbers, deep nesting), and
//! verdicts stay well-formed.

use elicitgate::inspect_cli;
use elicitgate_core::elicitation::{extract_all, ClientCaps, ElicitationView};
use elicitgate_core::inspect::{
    check_response, fingerprint, inspect, AskedElicitation, Decision, Era, InspectContext,
};
use elicitgate_core::policy::Policy;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn any_string() -> impl Strategy<Value = String> {
    prop_oneof![
        ".*",
        "[a-zA-Z_]{0,12}",
        Just("password".to_string()),
        Just("https://xn--pple-43d.com/?token=abc&e=a%40b.example".to_string()),
        Just("密码 รหัสผ่าน ＡＰＩキー раssword".to_string()),
        Just("4111111111111111".to_string()),
        Just("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln".to_string()),
        Just("\u{0}\u{202e}\u{feff}\\\n".to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("type".to_string()),
        Just("properties".to_string()),
        Just("required".to_string()),
        Just("enum".to_string()),
        Just("oneOf".to_string()),
        Just("anyOf".to_string()),
        Just("items".to_string()),
        Just("default".to_string()),
        Just("title".to_string()),
        Just("format".to_string()),
        Just("pattern".to_string()),
        Just("minLength".to_string()),
        Just("maximum".to_string()),
        Just("message".to_string()),
        Just("mode".to_string()),
        Just("url".to_string()),
        Just("requestedSchema".to_string()),
        Just("elicitationId".to_string()),
        Just("method".to_string()),
        Just("params".to_string()),
        Just("result".to_string()),
        Just("error".to_string()),
        Just("inputRequests".to_string()),
        Just("code".to_string()),
        Just("data".to_string()),
        Just("elicitations".to_string()),
        Just("action".to_string()),
        Just("content".to_string()),
        any_string(),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(json!(-32042)),
        Just(json!("elicitation/create")),
        Just(json!("url")),
        Just(json!("form")),
        Just(json!("string")),
        Just(json!("object")),
        Just(json!("array")),
        Just(json!("input_required")),
        any_string().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(8, 256, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn all_caps() -> impl Strategy<Value = ClientCaps> {
    prop_oneof![
        Just(ClientCaps::none()),
        Just(ClientCaps::form_only()),
        Just(ClientCaps::url_only()),
        Just(ClientCaps::form_and_url()),
    ]
}

fn check_verdict(v: &elicitgate_core::inspect::Verdict) {
    let mut sorted = v.rules.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, v.rules, "rules sorted and unique");
    assert_eq!(v.decision == Decision::Deny, !v.denied_by.is_empty());
    assert!(v.findings.iter().all(|f| v.rules.contains(&f.rule)));
    assert!(v.findings.len() <= elicitgate_core::inspect::MAX_FINDINGS + 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_messages(msg in value(), caps in all_caps(), answer in value()) {
        let policy = Policy::builtin_default();
        for view in extract_all(&msg) {
            for era in [Era::Legacy2025_06, Era::Legacy2025_11, Era::Stateless2026] {
                let v = inspect(&view, &caps, &InspectContext::standalone(era), &policy);
                check_verdict(&v);
            }
            let _ = fingerprint(&view);
            if let Some(asked) = AskedElicitation::from_view(&view) {
                check_verdict(&check_response(&asked, &answer, &policy));
            }
        }
    }

    #[test]
    fn arbitrary_params(params in value(), caps in all_caps(), answer in value()) {
        let policy = Policy::builtin_default();
        let view = ElicitationView::from_params(&params);
        let v = inspect(&view, &caps, &InspectContext::standalone(Era::Legacy2025_11), &policy);
        check_verdict(&v);
        if !params.is_object() {
            prop_assert_eq!(v.decision, Decision::Deny, "non-object params fail closed");
        }
        if let Some(asked) = AskedElicitation::from_view(&view) {
            check_verdict(&check_response(&asked, &answer, &policy));
        }
    }

    #[test]
    fn arbitrary_schemas_and_urls(schema in value(), url in any_string(), message in any_string()) {
        let policy = Policy::builtin_default();
        let form = json!({"message": message, "requestedSchema": schema});
        check_verdict(&inspect(&ElicitationView::from_params(&form), &ClientCaps::form_and_url(), &InspectContext::standalone(Era::Stateless2026), &policy));
        let u = json!({"mode": "url", "message": message, "url": url});
        check_verdict(&inspect(&ElicitationView::from_params(&u), &ClientCaps::form_and_url(), &InspectContext::standalone(Era::Legacy2025_11), &policy));
    }

    #[test]
    fn cli_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512), doc in value()) {
        let policy = Policy::builtin_default();
        let (code, line) = inspect_cli::run(&policy, None, &bytes);
        prop_assert!((0..=2).contains(&code));
        prop_assert!(serde_json::from_str::<Value>(&line).is_ok());
        let text = doc.to_string();
        let (code, _) = inspect_cli::run(&policy, Some("{\"elicitation\":{}}"), text.as_bytes());
        prop_assert!((0..=2).contains(&code));
    }
}

/// Deep nesting well past serde_json's own parse limit, built programmatically.
#[test]
fn very_deep_values_are_bounded() {
    let policy = Policy::builtin_default();
    // Built by hand: `json!` would re-serialise (recursively) the interpolated value.
    let obj = |pairs: Vec<(&str, Value)>| {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    };
    let mut schema = json!({"type": "string"});
    for _ in 0..2000 {
        schema = obj(vec![
            ("type", json!("object")),
            ("properties", obj(vec![("x", schema)])),
        ]);
    }
    let params = obj(vec![("message", json!("m")), ("requestedSchema", schema)]);
    let view = ElicitationView::from_params(&params);
    let v = inspect(
        &view,
        &ClientCaps::form_and_url(),
        &InspectContext::standalone(Era::Stateless2026),
        &policy,
    );
    assert_eq!(v.decision, Decision::Deny);
    let _ = fingerprint(&view);
    let asked = AskedElicitation::from_view(&view).expect("form");
    let mut content = json!(1);
    for _ in 0..2000 {
        content = obj(vec![("x", content)]);
    }
    let answer = obj(vec![("action", json!("accept")), ("content", content)]);
    // "x" is outside the subset in the asked schema, so the validator accepts any value
    // for it (documented); the point here is bounded work and no stack overflow.
    let r = check_response(&asked, &answer, &policy);
    check_verdict(&r);
    drop_deep(params);
    drop_deep(answer);
}

/// serde_json's `Drop` recurses; tear deep values down with an explicit stack.
fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(mut x) = stack.pop() {
        match &mut x {
            Value::Array(a) => stack.append(a),
            Value::Object(o) => stack.extend(std::mem::take(o).into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}
