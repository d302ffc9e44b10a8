//! Enforcement scenarios against a scripted mock MCP server, for the cases real SDKs will not
//! produce on demand: tampered and replayed answers, completions for unknown ids, standalone
//! streams, `-32042` errors, rate limits, repeats, dry run, kill switch, escaped JSON.

use crate::common::scripted::*;
use crate::common::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Waits (bounded) for the gateway's own answer to the server for `id`.
async fn gateway_answer(upstream: &MockUpstream, id: &str) -> Value {
    gateway_answer_within(upstream, id, Duration::from_secs(5)).await
}

fn with_policy(upstream: &str, policy: &str) -> String {
    config_for(upstream, &format!("policies:\n  p:\n{policy}"))
        .replace("    upstream:", "    policy: p\n    upstream:")
}

#[tokio::test]
async fn elicitation_on_the_standalone_get_stream_is_unassociated() {
    let upstream =
        legacy_server(|_| sse(&[form("g-1", "Pick a colour", json!({"c":{"type":"string"}}))]))
            .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let req = in_session(
        Request::get(gw.url())
            .header("accept", "text/event-stream")
            .body(Full::new(Bytes::new()))
            .unwrap(),
    );
    let (_, _, body) = send(req).await;
    assert!(
        !String::from_utf8_lossy(&body).contains("elicitation/create"),
        "{body:?}"
    );
    let answer = gateway_answer(&upstream, "g-1").await;
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(
        answer["error"]["data"]["rules"],
        json!(["request.unassociated"])
    );
    // The gateway answered within the client's session, so the server can route it.
    let posted = upstream
        .requests()
        .into_iter()
        .find(|s| body_json(s)["id"] == "g-1")
        .unwrap();
    assert_eq!(posted.headers["mcp-session-id"], "s-1");
    gw.shutdown().await;
}

#[tokio::test]
async fn blocked_event_keeps_its_sse_id_and_an_escaped_method_is_still_caught() {
    let upstream = legacy_server(|_| {
        // `elicitation\/create` is the same method to any JSON parser.
        "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"e-1\",\"method\":\"elicitation\\/create\",\"params\":{\"message\":\"Enter your password\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"pw\":{\"type\":\"string\",\"format\":\"password\"}}}}}\n\nid: 8\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"result\":{}}\n\n".to_string()
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let stream = call_tool(&gw).await;
    assert_eq!(
        stream,
        "id: 7\n\nid: 8\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"result\":{}}\n\n"
    );
    // `format: password` is both outside the restricted schema subset and a secret.
    assert_eq!(
        gateway_answer(&upstream, "e-1").await["error"]["data"]["rules"],
        json!(["form.schema", "form.secret"])
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn completion_for_unknown_or_already_completed_ids_is_dropped() {
    let upstream = legacy_server(|_| {
        let done = |eid: &str| json!({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":eid}});
        sse(&[
            url_elicitation("u-1", "eid-1", "https://auth.example.com/connect"),
            done("eid-1"),
            done("eid-1"),
            done("eid-tampered"),
            json!({"jsonrpc":"2.0","id":"c-1","result":{}}),
        ])
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let stream = call_tool(&gw).await;
    assert_eq!(
        stream.matches("notifications/elicitation/complete").count(),
        1,
        "{stream}"
    );
    assert!(
        stream.contains("eid-1") && !stream.contains("eid-tampered"),
        "{stream}"
    );
    assert_eq!(gw.audit_of("completion.dropped").await.len(), 2);
    gw.shutdown().await;
}

#[tokio::test]
async fn replayed_and_unknown_answers_are_refused_other_responses_pass() {
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Pick a region",
            json!({"region":{"type":"string","enum":["eu","us"]}}),
        )])
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("f-1"));
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    assert_eq!(
        answer(&gw, "f-1", accept.clone()).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = answer(&gw, "f-1", accept.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "replay refused");
    assert_eq!(body["error"]["data"]["rules"], json!(["response.unknown"]));
    let (status, _) = answer(&gw, "never-asked", accept).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown id refused");
    // An answer to a server ping is not an elicitation answer: it passes.
    let (status, _) = answer(&gw, "ping-1", json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let forwarded: Vec<Value> = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m["id"] == "f-1")
        .collect();
    assert_eq!(
        forwarded.len(),
        1,
        "only the first answer reached the server"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn url_required_errors_are_judged() {
    let upstream = MockUpstream::start(|seen| {
        let msg = body_json(seen);
        if msg["method"] == "initialize" {
            let mut r = full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":0,"result":{}}).to_string());
            r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
            return r;
        }
        let url = if msg["params"]["name"] == "bad" { "http://auth.example.com/x" } else { "https://auth.example.com/x" };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"error":{"code":-32042,"message":"URL elicitation required",
            "data":{"elicitations":[{"mode":"url","elicitationId":"e-9","url":url,"message":"Authorise access"}]}}}).to_string())
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let (_, _, body) = send(in_session(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bad"}}"#,
    )))
    .await;
    let v = json(&body);
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -31042);
    assert_eq!(v["error"]["data"]["rules"], json!(["url.scheme"]));
    assert!(
        !body_text(&body).contains("auth.example.com"),
        "blocked URL never shown"
    );
    let (_, _, body) = send(in_session(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"good"}}"#,
    )))
    .await;
    assert_eq!(
        json(&body)["error"]["code"],
        -32042,
        "an acceptable URL passes unchanged"
    );
    // Without a session the client's capabilities are unknown: fail closed.
    let (_, _, body) = send(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"good"}}"#,
    ))
    .await;
    assert_eq!(
        json(&body)["error"]["data"]["rules"],
        json!(["mode.undeclared"])
    );
    gw.shutdown().await;
}

