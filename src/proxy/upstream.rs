//! Upstream side: connections to one route's upstream, TLS verification of `https` upstreams,
//! and the per-request connect / first-byte timeouts.
//!
//! Two kinds of connection reuse:
//! - a **plain-text** (`http://`) upstream gets a keep-alive cache of HTTP/1.1 connections
//!   owned by one worker (the gateway builds one [`Upstream`] per worker thread, as nginx
//!   workers keep their own upstream connections). A connection's I/O is driven by the
//!   request that uses it, inside that request's own task ([`super::driven`]): sending waits
//!   for the head while polling the connection, and the response body ([`UpstreamBody`])
//!   polls it when it reads. The body gives the connection back to the idle cache when it
//!   has been read to its end;
//! - an **`https`** upstream goes through hyper-util's pooled client (rustls, HTTP/2 or
//!   HTTP/1.1 by ALPN), whose connections run in their own tasks.
//!
//! Owns turning an upstream failure into a [`GatewayError`] that says which stage failed. A
//! response body dropped before its end never goes back to the cache, so a client that goes
//! away closes the upstream connection and cancels the upstream's work.

use super::driven::Conn;
use crate::error::GatewayError;
use crate::tls;
use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::uri::PathAndQuery;
use http::{Request, Response, Uri};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::collections::VecDeque;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_service::Service;

/// Idle connections kept per upstream and worker (nginx's `keepalive` in an `upstream` block).
const MAX_IDLE: usize = 256;
/// How long an idle connection is kept before it is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Requests are written from one flat buffer (hyper's `writev(false)`: copying a small MCP
/// message once is cheaper than a vectored write of head and body). That buffer keeps the
/// capacity it grew to, so a connection that sent a larger body is closed after its response
/// rather than kept idle holding it.
const MAX_KEPT_BODY: u64 = 64 * 1024;

/// The most of an unneeded response body [`UpstreamBody::discard`] reads to keep the
/// connection; past it, closing the connection is cheaper.
pub const DISCARD_MAX: usize = 64 * 1024;
/// The longest [`UpstreamBody::discard`] waits for the rest of an unneeded body.
pub const DISCARD_WITHIN: Duration = Duration::from_secs(5);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connections to one upstream (cheap to clone; clones share the connections).
#[derive(Clone)]
pub struct Upstream {
    inner: Arc<Inner>,
}

struct Inner {
    kind: Kind,
    first_byte_timeout: Duration,
}

