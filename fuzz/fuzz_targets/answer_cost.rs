//! Cost: answer validation and inspection must stay bounded whatever the input's shape. A
//! form whose fields carry fuzzed ECMA-262 `pattern`s (the screen decides which are run) is
//! asked, judged by `inspect`, and answered with long fuzzed values through `check_response`.
//!
//! Oracle: libFuzzer's per-input time-out. The smoke runs this target with `-timeout=2` and
//! `-max_len=65536`: an input whose judgment or validation takes longer (exponential
//! backtracking, a quadratic fold, an unbounded loop) is a crash, saved and replayed.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use elicitgate_core::elicitation::{ClientCaps, ElicitationView};
use elicitgate_core::inspect::{check_response, inspect, AskedElicitation, Era, InspectContext};
use elicitgate_core::policy::Policy;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(fields) = Vec::<(String, String)>::arbitrary(&mut u) else { return };
    let Ok(message) = String::arbitrary(&mut u) else { return };
    // The rest of the input is the answer's text, repeated across the fields.
    let subject = String::from_utf8_lossy(u.take_rest()).into_owned();
    let mut properties = Map::new();
    let mut content = Map::new();
    for (i, (name, pattern)) in fields.iter().take(16).enumerate() {
        let key = format!("f{i}{}", name.chars().take(32).collect::<String>());
        properties.insert(
            key.clone(),
            json!({"type": "string", "title": name, "pattern": pattern}),
        );
        content.insert(key, Value::from(subject.clone()));
    }
    let params = json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties},
    });
    let policy = Policy::builtin_default();
    let view = ElicitationView::from_params(&params);
    let ctx = InspectContext::standalone(Era::Legacy2025_11);
    let _ = inspect(&view, &ClientCaps::form_only(), &ctx, &policy);
    if let Some(asked) = AskedElicitation::from_view(&view) {
        let answer = json!({"action": "accept", "content": content});
        let _ = check_response(&asked, &answer, &policy);
    }
});
