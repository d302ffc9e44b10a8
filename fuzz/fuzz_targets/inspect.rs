//! `inspect::inspect` on structured elicitation params, through every carrier.
//!
//! The input drives a generator (fuzz/src/lib.rs): form or URL mode (or a bad mode), a message
//! and schema texts drawn from a dictionary (ordinary words; secret words such as
//! password / пароль / 密码 / token in several spellings; http and https URLs, hosts, e-mail
//! addresses, card numbers, tokens; invisible and compatibility characters) mixed with
//! arbitrary text; client capabilities, context (era, association, decline, rate) and one of
//! two compiled policies.
//!
//! Oracle:
//! - never panics;
//! - determinism: the same view judged twice gives the same verdict (check `determinism`);
//! - canonical re-parse: the message written in another spelling (every non-ASCII character
//!   as `\uXXXX`, every character escaped, keys in reverse order, whitespace everywhere: one
//!   per input, picked by its last byte), parsed back and extracted again, is judged the same:
//!   a deny stays a deny, with the same rule ids (check `reparse`);
//! - compatibility spellings: when the message with every string value and property name
//!   NFKC-normalised is denied by `form.secret`, the original is denied too (by some rule),
//!   since a user reads `ｐａｓｓｗｏｒｄ` as `password` (check `nfkc-secret`).
#![no_main]

use arbitrary::Unstructured;
use elicitgate_core::elicitation::{extract_all, ClientCaps};
use elicitgate_core::inspect::{inspect, Era, InspectContext, RuleId, Verdict};
use elicitgate_core::policy::{compile_all, Policy};
use fuzz_support::{enabled, message_with, params, write_json, Spelling};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};
use unicode_normalization::UnicodeNormalization;

fn policies() -> &'static [Arc<Policy>; 2] {
    static P: OnceLock<[Arc<Policy>; 2]> = OnceLock::new();
    P.get_or_init(|| {
        let mut m = Map::new();
        m.insert(
            "loose".into(),
            serde_json::json!({
                "form": {"max_properties": 3, "max_string_bytes": 40, "allow_property_names": ["token"]},
                "url": {"allowed_hosts": ["*.example.com"], "allow_ip_literals": true,
                        "allow_http_hosts": ["example.com"]},
                "modes": {"url": true, "form": true}
            }),
        );
        let (set, warnings) =
            compile_all(&m, &[("r".into(), Some("loose".into()))]).expect("fuzz policy compiles");
        let _ = warnings;
        [Arc::new(Policy::builtin_default()), set.for_route("r")]
    })
}

struct Case {
    caps: ClientCaps,
    ctx: InspectContext,
    policy: usize,
}

fn judge_all(msg: &Value, c: &Case) -> Vec<Verdict> {
    let policy = &policies()[c.policy];
    extract_all(msg)
        .iter()
        .map(|v| inspect(v, &c.caps, &c.ctx, policy))
        .collect()
}

fn summary(v: &[Verdict]) -> Vec<(bool, Vec<RuleId>, Vec<RuleId>)> {
    v.iter()
        .map(|v| (v.is_deny(), v.rules.clone(), v.denied_by.clone()))
        .collect()
}

/// Every string value, and the property names (keys under `properties`), NFKC-normalised.
/// Other keys stay: the envelope and the params' own member names are protocol, not text a
/// user reads.
fn nfkc_value(v: &Value, names: bool) -> Value {
    match v {
        Value::String(s) => Value::String(s.nfkc().collect()),
        Value::Array(a) => Value::Array(a.iter().map(|x| nfkc_value(x, false)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let key = if names { k.nfkc().collect() } else { k.clone() };
                    (key, nfkc_value(x, k == "properties"))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn has_secret(v: &[Verdict]) -> bool {
    v.iter().any(|v| v.rules.contains(&RuleId::FormSecret))
}

fn case(u: &mut Unstructured<'_>) -> arbitrary::Result<(Value, Case)> {
    let caps = match u.int_in_range(0..=7)? {
        0 => ClientCaps::none(),
        1 => ClientCaps::form_only(),
        2 => ClientCaps::url_only(),
        _ => ClientCaps::form_and_url(),
    };
    let protocol = *u.choose(&[Era::Legacy2025_06, Era::Legacy2025_11, Era::Stateless2026])?;
    let ctx = if u.ratio(3, 4)? {
        InspectContext::standalone(protocol)
    } else {
        InspectContext {
            associated: u.arbitrary()?,
            declined_recently: u.arbitrary()?,
            recent_count: u.int_in_range(0..=20)?,
            address_count: u.int_in_range(0..=200)?,
            state_unavailable: u.ratio(1, 8)?,
            protocol,
        }
    };
    let policy = u.int_in_range(0..=1)?;
    let p = params(u)?;
    let msg = message_with(u, p)?;
    Ok((msg, Case { caps, ctx, policy }))
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok((msg, c)) = case(&mut u) else {
        return;
    };
    let first = judge_all(&msg, &c);

    if enabled("determinism") {
        assert_eq!(judge_all(&msg, &c), first, "same input, different verdict");
    }

    if enabled("reparse") {
        let want = summary(&first);
        // One spelling per input (all of them over a run), picked by the input's last byte.
        let pick = input.last().copied().unwrap_or(0) as usize;
        {
            let sp = Spelling::VARIANTS[pick % Spelling::VARIANTS.len()];
            let text = write_json(&msg, sp);
            let again: Value = serde_json::from_str(&text).expect("re-parse of a serialised value");
            let got = summary(&judge_all(&again, &c));
            assert_eq!(got, want, "verdict changed after re-parse of {text}");
        }
    }

    if enabled("nfkc-secret") {
        let folded = nfkc_value(&msg, false);
        if folded != msg && has_secret(&judge_all(&folded, &c)) {
            assert!(
                first.iter().any(Verdict::is_deny),
                "form.secret only after NFKC: {}",
                serde_json::to_string(&msg).unwrap_or_default()
            );
        }
    }
});
