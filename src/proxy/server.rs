//! The client listener: accept loop, connection limit, optional rustls termination, HTTP/1.1
//! and HTTP/2 (by ALPN or preface) through hyper-util's auto builder, and graceful shutdown.
//!
//! Owns connection lifecycles, never request content. Shutdown stops accepting at once, lets
//! in-flight requests finish for up to `timeouts.shutdown_grace`, then returns (the runtime
//! drops whatever is left).

use super::forward::{self, ClientConn};
use super::Gateway;
use crate::Shutdown;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// Serves client connections on `listener` until `shutdown` fires, then drains.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    gateway: Arc<Gateway>,
    mut shutdown: Shutdown,
) {
    let timeouts = gateway.settings.timeouts.clone();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.client_header);
    builder.http2().timer(TokioTimer::new());
    // Plain-text clients speak HTTP/1.1 (MCP clients do not use h2c): serving them without
    // sniffing for an HTTP/2 preface saves a read per connection. Over TLS, ALPN decides.
    let http1 = builder.clone().http1_only();
    let http2 = builder.clone().http2_only();
    let graceful = GracefulShutdown::new();
    // Bounding connections by permits makes excess clients wait in the kernel's accept queue
    // instead of costing memory here.
    let permits = Arc::new(Semaphore::new(gateway.settings.limits.max_connections));
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
        let watcher = graceful.watcher();
        let (http1, http2) = (http1.clone(), http2.clone());
        let gateway = gateway.clone();
        let tls = tls.clone();
        let conn = ClientConn { peer, scheme };
        let handshake_timeout = timeouts.tls_handshake;
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_connection(stream, http1, gateway, conn, watcher).await,
                Some(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                            let builder = if h2 { http2 } else { http1 };
                            serve_connection(stream, builder, gateway, conn, watcher).await
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed."),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out."),
                    }
                }
            }
        });
    }
    drop(listener);
    tracing::info!(connections = graceful.count(), "Listener closed; draining.");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("All connections drained."),
        () = tokio::time::sleep(timeouts.shutdown_grace) => {
            tracing::warn!("Shutdown grace period over; cutting remaining connections.");
        }
    }
}

async fn serve_connection<I>(
    io: I,
    builder: auto::Builder<TokioExecutor>,
    gateway: Arc<Gateway>,
    conn: ClientConn,
    watcher: Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let gateway = gateway.clone();
        async move { Ok::<_, Infallible>(forward::handle(gateway, conn, request).await) }
    });
    let connection = builder
        .serve_connection(TokioIo::new(io), service)
        .into_owned();
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!(peer = %conn.peer, error = %e, "Connection ended with an error.");
    }
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
