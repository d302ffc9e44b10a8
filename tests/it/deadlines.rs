//! A deadline on every phase of a connection, each reached by a raw peer that stops in that
//! phase: a client that connects and sends nothing, one that stops inside its request head,
//! one that stops inside its TLS handshake; an upstream that never accepts, and one that
//! trickles its answer a byte at a time (JSON and event stream). Each test waits for the
//! outcome with a generous ceiling; none measures speed. (Request bodies, idle and stalled
//! HTTP/2 connections: `bounds.rs` and `tls.rs`.)

use crate::common::*;
use http::StatusCode;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Generous: every bound under test here is 1 s or less.
const CEILING: Duration = Duration::from_secs(15);

/// Reads until the gateway closes the connection; what it sent, or `None` when it is still
/// open at the ceiling.
async fn until_closed<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> Option<String> {
    let mut got = Vec::new();
    let closed = tokio::time::timeout(CEILING, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    closed
        .is_ok()
        .then(|| String::from_utf8_lossy(&got).into_owned())
}

/// The gateway still serves an ordinary call.
async fn still_serves(gw: &TestGateway) {
    let (status, _, _) = send(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_client_that_connects_and_sends_nothing_is_closed_at_the_header_deadline() {
    let upstream = json_upstream().await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "timeouts: { client_header: 500ms }",
    ))
    .await;
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    assert!(
        until_closed(&mut silent).await.is_some(),
        "a connection that never sent a byte is still open"
    );
    still_serves(&gw).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_inside_its_request_head_is_closed_at_the_header_deadline() {
    let upstream = json_upstream().await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "timeouts: { client_header: 500ms }",
    ))
    .await;
    let mut slow = TcpStream::connect(gw.addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n")
        .await
        .unwrap();
    // One more header line now and then, each well inside the deadline: the bound is on the
    // whole head, not on the pause between its pieces.
    let trickle = tokio::spawn(async move {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if slow.write_all(b"x-slow: 1\r\n").await.is_err() {
                break;
            }
        }
        until_closed(&mut slow).await
    });
    let sent = tokio::time::timeout(CEILING + CEILING, trickle)
        .await
        .expect("the trickling head was never cut")
        .unwrap();
    let sent = sent.expect("the trickling head was never cut");
    assert!(
        sent.is_empty() || sent.starts_with("HTTP/1.1 408"),
        "nothing but a 408 for a head that never ended: {sent}"
    );
    still_serves(&gw).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_inside_its_tls_handshake_is_closed_at_the_handshake_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let upstream = json_upstream().await;
    let extra = format!(
        "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}\ntimeouts: {{ tls_handshake: 500ms, client_header: 30s, client_idle: 60s }}",
        pki.cert_file.display(),
        pki.key_file.display()
    );
    let gw = gateway(&config_for(&upstream.url("/mcp"), &extra)).await;
    // Nothing at all, then the first bytes of a ClientHello record and no more.
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    let mut partial = TcpStream::connect(gw.addr).await.unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
        .await
        .unwrap();
    assert!(
        until_closed(&mut silent).await.is_some(),
        "a TLS connection that never sent a byte is still open"
    );
    assert!(
        until_closed(&mut partial).await.is_some(),
        "a TLS handshake stopped halfway is still open"
    );
    // A real client still completes its handshake and its call.
    let mut config = client_config(&pki.ca_pem);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(gw.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await;
    assert!(tls.is_ok(), "{:?}", tls.err());
    gw.shutdown().await;
}

/// A listener whose accept queue is full: a further connect gets no answer at all (Linux drops
/// the SYN), as with an upstream behind a black-holing firewall.
struct Blackhole {
    addr: SocketAddr,
    _listener: socket2::Socket,
    _fillers: Vec<std::net::TcpStream>,
}

fn blackhole() -> Blackhole {
    use socket2::{Domain, Socket, Type};
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    // Fill the queue (backlog 0 still queues one) with connections nobody accepts.
    let mut fillers = Vec::new();
    for _ in 0..4 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => fillers.push(s),
            Err(_) => break,
        }
    }
    Blackhole {
        addr,
        _listener: listener,
        _fillers: fillers,
    }
}

#[tokio::test]
async fn an_upstream_that_never_accepts_is_a_504_at_the_connect_deadline() {
    let hole = blackhole();
    let gw = gateway(&config_for(
        &format!("http://{}/mcp", hole.addr),
        "timeouts: { upstream_connect: 500ms }",
    ))
    .await;
    let (status, _, body) = tokio::time::timeout(
        CEILING,
        send(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}}"#,
        )),
    )
    .await
    .expect("the connect was never given up");
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert!(body.contains("connect_timeout"), "{body}");
    assert!(body.contains("\"id\":3"), "{body}");
    gw.shutdown().await;
}

/// An upstream that sends `head` and then `body` one byte every `pace`, forever if need be.
async fn trickling_upstream(head: &'static str, body: &'static str, pace: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await;
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for byte in body.as_bytes().iter().cycle() {
                    if s.write_all(&[*byte]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(pace).await;
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_json_answer_trickled_a_byte_at_a_time_is_a_504_at_the_total_deadline() {
    let addr = trickling_upstream(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n",
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"#,
        Duration::from_millis(100),
    )
    .await;
    let gw = gateway(&config_for(
        &format!("http://{addr}/mcp"),
        "timeouts: { stream_idle: 1s }",
    ))
    .await;
    let (status, _, body) = tokio::time::timeout(
        CEILING,
        send(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t"}}"#,
        )),
    )
    .await
    .expect("a trickled JSON answer held the client past every deadline");
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert!(body.contains("body_timeout"), "{body}");
    assert!(body.contains("\"id\":5"), "{body}");
    gw.shutdown().await;
}

#[tokio::test]
async fn an_event_trickled_a_byte_at_a_time_ends_with_a_timeout_error_for_the_call() {
    let addr = trickling_upstream(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
        r#"event: message
data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
        Duration::from_millis(100),
    )
    .await;
    let gw = gateway(&config_for(
        &format!("http://{addr}/mcp"),
        "timeouts: { stream_idle: 1s }",
    ))
    .await;
    let response = client()
        .request(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t"}}"#,
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    use http_body_util::BodyExt;
    let body = tokio::time::timeout(CEILING, response.into_body().collect())
        .await
        .expect("a trickled event held the client's stream past every deadline")
        .expect("the stream ends cleanly, with the client's answer")
        .to_bytes();
    let body = String::from_utf8_lossy(&body);
    let data = body
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no event: {body}"));
    let answer: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(answer["id"], 6, "{body}");
    assert_eq!(
        answer["error"]["data"]["reason"], "stream_idle_timeout",
        "{body}"
    );
    assert!(
        !body.contains("progress"),
        "nothing of the unfinished event: {body}"
    );
    let m = metrics(gw.admin_addr).await;
    assert!(
        m.contains(
            r#"elicitgate_upstream_errors_total{reason="stream_idle_timeout",route="demo"} 1"#
        ),
        "{m}"
    );
    gw.shutdown().await;
}
