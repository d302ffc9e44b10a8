//! Session state and headers read one way: nothing a peer can forge or repeat makes the gateway
//! judge one session, client or path while the server or client uses another
//! (docs/sessions-and-headers.md).
//!
//! Each test drives the real gateway on `127.0.0.1:0` against a scripted upstream; the shared
//! state cases use a real `redis-server`.

use crate::common::redis::RedisServer;
use crate::common::scripted::*;
use crate::common::*;
use http::StatusCode;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const FORM_ONLY: &str = r#"{"elicitation":{"form":{}}}"#;

fn init_body(caps: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
}

/// A legacy server that answers every `initialize` with the session ids `sessions` gives
/// (possibly the same one twice, or several header fields), and every `tools/call` with a
/// URL-mode elicitation.
async fn session_server(
    sessions: impl Fn(usize) -> Vec<&'static str> + Send + Sync + 'static,
) -> MockUpstream {
    let inits = AtomicUsize::new(0);
    MockUpstream::start(move |seen| {
        let msg = scripted_body(seen);
        match msg["method"].as_str() {
            Some("initialize") => {
                let mut r = full(
                    StatusCode::OK,
                    "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string(),
                );
                for s in sessions(inits.fetch_add(1, Ordering::SeqCst)) {
                    r.headers_mut().append("mcp-session-id", s.parse().unwrap());
                }
                r
            }
            Some("tools/call") => full(
                StatusCode::OK,
                "text/event-stream",
                sse(&[url_elicitation("u-1", "eid-1", "https://auth.example.com/connect")]),
            ),
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await
}

fn scripted_body(seen: &Seen) -> Value {
    serde_json::from_slice(&seen.body).unwrap_or(Value::Null)
}

async fn initialize_as(gw: &TestGateway, caps: &str) -> (StatusCode, http::HeaderMap, Value) {
    let (status, headers, body) = send(rpc_post(&gw.url(), &init_body(caps))).await;
    (status, headers, json(&body))
}

fn assert_session_refused(headers: &http::HeaderMap, body: &Value, reason: &str) {
    assert!(
        headers.get("mcp-session-id").is_none(),
        "the client was handed the session: {headers:?}"
    );
    assert_eq!(body["id"], 0, "{body}");
    assert_eq!(body["error"]["code"], -31042, "{body}");
    assert_eq!(body["error"]["data"]["rules"], json!(["session.mismatch"]));
    assert_eq!(body["error"]["data"]["reason"], reason);
}

#[tokio::test]
async fn a_session_id_handed_to_a_second_client_is_refused_not_shared() {
    let upstream = session_server(|_| vec!["s-1"]).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    // The first client declares both modes and gets the session.
    let (status, headers, _) = initialize_as(&gw, BOTH).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["mcp-session-id"], "s-1");
    // A form-only client is handed the same session: it must not inherit URL mode.
    let (status, headers, body) = initialize_as(&gw, FORM_ONLY).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_session_refused(&headers, &body, "session.reused");
    let refused = gw.audit().await;
    assert!(
        refused
            .iter()
            .any(|e| e.to_string().contains("session.reused")),
        "not audited: {refused:?}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_session_reused_through_another_replica_is_refused_too() {
    let redis = RedisServer::start();
    let upstream = session_server(|_| vec!["s-1"]).await;
    let yaml = config_for(
        &upstream.url("/mcp"),
        &format!(
            "state:\n  backend: redis\n  redis:\n    url: \"{}\"\n    timeout: 300ms\n",
            redis.url()
        ),
    );
    let (a, b) = (gateway(&yaml).await, gateway(&yaml).await);
    let (status, headers, _) = initialize_as(&a, BOTH).await;
    assert_eq!(
        (status, &headers["mcp-session-id"]),
        (StatusCode::OK, &"s-1".parse().unwrap())
    );
    let (_, headers, body) = initialize_as(&b, FORM_ONLY).await;
    assert_session_refused(&headers, &body, "session.reused");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn an_initialize_answer_naming_its_session_twice_is_refused() {
    let upstream = session_server(|_| vec!["s-a", "s-b"]).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let (status, headers, body) = initialize_as(&gw, FORM_ONLY).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_session_refused(&headers, &body, "session.repeated");
    // Neither value became a session with declared modes: a URL elicitation in either is
    // judged as undeclared.
    for session in ["s-a", "s-b", "s-a, s-b"] {
        let mut req = rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#,
        );
        req.headers_mut()
            .insert("mcp-session-id", session.parse().unwrap());
        let (_, _, body) = send(req).await;
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains("elicitation/create"), "{session}: {text}");
    }
    gw.shutdown().await;
}

#[tokio::test]
async fn request_headers_the_gateway_acts_on_are_read_once_or_refused() {
    let upstream = session_server(|_| vec!["s-1"]).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize_as(&gw, BOTH).await;
    let before = upstream.requests().len();
    for (name, a, b) in [
        ("mcp-session-id", "s-1", "s-2"),
        ("mcp-protocol-version", "2025-11-25", "2026-07-28"),
        ("last-event-id", "1", "2"),
        ("authorization", "Bearer a", "Bearer b"),
        ("content-type", "application/json", "text/plain"),
    ] {
        let mut req = rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#,
        );
        req.headers_mut().remove(name);
        req.headers_mut().append(name, a.parse().unwrap());
        req.headers_mut().append(name, b.parse().unwrap());
        let (status, _, body) = send(req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        let body = json(&body);
        assert_eq!(body["error"]["code"], -32600, "{name}: {body}");
        assert_eq!(
            body["error"]["data"]["detail"],
            format!("header.{name}.repeated"),
            "{name}"
        );
    }
    assert_eq!(
        upstream.requests().len(),
        before,
        "a refused request reached the server"
    );
    gw.shutdown().await;
}

/// A legacy server whose standalone GET stream sends one event with an `id` and ends; a GET
/// resuming after any id replays a URL-mode elicitation. Its `tools/call` stream carries an
/// event with id `p-1` and the result.
async fn resuming_server() -> MockUpstream {
    MockUpstream::start(|seen| {
        let msg = scripted_body(seen);
        match (seen.method.as_str(), msg["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let mut r = full(
                    StatusCode::OK,
                    "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string(),
                );
                r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                r
            }
            ("POST", Some("tools/call")) => full(
                StatusCode::OK,
                "text/event-stream",
                format!(
                    "id: p-1\nevent: message\ndata: {}\n\n",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"content":[]}})
                ),
            ),
            ("GET", _) if seen.headers.contains_key("last-event-id") => full(
                StatusCode::OK,
                "text/event-stream",
                format!(
                    "id: r-1\nevent: message\ndata: {}\n\n",
                    url_elicitation("u-9", "eid-9", "https://auth.example.com/connect")
                ),
            ),
            ("GET", _) => full(
                StatusCode::OK,
                "text/event-stream",
                "id: g-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hi\"}}\n\n",
            ),
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await
}

async fn get_stream(gw: &TestGateway, last_event_id: Option<&str>) -> String {
    let mut req = http::Request::get(gw.url())
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    req = in_session(req);
    if let Some(id) = last_event_id {
        req.headers_mut()
            .insert("last-event-id", id.parse().unwrap());
    }
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8_lossy(&body).into_owned()
}

#[tokio::test]
async fn resuming_the_standalone_stream_does_not_make_it_a_requests_stream() {
    let upstream = resuming_server().await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    // The standalone stream's event id, then a resumption after it: not associated.
    assert!(get_stream(&gw, None).await.contains("id: g-1"));
    let resumed = get_stream(&gw, Some("g-1")).await;
    assert!(!resumed.contains("elicitation/create"), "{resumed}");
    let answer = gateway_answer_within(&upstream, "u-9", Duration::from_secs(10)).await;
    assert_eq!(
        answer["error"]["data"]["rules"],
        json!(["request.unassociated"]),
        "{answer}"
    );
    // An id the gateway never forwarded is no better.
    assert!(!get_stream(&gw, Some("forged"))
        .await
        .contains("elicitation/create"));
    gw.shutdown().await;
}

#[tokio::test]
async fn resuming_a_requests_stream_stays_associated() {
    let upstream = resuming_server().await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    initialize(&gw, BOTH).await;
    let stream = call_tool(&gw).await;
    assert!(stream.contains("id: p-1"), "{stream}");
    let resumed = get_stream(&gw, Some("p-1")).await;
    assert!(resumed.contains("elicitation/create"), "{resumed}");
    // Another session cannot resume it.
    let mut req = http::Request::get(gw.url())
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "s-other")
        .header("last-event-id", "p-1")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    req.headers_mut()
        .insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
    let (_, _, body) = send(req).await;
    assert!(!String::from_utf8_lossy(&body).contains("elicitation/create"));
    gw.shutdown().await;
}

