//! Response bodies the gateway sends to clients.
//!
//! Owns streaming: an upstream body is relayed frame by frame as it arrives (never collected),
//! an SSE body is relayed *event by event* through [`SseDecoder`] so that later stages can
//! judge whole events, and both are cut when the upstream goes silent for longer than the idle
//! timeout (for an event stream: no complete event, since the client sees nothing of an
//! unfinished one; a client still owed its response then gets the timeout error for it). Dropping a body (the client went away) drops the upstream body with it, which
//! closes the upstream connection and so cancels the upstream's work.
//!
//! The source is the upstream body as sent, or — when it had a content coding — the decoded
//! body ([`crate::mcp::decode`]); the client receives what the judge read, never the coded
//! bytes. At the end of an SSE stream the unfinished tail goes to the judge too (a client may
//! dispatch it).

use super::observe::{AccessLine, Observed};
use super::sse_judge::{Judging, Step, StreamJudge};
use super::upstream::UpstreamBody;
use crate::error::GatewayError;
use crate::mcp::decode::Decoded;
use bytes::Bytes;
use elicitgate_core::mcp::sse::SseDecoder;
use http_body::{Body, Frame, SizeHint};
use prometheus::{IntCounter, IntGauge};
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a relayed body was cut short by the gateway.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("upstream stream idle for longer than {0:?}")]
    Idle(Duration),
    #[error("upstream SSE event too large: {0}")]
    Sse(#[from] elicitgate_core::mcp::sse::SseError),
    #[error("upstream body failed: {0}")]
    Upstream(#[from] hyper::Error),
    #[error("upstream body could not be decoded: {0}")]
    Decode(#[from] std::io::Error),
}

/// Where a relayed body comes from.
pub enum Source {
    /// The upstream body as sent (identity coding).
    Plain(UpstreamBody),
    /// The upstream body with its content codings undone.
    Decoded(Decoded),
    /// Nothing more: the upstream body was dropped (and its connection closed) because the
    /// judge cut the stream.
    Gone,
}

impl Source {
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RelayError>>> {
        match self {
            Source::Plain(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(RelayError::from))),
            Source::Decoded(stream) => stream
                .as_mut()
                .poll_next(cx)
                .map(|c| c.map(|r| r.map(Frame::data).map_err(RelayError::from))),
            Source::Gone => Poll::Ready(None),
        }
    }

    /// Whether polling this source drives its upstream connection (see
    /// [`UpstreamBody::is_driven_here`]).
    fn is_driven_here(&self) -> bool {
        match self {
            Source::Plain(body) => body.is_driven_here(),
            Source::Decoded(_) | Source::Gone => false,
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Source::Plain(body) => body.is_end_stream(),
            Source::Decoded(_) => false,
            Source::Gone => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Source::Plain(body) => body.size_hint(),
            Source::Decoded(_) => SizeHint::default(),
            Source::Gone => SizeHint::with_exact(0),
        }
    }
}

/// Counters a relay updates; labelled for its route once, when the route is built.
#[derive(Clone)]
pub struct RelayMetrics {
    pub idle_timeouts: IntCounter,
    pub body_errors: IntCounter,
    pub sse_events: IntCounter,
    pub sse_open: IntGauge,
}

/// A body the gateway sends to a client.
pub enum ResponseBody {
    /// A body the gateway produced itself.
    Full(Option<Bytes>),
    /// An upstream body relayed as it arrives.
    Relay(Box<Relay>),
    /// Either, counted and closed by the request's access line and span
    /// ([`super::observe`]).
    Observed(Box<Observed<ResponseBody>>),
}

impl ResponseBody {
    /// `self` observed to its end (the access line, the request's span) when there is
    /// anything to observe; unchanged otherwise.
    pub fn observed(
        self,
        started: std::time::Instant,
        status: u16,
        access: Option<AccessLine>,
        trace: Option<opentelemetry::Context>,
    ) -> ResponseBody {
        if access.is_none() && trace.is_none() {
            return self;
        }
        ResponseBody::Observed(Box::new(Observed::new(
            self, started, status, access, trace,
        )))
    }
}

impl ResponseBody {
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }

    pub fn empty() -> Self {
        Self::Full(None)
    }
}

