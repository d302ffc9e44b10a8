//! The gateway's one failure type on the request path.
//!
//! Every failure on the request path is a [`GatewayError`]. Each variant knows who caused it
//! ([`Fault`]), its bounded metric [`GatewayError::reason`], its HTTP status and its JSON-RPC
//! error ([`GatewayError::error_object`], built from the one error type in
//! [`elicitgate_core::mcp::jsonrpc`]). `proxy::respond` is the only place that turns it into a
//! response; client-facing messages never carry upstream internals or message content.

use elicitgate_core::mcp::jsonrpc::{codes, ErrorObject};
use http::StatusCode;

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
    /// The request path has dot segments or encoded separators: routed by prefix, it could
    /// reach an upstream path no route exposes.
    #[error("the request path has dot segments or encoded separators")]
    RequestTarget,
    /// The request body is larger than `limits.max_request_body`.
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge { limit: u64 },
    /// Reading the request body from the client failed.
    #[error("failed to read the request body")]
    ClientBody(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The client paused longer than `timeouts.request_body_idle` between two pieces of its
    /// body, or took longer than `timeouts.request_body` for all of it.
    #[error("request body not received in time ({stage})")]
    BodyTimeout { stage: &'static str },
    /// The process-wide budget for buffered bodies (`limits.request_buffer_budget`) is spent:
    /// the request is refused at once rather than queued behind stalled peers.
    #[error("the gateway is busy; retry later")]
    Overloaded,
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
            Self::NoRoute
            | Self::RequestTarget
            | Self::BodyTooLarge { .. }
            | Self::ClientBody(_)
            | Self::BodyTimeout { .. } => Fault::Client,
            Self::Overloaded => Fault::Gateway,
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
            Self::RequestTarget => "request_target",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::ClientBody(_) => "client_body",
            Self::BodyTimeout { stage } => stage,
            Self::Overloaded => "buffer_budget",
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
            Self::RequestTarget => StatusCode::BAD_REQUEST,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::ClientBody(_) => StatusCode::BAD_REQUEST,
            Self::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
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
            Self::NoRoute
            | Self::RequestTarget
            | Self::BodyTooLarge { .. }
            | Self::ClientBody(_)
            | Self::BodyTimeout { .. } => codes::INVALID_REQUEST,
            Self::Overloaded => codes::INTERNAL_ERROR,
            Self::UpstreamConnect(_)
            | Self::UpstreamTimeout { .. }
            | Self::Upstream(_)
            | Self::ResponseTooLarge { .. }
            | Self::UpstreamBody
            | Self::BadUpstreamRequest(_) => codes::INTERNAL_ERROR,
        }
    }

    /// The JSON-RPC error a client receives for this failure.
    pub fn error_object(&self) -> ErrorObject {
        ErrorObject::gateway(
            self.jsonrpc_code(),
            self.to_string(),
            serde_json::json!({ "reason": self.reason() }),
        )
    }
}
