//! What is observed of one request beyond its metrics: the access log line and the request's
//! trace span, both finished when the response body has been sent (or abandoned), so the
//! duration and byte count cover a streamed response to its end.
//!
//! Owns the [`Trail`] a request leaves as it goes through the pipeline and the response body
//! wrapper that closes it. Nothing here reads bodies beyond counting their bytes; an access
//! line holds labels, sizes, times and addresses, never bodies, headers or credentials. With
//! neither `log.access` nor traces on, responses are not wrapped at all.

use super::request_metrics::HttpMethod;
use crate::spans as otel;
use bytes::Bytes;
use elicitgate_core::mcp::jsonrpc::Envelope;
use http_body::{Body, Frame};
use opentelemetry::trace::TraceContextExt;
use opentelemetry::Context;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Instant, SystemTime};

/// What the pipeline learns about a request as it goes.
pub struct Trail {
    pub started: Instant,
    /// The request's id: in its access-log line and in every audit event it causes.
    pub request_id: Arc<str>,
    /// Wall-clock arrival, for the span's start time (traced requests only).
    pub arrived: SystemTime,
    /// The request's JSON-RPC envelope (once peeked).
    pub envelope: Envelope,
    /// Bytes of the client's request body (once read).
    pub request_bytes: usize,
    /// The context the request's headers carry (traced requests only).
    pub parent: Option<Context>,
    /// The server span's context, once started.
    pub trace: Option<Context>,
}

/// A process-unique request id: 8 random hex digits fixed at start (distinct across
/// replicas and restarts) and a counter, 16 hex digits in all. Cheaper than a UUID per
/// request, and unique where it matters: within one process's logs and audit.
fn next_request_id() -> Arc<str> {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        let bytes = uuid::Uuid::new_v4().into_bytes();
        u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    });
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Hex digits written by hand: `format!` costs a tenth of a plain request's own work.
    let mut hex = [0u8; 16];
    let word = (u64::from(prefix) << 32) | u64::from(n);
    for (i, b) in hex.iter_mut().enumerate() {
        let nibble = (word >> (60 - 4 * i)) & 0xf;
        *b = b"0123456789abcdef"[nibble as usize];
    }
    Arc::from(std::str::from_utf8(&hex).unwrap_or_default())
}

impl Trail {
    /// A request that arrived at `started`; the wall clock is read only for a `traced` one.
    pub fn new(started: Instant, traced: bool) -> Self {
        Self {
            started,
            request_id: next_request_id(),
            arrived: if traced {
                SystemTime::now()
            } else {
                SystemTime::UNIX_EPOCH
            },
            envelope: Envelope::default(),
            request_bytes: 0,
            parent: None,
            trace: None,
        }
    }
}

/// One access log line's facts, known when the response head is.
pub struct AccessLine {
    pub request_id: Arc<str>,
    pub route: std::sync::Arc<str>,
    pub http_method: HttpMethod,
    pub mcp_method: &'static str,
    pub status: u16,
    pub upstream: Option<std::sync::Arc<str>>,
    pub client: std::net::IpAddr,
    pub request_bytes: usize,
    pub head_ms: f64,
}

/// A response body that counts what it sends and, when it ends or is dropped, writes the
/// access line and ends the request's span. Generic over the body it wraps, so that the
/// response body type (`body::ResponseBody`, which holds one of these) is not needed here.
pub struct Observed<B: Body> {
    inner: B,
    started: Instant,
    sent: u64,
    ended: bool,
    status: u16,
    access: Option<AccessLine>,
    trace: Option<Context>,
}

impl<B: Body<Data = Bytes> + Unpin> Observed<B> {
    /// Observes `inner`; `access` and `trace` say what to finish when it ends.
    pub fn new(
        inner: B,
        started: Instant,
        status: u16,
        access: Option<AccessLine>,
        trace: Option<Context>,
    ) -> Self {
        Self {
            inner,
            started,
            sent: 0,
            ended: false,
            status,
            access,
            trace,
        }
    }

    pub fn poll_frame(
        &mut self,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        // Decisions made while the body is relayed (SSE events judged) belong to this
        // request's span.
        let _attached = self.trace.clone().map(Context::attach);
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.sent += data.len() as u64;
                }
            }
            Poll::Ready(None) => self.ended = true,
            _ => {}
        }
        polled
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }
}

impl<B: Body> Drop for Observed<B> {
    fn drop(&mut self) {
        let complete = self.ended || self.inner.is_end_stream();
        if let Some(line) = &self.access {
            let trace_id = self
                .trace
                .as_ref()
                .map(|cx| cx.span().span_context().trace_id().to_string());
            tracing::info!(
                target: "elicitgate::access",
                request_id = %line.request_id,
                route = %line.route,
                http_method = line.http_method.label(),
                mcp_method = line.mcp_method,
                status = line.status,
                duration_ms = otel::millis(self.started.elapsed()),
                head_ms = line.head_ms,
                upstream = line.upstream.as_deref().unwrap_or("-"),
                client = %line.client,
                request_bytes = line.request_bytes,
                response_bytes = self.sent,
                complete,
                trace_id = trace_id.as_deref().unwrap_or("-"),
                "request"
            );
        }
        if let Some(cx) = &self.trace {
            if !complete {
                cx.span().set_attribute(opentelemetry::KeyValue::new(
                    "elicitgate.response_complete",
                    false,
                ));
            }
            otel::end_with_status(cx, self.status);
        }
    }
}