/// Relays an upstream body, with an idle timer and, for SSE, event framing.
pub struct Relay {
    /// The upstream body; its connection goes back to the idle cache when it has been read
    /// to its end, and is closed when it is dropped before.
    inner: Source,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    /// When the upstream last sent something; the idle timer is re-armed from it only when it
    /// fires, not on every frame.
    last_activity: Instant,
    sse: Option<SseDecoder>,
    /// Judges each SSE event (enforcement); `None` relays events unchanged.
    judge: Option<StreamJudge>,
    /// An event's judgment waiting for the state store; nothing else is read meanwhile, so
    /// events keep their order.
    judging: Option<Judging>,
    /// The judgment in flight is of the stream's tail: the stream closes after it.
    closing: bool,
    upstream_done: bool,
    /// This relay incremented the open-streams gauge and must decrement it on drop.
    counted_open: bool,
    metrics: RelayMetrics,
    /// What [`Relay::prime`] already took from the upstream, handed out first.
    ahead: Option<Option<Result<Frame<Bytes>, BoxError>>>,
    /// The last poll handed out data, which may still sit in the client connection's write
    /// buffer.
    handed_out: bool,
    /// An error held back for one turn (see [`Relay::poll_relay`]).
    held_error: Option<BoxError>,
}

/// What [`Relay::poll_relay`] hands out.
type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

impl Relay {
    /// `sse` = the largest event and the judge, for an event stream.
    pub fn new(
        inner: Source,
        idle_timeout: Duration,
        sse: Option<(usize, StreamJudge)>,
        metrics: RelayMetrics,
    ) -> Self {
        let (sse, judge) = match sse {
            Some((max, judge)) => (Some(SseDecoder::new(max)), Some(judge)),
            None => (None, None),
        };
        let counted_open = sse.is_some();
        if counted_open {
            metrics.sse_open.inc();
        }
        Self {
            inner,
            idle: Box::pin(tokio::time::sleep(idle_timeout)),
            idle_timeout,
            last_activity: Instant::now(),
            sse,
            judge,
            judging: None,
            closing: false,
            upstream_done: false,
            counted_open,
            metrics,
            ahead: None,
            handed_out: false,
            held_error: None,
        }
    }

    /// Takes what the upstream has already sent, without waiting for the upstream, so that
    /// the response head and the first event reach the client in one write instead of two.
    /// A plain-text upstream connection is driven by this poll itself (it has usually read
    /// the first event together with the response head); a pooled one runs in its own task,
    /// which gets one turn before a second poll.
    pub async fn prime(&mut self) {
        let turns = if self.inner.is_driven_here() { 1 } else { 2 };
        for attempt in 0..turns {
            if attempt > 0 {
                tokio::task::yield_now().await;
            }
            let polled = std::future::poll_fn(|cx| Poll::Ready(self.poll_relay(cx))).await;
            if let Poll::Ready(frame) = polled {
                self.ahead = Some(frame);
                return;
            }
        }
    }

    fn fail(&mut self, error: RelayError) -> Polled {
        match &error {
            RelayError::Idle(_) => self.metrics.idle_timeouts.inc(),
            RelayError::Sse(_) | RelayError::Upstream(_) | RelayError::Decode(_) => {
                self.metrics.body_errors.inc()
            }
        }
        tracing::warn!(error = %error, "Relayed stream cut.");
        self.upstream_done = true;
        self.sse = None;
        Poll::Ready(Some(Err(Box::new(error))))
    }

