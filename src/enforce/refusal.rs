//! The one refusal boundary. Whenever enforcement refuses a client message or keeps content
//! from a client, it says so here, carrier-neutrally: a [`Refusal`] names what was refused
//! (its [`RefusalKind`], with the rule ids and the bounded reason), the JSON-RPC id to answer,
//! and whether the server must be told too. It carries no status code and no transport
//! framing: the HTTP carrier (`proxy::respond::refusal`) and the stdio carrier
//! (`stdio::refusal_line`) each map every kind in one place, and `tests/it/refusals.rs` checks
//! both against the table in docs/security-model.md.
//!
//! Owns every JSON-RPC error the gateway writes in place of something: refusals to clients
//! ([`Refusal::error`]), the error that replaces blocked content in a stream
//! ([`blocked_value`]), and the gateway's own answers to servers ([`to_server_blocked`],
//! [`undeliverable`]). Failures of the gateway itself are `crate::error::GatewayError`.
//!
//! Never: I/O, status codes, or anything of the refused content in what it writes.

use bytes::Bytes;
use elicitgate_core::inspect::{RuleId, Verdict};
use elicitgate_core::mcp::jsonrpc::{codes, ErrorObject, Id};
use elicitgate_core::policy::OnBlock;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Why a request in a session was refused (identity on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRefusal {
    /// The session belongs to another principal.
    Mismatch,
    /// No principal owns the session (the gateway never saw it created).
    Unknown,
    /// The state store could not say who owns it.
    StoreUnavailable,
}

/// What was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalKind {
    /// Not one JSON-RPC message the gateway can read as the server would (bad JSON, a member
    /// given twice, no shape, a session named ambiguously); `detail` is the bounded label.
    Unreadable { detail: &'static str },
    /// A body in a content coding or charset the gateway does not read as the server would.
    Encoding { detail: &'static str },
    /// An elicitation answer that does not fit what was asked, or answers nothing pending.
    Answer { rules: Vec<RuleId> },
    /// A request in a session the caller may not use.
    Session {
        why: SessionRefusal,
        rules: Vec<RuleId>,
    },
    /// Server content the client must not get: blocked by policy (`rules`), or unreadable as
    /// a client would read it (`reason`).
    ServerContent {
        rules: Vec<RuleId>,
        reason: Option<&'static str>,
    },
}

/// The JSON-RPC id a refusal answers, owned.
#[derive(Debug, Clone)]
pub enum RefusedId {
    /// As the message spelled it.
    Raw(Box<RawValue>),
    /// As parsed.
    Value(Value),
    /// No id is known: the answer carries `null`.
    None,
}

impl RefusedId {
    /// The id as the JSON-RPC layer writes it.
    pub fn as_id(&self) -> Id<'_> {
        match self {
            Self::Raw(raw) => Id::Raw(raw),
            Self::Value(v) => Id::Value(v),
            Self::None => Id::Null,
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Self::None)
    }
}

impl From<Option<&RawValue>> for RefusedId {
    fn from(id: Option<&RawValue>) -> Self {
        id.map_or(Self::None, |raw| Self::Raw(raw.to_owned()))
    }
}

impl From<Option<&Value>> for RefusedId {
    fn from(id: Option<&Value>) -> Self {
        id.map_or(Self::None, |v| Self::Value(v.clone()))
    }
}

/// A refusal, decided: what the carrier writes is derived from this alone.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub kind: RefusalKind,
    /// The id the client's answer carries.
    pub id: RefusedId,
    /// The server is waiting for what was refused (an elicitation answer): it gets the same
    /// JSON-RPC error for its own request, so its call ends instead of hanging.
    pub tell_server: bool,
}

impl Refusal {
    /// A client message the gateway cannot read as the server would.
    pub fn unreadable(id: impl Into<RefusedId>, detail: &'static str) -> Self {
        Self::new(RefusalKind::Unreadable { detail }, id)
    }

    /// A client body in a coding or charset the gateway does not read.
    pub fn encoding(id: impl Into<RefusedId>, detail: &'static str) -> Self {
        Self::new(RefusalKind::Encoding { detail }, id)
    }

    /// An elicitation answer refused by `verdict`.
    pub fn answer(id: impl Into<RefusedId>, verdict: &Verdict) -> Self {
        Self::new(
            RefusalKind::Answer {
                rules: verdict.denied_by.clone(),
            },
            id,
        )
    }

