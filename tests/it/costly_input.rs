//! Input whose cost could grow without bound, reached through the real gateway: a form
//! `pattern` that backtracks exponentially, an answer too long for its pattern's budget,
//! HTTP/2 stream churn (rapid reset), the stream and connection limits. What the peer sees is
//! what the README's bounds table promises; the gateway keeps serving everyone else.

use crate::common::scripted::*;
use crate::common::*;
use http::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CEILING: Duration = Duration::from_secs(20);

/// A form whose single field carries `pattern` and the server's `default` for it.
async fn pattern_server(pattern: &'static str, default: &'static str) -> MockUpstream {
    legacy_server(move |_| {
        sse(&[form(
            "f-1",
            "Your code",
            json!({"code": {"type": "string", "pattern": pattern, "default": default}}),
        )])
    })
    .await
}

#[tokio::test]
async fn a_pattern_that_backtracks_exponentially_blocks_its_form() {
    // Each character doubles the work of a failing match; the TypeScript SDK's
    // `applyDefaults` would test the server's own non-matching default.
    let upstream =
        pattern_server("^(a|a){1,64}$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab").await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let body = tokio::time::timeout(CEILING, call_tool(&gw))
        .await
        .expect("the call was held");
    assert!(!body.contains("elicitation/create"), "forwarded: {body}");
    let answer = gateway_answer_within(&upstream, "f-1", CEILING).await;
    assert_eq!(
        answer["error"]["data"]["rules"],
        json!(["form.schema"]),
        "{answer}"
    );
    let blocked = gw.audit_of("elicitation.blocked").await;
    assert!(
        blocked
            .iter()
            .any(|e| e.to_string().contains("schema.pattern_cost")),
        "the finding names the bound: {blocked:?}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn an_answer_too_long_for_its_patterns_budget_fails_closed() {
    // Polynomial (five unbounded repetitions): allowed, but only short subjects are tested.
    let upstream = pattern_server(r"^\d*\d*\d*\d*\d*x$", "12x").await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("elicitation/create"));
    let (status, refused) = tokio::time::timeout(
        CEILING,
        answer(
            &gw,
            "f-1",
            json!({"action": "accept", "content": {"code": "1".repeat(5000)}}),
        ),
    )
    .await
    .expect("the answer was held");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["error"]["data"]["rules"],
        json!(["response.invalid"])
    );
    let reached: Vec<Value> = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m["id"] == "f-1" && m.get("result").is_some())
        .collect();
    assert!(
        reached.is_empty(),
        "the untested answer reached the server: {reached:?}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn http2_streams_are_capped_and_a_rapid_reset_peer_gets_goaway() {
    // HTTP/2 is served over TLS (ALPN), as MCP clients use it.
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let upstream = json_upstream().await;
    let extra = format!(
        "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}\nlimits: {{ max_streams_per_connection: 7 }}",
        pki.cert_file.display(),
        pki.key_file.display()
    );
    let gw = gateway(&config_for(&upstream.url("/mcp"), &extra)).await;
    let mut config = client_config(&pki.ca_pem);
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(gw.addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (client, mut connection) = h2::client::handshake(tls).await.unwrap();
    // Drive the connection until the server's SETTINGS arrive.
    let deadline = tokio::time::Instant::now() + CEILING;
    while connection.max_concurrent_send_streams() != 7 && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout(Duration::from_millis(20), &mut connection).await;
    }
    assert_eq!(
        connection.max_concurrent_send_streams(),
        7,
        "SETTINGS_MAX_CONCURRENT_STREAMS"
    );
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    // Open streams and reset each at once, as CVE-2023-44487 does.
    let mut sent = 0;
    for _ in 0..10_000 {
        let request = http::Request::post(format!("https://localhost:{}/mcp", gw.addr.port()))
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        let Ok((response, mut stream)) = client.send_request(request, false) else {
            break;
        };
        stream.send_reset(h2::Reason::CANCEL);
        drop(response);
        sent += 1;
        client = match tokio::time::timeout(CEILING, client.ready()).await {
            Ok(Ok(ready)) => ready,
            _ => break,
        };
    }
    let ended = tokio::time::timeout(CEILING, connection)
        .await
        .expect("the resetting peer's connection is still open")
        .unwrap();
    // The gateway ends the connection: the peer reads a GOAWAY (ENHANCE_YOUR_CALM), or —
    // still writing its resets when the gateway closes — a broken pipe.
    let error = ended.expect_err("the gateway ended the connection");
    assert!(
        (error.is_go_away() && error.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM))
            || error.is_io(),
        "after {sent} resets: {error:?}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn connections_past_the_limit_wait_until_one_ends() {
    let upstream = json_upstream().await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "limits: { max_connections: 2 }",
    ))
    .await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{ping}",
        ping.len()
    );
    // Two keep-alive connections, each served once and then held open.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(CEILING, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        );
        held.push(s);
    }
    // A third client is accepted by the kernel but not served while both are held.
    let third = tokio::spawn(send(rpc_post(&gw.url(), ping)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "a third connection was served past the limit"
    );
    drop(held.pop());
    let (status, _, _) = tokio::time::timeout(CEILING, third)
        .await
        .expect("the waiting connection was never served")
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    gw.shutdown().await;
}

