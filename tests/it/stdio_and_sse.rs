//! `elicitgate stdio` with real stdio servers written with the Python and TypeScript SDKs,
//! driven by the SDKs' stdio clients (the client starts elicitgate, elicitgate starts the
//! server), in both eras; child crash, client disconnect, oversized lines. And the deprecated
//! HTTP+SSE transport through the gateway with SDK servers and clients.

use crate::common::peers::{client, server, Sdk};
use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn server_command(sdk: Sdk, extra: &str) -> String {
    match sdk {
        Sdk::Python => format!(
            "{} {} --transport stdio {extra}",
            peers().join("python/.venv/bin/python").display(),
            peers().join("python/server.py").display()
        ),
        Sdk::Node => format!(
            "node {} --transport stdio {extra}",
            peers().join("node/server.mjs").display()
        ),
    }
}

/// A config file with an audit file, in `dir`.
fn stdio_config(dir: &Path, policy: &str) -> PathBuf {
    let path = dir.join("stdio.yaml");
    std::fs::write(
        &path,
        format!(
            "audit: {{ sink: file, file: \"{}\" }}\nlog: {{ level: warn }}\n{policy}",
            dir.join("audit.jsonl").display()
        ),
    )
    .unwrap();
    path
}

fn audit_events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn via_stdio(
    client_sdk: Sdk,
    server_sdk: Sdk,
    era: &str,
    tool: &str,
    caps: &str,
    answer: &str,
    content: Option<Value>,
) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_config(dir.path(), "");
    let command = format!(
        "{} stdio --config {} -- {}",
        env!("CARGO_BIN_EXE_elicitgate"),
        config.display(),
        server_command(server_sdk, "--ignore-caps")
    );
    let content = content.map(|c| c.to_string());
    let mut args = vec![
        "--transport",
        "stdio",
        "--command",
        &command,
        "--tool",
        tool,
        "--era",
        era,
        "--caps",
        caps,
        "--answer",
        answer,
    ];
    if let Some(c) = &content {
        args.extend(["--content", c]);
    }
    (client(client_sdk, &args).await, dir)
}

#[tokio::test]
async fn stdio_legacy_allowed_and_blocked_with_both_sdks() {
    for sdk in [Sdk::Python, Sdk::Node] {
        let (out, dir) = via_stdio(
            sdk,
            sdk,
            "legacy",
            "deploy",
            "both",
            "accept",
            Some(json!({"env": "staging"})),
        )
        .await;
        assert_eq!(out["result"]["action"], "accept", "{sdk:?}: {out}");
        let (out, _) = via_stdio(
            sdk,
            sdk,
            "legacy",
            "login",
            "both",
            "accept",
            Some(json!({"password": "x"})),
        )
        .await;
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(0),
            "{sdk:?}: {out}"
        );
        assert_eq!(
            out["result"]["error"]["data"]["rules"],
            json!(["form.secret"]),
            "{sdk:?}: {out}"
        );
        let (out, _) = via_stdio(sdk, sdk, "legacy", "connect_ok", "empty", "accept", None).await;
        assert_eq!(
            out["result"]["error"]["data"]["rules"],
            json!(["mode.undeclared"]),
            "{sdk:?}: {out}"
        );
        assert!(audit_events(dir.path())
            .iter()
            .any(|e| e["event"] == "elicitation.answered"));
    }
}

#[tokio::test]
async fn stdio_2026_allowed_and_blocked_with_the_python_sdk() {
    let (out, _) = via_stdio(
        Sdk::Python,
        Sdk::Python,
        "modern",
        "deploy",
        "both",
        "accept",
        Some(json!({"env": "production"})),
    )
    .await;
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(out["result"]["action"], "accept", "{out}");
    let (out, _) = via_stdio(
        Sdk::Python,
        Sdk::Python,
        "modern",
        "connect_http",
        "both",
        "accept",
        None,
    )
    .await;
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(out["error"]["code"], -31042, "{out}");
    assert_eq!(out["error"]["data"]["rules"], json!(["url.scheme"]));
}