    /// An elicitation answer refused by `verdict` whose server is waiting for it: the server's
    /// call ends with the same error.
    pub fn answer_to_waiting_server(id: impl Into<RefusedId>, verdict: &Verdict) -> Self {
        Self {
            tell_server: true,
            ..Self::answer(id, verdict)
        }
    }

    /// A request in a session the caller may not use.
    pub fn session(id: impl Into<RefusedId>, why: SessionRefusal, verdict: &Verdict) -> Self {
        Self::new(
            RefusalKind::Session {
                why,
                rules: verdict.denied_by.clone(),
            },
            id,
        )
    }

    /// Server content kept from the client: the blocked-content error for `id`.
    pub fn server_content(
        id: impl Into<RefusedId>,
        rules: &[RuleId],
        reason: Option<&'static str>,
    ) -> Self {
        Self::new(
            RefusalKind::ServerContent {
                rules: rules.to_vec(),
                reason,
            },
            id,
        )
    }

    fn new(kind: RefusalKind, id: impl Into<RefusedId>) -> Self {
        Self {
            kind,
            id: id.into(),
            tell_server: false,
        }
    }

    /// The JSON-RPC error every carrier writes for this refusal.
    pub fn error(&self) -> ErrorObject {
        match &self.kind {
            RefusalKind::Unreadable { detail } | RefusalKind::Encoding { detail } => {
                ErrorObject::gateway(
                    codes::INVALID_REQUEST,
                    "Not a JSON-RPC message the gateway can read",
                    json!({ "reason": "invalid_message", "detail": detail }),
                )
            }
            RefusalKind::Answer { rules } | RefusalKind::Session { rules, .. } => {
                answer_error(rules)
            }
            RefusalKind::ServerContent { rules, reason } => {
                let error = ErrorObject::blocked(rules.iter().map(|r| r.as_str()));
                match reason {
                    Some(reason) => error.with_reason(reason),
                    None => error,
                }
            }
        }
    }

    /// The whole JSON-RPC response for [`Refusal::id`].
    pub fn message(&self) -> Bytes {
        self.error().response(self.id.as_id())
    }

    /// The bounded name of the kind, as docs/security-model.md's table lists it.
    pub fn label(&self) -> &'static str {
        match &self.kind {
            RefusalKind::Unreadable { .. } => "unreadable",
            RefusalKind::Encoding { .. } => "encoding",
            RefusalKind::Answer { .. } => "answer",
            RefusalKind::Session { why, .. } => match why {
                SessionRefusal::Mismatch => "session.mismatch",
                SessionRefusal::Unknown => "session.unknown",
                SessionRefusal::StoreUnavailable => "session.store",
            },
            RefusalKind::ServerContent { .. } => "server.content",
        }
    }
}

/// The error for an answer (or a session) refused by `rules`.
fn answer_error(rules: &[RuleId]) -> ErrorObject {
    ErrorObject::gateway(
        codes::INVALID_PARAMS,
        "Elicitation answer rejected by gateway policy",
        json!({ "rules": rules.iter().map(|r| r.as_str()).collect::<Vec<_>>() }),
    )
}

/// The message that replaces blocked content in a stream or body: the blocked-content error
/// for `id`, naming `rules` and the audit event (`event`), nothing of the content.
pub fn blocked_value<'a>(id: impl Into<Id<'a>>, rules: &[RuleId], event: Option<&str>) -> Value {
    with_event(
        ErrorObject::blocked(rules.iter().map(|r| r.as_str())),
        event,
    )
    .response_value(id)
}

/// The gateway's own answer to a server whose legacy elicitation it blocked, as the policy
/// says: a decline, or an error naming the rules and the audit event.
pub fn to_server_blocked(
    on_block: OnBlock,
    id: &Value,
    rules: &[RuleId],
    event: Option<&str>,
) -> Bytes {
    match on_block {
        OnBlock::Decline => {
            Bytes::from(json!({"jsonrpc":"2.0","id":id,"result":{"action":"decline"}}).to_string())
        }
        OnBlock::Error => with_event(
            ErrorObject::blocked(rules.iter().map(|r| r.as_str())),
            event,
        )
        .with_code(codes::INVALID_PARAMS)
        .response(Some(id)),
    }
}

