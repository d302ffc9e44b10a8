//! Test harness: an in-process mock MCP upstream, a gateway launcher on `127.0.0.1:0`, a small
//! HTTP client, and generated TLS certificates. Nothing here uses fixed ports or fixed paths.

#![allow(dead_code)]

pub mod peers;
pub mod redis;
pub mod scripted;
pub mod serve;

use bytes::Bytes;
use elicitgate::settings::Settings;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub type MockBody = BoxBody<Bytes, Infallible>;

/// A request as the mock upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

type Handler = Arc<dyn Fn(&Seen) -> Response<MockBody> + Send + Sync>;

/// An in-process HTTP server standing in for an MCP server.
pub struct MockUpstream {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Connections accepted so far.
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl MockUpstream {
    /// Starts a plain-HTTP mock whose responses come from `handler`.
    pub async fn start(
        handler: impl Fn(&Seen) -> Response<MockBody> + Send + Sync + 'static,
    ) -> Self {
        Self::start_with_tls(handler, None).await
    }

    /// Starts the mock, behind TLS when `tls` is given.
    pub async fn start_with_tls(
        handler: impl Fn(&Seen) -> Response<MockBody> + Send + Sync + 'static,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let seen_srv = seen.clone();
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let accepted = connections.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let handler = handler.clone();
                let seen = seen_srv.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let handler = handler.clone();
                        let seen = seen.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let s = Seen {
                                method: parts.method,
                                uri: parts.uri,
                                headers: parts.headers,
                                body,
                            };
                            seen.lock().unwrap().push(s.clone());
                            Ok::<_, Infallible>(handler(&s))
                        }
                    });
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    match tls {
                        None => {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                let _ = builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            addr,
            seen,
            connections,
        }
    }

    /// Connections accepted so far.
    pub fn connection_count(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An upstream that answers every request with an empty JSON-RPC result for id 1.
pub async fn json_upstream() -> MockUpstream {
    MockUpstream::start(|_| {
        full(
            StatusCode::OK,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
    })
    .await
}

/// A complete response body.
pub fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<MockBody> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    if !content_type.is_empty() {
        r.headers_mut()
            .insert("content-type", content_type.parse().unwrap());
    }
    r
}

/// An SSE response whose chunks the test sends through the returned channel; dropping the
/// sender ends the stream. `closed` resolves when the gateway drops the stream.
pub fn sse_channel() -> (mpsc::Sender<Bytes>, SseSource) {
    let (tx, rx) = mpsc::channel(16);
    (tx, SseSource(Mutex::new(Some(rx))))
}

/// The receiving half, taken by the first request that uses it.
pub struct SseSource(Mutex<Option<mpsc::Receiver<Bytes>>>);

impl SseSource {
    pub fn response(&self) -> Response<MockBody> {
        let rx = self.0.lock().unwrap().take().expect("SSE source used once");
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|chunk| (Ok::<_, Infallible>(Frame::data(chunk)), rx))
        });
        let mut r = Response::new(StreamBody::new(stream).boxed());
        r.headers_mut()
            .insert("content-type", "text/event-stream".parse().unwrap());
        r.headers_mut()
            .insert("mcp-session-id", "session-1".parse().unwrap());
        r
    }
}

/// A gateway under test, with its audit events captured in memory.
pub struct TestGateway {
    pub addr: SocketAddr,
    pub admin_addr: SocketAddr,
    running: elicitgate::start::Running,
    audit: Mutex<std::sync::mpsc::Receiver<String>>,
    seen_audit: Mutex<Vec<serde_json::Value>>,
}

impl TestGateway {
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every audit event written so far (waits briefly for the writer).
    pub async fn audit(&self) -> Vec<serde_json::Value> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut seen = self.seen_audit.lock().unwrap();
        let rx = self.audit.lock().unwrap();
        seen.extend(
            rx.try_iter()
                .map(|l| serde_json::from_str::<serde_json::Value>(&l).unwrap()),
        );
        seen.clone()
    }

    /// Audit events of one kind.
    pub async fn audit_of(&self, event: &str) -> Vec<serde_json::Value> {
        self.audit()
            .await
            .into_iter()
            .filter(|e| e["event"] == event)
            .collect()
    }

    pub async fn shutdown(self) {
        self.running.shutdown().await;
    }
}

/// Starts the gateway from a YAML configuration.
pub async fn gateway(yaml: &str) -> TestGateway {
    gateway_in(yaml, Path::new("."), None).await
}

