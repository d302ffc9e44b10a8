//! SPEC §8 contract cases, legacy era (2025-11-25 Streamable HTTP sessions), with real peers:
//! servers and clients written with the official Python (`mcp` 2.x) and TypeScript
//! (`@modelcontextprotocol/sdk` 1.x) SDKs, talking through the real gateway.
//!
//! Servers run with `--ignore-caps` unless a case says otherwise: they elicit whatever the
//! tool wants, so it is the gateway that must keep undeclared modes away from the client.

use crate::common::peers::{client, server, Sdk};
use crate::common::*;
use serde_json::{json, Value};

/// One tool call through the gateway: returns the client's output and the gateway.
#[allow(clippy::too_many_arguments)]
async fn call(
    server_sdk: Sdk,
    client_sdk: Sdk,
    server_args: &[&str],
    policy_yaml: &str,
    tool: &str,
    caps: &str,
    answer: &str,
    content: Option<Value>,
) -> (Value, TestGateway) {
    let srv = server(server_sdk, server_args).await;
    let gw = gateway(&config_for(&srv.url(), policy_yaml)).await;
    let url = gw.url();
    let content = content.map(|c| c.to_string());
    let mut args = vec![
        "--url", &url, "--tool", tool, "--era", "legacy", "--caps", caps, "--answer", answer,
    ];
    if let Some(c) = &content {
        args.extend(["--content", c]);
    }
    let out = client(client_sdk, &args).await;
    (out, gw)
}

const IGNORE_CAPS: &[&str] = &["--ignore-caps"];

/// Sends `params` verbatim as a legacy elicitation from a TypeScript server (which bypasses its
/// own SDK checks) to a TypeScript client declaring both modes, through the gateway.
async fn elicit_raw(params: Value) -> (Value, TestGateway) {
    let raw = json!({ "params": params }).to_string();
    let srv = server(Sdk::Node, IGNORE_CAPS).await;
    let gw = gateway(&config_for(&srv.url(), "")).await;
    let url = gw.url();
    let args = [
        "--url",
        &url,
        "--tool",
        "elicit_raw",
        "--args",
        &raw,
        "--era",
        "legacy",
        "--caps",
        "both",
        "--answer",
        "accept",
    ];
    // The server process must outlive the call; it ends with the test.
    let out = client(Sdk::Node, &args).await;
    drop(srv);
    (out, gw)
}
const PAIRS: [(Sdk, Sdk); 4] = [
    (Sdk::Python, Sdk::Python),
    (Sdk::Node, Sdk::Node),
    (Sdk::Python, Sdk::Node),
    (Sdk::Node, Sdk::Python),
];

fn staging() -> Option<Value> {
    Some(json!({"env": "staging", "confirm": true}))
}

/// The client never saw an elicitation, and the server was told which rules blocked it.
fn assert_blocked(out: &Value, rule: &str) {
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len),
        Some(0),
        "reached the user: {out}"
    );
    let error = &out["result"]["error"];
    assert_eq!(error["code"], -32602, "{out}");
    let rules: Vec<&str> = error["data"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(rules.contains(&rule), "{rule} not in {rules:?}: {out}");
}

#[tokio::test]
async fn form_accept_reaches_the_server_unchanged_for_every_sdk_pair() {
    for (s, c) in PAIRS {
        let (out, gw) = call(s, c, IGNORE_CAPS, "", "deploy", "both", "accept", staging()).await;
        assert_eq!(out["ok"], true, "{s:?}/{c:?}: {out}");
        assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
        assert_eq!(out["result"]["action"], "accept", "{s:?}/{c:?}: {out}");
        assert_eq!(
            out["result"]["content"],
            json!({"env": "staging", "confirm": true})
        );
        let answered = gw.audit_of("elicitation.answered").await;
        assert_eq!(answered.len(), 1, "{s:?}/{c:?}");
        assert_eq!(answered[0]["action"], "accept");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn decline_and_cancel_are_passed_and_counted() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        for action in ["decline", "cancel"] {
            let (out, gw) = call(s, c, IGNORE_CAPS, "", "deploy", "both", action, None).await;
            assert_eq!(out["result"]["action"], action, "{s:?}: {out}");
            let m = metrics(gw.admin_addr).await;
            let line = format!(
                r#"elicitgate_answers_total{{action="{action}",mode="form",route="demo"}} 1"#
            );
            assert!(m.contains(&line), "{line} missing:\n{m}");
            gw.shutdown().await;
        }
    }
}

#[tokio::test]
async fn initialise_form_only_blocks_url_mode() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        for caps in ["form", "empty"] {
            let (out, gw) = call(s, c, IGNORE_CAPS, "", "connect_ok", caps, "accept", None).await;
            assert_blocked(&out, "mode.undeclared");
            gw.shutdown().await;
        }
    }
}

