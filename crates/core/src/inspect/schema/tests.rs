use super::*;
use crate::inspect::rule::{Enforcement, RuleAction};
use serde_json::json;

fn detectors(schema: Value) -> Vec<String> {
    let mut hits = Hits::new();
    check(&schema, &mut hits);
    let v = hits.resolve(|_| RuleAction::Deny, Enforcement::Enforce, None);
    v.findings.into_iter().map(|f| f.detector).collect()
}

fn ok(props: Value) {
    let d = detectors(json!({"type":"object","properties":props}));
    assert!(d.is_empty(), "{props}: {d:?}");
}

fn bad(props: Value, want: &str) {
    let d = detectors(json!({"type":"object","properties":props}));
    assert!(
        d.iter().any(|x| x == want),
        "{props}: want {want}, got {d:?}"
    );
}

#[test]
fn every_revision_shape_is_accepted() {
    // 2025-06-18
    ok(json!({"env":{"type":"string","enum":["dev","prod"],"enumNames":["Dev","Prod"]}}));
    ok(json!({"n":{"type":"number","minimum":1,"maximum":5,"title":"Rating","description":"1-5"}}));
    ok(json!({"i":{"type":"integer","minimum":0}}));
    ok(json!({"b":{"type":"boolean","default":true}}));
    ok(json!({"s":{"type":"string","minLength":1,"maxLength":10,"format":"email"}}));
    ok(
        json!({"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uri"}}),
    );
    // 2025-11-25 / 2026-07-28 defaults and enum shapes
    ok(
        json!({"s":{"type":"string","default":"x"},"n":{"type":"number","default":2.5},"i":{"type":"integer","default":3}}),
    );
    ok(json!({"e":{"type":"string","enum":["a","b"],"default":"a"}}));
    ok(
        json!({"e":{"type":"string","title":"Env","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}],"default":"stg"}}),
    );
    ok(
        json!({"m":{"type":"array","items":{"type":"string","enum":["r","g"]},"minItems":1,"maxItems":2,"default":["r"]}}),
    );
    ok(
        json!({"m":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},"default":["r"]}}),
    );
    ok(json!({"s":{"type":"string","pattern":"^[a-z]+$"}}));
}

#[test]
fn top_level_rules() {
    assert!(detectors(json!({"type":"object","properties":{}})).is_empty());
    assert!(detectors(json!({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"T","additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"]})).is_empty());
    assert_eq!(detectors(json!("x")), ["schema.not_object"]);
    assert_eq!(
        detectors(json!({"type":"array","properties":{}})),
        ["schema.top_type"]
    );
    assert_eq!(detectors(json!({"properties":{}})), ["schema.top_type"]);
    assert_eq!(detectors(json!({"type":"object"})), ["schema.properties"]);
    assert_eq!(
        detectors(json!({"type":"object","properties":{"a":{"type":"string"}},"required":["b"]})),
        ["schema.required"]
    );
    assert_eq!(
        detectors(
            json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]})
        ),
        ["schema.required"]
    );
    assert_eq!(
        detectors(json!({"type":"object","properties":{},"allOf":[]})),
        ["schema.unknown_keyword:allOf"]
    );
}

