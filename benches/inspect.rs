//! `cargo bench --bench inspect`: cost of one `inspect` call on a typical form, a
//! 50-field form, and a URL-mode request, plus `extract_all` + `inspect` from a parsed
//! JSON-RPC message and `check_response` on a typical answer; a typical multilingual form
//! (Russian, Turkish, Arabic texts, no secret) and a secret form found by the obfuscation
//! pass; `lexicon/build`, the secret lexicon compiled from its data as a policy load does;
//! and `per_kib/…`, a form and its answer of 1 to 64 KiB (throughput in bytes: the cost per
//! KiB must stay flat).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use elicitgate_core::elicitation::{extract_all, ClientCaps, ElicitationView};
use elicitgate_core::inspect::{check_response, inspect, AskedElicitation, Era, InspectContext};
use elicitgate_core::lexicon::SecretLexicon;
use elicitgate_core::policy::{compile_all, Policy};
use serde_json::{json, Map, Value};

fn typical_form() -> Value {
    json!({"mode":"form","message":"Confirm the deployment to the target environment","requestedSchema":{"type":"object","properties":{
        "environment":{"type":"string","title":"Environment","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}],"default":"stg"},
        "branch":{"type":"string","title":"Branch","minLength":1,"description":"Git branch to release"},
        "notify":{"type":"boolean","title":"Notify the on-call channel","default":true},
        "window":{"type":"string","format":"date-time","title":"Deploy at"}},"required":["environment","branch"]}})
}

fn multilingual_form() -> Value {
    json!({"mode":"form","message":"Пожалуйста, подтвердите детали доставки","requestedSchema":{"type":"object","properties":{
        "adres":{"type":"string","title":"Teslimat adresi","description":"Sokak, bina ve daire numarası"},
        "المدينة":{"type":"string","title":"المدينة","description":"اختر مدينة التسليم"},
        "count":{"type":"integer","title":"Количество","minimum":1,"maximum":10},
        "gift":{"type":"boolean","title":"Hediye paketi","default":false}},"required":["adres"]}})
}

fn obfuscated_form() -> Value {
    json!({"mode":"form","message":"Sign in again","requestedSchema":{"type":"object","properties":{
        "user":{"type":"string","title":"User name"},
        "v":{"type":"string","title":"p@ssw0rd"}}}})
}

fn big_form() -> Value {
    let mut props = Map::new();
    for i in 0..50 {
        let p = match i % 5 {
            0 => {
                json!({"type":"string","title":format!("Customer reference {i}"),"description":"Free text shown on the invoice","maxLength":200})
            }
            1 => {
                json!({"type":"integer","title":format!("Quantity {i}"),"minimum":0,"maximum":1000})
            }
            2 => json!({"type":"boolean","title":format!("Include item {i}"),"default":false}),
            3 => {
                json!({"type":"string","enum":["low","medium","high"],"enumNames":["Low","Medium","High"],"title":format!("Priority {i}")})
            }
            _ => {
                json!({"type":"array","items":{"anyOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]},"title":format!("Tags {i}")})
            }
        };
        props.insert(format!("field_{i}"), p);
    }
    json!({"message":"Please review the order details","requestedSchema":{"type":"object","properties":props}})
}

fn url_request() -> Value {
    json!({"mode":"url","elicitationId":"e-42","message":"Connect your GitHub account to continue.",
           "url":"https://mcp.example.com/connect/github?flow=8f1c2a9b&state=Zm9vYmFy&redirect_uri=https%3A%2F%2Fmcp.example.com%2Fcb"})
}

fn bench(c: &mut Criterion) {
    let builtin = Policy::builtin_default();
    let mut m = Map::new();
    m.insert("wide".into(), json!({"form":{"max_properties":100}}));
    let (set, _) = compile_all(&m, &[("r".into(), Some("wide".into()))]).expect("policy");
    let wide = set.for_route("r");
    let caps = ClientCaps::form_and_url();
    let ctx = InspectContext::standalone(Era::Legacy2025_11);

    let form = typical_form();
    let big = big_form();
    let url = url_request();
    c.bench_function("inspect/typical_form", |b| {
        b.iter(|| {
            inspect(
                black_box(&ElicitationView::from_params(&form)),
                &caps,
                &ctx,
                &builtin,
            )
        })
    });
    let multi = multilingual_form();
    c.bench_function("inspect/typical_form_multilingual", |b| {
        b.iter(|| {
            inspect(
                black_box(&ElicitationView::from_params(&multi)),
                &caps,
                &ctx,
                &builtin,
            )
        })
    });
    let obfuscated = obfuscated_form();
    c.bench_function("inspect/obfuscated_secret", |b| {
        b.iter(|| {
            inspect(
                black_box(&ElicitationView::from_params(&obfuscated)),
                &caps,
                &ctx,
                &builtin,
            )
        })
    });
    c.bench_function("lexicon/build", |b| {
        b.iter(|| SecretLexicon::build(black_box(&[])).expect("lexicon"))
    });
    c.bench_function("inspect/form_50_fields", |b| {
        b.iter(|| {
            inspect(
                black_box(&ElicitationView::from_params(&big)),
                &caps,
                &ctx,
                &wide,
            )
        })
    });
    c.bench_function("inspect/url", |b| {
        b.iter(|| {
            inspect(
                black_box(&ElicitationView::from_params(&url)),
                &caps,
                &ctx,
                &builtin,
            )
        })
    });
    let message =
        json!({"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":typical_form()});
    let text = message.to_string();
    c.bench_function("parse+extract+inspect/typical_form", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_str(black_box(&text)).expect("json");
            let views = extract_all(&v);
            views
                .iter()
                .filter(|view| inspect(view, &caps, &ctx, &builtin).is_deny())
                .count()
        })
    });
    c.bench_function("serde_json::from_str/typical_form", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(&text)).expect("json"))
    });
    let asked = AskedElicitation::from_view(&ElicitationView::from_params(&form)).expect("asked");
    let answer = json!({"action":"accept","content":{"environment":"prd","branch":"release/2026-08","notify":true,"window":"2026-08-01T10:00:00Z"}});
    c.bench_function("check_response/typical_form", |b| {
        b.iter(|| check_response(&asked, black_box(&answer), &builtin))
    });
}

