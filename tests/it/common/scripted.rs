//! A scripted legacy MCP server and the client steps the enforcement tests repeat.

use super::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};

pub const BOTH: &str = r#"{"elicitation":{"form":{},"url":{}}}"#;

pub fn sse(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| format!("event: message\ndata: {m}\n\n"))
        .collect()
}

pub fn form(id: &str, message: &str, props: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
        "message": message, "requestedSchema": {"type":"object","properties": props}}})
}

pub fn url_elicitation(id: &str, eid: &str, url: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
        "mode":"url","message":"Connect your account","elicitationId":eid,"url":url}})
}

pub fn body_json(seen: &Seen) -> Value {
    serde_json::from_slice(&seen.body).unwrap_or(Value::Null)
}

/// A legacy server: `initialize` opens session `s-1`; `tools/call` answers with `stream`;
/// every other POST gets 202.
pub async fn legacy_server(
    stream: impl Fn(&Value) -> String + Send + Sync + 'static,
) -> MockUpstream {
    MockUpstream::start(move |seen| {
        let msg = body_json(seen);
        match (seen.method.as_str(), msg["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let mut r = full(StatusCode::OK, "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string());
                r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                r
            }
            ("POST", Some("tools/call")) => full(StatusCode::OK, "text/event-stream", stream(&msg)),
            ("GET", _) => full(StatusCode::OK, "text/event-stream", stream(&Value::Null)),
            _ => full(StatusCode::ACCEPTED, "", ""),
        }
    })
    .await
}

pub async fn initialize(gw: &TestGateway, caps: &str) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let (status, headers, _) = send(rpc_post(&gw.url(), &body)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["mcp-session-id"], "s-1");
}

pub fn in_session(mut req: Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    req.headers_mut()
        .insert("mcp-session-id", "s-1".parse().unwrap());
    req.headers_mut()
        .insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
    req
}

pub async fn call_tool(gw: &TestGateway) -> String {
    let req = in_session(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#,
    ));
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8(body.to_vec()).unwrap()
}

pub async fn answer(gw: &TestGateway, id: &str, result: Value) -> (StatusCode, Value) {
    let body = json!({"jsonrpc":"2.0","id":id,"result":result}).to_string();
    let (status, _, body) = send(in_session(rpc_post(&gw.url(), &body))).await;
    (
        status,
        if body.is_empty() {
            Value::Null
        } else {
            json(&body)
        },
    )
}

/// Waits (at most `ceiling`) for the gateway's own answer to the server for `id`: a message
/// the upstream received with that id and no method.
pub async fn gateway_answer_within(
    upstream: &MockUpstream,
    id: &str,
    ceiling: std::time::Duration,
) -> Value {
    let deadline = tokio::time::Instant::now() + ceiling;
    while tokio::time::Instant::now() < deadline {
        if let Some(m) = upstream
            .requests()
            .iter()
            .map(body_json)
            .find(|m| m["id"] == id && m.get("method").is_none())
        {
            return m;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the gateway never answered the server for {id}");
}