#[test]
fn outside_the_subset_is_denied() {
    bad(
        json!({"o":{"type":"object","properties":{"x":{"type":"string"}}}}),
        "schema.nested_object",
    );
    bad(
        json!({"a":{"type":"array","items":{"type":"object"}}}),
        "schema.array_of_objects",
    );
    bad(
        json!({"a":{"type":"array","items":{"type":"string"}}}),
        "schema.free_array",
    );
    bad(json!({"r":{"$ref":"#/defs/x"}}), "schema.ref");
    bad(
        json!({"c":{"anyOf":[{"type":"string"},{"type":"null"}]}}),
        "schema.composition",
    );
    bad(
        json!({"c":{"type":"string","allOf":[]}}),
        "schema.composition",
    );
    bad(json!({"t":{"type":["string","null"]}}), "schema.type_list");
    bad(json!({"t":{"type":"null"}}), "schema.unknown_type");
    bad(json!({"t":{"title":"no type"}}), "schema.missing_type");
    bad(
        json!({"p":{"type":"string","writeOnly":true}}),
        "schema.unknown_keyword:writeOnly",
    );
    bad(
        json!({"p":{"type":"string","format":"password"}}),
        "schema.format",
    );
    bad(
        json!({"p":{"type":"string","x-secret":true}}),
        "schema.unknown_keyword:x-secret",
    );
    bad(
        json!({"p":{"type":"string","minLength":5,"maxLength":2}}),
        "schema.bounds",
    );
    bad(
        json!({"p":{"type":"number","minimum":5,"maximum":2}}),
        "schema.bounds",
    );
    bad(
        json!({"p":{"type":"string","minLength":-1}}),
        "schema.bad_value",
    );
    bad(json!({"p":{"type":"string","title":7}}), "schema.bad_value");
    bad(json!({"p":{"type":"string","enum":[]}}), "schema.enum");
    bad(json!({"p":{"type":"string","enum":["a",1]}}), "schema.enum");
    bad(
        json!({"p":{"type":"string","enum":["a"],"enumNames":["A","B"]}}),
        "schema.enum",
    );
    bad(
        json!({"p":{"type":"string","enum":["a"],"default":"z"}}),
        "schema.default",
    );
    bad(
        json!({"p":{"type":"string","oneOf":[{"const":"a"}]}}),
        "schema.composition",
    );
    bad(
        json!({"p":{"type":"boolean","default":"yes"}}),
        "schema.default",
    );
    bad(
        json!({"p":{"type":"integer","default":1.5}}),
        "schema.default",
    );
    bad(
        json!({"p":{"type":"array","items":{"enum":["a"]},"default":["b"]}}),
        "schema.default",
    );
    // ECMA-262 syntax the regex crate lacks is fine (lookaround, named backreferences);
    // what ECMA-262 refuses, or what could backtrack exponentially, is not.
    ok(json!({"p":{"type":"string","pattern":"(?<=a)b"}}));
    ok(json!({"p":{"type":"string","pattern":"^(?=.*\\d)(?=.*[A-Z]).{8,}$"}}));
    bad(
        json!({"p":{"type":"string","pattern":"[z-a]"}}),
        "schema.pattern",
    );
    bad(
        json!({"p":{"type":"string","pattern":"(?<=a"}}),
        "schema.pattern",
    );
    bad(
        json!({"p":{"type":"string","pattern":"^(a+)+$"}}),
        "schema.pattern_cost",
    );
    bad(json!({"":{"type":"string"}}), "schema.empty_name");
    bad(json!({"p":"string"}), "schema.not_object");
}

#[test]
fn kinds_decide_free_input() {
    assert_eq!(kind_of(&json!({"type":"string"})), PropKind::Text);
    assert_eq!(
        kind_of(&json!({"type":"string","enum":["a"]})),
        PropKind::Choice { multi: false }
    );
    assert_eq!(
        kind_of(&json!({"type":"string","oneOf":[]})),
        PropKind::Choice { multi: false }
    );
    assert_eq!(
        kind_of(&json!({"type":"array","items":{"anyOf":[]}})),
        PropKind::Choice { multi: true }
    );
    assert_eq!(
        kind_of(&json!({"type":"integer"})),
        PropKind::Number { integer: true }
    );
    assert_eq!(kind_of(&json!({"type":"object"})), PropKind::Invalid);
    assert!(PropKind::Invalid.is_free_input());
    assert!(!PropKind::Boolean.is_free_input());
}

#[test]
fn deep_nesting_is_cheap_and_denied() {
    let mut v = json!({"type":"string"});
    for _ in 0..200 {
        v = json!({"type":"object","properties":{"x": v}});
    }
    let d = detectors(json!({"type":"object","properties":{"deep": v}}));
    assert_eq!(d, ["schema.nested_object"]);
}

#[test]
fn texts_are_enumerated_with_locations() {
    let schema = json!({"type":"object","properties":{"e":{"type":"string","title":"T","oneOf":[{"const":"a","title":"A"}],"default":"a"}}});
    let mut seen = Vec::new();
    for_each_text(&schema, |loc, role, s| {
        seen.push((loc.render(), role, s.to_string()))
    });
    assert!(seen.contains(&("properties.e.name".into(), TextRole::Key, "e".into())));
    assert!(seen.contains(&("properties.e.title".into(), TextRole::Label, "T".into())));
    assert!(seen.contains(&(
        "properties.e.oneOf.title".into(),
        TextRole::Label,
        "A".into()
    )));
    assert!(seen.contains(&("properties.e.default".into(), TextRole::Value, "a".into())));
}

#[test]
fn long_keys_are_bounded_in_locations() {
    let long = "k".repeat(300);
    assert_eq!(key_loc(&long).len(), 64);
    assert_eq!(key_loc("短い"), "短い");
}
