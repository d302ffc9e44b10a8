//! The HTTP side of "answer the server": when enforcement blocks a legacy elicitation (or stops
//! waiting for one), the gateway POSTs its own JSON-RPC answer to the upstream in the client's
//! session (same session, protocol version and credentials headers), in the background.
//!
//! Bounded: at most [`AnswerLimit::IN_FLIGHT`] answers per route and worker are on the wire
//! at once (they reuse the route's idle upstream connections instead of opening one each),
//! and at most [`AnswerLimit::WAITING`] wait for a turn; past that an answer is dropped and
//! counted as failed. Together with `limits.max_elicitations_per_response` this keeps a
//! hostile server from making the gateway open thousands of sockets.

use super::upstream::Upstream;
use crate::enforce::judge::AnswerServer;
use crate::enforce::record::Recorder;
use crate::enforce::Exchange;
use bytes::Bytes;
use http::{HeaderMap, Request};
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

/// Answers through a route's upstream client.
pub struct HttpAnswer(pub Upstream, pub AnswerLimit);

impl AnswerServer for HttpAnswer {
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &Recorder) {
        let limit = &self.1;
        if limit.queued.fetch_add(1, Ordering::Relaxed) >= AnswerLimit::WAITING {
            limit.queued.fetch_sub(1, Ordering::Relaxed);
            tracing::warn!(route = %ex.route_name(), "Dropped one of the gateway's own answers: too many queued.");
            recorder.gateway_answer(ex.route_name(), false);
            return;
        }
        let queued = Queued(limit.queued.clone());
        let turns = limit.turns.clone();
        let upstream = self.0.clone();
        let uri = ex.upstream_uri().clone();
        let headers: HeaderMap = ex.answer_headers().to_map();
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

impl crate::enforce::judge::EndpointRewrite for super::EndpointMap {
    fn map(&self, announced: &str) -> Option<(String, String)> {
        super::EndpointMap::map(self, announced)
    }
}