#[tokio::test]
async fn initialise_url_only_blocks_forms_and_allows_urls() {
    let (out, gw) = call(
        Sdk::Python,
        Sdk::Python,
        IGNORE_CAPS,
        "",
        "deploy",
        "url",
        "accept",
        staging(),
    )
    .await;
    assert_blocked(&out, "mode.undeclared");
    gw.shutdown().await;
    let (out, gw) = call(
        Sdk::Node,
        Sdk::Node,
        IGNORE_CAPS,
        "",
        "connect_ok",
        "url",
        "accept",
        None,
    )
    .await;
    assert_eq!(out["result"]["action"], "accept", "{out}");
    gw.shutdown().await;
}

#[tokio::test]
async fn initialise_without_elicitation_blocks_every_elicitation() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        let (out, gw) = call(s, c, IGNORE_CAPS, "", "deploy", "none", "accept", staging()).await;
        assert_blocked(&out, "mode.undeclared");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn initialise_with_both_modes_allows_url_and_forwards_its_completion() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        let (out, gw) = call(s, c, IGNORE_CAPS, "", "connect_ok", "both", "accept", None).await;
        assert_eq!(out["result"]["action"], "accept", "{s:?}: {out}");
        let eid = out["result"]["elicitationId"].as_str().unwrap();
        assert_eq!(
            out["completions"],
            json!([eid]),
            "{s:?}: completion forwarded: {out}"
        );
        assert_eq!(gw.audit_of("elicitation.completed").await.len(), 1);
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn secret_forms_are_blocked_whatever_the_field_is_called() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        for tool in ["login", "api_key"] {
            let (out, gw) = call(
                s,
                c,
                IGNORE_CAPS,
                "",
                tool,
                "both",
                "accept",
                Some(json!({"password": "hunter2", "api_key": "sk-test"})),
            )
            .await;
            assert_blocked(&out, "form.secret");
            gw.shutdown().await;
        }
    }
    // A payment field with a neutral name but a revealing title and message.
    let params = json!({"message": "Complete your purchase", "requestedSchema": {"type": "object",
        "properties": {"field_7": {"type": "string", "title": "Card number"}, "cvc": {"type": "string"}}}});
    let (out, gw) = elicit_raw(params).await;
    assert_blocked(&out, "form.secret");
    gw.shutdown().await;
}

#[tokio::test]
async fn benign_seed_forms_pass() {
    let (out, gw) = call(
        Sdk::Python,
        Sdk::Node,
        IGNORE_CAPS,
        "",
        "github_user",
        "form",
        "accept",
        Some(json!({"username": "octocat"})),
    )
    .await;
    assert_eq!(out["result"]["action"], "accept", "{out}");
    assert_eq!(out["result"]["content"]["username"], "octocat");
    gw.shutdown().await;
}

#[tokio::test]
async fn url_mode_links_to_http_or_with_pii_are_blocked() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        let (out, gw) = call(
            s,
            c,
            IGNORE_CAPS,
            "",
            "connect_http",
            "both",
            "accept",
            None,
        )
        .await;
        assert_blocked(&out, "url.scheme");
        gw.shutdown().await;
        let (out, gw) = call(s, c, IGNORE_CAPS, "", "connect_pii", "both", "accept", None).await;
        assert_blocked(&out, "url.pii");
        // The audit shows the host, never the address.
        let blocked = gw.audit_of("elicitation.blocked").await;
        assert_eq!(blocked[0]["url"]["host"], "auth.example.com");
        assert!(!blocked[0].to_string().contains("alice"), "{}", blocked[0]);
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn punycode_host_substitution_is_blocked() {
    let params = json!({"mode": "url", "message": "Connect your account", "elicitationId": "e-1",
        "url": "https://xn--pypal-4ve.com/connect"});
    let (out, gw) = elicit_raw(params).await;
    assert_blocked(&out, "url.host");
    gw.shutdown().await;
}

#[tokio::test]
async fn schema_outside_the_restricted_subset_is_rejected() {
    let params = json!({"message": "Describe the deployment", "requestedSchema": {"type": "object",
        "properties": {"target": {"type": "object", "properties": {"region": {"type": "string"}}}}}});
    let (out, gw) = elicit_raw(params).await;
    assert_blocked(&out, "form.schema");
    gw.shutdown().await;
}

#[tokio::test]
async fn mode_omitted_is_treated_as_form() {
    // The Python server sends no `mode` for its forms; a URL-only client must not get one.
    let (out, gw) = call(
        Sdk::Python,
        Sdk::Python,
        IGNORE_CAPS,
        "",
        "github_user",
        "url",
        "accept",
        Some(json!({"username": "octocat"})),
    )
    .await;
    assert_blocked(&out, "mode.undeclared");
    gw.shutdown().await;
}

