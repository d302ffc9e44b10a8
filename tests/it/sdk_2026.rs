//! SPEC §8 contract cases, 2026-07-28 era (stateless, `input_required` results and retries),
//! with the official Python SDK (`mcp` 2.x) server and client through the real gateway.
//! (The TypeScript SDK 1.x does not speak 2026-07-28; its v2 packages do, and are not the
//! `@modelcontextprotocol/sdk` package users have.)

use crate::common::peers::{client, server, PeerServer, Sdk};
use crate::common::*;
use serde_json::{json, Value};

async fn modern(
    srv: &PeerServer,
    policy_yaml: &str,
    tool: &str,
    caps: &str,
    answer: &str,
    content: Option<Value>,
) -> (Value, TestGateway) {
    let gw = gateway(&config_for(&srv.url(), policy_yaml)).await;
    let url = gw.url();
    let content = content.map(|c| c.to_string());
    let mut args = vec![
        "--url", &url, "--tool", tool, "--era", "modern", "--caps", caps, "--answer", answer,
    ];
    if let Some(c) = &content {
        args.extend(["--content", c]);
    }
    let out = client(Sdk::Python, &args).await;
    (out, gw)
}

/// The client's call failed with the gateway's error naming `rule`, and nothing reached the user.
fn assert_blocked(out: &Value, rule: &str) {
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len).unwrap_or(0),
        0,
        "reached the user: {out}"
    );
    assert_eq!(out["error"]["code"], -31042, "{out}");
    let rules: Vec<&str> = out["error"]["data"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(rules.contains(&rule), "{rule} not in {rules:?}");
    assert!(
        !out["error"].to_string().contains("password"),
        "blocked content never echoed: {out}"
    );
}

#[tokio::test]
async fn input_required_accept_decline_cancel_round_trip() {
    let srv = server(Sdk::Python, &["--ignore-caps"]).await;
    for (answer, content) in [
        (
            "accept",
            Some(json!({"env": "production", "confirm": false})),
        ),
        ("decline", None),
        ("cancel", None),
    ] {
        let (out, gw) = modern(&srv, "", "deploy", "both", answer, content.clone()).await;
        assert_eq!(out["ok"], true, "{out}");
        assert_eq!(out["protocolVersion"], "2026-07-28");
        assert_eq!(out["result"]["action"], answer, "{out}");
        if let Some(c) = content {
            assert_eq!(out["result"]["content"], c);
        }
        // The server's requestState came back to it byte-exact (it decrypts and reports it).
        assert_eq!(
            out["result"]["requestState"], r#"{"tool": "deploy", "round": 1}"#,
            "{out}"
        );
        let answered = gw.audit_of("elicitation.answered").await;
        assert_eq!(answered.len(), 1, "{answered:?}");
        assert_eq!(answered[0]["action"], answer);
        assert_eq!(answered[0]["revision"], "2026-07-28");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn secret_forms_and_bad_links_fail_the_call_with_rule_ids() {
    let srv = server(Sdk::Python, &["--ignore-caps"]).await;
    for (tool, rule) in [
        ("login", "form.secret"),
        ("api_key", "form.secret"),
        ("connect_http", "url.scheme"),
        ("connect_pii", "url.pii"),
    ] {
        let (out, gw) = modern(
            &srv,
            "",
            tool,
            "both",
            "accept",
            Some(json!({"password": "x"})),
        )
        .await;
        assert_blocked(&out, rule);
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn undeclared_modes_are_blocked_per_request() {
    let srv = server(Sdk::Python, &["--ignore-caps"]).await;
    for (tool, caps) in [
        ("connect_ok", "empty"),
        ("connect_ok", "form"),
        ("deploy", "url"),
        ("deploy", "none"),
    ] {
        let (out, gw) = modern(
            &srv,
            "",
            tool,
            caps,
            "accept",
            Some(json!({"env": "staging"})),
        )
        .await;
        assert_blocked(&out, "mode.undeclared");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn url_mode_to_a_client_that_declared_it_passes() {
    let srv = server(Sdk::Python, &["--ignore-caps"]).await;
    let (out, gw) = modern(&srv, "", "connect_ok", "url", "accept", None).await;
    assert_eq!(out["result"]["action"], "accept", "{out}");
    gw.shutdown().await;
}

#[tokio::test]
async fn input_required_over_sse_is_judged_too() {
    let srv = server(Sdk::Python, &["--ignore-caps", "--sse-notify"]).await;
    let (out, gw) = modern(
        &srv,
        "",
        "login",
        "both",
        "accept",
        Some(json!({"password": "x"})),
    )
    .await;
    assert_blocked(&out, "form.secret");
    gw.shutdown().await;
    let (out, gw) = modern(
        &srv,
        "",
        "deploy",
        "both",
        "accept",
        Some(json!({"env": "staging"})),
    )
    .await;
    assert_eq!(out["result"]["action"], "accept", "{out}");
    assert!(
        out["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "notifications/message"),
        "{out}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_refused_before_it_reaches_the_server() {
    let srv = server(Sdk::Python, &["--ignore-caps"]).await;
    let (out, gw) = modern(
        &srv,
        "",
        "deploy",
        "both",
        "accept",
        Some(json!({"env": "moon"})),
    )
    .await;
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["error"]["data"]["rules"],
        json!(["response.invalid"]),
        "{out}"
    );
    assert_eq!(gw.audit_of("answer.rejected").await.len(), 1);
    gw.shutdown().await;
}

#[tokio::test]
async fn capability_shaping_makes_a_compliant_server_refuse_a_disallowed_mode() {
    // Forms only on this route: the client's declared URL mode is removed from `_meta`, so the
    // compliant server answers -32021 (missing capability) instead of eliciting.
    let srv = server(Sdk::Python, &[]).await;
    let policy = "policies:\n  forms:\n    modes: { form: true, url: false }\n";
    let yaml =
        config_for(&srv.url(), policy).replace("    upstream:", "    policy: forms\n    upstream:");
    let gw = gateway(&yaml).await;
    let url = gw.url();
    let out = client(
        Sdk::Python,
        &[
            "--url",
            &url,
            "--tool",
            "connect_ok",
            "--era",
            "modern",
            "--caps",
            "both",
            "--answer",
            "accept",
        ],
    )
    .await;
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"]["code"], -32021, "{out}");
    assert!(gw.audit_of("elicitation.blocked").await.is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn echo_passes_unchanged_in_the_2026_era() {
    let srv = server(Sdk::Python, &[]).await;
    let gw = gateway(&config_for(&srv.url(), "")).await;
    let url = gw.url();
    let out = client(
        Sdk::Python,
        &[
            "--url",
            &url,
            "--tool",
            "echo",
            "--args",
            r#"{"text":"ünïcode ✓"}"#,
            "--era",
            "modern",
            "--caps",
            "both",
            "--answer",
            "accept",
        ],
    )
    .await;
    assert_eq!(out["result"], "ünïcode ✓", "{out}");
    gw.shutdown().await;
}
