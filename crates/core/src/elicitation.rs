//! One borrowed view of an elicitation, whatever carried it.
//!
//! Owns: recognising elicitations inside any MCP message (legacy `elicitation/create`
//! requests, 2026-07-28 `input_required` results and `tasks/get` results with
//! `inputRequests`, 2025-11-25 `-32042` URL-required errors, and bare `params` objects
//! given to the CLI), reading the fields the inspector needs, and parsing the client's
//! declared elicitation capability.
//!
//! Never: judges anything (that is `crate::inspect`), copies the payload, does I/O.
//! Extraction is deliberately tolerant: anything that *looks* like an elicitation is
//! returned as a view, even when malformed, so that the inspector can deny it with
//! `request.malformed` instead of letting it slip through unjudged (fail closed).

use serde_json::{Map, Value};

/// JSON-RPC error code of the 2025-11-25 `URLElicitationRequiredError`.
pub const URL_ELICITATION_REQUIRED: i64 = crate::mcp::jsonrpc::codes::URL_ELICITATION_REQUIRED;

/// The `_meta` key that carries per-request client capabilities in 2026-07-28.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The method name of an elicitation request, in every revision.
pub const ELICITATION_CREATE: &str = "elicitation/create";

static NULL: Value = Value::Null;

/// How an elicitation travelled from the server to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carrier {
    /// A server→client JSON-RPC request `elicitation/create` (2025-06-18, 2025-11-25), or
    /// a bare `params` object handed to the CLI.
    LegacyRequest,
    /// An entry of an `inputRequests` map: a 2026-07-28 `input_required` result or a
    /// tasks-extension `tasks/get` result.
    InputRequest,
    /// An element of `error.data.elicitations[]` of a 2025-11-25 `-32042` error.
    UrlRequiredError,
}

impl Carrier {
    /// Stable name for audit events and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Carrier::LegacyRequest => "legacy_request",
            Carrier::InputRequest => "input_request",
            Carrier::UrlRequiredError => "url_required_error",
        }
    }
}

/// Elicitation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A form rendered from `requestedSchema`; `mode` absent or `"form"`.
    Form,
    /// Out-of-band navigation to `url`; `mode: "url"`.
    Url,
}

impl Mode {
    /// Wire name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Form => "form",
            Mode::Url => "url",
        }
    }
}

/// What the `mode` field of the params says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeField {
    /// A recognised mode (missing `mode` counts as form).
    Known(Mode),
    /// A `mode` that is not `"form"` or `"url"` (or not a string at all).
    Unknown,
}

/// A borrowed view of one elicitation's `params`.
#[derive(Debug, Clone, Copy)]
pub struct ElicitationView<'a> {
    /// How the elicitation arrived.
    pub carrier: Carrier,
    /// The `params` object (may be any JSON value if the sender was malformed).
    pub params: &'a Value,
    /// The `inputRequests` key, for [`Carrier::InputRequest`].
    pub key: Option<&'a str>,
    /// The JSON-RPC `id` of the carrying request (legacy) or response (results, errors).
    pub rpc_id: Option<&'a Value>,
    /// Position of this view within the message (order of appearance), for reporting.
    pub index: usize,
}

impl<'a> ElicitationView<'a> {
    /// A view over a bare `params` object (the CLI case), carried like a legacy request.
    pub fn from_params(params: &'a Value) -> Self {
        ElicitationView {
            carrier: Carrier::LegacyRequest,
            params,
            key: None,
            rpc_id: None,
            index: 0,
        }
    }

    /// The params as an object, if they are one.
    pub fn object(&self) -> Option<&'a Map<String, Value>> {
        self.params.as_object()
    }

    /// The `mode` field; missing means form.
    pub fn mode_field(&self) -> ModeField {
        match self.params.get("mode") {
            None => ModeField::Known(Mode::Form),
            Some(Value::String(s)) if s == "form" => ModeField::Known(Mode::Form),
            Some(Value::String(s)) if s == "url" => ModeField::Known(Mode::Url),
            Some(_) => ModeField::Unknown,
        }
    }

    /// The mode if it is recognised.
    pub fn mode(&self) -> Option<Mode> {
        match self.mode_field() {
            ModeField::Known(m) => Some(m),
            ModeField::Unknown => None,
        }
    }

    /// The `message` string, if present and a string.
    pub fn message(&self) -> Option<&'a str> {
        self.params.get("message").and_then(Value::as_str)
    }

    /// The `requestedSchema` value, if present.
    pub fn requested_schema(&self) -> Option<&'a Value> {
        self.params.get("requestedSchema")
    }

    /// The `url` string, if present and a string.
    pub fn url(&self) -> Option<&'a str> {
        self.params.get("url").and_then(Value::as_str)
    }

    /// The `elicitationId` string, if present and a string.
    pub fn elicitation_id(&self) -> Option<&'a str> {
        self.params.get("elicitationId").and_then(Value::as_str)
    }

    /// A short description of where this view sits in its message, for reports
    /// (e.g. `params`, `result.inputRequests.confirm`, `error.data.elicitations[0]`).
    /// The `inputRequests` key is server-chosen and included as-is.
    pub fn source(&self) -> String {
        match self.carrier {
            Carrier::LegacyRequest => "params".to_string(),
            Carrier::InputRequest => match self.key {
                Some(k) => format!("inputRequests.{k}"),
                None => "inputRequests".to_string(),
            },
            Carrier::UrlRequiredError => format!("error.data.elicitations[{}]", self.index),
        }
    }
}

