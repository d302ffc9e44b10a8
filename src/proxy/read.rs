//! Whole-body reads, bounded three ways: size (a body larger than its limit is refused, before
//! anything is read when its declared length already says so), time (a silence between frames
//! longer than `idle`, or a whole read longer than `total`, ends it) and memory shared by the
//! whole process (every buffered byte holds a share of [`BufferBudget`] until the exchange that
//! read it is done; when the budget is spent the read is refused at once, never queued, so
//! stalled peers cannot hold memory that others then wait for).
//!
//! Owns how bodies are read whole, never what they mean or which response a failure becomes
//! (that is [`super::respond`], through [`crate::error::GatewayError`]).

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Bytes the process may hold in whole-body buffers at once (request bodies, and JSON answers
/// read whole for judgment), shared by every worker.
#[derive(Clone, Debug)]
pub struct BufferBudget(Arc<Semaphore>, Arc<Shown>);

/// The budget's size and the gauge that shows how much of it is held.
#[derive(Debug)]
struct Shown {
    total: usize,
    gauge: Option<prometheus::IntGauge>,
}

impl Shown {
    fn update(&self, semaphore: &Semaphore) {
        if let Some(g) = &self.gauge {
            let held = self.total.saturating_sub(semaphore.available_permits());
            g.set(i64::try_from(held).unwrap_or(i64::MAX));
        }
    }
}

impl BufferBudget {
    pub fn new(bytes: u64) -> Self {
        Self::with_gauge(bytes, None)
    }

    /// A budget whose held bytes `gauge` shows.
    pub fn with_gauge(bytes: u64, gauge: Option<prometheus::IntGauge>) -> Self {
        let permits = usize::try_from(bytes)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        Self(
            Arc::new(Semaphore::new(permits)),
            Arc::new(Shown {
                total: permits,
                gauge,
            }),
        )
    }

    /// Bytes not held by any read.
    pub fn available(&self) -> usize {
        self.0.available_permits()
    }

    /// Takes `bytes` more for `held`, without waiting.
    fn take(&self, held: &mut Option<Held>, bytes: usize) -> bool {
        if bytes == 0 {
            return true;
        }
        let Ok(n) = u32::try_from(bytes) else {
            return false;
        };
        match self.0.clone().try_acquire_many_owned(n) {
            Ok(permit) => {
                match held {
                    Some(h) => h.permit.merge(permit),
                    None => {
                        *held = Some(Held {
                            permit,
                            budget: self.clone(),
                        })
                    }
                }
                self.1.update(&self.0);
                true
            }
            Err(_) => false,
        }
    }
}

/// A share of the [`BufferBudget`], given back when dropped.
#[derive(Debug)]
pub struct Held {
    permit: OwnedSemaphorePermit,
    budget: BufferBudget,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Give the bytes back first, then show the new level.
        let n = self.permit.num_permits();
        if n > 0 {
            drop(self.permit.split(n));
        }
        self.budget.1.update(&self.budget.0);
    }
}

/// How one whole-body read is bounded.
pub struct Bounds<'a> {
    pub limit: u64,
    /// Longest silence between frames.
    pub idle: Duration,
    /// Longest whole read.
    pub total: Duration,
    pub budget: &'a BufferBudget,
}

/// Why a whole-body read failed.
#[derive(Debug)]
pub enum ReadError<E> {
    TooLarge,
    /// No frame within `idle`.
    Idle,
    /// Not done within `total`.
    Total,
    /// The process-wide buffer budget is spent.
    Budget,
    Body(E),
}

impl<E> ReadError<E> {
    /// The same failure with the body's own error mapped.
    pub fn map_body<F>(self, f: impl FnOnce(E) -> F) -> ReadError<F> {
        match self {
            Self::TooLarge => ReadError::TooLarge,
            Self::Idle => ReadError::Idle,
            Self::Total => ReadError::Total,
            Self::Budget => ReadError::Budget,
            Self::Body(e) => ReadError::Body(f(e)),
        }
    }
}

