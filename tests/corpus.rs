//! Labelled corpus: every case in `tests/corpus/*.jsonl` must get exactly its expected
//! decision and rule set. Prints precision/recall per rule and per language:
//! `cargo test --test corpus -- --nocapture`.
//!
//! Case format (one JSON object per line):
//! `{"id", "lang", "input": <params | JSON-RPC message>, "expect": "allow"|"deny",
//!   "rules": [...], "caps"?: <ClientCapabilities>, "era"?: "2025-06"|"2025-11"|"2026",
//!   "policy"?: <policy body>}`. Defaults: caps `{"elicitation":{"form":{},"url":{}}}`,
//! the built-in strict policy, and the CLI's era inference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use elicitgate::elicitation::{extract_all, Carrier, ClientCaps};
use elicitgate::inspect::{inspect, Era, InspectContext, RuleId, Verdict};
use elicitgate::policy::{compile_all, Policy};
use serde_json::{Map, Value};

struct Case {
    file: String,
    id: String,
    lang: String,
    input: Value,
    expect: String,
    rules: BTreeSet<String>,
    caps: Option<Value>,
    era: Option<String>,
    policy: Option<Value>,
}

fn load() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    let mut ids = BTreeSet::new();
    for path in files {
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("?")
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read corpus file");
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}:{}: {e}", n + 1));
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            let id = s("id").unwrap_or_else(|| panic!("{file}:{}: missing id", n + 1));
            assert!(ids.insert(id.clone()), "duplicate case id {id}");
            let expect = s("expect").expect("expect");
            assert!(expect == "allow" || expect == "deny", "{id}: bad expect");
            let rules: BTreeSet<String> = v["rules"]
                .as_array()
                .expect("rules array")
                .iter()
                .map(|r| r.as_str().expect("rule string").to_string())
                .collect();
            for r in &rules {
                assert!(r.parse::<RuleId>().is_ok(), "{id}: unknown rule {r}");
            }
            out.push(Case {
                file: file.clone(),
                id,
                lang: s("lang").unwrap_or_else(|| "?".into()),
                input: v["input"].clone(),
                expect,
                rules,
                caps: v.get("caps").cloned(),
                era: s("era"),
                policy: v.get("policy").cloned(),
            });
        }
    }
    out
}

fn policy_for(case: &Case) -> Policy {
    match &case.policy {
        None => Policy::builtin_default(),
        Some(body) => {
            let mut m = Map::new();
            m.insert("p".into(), body.clone());
            let (set, _) =
                compile_all(&m, &[("r".into(), Some("p".into()))]).expect("case policy compiles");
            (*set.for_route("r")).clone()
        }
    }
}

fn run(case: &Case) -> Verdict {
    let policy = policy_for(case);
    let caps = case
        .caps
        .as_ref()
        .map(ClientCaps::from_capabilities)
        .unwrap_or_else(ClientCaps::form_and_url);
    let views = extract_all(&case.input);
    assert!(!views.is_empty(), "{}: no elicitation in input", case.id);
    let mut combined = Verdict::allow();
    for view in &views {
        let era = match case.era.as_deref() {
            Some("2025-06") => Era::Legacy2025_06,
            Some("2025-11") => Era::Legacy2025_11,
            Some("2026") => Era::Stateless2026,
            Some(other) => panic!("{}: bad era {other}", case.id),
            None => match view.carrier {
                Carrier::InputRequest => Era::Stateless2026,
                Carrier::LegacyRequest | Carrier::UrlRequiredError => Era::Legacy2025_11,
            },
        };
        combined.merge(inspect(
            view,
            &caps,
            &InspectContext::standalone(era),
            &policy,
        ));
    }
    combined
}

#[derive(Default)]
struct Counts {
    tp: u32,
    fp: u32,
    fn_: u32,
    cases: u32,
}

fn ratio(a: u32, b: u32) -> String {
    if b == 0 {
        "   n/a".into()
    } else {
        format!("{:6.3}", f64::from(a) / f64::from(b))
    }
}

#[test]
fn corpus() {
    let cases = load();
    assert!(cases.len() >= 400, "corpus has only {} cases", cases.len());
    let mut per_rule: BTreeMap<String, Counts> = BTreeMap::new();
    let mut per_lang: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let mut decisions = Counts::default();
    let mut failures = Vec::new();
    for case in &cases {
        let verdict = run(case);
        let got: BTreeSet<String> = verdict
            .rules
            .iter()
            .map(|r| r.as_str().to_string())
            .collect();
        for r in got.union(&case.rules) {
            let c = per_rule.entry(r.clone()).or_default();
            match (case.rules.contains(r), got.contains(r)) {
                (true, true) => c.tp += 1,
                (false, true) => c.fp += 1,
                (true, false) => c.fn_ += 1,
                (false, false) => {}
            }
            if case.rules.contains(r) {
                c.cases += 1;
            }
        }
        let decision = verdict.decision.as_str();
        match (case.expect == "deny", decision == "deny") {
            (true, true) => decisions.tp += 1,
            (false, true) => decisions.fp += 1,
            (true, false) => decisions.fn_ += 1,
            (false, false) => {}
        }
        let ok = decision == case.expect && got == case.rules;
        let l = per_lang.entry(case.lang.clone()).or_default();
        l.0 += 1;
        if ok {
            l.1 += 1;
        } else {
            failures.push(format!(
                "{}/{} [{}]: expected {} {:?}, got {} {:?} findings={:?}",
                case.file,
                case.id,
                case.lang,
                case.expect,
                case.rules,
                decision,
                got,
                verdict
                    .findings
                    .iter()
                    .map(|f| format!("{}@{}", f.detector, f.location))
                    .collect::<Vec<_>>()
            ));
        }
    }
    println!(
        "\ncorpus: {} cases, {} failing",
        cases.len(),
        failures.len()
    );
    println!(
        "{:<22} {:>6} {:>5} {:>5} {:>5} {:>9} {:>7}",
        "rule", "cases", "tp", "fp", "fn", "precision", "recall"
    );
    for (rule, c) in &per_rule {
        println!(
            "{:<22} {:>6} {:>5} {:>5} {:>5} {:>9} {:>7}",
            rule,
            c.cases,
            c.tp,
            c.fp,
            c.fn_,
            ratio(c.tp, c.tp + c.fp),
            ratio(c.tp, c.tp + c.fn_)
        );
    }
    println!(
        "{:<22} {:>6} {:>5} {:>5} {:>5} {:>9} {:>7}",
        "(deny decision)",
        decisions.tp + decisions.fn_,
        decisions.tp,
        decisions.fp,
        decisions.fn_,
        ratio(decisions.tp, decisions.tp + decisions.fp),
        ratio(decisions.tp, decisions.tp + decisions.fn_)
    );
    println!("\n{:<6} {:>6} {:>8}", "lang", "cases", "correct");
    for (lang, (n, ok)) in &per_lang {
        println!("{lang:<6} {n:>6} {ok:>8}");
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