#[tokio::test]
async fn several_identity_headers_are_refused_not_chosen_from() {
    let upstream = session_server(|_| vec!["s-1"]).await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "identity:\n  mode: header\n  header: { name: x-authenticated-user }\n  trusted_proxies: [\"127.0.0.0/8\"]\n",
    ))
    .await;
    let mut one = rpc_post(&gw.url(), &init_body(BOTH));
    one.headers_mut()
        .insert("x-authenticated-user", "alice@example.com".parse().unwrap());
    assert_eq!(send(one).await.0, StatusCode::OK);
    for values in [
        vec!["mallory@example.com", "alice@example.com"],
        vec!["mallory@example.com, alice@example.com"],
    ] {
        let mut req = rpc_post(&gw.url(), &init_body(BOTH));
        for v in &values {
            req.headers_mut()
                .append("x-authenticated-user", v.parse().unwrap());
        }
        let (status, headers, _) = send(req).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{values:?}");
        assert!(headers.contains_key("www-authenticate"));
    }
    let metrics = metrics(gw.admin_addr).await;
    assert!(metrics.contains("identity.header_ambiguous"), "not counted");
    gw.shutdown().await;
}

#[tokio::test]
async fn dot_segments_are_refused_before_routing_never_forwarded() {
    let upstream = session_server(|_| vec!["s-1"]).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    let base = gw.url();
    let origin = base.trim_end_matches("/mcp");
    for path in [
        "/mcp/../admin",
        "/mcp/%2e%2e/admin",
        "/mcp/x/%2E%2E/%2e%2e/admin",
        "/mcp/.%2E/admin",
        "/mcp/./x",
        "/mcp%2f..%2fadmin",
    ] {
        let (status, _, body) = send(rpc_post(&format!("{origin}{path}"), &init_body(BOTH))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(
            json(&body)["error"]["data"]["reason"],
            "request_target",
            "{path}"
        );
    }
    assert!(upstream.requests().is_empty(), "{:?}", upstream.requests());
    // A plain path with dots in a segment still routes.
    let (status, _, _) = send(rpc_post(&format!("{origin}/mcp/v1.2"), &init_body(BOTH))).await;
    assert_eq!(status, StatusCode::OK);
    gw.shutdown().await;
}

#[tokio::test]
async fn a_pending_elicitation_the_store_lost_still_ends_its_servers_call() {
    let mut redis = RedisServer::start();
    let upstream = legacy_server(|_| {
        sse(&[form(
            "t-1",
            "Your region?",
            json!({"region": {"type": "string"}}),
        )])
    })
    .await;
    let yaml = config_for(
        &upstream.url("/mcp"),
        &format!(
            "state:\n  backend: redis\n  redis:\n    url: \"{}\"\n    timeout: 300ms\n    connect_timeout: 300ms\npolicies:\n  default:\n    pending: {{ ttl: 1s }}\n",
            redis.url()
        ),
    );
    let gw = gateway(&yaml).await;
    initialize(&gw, BOTH).await;
    assert!(call_tool(&gw).await.contains("elicitation/create"));
    // The store restarts empty while the elicitation waits for its answer.
    redis.restart();
    let answer = gateway_answer_within(&upstream, "t-1", Duration::from_secs(30)).await;
    assert_eq!(
        answer["error"]["data"]["reason"], "elicitation_expired",
        "{answer}"
    );
    let released = gw.audit_of("elicitation.released").await;
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!(released[0]["reason"], "expired");
    gw.shutdown().await;
}

/// An HTTP+SSE (2024-11-05) server whose GET `/sse?case=…` stream announces endpoints as the
/// case says; every POST gets 202.
async fn endpoint_server() -> MockUpstream {
    MockUpstream::start(|seen| {
        let case = seen.uri.query().unwrap_or_default().to_owned();
        let endpoint = |data: &str| format!("event: endpoint\ndata: {data}\n\n");
        let body = match case.as_str() {
            "case=twice" => {
                endpoint("/messages?sessionId=e-1") + &endpoint("/messages?sessionId=e-2")
            }
            "case=shared" => endpoint("/messages?sessionId=e-shared"),
            "case=two-ids" => endpoint("/messages?sessionId=e-3&session_id=e-4"),
            "case=dots" => endpoint("/messages/%2e%2e/%2E%2E/admin?sessionId=e-5"),
            _ => endpoint("/messages?sessionId=e-0"),
        };
        match seen.method.as_str() {
            "GET" => full(StatusCode::OK, "text/event-stream", body),
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await
}

async fn open_sse(gw: &TestGateway, case: &str) -> String {
    let url = format!("http://{}/legacy/sse?case={case}", gw.addr);
    let req = http::Request::get(url)
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8_lossy(&body).into_owned()
}

fn legacy_route(upstream: &MockUpstream) -> String {
    format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: legacy-sse\n    path: /legacy\n    upstream: \"{}\"\n",
        upstream.url("/")
    )
}

#[tokio::test]
async fn http_sse_endpoints_are_read_one_way() {
    let upstream = endpoint_server().await;
    let gw = gateway(&legacy_route(&upstream)).await;
    // One endpoint per stream: a second one ends the stream unannounced.
    let twice = open_sse(&gw, "twice").await;
    assert!(twice.contains("/legacy/messages?sessionId=e-1"), "{twice}");
    assert!(!twice.contains("e-2"), "{twice}");
    // A session announced to one stream is not announced to another.
    let first = open_sse(&gw, "shared").await;
    assert!(first.contains("sessionId=e-shared"), "{first}");
    let second = open_sse(&gw, "shared").await;
    assert!(!second.contains("e-shared"), "{second}");
    // An endpoint naming its session twice is never announced.
    let two_ids = open_sse(&gw, "two-ids").await;
    assert!(!two_ids.contains("endpoint"), "{two_ids}");
    // Dot segments in an endpoint are resolved (RFC 3986 §5.2.4) before it is mapped: the
    // client is pointed at the resolved path, never at one with dot segments in it.
    let dots = open_sse(&gw, "dots").await;
    assert!(dots.contains("data: /legacy/admin?sessionId=e-5"), "{dots}");
    assert!(
        !dots.to_lowercase().contains("%2e") && !dots.contains(".."),
        "{dots}"
    );
    let refused = gw.audit_of("message.refused").await;
    for reason in [
        "endpoint.repeated",
        "session.reused",
        "endpoint.session_repeated",
    ] {
        assert!(
            refused.iter().any(|e| e["reason"] == reason),
            "{reason} not audited: {refused:?}"
        );
    }
    gw.shutdown().await;
}

/// A 2026-07-28 server whose `requestState` is the same for everyone (`step-1`), asking each
/// caller (told apart by its `Authorization`) its own form; a retry completes.
async fn same_request_state_server() -> MockUpstream {
    MockUpstream::start(|seen| {
        let msg = scripted_body(seen);
        let who = seen
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let property = if who.ends_with('a') {
            json!({"colour":{"type":"string","enum":["red","blue"]}})
        } else {
            json!({"region":{"type":"string","enum":["eu","us"]}})
        };
        let result = if msg["params"].get("inputResponses").is_some() {
            json!({"resultType":"complete","content":[]})
        } else {
            json!({"resultType":"input_required","requestState":"step-1","inputRequests":{
                "q":{"method":"elicitation/create","params":{"mode":"form","message":"Pick one",
                    "requestedSchema":{"type":"object","properties":property}}}}})
        };
        full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string(),
        )
    })
    .await
}

async fn call_2026(gw: &TestGateway, who: &str, extra: Value) -> Value {
    let mut params = json!({"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}).to_string();
    let mut req = rpc_post(&gw.url(), &body);
    req.headers_mut()
        .insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    req.headers_mut()
        .insert("authorization", format!("Bearer {who}").parse().unwrap());
    json(&send(req).await.2)
}

#[tokio::test]
async fn two_users_given_the_same_request_state_keep_their_own_questions() {
    let upstream = same_request_state_server().await;
    let redis = RedisServer::start();
    let memory = config_for(&upstream.url("/mcp"), "");
    let shared = config_for(
        &upstream.url("/mcp"),
        &format!(
            "state:\n  backend: redis\n  redis:\n    url: \"{}\"\n    timeout: 300ms\n",
            redis.url()
        ),
    );
    for yaml in [memory, shared] {
        let gw = gateway(&yaml).await;
        // Both are asked under the same requestState; each answers its own question.
        assert_eq!(
            call_2026(&gw, "a", json!({})).await["result"]["requestState"],
            "step-1"
        );
        assert_eq!(
            call_2026(&gw, "b", json!({})).await["result"]["requestState"],
            "step-1"
        );
        let a = json!({"requestState":"step-1","inputResponses":{"q":{"action":"accept","content":{"colour":"red"}}}});
        let done = call_2026(&gw, "a", a.clone()).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        let b = json!({"requestState":"step-1","inputResponses":{"q":{"action":"accept","content":{"region":"eu"}}}});
        let done = call_2026(&gw, "b", b).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        // A replay of A's retry finds nothing left to answer.
        let replay = call_2026(&gw, "a", a).await;
        assert_eq!(
            replay["error"]["data"]["rules"],
            json!(["response.unknown"]),
            "{replay}"
        );
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn a_2026_retry_is_consumed_once_whichever_replica_it_reaches() {
    let upstream = same_request_state_server().await;
    let redis = RedisServer::start();
    let yaml = config_for(
        &upstream.url("/mcp"),
        &format!(
            "state:\n  backend: redis\n  redis:\n    url: \"{}\"\n    timeout: 300ms\n",
            redis.url()
        ),
    );
    let (one, two) = (gateway(&yaml).await, gateway(&yaml).await);
    assert_eq!(
        call_2026(&one, "a", json!({})).await["result"]["requestState"],
        "step-1"
    );
    let retry = json!({"requestState":"step-1","inputResponses":{"q":{"action":"accept","content":{"colour":"red"}}}});
    let done = call_2026(&two, "a", retry.clone()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    for replica in [&one, &two] {
        let replay = call_2026(replica, "a", retry.clone()).await;
        assert_eq!(
            replay["error"]["data"]["rules"],
            json!(["response.unknown"]),
            "{replay}"
        );
    }
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test]
async fn a_route_mounted_at_the_root_maps_endpoints_and_refuses_dot_segments() {
    let upstream = endpoint_server().await;
    let gw = gateway(&format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: root\n    path: /\n    upstream: \"{}\"\n",
        upstream.url("/")
    ))
    .await;
    let req = http::Request::get(format!("http://{}/sse", gw.addr))
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let (_, _, body) = send(req).await;
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("data: /messages?sessionId=e-0"), "{body}");
    let before = upstream.requests().len();
    for path in ["/../etc", "/%2e%2e/etc", "/messages/%2E./x"] {
        let (status, _, _) = send(rpc_post(&format!("http://{}{path}", gw.addr), "{}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
    }
    assert_eq!(upstream.requests().len(), before);
    gw.shutdown().await;
}
