//! Request tracing: where a request's trace continues from, its server span, the upstream
//! client span whose W3C `traceparent` goes to the upstream, and span events for elicitation
//! decisions (verdict, mode and rule ids only — never values).
//!
//! The incoming context is the message's `params._meta.traceparent` (and `tracestate`) when
//! it carries a valid one — an MCP client's own trace, which survives hops that are not
//! HTTP — else the HTTP `traceparent` header. Decisions find their span through the current
//! OpenTelemetry context, which the proxy attaches while it works on a request and while it
//! relays the request's response body.

use bytes::Bytes;
use http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracer;
use std::collections::HashMap;
use std::time::SystemTime;

/// The context a request continues: `params._meta` first, then the headers.
pub fn parent(headers: &HeaderMap, body: &Bytes) -> Context {
    from_meta(body).unwrap_or_else(|| from_headers(headers))
}

/// The context the `traceparent` / `tracestate` headers carry (empty when none is valid).
pub fn from_headers(headers: &HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

/// The context `params._meta` carries, when it has a valid `traceparent`.
pub fn from_meta(body: &Bytes) -> Option<Context> {
    let cx = TraceContextPropagator::new().extract(&meta_carrier(body)?);
    cx.span().span_context().is_valid().then_some(cx)
}

/// `params._meta.traceparent` / `tracestate` of a JSON-RPC message, when present as strings.
fn meta_carrier(body: &[u8]) -> Option<HashMap<String, String>> {
    // Most messages carry none: skip the parse unless the name occurs at all.
    memchr::memmem::find(body, b"traceparent")?;
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let meta = message.get("params")?.get("_meta")?.as_object()?;
    let mut carrier = HashMap::new();
    for key in ["traceparent", "tracestate"] {
        if let Some(value) = meta.get(key).and_then(|v| v.as_str()) {
            carrier.insert(key.to_owned(), value.to_owned());
        }
    }
    Some(carrier)
}

/// Starts the server span of a request that arrived at `started`.
pub fn server_span(
    tracer: &SdkTracer,
    parent: &Context,
    name: String,
    started: SystemTime,
    attributes: Vec<KeyValue>,
) -> Context {
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_start_time(started)
        .with_attributes(attributes)
        .start_with_context(tracer, parent);
    parent.with_span(span)
}

/// Starts the client span of the upstream exchange under `cx`, and writes its
/// `traceparent` (and `tracestate`) into the upstream request's `headers`.
pub fn upstream_span(
    tracer: &SdkTracer,
    cx: &Context,
    http_method: &str,
    upstream: &str,
    headers: &mut HeaderMap,
) -> Context {
    let span = tracer
        .span_builder(format!("{http_method} upstream"))
        .with_kind(SpanKind::Client)
        .with_attributes([
            KeyValue::new("http.request.method", http_method.to_owned()),
            KeyValue::new("server.address", upstream.to_owned()),
        ])
        .start_with_context(tracer, cx);
    let upstream_cx = cx.with_span(span);
    TraceContextPropagator::new().inject_context(&upstream_cx, &mut HeaderInjector(headers));
    upstream_cx
}

/// Ends `cx`'s span with the HTTP status it answered (an error status from 500 on, as
/// OpenTelemetry's HTTP conventions say for servers and clients alike).
pub fn end_with_status(cx: &Context, status: u16) {
    let span = cx.span();
    span.set_attribute(KeyValue::new(
        "http.response.status_code",
        i64::from(status),
    ));
    if status >= 500 {
        span.set_status(Status::error(""));
    }
    span.end();
}

/// Ends `cx`'s span as failed without a response (upstream unreachable, timed out).
pub fn end_failed(cx: &Context, reason: &'static str) {
    let span = cx.span();
    span.set_attribute(KeyValue::new("error.type", reason));
    span.set_status(Status::error(reason));
    span.end();
}

/// Adds an `elicitation.verdict` event to the current span, if one is being recorded.
pub fn verdict_event(verdict: &'static str, mode: &'static str, rules: &[&'static str]) {
    Context::map_current(|cx| {
        let span = cx.span();
        if !span.is_recording() {
            return;
        }
        let rules: Vec<StringValue> = rules.iter().map(|r| StringValue::from(*r)).collect();
        span.add_event(
            "elicitation.verdict",
            vec![
                KeyValue::new("elicitgate.verdict", verdict),
                KeyValue::new("elicitgate.mode", mode),
                KeyValue::new("elicitgate.rules", Value::Array(Array::String(rules))),
            ],
        );
    });
}

/// A duration in milliseconds for logs, rounded to the microsecond (`1.234`, not
/// `1.2340000000000002`).
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const TP2: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn trace_id(cx: &Context) -> String {
        cx.span().span_context().trace_id().to_string()
    }

    #[test]
    fn meta_wins_over_the_header_and_invalid_meta_falls_back() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", TP2.parse().unwrap());
        let body = Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"traceparent":"{TP}"}}}}}}"#
        ));
        assert_eq!(
            trace_id(&parent(&headers, &body)),
            "0af7651916cd43dd8448eb211c80319c"
        );
        let bad = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"traceparent":"zz"}}}"#,
        );
        assert_eq!(
            trace_id(&parent(&headers, &bad)),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        let none = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#);
        assert_eq!(
            trace_id(&parent(&headers, &none)),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(!parent(&HeaderMap::new(), &none)
            .span()
            .span_context()
            .is_valid());
    }
}
