//! What any detector finds is never written raw, on any carrier, in any output. Every example of
//! `elicitgate_core::inspect::examples::DETECTOR_EXAMPLES` (one per detector and shape) is
//! planted wherever a peer can put it — URL path segments, query names and values, form
//! messages and defaults, answers, request paths — through the real binary over HTTP (both
//! protocol eras) and over stdio. Then every output is read: every audit sink (file, stdout,
//! syslog over UDP, OTLP log records), the traces, the debug and access logs, `/metrics`,
//! `report` (text and JSON), and every body the gateway itself wrote to the client. None may hold an example, raw or
//! percent-encoded.

use crate::common::scripted::*;
use crate::common::serve::Served;
use crate::common::*;
use elicitgate_core::inspect::examples::{DetectorExample, DETECTOR_EXAMPLES};
use http::StatusCode;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const CEILING: Duration = Duration::from_secs(30);

/// The forms of an example that must appear nowhere: as planted, and percent-encoded.
fn forms(example: &DetectorExample) -> Vec<String> {
    let mut out = vec![example.value.to_owned()];
    let encoded = encode(example.value);
    if encoded != example.value {
        out.push(encoded);
    }
    out
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Every example (found on its own) as URL path segments, and as query names; the named
/// ones under their name.
fn hostile_url() -> String {
    let bare: Vec<&DetectorExample> = DETECTOR_EXAMPLES
        .iter()
        .filter(|e| e.named.is_none())
        .collect();
    let path: Vec<String> = bare.iter().map(|e| encode(e.value)).collect();
    let mut query: Vec<String> = bare
        .iter()
        .map(|e| format!("{}=1", encode(e.value)))
        .collect();
    query.extend(
        DETECTOR_EXAMPLES
            .iter()
            .filter_map(|e| Some(format!("{}={}", e.named?, encode(e.value)))),
    );
    format!(
        "https://auth.example.com/c/{}?{}",
        path.join("/"),
        query.join("&")
    )
}

/// All examples in one text.
fn all_values() -> String {
    DETECTOR_EXAMPLES
        .iter()
        .map(|e| e.value)
        .collect::<Vec<_>>()
        .join(" ; ")
}

fn assert_clean(outputs: &[(&str, String)]) {
    let mut leaks = Vec::new();
    for (name, text) in outputs {
        for example in DETECTOR_EXAMPLES {
            for form in forms(example) {
                if text.contains(&form) {
                    leaks.push(format!("{} ({form}) in {name}", example.detector));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "written raw:\n{}", leaks.join("\n"));
}

/// A legacy server: the call named `url` asks for a URL full of examples, `form` for a form
/// whose message and defaults are examples, `plain` for an ordinary form the client answers
/// with examples.
fn legacy_stream(msg: &Value) -> String {
    match msg["params"]["name"].as_str().unwrap_or_default() {
        "url" => sse(&[url_elicitation("u-1", "e-1", &hostile_url())]),
        "form" => {
            let props: serde_json::Map<String, Value> = DETECTOR_EXAMPLES
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    (
                        format!("f{i}"),
                        json!({"type": "string", "default": e.value}),
                    )
                })
                .collect();
            sse(&[form(
                "f-1",
                &format!("Confirm: {}", all_values()),
                Value::Object(props),
            )])
        }
        "plain" => sse(&[form(
            "p-1",
            "Your region",
            json!({"region": {"type": "string"}}),
        )]),
        _ => sse(&[]),
    }
}

async fn modern_upstream() -> MockUpstream {
    MockUpstream::start(|seen| {
        let msg = body_json(seen);
        let result = match msg["params"].get("inputResponses") {
            None => json!({"resultType":"input_required","requestState":"st-1","inputRequests":{
                "a":{"method":"elicitation/create","params":{"mode":"url","message":"Connect","elicitationId":"e-2","url":hostile_url()}},
                "b":{"method":"elicitation/create","params":{"message":"Your region",
                    "requestedSchema":{"type":"object","properties":{"region":{"type":"string"}}}}}}}),
            Some(_) => json!({"resultType":"complete","content":[]}),
        };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string())
    })
    .await
}

async fn read_to_end<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    r: R,
) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut s = String::new();
        let mut r = r;
        let _ = r.read_to_string(&mut s).await;
        s
    })
}

