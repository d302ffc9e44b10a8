//! The one place that turns the gateway's own answers into HTTP responses: failures
//! ([`GatewayError`]) and refusals ([`Rejection`], decided by enforcement). Each carries a
//! JSON-RPC error body (the one [`crate::mcp::jsonrpc::ErrorObject`] type) for the client's
//! request id when it is known.

use super::body::ResponseBody;
use crate::enforce::Rejection;
use crate::error::GatewayError;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::value::RawValue;

/// A failure, as an HTTP response with a JSON-RPC error body.
pub fn error(error: &GatewayError, id: Option<&RawValue>) -> Response<ResponseBody> {
    json(error.status(), error.error_object().response(id))
}

/// A refusal, as an HTTP response.
pub fn rejection(rejection: Rejection) -> Response<ResponseBody> {
    json(rejection.status, rejection.body)
}

/// A request that had to prove an identity and did not: 401 with the `WWW-Authenticate`
/// challenge (MCP authorization: the gateway is the resource server).
pub fn unauthenticated(
    refused: &crate::identity::Unauthenticated,
    id: Option<&RawValue>,
) -> Response<ResponseBody> {
    let error = crate::mcp::jsonrpc::ErrorObject::gateway(
        crate::mcp::jsonrpc::codes::UNAUTHENTICATED,
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