/// Reads a body whole within `bounds`; returns it with the budget share it holds. A body that
/// arrives in one frame (small MCP messages almost always do) is returned as that frame,
/// without a copy; one in several frames is joined into a buffer sized once from its declared
/// length (no regrowth copies).
pub async fn whole<B>(
    mut body: B,
    bounds: &Bounds<'_>,
) -> Result<(Bytes, Option<Held>), ReadError<B::Error>>
where
    B: Body<Data = Bytes> + Unpin,
{
    let hint = body.size_hint();
    if hint.lower() > bounds.limit {
        return Err(ReadError::TooLarge);
    }
    let declared = hint.exact().and_then(|len| usize::try_from(len).ok());
    let limit = usize::try_from(bounds.limit).unwrap_or(usize::MAX);
    // The bounds count from the first wait: a frame that is already there is taken without
    // reading the clock or arming a timer (a small message usually is, whole).
    // Set at the first wait; `Some(None)`: the total bound is too large to be a time.
    let mut deadline: Option<Option<Instant>> = None;
    let mut held = None;
    let mut total = 0usize;
    let mut single: Option<Bytes> = None;
    let mut joined: Option<bytes::BytesMut> = None;
    loop {
        let at_hand =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await;
        let frame = match at_hand {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                let now = Instant::now();
                let deadline = *deadline.get_or_insert_with(|| now.checked_add(bounds.total));
                let wait = match deadline {
                    Some(at) => bounds.idle.min(at.saturating_duration_since(now)),
                    None => bounds.idle,
                };
                match tokio::time::timeout(wait, body.frame()).await {
                    Ok(frame) => frame,
                    Err(_) if deadline.is_some_and(|at| Instant::now() >= at) => {
                        return Err(ReadError::Total)
                    }
                    Err(_) => return Err(ReadError::Idle),
                }
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let Ok(data) = frame.map_err(ReadError::Body)?.into_data() else {
            continue; // trailers
        };
        total = total.saturating_add(data.len());
        if total > limit {
            return Err(ReadError::TooLarge);
        }
        if !bounds.budget.take(&mut held, data.len()) {
            return Err(ReadError::Budget);
        }
        if let Some(buf) = joined.as_mut() {
            buf.extend_from_slice(&data);
        } else if let Some(head) = single.take() {
            let capacity = declared.unwrap_or(0).min(limit).max(total);
            let mut buf = bytes::BytesMut::with_capacity(capacity);
            buf.extend_from_slice(&head);
            buf.extend_from_slice(&data);
            joined = Some(buf);
        } else {
            single = Some(data);
        }
    }
    let bytes = joined
        .map(bytes::BytesMut::freeze)
        .or(single)
        .unwrap_or_default();
    Ok((bytes, held))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Full, StreamBody};

    fn bounds(budget: &BufferBudget) -> Bounds<'_> {
        Bounds {
            limit: 1024,
            idle: Duration::from_millis(200),
            total: Duration::from_secs(5),
            budget,
        }
    }

    #[tokio::test]
    async fn a_body_holds_its_bytes_of_the_budget_until_dropped() {
        let budget = BufferBudget::new(100);
        let (bytes, held) = whole(Full::new(Bytes::from_static(&[1; 60])), &bounds(&budget))
            .await
            .unwrap();
        assert_eq!(bytes.len(), 60);
        assert_eq!(budget.available(), 40);
        // A second one does not fit while the first is held.
        let second = whole(Full::new(Bytes::from_static(&[1; 60])), &bounds(&budget)).await;
        assert!(matches!(second, Err(ReadError::Budget)));
        drop(held);
        assert_eq!(budget.available(), 100);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_ends_at_the_idle_bound() {
        let budget = BufferBudget::new(1 << 20);
        let stalled = StreamBody::new(futures_util::stream::pending::<
            Result<http_body::Frame<Bytes>, std::io::Error>,
        >());
        let read = whole(stalled, &bounds(&budget)).await;
        assert!(matches!(read, Err(ReadError::Idle)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickling_body_ends_at_the_total_bound() {
        let budget = BufferBudget::new(1 << 20);
        // One byte every 100 ms: never idle for 200 ms, never done.
        let trickle = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((
                Ok::<_, std::io::Error>(http_body::Frame::data(Bytes::from_static(b"x"))),
                (),
            ))
        });
        let mut b = bounds(&budget);
        b.limit = u64::MAX;
        let read = whole(StreamBody::new(Box::pin(trickle)), &b).await;
        assert!(matches!(read, Err(ReadError::Total)));
        assert_eq!(budget.available(), 1 << 20, "a failed read holds nothing");
    }

    #[tokio::test]
    async fn declared_lengths_past_the_limit_are_refused_before_reading() {
        let budget = BufferBudget::new(1 << 20);
        let big = Full::new(Bytes::from(vec![0; 2048]));
        assert!(matches!(
            whole(big, &bounds(&budget)).await,
            Err(ReadError::TooLarge)
        ));
    }
}
