//! Differential test for headers, with the official clients as oracles (Python `mcp` over
//! httpx, TypeScript `@modelcontextprotocol/sdk` over undici/fetch, Rust `rmcp` over reqwest).
//!
//! A scripted server answers `initialize` with its session named in two `Mcp-Session-Id`
//! fields. DIRECTLY, each client goes on in some session, and the one it names in its next
//! requests is its reading of the repeated header (recorded by the server, and printed in the
//! report). THROUGH THE GATEWAY, no client may go on in any session: the gateway refuses the
//! answer (docs/sessions-and-headers.md), so no request naming a session reaches the server
//! and every client ends its call with an error. The oracles' readings are not asserted to
//! agree: the point is that the gateway does not bet on one of them.

use super::*;
use crate::common::peers::{client, Sdk};
use crate::common::{config_for, full, gateway, MockUpstream};
use ::http::StatusCode;
use serde_json::json;
use std::collections::BTreeSet;

/// A legacy server whose `initialize` answer names its session twice; every later request is
/// answered as a correct server would (202 for notifications, a text result for `tools/call`).
async fn repeated_session_server() -> MockUpstream {
    session_server(&["h-a", "h-b"]).await
}

/// The same, naming `sessions` (one field each) in every `initialize` answer: with one value,
/// every client is handed the same session.
async fn session_server(sessions: &'static [&'static str]) -> MockUpstream {
    MockUpstream::start(move |seen| {
        let msg: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
        match (seen.method.as_str(), msg["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let mut r = full(
                    StatusCode::OK,
                    "application/json",
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25",
                        "capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}})
                    .to_string(),
                );
                for session in sessions {
                    r.headers_mut().append("mcp-session-id", session.parse().unwrap());
                }
                r
            }
            ("POST", Some("tools/call")) => full(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc":"2.0","id":msg["id"],"result":{"content":[{"type":"text","text":"ok"}]}})
                    .to_string(),
            ),
            ("POST", Some("tools/list")) => full(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc":"2.0","id":msg["id"],"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}})
                    .to_string(),
            ),
            ("POST", _) => full(StatusCode::ACCEPTED, "", ""),
            // Sessions outlive their clients (a server MAY refuse DELETE): a session handed
            // out twice is still known when the next client is given it.
            _ => full(StatusCode::METHOD_NOT_ALLOWED, "", ""),
        }
    })
    .await
}

/// The session values the server saw named after its `initialize` answer.
fn sessions_named(upstream: &MockUpstream) -> BTreeSet<String> {
    upstream
        .requests()
        .iter()
        .flat_map(|seen| {
            seen.headers
                .get_all("mcp-session-id")
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn run_client(oracles: &Oracles, which: Client, url: &str, dir: &Path) {
    match which {
        Client::Python | Client::Node => {
            let sdk = if which == Client::Python {
                Sdk::Python
            } else {
                Sdk::Node
            };
            let _ = client(sdk, &["--url", url, "--tool", "t", "--era", "legacy"]).await;
        }
        Client::Rmcp => {
            let cases = dir.join("cases.jsonl");
            std::fs::write(&cases, "{\"name\":\"t\",\"era\":\"legacy\"}\n").unwrap();
            let limits = (1, 10, Duration::from_secs(60));
            let log = dir.join("rmcp.log");
            run_oracle(
                oracles,
                which,
                &Target::Url(url.to_owned()),
                &cases,
                limits,
                &log,
            )
            .await;
        }
    }
}

#[tokio::test]
async fn a_repeated_session_header_is_read_by_no_client_through_the_gateway() {
    let Some(oracles) = oracles("header differential test", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut clients = vec![Client::Python, Client::Node];
    if oracles.rmcp.is_some() {
        clients.push(Client::Rmcp);
    }
    let mut report = String::from("client  direct reading of `Mcp-Session-Id: h-a` + `h-b`\n");
    for which in clients {
        // Directly: the client's own reading.
        let direct = repeated_session_server().await;
        run_client(&oracles, which, &direct.url("/mcp"), dir.path()).await;
        let read = sessions_named(&direct);
        report.push_str(&format!("{:<7} {read:?}\n", which.name()));
        assert!(
            !read.is_empty(),
            "{}: directly, the client never went on after initialize (the oracle is broken)",
            which.name()
        );

        // Through the gateway: refused, so no session is ever named to the server.
        let upstream = repeated_session_server().await;
        let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
        run_client(&oracles, which, &gw.url(), dir.path()).await;
        let named = sessions_named(&upstream);
        assert!(
            named.is_empty(),
            "{}: went on in {named:?} through the gateway",
            which.name()
        );
        let refused = gw.audit_of("message.refused").await;
        assert!(
            refused.iter().any(|e| e["reason"] == "session.repeated"),
            "{}: not refused: {refused:?}",
            which.name()
        );
        gw.shutdown().await;
    }
    println!("{report}");
}

#[tokio::test]
async fn a_session_handed_to_two_clients_is_used_by_the_first_only_through_the_gateway() {
    let Some(oracles) = oracles("header differential test", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut clients = vec![Client::Python, Client::Node];
    if oracles.rmcp.is_some() {
        clients.push(Client::Rmcp);
    }
    // Directly, every client goes on in the one session the server hands out: they share it.
    let direct = session_server(&["h-1"]).await;
    for &which in &clients {
        run_client(&oracles, which, &direct.url("/mcp"), dir.path()).await;
    }
    let went_on = direct
        .requests()
        .iter()
        .filter(|s| s.headers.get("mcp-session-id").is_some_and(|v| v == "h-1"))
        .count();
    assert!(
        went_on >= clients.len(),
        "directly, not every client used h-1 ({went_on})"
    );

    // Through the gateway the first client gets it; every later one is refused.
    let upstream = session_server(&["h-1"]).await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    for (n, &which) in clients.iter().enumerate() {
        let before = upstream.requests().len();
        run_client(&oracles, which, &gw.url(), dir.path()).await;
        let in_session = upstream.requests()[before..]
            .iter()
            .filter(|s| s.headers.contains_key("mcp-session-id"))
            .count();
        if n == 0 {
            assert!(
                in_session > 0,
                "{}: the first client was refused",
                which.name()
            );
        } else {
            assert_eq!(
                in_session,
                0,
                "{}: used another client's session",
                which.name()
            );
        }
    }
    let refused = gw.audit_of("message.refused").await;
    assert_eq!(
        refused
            .iter()
            .filter(|e| e["reason"] == "session.reused")
            .count(),
        clients.len() - 1,
        "{refused:?}"
    );
    gw.shutdown().await;
}
