//! OpenTelemetry traces over OTLP/HTTP, received by a real OTLP
//! receiver in the test that decodes the protobuf the exporter sends; W3C `traceparent` taken
//! from `params._meta` and from headers, and propagated upstream; span events for elicitation
//! verdicts carry rule ids only. And the access log of the real binary: one structured line per
//! request, never bodies or credentials.

use crate::common::scripted::*;
use crate::common::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An OTLP/HTTP receiver: every `POST /v1/traces` and `/v1/logs` body decoded as a collector
/// would.
struct Receiver {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    logs: Arc<Mutex<Vec<LogRecord>>>,
    content_types: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let logs: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
        let content_types: Arc<Mutex<Vec<String>>> = Arc::default();
        let (spans_srv, types_srv, logs_srv) = (spans.clone(), content_types.clone(), logs.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (spans, types, logs) = (spans_srv.clone(), types_srv.clone(), logs_srv.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (spans, types, logs) = (spans.clone(), types.clone(), logs.clone());
                            async move {
                                let path = req.uri().path().to_owned();
                                if let Some(t) = req.headers().get("content-type") {
                                    types
                                        .lock()
                                        .unwrap()
                                        .push(t.to_str().unwrap_or("").to_owned());
                                }
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                if path == "/v1/traces" {
                                    let export = ExportTraceServiceRequest::decode(body).unwrap();
                                    for rs in export.resource_spans {
                                        for ss in rs.scope_spans {
                                            spans.lock().unwrap().extend(ss.spans);
                                        }
                                    }
                                } else if path == "/v1/logs" {
                                    let export = ExportLogsServiceRequest::decode(body).unwrap();
                                    for rl in export.resource_logs {
                                        for sl in rl.scope_logs {
                                            logs.lock().unwrap().extend(sl.log_records);
                                        }
                                    }
                                }
                                Ok::<_, std::convert::Infallible>(
                                    http::Response::builder()
                                        .header("content-type", "application/x-protobuf")
                                        .body(Full::new(Bytes::new()))
                                        .unwrap(),
                                )
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            spans,
            logs,
            content_types,
        }
    }

    /// Waits (bounded) until a span named `name` arrived.
    async fn span(&self, name: &str) -> Span {
        for _ in 0..200 {
            if let Some(s) = self.spans.lock().unwrap().iter().find(|s| s.name == name) {
                return s.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let names: Vec<String> = self
            .spans
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.name.clone())
            .collect();
        panic!("no span {name:?}; got {names:?}");
    }

    fn spans_of_trace(&self, trace_id: &[u8]) -> Vec<Span> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// With `audit.sink: [otlp, file]`, a blocked elicitation reaches the collector as an OTLP log
/// record whose body is the (redacted) audit line, and the file sink keeps writing.
#[tokio::test]
async fn audit_events_are_exported_as_otlp_log_records() {
    let receiver = Receiver::start().await;
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Sign in",
            json!({"password":{"type":"string","default":"hunter2"}}),
        )])
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let yaml = config_for(
        &upstream.url("/mcp"),
        &format!(
            "telemetry: {{ endpoint: \"http://{}\", export_interval: 100ms, traces: false }}\n\
             audit: {{ sink: [otlp, file], file: \"{}\" }}",
            receiver.addr,
            file.display()
        ),
    );
    let settings = elicitgate::settings::Settings::from_yaml(&yaml, dir.path()).unwrap();
    let running = elicitgate::start::start_with(settings, elicitgate::start::Options::default())
        .await
        .unwrap();
    let url = format!("http://{}/mcp", running.addr);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
    let _ = send(rpc_post(&url, init)).await;
    let call = r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#;
    let _ = send(in_session(rpc_post(&url, call))).await;
    let mut record = None;
    for _ in 0..200 {
        record = receiver
            .logs
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.event_name == "elicitation.blocked")
            .cloned();
        if record.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let record = record.unwrap_or_else(|| {
        panic!(
            "no blocked record; got {:?}; file: {:?}; {}",
            receiver
                .logs
                .lock()
                .unwrap()
                .iter()
                .map(|r| r.event_name.clone())
                .collect::<Vec<_>>(),
            std::fs::read_to_string(&file),
            scrape_blocking(running.admin_addr)
        )
    });
    assert_eq!(record.severity_text, "WARN");
    let Some(Any::StringValue(body)) = record.body.and_then(|b| b.value) else {
        panic!("a string body");
    };
    let event: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["event"], "elicitation.blocked");
    assert_eq!(event["rules"], json!(["form.secret"]));
    assert!(
        !body.contains("hunter2") && !body.contains("Sign in"),
        "{body}"
    );
    running.shutdown().await;
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("elicitation.blocked"),
        "the file sink kept writing"
    );
}

