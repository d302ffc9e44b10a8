//! `Envelope::peek` (raw bytes) and `classify` (parsed value) against an independent strict
//! JSON-RPC 2.0 classification.
//!
//! Oracle:
//! - `message::read` refuses every byte string serde_json cannot parse into a `Value` (the
//!   strict parse; always on); `peek` on bytes that are not JSON *syntax* never reports a
//!   request, notification or response (check `peek-unparseable`; value-level faults it does
//!   not look into — number range, surrogates, UTF-8, depth, control characters — are left to
//!   the strict read every judging path makes);
//! - on bytes that parse, `peek`'s kind equals the reference below (check `peek-shape`):
//!   a member `id`/`method`/`result`/`error`/`params` given twice is invalid (whatever any
//!   one reader keeps: a server reading the other `params` would run another tool); request = string `method` + string/number `id`, no `result`/`error`;
//!   notification = string `method`, `id` absent or null, no `result`/`error`; response = no
//!   `method`, exactly one of `result`/`error` (either may be `null`), string/number `id` (or
//!   absent/null `id` with `error`); anything else invalid. Arrays are batches.
//! - `classify` on the parsed value equals the same reference with `"jsonrpc":"2.0"` required,
//!   `error` required to be an object and an error's id present (check `classify-shape`);
//! - `message::read` (the pipeline's strict stage) refuses what the strict parse rejects and,
//!   on what it accepts, returns the same value and the reference shape, refusing exactly the
//!   invalid ones (check `read-shape`); arrays come back as they are;
//! - the id a raw message spells and the id of the parsed value have one canonical key:
//!   `canonical_raw_id(peek.id) == canonical_id(value.id)` (check `canonical-id`).
#![no_main]

use elicitgate_core::mcp::jsonrpc::{self, Envelope, Kind, Shape};
use elicitgate_core::mcp::message;
use fuzz_support::enabled;
use libfuzzer_sys::fuzz_target;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// The members of a top-level object in order, duplicates kept.
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ref {
    Request,
    Notification,
    Result,
    Error,
    Invalid,
}

/// Strict classification of one object's members. `strict_envelope` adds what `classify`
/// requires beyond the shape: `"jsonrpc":"2.0"`, an object `error`, an error's id present.
fn reference(entries: &[(String, Value)], strict_envelope: bool) -> Ref {
    let mut seen = std::collections::BTreeMap::<&str, (usize, &Value)>::new();
    for (k, v) in entries {
        let e = seen.entry(k.as_str()).or_insert((0, v));
        e.0 += 1;
        e.1 = v; // last wins, as serde_json's Value
    }
    let get = |k: &str| seen.get(k).map(|(_, v)| *v);
    for k in ["id", "method", "result", "error", "params"] {
        if seen.get(k).is_some_and(|(n, _)| *n > 1) {
            return Ref::Invalid;
        }
    }
    if strict_envelope && get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Ref::Invalid;
    }
    enum Id {
        Absent,
        Null,
        Valid,
        Bad,
    }
    let id = match get("id") {
        None => Id::Absent,
        Some(Value::Null) => Id::Null,
        Some(Value::String(_) | Value::Number(_)) => Id::Valid,
        Some(_) => Id::Bad,
    };
    let method = get("method");
    let (result, error) = (get("result"), get("error"));
    match (method, result, error) {
        (Some(Value::String(_)), None, None) => match id {
            Id::Valid => Ref::Request,
            Id::Absent | Id::Null => Ref::Notification,
            Id::Bad => Ref::Invalid,
        },
        (None, Some(_), None) => match id {
            Id::Valid => Ref::Result,
            _ => Ref::Invalid,
        },
        (None, None, Some(e)) => {
            if strict_envelope && !e.is_object() {
                return Ref::Invalid;
            }
            match id {
                Id::Valid | Id::Null => Ref::Error,
                Id::Absent if !strict_envelope => Ref::Error,
                _ => Ref::Invalid,
            }
        }
        _ => Ref::Invalid,
    }
}