#[tokio::test]
async fn on_block_decline_answers_the_server_with_a_decline() {
    let policy = "policies:\n  soft:\n    on_block: decline\n";
    let yaml_routes = "policy: soft";
    let srv = server(Sdk::Python, IGNORE_CAPS).await;
    let yaml = config_for(&srv.url(), policy).replace(
        "    upstream:",
        &format!("    {yaml_routes}\n    upstream:"),
    );
    let gw = gateway(&yaml).await;
    let url = gw.url();
    let out = client(
        Sdk::Python,
        &[
            "--url",
            &url,
            "--tool",
            "login",
            "--era",
            "legacy",
            "--caps",
            "both",
            "--answer",
            "accept",
            "--content",
            r#"{"password":"x"}"#,
        ],
    )
    .await;
    assert_eq!(out["elicitations"].as_array().unwrap().len(), 0, "{out}");
    assert_eq!(out["result"]["action"], "decline", "{out}");
    gw.shutdown().await;
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_schema_is_refused_and_the_server_is_told() {
    for (s, c) in [(Sdk::Python, Sdk::Python), (Sdk::Node, Sdk::Node)] {
        let (out, gw) = call(
            s,
            c,
            IGNORE_CAPS,
            "",
            "deploy",
            "both",
            "accept",
            Some(json!({"env": "moon"})),
        )
        .await;
        // The server is not left waiting: it got the gateway's error naming the rule.
        let error = &out["result"]["error"];
        assert_eq!(
            error["data"]["rules"],
            json!(["response.invalid"]),
            "{s:?}/{c:?}: {out}"
        );
        let rejected = gw.audit_of("answer.rejected").await;
        assert_eq!(rejected.len(), 1);
        assert!(
            !rejected[0].to_string().contains("moon"),
            "answer values never in audit"
        );
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn tools_without_elicitation_return_their_result_unchanged() {
    for (s, c) in PAIRS {
        let srv = server(s, &[]).await;
        let gw = gateway(&config_for(&srv.url(), "")).await;
        let url = gw.url();
        let direct = client(
            c,
            &[
                "--url",
                &srv.url(),
                "--tool",
                "echo",
                "--args",
                r#"{"text":"héllo <b>"}"#,
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
            ],
        )
        .await;
        let through = client(
            c,
            &[
                "--url",
                &url,
                "--tool",
                "echo",
                "--args",
                r#"{"text":"héllo <b>"}"#,
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
            ],
        )
        .await;
        assert_eq!(through["result"], direct["result"], "{s:?}/{c:?}");
        assert_eq!(through["result"], "héllo <b>");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn capability_shaping_keeps_a_compliant_server_from_asking_a_disallowed_mode() {
    // The route allows forms only; the client declares both. A compliant server (no
    // --ignore-caps) then never sends URL mode: it refuses locally.
    let policy = "policies:\n  forms:\n    modes: { form: true, url: false }\n";
    for s in [Sdk::Python, Sdk::Node] {
        let srv = server(s, &[]).await;
        let yaml = config_for(&srv.url(), policy)
            .replace("    upstream:", "    policy: forms\n    upstream:");
        let gw = gateway(&yaml).await;
        let url = gw.url();
        let out = client(
            s,
            &[
                "--url",
                &url,
                "--tool",
                "connect_ok",
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
            ],
        )
        .await;
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(0),
            "{s:?}: {out}"
        );
        assert_eq!(
            out["result"]["error"]["local"], true,
            "{s:?}: the server refused on its own: {out}"
        );
        assert!(
            gw.audit_of("elicitation.blocked").await.is_empty(),
            "nothing needed blocking"
        );
        gw.shutdown().await;
    }
}

/// Per-tool policy, with the Python SDK server and both SDK clients: URL
/// mode is off for the route but on for `connect_*` tools, and only to the provider's host.
#[tokio::test]
async fn per_tool_policy_allows_url_mode_only_for_connect_tools_to_the_provider() {
    let policy = "policies:\n  default:\n    modes: { url: false }\n    tools:\n      \
                  - names: [\"connect_*\"]\n        modes: { url: true }\n        \
                  url: { allowed_hosts: [\"auth.example.com\"] }\n";
    for c in [Sdk::Python, Sdk::Node] {
        let (out, gw) = call(
            Sdk::Python,
            c,
            IGNORE_CAPS,
            policy,
            "connect_ok",
            "both",
            "accept",
            None,
        )
        .await;
        assert_eq!(out["result"]["action"], "accept", "{c:?}: {out}");
        assert_eq!(gw.audit_of("elicitation.allowed").await.len(), 1);
        gw.shutdown().await;
        let (out, gw) = call(
            Sdk::Python,
            c,
            IGNORE_CAPS,
            policy,
            "connect_elsewhere",
            "both",
            "accept",
            None,
        )
        .await;
        assert_blocked(&out, "url.host");
        gw.shutdown().await;
        let (out, gw) = call(
            Sdk::Python,
            c,
            IGNORE_CAPS,
            policy,
            "open_docs",
            "both",
            "accept",
            None,
        )
        .await;
        assert_blocked(&out, "mode.disabled");
        gw.shutdown().await;
    }
}