const META_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[tokio::test]
async fn request_spans_continue_the_callers_trace_and_reach_the_upstream() {
    let receiver = Receiver::start().await;
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Sign in",
            json!({"password":{"type":"string","title":"Password"}}),
        )])
    })
    .await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        &format!(
            "telemetry: {{ endpoint: \"http://{}\", export_interval: 100ms, service_name: gw-test }}",
            receiver.addr
        ),
    ))
    .await;
    initialize(&gw, BOTH).await;

    // The message's own context wins over the header's.
    let body = json!({"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t",
        "_meta":{"traceparent": format!("00-{META_TRACE}-b7ad6b7169203331-01")}}})
    .to_string();
    let mut req = in_session(rpc_post(&gw.url(), &body));
    req.headers_mut().insert(
        "traceparent",
        format!("00-{HEADER_TRACE}-00f067aa0ba902b7-01")
            .parse()
            .unwrap(),
    );
    let (status, _, answer) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !String::from_utf8_lossy(&answer).contains("Password"),
        "the form was blocked"
    );

    let server = receiver.span("tools/call demo").await;
    assert_eq!(hex(&server.trace_id), META_TRACE);
    assert_eq!(hex(&server.parent_span_id), "b7ad6b7169203331");
    assert_eq!(server.kind, 2, "SERVER");
    assert!(
        matches!(attr(&server, "mcp.method.name"), Some(Any::StringValue(m)) if m == "tools/call")
    );
    assert!(matches!(attr(&server, "elicitgate.route"), Some(Any::StringValue(r)) if r == "demo"));
    assert!(matches!(
        attr(&server, "http.response.status_code"),
        Some(Any::IntValue(200))
    ));

    // The verdict is an event of the request's span: rule ids, never the form's content.
    let verdict = server
        .events
        .iter()
        .find(|e| e.name == "elicitation.verdict")
        .expect("a verdict event");
    let rendered = format!("{:?}", verdict.attributes);
    assert!(
        rendered.contains("deny") && rendered.contains("form.secret"),
        "{rendered}"
    );
    assert!(
        !rendered.contains("Password") && !rendered.contains("Sign in"),
        "{rendered}"
    );

    // The upstream span is the server span's child, and its traceparent went upstream.
    let trace = receiver.spans_of_trace(&server.trace_id);
    let client_span = trace
        .iter()
        .find(|s| s.kind == 3 && s.parent_span_id == server.span_id)
        .expect("an upstream client span");
    let seen = upstream
        .requests()
        .into_iter()
        .find(|s| body_json(s)["method"] == "tools/call")
        .unwrap();
    let sent = seen.headers["traceparent"].to_str().unwrap().to_owned();
    assert_eq!(
        sent,
        format!("00-{META_TRACE}-{}-01", hex(&client_span.span_id))
    );

    // Without _meta, the header's context is continued.
    let req = in_session(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    ));
    let mut req = req;
    req.headers_mut().insert(
        "traceparent",
        format!("00-{HEADER_TRACE}-00f067aa0ba902b7-01")
            .parse()
            .unwrap(),
    );
    let _ = send(req).await;
    let ping = receiver.span("ping demo").await;
    assert_eq!(hex(&ping.trace_id), HEADER_TRACE);
    assert_eq!(hex(&ping.parent_span_id), "00f067aa0ba902b7");

    // Unrouted requests get a span too; exports are counted.
    let _ = send(rpc_post(&format!("http://{}/nowhere", gw.addr), "{}")).await;
    receiver.span("none unmatched").await;
    assert!(receiver
        .content_types
        .lock()
        .unwrap()
        .iter()
        .all(|t| t == "application/x-protobuf"));
    let metrics = metrics(gw.admin_addr).await;
    assert!(
        metrics.contains(r#"elicitgate_telemetry_exports_total{result="ok",signal="traces"}"#),
        "{metrics}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_collector_is_counted_and_never_blocks_the_proxy() {
    let dead = crate::common::redis::free_port();
    let upstream = legacy_server(|_| sse(&[])).await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        &format!(
            "telemetry: {{ endpoint: \"http://127.0.0.1:{dead}\", export_interval: 50ms, timeout: 500ms }}"
        ),
    ))
    .await;
    initialize(&gw, BOTH).await;
    for _ in 0..20 {
        call_tool(&gw).await;
    }
    let mut failed = false;
    for _ in 0..100 {
        if metrics(gw.admin_addr)
            .await
            .contains(r#"elicitgate_telemetry_exports_total{result="failed",signal="traces"}"#)
        {
            failed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(failed, "failed exports are counted");
    gw.shutdown().await;
}

/// The real binary with `log.access: true`: one JSON line per request on stderr with route,
/// methods, status, duration, upstream and bytes — and nothing of the body or credentials.
#[test]
fn the_access_log_has_one_line_per_request_without_bodies_or_credentials() {
    use crate::common::redis::free_port;
    use std::io::{Read, Write};
    use std::process::Command;
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream_port = upstream.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in upstream.incoming() {
            let Ok(mut s) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let (port, admin) = (free_port(), free_port());
    std::fs::write(
        &path,
        format!(
            "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\nworkers: 1\n\
             log: {{ level: warn, format: json, access: true }}\naudit: {{ sink: off }}\n\
             routes:\n  - name: mcp\n    path: /mcp\n    upstream: \"http://127.0.0.1:{upstream_port}/mcp\"\n"
        ),
    )
    .unwrap();
    let (mut child, rx) = serve_with_stderr(&path, port);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":"s3cr3t-body"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-very-secret\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline
        && !lines
            .iter()
            .any(|l: &String| l.contains("elicitgate::access"))
    {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            lines.push(line);
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let access: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| l.contains("elicitgate::access"))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(access.len(), 1, "{lines:?}");
    let f = &access[0]["fields"];
    assert_eq!(f["route"], "mcp");
    assert_eq!(f["http_method"], "POST");
    assert_eq!(f["mcp_method"], "tools/call");
    assert_eq!(f["status"], 200);
    assert_eq!(f["upstream"], format!("127.0.0.1:{upstream_port}"));
    assert_eq!(f["request_bytes"], body.len());
    assert!(f["response_bytes"].as_u64().unwrap() > 0);
    assert!(f["duration_ms"].as_f64().is_some());
    assert_eq!(f["complete"], true);
    let all = lines.join("\n");
    assert!(
        !all.contains("tok-very-secret") && !all.contains("s3cr3t-body"),
        "{all}"
    );
}

/// The telemetry and audit metric lines, scraped without the async client (for a panic message).
fn scrape_blocking(admin: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(admin).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .filter(|l| l.contains("telemetry") || l.contains("audit_"))
        .collect::<Vec<_>>()
        .join("\n")
}