/// Starts `elicitgate stdio` around `server` with piped stdio (the test is the client).
fn spawn_stdio(config: &Path, server: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
        .args(["stdio", "--config"])
        .arg(config)
        .arg("--")
        .args(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn child_exit_code_is_propagated_and_client_eof_ends_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_config(dir.path(), "");
    // A server that crashes with status 3 after its first line.
    let mut gw = spawn_stdio(
        &config,
        &[
            "sh",
            "-c",
            "read line; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}'; exit 3",
        ],
    );
    let mut stdin = gw.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let mut out = BufReader::new(gw.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), out.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(line, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let status = tokio::time::timeout(Duration::from_secs(20), gw.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(3), "the child's exit status is ours");

    // Client disconnect: stdin EOF reaches the child (`cat` ends), and we exit 0.
    let mut gw = spawn_stdio(&config, &["cat"]);
    drop(gw.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(20), gw.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn oversized_lines_are_refused_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_config(dir.path(), "limits: { max_request_body: 1KiB }\n");
    let mut gw = spawn_stdio(&config, &["cat"]);
    let mut stdin = gw.stdin.take().unwrap();
    let mut out = BufReader::new(gw.stdout.take().unwrap()).lines();
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(5000)
    );
    stdin.write_all(big.as_bytes()).await.unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(20), out.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(json(first.as_bytes())["error"]["code"], -32600, "{first}");
    // The relay goes on: the next line reaches the child (`cat` echoes it back).
    let second = tokio::time::timeout(Duration::from_secs(20), out.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    drop(stdin);
    assert!(tokio::time::timeout(Duration::from_secs(20), gw.wait())
        .await
        .unwrap()
        .unwrap()
        .success());
}

#[tokio::test]
async fn unsolicited_elicitation_over_stdio_is_unassociated() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_config(dir.path(), "");
    // The server elicits after initialize, with no client request in flight; then echoes
    // whatever it gets (so the gateway's own answer is visible on stdout).
    let script = r#"read init; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}'; echo '{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"Pick","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}}'; read answer; echo "$answer" >&2; echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"done"}}'"#;
    let mut gw = tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
        .args(["stdio", "--config"])
        .arg(&config)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = gw.stdin.take().unwrap();
    stdin.write_all(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
    let mut out = BufReader::new(gw.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Ok(Ok(Some(line))) =
        tokio::time::timeout(Duration::from_secs(20), out.next_line()).await
    {
        let done = line.contains("notifications/message");
        seen.push(line);
        if done {
            break;
        }
    }
    assert!(
        seen.iter().all(|l| !l.contains("elicitation/create")),
        "{seen:?}"
    );
    drop(stdin);
    let mut err = String::new();
    let mut stderr = gw.stderr.take().unwrap();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err),
    )
    .await
    .unwrap()
    .ok();
    assert!(
        err.contains("request.unassociated"),
        "the child got the gateway's answer: {err}"
    );
    tokio::time::timeout(Duration::from_secs(20), gw.wait())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn http_sse_transport_through_the_gateway_with_sdk_peers() {
    for (s, c) in [
        (Sdk::Node, Sdk::Node),
        (Sdk::Python, Sdk::Python),
        (Sdk::Node, Sdk::Python),
    ] {
        let srv = server(s, &["--transport", "sse", "--ignore-caps"]).await;
        // Route at the upstream's root so announced endpoints map back through the gateway.
        let yaml = format!(
            "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: legacy-sse\n    path: /legacy\n    upstream: \"http://127.0.0.1:{}/\"\n",
            srv.port
        );
        let gw = gateway(&yaml).await;
        let url = format!("http://{}/legacy/sse", gw.addr);
        let out = client(
            c,
            &[
                "--transport",
                "sse",
                "--url",
                &url,
                "--tool",
                "deploy",
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
                "--content",
                r#"{"env":"staging"}"#,
            ],
        )
        .await;
        assert_eq!(out["result"]["action"], "accept", "{s:?}/{c:?}: {out}");
        let out = client(
            c,
            &[
                "--transport",
                "sse",
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
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(0),
            "{s:?}/{c:?}: {out}"
        );
        assert_eq!(
            out["result"]["error"]["data"]["rules"],
            json!(["form.secret"]),
            "{s:?}/{c:?}: {out}"
        );
        // Every POST went through the gateway (none straight to the upstream).
        let m = metrics(gw.admin_addr).await;
        assert!(m.contains(r#"http_method="POST""#), "{m}");
        gw.shutdown().await;
    }
}
