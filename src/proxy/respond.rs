//! The one place that turns the gateway's own answers into HTTP responses: failures
//! ([`GatewayError`]), refusals ([`Refusal`], decided by enforcement, carrier-neutral) and
//! missing identity. Each carries a JSON-RPC error body (the one
//! [`elicitgate_core::mcp::jsonrpc::ErrorObject`] type) for the client's request id when it is
//! known; this module adds only the HTTP status ([`refusal_status`]: docs/security-model.md's
//! "Refusals on the wire" table).

use super::body::ResponseBody;
use crate::enforce::{Refusal, RefusalKind, SessionRefusal};
use crate::error::GatewayError;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::value::RawValue;

/// A failure, as an HTTP response with a JSON-RPC error body.
pub fn error(error: &GatewayError, id: Option<&RawValue>) -> Response<ResponseBody> {
    json(error.status(), error.error_object().response(id))
}

/// A refusal, as an HTTP response.
pub fn refusal(refusal: &Refusal) -> Response<ResponseBody> {
    json(refusal_status(refusal), refusal.message())
}

/// The HTTP status each refusal travels with. Blocked server content goes out as 200 when it
/// answers the client's request (every SDK then surfaces the JSON-RPC error), 502 when there is
/// no request to answer.
pub fn refusal_status(refusal: &Refusal) -> StatusCode {
    match &refusal.kind {
        RefusalKind::Unreadable { .. } | RefusalKind::Answer { .. } => StatusCode::BAD_REQUEST,
        RefusalKind::Encoding { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        RefusalKind::Session { why, .. } => match why {
            SessionRefusal::Mismatch => StatusCode::FORBIDDEN,
            SessionRefusal::Unknown => StatusCode::NOT_FOUND,
            SessionRefusal::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        },
        RefusalKind::ServerContent { .. } if refusal.id.is_none() => StatusCode::BAD_GATEWAY,
        RefusalKind::ServerContent { .. } => StatusCode::OK,
    }
}

/// A request that had to prove an identity and did not: 401 with the `WWW-Authenticate`
/// challenge (MCP authorization: the gateway is the resource server).
pub fn unauthenticated(
    refused: &crate::identity::Unauthenticated,
    id: Option<&RawValue>,
) -> Response<ResponseBody> {
    let error = elicitgate_core::mcp::jsonrpc::ErrorObject::gateway(
        elicitgate_core::mcp::jsonrpc::codes::UNAUTHENTICATED,
        "Authentication required",
        serde_json::json!({ "reason": refused.reason }),
    );
    let mut response = json(StatusCode::UNAUTHORIZED, error.response(id));
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, refused.challenge.clone());
    response
}

fn json(status: StatusCode, body: bytes::Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
