//! One block, one id, everywhere: the id of the audit event that recorded a block is in the
//! error the client gets (its message and `data.event_id`) and in the gateway's answer to the
//! server; that audit event names the request (the access-log line's `request_id`), the tool
//! being called and the policy that judged. Every access-log line has a request id.

use crate::common::scripted::*;
use crate::common::serve::Served;
use crate::common::*;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn a_block_is_one_id_from_the_client_to_the_audit_to_the_access_log() {
    let legacy = legacy_server(|_| {
        sse(&[form(
            "p-1",
            "Sign in",
            json!({"password": {"type": "string"}}),
        )])
    })
    .await;
    let modern = MockUpstream::start(|seen| {
        let msg = body_json(seen);
        let result = json!({"resultType":"input_required","requestState":"s","inputRequests":{"k":{
            "method":"elicitation/create","params":{"message":"Sign in",
            "requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}}});
        full(
            http::StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string(),
        )
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = dir.path().join("elicitgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nlog: {{ format: json, access: true }}\naudit: {{ sink: file, file: \"{}\" }}\npolicies:\n  strict: {{}}\nroutes:\n  - name: legacy\n    path: /mcp\n    policy: strict\n    upstream: \"{}\"\n  - name: modern\n    path: /modern\n    policy: strict\n    upstream: \"{}\"\n",
            audit.display(),
            legacy.url("/mcp"),
            modern.url("/mcp"),
        ),
    )
    .unwrap();
    let served = Served::start(&config).await;
    let addr = served.addr.clone();

    // Legacy: the password form is blocked; the server is answered with the event's id.
    let url = format!("http://{addr}/mcp");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
    send(rpc_post(&url, init)).await;
    let call = r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"sign_in"}}"#;
    send(in_session(rpc_post(&url, call))).await;
    let to_server = gateway_answer_within(&legacy, "p-1", Duration::from_secs(20)).await;
    let legacy_event = to_server["error"]["data"]["event_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no event id in the server's answer: {to_server}"))
        .to_owned();

    // 2026: the client's error carries the id, in the message it shows too.
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}});
    let call =
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pay","_meta":meta}});
    let (_, _, body) = send(rpc_post(
        &format!("http://{addr}/modern"),
        &call.to_string(),
    ))
    .await;
    let error: Value = serde_json::from_slice(&body).unwrap();
    let modern_event = error["error"]["data"]["event_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no event id for the client: {error}"))
        .to_owned();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("form.secret") && message.contains(&modern_event),
        "{message}"
    );

    let rest = served.stop().await.stderr;
    let access: Vec<Value> = rest
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "elicitgate::access")
        .collect();
    assert!(!access.is_empty(), "no access lines: {rest}");
    assert!(
        access.iter().all(|l| l["fields"]["request_id"]
            .as_str()
            .is_some_and(|r| r.len() == 16)),
        "every access line has a request id: {access:?}"
    );
    let events: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (id, tool) in [(&legacy_event, "sign_in"), (&modern_event, "pay")] {
        let event = events
            .iter()
            .find(|e| e["event_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no audit event {id}: {events:?}"));
        assert_eq!(event["event"], "elicitation.blocked", "{event}");
        assert_eq!(event["tool"], tool, "{event}");
        assert_eq!(event["policy"], "strict", "{event}");
        let request = event["request"].as_str().expect("the request's id");
        assert!(
            access.iter().any(|l| l["fields"]["request_id"] == request
                && l["fields"]["mcp_method"] == "tools/call"),
            "no access line for request {request}: {access:?}"
        );
        // `report --event` tells the story: that event and the rest of its request.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
            .args(["report", "--event", id])
            .arg(&audit)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let story = String::from_utf8_lossy(&out.stdout);
        assert!(story.contains(id.as_str()), "{story}");
        assert!(
            story.lines().all(|l| l.contains(request)),
            "only that request's events: {story}"
        );
    }
}