/// Views from a legacy server→client request `{"method":"elicitation/create","params":…}`.
///
/// A request without `params` still yields a view (over `null`), so that it is denied as
/// malformed rather than ignored.
pub fn from_request(message: &Value) -> Option<ElicitationView<'_>> {
    let obj = message.as_object()?;
    if obj.get("method").and_then(Value::as_str) != Some(ELICITATION_CREATE) {
        return None;
    }
    Some(ElicitationView {
        carrier: Carrier::LegacyRequest,
        params: obj.get("params").unwrap_or(&NULL),
        key: None,
        rpc_id: obj.get("id"),
        index: 0,
    })
}

/// Views from a JSON-RPC result carrying an `inputRequests` map: a 2026-07-28
/// `input_required` result, or a tasks-extension `tasks/get` result (`inputRequests` on
/// the result itself or on `result.task`).
///
/// `result` may be the whole response (`{"result":{…}}`) or the result object itself.
/// Entries whose `method` is not `elicitation/create` (sampling, roots) are skipped.
/// The map is inspected whatever `resultType` says: a client renders what it finds.
pub fn from_input_required(message: &Value) -> Vec<ElicitationView<'_>> {
    let mut out = Vec::new();
    let result = message.get("result").unwrap_or(message);
    let rpc_id = message.get("id");
    let map = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .or_else(|| {
            result
                .get("task")
                .and_then(|t| t.get("inputRequests"))
                .and_then(Value::as_object)
        });
    if let Some(map) = map {
        for (key, entry) in map {
            if entry.get("method").and_then(Value::as_str) != Some(ELICITATION_CREATE) {
                continue;
            }
            out.push(ElicitationView {
                carrier: Carrier::InputRequest,
                params: entry.get("params").unwrap_or(&NULL),
                key: Some(key.as_str()),
                rpc_id,
                index: out.len(),
            });
        }
    }
    out
}

/// Views from a 2025-11-25 `-32042` error: one per `error.data.elicitations[]` element.
/// `message` may be the whole response or the `error` object itself.
pub fn from_url_required_error(message: &Value) -> Vec<ElicitationView<'_>> {
    let error = message.get("error").unwrap_or(message);
    let rpc_id = message.get("id");
    // Every spelling a client reads as -32042 (`-32042.0`, `-3.2042e4`, `"-32042"`).
    if error
        .get("code")
        .and_then(crate::mcp::jsonrpc::numeric_code)
        != Some(URL_ELICITATION_REQUIRED)
    {
        return Vec::new();
    }
    match error.get("data").and_then(|d| d.get("elicitations")) {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, params)| ElicitationView {
                carrier: Carrier::UrlRequiredError,
                params,
                key: None,
                rpc_id,
                index,
            })
            .collect(),
        // A -32042 without a usable list is itself malformed: judge it as one empty
        // url-mode elicitation so it is denied, not forwarded unjudged.
        _ => vec![ElicitationView {
            carrier: Carrier::UrlRequiredError,
            params: error.get("data").unwrap_or(&NULL),
            key: None,
            rpc_id,
            index: 0,
        }],
    }
}

/// True when `value` looks like a bare elicitation `params` object.
pub fn is_bare_params(value: &Value) -> bool {
    match value.as_object() {
        Some(obj) => {
            let envelope = ["jsonrpc", "method", "result", "error"]
                .iter()
                .any(|k| obj.contains_key(*k));
            !envelope
                && ["message", "requestedSchema", "mode", "url"]
                    .iter()
                    .any(|k| obj.contains_key(*k))
        }
        None => false,
    }
}

