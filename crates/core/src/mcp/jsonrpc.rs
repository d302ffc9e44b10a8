//! JSON-RPC 2.0 as MCP uses it: the envelope of a message, its one shape, and the gateway's
//! one error type.
//!
//! Owns:
//! - the cheap look at a message ([`Envelope::peek`]) that the pipeline needs before anything
//!   else: its `id` (echoed verbatim in gateway errors), `method` (a bounded metric label) and
//!   its *shape*, classified strictly: exactly one of request, notification or response, or
//!   [`Kind::Invalid`]. A message that is a request to one reader and a response to another
//!   (`method` together with `result`, a member given twice) is invalid here, never guessed;
//! - [`classify`], the same strict shape for a parsed message;
//! - [`numeric_code`] and [`canonical_id`]: the one way numbers in `code` and `id` are compared,
//!   as lenient as the most lenient client (`-32042.0`, `-3.2042e4` and pydantic's lax `"-32042"`
//!   are all -32042; ids `1` and `1.0` are the same id);
//! - [`ErrorObject`] with the named [`codes`]: every JSON-RPC error the gateway writes.
//!
//! Never: parses more than the envelope, judges content, does I/O.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// Methods of every MCP revision; anything else is labelled `other`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
    "elicitation/create",
    "sampling/createMessage",
    "roots/list",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/roots/list_changed",
    "notifications/elicitation/complete",
    "notifications/tasks/status",
];

/// What kind of JSON-RPC message a body holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No body, or the body was not looked at.
    #[default]
    None,
    Request,
    Notification,
    /// A response (result or error) the client sends back to a server request.
    Response,
    /// A JSON array (batches existed in 2025-03-26 only).
    Batch,
    /// Not one JSON-RPC message: bad JSON, a member given twice, no shape or more than one.
    Invalid,
}

/// The `id` and `method` of a client message.
#[derive(Debug, Default)]
pub struct Envelope {
    pub kind: Kind,
    /// The request id exactly as the client wrote it.
    pub id: Option<Box<RawValue>>,
    /// The method, when it is one MCP defines.
    pub method: Option<&'static str>,
    /// A `tools/call`'s tool (`params.name`), read in the same pass: `None` when `params`
    /// holds no single string `name` (per-tool policy and the audit say which tool asked).
    pub tool: Option<String>,
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    /// Present at all, whatever its value: `"method": null` is a member named `method`, and
    /// a message with one is no response (the strict [`classify`] agrees; found by fuzzing).
    #[serde(borrow, default, deserialize_with = "method_member")]
    method: Option<MethodMember<'a>>,
    /// Present at all (even `null`): a reader that takes any `result` member as a response
    /// must not see a response where the gateway sees a request.
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
    /// Only its `name` member is kept; a second `params` makes the message unreadable, as a
    /// second `method` does (a server reading the other one would run another tool).
    #[serde(borrow, default, deserialize_with = "params_name")]
    params: Option<Cow<'a, str>>,
}

/// A `method` member as [`Envelope::peek`] sees it.
enum MethodMember<'a> {
    Name(Cow<'a, str>),
    /// Present, but not a string (`null`, a number, …).
    NotAString,
}

fn method_member<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<MethodMember<'de>>, D::Error> {
    Ok(Some(match d.deserialize_any(Skim::Text)? {
        Some(name) => MethodMember::Name(name),
        None => MethodMember::NotAString,
    }))
}

/// `params.name`: `None` when `params` is not an object, has no `name`, or its `name` is not
/// a string or is given twice.
fn params_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    d.deserialize_any(Skim::NameMember)
}

/// Reads any JSON value in one pass, keeping one string of it (borrowed from the body when it
/// has no escapes) and skimming the rest, without buffering the value as
/// `#[serde(untagged)]` would.
#[derive(Clone, Copy)]
enum Skim {
    /// The value itself, when it is a string.
    Text,
    /// The single string `name` member of an object.
    NameMember,
}