/// A form of `kib` KiB of text (a message and descriptions), with a `pattern` per field, and
/// an answer of as many KiB: the time per KiB must stay flat (work linear in the input).
fn sized(kib: usize) -> (Value, Value) {
    let words = "deploy the service to the chosen region and confirm the window ";
    let text = words.repeat(kib * 1024 / words.len() / 2 + 1);
    let mut properties = Map::new();
    let mut content = Map::new();
    for i in 0..4 {
        properties.insert(
            format!("field{i}"),
            json!({"type":"string","title":format!("Field {i}"),"description":text,"pattern":"^[a-z ]+$"}),
        );
        content.insert(format!("field{i}"), Value::from(text.clone()));
    }
    let params = json!({"mode":"form","message":text,"requestedSchema":{"type":"object","properties":properties}});
    (params, json!({"action":"accept","content":content}))
}

fn per_kib(c: &mut Criterion) {
    let policy = Policy::builtin_default();
    let ctx = InspectContext::standalone(Era::Legacy2025_11);
    let mut group = c.benchmark_group("per_kib");
    for kib in [1usize, 4, 16, 64] {
        let (params, answer) = sized(kib);
        let bytes = params.to_string().len() + answer.to_string().len();
        group.throughput(criterion::Throughput::Bytes(bytes as u64));
        let view = ElicitationView::from_params(&params);
        let asked = AskedElicitation::from_view(&view).expect("asked");
        group.bench_function(format!("inspect+check_response/{kib}KiB"), |b| {
            b.iter(|| {
                let verdict = inspect(black_box(&view), &ClientCaps::form_only(), &ctx, &policy);
                let answered = check_response(&asked, black_box(&answer), &policy);
                (verdict, answered)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, per_kib);
criterion_main!(benches);
