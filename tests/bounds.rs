//! Every bound reached by a hostile peer (issue 14): what the peer sees, and that the gateway
//! stays up for everyone else. Time limits here are bounds under test, never performance
//! assertions: each test only waits for an outcome, with a generous ceiling.

mod common;

use common::*;
use http::StatusCode;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads what the gateway sends on `stream` until it closes (at most `ceiling`).
async fn read_all(stream: &mut TcpStream, ceiling: Duration) -> String {
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(ceiling, stream.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

async fn json_upstream() -> MockUpstream {
    MockUpstream::start(|_| {
        full(
            StatusCode::OK,
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
    })
    .await
}

fn head(length: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn a_stalled_request_body_gets_408_and_never_reaches_the_upstream() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "timeouts:\n  request_body_idle: 300ms\n  request_body: 5s\n",
    ))
    .await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(head(1000).as_bytes()).await.unwrap();
    s.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
    let answer = read_all(&mut s, Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_idle_timeout"), "{answer}");
    assert!(up.requests().is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn a_trickling_request_body_gets_408_at_the_total_bound() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "timeouts:\n  request_body_idle: 2s\n  request_body: 800ms\n",
    ))
    .await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(head(1000).as_bytes()).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    // One byte every 100 ms: never idle, never done.
    let trickle = tokio::spawn(async move {
        for _ in 0..200 {
            if wr.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut buf)).await;
    trickle.abort();
    let answer = String::from_utf8_lossy(&buf);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"body_timeout\""), "{answer}");
    assert!(up.requests().is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn the_buffer_budget_refuses_new_bodies_while_stalled_ones_hold_it() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "limits:\n  max_request_body: 64KiB\n  request_buffer_budget: 64KiB\ntimeouts:\n  request_body_idle: 30s\n  request_body: 60s\n",
    ))
    .await;
    // A stalled body holding most of the budget.
    let mut hog = TcpStream::connect(gw.addr).await.unwrap();
    hog.write_all(head(65_000).as_bytes()).await.unwrap();
    hog.write_all(&vec![b' '; 60_000]).await.unwrap();
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","pad":"{}"}}"#, "x".repeat(10_000));
    let mut refused = None;
    for _ in 0..100 {
        let (status, _, answer) = send(rpc_post(&gw.url(), &body)).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            refused = Some(String::from_utf8_lossy(&answer).into_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = refused.expect("a body past the budget is refused with 503");
    assert!(refused.contains("buffer_budget"), "{refused}");
    // Small bodies still fit, and the budget comes back when the stalled peer leaves.
    let (status, _, _) = send(rpc_post(&gw.url(), r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)).await;
    assert_eq!(status, StatusCode::OK);
    drop(hog);
    let mut ok = false;
    for _ in 0..100 {
        let (status, _, _) = send(rpc_post(&gw.url(), &body)).await;
        if status == StatusCode::OK {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "the budget is given back when the stalled body goes away");
    gw.shutdown().await;
}