    /// The upstream was silent past the idle timeout. A client still waiting for its
    /// response gets the gateway's timeout error for it, and the stream ends cleanly; a stream
    /// that owes nothing (a GET stream) is cut.
    fn idle_cut(&mut self) -> Polled {
        let timeout = GatewayError::UpstreamTimeout {
            stage: "stream_idle_timeout",
        };
        let owed = self.judge.as_mut().and_then(|j| j.owe_failure(&timeout));
        let Some(owed) = owed else {
            return self.fail(RelayError::Idle(self.idle_timeout));
        };
        self.metrics.idle_timeouts.inc();
        tracing::warn!(timeout = %humantime::format_duration(self.idle_timeout), "Ended a stream whose upstream went silent; the client got a timeout error for its call.");
        self.upstream_done = true;
        self.sse = None;
        self.inner = Source::Gone;
        Poll::Ready(Some(Ok(Frame::data(owed))))
    }

    /// The next frame for the client. An error right after data is held back for one turn
    /// of the task: hyper drops what it has not written yet when a body fails, and the
    /// upstream connection, driven in this task, often delivers its last data and its reset
    /// together; the client gets what was judged before the stream is cut.
    fn poll_relay(&mut self, cx: &mut Context<'_>) -> Polled {
        if let Some(error) = self.held_error.take() {
            return Poll::Ready(Some(Err(error)));
        }
        let polled = self.poll_next_frame(cx);
        match polled {
            Poll::Ready(Some(Err(error))) if self.handed_out => {
                self.handed_out = false;
                self.held_error = Some(error);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            polled => {
                self.handed_out = matches!(polled, Poll::Ready(Some(Ok(_))));
                polled
            }
        }
    }

    fn poll_next_frame(&mut self, cx: &mut Context<'_>) -> Polled {
        if let Some(ahead) = self.ahead.take() {
            return Poll::Ready(ahead);
        }
        loop {
            if let Some(judging) = &mut self.judging {
                let outcome = ready!(judging.as_mut().poll(cx));
                self.judging = None;
                let Some(judge) = &mut self.judge else {
                    continue;
                };
                let judged = judge.resume(outcome);
                if judge.is_cut() && !self.upstream_done {
                    // The judgment ended the stream: nothing more of the upstream is read.
                    self.upstream_done = true;
                    self.inner = Source::Gone;
                }
                if self.closing {
                    self.closing = false;
                    self.sse = None;
                    let out = judge.closing(judged);
                    return Poll::Ready(out.map(|rest| Ok(Frame::data(rest))));
                }
                if let Some(event) = judged {
                    self.metrics.sse_events.inc();
                    return Poll::Ready(Some(Ok(Frame::data(event))));
                }
                continue;
            }
            if let Some(decoder) = &mut self.sse {
                match decoder.next_event() {
                    Ok(Some(event)) => {
                        // Activity on an event stream is a whole event: an event trickled
                        // byte by byte is silence to the client, which gets nothing of it
                        // until it is complete.
                        self.last_activity = Instant::now();
                        let judged = match &mut self.judge {
                            Some(judge) => {
                                let step = judge.judge_event(event);
                                if judge.is_cut() {
                                    // Nothing more of this upstream is read or judged; the
                                    // judge's end-of-stream answer goes out next.
                                    self.upstream_done = true;
                                    self.inner = Source::Gone;
                                }
                                match step {
                                    Step::Ready(judged) => judged,
                                    Step::Wait(judging) => {
                                        self.judging = Some(judging);
                                        continue;
                                    }
                                }
                            }
                            None => Some(event),
                        };
                        if let Some(event) = judged {
                            self.metrics.sse_events.inc();
                            return Poll::Ready(Some(Ok(Frame::data(event))));
                        }
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        // Past `limits.max_sse_event`: nothing more of the upstream is read, and
                        // a client still waiting for its response gets the blocked-content
                        // error for it (the bounds table's promise), not a silent cut.
                        let owed = self
                            .judge
                            .as_mut()
                            .and_then(|j| j.refuse_rest("body_too_large"));
                        if let Some(owed) = owed {
                            tracing::warn!(error = %e, "Ended a stream at an event over the bound.");
                            self.metrics.body_errors.inc();
                            self.upstream_done = true;
                            self.sse = None;
                            self.inner = Source::Gone;
                            return Poll::Ready(Some(Ok(Frame::data(owed))));
                        }
                        return self.fail(e.into());
                    }
                }
                if self.upstream_done {
                    // The upstream ended: what followed the last complete event is judged
                    // like an event (a client may still dispatch it), and the judge may owe
                    // the client an answer.
                    let cut = self.judge.as_ref().is_some_and(StreamJudge::is_cut);
                    let tail = if cut { None } else { decoder.finish() };
                    let Some(judge) = &mut self.judge else {
                        self.sse = None;
                        return Poll::Ready(tail.map(|rest| Ok(Frame::data(rest))));
                    };
                    let judged_tail = match judge.finish(tail) {
                        Some(Step::Wait(judging)) => {
                            self.judging = Some(judging);
                            self.closing = true;
                            continue;
                        }
                        Some(Step::Ready(judged)) => judged,
                        None => None,
                    };
                    self.sse = None;
                    let out = judge.closing(judged_tail);
                    return Poll::Ready(out.map(|rest| Ok(Frame::data(rest))));
                }
            } else if self.upstream_done {
                return Poll::Ready(None);
            }
            match self.inner.poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if self.sse.is_none() {
                        self.last_activity = Instant::now();
                    }
                    match (&mut self.sse, frame.into_data()) {
                        (Some(decoder), Ok(data)) => decoder.push_bytes(data),
                        (None, Ok(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                        (_, Err(frame)) => return Poll::Ready(Some(Ok(frame))),
                    }
                }
                Poll::Ready(Some(Err(e))) => return self.fail(e),
                Poll::Ready(None) => self.upstream_done = true,
                Poll::Pending => loop {
                    ready!(self.idle.as_mut().poll(cx));
                    let Some(deadline) = self.last_activity.checked_add(self.idle_timeout) else {
                        // An idle timeout too long to represent: never cut the stream.
                        return Poll::Pending;
                    };
                    if Instant::now() >= deadline {
                        return self.idle_cut();
                    }
                    self.idle.as_mut().reset(deadline);
                },
            }
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if self.counted_open {
            self.metrics.sse_open.dec();
        }
        if !self.upstream_done {
            // Dropped before the upstream ended: the client went away.
            if let Some(judge) = &mut self.judge {
                judge.client_gone();
            }
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            ResponseBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            ResponseBody::Relay(relay) => relay.poll_relay(cx),
            ResponseBody::Observed(observed) => observed.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(data) => data.is_none(),
            // The stream is being cut: its end is the error, not a clean end.
            ResponseBody::Relay(relay) if relay.held_error.is_some() => false,
            ResponseBody::Relay(relay) => match (&relay.ahead, &relay.sse) {
                (Some(ahead), _) => ahead.is_none(),
                // A judged stream may still owe the client its end (a judgment in flight, the
                // blocked-content error of `closing`): its end is the poll that returns None.
                (None, Some(decoder)) => {
                    relay.upstream_done
                        && decoder.buffered() == 0
                        && relay.judge.is_none()
                        && relay.judging.is_none()
                }
                (None, None) => relay.upstream_done || relay.inner.is_end_stream(),
            },
            ResponseBody::Observed(observed) => observed.inner().is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(Some(d)) => SizeHint::with_exact(d.len() as u64),
            ResponseBody::Full(None) => SizeHint::with_exact(0),
            ResponseBody::Relay(relay) if relay.sse.is_none() && relay.ahead.is_none() => {
                relay.inner.size_hint()
            }
            ResponseBody::Relay(_) => SizeHint::default(),
            ResponseBody::Observed(observed) => observed.inner().size_hint(),
        }
    }
}