enum Kind {
    Plain(Plain),
    Pooled(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

/// A plain-text upstream and its idle HTTP/1.1 connections.
struct Plain {
    connector: HttpConnector,
    /// `http://host:port`, what the connector dials.
    origin: Uri,
    /// The `Host` field for requests that carry none.
    host: HeaderValue,
    idle: Mutex<VecDeque<Idle>>,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

/// An upstream connection in use by one request, carried by its response body
/// ([`UpstreamBody`]), which gives it back once the response has been read to its end.
struct Lease {
    conn: Conn,
    upstream: Upstream,
    /// False once the connection sent a body over [`MAX_KEPT_BODY`].
    keep: bool,
}

impl Lease {
    /// Returns the connection to the idle cache (it is closed instead when it cannot take
    /// another request).
    fn release(mut self) {
        let Kind::Plain(plain) = &self.upstream.inner.kind else {
            return;
        };
        // An idle connection wakes nobody; hyper finishes the exchange when the connection
        // is next used (or checked by the housekeeping tick).
        self.conn.io.forget_task();
        if !self.keep || !self.conn.is_open() {
            return;
        }
        // Only a connection hyper has made idle is cached: one still writing a request body
        // the upstream stopped reading (it answered early) would hold the next request in
        // `poll_ready` until its first-byte timeout. One more poll lets hyper finish an
        // exchange that has just ended; past that, the connection is closed.
        if !self.conn.sender.is_ready() {
            self.conn.io.settle();
            if !self.conn.sender.is_ready() {
                return;
            }
        }
        let now = Instant::now();
        let mut idle = plain.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while idle.front().is_some_and(|c| c.is_stale(now)) {
            idle.pop_front();
        }
        if idle.len() < MAX_IDLE {
            idle.push_back(Idle {
                conn: self.conn,
                since: now,
            });
        }
    }
}

impl Idle {
    fn is_stale(&self, now: Instant) -> bool {
        !self.conn.is_open() || now.duration_since(self.since) >= IDLE_TIMEOUT
    }

    /// Notices an upstream that closed the connection meanwhile (one poll, nobody woken): the
    /// housekeeping tick's check.
    fn check(&mut self) {
        self.conn.io.settle();
    }
}

/// An upstream response body. On a plain-text connection it drives the connection's I/O
/// before each read (see the module header) and gives the connection back to the idle cache
/// once it has been read to its end; dropped earlier, it closes the connection.
pub struct UpstreamBody {
    body: Incoming,
    lease: Option<Lease>,
}

impl UpstreamBody {
    /// Whether reading this body drives its connection's I/O (a plain-text upstream), rather
    /// than a connection task of its own (a pooled one) doing so.
    pub fn is_driven_here(&self) -> bool {
        self.lease.is_some()
    }

    fn end(&mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release();
        }
    }

    /// Reads a body nobody needs to its end, so its connection can be reused, but at most
    /// [`DISCARD_MAX`] bytes for at most [`DISCARD_WITHIN`]: an upstream that sends more, or
    /// never ends, loses the connection instead (dropped before its end, the body closes it).
    pub async fn discard(mut self) {
        let read = async {
            let mut seen = 0usize;
            while let Some(frame) = self.frame().await {
                let Ok(frame) = frame else { return };
                if let Some(data) = frame.data_ref() {
                    seen = seen.saturating_add(data.len());
                    if seen > DISCARD_MAX {
                        return;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(DISCARD_WITHIN, read).await;
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let Some(lease) = &mut this.lease else {
            return Pin::new(&mut this.body).poll_frame(cx);
        };
        let body = &mut this.body;
        let polled = lease
            .conn
            .io
            .poll_with(cx, |own| Pin::new(&mut *body).poll_frame(own));
        match &polled {
            Poll::Ready(None) => this.end(),
            Poll::Ready(Some(Ok(_))) if this.body.is_end_stream() => this.end(),
            Poll::Ready(Some(Err(_))) => this.lease = None,
            _ => {}
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

impl Upstream {
    /// Connections to the upstream at `url` (`http` or `https`).
    pub fn new(
        url: &url::Url,
        ca_file: Option<&Path>,
        connect_timeout: Duration,
        first_byte_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let kind = if url.scheme() == "http" {
            let authority = match (url.host_str(), url.port()) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                (Some(host), None) => host.to_owned(),
                (None, _) => anyhow::bail!("upstream URL {url} has no host"),
            };
            Kind::Plain(Plain {
                connector: http,
                origin: format!("http://{authority}").parse()?,
                host: HeaderValue::from_str(&authority)?,
                idle: Mutex::new(VecDeque::new()),
            })
        } else {
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(tls::client_config(ca_file)?)
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(http);
            Kind::Pooled(
                Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(IDLE_TIMEOUT)
                    .timer(TokioTimer::new())
                    .build(connector),
            )
        };
        Ok(Self {
            inner: Arc::new(Inner {
                kind,
                first_byte_timeout,
            }),
        })
    }

    /// Sends `request` (absolute URI) and waits for the response head. A plain-text
    /// connection goes back to the idle cache when the body has been read to its end.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<UpstreamBody>, GatewayError> {
        let sent = async {
            match &self.inner.kind {
                Kind::Plain(plain) => {
                    self.send_plain(plain, request)
                        .await
                        .map(|(response, lease)| {
                            response.map(|body| UpstreamBody {
                                body,
                                lease: Some(lease),
                            })
                        })
                }
                Kind::Pooled(client) => client
                    .request(request)
                    .await
                    .map(|response| response.map(|body| UpstreamBody { body, lease: None }))
                    .map_err(|e| classify(e.is_connect(), e.into())),
            }
        };
        match tokio::time::timeout(self.inner.first_byte_timeout, sent).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::UpstreamTimeout {
                stage: "first_byte_timeout",
            }),
        }
    }

    async fn send_plain(
        &self,
        plain: &Plain,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), GatewayError> {
        let (mut parts, body) = request.into_parts();
        let keep = http_body::Body::size_hint(&body)
            .exact()
            .is_some_and(|len| len <= MAX_KEPT_BODY);
        let path = parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        parts.uri = Uri::from(path);
        if !parts.headers.contains_key(HOST) {
            parts.headers.insert(HOST, plain.host.clone());
        }
        let mut request = Request::from_parts(parts, body);
        loop {
            let (mut conn, reused) = match plain.take_idle() {
                Some(conn) => (conn, true),
                None => (plain.connect().await?, false),
            };
            if let Err(e) =
                std::future::poll_fn(|cx| conn.io.poll_with(cx, |own| conn.sender.poll_ready(own)))
                    .await
            {
                if reused {
                    continue;
                }
                return Err(classify(false, e.into()));
            }
            match conn.io.run(conn.sender.try_send_request(request)).await {
                Ok(response) => {
                    let lease = Lease {
                        conn,
                        upstream: self.clone(),
                        keep,
                    };
                    return Ok((response, lease));
                }
                Err(mut e) => match e.take_message() {
                    // Not written: the kept-alive connection closed under us; another one.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(classify(false, e.into_error().into())),
                },
            }
        }
    }
}

impl Upstream {
    /// Closes idle connections that are past the idle timeout or closed by the upstream.
    pub fn prune_idle(&self) {
        if let Kind::Plain(plain) = &self.inner.kind {
            let now = Instant::now();
            let mut idle = plain.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain_mut(|c| {
                c.check();
                !c.is_stale(now)
            });
        }
    }
}

impl Plain {
    /// The most recently used idle connection that is still open.
    fn take_idle(&self) -> Option<Conn> {
        let now = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        // A connection the upstream closed since the last check is noticed when the request
        // is handed to it, before anything is written (hyper returns the request, and
        // `send_plain` takes another connection).
        while let Some(conn) = idle.pop_back() {
            if !conn.is_stale(now) {
                return Some(conn.conn);
            }
        }
        None
    }

    /// Opens a connection; its I/O is driven by the requests that use it.
    async fn connect(&self) -> Result<Conn, GatewayError> {
        let io = self
            .connector
            .clone()
            .call(self.origin.clone())
            .await
            .map_err(|e| classify(true, e.into()))?;
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .writev(false)
            .handshake(io)
            .await
            .map_err(|e| classify(true, e.into()))?;
        Ok(Conn::new(sender, Box::pin(connection)))
    }
}

/// Maps a client error to the gateway's, naming the stage.
fn classify(connecting: bool, error: BoxError) -> GatewayError {
    if connecting && caused_by_timeout(&*error) {
        GatewayError::UpstreamTimeout {
            stage: "connect_timeout",
        }
    } else if connecting {
        GatewayError::UpstreamConnect(error)
    } else {
        GatewayError::Upstream(error)
    }
}

fn caused_by_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        if e.to_string().contains("timed out") {
            return true;
        }
        source = e.source();
    }
    false
}
