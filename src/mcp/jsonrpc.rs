//! JSON-RPC 2.0 envelopes as MCP uses them.
//!
//! Owns the cheap look at a client message that the pipeline needs before anything else: its
//! `id` (echoed verbatim in gateway errors) and `method` (a bounded metric label). Everything
//! else in the message is left alone.

use serde::Deserialize;
use serde_json::value::RawValue;

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
    /// Not a JSON-RPC object.
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
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
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
        let id = peek
            .id
            .filter(|raw| raw.get() != "null")
            .map(|raw| raw.to_owned());
        let kind = match (&peek.method, &id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, Some(_)) => Kind::Response,
            (None, None) => Kind::Invalid,
        };
        let method = peek
            .method
            .and_then(|m| KNOWN_METHODS.iter().copied().find(|k| *k == m));
        Envelope { kind, id, method }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
