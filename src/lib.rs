//! elicitgate: a reverse proxy for MCP servers that enforces policy on elicitation.
//!
//! # Layout
//! - [`settings`]: the YAML configuration, loaded through `config`, validated all at once.
//! - [`proxy`]: route table, per-request pipeline, streaming relay, upstream clients,
//!   accept loop.
//! - [`mcp`]: MCP wire formats: JSON-RPC envelopes and incremental SSE framing.
//! - [`error`]: the one error type and the one place that turns it into a response.
//! - [`metrics`]: every Prometheus family, in one explicit registry.
//! - [`admin`]: `/metrics`, `/healthz`, `/readyz` on their own listener.
//! - [`tls`]: rustls server and client configuration.
//!
//! [`start`] runs the whole gateway; `main` and the integration tests both call it.

#![forbid(unsafe_code)]
#![deny(rust_2018_idioms)]

pub mod admin;
pub mod audit;
pub mod enforce;
pub mod error;
pub mod mcp;
pub mod metrics;
pub mod proxy;
pub mod settings;
pub mod tls;

use anyhow::Context;
use settings::Settings;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A handle tasks hold to learn that shutdown has begun.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Resolves once shutdown has been requested (at once if it already was).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stopping| *stopping).await;
    }
}

/// A running gateway.
pub struct Running {
    /// Where MCP clients connect.
    pub addr: SocketAddr,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    pub admin_addr: SocketAddr,
    admin: Arc<admin::AdminState>,
    stop: watch::Sender<bool>,
    server: JoinHandle<()>,
    admin_task: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, drains in-flight requests (bounded by `shutdown_grace`) and returns.
    pub async fn shutdown(self) {
        self.admin.ready.store(false, Ordering::Release);
        let _ = self.stop.send(true);
        let _ = self.server.await;
        let _ = self.admin_task.await;
    }
}

/// Binds the listeners, starts serving and returns once both accept connections.
pub async fn start(settings: Settings) -> anyhow::Result<Running> {
    let metrics = metrics::Metrics::new();
    let tls = match &settings.tls {
        Some(t) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
            tls::server_config(&t.cert_file, &t.key_file).context("loading TLS certificate")?,
        ))),
        None => None,
    };
    let listener = proxy::server::bind(settings.listen).await?;
    let admin_listener = proxy::server::bind(settings.admin_listen).await?;
    let addr = listener.local_addr()?;
    let admin_addr = admin_listener.local_addr()?;
    let gateway = proxy::Gateway::new(settings, metrics.clone())?;

    let (stop, stopping) = watch::channel(false);
    let admin = Arc::new(admin::AdminState {
        metrics,
        ready: false.into(),
    });
    let server = tokio::spawn(proxy::server::serve(
        listener,
        tls,
        gateway,
        Shutdown(stopping.clone()),
    ));
    let admin_task = tokio::spawn(admin::serve(
        admin_listener,
        admin.clone(),
        Shutdown(stopping),
    ));
    admin.ready.store(true, Ordering::Release);
    tracing::info!(%addr, %admin_addr, "elicitgate listening.");
    Ok(Running {
        addr,
        admin_addr,
        admin,
        stop,
        server,
        admin_task,
    })
}