fn body_text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 2026-07-28 server: `tools/call` without `inputResponses` asks; with them, it completes.
async fn modern_server() -> MockUpstream {
    MockUpstream::start(|seen| {
        let msg = body_json(seen);
        let result = match msg["params"].get("inputResponses") {
            None => json!({"resultType":"input_required","requestState":"rs-1","inputRequests":{
                "region":{"method":"elicitation/create","params":{"mode":"form","message":"Pick a region",
                    "requestedSchema":{"type":"object","properties":{"region":{"type":"string","enum":["eu","us"]}},"required":["region"]}}},
                "llm":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}}}),
            Some(r) => json!({"resultType":"complete","content":[{"type":"text","text":r.to_string()}]}),
        };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string())
    })
    .await
}

fn modern_call(id: u32, extra: Value) -> String {
    let mut params = json!({"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}).to_string()
}

async fn modern_send(gw: &TestGateway, body: &str) -> (StatusCode, Value) {
    let mut req = rpc_post(&gw.url(), body);
    req.headers_mut()
        .insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    req.headers_mut()
        .insert("authorization", "Bearer user-a".parse().unwrap());
    let (status, _, body) = send(req).await;
    (status, json(&body))
}

#[tokio::test]
async fn retries_must_echo_the_request_state_answer_only_asked_keys_and_are_single_use() {
    let upstream = modern_server().await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let (_, asked) = modern_send(&gw, &modern_call(1, json!({}))).await;
    assert_eq!(asked["result"]["resultType"], "input_required");
    let good = json!({"region":{"action":"accept","content":{"region":"eu"}},"llm":{"role":"assistant","content":{"type":"text","text":"hi"}}});

    let (status, v) = modern_send(
        &gw,
        &modern_call(
            2,
            json!({"requestState":"rs-tampered","inputResponses":good}),
        ),
    )
    .await;
    assert_eq!(
        (status, v["error"]["data"]["rules"].clone()),
        (StatusCode::BAD_REQUEST, json!(["response.unknown"]))
    );
    let extra = json!({"region":{"action":"accept","content":{"region":"eu"}},"smuggled":{"action":"accept"}});
    let (status, v) = modern_send(
        &gw,
        &modern_call(3, json!({"requestState":"rs-1","inputResponses":extra})),
    )
    .await;
    assert_eq!(
        (status, v["error"]["data"]["rules"].clone()),
        (StatusCode::BAD_REQUEST, json!(["response.unknown"]))
    );
    let bad = json!({"region":{"action":"accept","content":{"region":"mars"}}});
    let (status, v) = modern_send(
        &gw,
        &modern_call(4, json!({"requestState":"rs-1","inputResponses":bad})),
    )
    .await;
    assert_eq!(
        (status, v["error"]["data"]["rules"].clone()),
        (StatusCode::BAD_REQUEST, json!(["response.invalid"]))
    );
    // A corrected retry is still accepted, once.
    let (status, v) = modern_send(
        &gw,
        &modern_call(5, json!({"requestState":"rs-1","inputResponses":good})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["resultType"], "complete");
    let (status, _) = modern_send(
        &gw,
        &modern_call(6, json!({"requestState":"rs-1","inputResponses":good})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a replayed retry is refused"
    );
    let reached: Vec<Value> = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m["params"].get("inputResponses").is_some())
        .collect();
    assert_eq!(reached.len(), 1, "only the valid retry reached the server");
    assert_eq!(
        reached[0]["params"]["requestState"], "rs-1",
        "requestState forwarded byte-exact"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn rate_limit_and_repeat_after_decline() {
    let upstream = legacy_server(|msg| {
        let n = msg["params"]["name"].as_str().unwrap_or("x").to_owned();
        sse(&[form(
            &format!("f-{n}"),
            "Pick a region",
            json!({"region":{"type":"string"}}),
        )])
    })
    .await;
    let policy = "    rate: { max_per_minute: 2 }\n    repeat: { window: 10m }\n";
    let gw = gateway(&with_policy(&upstream.url("/mcp"), policy)).await;
    initialize(&gw, BOTH).await;
    let call = |name: &str| {
        in_session(rpc_post(
            &gw.url(),
            &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":name}})
                .to_string(),
        ))
    };
    let (_, _, first) = send(call("1")).await;
    assert!(body_text(&first).contains("f-1"));
    assert_eq!(
        answer(&gw, "f-1", json!({"action":"decline"})).await.0,
        StatusCode::ACCEPTED
    );
    // The same question again right after a decline: not shown.
    let (_, _, again) = send(call("2")).await;
    assert!(!body_text(&again).contains("f-2"), "{again:?}");
    assert_eq!(
        gateway_answer(&upstream, "f-2").await["error"]["data"]["rules"],
        json!(["repeat.after_decline"])
    );
    let (_, _, third) = send(call("3")).await;
    assert!(!body_text(&third).contains("f-3"));
    let rules = gateway_answer(&upstream, "f-3").await["error"]["data"]["rules"].clone();
    assert!(
        rules.as_array().unwrap().contains(&json!("rate.limit")),
        "{rules}"
    );
    let m = metrics(gw.admin_addr).await;
    assert!(
        m.contains(r#"elicitgate_repeated_prompts_total{route="demo"} 2"#),
        "{m}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn dry_run_forwards_and_audits_and_the_kill_switch_blocks_everything() {
    let upstream = legacy_server(|_| {
        sse(&[form(
            "p-1",
            "Enter your password",
            json!({"password":{"type":"string"}}),
        )])
    })
    .await;
    let gw = gateway(&with_policy(&upstream.url("/mcp"), "    dry_run: true\n")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("p-1"), "dry run forwards");
    let audited = gw.audit_of("elicitation.audited").await;
    assert_eq!(audited[0]["rules"], json!(["form.secret"]));
    // What dry run let through is told apart from rules set to `audit`.
    assert_eq!(audited[0]["verdict"], "would_deny");
    assert!(metrics(gw.admin_addr).await.contains(
        r#"elicitgate_elicitations_total{mode="form",route="demo",verdict="would_deny"} 1"#
    ));
    gw.shutdown().await;

    let upstream =
        legacy_server(|_| sse(&[form("k-1", "Pick a colour", json!({"c":{"type":"string"}}))]))
            .await;
    let gw = gateway(&with_policy(
        &upstream.url("/mcp"),
        "    kill_switch: true\n",
    ))
    .await;
    initialize(&gw, BOTH).await;
    assert!(!call_tool(&gw).await.contains("k-1"));
    assert_eq!(
        gateway_answer(&upstream, "k-1").await["error"]["data"]["rules"],
        json!(["mode.disabled"])
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_lost_answer_expires_and_a_retried_request_elicits_afresh() {
    let upstream = legacy_server(|msg| {
        let n = msg["params"]["name"].as_str().unwrap_or("x").to_owned();
        sse(&[form(
            &format!("f-{n}"),
            "Pick a region",
            json!({"region":{"type":"string"}}),
        )])
    })
    .await;
    let gw = gateway(&with_policy(
        &upstream.url("/mcp"),
        "    pending: { ttl: 300ms }\n",
    ))
    .await;
    initialize(&gw, BOTH).await;
    let call = |name: &str| {
        in_session(rpc_post(
            &gw.url(),
            &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":name}})
                .to_string(),
        ))
    };
    let (_, _, first) = send(call("1")).await;
    assert!(body_text(&first).contains("f-1"));
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The answer arrives after the pending window: refused, not a stuck state.
    assert_eq!(
        answer(
            &gw,
            "f-1",
            json!({"action":"accept","content":{"region":"eu"}})
        )
        .await
        .0,
        StatusCode::BAD_REQUEST
    );
    // The client retries the original request: a fresh elicitation, answered normally.
    let (_, _, retry) = send(call("2")).await;
    assert!(body_text(&retry).contains("f-2"));
    assert_eq!(
        answer(
            &gw,
            "f-2",
            json!({"action":"accept","content":{"region":"eu"}})
        )
        .await
        .0,
        StatusCode::ACCEPTED
    );
    let m = metrics(gw.admin_addr).await;
    assert!(m.contains("elicitgate_pending_elicitations 0"), "{m}");
    gw.shutdown().await;
}

#[tokio::test]
async fn pending_elicitations_end_with_their_request_but_survive_an_early_close() {
    let upstream = legacy_server(|msg| {
        let n = msg["params"]["name"].as_str().unwrap_or("x").to_owned();
        let ask = form(
            &format!("f-{n}"),
            "Pick a region",
            json!({"region":{"type":"string"}}),
        );
        if n == "done" {
            // The tool finished (timed out waiting) and the stream carried its final result.
            sse(&[
                ask,
                json!({"jsonrpc":"2.0","id":"c","result":{"isError":true,"content":[]}}),
            ])
        } else {
            // A resumable server closed the stream early; the client will answer and poll.
            sse(&[ask])
        }
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let call = |name: &str| {
        in_session(rpc_post(
            &gw.url(),
            &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":name}})
                .to_string(),
        ))
    };
    send(call("done")).await;
    send(call("early")).await;
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    assert_eq!(
        answer(&gw, "f-done", accept.clone()).await.0,
        StatusCode::BAD_REQUEST,
        "its request is over"
    );
    assert_eq!(
        answer(&gw, "f-early", accept).await.0,
        StatusCode::ACCEPTED,
        "still awaited by the server"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn the_gateway_never_fetches_a_url_mode_link() {
    // A listener standing in for the external page: it must never see a connection.
    let page = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = page.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while page.accept().await.is_ok() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let link = format!("https://localhost:{port}/connect?flow=abc");
    let upstream = legacy_server(move |_| sse(&[url_elicitation("u-1", "e-1", &link)])).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let stream = call_tool(&gw).await;
    assert!(
        stream.contains(&format!("localhost:{port}")),
        "the link reaches the client unchanged: {stream}"
    );
    assert_eq!(
        answer(&gw, "u-1", json!({"action":"accept"})).await.0,
        StatusCode::ACCEPTED
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the gateway fetched the page"
    );
    // The audit event names the host, never the query.
    let allowed = gw.audit_of("elicitation.allowed").await;
    assert_eq!(allowed[0]["url"]["host"], "localhost");
    assert_eq!(allowed[0]["url"]["query"], "flow=[redacted]");
    gw.shutdown().await;
}

#[tokio::test]
async fn a_batch_carrying_elicitation_answers_is_refused() {
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Pick a region",
            json!({"region":{"type":"string"}}),
        )])
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("f-1"));
    let batch =
        r#"[{"jsonrpc":"2.0","id":"f-1","result":{"action":"accept","content":{"region":"eu"}}}]"#;
    let (status, _, body) = send(in_session(rpc_post(&gw.url(), batch))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        json(&body)["error"]["data"]["rules"],
        json!(["response.unknown"])
    );
    assert!(
        upstream
            .requests()
            .iter()
            .all(|s| !s.body.starts_with(b"[")),
        "the batch never reached the server"
    );
    // A batch without elicitation content is not the gateway's business.
    let plain = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    let (status, _, _) = send(in_session(rpc_post(&gw.url(), plain))).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    gw.shutdown().await;
}

#[tokio::test]
async fn a_body_the_gateway_cannot_read_is_refused_not_forwarded() {
    let upstream = legacy_server(|_| sse(&[])).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let before = upstream.requests().len();
    for body in [
        // Two `method` members: a server that keeps the last would see an unshaped initialize.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"requests":{"elicitation":{"create":{}}}}},"clientInfo":{"name":"x","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#,
        r#"{"jsonrpc":"2.0"}"#,
    ] {
        let (status, _, reply) = send(rpc_post(&gw.url(), body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let reply = json(&reply);
        assert_eq!(reply["error"]["code"], -32600);
        assert_eq!(reply["error"]["data"]["reason"], "invalid_message");
    }
    assert_eq!(
        upstream.requests().len(),
        before,
        "nothing reached the server"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_delete_the_server_refuses_changes_nothing_and_an_undelivered_answer_stays_pending() {
    let broken = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let upstream = {
        let broken = broken.clone();
        MockUpstream::start(move |seen| {
            let msg = body_json(seen);
            match (seen.method.as_str(), msg["method"].as_str()) {
                ("POST", Some("initialize")) => {
                    let mut r = full(StatusCode::OK, "application/json",
                        json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string());
                    r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                    r
                }
                ("POST", Some("tools/call")) => full(StatusCode::OK, "text/event-stream",
                    sse(&[form("f-1", "Pick a region", json!({"region":{"type":"string"}}))])),
                // The server refuses to end the session.
                ("DELETE", _) => full(StatusCode::FORBIDDEN, "", ""),
                ("POST", None) if broken.load(std::sync::atomic::Ordering::SeqCst) => {
                    // The connection dies before any response: the answer never arrived.
                    panic!("mock upstream: dropping the connection on purpose")
                }
                _ => full(StatusCode::ACCEPTED, "", ""),
            }
        })
        .await
    };
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("f-1"));
    let mut delete = in_session(rpc_post(&gw.url(), ""));
    *delete.method_mut() = http::Method::DELETE;
    assert_eq!(send(delete).await.0, StatusCode::FORBIDDEN);
    // Still pending after the refused DELETE; the first delivery fails.
    broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    let (status, _) = answer(&gw, "f-1", accept.clone()).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    // The answer never reached the server: it is pending again, and accepted once.
    broken.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        answer(&gw, "f-1", accept.clone()).await.0,
        StatusCode::ACCEPTED
    );
    assert_eq!(answer(&gw, "f-1", accept).await.0, StatusCode::BAD_REQUEST);
    gw.shutdown().await;
}

#[tokio::test]
async fn a_session_named_two_ways_is_refused() {
    let upstream = legacy_server(|_| sse(&[])).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
    for query in [
        "?sessionId=victim",
        "?session_id=mine&session_id=victim",
        "?sessionId=a&session_id=b",
    ] {
        let url = format!("{}{query}", gw.url());
        let mut req = rpc_post(&url, call);
        if query == "?sessionId=victim" {
            req.headers_mut()
                .insert("mcp-session-id", "mine".parse().unwrap());
        }
        let (status, _, body) = send(req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(
            json(&body)["error"]["data"]["detail"],
            "session.ambiguous",
            "{query}"
        );
    }
    assert!(
        upstream.requests().iter().all(|r| r.method != "POST"),
        "nothing ambiguous reached the server"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_refused_answer_is_answered_at_once_whatever_the_server_replies_to_the_gateway() {
    // The server replies to the gateway's error (sent in place of the refused answer) with a
    // body that never ends. The client's refusal must not wait for it: the gateway reads
    // such replies on the side, bounded in bytes and time.
    let (tx, endless) = sse_channel();
    let endless = Arc::new(endless);
    let upstream = MockUpstream::start(move |seen| {
        let msg = body_json(seen);
        match msg["method"].as_str() {
            Some("initialize") => {
                let mut r = full(StatusCode::OK, "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string());
                r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                r
            }
            Some("tools/call") => full(
                StatusCode::OK,
                "text/event-stream",
                sse(&[form("f-1", "Pick a region", json!({"region":{"type":"string","enum":["eu","us"]}}))]),
            ),
            _ if msg.get("error").is_some() => endless.response(),
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("f-1"));
    let refused = tokio::time::timeout(
        Duration::from_secs(20),
        answer(
            &gw,
            "f-1",
            json!({"action":"accept","content":{"region":"mars"}}),
        ),
    )
    .await
    .expect("the refusal waited for the server's endless reply");
    assert_eq!(refused.0, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.1["error"]["data"]["rules"],
        json!(["response.invalid"])
    );
    let reached: Vec<Value> = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m["id"] == "f-1")
        .collect();
    assert_eq!(reached.len(), 1, "{reached:?}");
    assert!(
        reached[0].get("error").is_some(),
        "the server got the gateway's error"
    );
    drop(tx);
    gw.shutdown().await;
}
