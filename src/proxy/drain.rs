//! Graceful draining of one worker's client connections at shutdown, at no cost per poll.
//!
//! hyper-util's `GracefulShutdown` has every connection poll a watch channel each time its
//! task is woken (≈ 0.5k instructions per proxied request, measured with callgrind). Here a
//! connection registers its task's waker once (again only if the task's waker changes) and
//! reads one atomic flag per poll. [`Drain::drain`] sets the flag and wakes every registered
//! connection, which then starts hyper's graceful shutdown (in-flight requests finish, idle
//! keep-alive connections close), and resolves when the last connection has ended.
//!
//! Owns the set of live connections and the shutdown signal they see, nothing else.

use hyper_util::server::graceful::GracefulConnection;
use slab::Slab;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use tokio::sync::Notify;

/// A connection that can be asked to finish what it is doing and close.
pub trait Drainable: Future {
    fn start_draining(self: Pin<&mut Self>);
}

impl<C: GracefulConnection> Drainable for C {
    fn start_draining(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// The connections of one worker (cheap to clone; clones share them).
#[derive(Clone, Default)]
pub struct Drain {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    draining: AtomicBool,
    /// One slot per live connection: the waker of the task serving it, once polled.
    wakers: Mutex<Slab<Option<Waker>>>,
    /// Notified when the last connection ends.
    all_ended: Notify,
}

impl Shared {
    fn wakers(&self) -> MutexGuard<'_, Slab<Option<Waker>>> {
        self.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drain {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wraps a connection so that [`Drain::drain`] reaches it.
    pub fn watch<C: Drainable>(&self, conn: C) -> Watched<C> {
        let key = self.shared.wakers().insert(None);
        Watched {
            conn,
            slot: Slot {
                shared: self.shared.clone(),
                key,
                registered: None,
            },
            draining: false,
        }
    }

    /// Connections currently alive.
    pub fn count(&self) -> usize {
        self.shared.wakers().len()
    }

    /// Asks every connection, present and future, to drain, and resolves once none is left.
    pub async fn drain(&self) {
        self.shared.draining.store(true, Ordering::SeqCst);
        // Woken outside the lock: a waker may run code that watches or ends a connection.
        let wakers: Vec<Waker> = (self.shared.wakers().iter_mut())
            .filter_map(|(_, waker)| waker.take())
            .collect();
        wakers.into_iter().for_each(Waker::wake);
        loop {
            let ended = self.shared.all_ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            ended.await;
        }
    }
}

/// A connection's place in the [`Drain`]; frees it when the connection ends.
struct Slot {
    shared: Arc<Shared>,
    key: usize,
    /// The waker last stored in the slot (compared, not stored again, on every poll).
    registered: Option<Waker>,
}

impl Slot {
    fn register(&mut self, waker: &Waker) {
        if self.registered.as_ref().is_some_and(|w| w.will_wake(waker)) {
            return;
        }
        self.shared.wakers()[self.key] = Some(waker.clone());
        self.registered = Some(waker.clone());
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut wakers = self.shared.wakers();
        wakers.remove(self.key);
        if wakers.is_empty() {
            drop(wakers);
            self.shared.all_ended.notify_waiters();
        }
    }
}

pin_project_lite::pin_project! {
    /// A connection [`Drain::watch`] wrapped.
    pub struct Watched<C> {
        #[pin]
        conn: C,
        slot: Slot,
        draining: bool,
    }
}

impl<C: Drainable> Future for Watched<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let mut this = self.project();
        if !*this.draining {
            // Registered before the flag is read: a drain that starts in between wakes the
            // task again, so it cannot be missed.
            this.slot.register(cx.waker());
            if this.slot.shared.draining.load(Ordering::SeqCst) {
                *this.draining = true;
                this.conn.as_mut().start_draining();
            }
        }
        this.conn.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A connection that runs until asked to drain, then ends on its next poll.
    struct Conn {
        asked: bool,
        polls: Arc<AtomicUsize>,
    }

    impl Conn {
        fn new(polls: &Arc<AtomicUsize>) -> Self {
            Self {
                asked: false,
                polls: polls.clone(),
            }
        }
    }

    impl Future for Conn {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
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

    #[tokio::test]
    async fn drain_wakes_idle_connections_and_waits_for_them() {
        let drain = Drain::new();
        let polls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..3)
            .map(|_| tokio::spawn(drain.watch(Conn::new(&polls))))
            .collect();
        // Every connection is polled once and then sleeps (nothing would wake it).
        while polls.load(Ordering::SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
        assert_eq!(drain.count(), 3);
        drain.drain().await;
        assert_eq!(drain.count(), 0);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(polls.load(Ordering::SeqCst), 6);
    }

    #[tokio::test]
    async fn a_connection_watched_after_the_drain_started_drains_at_once() {
        let drain = Drain::new();
        drain.drain().await; // nothing to wait for
        let polls = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(drain.watch(Conn::new(&polls)));
        task.await.unwrap();
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert_eq!(drain.count(), 0);
    }

    #[tokio::test]
    async fn drain_waits_for_a_connection_that_is_still_busy() {
        /// Ends only once released, whatever it was asked.
        #[derive(Default)]
        struct Gate(AtomicBool, Mutex<Option<Waker>>);
        struct Busy(Arc<Gate>);
        impl Future for Busy {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                *self.0 .1.lock().unwrap() = Some(cx.waker().clone());
                if self.0 .0.load(Ordering::SeqCst) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }
        }
        impl Drainable for Busy {
            fn start_draining(self: Pin<&mut Self>) {}
        }
        let drain = Drain::new();
        let gate = Arc::new(Gate::default());
        let task = tokio::spawn(drain.watch(Busy(gate.clone())));
        tokio::task::yield_now().await;
        let draining = tokio::spawn({
            let drain = drain.clone();
            async move { drain.drain().await }
        });
        tokio::task::yield_now().await;
        assert!(!draining.is_finished());
        assert_eq!(drain.count(), 1);
        gate.0.store(true, Ordering::SeqCst);
        let waker = gate.1.lock().unwrap().take();
        waker.expect("the connection was polled").wake();
        task.await.unwrap();
        draining.await.unwrap();
        assert_eq!(drain.count(), 0);
    }
}