/// Runs `elicitgate report` on `audit`, as text and as JSON.
fn report(audit: &Path) -> String {
    let mut out = String::new();
    for args in [&["report"][..], &["report", "--format", "json"][..]] {
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
            .args(args)
            .stdin(std::fs::File::open(audit).unwrap())
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
        out.push_str(&String::from_utf8_lossy(&run.stdout));
    }
    assert!(out.contains("url.pii"), "the report saw the blocks: {out}");
    out
}

/// Collects syslog datagrams sent to the returned port until `stop` is set.
fn syslog_collector() -> (u16, std::sync::Arc<std::sync::Mutex<String>>) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = got.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        // Ends with the test process; reads whatever arrives meanwhile.
        loop {
            if let Ok(n) = socket.recv(&mut buf) {
                let mut s = sink.lock().unwrap();
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                s.push('\n');
            }
        }
    });
    (port, got)
}

/// An OTLP/HTTP receiver keeping every exported body as sent (protobuf carries strings as
/// UTF-8 bytes, so an example in any span, attribute or log record shows in them), and the
/// paths posted to.
async fn otlp_receiver() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<(Vec<u8>, Vec<String>)>>,
) {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got: std::sync::Arc<std::sync::Mutex<(Vec<u8>, Vec<String>)>> = Default::default();
    let store = got.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let store = store.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let store = store.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let mut got = store.lock().unwrap();
                            got.0.extend_from_slice(&body);
                            got.1.push(path);
                            Ok::<_, std::convert::Infallible>(
                                http::Response::builder()
                                    .header("content-type", "application/x-protobuf")
                                    .body(http_body_util::Full::new(bytes::Bytes::new()))
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
    (addr, got)
}

#[tokio::test]
async fn no_detectors_finding_is_written_raw_over_http() {
    let legacy = legacy_server(legacy_stream).await;
    let modern = modern_upstream().await;
    let (syslog_port, syslog) = syslog_collector();
    let (otlp, exported) = otlp_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = dir.path().join("elicitgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nlog: {{ format: json, level: debug, access: true }}\n\
             telemetry: {{ endpoint: \"http://{otlp}\", export_interval: 100ms }}\n\
             audit:\n  sink: [file, stdout, syslog, otlp]\n  file: \"{}\"\n  salt: test-salt-long-enough\n  max_events_per_minute: 0\n  syslog: {{ address: \"127.0.0.1:{syslog_port}\", max_message: 60000 }}\n\
             routes:\n  - name: legacy\n    path: /mcp\n    upstream: \"{}\"\n  - name: modern\n    path: /modern\n    upstream: \"{}\"\n",
            audit.display(),
            legacy.url("/mcp"),
            modern.url("/mcp"),
        ),
    )
    .unwrap();
    let served = Served::start(&config).await;
    let (addr, admin) = (served.addr.clone(), served.admin.clone());

    // Every body the gateway answers the client with.
    let mut bodies = String::new();
    let mut exchange = |status: StatusCode, body: bytes::Bytes| {
        bodies.push_str(&format!("{status} {}\n", String::from_utf8_lossy(&body)));
    };
    let url = format!("http://{addr}/mcp");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, _, body) = send(rpc_post(&url, init)).await;
    exchange(status, body);
    for name in ["url", "form", "plain"] {
        let call = json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":name}});
        let (status, _, body) = send(in_session(rpc_post(&url, &call.to_string()))).await;
        exchange(status, body);
    }
    // The client answers the ordinary form with every example, and answers the blocked
    // elicitations anyway (refused: the gateway never forwarded them).
    for (id, content) in [
        ("p-1", json!({"region": all_values()})),
        ("f-1", json!({"f0": all_values()})),
        ("u-1", json!({"x": all_values()})),
    ] {
        let reply = json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":content}});
        let (status, _, body) = send(in_session(rpc_post(&url, &reply.to_string()))).await;
        exchange(status, body);
    }
    // Examples in request paths and queries, routed and not.
    for example in DETECTOR_EXAMPLES {
        for path in [
            format!("/mcp?{}=1", encode(example.value)),
            format!(
                "/nowhere/{}?q={}",
                encode(example.value),
                encode(example.value)
            ),
        ] {
            let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
            let (status, _, body) = send(rpc_post(&format!("http://{addr}{path}"), ping)).await;
            exchange(status, body);
        }
    }
    // 2026-07-28: a URL full of examples, and answers carrying them.
    let murl = format!("http://{addr}/modern");
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}});
    let first =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":meta}});
    let (status, _, body) = send(rpc_post(&murl, &first.to_string())).await;
    exchange(status, body);
    let answers = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":meta,"requestState":"st-1",
        "inputResponses":{"b":{"action":"accept","content":{"region": all_values()}},
                          "a":{"action":"accept","content":{"x": all_values()}}}}});
    let (status, _, body) = send(rpc_post(&murl, &answers.to_string())).await;
    exchange(status, body);

    let metrics_text = metrics(admin.parse().unwrap()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let output = served.stop().await;
    let (stdout_text, stderr_text) = (output.stdout, output.stderr);
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    let syslog_text = syslog.lock().unwrap().clone();
    let (otlp_bytes, otlp_paths) = exported.lock().unwrap().clone();
    let otlp_text = String::from_utf8_lossy(&otlp_bytes).into_owned();

    // The run did what it should, so the absence of examples means something.
    assert!(audit_text.contains("url.pii"), "{audit_text}");
    assert!(audit_text.contains("form.secret"), "{audit_text}");
    assert!(
        stdout_text.contains("url.pii"),
        "audit on stdout: {stdout_text}"
    );
    assert!(
        syslog_text.contains("url.pii"),
        "audit over syslog: {syslog_text}"
    );
    assert!(
        stderr_text.contains("elicitgate::access"),
        "access log: {stderr_text}"
    );
    for path in ["/v1/traces", "/v1/logs"] {
        assert!(
            otlp_paths.iter().any(|p| p == path),
            "nothing exported to {path}: {otlp_paths:?}"
        );
    }
    assert!(
        otlp_text.contains("url.pii"),
        "the audit as OTLP log records"
    );
    assert_clean(&[
        ("the audit file", audit_text.clone()),
        ("the audit on stdout", stdout_text),
        ("syslog", syslog_text),
        ("OTLP traces and log records", otlp_text),
        ("the logs", stderr_text),
        ("/metrics", metrics_text),
        ("report", report(&audit)),
        ("the gateway's answers to the client", bodies),
    ]);
}