fn kind_of(r: Ref) -> Kind {
    match r {
        Ref::Request => Kind::Request,
        Ref::Notification => Kind::Notification,
        Ref::Result | Ref::Error => Kind::Response,
        Ref::Invalid => Kind::Invalid,
    }
}

fn shape_of(r: Ref) -> Shape {
    match r {
        Ref::Request => Shape::Request,
        Ref::Notification => Shape::Notification,
        Ref::Result => Shape::Result,
        Ref::Error => Shape::Error,
        Ref::Invalid => Shape::Invalid,
    }
}

fuzz_target!(|body: &[u8]| {
    let env = Envelope::peek(body);
    let _ = env.method_label();
    let parsed = serde_json::from_slice::<Value>(body);
    let read = message::read(body);
    let Ok(value) = parsed else {
        assert!(read.is_err(), "message::read accepts what the strict parse rejects");
        // `peek` is an index, not a judge: it reads the envelope's members and skips the
        // values of the others without checking what only a full read checks (a number's
        // range, surrogates, UTF-8, depth, control characters). Every path that acts on a
        // message reads it strictly (`message::read`, asserted above). What it must never do
        // is read a shape in bytes that are not JSON at all.
        let error = parsed.as_ref().err().map(ToString::to_string).unwrap_or_default();
        let value_level = [
            "number out of range",
            "surrogate",
            "hex escape",
            "invalid unicode code point",
            "recursion limit exceeded",
            "control character",
        ]
        .iter()
        .any(|m| error.contains(m));
        if enabled("peek-unparseable") && !value_level {
            assert!(
                !matches!(env.kind, Kind::Request | Kind::Notification | Kind::Response),
                "peek reads a {:?} in bytes the strict parse rejects ({error}): {:?}",
                env.kind,
                String::from_utf8_lossy(body)
            );
        }
        return;
    };
    let shape = jsonrpc::classify(&value);
    match &value {
        Value::Array(_) => {
            assert_eq!(env.kind, Kind::Batch, "an array is a batch");
            assert_eq!(shape, Shape::Invalid, "a batch is not one message");
            assert!(matches!(read, Ok((_, Shape::Invalid))), "a batch is returned as it is");
        }
        Value::Object(_) => {
            let entries = serde_json::from_slice::<Entries>(body)
                .expect("an object the Value parse accepted")
                .0;
            if enabled("peek-shape") {
                let want = kind_of(reference(&entries, false));
                assert_eq!(env.kind, want, "peek kind");
            }
            // A parsed value has no duplicate members (the last one wins, as in every SDK).
            let members: Vec<(String, Value)> = value
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let want = shape_of(reference(&members, true));
            if enabled("classify-shape") {
                assert_eq!(shape, want, "classify shape");
            }
            if enabled("read-shape") {
                match &read {
                    Ok((v, got)) => {
                        assert_eq!(*got, want, "message::read shape");
                        assert_eq!(v, &value, "message::read value");
                    }
                    Err(e) => assert_eq!(want, Shape::Invalid, "message::read refused ({e:?})"),
                }
            }
            if enabled("canonical-id") {
                if let (Some(raw), Some(id)) = (env.id.as_deref(), value.get("id")) {
                    assert_eq!(
                        jsonrpc::canonical_raw_id(raw),
                        jsonrpc::canonical_id(id),
                        "one id, two keys: raw {}",
                        raw.get()
                    );
                }
            }
        }
        _ => {
            assert_eq!(env.kind, Kind::Invalid, "a scalar is not a message");
            assert_eq!(shape, Shape::Invalid, "a scalar is not a message");
            assert!(read.is_err(), "a scalar is not a message");
        }
    }
    if let Some(code) = value.get("error").and_then(|e| e.get("code")) {
        let _ = jsonrpc::numeric_code(code);
    }
});