/// Every elicitation in any message: a request, a result, an error, a bare params object,
/// or a (2025-03-26 style) batch array of those. Non-elicitation messages yield nothing.
pub fn extract_all(message: &Value) -> Vec<ElicitationView<'_>> {
    match message {
        Value::Array(batch) => {
            let mut out = Vec::new();
            for item in batch {
                // Batches are one level deep; nested arrays are not JSON-RPC.
                if item.is_object() {
                    out.extend(extract_one(item));
                }
            }
            out
        }
        Value::Object(_) => extract_one(message),
        _ => Vec::new(),
    }
}

fn extract_one(message: &Value) -> Vec<ElicitationView<'_>> {
    if let Some(view) = from_request(message) {
        return vec![view];
    }
    if message.get("result").is_some_and(Value::is_object) {
        return from_input_required(message);
    }
    if message.get("error").is_some_and(Value::is_object) {
        return from_url_required_error(message);
    }
    if is_bare_params(message) {
        return vec![ElicitationView::from_params(message)];
    }
    Vec::new()
}

/// The elicitation modes a client declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ClientCaps {
    form: bool,
    url: bool,
}

impl ClientCaps {
    /// No elicitation capability at all.
    pub const fn none() -> Self {
        ClientCaps {
            form: false,
            url: false,
        }
    }

    /// `"elicitation": {}` or `{"form":{}}`.
    pub const fn form_only() -> Self {
        ClientCaps {
            form: true,
            url: false,
        }
    }

    /// `{"url":{}}`.
    pub const fn url_only() -> Self {
        ClientCaps {
            form: false,
            url: true,
        }
    }

    /// `{"form":{},"url":{}}`.
    pub const fn form_and_url() -> Self {
        ClientCaps {
            form: true,
            url: true,
        }
    }

    /// Parse a `ClientCapabilities` object (`{"elicitation": {...}, ...}`).
    ///
    /// - no `elicitation` key, or a non-object value → none;
    /// - `{}` or an object with neither `form` nor `url` (only SDK extras) → form only;
    /// - otherwise each of `form` / `url` counts when its value is an object.
    pub fn from_capabilities(capabilities: &Value) -> Self {
        match capabilities.get("elicitation") {
            Some(Value::Object(e)) => {
                let form = e.get("form").is_some_and(Value::is_object);
                let url = e.get("url").is_some_and(Value::is_object);
                if !e.contains_key("form") && !e.contains_key("url") {
                    ClientCaps::form_only()
                } else {
                    ClientCaps { form, url }
                }
            }
            _ => ClientCaps::none(),
        }
    }

    /// Did the client declare this mode?
    pub fn declares(&self, mode: Mode) -> bool {
        match mode {
            Mode::Form => self.form,
            Mode::Url => self.url,
        }
    }

    /// Did the client declare elicitation at all?
    pub fn any(&self) -> bool {
        self.form || self.url
    }
}

/// The 2026-07-28 per-request capabilities: `params._meta["io.modelcontextprotocol/clientCapabilities"]`
/// of a client request (`message` may be the request or its `params`).
pub fn capabilities_from_meta(message: &Value) -> Option<&Value> {
    let params = message.get("params").unwrap_or(message);
    params.get("_meta")?.get(META_CLIENT_CAPABILITIES)
}

