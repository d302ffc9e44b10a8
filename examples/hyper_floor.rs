//! The floor for a hyper-based proxy on this machine: a reverse proxy with no policy, no
//! header rules, no metrics and no timeouts, in the two layouts elicitgate has used. What it
//! costs is what hyper, tokio and the kernel cost; elicitgate's own work is the difference
//! (see BENCHMARKS.md, "Instructions per request"). Loopback only; not a product.
//!
//! ```sh
//! cargo run --release --example hyper_floor -- pooled   127.0.0.1:3102 127.0.0.1:3101
//! cargo run --release --example hyper_floor -- per-core 127.0.0.1:3102 127.0.0.1:3101
//! ```
//!
//! - `pooled`: one multi-threaded runtime, hyper-util's pooled legacy client (elicitgate's
//!   layout before the worker change);
//! - `per-core`: one current-thread runtime and `SO_REUSEPORT` listener per CPU, one upstream
//!   HTTP/1.1 connection per client connection, its I/O in a task of the same thread.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// The same allocator as the gateway.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: hyper_floor pooled|per-core LISTEN UPSTREAM";
    let (Some(mode), Some(listen), Some(upstream)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let listen: SocketAddr = listen.parse()?;
    let upstream: SocketAddr = upstream.parse()?;
    if !listen.ip().is_loopback() || !upstream.ip().is_loopback() {
        return Err("loopback addresses only".into());
    }
    match mode.as_str() {
        "pooled" => tokio::runtime::Runtime::new()?.block_on(pooled(listen, upstream)),
        "per-core" => {
            let listeners = elicitgate::proxy::server::bind_workers(
                listen,
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            )?;
            let threads: Vec<_> = listeners
                .into_iter()
                .map(|listener| {
                    std::thread::spawn(move || -> Result<(), String> {
                        tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .map_err(|e| e.to_string())?
                            .block_on(per_core(listener, upstream))
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            for thread in threads {
                thread.join().map_err(|_| "worker panicked")??;
            }
            Ok(())
        }
        _ => Err(usage.into()),
    }
}

async fn pooled(listen: SocketAddr, upstream: SocketAddr) -> Result<(), BoxError> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let base = Arc::new(format!("http://{upstream}"));
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (client, base) = (client.clone(), base.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                pooled_call(client.clone(), base.clone(), request)
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn per_core(listener: std::net::TcpListener, upstream: SocketAddr) -> Result<(), BoxError> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let Ok(up) = tokio::net::TcpStream::connect(upstream).await else {
                return;
            };
            let _ = up.set_nodelay(true);
            let Ok((sender, connection)) =
                hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(up)).await
            else {
                return;
            };
            tokio::spawn(connection);
            let sender = Arc::new(Mutex::new(Some(sender)));
            let service =
                service_fn(move |request: Request<Incoming>| affine_call(sender.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type Sender = Arc<Mutex<Option<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>>;

async fn pooled_call(
    client: Client<HttpConnector, Full<Bytes>>,
    base: Arc<String>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, BoxError> {
    let (mut parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    parts.uri = format!("{base}{}", parts.uri.path()).parse()?;
    let response = client
        .request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok(Response::from_parts(parts, Full::new(body)))
}

async fn affine_call(
    sender: Sender,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, BoxError> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let taken = sender.lock().map_err(|e| e.to_string())?.take();
    let mut s = taken.ok_or_else(|| "one request at a time".to_string())?;
    s.ready().await?;
    let response = s
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    *sender.lock().map_err(|e| e.to_string())? = Some(s);
    Ok(Response::from_parts(parts, Full::new(body)))
}
