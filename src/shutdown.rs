//! Shutdown as the gateway's tasks see it: a handle that resolves once stopping has begun
//! ([`Shutdown`]), and the process signals that begin it ([`wait_for_signal`]).
//!
//! Never: deciding what stopping does (draining, closing listeners): [`crate::start::Running`]
//! owns that.

use tokio::sync::watch;

/// A handle tasks hold to learn that shutdown has begun.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// A handle on `stopping`, which turns true when shutdown begins.
    pub fn new(stopping: watch::Receiver<bool>) -> Self {
        Self(stopping)
    }

    /// Resolves once shutdown has been requested (at once if it already was).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stopping| *stopping).await;
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "Cannot listen for SIGTERM; stopping on Ctrl-C only.");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
