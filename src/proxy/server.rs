//! The client listener: worker threads, accept loop, connection limit, optional rustls
//! termination, HTTP/1.1 (plain text) or HTTP/2 / HTTP/1.1 by ALPN (TLS), and graceful
//! shutdown.
//!
//! Layout (as nginx workers): `workers` threads, each with a single-threaded tokio runtime,
//! its own listening socket on the same address (`SO_REUSEPORT`, the kernel spreads new
//! connections over them) and its own [`Gateway`] (so its own upstream connections). A
//! connection and everything it does stay on one thread: no work stealing, no cross-thread
//! wake-ups on the request path. Shared between workers: the enforcement state, metrics and
//! the connection limit.
//!
//! Owns connection lifecycles, never request content: connection permits, TLS handshake
//! timeout, HTTP/2 stream and reset bounds, idle connections closed ([`super::idle`]). Shutdown stops accepting at once, lets
//! in-flight requests finish for up to `timeouts.shutdown_grace`, then returns (each worker's
//! runtime drops whatever is left).

use super::drain::Drain;
use super::forward::{self, ClientConn};
use super::idle::{Activity, Idle, Tracked};
use super::Gateway;
use crate::shutdown::Shutdown;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// Starts one worker thread per listener, each serving its listener with the gateway
/// `gateway_for` builds for it. The returned receivers resolve as the workers finish
/// (after `shutdown` and draining).
pub fn spawn_workers(
    listeners: Vec<std::net::TcpListener>,
    tls: Option<TlsAcceptor>,
    gateway_for: impl Fn() -> anyhow::Result<Arc<Gateway>>,
    shutdown: &Shutdown,
) -> anyhow::Result<Vec<tokio::sync::oneshot::Receiver<()>>> {
    use anyhow::Context;
    let first = gateway_for()?;
    let permits = Arc::new(Semaphore::new(first.settings.limits.max_connections));
    let mut done = Vec::with_capacity(listeners.len());
    for (i, listener) in listeners.into_iter().enumerate() {
        let gateway = if i == 0 {
            first.clone()
        } else {
            gateway_for()?
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("elicitgate-worker")
            .build()
            .context("starting a worker runtime")?;
        let (tls, shutdown, permits) = (tls.clone(), shutdown.clone(), permits.clone());
        let (finished, on_finish) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("elicitgate-w{i}"))
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::spawn(gateway.clone().housekeeping(shutdown.clone()));
                    match TcpListener::from_std(listener) {
                        Ok(listener) => serve(listener, tls, gateway, permits, shutdown).await,
                        Err(e) => tracing::error!(error = %e, "Worker could not use its listener."),
                    }
                });
                drop(runtime);
                let _ = finished.send(());
            })
            .context("starting a worker thread")?;
        done.push(on_finish);
    }
    Ok(done)
}

/// Serves client connections on `listener` until `shutdown` fires, then drains.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    gateway: Arc<Gateway>,
    permits: Arc<Semaphore>,
    mut shutdown: Shutdown,
) {
    let timeouts = gateway.settings.timeouts.clone();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.client_header);
    // HTTP/2: a bound on concurrent streams, keep-alive pings (a dead peer is noticed), and
    // the CVE-2023-44487 ("rapid reset") bounds: streams a peer opens and resets before they
    // are served, and streams the gateway itself must reset for protocol errors.
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(gateway.settings.limits.max_streams_per_connection)
        .keep_alive_interval(Some(std::time::Duration::from_secs(30)))
        .keep_alive_timeout(std::time::Duration::from_secs(20))
        .max_pending_accept_reset_streams(Some(20))
        .max_local_error_reset_streams(Some(256))
        .max_header_list_size(64 * 1024);
    // Plain-text clients speak HTTP/1.1 (MCP clients do not use h2c): they are served by
    // hyper's HTTP/1 connection directly (no preface sniffing, no rewind buffer). Over TLS,
    // ALPN decides.
    let mut plain = hyper::server::conn::http1::Builder::new();
    plain
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.client_header);
    let http1 = builder.clone().http1_only();
    let http2 = builder.clone().http2_only();
    let drain = Drain::new();
    // Bounding connections by permits (shared by all workers) makes excess clients wait in
    // the kernel's accept queue instead of costing memory here.
    let scheme = if tls.is_some() { "https" } else { "http" };

    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.wait() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "Accept failed.");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.wait() => break,
        };
        let _ = stream.set_nodelay(true);
        let drain = drain.clone();
        let (plain, http1, http2) = (plain.clone(), http1.clone(), http2.clone());
        let gateway = gateway.clone();
        let tls = tls.clone();
        let conn = ClientConn::new(peer, scheme);
        let handshake_timeout = timeouts.tls_handshake;
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => {
                    serve_connection(stream, Protocol::Plain(plain), gateway, conn, drain).await
                }
                // Boxed: the TLS connection's state (rustls, HTTP/2) is several times the
                // size of a plain one's, and the task of every plain connection would
                // otherwise be as large as a TLS one's for as long as it lives.
                Some(acceptor) => {
                    Box::pin(async move {
                        match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await
                        {
                            Ok(Ok(stream)) => {
                                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                                let builder = if h2 { http2 } else { http1 };
                                let protocol = Protocol::Negotiated(builder);
                                serve_connection(stream, protocol, gateway, conn, drain).await
                            }
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed.")
                            }
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out."),
                        }
                    })
                    .await
                }
            }
        });
    }
    drop(listener);
    tracing::info!(connections = drain.count(), "Listener closed; draining.");
    tokio::select! {
        () = drain.drain() => tracing::info!("All connections drained."),
        () = tokio::time::sleep(timeouts.shutdown_grace) => {
            tracing::warn!("Shutdown grace period over; cutting remaining connections.");
        }
    }
}

