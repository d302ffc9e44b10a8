//! The gateway's one error type and the one place that turns it into a wire response.
//!
//! Every failure on the request path is a [`GatewayError`]. Each variant knows who caused it
//! ([`Fault`]), its bounded metric [`GatewayError::reason`], its HTTP status and its JSON-RPC
//! code. [`GatewayError::into_response`] is the only function that builds an error response;
//! client-facing messages never carry upstream internals or message content.

use crate::proxy::body::ResponseBody;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::value::RawValue;

/// Who is at fault for an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Client,
    Upstream,
    Gateway,
}

/// A failure while serving one request.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No configured route's path is a prefix of the request path.
    #[error("no route for this path")]
    NoRoute,
    /// The request body is larger than `limits.max_request_body`.
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge { limit: u64 },
    /// Reading the request body from the client failed.
    #[error("failed to read the request body")]
    ClientBody(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The upstream refused or could not be reached.
    #[error("upstream unavailable")]
    UpstreamConnect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The upstream did not connect or answer within the configured timeout.
    #[error("upstream timed out ({stage})")]
    UpstreamTimeout { stage: &'static str },
    /// The upstream connection failed after it was established.
    #[error("upstream request failed")]
    Upstream(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A JSON response too large to read whole for inspection (fail closed).
    #[error("upstream response exceeds {limit} bytes")]
    ResponseTooLarge { limit: u64 },
    /// Reading a JSON response from the upstream failed.
    #[error("upstream response body failed")]
    UpstreamBody,
    /// The gateway could not build the upstream request (a bug or an unrepresentable URI).
    #[error("could not build the upstream request")]
    BadUpstreamRequest(#[source] http::Error),
}

impl GatewayError {
    pub fn fault(&self) -> Fault {
        match self {
            Self::NoRoute | Self::BodyTooLarge { .. } | Self::ClientBody(_) => Fault::Client,
            Self::UpstreamConnect(_)
            | Self::UpstreamTimeout { .. }
            | Self::Upstream(_)
            | Self::ResponseTooLarge { .. }
            | Self::UpstreamBody => Fault::Upstream,
            Self::BadUpstreamRequest(_) => Fault::Gateway,
        }
    }

    /// Bounded label for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NoRoute => "no_route",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::ClientBody(_) => "client_body",
            Self::UpstreamConnect(_) => "connect",
            Self::UpstreamTimeout { stage } => stage,
            Self::Upstream(_) => "protocol",
            Self::ResponseTooLarge { .. } => "response_too_large",
            Self::UpstreamBody => "body",
            Self::BadUpstreamRequest(_) => "bad_request",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::NoRoute => StatusCode::NOT_FOUND,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::ClientBody(_) => StatusCode::BAD_REQUEST,
            Self::UpstreamConnect(_)
            | Self::Upstream(_)
            | Self::ResponseTooLarge { .. }
            | Self::UpstreamBody => StatusCode::BAD_GATEWAY,
            Self::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::BadUpstreamRequest(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// JSON-RPC error code. Standard codes only: -32020…-32099 is reserved to the MCP
    /// specification and must not be invented by intermediaries.
    pub fn jsonrpc_code(&self) -> i64 {
        match self {
            Self::NoRoute | Self::BodyTooLarge { .. } | Self::ClientBody(_) => -32600,
            Self::UpstreamConnect(_)
            | Self::UpstreamTimeout { .. }
            | Self::Upstream(_)
            | Self::ResponseTooLarge { .. }
            | Self::UpstreamBody
            | Self::BadUpstreamRequest(_) => -32603,
        }
    }

    /// The one error-to-response mapping: an HTTP status with a JSON-RPC error body carrying
    /// the client's request id when it is known (`null` otherwise).
    pub fn into_response(self, id: Option<&RawValue>) -> Response<ResponseBody> {
        let body = jsonrpc_error_body(
            id,
            self.jsonrpc_code(),
            &self.to_string(),
            &serde_json::json!({ "gateway": "elicitgate", "reason": self.reason() }),
        );
        let mut response = Response::new(ResponseBody::full(body));
        *response.status_mut() = self.status();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// Serialises a JSON-RPC error object. `id` is echoed verbatim (it was parsed from the
/// client's own message), or `null`.
pub fn jsonrpc_error_body(
    id: Option<&RawValue>,
    code: i64,
    message: &str,
    data: &serde_json::Value,
) -> Bytes {
    let id = id.map(RawValue::get).unwrap_or("null");
    let rest = serde_json::json!({ "code": code, "message": message, "data": data });
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{rest}}}"
    ))
}