#[tokio::test]
async fn no_detectors_finding_is_written_raw_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = dir.path().join("stdio.yaml");
    std::fs::write(
        &config,
        format!(
            "log: {{ format: json, level: debug }}\naudit: {{ sink: [file, stdout], file: \"{}\", salt: test-salt-long-enough, max_events_per_minute: 0 }}\n",
            audit.display()
        ),
    )
    .unwrap();
    // The server answers initialize, asks for a URL full of examples and for a form whose
    // message is all of them (both blocked), then an ordinary form, reads the client's answer
    // to it (which carries every example) and ends the call.
    let url = json!({"jsonrpc":"2.0","id":"u-1","method":"elicitation/create","params":{
        "mode":"url","message":"Connect","elicitationId":"e-1","url":hostile_url()}});
    let secret_form = form(
        "f-1",
        &format!("Confirm: {}", all_values()),
        json!({"a": {"type": "string"}}),
    );
    let plain = form("p-1", "Your region", json!({"region": {"type": "string"}}));
    let done = json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}});
    let script = format!(
        "read init; echo '{}'; read call; echo '{}'; echo '{}'; echo '{}'; read answer; echo '{}'; sleep 1",
        json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}),
        url,
        secret_form,
        plain,
        done,
    );
    let mut gw = tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
        .args(["stdio", "--config"])
        .arg(&config)
        .args(["--", "sh", "-c", &script])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = read_to_end(gw.stderr.take().unwrap()).await;
    let mut stdin = gw.stdin.take().unwrap();
    let mut out = BufReader::new(gw.stdout.take().unwrap()).lines();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
    stdin
        .write_all(format!("{init}\n{call}\n").as_bytes())
        .await
        .unwrap();
    let mut protocol = String::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(CEILING, out.next_line()).await {
        protocol.push_str(&line);
        protocol.push('\n');
        if line.contains("\"p-1\"") {
            let reply = json!({"jsonrpc":"2.0","id":"p-1","result":{"action":"accept","content":{"region": all_values()}}});
            stdin
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
        }
        if line.contains("\"id\":1") {
            break;
        }
    }
    assert!(protocol.contains("\"id\":1"), "the call ended: {protocol}");
    drop(stdin);
    let _ = tokio::time::timeout(CEILING, gw.wait()).await;
    let stderr_text = stderr.await.unwrap();
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    assert!(audit_text.contains("url.pii"), "{audit_text}");
    assert!(audit_text.contains("form.secret"), "{audit_text}");
    assert_clean(&[
        ("the audit file", audit_text),
        ("stderr (logs and the audit)", stderr_text),
        ("the client's stdout", protocol),
        ("report", report(&audit)),
    ]);
}
