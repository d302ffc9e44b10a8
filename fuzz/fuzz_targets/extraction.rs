//! `elicitation::extract_all` on arbitrary messages.
//!
//! Input: first byte even → the rest drives a structured generator (MCP carriers around
//! generated params, ambiguous envelopes, batches, junk); odd → the rest is JSON text.
//!
//! Oracle:
//! - never panics, nor do the view accessors, `fingerprint` and `AskedElicitation::from_view`;
//! - every view points into the message: `params` and `rpc_id` are nodes of the message tree
//!   (`params` may be the shared `null` for a missing member), `key` is one of its object keys
//!   (check `pointers`);
//! - re-serialising the message in another spelling (serde_json's own, every non-ASCII
//!   character escaped, keys reversed, whitespace everywhere, every character escaped: one per
//!   input, picked by the first byte) and re-parsing yields the same value and the same views:
//!   count, carrier, key, index, params, id (check `reparse`);
//! - a legacy `elicitation/create` request yields exactly its one view (check `legacy`);
//! - an error whose `code` is -32042 in any numeric spelling (`-32042.0`, `-3.2042e4`,
//!   `"-32042"`) is extracted like `-32042` (check `code-spelling`).
#![no_main]

use arbitrary::Unstructured;
use elicitgate_core::elicitation::{extract_all, Carrier, ElicitationView};
use elicitgate_core::inspect::{fingerprint, AskedElicitation};
use fuzz_support::{enabled, key_ranges, message, node_addresses, same, write_json, Spelling};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Debug)]
struct Seen {
    carrier: Carrier,
    key: Option<String>,
    index: usize,
    params: Value,
    rpc_id: Option<Value>,
}

fn seen(views: &[ElicitationView<'_>]) -> Vec<Seen> {
    views
        .iter()
        .map(|v| Seen {
            carrier: v.carrier,
            key: v.key.map(str::to_string),
            index: v.index,
            params: v.params.clone(),
            rpc_id: v.rpc_id.cloned(),
        })
        .collect()
}

impl PartialEq for Seen {
    fn eq(&self, o: &Seen) -> bool {
        self.carrier == o.carrier
            && self.key == o.key
            && self.index == o.index
            && same(&self.params, &o.params)
            && match (&self.rpc_id, &o.rpc_id) {
                (Some(a), Some(b)) => same(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

fn is_32042(code: &Value) -> bool {
    match code {
        Value::Number(n) => n.as_f64() == Some(-32042.0),
        Value::String(s) => s.trim().parse::<f64>().ok() == Some(-32042.0),
        _ => false,
    }
}

fn check(msg: &Value, pick: u8) {
    let views = extract_all(msg);
    for v in &views {
        let _ = (v.mode_field(), v.mode(), v.message(), v.url(), v.requested_schema());
        let _ = (v.elicitation_id(), v.source(), v.object());
        let _ = fingerprint(v);
        let _ = AskedElicitation::from_view(v);
    }

    if enabled("pointers") {
        let mut nodes = Vec::new();
        node_addresses(msg, &mut nodes);
        let mut keys = Vec::new();
        key_ranges(msg, &mut keys);
        for v in &views {
            let p = v.params as *const Value;
            assert!(
                nodes.contains(&p) || v.params.is_null(),
                "params outside the message"
            );
            if let Some(id) = v.rpc_id {
                assert!(nodes.contains(&(id as *const Value)), "rpc_id outside the message");
            }
            if let Some(k) = v.key {
                assert!(
                    keys.contains(&(k.as_ptr() as usize, k.len())),
                    "key is not a key of the message"
                );
            }
        }
    }

    if enabled("reparse") {
        let want = seen(&views);
        // One spelling per input (all of them over a run), chosen by the input's first byte.
        let text = match (pick >> 1) as usize % (Spelling::VARIANTS.len() + 1) {
            0 => serde_json::to_string(msg).expect("serialise"),
            i => write_json(msg, Spelling::VARIANTS[i - 1]),
        };
        {
            let again: Value = serde_json::from_str(&text).expect("re-parse of a serialised value");
            assert!(same(&again, msg), "re-parse changed the value: {text}");
            assert_eq!(seen(&extract_all(&again)), want, "views differ after re-parse: {text}");
        }
    }

    if enabled("legacy") {
        if msg.get("method").and_then(Value::as_str) == Some("elicitation/create") {
            assert_eq!(views.len(), 1, "a legacy request is one elicitation");
            assert_eq!(views[0].carrier, Carrier::LegacyRequest);
        }
    }

    if enabled("code-spelling") {
        let items: Vec<&Value> = match msg {
            Value::Array(a) => a.iter().collect(),
            m => vec![m],
        };
        for item in items {
            let Some(obj) = item.as_object() else { continue };
            if obj.contains_key("method") || obj.contains_key("result") {
                continue;
            }
            let Some(err) = obj.get("error").and_then(Value::as_object) else {
                continue;
            };
            if err.get("code").is_some_and(is_32042) {
                assert!(
                    extract_all(item)
                        .iter()
                        .any(|v| v.carrier == Carrier::UrlRequiredError),
                    "a -32042 error spelled {} is not extracted",
                    err["code"]
                );
            }
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let mut u = Unstructured::new(rest);
        if let Ok(msg) = message(&mut u) {
            check(&msg, mode);
        }
    } else if let Ok(msg) = serde_json::from_slice::<Value>(rest) {
        check(&msg, mode);
    }
});
