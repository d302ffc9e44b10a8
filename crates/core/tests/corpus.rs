//! Labelled corpus: the cases in `tests/corpus/*.jsonl`. Prints precision, recall and the
//! false-positive rate of the deny decision per language, per concept and overall, and per
//! rule: `cargo test -p elicitgate-core --test corpus -- --nocapture`.
//!
//! What must hold: every case of the curated regression files (`forms_*`, `protocol`,
//! `schema`, `seeds`, `urls`) gets exactly its decision and rules; per category the secret
//! asks' recall is at least 99 %, the benign forms' false blocks at most 1 % and the hard
//! cases at least 85 % correct (docs/policy.md states the targets), and the corpus covers
//! every language × concept with positives.
//!
//! Case format (one JSON object per line):
//! `{"id", "lang", "concept"?, "input": <params | JSON-RPC message>, "expect": "allow"|"deny",
//!   "rules": [...], "caps"?: <ClientCapabilities>, "era"?: "2025-06"|"2025-11"|"2026",
//!   "policy"?: <policy body>}`. Defaults: caps `{"elicitation":{"form":{},"url":{}}}`,
//! the built-in strict policy, and the CLI's era inference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use elicitgate_core::elicitation::{extract_all, Carrier, ClientCaps};
use elicitgate_core::inspect::{inspect, Era, InspectContext, RuleId, Verdict};
use elicitgate_core::policy::{compile_all, Policy};
use serde_json::{Map, Value};

struct Case {
    file: String,
    id: String,
    lang: String,
    concept: String,
    category: Category,
    input: Value,
    expect: String,
    rules: BTreeSet<String>,
    caps: Option<Value>,
    era: Option<String>,
    policy: Option<Value>,
}

/// The tuning half, `tests/corpus/*.jsonl`.
const TUNING: &str = "../../tests/corpus";
/// The held-out half, written before tuning and never tuned on.
const HELD_OUT: &str = "../../tests/corpus/heldout";

fn load(sub: &str) -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(sub);
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
            let category = match s("category").as_deref() {
                Some("secret") => Category::Secret,
                Some("benign") => Category::Benign,
                Some("hard") => Category::Hard,
                Some(other) => panic!("{id}: unknown category {other}"),
                None if file.starts_with("hiding") || file.contains("romanised") => Category::Hard,
                None if expect == "deny" => Category::Secret,
                None => Category::Benign,
            };
            out.push(Case {
                file: file.clone(),
                id,
                lang: s("lang").unwrap_or_else(|| "?".into()),
                concept: s("concept").unwrap_or_else(|| "-".into()),
                category,
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

/// The deny decision's confusion counts for one slice of the corpus.
#[derive(Default, Clone, Copy)]
struct Slice {
    deny: u32,
    allow: u32,
    tp: u32,
    fp: u32,
}

impl Slice {
    fn add(&mut self, expect_deny: bool, got_deny: bool) {
        if expect_deny {
            self.deny += 1;
            self.tp += u32::from(got_deny);
        } else {
            self.allow += 1;
            self.fp += u32::from(got_deny);
        }
    }
    fn fp_rate(&self) -> f64 {
        if self.allow == 0 {
            0.0
        } else {
            f64::from(self.fp) / f64::from(self.allow)
        }
    }
    fn row(&self, name: &str) -> String {
        format!(
            "{:<14} {:>6} {:>6} {:>6} {:>5} {:>9} {:>7} {:>8}",
            name,
            self.deny + self.allow,
            self.deny,
            self.allow,
            self.fp,
            ratio(self.tp, self.tp + self.fp),
            ratio(self.tp, self.deny),
            format!("{:.2}%", 100.0 * self.fp_rate()),
        )
    }
}

fn ratio(a: u32, b: u32) -> String {
    if b == 0 {
        "   n/a".into()
    } else {
        format!("{:6.3}", f64::from(a) / f64::from(b))
    }
}

/// What a case measures: an unambiguous secret ask in a listed language, an unambiguous
/// ordinary form (or one about a secret that cannot hold it), or a hard case (evasions,
/// asks by context only, romanised text, languages beyond the list, and their benign
/// look-alikes). Tuning cases without a `category` field: `hiding` and `romanised` files
/// are hard, the rest secret or benign by their expected decision.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Category {
    Secret,
    Benign,
    Hard,
}

impl Category {
    const ALL: [Category; 3] = [Category::Secret, Category::Benign, Category::Hard];

    fn name(self) -> &'static str {
        match self {
            Category::Secret => "secret asks",
            Category::Benign => "benign forms",
            Category::Hard => "hard cases",
        }
    }

    /// The figure that counts for the category, and its target (docs/policy.md).
    fn target(self) -> (&'static str, f64) {
        match self {
            Category::Secret => ("recall", 0.99),
            Category::Benign => ("false blocks", 0.005),
            Category::Hard => ("correct", 0.85),
        }
    }
}

