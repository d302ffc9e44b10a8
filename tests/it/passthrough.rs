//! Scenario tests: the gateway is invisible to everything that is not an elicitation.
//! Real gateway on 127.0.0.1:0, in-process mock upstream.

use crate::common::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use std::sync::Arc;
use std::time::Duration;

const CALL: &str = r#"{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}"#;

#[tokio::test]
async fn json_request_and_response_pass_through_with_mcp_headers_both_ways() {
    let upstream = MockUpstream::start(|seen| {
        let mut r = full(StatusCode::OK, "application/json", {
            // Echo the id to prove the body arrived untouched.
            let v: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[],"unknownField":true}}}}"#,
                v["id"]
            )
        });
        r.headers_mut()
            .insert("mcp-session-id", "sess-42".parse().unwrap());
        r.headers_mut()
            .insert("x-upstream-custom", "yes".parse().unwrap());
        r
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;

    let mut req = rpc_post(&format!("http://{}/mcp?tenant=a", gw.addr), CALL);
    let h = req.headers_mut();
    h.insert("mcp-session-id", "sess-42".parse().unwrap());
    h.insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
    h.insert("mcp-method", "tools/call".parse().unwrap());
    h.insert("mcp-name", "echo".parse().unwrap());
    h.insert(
        "mcp-param-region",
        "=?base64?ZXUtd2VzdA==?=".parse().unwrap(),
    );
    h.insert("authorization", "Bearer test-token-abc".parse().unwrap());
    h.insert("connection", "keep-alive, x-hop".parse().unwrap());
    h.insert("x-hop", "must-not-pass".parse().unwrap());
    let (status, headers, body) = send(req).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["mcp-session-id"], "sess-42");
    assert_eq!(headers["x-upstream-custom"], "yes");
    let v = json(&body);
    assert_eq!(v["id"], "call-1");
    assert_eq!(v["result"]["unknownField"], true);

    let seen = upstream.requests();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!(s.uri.path(), "/mcp");
    assert_eq!(s.uri.query(), Some("tenant=a"));
    assert_eq!(&s.body[..], CALL.as_bytes(), "body forwarded byte for byte");
    for (name, value) in [
        ("mcp-session-id", "sess-42"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
        ("mcp-param-region", "=?base64?ZXUtd2VzdA==?="),
        ("authorization", "Bearer test-token-abc"),
        ("accept", "application/json, text/event-stream"),
        ("x-forwarded-proto", "http"),
        ("x-forwarded-for", "127.0.0.1"),
    ] {
        assert_eq!(
            s.headers.get(name).map(|v| v.to_str().unwrap()),
            Some(value),
            "{name}"
        );
    }
    assert!(
        s.headers.get("x-hop").is_none(),
        "Connection-named header stripped"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn sse_events_reach_the_client_while_the_upstream_holds_the_next_one() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |_| source.response()).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;

    // The head arrives while the upstream has sent no event yet: the gateway takes an event
    // already read along with the head, but never waits for one.
    let response = client()
        .request(rpc_post(&format!("http://{}/mcp", gw.addr), CALL))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert!(response.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("no-transform"));
    assert_eq!(response.headers()["mcp-session-id"], "session-1");
    let mut body = response.into_body();
    let mut got = Vec::new();

    // Event 1 is split across three chunks with CRLF line ends; the client must get it whole
    // while the upstream still holds event 2 back.
    tx.send(Bytes::from_static(b"id: 1\r\nevent: message\r\nda"))
        .await
        .unwrap();
    tx.send(Bytes::from_static(
        b"ta: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r",
    ))
    .await
    .unwrap();
    tx.send(Bytes::from_static(b"\n\r\n")).await.unwrap();
    read_until(&mut body, &mut got, "notifications/progress\"}\r\n\r\n").await;

    tx.send(Bytes::from_static(b": keep-alive\n\n"))
        .await
        .unwrap();
    tx.send(Bytes::from_static(
        b"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\n",
    ))
    .await
    .unwrap();
    tx.send(Bytes::from_static(b"data: \"result\":{}}\n\n"))
        .await
        .unwrap();
    read_until(&mut body, &mut got, "\"result\":{}}\n\n").await;
    drop(tx);
    while let Some(frame) = body.frame().await {
        got.extend_from_slice(&frame.unwrap().into_data().unwrap());
    }
    let expected = "id: 1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n\
                    : keep-alive\n\n\
                    id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\ndata: \"result\":{}}\n\n";
    assert_eq!(
        String::from_utf8(got).unwrap(),
        expected,
        "stream relayed byte for byte"
    );
    let text = metrics(gw.admin_addr).await;
    assert!(
        text.contains("elicitgate_sse_events_total{route=\"demo\"} 3"),
        "{text}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn get_stream_with_last_event_id_is_relayed() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |seen| {
        assert_eq!(seen.method, http::Method::GET);
        source.response()
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let req = Request::get(format!("http://{}/mcp", gw.addr))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "session-1")
        .header("last-event-id", "41")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client().request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut got = Vec::new();
    tx.send(Bytes::from_static(
        b"id: 42\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
    ))
    .await
    .unwrap();
    read_until(&mut body, &mut got, "notifications/message").await;
    let open = metrics(gw.admin_addr).await;
    assert!(
        open.contains("elicitgate_sse_streams_open{route=\"demo\"} 1"),
        "{open}"
    );
    drop(tx);
    while body.frame().await.is_some() {}
    let seen = upstream.requests();
    assert_eq!(seen[0].headers["last-event-id"], "41");
    assert_eq!(seen[0].headers["mcp-session-id"], "session-1");
    let closed = metrics(gw.admin_addr).await;
    assert!(
        closed.contains("elicitgate_sse_streams_open{route=\"demo\"} 0"),
        "{closed}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn delete_and_202_notifications_and_4xx_bodies_pass_through() {
    let upstream = MockUpstream::start(|seen| match (seen.method.as_str(), seen.uri.path()) {
        ("DELETE", _) => full(StatusCode::NO_CONTENT, "", ""),
        ("POST", "/mcp") if seen.headers.get("mcp-session-id").is_some_and(|v| v == "gone") => full(
            StatusCode::NOT_FOUND,
            "application/json",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
        ),
        ("POST", "/mcp") => full(StatusCode::ACCEPTED, "", ""),
        _ => full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "nope"),
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let url = format!("http://{}/mcp", gw.addr);

    let req = Request::delete(&url)
        .header("mcp-session-id", "session-1")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(body.is_empty());

    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, body) = send(rpc_post(&url, note)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert!(body.is_empty());

    let mut req = rpc_post(&url, CALL);
    req.headers_mut()
        .insert("mcp-session-id", "gone".parse().unwrap());
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json(&body)["error"]["message"], "Session not found");

    let req = Request::put(&url).body(Full::new(Bytes::new())).unwrap();
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(&body[..], b"nope");

    let text = metrics(gw.admin_addr).await;
    assert!(text.contains(r#"elicitgate_requests_total{http_method="POST",mcp_method="notifications/initialized",route="demo",status="202"} 1"#), "{text}");
    assert!(text.contains(r#"elicitgate_requests_total{http_method="DELETE",mcp_method="none",route="demo",status="204"} 1"#), "{text}");
    gw.shutdown().await;
}

#[tokio::test]
async fn unknown_path_is_a_404_with_a_jsonrpc_body() {
    let gw = gateway(&config_for("http://127.0.0.1:9/mcp", "")).await;
    let (status, headers, body) = send(rpc_post(&format!("http://{}/other", gw.addr), CALL)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["content-type"], "application/json");
    let v = json(&body);
    assert_eq!(v["jsonrpc"], "2.0");
    assert!(v["error"]["code"].is_i64());
    // `/mcpx` is not under `/mcp`.
    let (status, _, _) = send(rpc_post(&format!("http://{}/mcpx", gw.addr), CALL)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    gw.shutdown().await;
}

#[tokio::test]
async fn upstream_down_is_a_502_carrying_the_request_id() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gw = gateway(&config_for(&format!("http://127.0.0.1:{port}/mcp"), "")).await;
    let (status, _, body) = send(rpc_post(&format!("http://{}/mcp", gw.addr), CALL)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let v = json(&body);
    assert_eq!(v["id"], "call-1");
    assert_eq!(v["error"]["code"], -32603);
    assert_eq!(v["error"]["data"]["reason"], "connect");
    let text = metrics(gw.admin_addr).await;
    assert!(
        text.contains(r#"elicitgate_upstream_errors_total{reason="connect",route="demo"} 1"#),
        "{text}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn upstream_stalled_is_a_504_carrying_the_request_id() {
    // A listener that accepts and never answers.
    let stall = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = stall.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = stall.accept().await {
            held.push(s);
        }
    });
    let cfg = config_for(
        &format!("http://{addr}/mcp"),
        "timeouts: { upstream_first_byte: 300ms }",
    );
    let gw = gateway(&cfg).await;
    let (status, body) = ping_17(&gw).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    let v = json(&body);
    assert_eq!(v["id"], 17);
    assert_eq!(v["error"]["data"]["reason"], "first_byte_timeout");
    gw.shutdown().await;
}

#[tokio::test]
async fn oversize_body_is_a_413_and_never_reaches_the_upstream() {
    let upstream = MockUpstream::start(|_| full(StatusCode::OK, "application/json", "{}")).await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "limits: { max_request_body: 1KiB }",
    ))
    .await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2000)
    );
    let (status, _, body) = send(rpc_post(&format!("http://{}/mcp", gw.addr), &big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json(&body)["error"]["code"], -32600);

    // Chunked (no Content-Length): the limit is enforced while reading.
    let chunks = futures_util::stream::iter((0..4).map(|_| {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![b'x'; 512])))
    }));
    let req = Request::post(format!("http://{}/mcp", gw.addr))
        .body(http_body_util::StreamBody::new(chunks))
        .unwrap();
    let chunked_client =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<http_body_util::StreamBody<_>>();
    let response = chunked_client.request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(upstream.requests().is_empty());

    // Exactly the limit, in four chunks: read whole and forwarded unchanged.
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":""#;
    let tail = r#""}}"#;
    let exact = format!("{head}{}{tail}", "y".repeat(1024 - head.len() - tail.len()));
    assert_eq!(exact.len(), 1024);
    let parts: Vec<Bytes> = exact
        .as_bytes()
        .chunks(256)
        .map(Bytes::copy_from_slice)
        .collect();
    let chunks = futures_util::stream::iter(
        parts
            .into_iter()
            .map(|p| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(p))),
    );
    let req = Request::post(format!("http://{}/mcp", gw.addr))
        .header("content-type", "application/json")
        .body(http_body_util::StreamBody::new(chunks))
        .unwrap();
    let response =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http()
            .request(req)
            .await
            .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(upstream.requests()[0].body, exact.as_bytes());
    gw.shutdown().await;
}