/// The legacy per-session capabilities: `params.capabilities` of an `initialize` request.
pub fn capabilities_from_initialize(message: &Value) -> Option<&Value> {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return None;
    }
    message.get("params")?.get("capabilities")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_request_yields_one_view() {
        let msg = json!({"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"m","requestedSchema":{}}});
        let views = extract_all(&msg);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].carrier, Carrier::LegacyRequest);
        assert_eq!(views[0].message(), Some("m"));
        assert_eq!(views[0].rpc_id, Some(&json!(7)));
        assert_eq!(views[0].mode_field(), ModeField::Known(Mode::Form));
    }

    #[test]
    fn legacy_request_without_params_is_still_a_view() {
        let msg = json!({"jsonrpc":"2.0","id":1,"method":"elicitation/create"});
        let views = extract_all(&msg);
        assert_eq!(views.len(), 1);
        assert!(views[0].params.is_null());
    }

    #[test]
    fn input_required_skips_sampling_and_keeps_keys() {
        let msg = json!({"jsonrpc":"2.0","id":"a1","result":{"resultType":"input_required",
            "inputRequests":{
                "confirm":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}},
                "s":{"method":"sampling/createMessage","params":{}},
                "acme":{"method":"elicitation/create","params":{"mode":"url","url":"https://a.example","message":"x"}}},
            "requestState":"blob"}});
        let views = extract_all(&msg);
        assert_eq!(views.len(), 2);
        let keys: Vec<_> = views.iter().map(|v| v.key.unwrap_or("")).collect();
        assert!(keys.contains(&"confirm") && keys.contains(&"acme"));
        assert!(views.iter().all(|v| v.carrier == Carrier::InputRequest));
        let acme = views
            .iter()
            .find(|v| v.key == Some("acme"))
            .map(|v| v.mode());
        assert_eq!(acme, Some(Some(Mode::Url)));
    }

    #[test]
    fn tasks_get_result_is_inspected() {
        let msg = json!({"jsonrpc":"2.0","id":3,"result":{"taskId":"t","status":"input_required",
            "inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{}}}}}});
        assert_eq!(extract_all(&msg).len(), 1);
        let nested = json!({"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t","status":"input_required",
            "inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m"}}}}}});
        assert_eq!(extract_all(&nested).len(), 1);
    }

    #[test]
    fn url_required_error_yields_each_element() {
        let msg = json!({"jsonrpc":"2.0","id":3,"error":{"code":-32042,"message":"x","data":{"elicitations":[
            {"mode":"url","elicitationId":"e-7","url":"https://srv.example/c","message":"a"},
            {"mode":"url","elicitationId":"e-8","url":"https://srv.example/d","message":"b"}]}}});
        let views = extract_all(&msg);
        assert_eq!(views.len(), 2);
        assert_eq!(views[1].elicitation_id(), Some("e-8"));
        assert_eq!(views[1].source(), "error.data.elicitations[1]");
    }

    #[test]
    fn url_required_error_without_list_is_judged() {
        let msg = json!({"jsonrpc":"2.0","id":3,"error":{"code":-32042,"message":"x"}});
        assert_eq!(extract_all(&msg).len(), 1);
    }

    #[test]
    fn other_errors_and_results_are_ignored() {
        assert!(extract_all(
            &json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}})
        )
        .is_empty());
        assert!(extract_all(&json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}})).is_empty());
        assert!(extract_all(&json!({"jsonrpc":"2.0","method":"tools/list"})).is_empty());
        assert!(extract_all(&json!("text")).is_empty());
    }

    #[test]
    fn bare_params_and_batches() {
        let bare = json!({"message":"m","requestedSchema":{"type":"object","properties":{}}});
        assert_eq!(extract_all(&bare).len(), 1);
        let batch = json!([{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"a"}},
                           {"jsonrpc":"2.0","id":2,"method":"ping"}]);
        assert_eq!(extract_all(&batch).len(), 1);
    }

    #[test]
    fn unknown_mode_is_reported_as_unknown() {
        let p = json!({"mode":"voice","message":"m"});
        assert_eq!(
            ElicitationView::from_params(&p).mode_field(),
            ModeField::Unknown
        );
        let p = json!({"mode":7,"message":"m"});
        assert_eq!(ElicitationView::from_params(&p).mode(), None);
    }

    #[test]
    fn capabilities_table() {
        let cases = [
            (json!({}), ClientCaps::none()),
            (json!({"elicitation":{}}), ClientCaps::form_only()),
            (json!({"elicitation":{"form":{}}}), ClientCaps::form_only()),
            (json!({"elicitation":{"url":{}}}), ClientCaps::url_only()),
            (
                json!({"elicitation":{"form":{"applyDefaults":true},"url":{}}}),
                ClientCaps::form_and_url(),
            ),
            (
                json!({"elicitation":{"applyDefaults":true}}),
                ClientCaps::form_only(),
            ),
            (json!({"elicitation":true}), ClientCaps::none()),
            (json!({"elicitation":{"form":null}}), ClientCaps::none()),
        ];
        for (caps, want) in cases {
            assert_eq!(ClientCaps::from_capabilities(&caps), want, "{caps}");
        }
    }

    #[test]
    fn capability_locations() {
        let modern = json!({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x",
            "_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}});
        let caps = capabilities_from_meta(&modern).map(ClientCaps::from_capabilities);
        assert_eq!(caps, Some(ClientCaps::url_only()));
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}});
        let caps = capabilities_from_initialize(&init).map(ClientCaps::from_capabilities);
        assert_eq!(caps, Some(ClientCaps::form_only()));
        assert!(capabilities_from_initialize(&modern).is_none());
    }
}