impl<'de> serde::de::Visitor<'de> for Skim {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(matches!(self, Skim::Text).then_some(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(matches!(self, Skim::Text).then(|| Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(matches!(self, Skim::Text).then_some(Cow::Owned(v)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut names) = (None, 0u8);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if matches!(self, Skim::NameMember) && key == "name" {
                names = names.saturating_add(1);
                name = map.next_value_seed(Skim::Text)?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(name.filter(|_| names == 1))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A [`Skim`] is also the seed of a member's value.
impl<'de> serde::de::DeserializeSeed<'de> for Skim {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Deserialises any value (bounded by serde_json's depth limit) and records that it was there.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(true)
}

/// True when a raw `id` is one JSON-RPC allows: a string or a number.
fn id_is_valid(raw: &RawValue) -> bool {
    matches!(
        raw.get().as_bytes().first(),
        Some(b'"' | b'-' | b'0'..=b'9')
    )
}

impl Envelope {
    /// Looks at a message body without building a full JSON tree.
    pub fn peek(body: &[u8]) -> Envelope {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        match first {
            None => return Envelope::default(),
            Some(b'[') => {
                return Envelope {
                    kind: Kind::Batch,
                    ..Envelope::default()
                }
            }
            Some(_) => {}
        }
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(body) else {
            return Envelope {
                kind: Kind::Invalid,
                ..Envelope::default()
            };
        };
        // `"id": null` is not an id worth echoing as such; it serialises back as null anyway.
        let id = peek.id.filter(|raw| raw.get() != "null");
        if id.is_some_and(|raw| !id_is_valid(raw)) {
            return Envelope {
                kind: Kind::Invalid,
                ..Envelope::default()
            };
        }
        let id = id.map(|raw| raw.to_owned());
        // Exactly one shape (JSON-RPC 2.0 §4, §5): a method and nothing of a response, or an
        // id with exactly one of `result` and `error`.
        let kind = match (&peek.method, &id, peek.result, peek.error) {
            (Some(MethodMember::NotAString), ..) => Kind::Invalid,
            (Some(_), Some(_), false, false) => Kind::Request,
            (Some(_), None, false, false) => Kind::Notification,
            (None, Some(_), true, false) | (None, Some(_), false, true) => Kind::Response,
            // An error for a request whose id could not be read.
            (None, None, false, true) => Kind::Response,
            _ => Kind::Invalid,
        };
        let method = match peek.method {
            Some(MethodMember::Name(m)) => KNOWN_METHODS.iter().copied().find(|k| *k == m),
            _ => None,
        };
        let tool = match (method, peek.params) {
            (Some("tools/call"), Some(n)) => Some(n.into_owned()),
            _ => None,
        };
        Envelope {
            kind,
            id,
            method,
            tool,
        }
    }

    /// A bounded label for metrics.
    pub fn method_label(&self) -> &'static str {
        match (self.kind, self.method) {
            (Kind::Request | Kind::Notification, Some(m)) => m,
            (Kind::Request | Kind::Notification, None) => "other",
            (Kind::None, _) => "none",
            (Kind::Response, _) => "response",
            (Kind::Batch, _) => "batch",
            (Kind::Invalid, _) => "invalid",
        }
    }
}

/// The strict shape of a parsed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Request,
    Notification,
    /// A response carrying `result`.
    Result,
    /// A response carrying `error`.
    Error,
    /// Anything else: not an object, no `"jsonrpc":"2.0"`, more than one shape, an `id` that
    /// is neither a string nor a number, a `method` that is not a string, an `error` that is
    /// not an object.
    Invalid,
}

/// Classifies a parsed message strictly per JSON-RPC 2.0: exactly one shape or
/// [`Shape::Invalid`].
pub fn classify(message: &Value) -> Shape {
    let Some(obj) = message.as_object() else {
        return Shape::Invalid;
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Shape::Invalid;
    }
    let id_ok = |id: Option<&Value>| matches!(id, Some(Value::String(_) | Value::Number(_)));
    let id = obj.get("id");
    match (obj.get("method"), obj.get("result"), obj.get("error")) {
        (Some(Value::String(_)), None, None) => match id {
            None | Some(Value::Null) => Shape::Notification,
            some if id_ok(some) => Shape::Request,
            _ => Shape::Invalid,
        },
        (None, Some(_), None) if id_ok(id) => Shape::Result,
        (None, None, Some(Value::Object(_))) if id_ok(id) || matches!(id, Some(Value::Null)) => {
            Shape::Error
        }
        _ => Shape::Invalid,
    }
}

/// A JSON number (or a string spelling one, as pydantic's lax mode reads it) that is an
/// integer, as `i64`: `-32042`, `-32042.0`, `-3.2042e4` and `"-32042"` are all -32042. The
/// one comparison for error codes, so no spelling reaches a client as one code and the gateway
/// as another.
pub fn numeric_code(value: &Value) -> Option<i64> {
    let float = match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Some(i);
            }
            n.as_f64()?
        }
        Value::String(s) => {
            let s = s.trim();
            if let Ok(i) = s.replace('_', "").parse::<i64>() {
                return Some(i);
            }
            s.parse::<f64>().ok()?
        }
        _ => return None,
    };
    // Integral and within range; 2^63 itself is out of range.
    (float.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&float))
        .then_some(float as i64)
}

/// The one key under which a JSON-RPC id is remembered and compared: integral numbers in
/// any spelling (`1`, `1.0`, `1e0`) are one id, as the SDKs' lax models read them; strings stay
/// strings (`"1"` and `1` differ).
pub fn canonical_id(id: &Value) -> String {
    match id {
        Value::Number(n) => match n.as_i64().or_else(|| numeric_code(id)) {
            Some(i) => i.to_string(),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// [`canonical_id`] of a raw id as a message spelled it.
pub fn canonical_raw_id(raw: &RawValue) -> String {
    let text = raw.get();
    // Integers in i64 range and strings without escapes, by far the most common, need no
    // JSON parse; anything else (`-0`, integers past i64 that read as floats, `"\u0061"`) is
    // keyed by its parsed value, exactly as [`canonical_id`] keys it.
    if let Ok(int) = text.parse::<i64>() {
        return int.to_string();
    }
    if text.starts_with('"') && !text.contains('\\') {
        return text.to_owned();
    }
    serde_json::from_str::<Value>(text)
        .map(|v| canonical_id(&v))
        .unwrap_or_else(|_| text.to_owned())
}

/// The JSON-RPC error codes the gateway uses, by name.
pub mod codes {
    /// The message is not a valid request (JSON-RPC 2.0).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Params (or an answer) that do not fit (JSON-RPC 2.0); also the gateway's error to a
    /// server for a blocked legacy elicitation.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The gateway or the upstream failed (JSON-RPC 2.0).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The 2025-11-25 `URLElicitationRequiredError` (MCP).
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// What a client receives instead of content the gateway blocked or could not read: an
    /// application code outside the ranges JSON-RPC and MCP reserve (-32768…-32000).
    pub const POLICY_BLOCKED: i64 = -31042;
    /// A request without the identity the gateway requires (HTTP 401 carries it): an
    /// application code, next to [`POLICY_BLOCKED`].
    pub const UNAUTHENTICATED: i64 = -31401;
}

/// A JSON-RPC error object, and the response that carries it: every error the gateway writes,
/// to clients and to servers, is one of these.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: Cow<'static, str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

/// The id a gateway error echoes.
#[derive(Debug, Clone, Copy)]
pub enum Id<'a> {
    /// As the message spelled it.
    Raw(&'a RawValue),
    Value(&'a Value),
    Null,
}

impl<'a> From<Option<&'a RawValue>> for Id<'a> {
    fn from(id: Option<&'a RawValue>) -> Self {
        id.map_or(Id::Null, Id::Raw)
    }
}

impl<'a> From<Option<&'a Value>> for Id<'a> {
    fn from(id: Option<&'a Value>) -> Self {
        id.map_or(Id::Null, Id::Value)
    }
}

impl Serialize for Id<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Raw(raw) => raw.serialize(s),
            Id::Value(v) => v.serialize(s),
            Id::Null => s.serialize_unit(),
        }
    }
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: Id<'a>,
    error: &'a ErrorObject,
}

impl ErrorObject {
    /// An error whose `data` says the gateway wrote it, with `extra` members added.
    pub fn gateway(code: i64, message: impl Into<Cow<'static, str>>, extra: Value) -> Self {
        let mut data = serde_json::json!({ "gateway": "elicitgate" });
        if let (Some(map), Value::Object(extra)) = (data.as_object_mut(), extra) {
            map.extend(extra);
        }
        Self {
            code,
            message: message.into(),
            data,
        }
    }