/// Correct decisions per category.
#[derive(Default, Clone, Copy)]
struct Tally {
    cases: u32,
    correct: u32,
    deny: u32,
    blocked: u32,
}

impl Tally {
    /// Recall for secret asks, the false-block rate for benign forms, accuracy for hard
    /// cases.
    fn figure(&self, cat: Category) -> f64 {
        let part = |a: u32, b: u32| {
            if b == 0 {
                0.0
            } else {
                f64::from(a) / f64::from(b)
            }
        };
        match cat {
            Category::Secret | Category::Hard => part(self.correct, self.cases),
            Category::Benign => part(self.cases - self.correct, self.cases),
        }
    }

    /// Does the category's figure reach `bound` (at most it for false blocks, at least it
    /// otherwise)?
    fn reaches(&self, cat: Category, bound: f64) -> bool {
        if cat == Category::Benign {
            self.figure(cat) <= bound
        } else {
            self.figure(cat) >= bound
        }
    }
}

/// Per category: the cases and how many got their expected decision.
fn tally(cases: &[Case]) -> BTreeMap<Category, Tally> {
    let mut out: BTreeMap<Category, Tally> = BTreeMap::new();
    for case in cases {
        let got_deny = run(case).decision.as_str() == "deny";
        let t = out.entry(case.category).or_default();
        t.cases += 1;
        t.correct += u32::from(got_deny == (case.expect == "deny"));
        t.deny += u32::from(case.expect == "deny");
        t.blocked += u32::from(got_deny);
    }
    out
}

/// The Markdown table docs/policy.md carries ("Measured"): both halves per category.
fn figures_table(tuning: &BTreeMap<Category, Tally>, held: &BTreeMap<Category, Tally>) -> String {
    let mut t = String::from(
        "| Category | Figure (target) | Tuning half | Held-out half |\n|---|---|---:|---:|\n",
    );
    let cell = |m: &BTreeMap<Category, Tally>, c: Category| {
        let x = m.get(&c).copied().unwrap_or_default();
        format!("{:.1} % of {}", 100.0 * x.figure(c), x.cases)
    };
    for c in Category::ALL {
        let (what, target) = c.target();
        let bound = if c == Category::Benign { "≤" } else { "≥" };
        t.push_str(&format!(
            "| {} | {what} ({bound} {} %) | {} | {} |\n",
            c.name(),
            100.0 * target,
            cell(tuning, c),
            cell(held, c)
        ));
    }
    t
}