/// A server that never takes the gateway's answers cannot make it open a socket per blocked
/// elicitation or queue them without end: 16 on the wire, 1024 waiting, the rest dropped and
/// counted (`gateway_answers_total{result="failed"}`).
#[tokio::test]
async fn the_gateways_own_answers_are_bounded_when_the_server_never_takes_them() {
    use http_body_util::BodyExt;
    let per_call = 64;
    let upstream = MockUpstream::start(move |seen| {
        let msg = body_json(seen);
        match msg["method"].as_str() {
            Some("initialize") => {
                let mut r = full(StatusCode::OK, "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string());
                r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                r
            }
            Some("tools/call") => {
                let forms: Vec<Value> = (0..per_call)
                    .map(|i| form(&format!("b-{i}"), "Password", json!({"password": {"type": "string"}})))
                    .collect();
                full(StatusCode::OK, "text/event-stream", sse(&forms))
            }
            // The gateway's answers: taken, and never finished.
            None if msg.get("id").is_some() => {
                let never = futures_util::stream::pending::<
                    Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>,
                >();
                let mut r = http::Response::new(http_body_util::StreamBody::new(never).boxed());
                r.headers_mut().insert("content-type", "application/json".parse().unwrap());
                r
            }
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "workers: 1")).await;
    initialize(&gw, BOTH).await;
    let calls = 20;
    for _ in 0..calls {
        let body = tokio::time::timeout(CEILING, call_tool(&gw))
            .await
            .expect("a call was held");
        assert!(!body.contains("elicitation/create"), "forwarded");
    }
    // Every answer is dropped at once (queue full), finished, or still outstanding; at most
    // 16 + 1024 are outstanding. (The gateway stops reading an answer's endless body after a
    // while, so a few finish meanwhile.)
    let count = |m: &str, result: &str| -> usize {
        let series =
            format!(r#"elicitgate_gateway_answers_total{{result="{result}",route="demo"}} "#);
        m.lines()
            .find_map(|l| l.strip_prefix(series.as_str())?.parse().ok())
            .unwrap_or(0)
    };
    let total = calls * per_call;
    let deadline = tokio::time::Instant::now() + CEILING;
    let mut m = metrics(gw.admin_addr).await;
    while count(&m, "failed") == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        m = metrics(gw.admin_addr).await;
    }
    let seen = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m.get("method").is_none() && m.get("id").is_some())
        .count();
    let m = metrics(gw.admin_addr).await;
    let (ok, failed) = (count(&m, "ok"), count(&m, "failed"));
    assert!(
        failed > 0,
        "past the queue, answers are dropped and counted: {m}"
    );
    assert!(
        total - ok - failed <= 1024 + 16,
        "outstanding: {} of {total} ({ok} ok, {failed} failed)",
        total - ok - failed
    );
    assert!(
        seen <= 16 + ok + failed,
        "{seen} answers reached the server, {ok} + {failed} finished: at most 16 on the wire"
    );
    gw.shutdown().await;
}
