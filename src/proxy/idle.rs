//! Idle client connections: a connection with no request in flight (a streaming response
//! counts as in flight until its body ends) for longer than `timeouts.client_idle` is closed
//! gracefully. hyper closes idle HTTP/1.1 keep-alive connections through its header-read
//! timeout, but an HTTP/2 connection with no open stream is never closed by hyper itself, so
//! without this a peer could hold connections (and their permits) forever. A graceful close
//! the peer never lets finish (an HTTP/2 peer that sent its preface and SETTINGS and then
//! nothing never acknowledges the GOAWAY exchange) is cut another `client_idle` later: every
//! phase of a connection has a deadline.
//!
//! Owns per-connection activity counting ([`Activity`], [`Active`], [`Tracked`]) and the
//! watcher that starts the graceful close ([`Idle`]); never request content.

use super::drain::Drainable;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Requests in flight on one connection, and when the last one ended.
#[derive(Debug)]
pub struct Activity {
    active: AtomicUsize,
    /// Milliseconds after `origin` at which the connection last became idle.
    idle_since_ms: AtomicU64,
    origin: Instant,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            active: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            origin: Instant::now(),
        })
    }

    /// Marks one request in flight until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Active {
        self.active.fetch_add(1, Ordering::AcqRel);
        Active(self.clone())
    }

    fn idle_since(&self) -> Option<Instant> {
        (self.active.load(Ordering::Acquire) == 0).then(|| {
            self.origin + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire))
        })
    }
}

/// One request in flight.
#[derive(Debug)]
pub struct Active(Arc<Activity>);

impl Drop for Active {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.idle_since_ms.store(ms, Ordering::Release);
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request counted as in flight until it ends or is dropped.
    pub struct Tracked<B> {
        #[pin]
        body: B,
        active: Option<Active>,
    }
}

impl<B> Tracked<B> {
    pub fn new(body: B, active: Active) -> Self {
        Self {
            body,
            active: Some(active),
        }
    }
}

impl<B: Body<Data = Bytes>> Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let polled = this.body.poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            this.active.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// A connection closed gracefully once it has been idle for `timeout`.
    pub struct Idle<C> {
        #[pin]
        conn: C,
        activity: Arc<Activity>,
        timeout: Duration,
        timer: Pin<Box<Sleep>>,
        closing: bool,
        // Set when the idle close starts: past it the connection is dropped.
        cut_at: Option<Pin<Box<Sleep>>>,
    }
}

impl<C> Idle<C> {
    pub fn new(conn: C, activity: Arc<Activity>, timeout: Duration) -> Self {
        Self {
            conn,
            timer: Box::pin(tokio::time::sleep(timeout)),
            activity,
            timeout,
            closing: false,
            cut_at: None,
        }
    }
}

impl<C: Drainable> Future for Idle<C> {
    /// What the connection ended with; `None` when it was cut, its graceful close unfinished.
    type Output = Option<C::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<C::Output>> {
        let mut this = self.project();
        if let Poll::Ready(out) = this.conn.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if let Some(cut_at) = this.cut_at.as_mut() {
            return cut_at.as_mut().poll(cx).map(|()| None);
        }
        while !*this.closing && this.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            match this.activity.idle_since() {
                Some(since) if now.duration_since(since) >= *this.timeout => {
                    *this.closing = true;
                    this.conn.as_mut().start_draining();
                    let mut cut_at = Box::pin(tokio::time::sleep(*this.timeout));
                    // Registers the deadline's waker; the connection may finish at once.
                    let _ = cut_at.as_mut().poll(cx);
                    *this.cut_at = Some(cut_at);
                    return this.conn.poll(cx).map(Some);
                }
                Some(since) => this.timer.as_mut().reset(since + *this.timeout),
                // Busy: look again a whole timeout later.
                None => this.timer.as_mut().reset(now + *this.timeout),
            }
        }
        Poll::Pending
    }
}

impl<C: Drainable> Drainable for Idle<C> {
    fn start_draining(self: Pin<&mut Self>) {
        let this = self.project();
        if !*this.closing {
            *this.closing = true;
            this.conn.start_draining();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Conn {
        asked: bool,
    }

    impl Future for Conn {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.asked {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Drainable for Conn {
        fn start_draining(mut self: Pin<&mut Self>) {
            self.asked = true;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_closed_after_the_timeout_and_a_busy_one_is_not() {
        let activity = Activity::new();
        let busy = activity.begin();
        let idle = Idle::new(
            Conn { asked: false },
            activity.clone(),
            Duration::from_secs(10),
        );
        let mut idle = Box::pin(idle);
        // Busy for a long time: never closed.
        let still_open = tokio::time::timeout(Duration::from_secs(60), idle.as_mut()).await;
        assert!(still_open.is_err());
        drop(busy);
        let started = Instant::now();
        assert_eq!(idle.await, Some(()));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(10), "{waited:?}");
        assert!(waited <= Duration::from_secs(21), "{waited:?}");
    }

    /// A connection that never finishes its graceful close.
    struct Stuck;

    impl Future for Stuck {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Pending
        }
    }

    impl Drainable for Stuck {
        fn start_draining(self: Pin<&mut Self>) {}
    }

    #[tokio::test(start_paused = true)]
    async fn a_graceful_close_the_peer_never_finishes_is_cut() {
        let idle = Idle::new(Stuck, Activity::new(), Duration::from_secs(10));
        let started = Instant::now();
        assert_eq!(idle.await, None);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(20), "{waited:?}");
        assert!(waited <= Duration::from_secs(31), "{waited:?}");
    }
}