/// The held-out half: per category, against the targets, and the table docs/policy.md
/// shows (it must be the current one). Wrong decisions are counted, not listed: this half
/// is never tuned on.
#[test]
fn held_out() {
    let held_cases = load(HELD_OUT);
    assert!(
        held_cases.len() >= 1000,
        "held-out half has only {} cases",
        held_cases.len()
    );
    let held = tally(&held_cases);
    let tuning = tally(&load(TUNING));
    let table = figures_table(&tuning, &held);
    println!("\n{table}");
    // Wrong decisions by file, language and detector: counts only, never the cases.
    let mut wrong: BTreeMap<String, u32> = BTreeMap::new();
    let mut misses = 0;
    for c in &held_cases {
        let verdict = run(c);
        let got_deny = verdict.decision.as_str() == "deny";
        if got_deny == (c.expect == "deny") {
            continue;
        }
        misses += 1;
        let how = if got_deny { "false block" } else { "miss" };
        *wrong
            .entry(format!("{how} in {} ({:?})", c.file, c.category))
            .or_default() += 1;
        *wrong.entry(format!("{how} lang {}", c.lang)).or_default() += 1;
        for f in &verdict.findings {
            *wrong.entry(format!("{how} by {}", f.detector)).or_default() += 1;
            let part = match f.location.rsplit('.').next() {
                Some(p @ ("title" | "description" | "message" | "default" | "format")) => p,
                _ if f.location.starts_with("properties.") => "name",
                _ => "other",
            };
            let step = f.because.unwrap_or("-");
            *wrong.entry(format!("{how} at {part}: {step}")).or_default() += 1;
            if part == "message" {
                let props = c
                    .input
                    .pointer("/requestedSchema/properties")
                    .or_else(|| c.input.pointer("/params/requestedSchema/properties"))
                    .and_then(Value::as_object);
                let (mut text, mut other) = (0, 0);
                for p in props.into_iter().flat_map(|m| m.values()) {
                    let free = p.get("enum").is_none()
                        && matches!(p.get("type").and_then(Value::as_str), Some("string"));
                    if free && p.get("format").is_none() {
                        text += 1
                    } else {
                        other += 1
                    }
                }
                *wrong
                    .entry(format!(
                        "{how} at message: {text} text inputs, {other} others"
                    ))
                    .or_default() += 1;
            }
        }
    }
    println!("held-out cases decided wrongly: {misses}");
    for (k, n) in &wrong {
        println!("  {n:>4}  {k}");
    }
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/policy.md"))
            .expect("docs/policy.md");
    assert!(
        docs.contains(&table),
        "docs/policy.md must show the current figures:\n{table}"
    );
    for (c, bound) in HELD_OUT_REACHED {
        let (what, _) = c.target();
        let x = held.get(&c).copied().unwrap_or_default();
        assert!(
            x.reaches(c, bound),
            "held-out {}: {what} {:.4}, worse than the {bound} this revision reached",
            c.name(),
            x.figure(c)
        );
    }
}

/// What this revision reaches on the held-out half, rounded to the worse side (docs/policy.md
/// says which targets that meets): a change that does worse fails here.
const HELD_OUT_REACHED: [(Category, f64); 3] = [
    (Category::Secret, 0.99),
    (Category::Benign, 0.002),
    (Category::Hard, 0.94),
];

/// Files whose every case must be exact (hand-curated regressions).
fn exact_file(file: &str) -> bool {
    ["forms_", "protocol", "schema", "seeds", "urls."]
        .iter()
        .any(|p| file.starts_with(p))
}

const LANGUAGES: &[&str] = &[
    "en", "zh", "es", "ar", "pt", "id", "fr", "ja", "ru", "de", "ko", "tr", "vi", "it", "pl", "fa",
    "nl", "th", "uk", "hi", "bn", "ur", "he", "sv", "cs", "ro", "hu", "el", "fil", "da", "no",
    "fi", "sw",
];

const CONCEPTS: &[&str] = &[
    "password",
    "pin",
    "otp",
    "api_key",
    "token",
    "client_secret",
    "private_key",
    "seed_phrase",
    "card_number",
    "cvv",
    "card_expiry",
    "bank",
    "national_id",
    "session_cookie",
];

