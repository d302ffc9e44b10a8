//! Unit tests of `elicitgate test`: parsing, judging, reporting.

use super::*;
use elicitgate_core::policy::compile_all;

fn policies() -> PolicySet {
    let raw = serde_json::json!({"relaxed": {"rules": {"form.secret": "audit"}}});
    let raw = raw.as_object().expect("an object").clone();
    let routes = [
        ("strict".to_owned(), None),
        ("lax".to_owned(), Some("relaxed".to_owned())),
    ];
    compile_all(&raw, &routes).expect("policies compile").0
}

const CASES: &str = r#"
cases:
  - name: a password form is blocked
    route: strict
    message: {jsonrpc: "2.0", id: 1, method: elicitation/create, params: {message: "Sign in", requestedSchema: {type: object, properties: {password: {type: string}}}}}
    expect: {verdict: deny, rules: [form.secret]}
  - name: relaxed audits it
    route: lax
    message: {message: "Sign in", requestedSchema: {type: object, properties: {password: {type: string}}}}
    expect: {verdict: deny}
"#;

#[test]
fn cases_parse_with_their_camel_case_messages_intact() {
    let cases = parse(CASES).expect("parses");
    assert_eq!(cases.len(), 2);
    assert!(
        cases[0].message["params"]["requestedSchema"].is_object(),
        "{:?}",
        cases[0].message
    );
    assert_eq!(cases[1].expect.rules, None);
}

#[test]
fn a_passing_case_passes_and_a_wrong_expectation_reports_both_sides() {
    let cases = parse(CASES).expect("parses");
    let set = policies();
    let routes = ["strict", "lax"];
    assert_eq!(judge(&set, &routes, &cases[0]), Outcome::Passed);
    let outcome = judge(&set, &routes, &cases[1]);
    let Outcome::Failed {
        differences,
        findings,
    } = &outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        differences,
        &[("verdict", "deny".to_owned(), "allow".to_owned())]
    );
    assert!(
        findings.iter().any(|f| f.starts_with("form.secret at ")),
        "{findings:?}"
    );
    let text = report("cases.yaml", 1, &cases[1], &outcome);
    assert!(
        text.starts_with("FAIL  cases.yaml #2 relaxed audits it\n"),
        "{text}"
    );
    assert!(
        text.contains("- verdict: deny\n") && text.contains("+ verdict: allow\n"),
        "{text}"
    );
}

#[test]
fn unknown_routes_bad_verdicts_and_unknown_fields_are_errors() {
    let set = policies();
    let mut cases = parse(CASES).expect("parses");
    cases[0].route = Some("nope".into());
    assert!(matches!(judge(&set, &["strict"], &cases[0]), Outcome::Error(e) if e.contains("nope")));
    assert!(parse(&CASES.replace("verdict: deny, rules", "verdict: block, rules")).is_err());
    assert!(parse(&CASES.replace("    route: strict", "    rout: strict")).is_err());
    let no_elicitation = parse("cases:\n  - name: x\n    message: {jsonrpc: \"2.0\", id: 1, method: ping}\n    expect: {verdict: allow}\n").expect("parses");
    assert!(matches!(
        judge(&set, &[], &no_elicitation[0]),
        Outcome::Error(_)
    ));
}