    /// The error a client gets instead of content the gateway blocked (`rules`) or could not
    /// read (`reason`): never anything of the content itself.
    pub fn blocked<'r>(rules: impl IntoIterator<Item = &'r str>) -> Self {
        let rules: Vec<&str> = rules.into_iter().collect();
        Self::gateway(
            codes::POLICY_BLOCKED,
            "Elicitation blocked by gateway policy",
            serde_json::json!({ "rules": rules }),
        )
    }

    /// Adds the bounded label of why content was refused (`json.number`, …).
    pub fn with_reason(mut self, reason: &'static str) -> Self {
        if let Some(map) = self.data.as_object_mut() {
            map.insert("reason".into(), Value::from(reason));
        }
        self
    }

    /// Names the audit event that recorded this block: `data.event_id`, and the message says
    /// it with the rules (`Elicitation blocked by gateway policy (form.secret; audit event
    /// 3f…)`), since most clients show only the message.
    pub fn with_event(mut self, event: &str) -> Self {
        let rules: Vec<&str> = self.data["rules"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut message = self.message.to_string();
        message.push_str(&format!(" ({}; audit event {event})", rules.join(", ")));
        self.message = message.into();
        if let Some(map) = self.data.as_object_mut() {
            map.insert("event_id".into(), Value::from(event));
        }
        self
    }

    /// [`ErrorObject::blocked`] with another code (the legacy answer to a server is -32602).
    pub fn with_code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }

    /// The whole response for `id`, serialised.
    pub fn response<'a>(&self, id: impl Into<Id<'a>>) -> bytes::Bytes {
        let response = ErrorResponse {
            jsonrpc: "2.0",
            id: id.into(),
            error: self,
        };
        // Serialising plain strings, numbers and maps cannot fail.
        bytes::Bytes::from(serde_json::to_vec(&response).unwrap_or_default())
    }

    /// The whole response for `id`, as a value.
    pub fn response_value<'a>(&self, id: impl Into<Id<'a>>) -> Value {
        serde_json::from_slice(&self.response(id)).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_reads_the_tool_of_a_call_in_the_same_pass() {
        let tool = |t: &str| Envelope::peek(t.as_bytes()).tool;
        let call = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
        };
        assert_eq!(
            tool(&call(r#"{"name":"deploy","arguments":{"name":"x"}}"#)).as_deref(),
            Some("deploy")
        );
        assert_eq!(
            tool(&call(r#"{"arguments":{},"n\u0061me":"esc"}"#)).as_deref(),
            Some("esc")
        );
        // No single string name: none, and the message is still a request.
        for params in [
            r#"{"name":"a","name":"b"}"#,
            r#"{"name":7}"#,
            "[1,2]",
            "{}",
            "null",
        ] {
            let e = Envelope::peek(call(params).as_bytes());
            assert_eq!((e.kind, e.tool), (Kind::Request, None), "{params}");
        }
        // Another method's params.name is not a tool.
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}"#;
        assert_eq!(tool(other), None);
        // Two `params`: a server reading the other would run another tool.
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe"},"params":{"name":"rm"}}"#;
        assert_eq!(Envelope::peek(twice.as_bytes()).kind, Kind::Invalid);
    }

    #[test]
    fn peeks_requests_notifications_and_responses() {
        let r =
            Envelope::peek(br#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{}}"#);
        assert_eq!(r.kind, Kind::Request);
        assert_eq!(r.id.as_deref().map(RawValue::get), Some("\"a-1\""));
        assert_eq!(r.method_label(), "tools/call");
        let n = Envelope::peek(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(n.kind, Kind::Notification);
        let resp = Envelope::peek(br#"{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}"#);
        assert_eq!(resp.kind, Kind::Response);
        assert_eq!(resp.method_label(), "response");
    }

    #[test]
    fn unknown_methods_and_junk_get_bounded_labels() {
        assert_eq!(
            Envelope::peek(br#"{"id":1,"method":"x/secret-name"}"#).method_label(),
            "other"
        );
        assert_eq!(Envelope::peek(b"not json").method_label(), "invalid");
        assert_eq!(Envelope::peek(b"[{}]").method_label(), "batch");
        assert_eq!(Envelope::peek(b"").method_label(), "none");
    }

    #[test]
    fn one_shape_or_invalid() {
        for ambiguous in [
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":5,"result":{"resultType":"input_required"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"a"}"#,
            r#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":5,"id":1}"#,
            // Found by fuzzing: a `method` member of any value makes it no response.
            r#"{"jsonrpc":"2.0","id":1,"method":null,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","method":null,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert_eq!(
                Envelope::peek(ambiguous.as_bytes()).kind,
                Kind::Invalid,
                "{ambiguous}"
            );
            if let Ok(v) = serde_json::from_str::<Value>(ambiguous) {
                assert_eq!(classify(&v), Shape::Invalid, "{ambiguous}");
            }
        }
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
                Kind::Request,
                Shape::Request,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"m"}"#,
                Kind::Notification,
                Shape::Notification,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
                Kind::Notification,
                Shape::Notification,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
                Kind::Response,
                Shape::Result,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
                Kind::Response,
                Shape::Error,
            ),
        ];
        for (text, kind, shape) in cases {
            assert_eq!(Envelope::peek(text.as_bytes()).kind, kind, "{text}");
            assert_eq!(
                classify(&serde_json::from_str(text).unwrap()),
                shape,
                "{text}"
            );
        }
        // A member given twice: the envelope peek refuses it (parsed into a tree, the last
        // one wins, as in Python and JavaScript, so the tree has one reading).
        let twice = br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#;
        assert_eq!(Envelope::peek(twice).kind, Kind::Invalid);
        // No "jsonrpc":"2.0": not a message any SDK reads.
        assert_eq!(
            classify(&serde_json::json!({"id":1,"method":"m"})),
            Shape::Invalid
        );
    }

    #[test]
    fn every_spelling_of_a_code_is_one_number() {
        for spelling in [
            "-32042",
            "-32042.0",
            "-3.2042e4",
            "-32042e0",
            r#""-32042""#,
            r#"" -32042 ""#,
        ] {
            let v: Value = serde_json::from_str(spelling).unwrap();
            assert_eq!(numeric_code(&v), Some(-32042), "{spelling}");
        }
        for not in ["-32042.5", "1e300", "true", "null", r#""x""#, "[]"] {
            let v: Value = serde_json::from_str(not).unwrap();
            assert_eq!(numeric_code(&v), None, "{not}");
        }
    }

    #[test]
    fn ids_compare_as_the_sdks_read_them() {
        let key = |t: &str| canonical_id(&serde_json::from_str::<Value>(t).unwrap());
        assert_eq!(key("1"), key("1.0"));
        assert_eq!(key("1"), key("1e0"));
        assert_ne!(key("1"), key(r#""1""#));
        let raw = |t: &str| canonical_raw_id(&RawValue::from_string(t.to_owned()).unwrap());
        assert_eq!(raw("7"), key("7"));
        assert_eq!(raw("7.0"), key("7"));
        assert_eq!(raw(r#""a""#), key(r#""a""#));
        // Found by the jsonrpc_classify fuzz target: one id, one key, however it is spelled.
        for spelling in [
            "-0",
            "123456789012345678901234",
            "18446744073709551615",
            r#""\u0061""#,
        ] {
            assert_eq!(raw(spelling), key(spelling), "{spelling}");
        }
        assert_eq!(raw(r#""\u0061""#), raw(r#""a""#));
    }

    #[test]
    fn errors_are_one_type() {
        let e = ErrorObject::blocked(["form.secret"]);
        let raw = RawValue::from_string("\"r-1\"".to_owned()).unwrap();
        let v: Value = serde_json::from_slice(&e.response(Some(&*raw))).unwrap();
        assert_eq!(v["id"], "r-1");
        assert_eq!(v["error"]["code"], codes::POLICY_BLOCKED);
        assert_eq!(v["error"]["data"]["rules"][0], "form.secret");
        assert_eq!(v["error"]["data"]["gateway"], "elicitgate");
        let v: Value = serde_json::from_slice(&e.response(Id::Null)).unwrap();
        assert!(v["id"].is_null());
    }
}