/// Starts the gateway; `config_path` enables hot reload of that file.
pub async fn gateway_in(
    yaml: &str,
    base: &Path,
    config_path: Option<std::path::PathBuf>,
) -> TestGateway {
    let settings = Settings::from_yaml(yaml, base).unwrap_or_else(|e| panic!("{e}"));
    let dropped = prometheus::IntCounter::new("test_dropped", "test").unwrap();
    let (sink, rx) = elicitgate::audit::sink::AuditSink::memory(dropped);
    let running = elicitgate::start::start_with(
        settings,
        elicitgate::start::Options {
            config_path,
            audit_sink: Some(sink),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    TestGateway {
        addr: running.addr,
        admin_addr: running.admin_addr,
        running,
        audit: Mutex::new(rx),
        seen_audit: Mutex::new(Vec::new()),
    }
}

/// A minimal configuration with one route `/mcp` → `upstream`.
pub fn config_for(upstream: &str, extra: &str) -> String {
    format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n{extra}\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"{upstream}\"\n"
    )
}

/// A plain HTTP/1.1 client that does not pool (each test sees fresh connections).
pub fn client() -> hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Full<Bytes>,
> {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http()
}

/// A JSON-RPC POST as MCP clients send it.
pub fn rpc_post(url: &str, body: &str) -> Request<Full<Bytes>> {
    Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

/// Sends a request and collects the whole response.
pub async fn send(req: Request<Full<Bytes>>) -> (StatusCode, HeaderMap, Bytes) {
    let response = client().request(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.headers, body)
}

pub fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

/// Reads body frames until `needle` has been seen, with a generous liveness bound (this is a
/// "does it ever arrive" check, not a timing assertion).
pub async fn read_until(body: &mut Incoming, seen: &mut Vec<u8>, needle: &str) {
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, async {
        while !String::from_utf8_lossy(seen).contains(needle) {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        seen.extend_from_slice(&data);
                    }
                }
                other => panic!("stream ended before {needle:?}: {other:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{needle:?} never arrived; got {:?}",
            String::from_utf8_lossy(seen)
        )
    });
}

/// Fetches the gateway's `/metrics` text.
pub async fn metrics(admin: SocketAddr) -> String {
    let req = Request::get(format!("http://{admin}/metrics"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8(body.to_vec()).unwrap()
}

/// A CA and a leaf certificate for `localhost` / `127.0.0.1`, as PEM files in `dir`.
pub struct TestPki {
    pub ca_pem: String,
    pub ca_file: std::path::PathBuf,
    pub cert_file: std::path::PathBuf,
    pub key_file: std::path::PathBuf,
}

pub fn pki(dir: &Path) -> TestPki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "elicitgate test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &ca, &ca_key).unwrap();
    let ca_file = dir.join("ca.pem");
    let cert_file = dir.join("cert.pem");
    let key_file = dir.join("key.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    std::fs::write(&cert_file, leaf.pem()).unwrap();
    std::fs::write(&key_file, leaf_key.serialize_pem()).unwrap();
    TestPki {
        ca_pem: ca.pem(),
        ca_file,
        cert_file,
        key_file,
    }
}

/// Posts `body` to `url` and reads the SSE response until the upstream's first event (sent
/// through `tx`); returns the rest of the response body.
pub async fn read_first_event(url: &str, body: &str, tx: &mpsc::Sender<Bytes>) -> Incoming {
    let response = client().request(rpc_post(url, body)).await.unwrap();
    let mut body = response.into_body();
    let mut got = Vec::new();
    tx.send(Bytes::from_static(b"data: first\n\n"))
        .await
        .unwrap();
    read_until(&mut body, &mut got, "first").await;
    body
}

/// [`read_first_event`], then goes away; returns once the upstream's stream has been closed
/// (sends through `tx` fail), or panics after 20 s.
pub async fn leave_after_first_event(url: &str, body: &str, tx: &mpsc::Sender<Bytes>) {
    drop(read_first_event(url, body, tx).await);
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        while tx.send(Bytes::from_static(b": ping\n\n")).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "upstream stream still open after the client left"
    );
}

/// A rustls client configuration trusting only `ca_pem`.
pub fn client_config(ca_pem: &str) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

pub fn https_client(
    ca_pem: &str,
) -> hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
> {
    let config = client_config(ca_pem);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .enable_http2()
        .build();
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

/// Runs the real binary's `serve` with `config`, `RUST_LOG` unset, stderr read line by line
/// into the returned channel; waits (bounded) until `port` accepts connections.
pub fn serve_with_stderr(
    config: &Path,
    port: u16,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_elicitgate"))
        .args(["serve", "--config"])
        .arg(config)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let up = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "elicitgate serve never listened on {port}");
    (child, rx)
}
