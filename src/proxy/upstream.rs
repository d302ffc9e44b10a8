//! Upstream side: one pooled hyper-util client per route, TLS verification of `https`
//! upstreams, and the per-request connect / first-byte timeouts.
//!
//! Owns turning an upstream failure into a [`GatewayError`] that says which stage failed.
//! Connections are reused across requests (keep-alive pool); a response body dropped before
//! its end is not returned to the pool, so a client that goes away closes the upstream
//! connection and cancels the upstream's work.

use crate::error::GatewayError;
use crate::tls;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::path::Path;
use std::time::Duration;

/// A pooled client to one upstream.
#[derive(Clone)]
pub struct Upstream {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    first_byte_timeout: Duration,
}

impl Upstream {
    pub fn new(
        ca_file: Option<&Path>,
        connect_timeout: Duration,
        first_byte_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls::client_config(ca_file)?)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .timer(TokioTimer::new())
            .build(connector);
        Ok(Self {
            client,
            first_byte_timeout,
        })
    }

    /// Sends `request` and waits for the response head.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, GatewayError> {
        match tokio::time::timeout(self.first_byte_timeout, self.client.request(request)).await {
            Err(_) => Err(GatewayError::UpstreamTimeout {
                stage: "first_byte_timeout",
            }),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) if e.is_connect() && caused_by_timeout(&e) => {
                Err(GatewayError::UpstreamTimeout {
                    stage: "connect_timeout",
                })
            }
            Ok(Err(e)) if e.is_connect() => Err(GatewayError::UpstreamConnect(e)),
            Ok(Err(e)) => Err(GatewayError::Upstream(e)),
        }
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