/// A block's error that says which audit event recorded it, in `data.event_id` and in the
/// message (clients show the message, rarely `data`), with the rules.
fn with_event(error: ErrorObject, event: Option<&str>) -> ErrorObject {
    match event {
        Some(event) => error.with_event(event),
        None => error,
    }
}

/// The gateway's own answer to a server whose legacy elicitation it stopped tracking
/// (`reason`: expired, evicted, cleared) before the user answered.
pub fn undeliverable(id: &Value, reason: &'static str) -> Bytes {
    ErrorObject::gateway(
        codes::INTERNAL_ERROR,
        "The user's answer did not reach the gateway in time",
        json!({ "reason": format!("elicitation_{reason}") }),
    )
    .response(Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(rules: &[RuleId]) -> Verdict {
        Verdict {
            denied_by: rules.to_vec(),
            ..Verdict::allow()
        }
    }

    fn parsed(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn every_kind_writes_one_json_rpc_error_for_its_id() {
        let raw = RawValue::from_string("7".into()).unwrap();
        let cases = [
            (Refusal::unreadable(Some(&*raw), "json.number"), -32600, "7"),
            (
                Refusal::encoding(None::<&RawValue>, "charset"),
                -32600,
                "null",
            ),
            (
                Refusal::answer(Some(&json!("a")), &verdict(&[RuleId::ResponseInvalid])),
                -32602,
                "\"a\"",
            ),
            (
                Refusal::session(
                    Some(&*raw),
                    SessionRefusal::Mismatch,
                    &verdict(&[RuleId::SessionMismatch]),
                ),
                -32602,
                "7",
            ),
            (
                Refusal::server_content(Some(&*raw), &[RuleId::RequestMalformed], Some("json.nan")),
                -31042,
                "7",
            ),
        ];
        for (refusal, code, id) in cases {
            let message = parsed(&refusal.message());
            assert_eq!(message["jsonrpc"], "2.0");
            assert_eq!(message["error"]["code"], code, "{refusal:?}");
            assert_eq!(message["id"].to_string(), id);
            assert_eq!(message["error"]["data"]["gateway"], "elicitgate");
            assert!(!refusal.tell_server);
        }
    }

    #[test]
    fn refusals_name_their_rules_and_reasons() {
        let refusal = Refusal::answer_to_waiting_server(
            Some(&json!(3)),
            &verdict(&[RuleId::ResponseInvalid]),
        );
        assert!(refusal.tell_server);
        let message = parsed(&refusal.message());
        assert_eq!(
            message["error"]["data"]["rules"],
            json!(["response.invalid"])
        );
        let unreadable = parsed(&Refusal::unreadable(None::<&Value>, "jsonrpc.shape").message());
        assert_eq!(unreadable["error"]["data"]["reason"], "invalid_message");
        assert_eq!(unreadable["error"]["data"]["detail"], "jsonrpc.shape");
        let content = parsed(
            &Refusal::server_content(None::<&Value>, &[RuleId::RequestMalformed], Some("sse.x"))
                .message(),
        );
        assert_eq!(content["error"]["data"]["reason"], "sse.x");
        assert_eq!(
            content["error"]["data"]["rules"],
            json!(["request.malformed"])
        );
    }

    #[test]
    fn servers_get_a_decline_or_an_error_for_their_own_id() {
        let id = json!("srv-1");
        let decline = parsed(&to_server_blocked(OnBlock::Decline, &id, &[], None));
        assert_eq!(decline["result"]["action"], "decline");
        assert_eq!(decline["id"], "srv-1");
        let error = parsed(&to_server_blocked(
            OnBlock::Error,
            &id,
            &[RuleId::FormSecret],
            Some("3fa2c1"),
        ));
        assert_eq!(error["error"]["code"], -32602);
        // The block names its audit event, in `data` and in the message clients show.
        assert_eq!(error["error"]["data"]["event_id"], "3fa2c1");
        assert_eq!(
            error["error"]["message"],
            "Elicitation blocked by gateway policy (form.secret; audit event 3fa2c1)"
        );
        let late = parsed(&undeliverable(&id, "expired"));
        assert_eq!(late["error"]["data"]["reason"], "elicitation_expired");
        assert_eq!(late["id"], "srv-1");
    }
}
