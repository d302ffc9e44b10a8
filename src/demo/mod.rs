//! `elicitgate demo`: the whole product on loopback in a few seconds. A built-in MCP server
//! whose tools elicit ([`server`]), the gateway in front of it with the built-in default policy,
//! and a scripted client ([`client`]) that runs five cases and prints, for each, what the
//! gateway decided in plain words and the audit line it wrote.

pub mod client;
pub mod server;

use crate::audit::sink::AuditSink;
use crate::settings::Settings;
use anyhow::Context;
use client::DemoClient;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// One scripted case.
struct Case {
    title: &'static str,
    tool: &'static str,
    capabilities: Value,
    answer: Value,
    expect_blocked: bool,
}

fn cases() -> Vec<Case> {
    let both = json!({"elicitation": {"form": {}, "url": {}}});
    vec![
        Case {
            title: "A benign deployment form",
            tool: "deploy",
            capabilities: both.clone(),
            answer: json!({"action": "accept", "content": {"env": "staging", "confirm": true}}),
            expect_blocked: false,
        },
        Case {
            title: "A form that asks for a password",
            tool: "login",
            capabilities: both.clone(),
            answer: json!({"action": "accept", "content": {"password": "hunter2"}}),
            expect_blocked: true,
        },
        Case {
            title: "A URL-mode link to a plain-http host",
            tool: "connect_http",
            capabilities: both.clone(),
            answer: json!({"action": "accept"}),
            expect_blocked: true,
        },
        Case {
            title: "A URL-mode link with an e-mail address in its query",
            tool: "connect_pii",
            capabilities: both,
            answer: json!({"action": "accept"}),
            expect_blocked: true,
        },
        Case {
            title: "A URL-mode request to a client that declared forms only",
            tool: "connect",
            capabilities: json!({"elicitation": {}}),
            answer: json!({"action": "accept"}),
            expect_blocked: true,
        },
    ]
}

fn demo_settings(upstream: std::net::SocketAddr) -> anyhow::Result<Settings> {
    let yaml = format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"http://{upstream}/mcp\"\n"
    );
    Settings::from_yaml(&yaml, Path::new(".")).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Runs the demo; returns an error when a case did not end as expected.
pub async fn run(keep_running: bool) -> anyhow::Result<()> {
    let upstream = server::start("127.0.0.1:0".parse()?)
        .await
        .context("starting the demo MCP server")?;
    let settings = demo_settings(upstream)?;
    let metrics_for_sink = prometheus::IntCounter::new("demo_dropped", "unused")?;
    let (sink, audit_lines) = AuditSink::memory(metrics_for_sink);
    let gateway = crate::start::start_with(
        settings,
        crate::start::Options {
            config_path: None,
            audit_sink: Some(sink),
            ..Default::default()
        },
    )
    .await?;
    let url = format!("http://{}/mcp", gateway.addr);
    println!("elicitgate demo");
    println!("  demo MCP server : http://{upstream}/mcp");
    println!(
        "  gateway         : {url}  (metrics: http://{}/metrics)",
        gateway.admin_addr
    );
    println!("  policy          : built-in default (every rule deny; URL mode https only)\n");
    // The startup event.
    drain(&audit_lines);

    let mut failures = 0;
    for (n, case) in cases().into_iter().enumerate() {
        println!("{}. {} (tool `{}`)", n + 1, case.title, case.tool);
        let mut client = DemoClient::connect(&url, case.capabilities.clone()).await?;
        let outcome = client.call(case.tool, case.answer.clone()).await?;
        let shown = !outcome.elicitations.is_empty();
        let text = outcome.response["result"]["content"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .unwrap_or(Value::Null);
        // Audit lines are written by a background path; give them a moment.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let lines = drain(&audit_lines);
        let blocked = lines.iter().find(|l| l["event"] == "elicitation.blocked");
        match blocked {
            Some(event) => println!(
                "   BLOCKED by {} — the user never saw it; the gateway answered the server itself ({}).",
                event["rules"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default(),
                describe_server_view(&text),
            ),
            None if shown => println!(
                "   ALLOWED — the user saw it and answered; the server got: {}",
                text.get("answer").map(Value::to_string).unwrap_or_else(|| text.to_string())
            ),
            None => println!("   (no decision recorded)"),
        }
        for line in &lines {
            println!("   audit: {line}");
        }
        if blocked.is_some() != case.expect_blocked || (blocked.is_some() && shown) {
            failures += 1;
            println!("   UNEXPECTED outcome for this case");
        }
        println!();
    }
    if keep_running {
        println!("Gateway left running at {url} (Ctrl-C to stop). Point an MCP client at it.");
        let _ = tokio::signal::ctrl_c().await;
    }
    gateway.shutdown().await;
    anyhow::ensure!(
        failures == 0,
        "{failures} demo case(s) did not end as expected"
    );
    println!("All 5 cases ended as expected.");
    Ok(())
}

fn describe_server_view(text: &Value) -> String {
    match text.get("elicitation_error") {
        Some(e) => format!(
            "server saw error {} naming {}",
            e["code"], e["data"]["rules"]
        ),
        None => match text.get("answer") {
            Some(a) => format!("server saw {a}"),
            None => "no tool result".into(),
        },
    }
}

fn drain(rx: &Receiver<String>) -> Vec<Value> {
    rx.try_iter()
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .collect()
}
