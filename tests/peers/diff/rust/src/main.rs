//! elicitgate differential test: the Rust MCP SDK (`rmcp`) as an oracle client.
//!
//!     diff_client_rmcp --url http://127.0.0.1:PORT/mcp --cases FILE [--concurrency 8] [--timeout 5]
//!
//! FILE holds one JSON object per line (`hostile_upstream.py --list`). Every legacy case runs in
//! a fresh session: `StreamableHttpClientTransport::from_uri` + a `ClientHandler` declaring
//! `{"elicitation":{"form":{},"url":{}}}`, `tools/call <case name>`. `create_elicitation`
//! records what the user would be shown and answers `decline`; a `-32042` error is read the way
//! an application would (`error.data.elicitations`). Modern (2026-07-28) cases are reported as
//! `"call": "n/a"`. One JSON line per case, the same shape as diff_client.py / .mjs.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore};

const AFTER_SURFACED: Duration = Duration::from_millis(1500);

#[derive(Clone)]
struct Oracle {
    surfaced: Arc<Mutex<Vec<Value>>>,
    notify: Arc<Notify>,
}

impl ClientHandler for Oracle {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}}))
                .expect("capabilities");
        ClientConfig::new(caps, Implementation::new("elicitgate-diff-rmcp", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let rec = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                let mut props: Vec<String> = schema["properties"]
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                props.sort();
                json!({"via": "callback", "mode": "form", "message": message, "props": props})
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                json!({"via": "callback", "mode": "url", "message": message, "url": url})
            }
            other => json!({"via": "callback", "mode": "other", "message": format!("{other:?}")}),
        };
        self.surfaced.lock().unwrap().push(rec);
        self.notify.notify_one();
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }
}

/// The error and its sources, innermost last, without the SDK's long transport type names.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        parts.push(s.to_string());
        cur = s.source();
    }
    let inner: Vec<String> = parts
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|p| match p.find("] error: ") {
            Some(i) if p.starts_with("Transport [") => p[i + 9..].to_owned(),
            _ => p.clone(),
        })
        .collect();
    inner.join(" ← ")
}

fn short(s: &str, n: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= n {
        s
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

async fn run_case(url: String, case: Value, timeout: Duration) -> Value {
    let name = case["name"].as_str().unwrap_or_default().to_owned();
    let mut rec = json!({"case": name, "client": "rmcp", "surfaced": [], "call": "timeout",
                         "detail": "", "answer": null});
    if case["era"] != "legacy" {
        rec["call"] = "n/a".into();
        rec["detail"] = "this oracle runs the legacy era only".into();
        return rec;
    }
    let started = Instant::now();
    let oracle = Oracle {
        surfaced: Arc::new(Mutex::new(Vec::new())),
        notify: Arc::new(Notify::new()),
    };
    let notify = oracle.notify.clone();
    let surfaced = oracle.surfaced.clone();
    let outcome: Arc<Mutex<(String, String, Value)>> =
        Arc::new(Mutex::new(("timeout".into(), String::new(), Value::Null)));
    let out = outcome.clone();
    let surfaced_err = surfaced.clone();
    let notify_err = notify.clone();
    let work = async move {
        let transport = StreamableHttpClientTransport::from_uri(url.as_str());
        let client = match oracle.serve(transport).await {
            Ok(c) => c,
            Err(e) => {
                *out.lock().unwrap() = (
                    "error".into(),
                    short(&format!("initialize: {e}"), 160),
                    Value::Null,
                );
                return None;
            }
        };
        let result = client
            .call_tool(CallToolRequestParams::new(name.clone()))
            .await;
        match result {
            Ok(r) => {
                let content = serde_json::to_value(&r.content).unwrap_or(Value::Null);
                let text = content
                    .as_array()
                    .and_then(|a| a.iter().find(|c| c["type"] == "text"))
                    .and_then(|c| c["text"].as_str().map(str::to_owned));
                let answer = text
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .map(|v| v["answer"].clone())
                    .unwrap_or(Value::Null);
                *out.lock().unwrap() = (
                    "ok".into(),
                    format!("result isError={}", r.is_error.unwrap_or(false)),
                    answer,
                );
            }
            Err(ServiceError::McpError(e)) => {
                if e.code.0 == -32042 {
                    // What an application reads from a URL-required error.
                    let els = e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("elicitations"))
                        .and_then(|v| v.as_array())
                        .cloned()
                        .unwrap_or_default();
                    for el in &els {
                        surfaced_err
                            .lock()
                            .unwrap()
                            .push(json!({"via": "error-32042",
                            "mode": el.get("mode").cloned().unwrap_or_else(|| "url".into()),
                            "message": el.get("message"), "url": el.get("url")}));
                    }
                    if !els.is_empty() {
                        notify_err.notify_one();
                    }
                }
                *out.lock().unwrap() = (
                    "error".into(),
                    short(&format!("McpError {}: {}", e.code.0, e.message), 160),
                    Value::Null,
                );
            }
            Err(other) => {
                *out.lock().unwrap() = ("error".into(), short(&causes(&other), 200), Value::Null);
            }
        }
        Some(client)
    };
    let early = async {
        notify.notified().await;
        tokio::time::sleep(AFTER_SURFACED).await;
    };
    let client = tokio::select! {
        c = work => c,
        _ = tokio::time::sleep(timeout) => None,
        _ = early => None,
    };
    if let Some(client) = client {
        let _ = tokio::time::timeout(Duration::from_millis(500), client.cancel()).await;
    }
    let (call, detail, answer) = outcome.lock().unwrap().clone();
    let list = surfaced.lock().unwrap().clone();
    rec["call"] = call.clone().into();
    rec["detail"] = if call == "timeout" && !list.is_empty() {
        format!(
            "ended {}s after the elicitation",
            AFTER_SURFACED.as_secs_f64()
        )
        .into()
    } else {
        detail.into()
    };
    rec["answer"] = answer;
    rec["surfaced"] = Value::Array(list);
    rec["ms"] = (started.elapsed().as_millis() as u64).into();
    rec
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(url), Some(cases)) = (get("--url"), get("--cases")) else {
        eprintln!("usage: diff_client_rmcp --url URL --cases FILE [--concurrency N] [--timeout S]");
        std::process::exit(2);
    };
    let concurrency: usize = get("--concurrency")
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let timeout =
        Duration::from_secs_f64(get("--timeout").and_then(|v| v.parse().ok()).unwrap_or(5.0));
    let cases: Vec<Value> = std::fs::read_to_string(&cases)
        .expect("read cases")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("case JSON"))
        .collect();
    let sem = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = Vec::new();
    for case in cases {
        let permit = sem.clone().acquire_owned().await.expect("semaphore");
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let name = case["name"].clone();
            // A panic inside the SDK is a record, not an abort of the whole run.
            let rec = match tokio::spawn(run_case(url, case, timeout)).await {
                Ok(rec) => rec,
                Err(e) => json!({"case": name, "client": "rmcp", "surfaced": [], "call": "crash",
                                 "detail": short(&e.to_string(), 160)}),
            };
            println!("{rec}");
            drop(permit);
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    std::process::exit(0);
}
