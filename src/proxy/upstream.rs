//! Upstream side: connections to one route's upstream, TLS verification of `https` upstreams,
//! and the per-request connect / first-byte timeouts.
//!
//! Two kinds of connection reuse:
//! - a **plain-text** (`http://`) upstream gets a keep-alive cache of HTTP/1.1 connections
//!   owned by one worker (the gateway builds one [`Upstream`] per worker thread, as nginx
//!   workers keep their own upstream connections): a request takes an idle connection, or
//!   opens one, and gives it back through its [`Lease`] when its response has been read to
//!   the end. No shared pool, no connection task of another thread in between;
//! - an **`https`** upstream goes through hyper-util's pooled client (rustls, HTTP/2 or
//!   HTTP/1.1 by ALPN).
//!
//! Owns turning an upstream failure into a [`GatewayError`] that says which stage failed. A
//! response body dropped before its end never goes back to the cache, so a client that goes
//! away closes the upstream connection and cancels the upstream's work.

use crate::error::GatewayError;
use crate::tls;
use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::uri::PathAndQuery;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
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
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// An upstream connection in use by one request; [`Lease::release`] gives it back once the
/// response has been read to its end.
pub struct Lease {
    sender: SendRequest<Full<Bytes>>,
    upstream: Upstream,
    /// False once the connection sent a body over [`MAX_KEPT_BODY`].
    keep: bool,
}

impl Lease {
    /// Returns the connection to the idle cache (it is closed instead when it cannot take
    /// another request).
    pub fn release(self) {
        let Kind::Plain(plain) = &self.upstream.inner.kind else {
            return;
        };
        if !self.keep || self.sender.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut idle = plain.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while idle.front().is_some_and(|c| c.is_stale(now)) {
            idle.pop_front();
        }
        if idle.len() < MAX_IDLE {
            idle.push_back(Idle {
                sender: self.sender,
                since: now,
            });
        }
    }
}

/// [`Lease::release`] for a request that may not have had a lease.
pub fn release(lease: Option<Lease>) {
    if let Some(lease) = lease {
        lease.release();
    }
}

impl Idle {
    fn is_stale(&self, now: Instant) -> bool {
        self.sender.is_closed() || now.duration_since(self.since) >= IDLE_TIMEOUT
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

    /// Sends `request` (absolute URI) and waits for the response head. The lease, when there
    /// is one, must be released after the response body has been read to its end.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Option<Lease>), GatewayError> {
        let sent = async {
            match &self.inner.kind {
                Kind::Plain(plain) => self
                    .send_plain(plain, request)
                    .await
                    .map(|(response, lease)| (response, Some(lease))),
                Kind::Pooled(client) => client
                    .request(request)
                    .await
                    .map(|response| (response, None))
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
            let (mut sender, reused) = match plain.take_idle() {
                Some(sender) => (sender, true),
                None => (plain.connect().await?, false),
            };
            if let Err(e) = sender.ready().await {
                if reused {
                    continue;
                }
                return Err(classify(false, e.into()));
            }
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let lease = Lease {
                        sender,
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
            idle.retain(|c| !c.is_stale(now));
        }
    }
}

impl Plain {
    /// The most recently used idle connection that is still open.
    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let now = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(conn) = idle.pop_back() {
            if !conn.is_stale(now) {
                return Some(conn.sender);
            }
        }
        None
    }

    /// Opens a connection; its I/O runs in a task of the calling worker.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, GatewayError> {
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
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "Upstream connection ended with an error.");
            }
        });
        Ok(sender)
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