#[test]
fn corpus() {
    let cases = load(TUNING);
    let mut per_rule: BTreeMap<String, Counts> = BTreeMap::new();
    let mut per_lang: BTreeMap<String, Slice> = BTreeMap::new();
    let mut per_concept: BTreeMap<String, Slice> = BTreeMap::new();
    let mut overall = Slice::default();
    let mut exact_failures = Vec::new();
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
        let (expect_deny, got_deny) = (case.expect == "deny", decision == "deny");
        overall.add(expect_deny, got_deny);
        per_lang
            .entry(case.lang.clone())
            .or_default()
            .add(expect_deny, got_deny);
        per_concept
            .entry(case.concept.clone())
            .or_default()
            .add(expect_deny, got_deny);
        let ok = decision == case.expect && got == case.rules;
        if !ok {
            let line = format!(
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
            );
            if exact_file(&case.file) {
                exact_failures.push(line.clone());
            }
            failures.push(line);
        }
    }
    println!(
        "\ncorpus: {} cases, {} not exact",
        cases.len(),
        failures.len()
    );
    for f in &failures {
        println!("  {f}");
    }
    println!(
        "\n{:<22} {:>6} {:>5} {:>5} {:>5} {:>9} {:>7}",
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
    let header = format!(
        "{:<14} {:>6} {:>6} {:>6} {:>5} {:>9} {:>7} {:>8}",
        "", "cases", "deny", "allow", "fp", "precision", "recall", "fp rate"
    );
    println!("\nby language (deny decision)\n{header}");
    for (lang, c) in &per_lang {
        println!("{}", c.row(lang));
    }
    println!("\nby concept (deny decision)\n{header}");
    for (concept, c) in &per_concept {
        println!("{}", c.row(concept));
    }
    println!("\n{}\n{}", header, overall.row("overall"));

    let mut uncovered = Vec::new();
    for lang in LANGUAGES {
        for concept in CONCEPTS {
            let covered = cases
                .iter()
                .any(|c| c.lang == *lang && c.concept == *concept && c.expect == "deny");
            if !covered {
                uncovered.push(format!("{lang}/{concept}"));
            }
        }
    }
    assert!(
        exact_failures.is_empty(),
        "{} curated corpus failures:\n{}",
        exact_failures.len(),
        exact_failures.join("\n")
    );
    assert!(cases.len() >= 2000, "corpus has only {} cases", cases.len());
    assert!(uncovered.is_empty(), "no positive case for {uncovered:?}");
    // Per category, as the held-out half is judged: evasions and asks by context only are
    // measured against their own target, not folded into the recall of plain asks.
    let by_category = tally(&cases);
    for (c, floor) in [
        (Category::Secret, 0.985),
        (Category::Benign, 0.01),
        (Category::Hard, 0.85),
    ] {
        let (what, _) = c.target();
        let x = by_category.get(&c).copied().unwrap_or_default();
        assert!(
            x.reaches(c, floor),
            "tuning {}: {what} {:.4}, past {floor}",
            c.name(),
            x.figure(c)
        );
    }
}

/// Judges a directory of new cases before they join the tuning half, and lists every wrong
/// decision with the findings behind it: `CORPUS_STAGED=/abs/dir cargo test -p
/// elicitgate-core --test corpus staged -- --ignored --nocapture`. Ignored by default: it
/// reads a directory named by the caller, not the repository.
#[test]
#[ignore]
fn staged() {
    let Some(dir) = std::env::var_os("CORPUS_STAGED") else {
        panic!("set CORPUS_STAGED to a directory of .jsonl cases");
    };
    let cases = load(&dir.to_string_lossy());
    let mut wrong = 0;
    for case in &cases {
        let verdict = run(case);
        let got_deny = verdict.decision.as_str() == "deny";
        if got_deny == (case.expect == "deny") {
            continue;
        }
        wrong += 1;
        println!(
            "WRONG {}/{} ({:?}, expect {})",
            case.file, case.id, case.category, case.expect
        );
        for f in &verdict.findings {
            println!(
                "    {} at {} by {} because {} term {:?}",
                f.rule.as_str(),
                f.location,
                f.detector,
                f.because.unwrap_or("-"),
                f.term
            );
        }
    }
    println!("{} cases, {wrong} decided wrongly", cases.len());
    for (c, t) in tally(&cases) {
        let (what, target) = c.target();
        println!(
            "  {:<13} {what} {:.1} % of {} (target {} %)",
            c.name(),
            100.0 * t.figure(c),
            t.cases,
            100.0 * target
        );
    }
}
