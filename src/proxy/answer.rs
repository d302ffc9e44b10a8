//! The HTTP side of "answer the server": when enforcement blocks a legacy elicitation (or stops
//! waiting for one), the gateway POSTs its own JSON-RPC answer to the upstream in the client's
//! session (same session, protocol version and credentials headers), in the background. Where
//! it goes and with which headers is this transport's own business: an [`HttpAnswer`] is made
//! per exchange from the client request ([`HttpAnswer::new`]), and re-aimed when an HTTP+SSE
//! server announces its POST endpoint ([`HttpAnswer::to`]).
//!
//! Bounded: at most [`AnswerLimit::IN_FLIGHT`] answers per route and worker are on the wire
//! at once (they reuse the route's idle upstream connections instead of opening one each),
//! and at most [`AnswerLimit::WAITING`] wait for a turn; past that an answer is dropped and
//! counted as failed. Together with `limits.max_elicitations_per_response` this keeps a
//! hostile server from making the gateway open thousands of sockets.

use super::upstream::Upstream;
use super::Route;
use crate::enforce::judge::AnswerServer;
use crate::enforce::record::Recorder;
use crate::enforce::Exchange;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Uri};
use http_body_util::Full;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// How many of the gateway's own answers one route (per worker) sends and queues at once.
#[derive(Clone)]
pub struct AnswerLimit {
    turns: Arc<Semaphore>,
    /// Answers spawned and not finished (waiting for a turn or on the wire).
    queued: Arc<AtomicUsize>,
}

impl AnswerLimit {
    /// Answers on the wire at once.
    pub const IN_FLIGHT: usize = 16;
    /// Answers waiting or on the wire before new ones are dropped.
    pub const WAITING: usize = 1024;

    pub fn new() -> Self {
        Self {
            turns: Arc::new(Semaphore::new(Self::IN_FLIGHT)),
            queued: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Answers currently queued or in flight.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

impl Default for AnswerLimit {
    fn default() -> Self {
        Self::new()
    }
}

/// Decrements the queue count when an answer task ends, however it ends.
struct Queued(Arc<AtomicUsize>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Request headers the gateway repeats when it answers the server on the client's behalf.
const ANSWER_HEADERS: [HeaderName; 4] = [
    HeaderName::from_static("mcp-session-id"),
    HeaderName::from_static("mcp-protocol-version"),
    http::header::AUTHORIZATION,
    http::header::COOKIE,
];

/// Answers one exchange's server through its route's upstream client.
#[derive(Clone)]
pub struct HttpAnswer {
    upstream: Upstream,
    limit: AnswerLimit,
    /// Where the answers go: the client request's upstream URI, or the endpoint an HTTP+SSE
    /// server announced.
    uri: Uri,
    /// The client request's session, protocol version and credentials headers (kept without
    /// a map: they are needed only on the rare path where the gateway answers).
    repeated: [Option<HeaderValue>; 4],
}

impl HttpAnswer {
    /// Answers for a client request to `uri` with `headers`, through `route`'s upstream.
    pub fn new(route: &Route, uri: Uri, headers: &HeaderMap) -> Self {
        Self {
            upstream: route.upstream.clone(),
            limit: route.answers.clone(),
            uri,
            repeated: std::array::from_fn(|i| headers.get(&ANSWER_HEADERS[i]).cloned()),
        }
    }

    /// The same answers, sent to `uri` instead.
    pub fn to(&self, uri: Uri) -> Self {
        Self {
            uri,
            ..self.clone()
        }
    }

    /// The headers of an answer POST.
    fn headers(&self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(ANSWER_HEADERS.len() + 2);
        for (name, value) in ANSWER_HEADERS.iter().zip(&self.repeated) {
            if let Some(v) = value {
                map.insert(name.clone(), v.clone());
            }
        }
        map.insert("content-type", HeaderValue::from_static("application/json"));
        map.insert(
            "accept",
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map
    }
}

impl AnswerServer for HttpAnswer {
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &Recorder) {
        let limit = &self.limit;
        if limit.queued.fetch_add(1, Ordering::Relaxed) >= AnswerLimit::WAITING {
            limit.queued.fetch_sub(1, Ordering::Relaxed);
            tracing::warn!(route = %ex.route_name(), "Dropped one of the gateway's own answers: too many queued.");
            recorder.gateway_answer(ex.route_name(), false);
            return;
        }
        let queued = Queued(limit.queued.clone());
        let turns = limit.turns.clone();
        let upstream = self.upstream.clone();
        let uri = self.uri.clone();
        let headers = self.headers();
        let recorder = recorder.clone();
        let route = ex.route_name().clone();
        tokio::spawn(async move {
            let _queued = queued;
            let Ok(_turn) = turns.acquire_owned().await else {
                return;
            };
            let mut request = match Request::post(uri).body(Full::new(body)) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "Could not build the gateway's answer.");
                    return;
                }
            };
            *request.headers_mut() = headers;
            let ok = match upstream.send(request).await {
                Ok(response) => {
                    let status = response.status();
                    // Read to its end (bounded in bytes and time), the body gives the
                    // connection back.
                    response.into_body().discard().await;
                    status.is_success()
                }
                Err(e) => {
                    tracing::warn!(route = %route, error = %e, "The server did not take the gateway's answer.");
                    false
                }
            };
            recorder.gateway_answer(&route, ok);
        });
    }
}