#[tokio::test]
async fn client_disconnect_closes_the_upstream_stream() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |_| source.response()).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    // The upstream's stream must be dropped: sends start failing (bounded liveness check).
    leave_after_first_event(&format!("http://{}/mcp", gw.addr), CALL, &tx).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn idle_upstream_stream_is_cut_and_counted() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |_| source.response()).await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "timeouts: { stream_idle: 200ms }",
    ))
    .await;
    let body = read_first_event(&format!("http://{}/mcp", gw.addr), CALL, &tx).await;
    // No more events: after the idle timeout the call still in flight gets the gateway's
    // timeout error, and the stream ends.
    let rest = tokio::time::timeout(Duration::from_secs(20), body.collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.starts_with("data: {") && rest.contains(r#""reason":"stream_idle_timeout""#),
        "{rest}"
    );
    let text = metrics(gw.admin_addr).await;
    assert!(
        text.contains(
            r#"elicitgate_upstream_errors_total{reason="stream_idle_timeout",route="demo"} 1"#
        ),
        "{text}"
    );
    drop(tx);
    gw.shutdown().await;
}

#[tokio::test]
async fn admin_endpoints_report_health_readiness_and_metrics() {
    let gw = gateway(&config_for("http://127.0.0.1:9/mcp", "")).await;
    for (path, expected) in [
        ("/healthz", StatusCode::OK),
        ("/readyz", StatusCode::OK),
        ("/nope", StatusCode::NOT_FOUND),
    ] {
        let req = Request::get(format!("http://{}{path}", gw.admin_addr))
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(send(req).await.0, expected, "{path}");
    }
    let text = metrics(gw.admin_addr).await;
    assert!(text.contains("elicitgate_build_info{version="), "{text}");
    for family in [
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
    ] {
        assert!(
            text.contains(&format!("\n{family} ")),
            "{family} missing:\n{text}"
        );
    }
    gw.shutdown().await;
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish() {
    let (tx, source) = sse_channel();
    let source = Arc::new(source);
    let upstream = MockUpstream::start(move |_| source.response()).await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "timeouts: { shutdown_grace: 20s }",
    ))
    .await;
    let (addr, admin) = (gw.addr, gw.admin_addr);
    let response = client()
        .request(rpc_post(&format!("http://{addr}/mcp"), CALL))
        .await
        .unwrap();
    let shutdown = tokio::spawn(gw.shutdown());
    tokio::time::sleep(Duration::from_millis(100)).await;
    // New connections are refused once shutdown began.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    // While the in-flight request drains, the orchestrator sees the drain: not ready, alive.
    let status = |path: &'static str| async move {
        let req = Request::get(format!("http://{admin}{path}"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        send(req).await.0
    };
    assert_eq!(status("/readyz").await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status("/healthz").await, StatusCode::OK);
    tx.send(Bytes::from_static(
        b"data: {\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\"result\":{}}\n\n",
    ))
    .await
    .unwrap();
    drop(tx);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("\"result\""));
    tokio::time::timeout(Duration::from_secs(20), shutdown)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn shutdown_closes_idle_keep_alive_connections_without_waiting_for_the_grace_period() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = MockUpstream::start(|_| {
        full(
            StatusCode::OK,
            "application/json",
            r#"{"jsonrpc":"2.0","id":"call-1","result":{}}"#,
        )
    })
    .await;
    // A grace period far longer than the liveness bounds below: only draining can end it.
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "timeouts: { shutdown_grace: 600s }",
    ))
    .await;
    let mut conn = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: {}\r\n\r\n{CALL}",
        CALL.len()
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"result\"") {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the response");
        seen.extend_from_slice(&buf[..n]);
    }
    // The connection is now idle and kept alive; shutdown must close it and finish.
    let shutdown = tokio::spawn(gw.shutdown());
    let n = tokio::time::timeout(Duration::from_secs(30), conn.read(&mut buf))
        .await
        .expect("the idle connection was closed by the drain")
        .unwrap();
    assert_eq!(n, 0, "expected end of stream");
    tokio::time::timeout(Duration::from_secs(30), shutdown)
        .await
        .expect("shutdown finished once the idle connection closed")
        .unwrap();
}

