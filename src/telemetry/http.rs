//! The OTLP exporter's HTTP client: the gateway's own hyper client (rustls, system roots),
//! driven on the gateway's tokio runtime.
//!
//! The SDK's batch processors export from their own threads with a plain executor; a hyper
//! client needs a tokio reactor, so each export is spawned onto the runtime the gateway
//! started on and awaited from there. Written here (a few lines of glue, not an HTTP client)
//! rather than enabling the exporter's reqwest client, which would bring a second HTTP and
//! TLS stack into the binary.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use opentelemetry_http::{HttpClient, HttpError};
use std::time::Duration;

/// A collector's answer is a small protobuf status; anything larger is not read.
const MAX_ANSWER: usize = 64 * 1024;

/// An HTTP client for OTLP exports.
#[derive(Clone)]
pub struct ExportClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

impl std::fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportClient")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl ExportClient {
    /// A client on the current tokio runtime (call from inside it).
    pub fn new(timeout: Duration) -> anyhow::Result<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(crate::tls::client_config(None)?)
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(2)
            .build(connector);
        Ok(Self {
            client,
            runtime: tokio::runtime::Handle::try_current()?,
            timeout,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let timeout = self.timeout;
        let request = request.map(Full::new);
        let exchange = async move {
            let response = client.request(request).await?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_ANSWER).collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        let task = self
            .runtime
            .spawn(async move { tokio::time::timeout(timeout, exchange).await });
        match task.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("export timed out after {timeout:?}").into()),
            Err(e) => Err(format!("export task failed: {e}").into()),
        }
    }
}
