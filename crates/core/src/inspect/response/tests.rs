use super::*;
use crate::elicitation::ElicitationView;
use crate::inspect::rule::{Enforcement, RuleAction};
use serde_json::json;

fn asked_form() -> AskedElicitation {
    let params = json!({"message":"m","requestedSchema":{"type":"object","properties":{
        "name":{"type":"string","minLength":2,"maxLength":5},
        "email":{"type":"string","format":"email"},
        "site":{"type":"string","format":"uri"},
        "day":{"type":"string","format":"date"},
        "at":{"type":"string","format":"date-time"},
        "code":{"type":"string","pattern":"^[A-Z]{3}$"},
        "n":{"type":"number","minimum":1,"maximum":5},
        "i":{"type":"integer"},
        "ok":{"type":"boolean"},
        "env":{"type":"string","enum":["dev","prod"]},
        "env2":{"type":"string","oneOf":[{"const":"stg","title":"Staging"}]},
        "colors":{"type":"array","minItems":1,"maxItems":2,"items":{"anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"},{"const":"b","title":"Blue"}]}},
        "tags":{"type":"array","items":{"type":"string","enum":["x","y"]}}
    },"required":["name"]}});
    AskedElicitation::from_view(&ElicitationView::from_params(&params)).expect("form")
}

fn detectors(asked: &AskedElicitation, answer: Value) -> Vec<String> {
    let mut hits = Hits::new();
    check(asked, &answer, &mut hits);
    hits.resolve(|_| RuleAction::Deny, Enforcement::Enforce, None)
        .findings
        .into_iter()
        .map(|f| format!("{}@{}", f.detector, f.location))
        .collect()
}

#[test]
fn valid_answers_pass() {
    let a = asked_form();
    for answer in [
        json!({"action":"accept","content":{"name":"abc"}}),
        json!({"action":"accept","content":{"name":"abc","email":"a@b.example","site":"https://x.example/p",
            "day":"2024-02-29","at":"2024-01-15T10:30:00.5+02:00","code":"ABC","n":2.5,"i":3,"ok":false,
            "env":"prod","env2":"stg","colors":["r","g"],"tags":[]},"_meta":{"x":1}}),
        json!({"action":"decline"}),
        json!({"action":"cancel"}),
    ] {
        assert!(detectors(&a, answer.clone()).is_empty(), "{answer}");
    }
}

#[test]
fn each_violation_is_named() {
    let a = asked_form();
    let cases = [
        (json!({"action":"maybe"}), "response.bad_action@action"),
        (json!({}), "response.bad_action@action"),
        (json!("accept"), "response.not_object@result"),
        (
            json!({"action":"decline","content":{}}),
            "response.content_without_accept@content",
        ),
        (
            json!({"action":"accept"}),
            "response.missing_required@content",
        ),
        (
            json!({"action":"accept","content":[]}),
            "response.content_not_object@content",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","zzz":1}}),
            "response.unknown_field@content",
        ),
        (
            json!({"action":"accept","content":{"email":"a@b.example"}}),
            "response.missing_required@content.name",
        ),
        (
            json!({"action":"accept","content":{"name":3}}),
            "response.type@content.name",
        ),
        (
            json!({"action":"accept","content":{"name":"a"}}),
            "response.length@content.name",
        ),
        (
            json!({"action":"accept","content":{"name":"abcdef"}}),
            "response.length@content.name",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","email":"nope"}}),
            "response.format@content.email",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","site":"/rel"}}),
            "response.format@content.site",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","day":"2023-02-29"}}),
            "response.format@content.day",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","at":"2024-01-15 10:30:00"}}),
            "response.format@content.at",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","code":"abc"}}),
            "response.pattern@content.code",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","n":9}}),
            "response.range@content.n",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","n":"2"}}),
            "response.type@content.n",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","i":1.5}}),
            "response.type@content.i",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","ok":"true"}}),
            "response.type@content.ok",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","env":"qa"}}),
            "response.enum@content.env",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","env2":"Staging"}}),
            "response.enum@content.env2",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","colors":["r","x"]}}),
            "response.enum@content.colors",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","colors":[]}}),
            "response.items@content.colors",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","colors":["r","g","b"]}}),
            "response.items@content.colors",
        ),
        (
            json!({"action":"accept","content":{"name":"abc","tags":"x"}}),
            "response.type@content.tags",
        ),
    ];
    for (answer, want) in cases {
        let got = detectors(&a, answer.clone());
        assert_eq!(got, [want], "{answer}");
    }
}

#[test]
fn url_mode_accept_has_no_content() {
    let params = json!({"mode":"url","url":"https://x.example","message":"m","elicitationId":"e1"});
    let a = AskedElicitation::from_view(&ElicitationView::from_params(&params)).expect("url");
    assert!(detectors(&a, json!({"action":"accept"})).is_empty());
    assert_eq!(
        detectors(&a, json!({"action":"accept","content":{}})),
        ["response.content_on_url_accept@content"]
    );
}

#[test]
fn formats() {
    assert!(
        is_date("2000-02-29")
            && !is_date("1900-02-29")
            && !is_date("2024-13-01")
            && !is_date("2024-1-01")
    );
    assert!(is_date_time("2024-01-15T10:30:00Z") && is_date_time("2024-01-15t10:30:00.123-05:30"));
    assert!(
        !is_date_time("2024-01-15T25:30:00Z")
            && !is_date_time("2024-01-15T10:30:00")
            && !is_date_time("2024-01-15T10:30:00+0530")
    );
}