/// An upstream on raw TCP that answers every request with a JSON head and `first` of the
/// body at once, and the rest (`rest`) after `pause` (never, when `pause` is `None`).
async fn slow_body_upstream(
    first: &'static str,
    rest: &'static str,
    pause: Option<Duration>,
) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                // The gateway's request: head and (small) body arrive together.
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{first}",
                    first.len() + rest.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                match pause {
                    Some(pause) => {
                        tokio::time::sleep(pause).await;
                        let _ = s.write_all(rest.as_bytes()).await;
                        let _ = s.read(&mut buf).await;
                    }
                    None => std::future::pending::<()>().await,
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_json_body_that_stalls_is_a_504_body_timeout() {
    let addr = slow_body_upstream(r#"{"jsonrpc":"2.0","#, r#""id":17,"result":{}}"#, None).await;
    let gw = gateway(&config_for(
        &format!("http://{addr}/mcp"),
        "timeouts: { upstream_first_byte: 10s, stream_idle: 300ms }",
    ))
    .await;
    let (status, body) = ping_17(&gw).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    let v = json(&body);
    assert_eq!(v["id"], 17);
    assert_eq!(v["error"]["data"]["reason"], "body_timeout");
    gw.shutdown().await;
}

#[tokio::test]
async fn the_body_gets_the_idle_timeout_not_what_is_left_of_the_first_byte_timeout() {
    // The body's end comes well after the first-byte timeout would have fired, well within
    // the idle timeout.
    let addr = slow_body_upstream(
        r#"{"jsonrpc":"2.0","#,
        r#""id":17,"result":{}}"#,
        Some(Duration::from_millis(1200)),
    )
    .await;
    let gw = gateway(&config_for(
        &format!("http://{addr}/mcp"),
        "timeouts: { upstream_first_byte: 300ms, stream_idle: 20s }",
    ))
    .await;
    let (status, body) = ping_17(&gw).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["id"], 17);
    gw.shutdown().await;
}

/// Sends `ping` with id 17 through the gateway; the status and body it got back.
async fn ping_17(gw: &TestGateway) -> (StatusCode, Bytes) {
    let (status, _, body) = send(rpc_post(
        &format!("http://{}/mcp", gw.addr),
        r#"{"jsonrpc":"2.0","id":17,"method":"ping"}"#,
    ))
    .await;
    (status, body)
}
