//! The admin listener: `/metrics` (Prometheus text format), `/healthz` (the process is up) and
//! `/readyz` (a valid configuration is loaded and the client listener is accepting).
//!
//! Owns nothing on the request path; it only reads the metrics registry and the ready flag.

use crate::metrics::Metrics;
use crate::proxy::body::ResponseBody;
use crate::shutdown::Shutdown;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;

/// State the admin endpoints report.
pub struct AdminState {
    pub metrics: Metrics,
    pub ready: AtomicBool,
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<bytes::Bytes>,
) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn route(state: &AdminState, request: &Request<Incoming>) -> Response<ResponseBody> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "method not allowed\n",
        );
    }
    match request.uri().path() {
        "/metrics" => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            state.metrics.render(),
        ),
        "/healthz" => respond(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" if state.ready.load(Ordering::Acquire) => {
            respond(StatusCode::OK, "text/plain", "ready\n")
        }
        "/readyz" => respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "not ready\n"),
        _ => respond(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    }
}

/// Serves the admin endpoints until `shutdown` fires.
pub async fn serve(listener: TcpListener, state: Arc<AdminState>, mut shutdown: Shutdown) {
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "Admin accept failed.");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.wait() => return,
        };
        let state = state.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let response = route(&state, &request);
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
