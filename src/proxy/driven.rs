//! A plain-text HTTP/1.1 upstream connection driven by the task that uses it.
//!
//! hyper splits a client connection into a request half ([`SendRequest`]) and an I/O half
//! ([`Connection`]), meant to be spawned as a task of its own. Here the I/O half is polled by
//! the request using the connection, inside that request's task: no second task, no hop
//! between two tasks per request (nginx's event loop does the same, one callback per socket).
//!
//! The two halves and the response body talk through channels that wake whoever polled the
//! other side last. When one task polls all of them, each hand-over would wake the task that
//! is already running and cost it a second turn for nothing. So every part of the connection
//! is polled with the connection's own waker, a [`Gate`]: a wake-up from outside (the socket
//! became readable) goes on to the task; one caused while the task is polling the connection
//! is only noted, and [`Conn::poll_with`] looks again itself before it returns.

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// The I/O half, polled by whichever request uses the connection.
type Driver = Pin<Box<Connection<TokioIo<tokio::net::TcpStream>, Full<Bytes>>>>;

/// How many times [`Conn::poll_with`] looks again after the connection woke itself, before
/// it leaves that to another turn of the task (hyper yields after a burst of work that way).
const ROUNDS: usize = 4;

/// A plain-text HTTP/1.1 connection: the request half and the I/O half.
pub struct Conn {
    pub sender: SendRequest<Full<Bytes>>,
    pub io: Io,
}

/// The I/O half and its waker.
pub struct Io {
    /// `None` once the connection has ended.
    driver: Option<Driver>,
    gate: Arc<Gate>,
    /// `gate` as a waker (made once per connection).
    waker: Waker,
}

/// The connection's waker: passes wake-ups on to the task using the connection, except those
/// raised while that task is polling it.
///
/// A connection may be woken from another thread (its socket registered with another
/// worker's reactor: the gateway's own answers are sent from whichever runtime decided them).
/// The waker therefore notes the wake-up *before* it looks whether the task is polling, and
/// the task stops polling *before* it looks for a noted wake-up, all sequentially
/// consistent: whichever comes second sees the other, so no wake-up is lost between the end
/// of a poll and the task's next turn.
#[derive(Default)]
struct Gate {
    task: futures_util::task::AtomicWaker,
    polling: AtomicBool,
    /// A wake-up since the task last cleared it.
    woken: AtomicBool,
}

impl Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl Conn {
    pub fn new(sender: SendRequest<Full<Bytes>>, connection: Driver) -> Self {
        let gate = Arc::new(Gate::default());
        Self {
            sender,
            io: Io {
                driver: Some(connection),
                waker: Waker::from(gate.clone()),
                gate,
            },
        }
    }

    /// The connection can take another request (as far as anyone has seen yet).
    pub fn is_open(&self) -> bool {
        self.io.driver.is_some() && !self.sender.is_closed()
    }
}

impl Io {
    /// Polls `step` (a use of the connection: waiting for the response head, reading the
    /// body) together with the connection's I/O, until `step` is ready or nothing more
    /// happens without the socket. Wake-ups from the socket go to the task of `cx`.
    pub fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut step: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.gate.task.register(cx.waker());
        self.gate.polling.store(true, Ordering::SeqCst);
        let mut own = Context::from_waker(&self.waker);
        let mut out = step(&mut own);
        for _ in 0..ROUNDS {
            if out.is_ready() {
                break;
            }
            // What `step` woke (a request handed to the I/O half) is what this drive serves;
            // only a wake-up from here on asks for another round. (One cleared here that came
            // from outside is served too: the drive and the step after it poll everything.)
            self.gate.woken.store(false, Ordering::SeqCst);
            drive(&mut self.driver, &mut own);
            out = step(&mut own);
            if !self.gate.woken.load(Ordering::SeqCst) {
                break;
            }
        }
        self.gate.polling.store(false, Ordering::SeqCst);
        if out.is_pending() && self.gate.woken.swap(false, Ordering::SeqCst) {
            // Woken while polling and still busy (after the rounds, or by another thread at
            // the end): another turn, as the wake-up asked.
            cx.waker().wake_by_ref();
        }
        out
    }

    /// Awaits `step` (a future using the request half) with the connection driven meanwhile.
    pub async fn run<F: Future>(&mut self, step: F) -> F::Output {
        let mut step = std::pin::pin!(step);
        std::future::poll_fn(|cx| self.poll_with(cx, |own| step.as_mut().poll(own))).await
    }

    /// The connection goes back to the idle cache: no task is woken by it any more (nor kept
    /// alive by the waker it held).
    pub fn forget_task(&mut self) {
        drop(self.gate.task.take());
    }

    /// One poll on behalf of nobody, for a connection sitting in the idle cache: hyper
    /// finishes the last exchange and notices an upstream that closed the connection.
    pub fn settle(&mut self) {
        self.forget_task();
        drive(&mut self.driver, &mut Context::from_waker(&self.waker));
    }
}

/// Polls a connection's I/O once: reads and writes what the socket allows, hands response
/// data to the body. Forgets the connection once it has ended.
fn drive(driver: &mut Option<Driver>, cx: &mut Context<'_>) {
    if let Some(connection) = driver {
        if let Poll::Ready(ended) = connection.as_mut().poll(cx) {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "Upstream connection ended with an error.");
            }
            *driver = None;
        }
    }
}
