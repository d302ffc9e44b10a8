//! EXPERIMENT (not shipped): the cost floor of hyper proxy layouts.
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args[1].clone();
    let listen: SocketAddr = args[2].parse().unwrap();
    let upstream: SocketAddr = args[3].parse().unwrap();
    if let Some(m) = mode.strip_prefix("tpc-") {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let m = m.to_string();
                std::thread::spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(async move {
                            let s = tokio::net::TcpSocket::new_v4().unwrap();
                            s.set_reuseport(true).unwrap();
                            s.set_reuseaddr(true).unwrap();
                            s.bind(listen).unwrap();
                            run(m, s.listen(1024).unwrap(), upstream).await
                        })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        return;
    }
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
            run(mode, listener, upstream).await
        })
}

async fn run(mode: String, listener: tokio::net::TcpListener, upstream: SocketAddr) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let base = Arc::new(format!("http://{upstream}"));
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_nodelay(true).unwrap();
        let mode = mode.clone();
        let client = client.clone();
        let base = base.clone();
        tokio::spawn(async move {
            match mode.as_str() {
                "legacy" => {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let client = client.clone();
                        let base = base.clone();
                        async move {
                            let (mut parts, body) = req.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            parts.uri = format!("{}{}", base, parts.uri.path()).parse().unwrap();
                            let r = client
                                .request(Request::from_parts(parts, Full::new(body)))
                                .await
                                .unwrap();
                            let (p, b) = r.into_parts();
                            let b = b.collect().await.unwrap().to_bytes();
                            Ok::<_, Infallible>(Response::from_parts(p, Full::new(b)))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                }
                "conn" | "joined" => {
                    let up = tokio::net::TcpStream::connect(upstream).await.unwrap();
                    up.set_nodelay(true).unwrap();
                    let (sender, conn) =
                        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(up))
                            .await
                            .unwrap();
                    let sender = Arc::new(Mutex::new(Some(sender)));
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let sender = sender.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            let mut s = sender.lock().unwrap().take().unwrap();
                            s.ready().await.unwrap();
                            let r = s
                                .send_request(Request::from_parts(parts, Full::new(body)))
                                .await
                                .unwrap();
                            let (p, b) = r.into_parts();
                            let b = b.collect().await.unwrap().to_bytes();
                            *sender.lock().unwrap() = Some(s);
                            Ok::<_, Infallible>(Response::from_parts(p, Full::new(b)))
                        }
                    });
                    let server = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc);
                    if mode == "conn" {
                        tokio::spawn(conn);
                        let _ = server.await;
                    } else {
                        tokio::pin!(conn);
                        tokio::pin!(server);
                        tokio::select! {
                            _ = &mut server => {}
                            _ = &mut conn => {}
                        }
                    }
                }
                _ => panic!("mode"),
            }
        });
    }
}
