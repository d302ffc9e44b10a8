//! Scenario tests: worker threads and the per-worker keep-alive cache of upstream
//! connections. Real gateway on 127.0.0.1:0, in-process mock upstream that counts the
//! connections it accepts.

use crate::common::*;
use http::StatusCode;
use std::sync::Arc;

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
const RESULT: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;

#[tokio::test]
async fn idle_upstream_connections_are_reused_across_client_connections() {
    let upstream = MockUpstream::start(|_| full(StatusCode::OK, "application/json", RESULT)).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    for _ in 0..5 {
        // `send` opens a new client connection every time.
        let (status, _, body) = send(rpc_post(&format!("http://{}/mcp", gw.addr), CALL)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(json(&body)["id"], 7);
    }
    let seen = upstream.requests();
    assert_eq!(seen.len(), 5);
    assert_eq!(upstream.connection_count(), 1, "one kept-alive connection");
    // Origin-form request target and the upstream's own Host.
    assert_eq!(seen[0].uri.to_string(), "/mcp");
    assert_eq!(
        seen[0].headers["host"].to_str().unwrap(),
        upstream.addr.to_string()
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_connection_that_sent_a_large_body_is_not_kept() {
    let upstream = MockUpstream::start(|_| full(StatusCode::OK, "application/json", RESULT)).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    let url = format!("http://{}/mcp", gw.addr);
    let padding = "x".repeat(100 * 1024);
    let large = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{padding}"}}}}}}"#
    );
    // Small, small (kept, reused), large (closed after its response), small (a new one).
    for body in [CALL, CALL, large.as_str(), CALL] {
        let (status, _, _) = send(rpc_post(&url, body)).await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(upstream.requests().len(), 4);
    assert_eq!(upstream.connection_count(), 2);
    gw.shutdown().await;
}

#[tokio::test]
async fn a_connection_whose_response_was_cut_short_is_not_reused() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |seen| {
        if seen.body.windows(6).any(|w| w == b"stream") {
            source.response()
        } else {
            full(StatusCode::OK, "application/json", RESULT)
        }
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    let streaming = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stream"}}"#;
    // The cut stream's upstream connection goes away ...
    leave_after_first_event(&format!("http://{}/mcp", gw.addr), streaming, &tx).await;
    // ... and the next request gets a fresh one.
    let (status, _, _) = send(rpc_post(&format!("http://{}/mcp", gw.addr), CALL)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(upstream.connection_count(), 2);
    gw.shutdown().await;
}

#[tokio::test]
async fn an_upstream_that_closes_its_connections_is_dialled_again() {
    let upstream = MockUpstream::start(|_| {
        let mut r = full(StatusCode::OK, "application/json", RESULT);
        r.headers_mut()
            .insert("connection", "close".parse().unwrap());
        r
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    for round in 1..=3 {
        let (status, headers, body) =
            send(rpc_post(&format!("http://{}/mcp", gw.addr), CALL)).await;
        assert_eq!(status, StatusCode::OK, "round {round}");
        assert_eq!(json(&body)["id"], 7);
        // Hop-by-hop: the upstream's `Connection: close` is not the client's business.
        assert!(headers.get("connection").is_none_or(|v| v != "close"));
    }
    assert_eq!(upstream.connection_count(), 3);
    gw.shutdown().await;
}

#[tokio::test]
async fn several_workers_serve_one_port() {
    let upstream = MockUpstream::start(|_| full(StatusCode::OK, "application/json", RESULT)).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 4")).await;
    let url = format!("http://{}/mcp", gw.addr);
    let calls: Vec<_> = (0..40)
        .map(|_| tokio::spawn(send(rpc_post(&url, CALL))))
        .collect();
    for call in calls {
        let (status, _, body) = call.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(json(&body)["id"], 7);
    }
    assert_eq!(upstream.requests().len(), 40);
    // Each worker keeps its own connections: never more than the concurrency asked for.
    assert!(upstream.connection_count() <= 40);
    gw.shutdown().await;
}

/// The upstream connection is driven by the request reading it (no connection task): a
/// response far larger than the socket buffers, read slowly by the client, arrives whole
/// (every stall of the client and of the upstream is woken up again), and the connection is
/// then reused.
#[tokio::test]
async fn a_large_response_read_slowly_arrives_whole_and_its_connection_is_reused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const SIZE: usize = 4 << 20;
    let upstream = MockUpstream::start(|seen| {
        if seen.body.windows(5).any(|w| w == b"large") {
            let body: Vec<u8> = (0..SIZE).map(|i| b'a' + (i % 26) as u8).collect();
            full(StatusCode::OK, "application/octet-stream", body)
        } else {
            full(StatusCode::OK, "application/json", RESULT)
        }
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"large"}}"#;
    let mut client = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{call}",
        gw.addr,
        call.len()
    );
    client.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::with_capacity(SIZE + 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let body_start = loop {
        let n = tokio::time::timeout_at(deadline, client.read(&mut chunk))
            .await
            .expect("response stalled")
            .unwrap();
        assert!(n > 0, "connection closed early");
        received.extend_from_slice(&chunk[..n]);
        // Slow reader: the gateway's writes to the client and its reads from the upstream
        // both stall many times over.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            if received.len() >= end + 4 + SIZE {
                break end + 4;
            }
        }
    };
    let body = &received[body_start..];
    assert_eq!(body.len(), SIZE);
    assert!(body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == b'a' + (i % 26) as u8));
    // The connection went back to the cache once the body was read to its end.
    let (status, _, _) = send(rpc_post(&format!("http://{}/mcp", gw.addr), CALL)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(upstream.connection_count(), 1);
    gw.shutdown().await;
}