/// How a connection is served.
enum Protocol {
    /// Plain-text HTTP/1.1.
    Plain(hyper::server::conn::http1::Builder),
    /// TLS: HTTP/2 or HTTP/1.1, as ALPN chose.
    Negotiated(auto::Builder<TokioExecutor>),
}

async fn serve_connection<I>(
    io: I,
    protocol: Protocol,
    gateway: Arc<Gateway>,
    conn: ClientConn,
    drain: Drain,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let peer = conn.peer;
    let idle_timeout = gateway.settings.timeouts.client_idle;
    let activity = Activity::new();
    let service = {
        let activity = activity.clone();
        service_fn(move |request| {
            let (gateway, conn) = (gateway.clone(), conn.clone());
            let active = activity.begin();
            async move {
                // Boxed: the pipeline's state is kilobytes and is needed only until the
                // response head; hyper keeps the slot of a service future for the whole
                // connection, so an open stream would keep paying for it.
                let response = Box::pin(forward::handle(gateway, conn, request)).await;
                Ok::<_, Infallible>(response.map(|body| Tracked::new(body, active)))
            }
        })
    };
    let ended: Result<(), Box<dyn std::error::Error + Send + Sync>> = match protocol {
        Protocol::Plain(builder) => drain
            .watch(Idle::new(
                builder.serve_connection(TokioIo::new(io), service),
                activity,
                idle_timeout,
            ))
            .await
            .map_or(Ok(()), |ended| ended.map_err(Into::into)),
        Protocol::Negotiated(builder) => drain
            .watch(Idle::new(
                builder
                    .serve_connection(TokioIo::new(io), service)
                    .into_owned(),
                activity,
                idle_timeout,
            ))
            .await
            .unwrap_or(Ok(())),
    };
    if let Err(e) = ended {
        tracing::debug!(%peer, error = %e, "Connection ended with an error.");
    }
}

/// Binds `count` listening sockets on one address with `SO_REUSEPORT`, non-blocking and with
/// deep accept queues.
///
/// A fixed port another process already listens on is refused, `SO_REUSEPORT` or not.
/// For port 0 (tests, ad-hoc runs) there is one socket, duplicated for each worker: the kernel
/// may hand a port already bound with `SO_REUSEPORT` by another process of the same user to a
/// new `SO_REUSEPORT` bind of port 0, and the two would then silently share connections.
pub fn bind_workers(addr: SocketAddr, count: usize) -> anyhow::Result<Vec<std::net::TcpListener>> {
    use anyhow::Context;
    use socket2::{Domain, Protocol, Socket, Type};
    let one = |addr: SocketAddr, reuse_port: bool| -> std::io::Result<std::net::TcpListener> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(reuse_port)?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(4096)?;
        Ok(socket.into())
    };
    let ephemeral = addr.port() == 0;
    if !ephemeral {
        // Workers of this process share the port through `SO_REUSEPORT`; another process must
        // not (a forgotten second instance, with another policy, would silently take part of
        // the traffic). A plain bind fails while any other socket listens there.
        let probe = one(addr, false).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                anyhow::anyhow!("{addr} is already in use by another process (is another elicitgate serving it?)")
            } else {
                anyhow::Error::new(e).context(format!("binding {addr}"))
            }
        })?;
        drop(probe);
    }
    let first = one(addr, !ephemeral).with_context(|| format!("binding {addr}"))?;
    let bound = first.local_addr()?;
    let mut listeners = Vec::with_capacity(count.max(1));
    for _ in 1..count.max(1) {
        let next = if ephemeral {
            first.try_clone()
        } else {
            one(bound, true)
        };
        listeners.push(next.with_context(|| format!("binding {bound} again"))?);
    }
    listeners.insert(0, first);
    Ok(listeners)
}

/// Binds a listener with a deep accept queue (bursts of new connections wait in the kernel,
/// not refused), naming the address on failure.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    use anyhow::Context;
    let bind = || -> std::io::Result<TcpListener> {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(4096)
    };
    bind().with_context(|| format!("binding {addr}"))
}
