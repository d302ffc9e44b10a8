//! Every bound reached by a hostile peer: what the peer sees, and that the gateway
//! stays up for everyone else. Time limits here are bounds under test, never performance
//! assertions: each test only waits for an outcome, with a generous ceiling.

use crate::common::*;
use bytes::Bytes;
use http::StatusCode;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads what the gateway sends on `stream` until it closes (at most `ceiling`).
async fn read_all(stream: &mut TcpStream, ceiling: Duration) -> String {
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(ceiling, stream.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

fn head(length: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn a_stalled_request_body_gets_408_and_never_reaches_the_upstream() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "timeouts:\n  request_body_idle: 300ms\n  request_body: 5s\n",
    ))
    .await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(head(1000).as_bytes()).await.unwrap();
    s.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
    let answer = read_all(&mut s, Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_idle_timeout"), "{answer}");
    assert!(up.requests().is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn a_trickling_request_body_gets_408_at_the_total_bound() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "timeouts:\n  request_body_idle: 2s\n  request_body: 800ms\n",
    ))
    .await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(head(1000).as_bytes()).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    // One byte every 100 ms: never idle, never done.
    let trickle = tokio::spawn(async move {
        for _ in 0..200 {
            if wr.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut buf)).await;
    trickle.abort();
    let answer = String::from_utf8_lossy(&buf);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"body_timeout\""), "{answer}");
    assert!(up.requests().is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn the_buffer_budget_refuses_new_bodies_while_stalled_ones_hold_it() {
    let up = json_upstream().await;
    let gw = gateway(&config_for(
        &up.url("/mcp"),
        "limits:\n  max_request_body: 64KiB\n  request_buffer_budget: 64KiB\ntimeouts:\n  request_body_idle: 30s\n  request_body: 60s\n",
    ))
    .await;
    // A stalled body holding most of the budget.
    let mut hog = TcpStream::connect(gw.addr).await.unwrap();
    hog.write_all(head(65_000).as_bytes()).await.unwrap();
    hog.write_all(&vec![b' '; 60_000]).await.unwrap();
    // Wait until the gateway holds the stalled bytes.
    let mut holding = false;
    for _ in 0..400 {
        if metrics(gw.admin_addr)
            .await
            .contains("elicitgate_buffered_bytes 60000")
        {
            holding = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        holding,
        "the stalled body is held: {}",
        metrics(gw.admin_addr).await
    );
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","pad":"{}"}}"#,
        "x".repeat(10_000)
    );
    let mut refused = None;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let (status, _, answer) = send(rpc_post(&gw.url(), &body)).await;
        seen.insert(status.as_u16());
        if status == StatusCode::SERVICE_UNAVAILABLE {
            refused = Some(String::from_utf8_lossy(&answer).into_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if refused.is_none() {
        let hog_saw = read_all(&mut hog, Duration::from_secs(1)).await;
        panic!("a body past the budget is refused with 503; saw {seen:?}; the stalled peer saw {hog_saw:?}");
    }
    let refused = refused.unwrap();
    assert!(refused.contains("buffer_budget"), "{refused}");
    // Small bodies still fit, and the budget comes back when the stalled peer leaves.
    let (status, _, _) = send(rpc_post(
        &gw.url(),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    drop(hog);
    // The gauge shows the budget given back.
    let mut released = false;
    for _ in 0..400 {
        if metrics(gw.admin_addr)
            .await
            .contains("elicitgate_buffered_bytes 0")
        {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(released, "the stalled body's bytes are given back");
    let mut ok = false;
    for _ in 0..100 {
        let (status, _, _) = send(rpc_post(&gw.url(), &body)).await;
        if status == StatusCode::OK {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ok,
        "the budget is given back when the stalled body goes away"
    );
    gw.shutdown().await;
}

mod pending {
    use super::*;
    use crate::common::scripted::*;
    use serde_json::{json, Value};
    use std::sync::Arc;

    async fn gateway_answer(upstream: &MockUpstream, id: &str, ceiling: Duration) -> Value {
        gateway_answer_within(upstream, id, ceiling).await
    }

    fn with(upstream: &str, extra: &str, policy: &str) -> String {
        config_for(upstream, &format!("{extra}\npolicies:\n  p:\n{policy}"))
            .replace("    upstream:", "    policy: p\n    upstream:")
    }

    #[tokio::test]
    async fn a_huge_enum_is_form_limits_and_never_reaches_the_client() {
        let values: Vec<String> = (0..300_000).map(|i| format!("v{i}")).collect();
        let upstream = legacy_server(move |_| {
            sse(&[form(
                "e-1",
                "Pick one",
                json!({"choice": {"type": "string", "enum": values}}),
            )])
        })
        .await;
        let gw = gateway(&config_for(
            &upstream.url("/mcp"),
            "limits:\n  max_sse_event: 16MiB\n",
        ))
        .await;
        initialize(&gw, BOTH).await;
        let body = call_tool(&gw).await;
        assert!(!body.contains("elicitation/create"), "forwarded");
        let answer = gateway_answer(&upstream, "e-1", Duration::from_secs(10)).await;
        assert_eq!(answer["error"]["data"]["rules"], json!(["form.limits"]));
        gw.shutdown().await;
    }

    #[tokio::test]
    async fn an_expired_elicitation_ends_the_servers_call_and_a_late_answer_is_unknown() {
        let upstream = legacy_server(|_| {
            sse(&[form(
                "t-1",
                "Your name?",
                json!({"name": {"type": "string"}}),
            )])
        })
        .await;
        let gw = gateway(&with(
            &upstream.url("/mcp"),
            "",
            "    pending:\n      ttl: 1s\n",
        ))
        .await;
        initialize(&gw, BOTH).await;
        assert!(call_tool(&gw).await.contains("elicitation/create"));
        // The state sweep runs every few seconds; the server hears within a sweep or two.
        let answer = gateway_answer(&upstream, "t-1", Duration::from_secs(20)).await;
        assert_eq!(answer["error"]["data"]["reason"], "elicitation_expired");
        let (status, body) = answer_form(&gw, "t-1").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(
            upstream
                .requests()
                .iter()
                .map(body_json)
                .filter(|m| m["id"] == "t-1")
                .count(),
            1,
            "the server hears once, from the gateway"
        );
        let m = metrics(gw.admin_addr).await;
        assert!(
            m.contains(r#"elicitgate_pending_released_total{reason="expired",route="demo"} 1"#),
            "{m}"
        );
        gw.shutdown().await;
    }

    async fn answer_form(gw: &TestGateway, id: &str) -> (StatusCode, Value) {
        answer(
            gw,
            id,
            json!({"action": "accept", "content": {"name": "Ada"}}),
        )
        .await
    }

    #[tokio::test]
    async fn the_byte_budget_evicts_the_oldest_and_its_server_is_told() {
        let upstream = legacy_server(|msg| {
            let n = msg["params"]["name"].as_str().unwrap_or("0").to_owned();
            let choices: Vec<String> = (0..90).map(|i| format!("{n}-option-{i:04}")).collect();
            sse(&[form(
                &format!("b-{n}"),
                "Pick",
                json!({"c": {"type": "string", "enum": choices}}),
            )])
        })
        .await;
        let gw = gateway(&config_for(
            &upstream.url("/mcp"),
            "limits:\n  max_pending_bytes: 24KiB\n",
        ))
        .await;
        initialize(&gw, BOTH).await;
        for n in 0..6 {
            let req = in_session(rpc_post(
                &gw.url(),
                &format!(
                    r#"{{"jsonrpc":"2.0","id":"c-{n}","method":"tools/call","params":{{"name":"{n}"}}}}"#
                ),
            ));
            let (status, _, body) = send(req).await;
            assert_eq!(status, StatusCode::OK);
            assert!(String::from_utf8_lossy(&body).contains("elicitation/create"));
        }
        let first = gateway_answer(&upstream, "b-0", Duration::from_secs(10)).await;
        assert_eq!(first["error"]["data"]["reason"], "elicitation_evicted");
        // The newest is still pending and its answer is accepted.
        let (status, _) = answer(
            &gw,
            "b-5",
            json!({"action": "accept", "content": {"c": "5-option-0001"}}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        gw.shutdown().await;
    }

    #[tokio::test]
    async fn a_client_that_leaves_mid_elicitation_releases_it_and_the_server_is_told() {
        let (tx, source) = sse_channel();
        let source = Arc::new(source);
        let upstream = MockUpstream::start(move |seen| {
            let msg = body_json(seen);
            match msg["method"].as_str() {
                Some("initialize") => {
                    let mut r = full(StatusCode::OK, "application/json",
                        json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{}}}).to_string());
                    r.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
                    r
                }
                Some("tools/call") => source.response(),
                _ => full(StatusCode::ACCEPTED, "", ""),
            }
        })
        .await;
        let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
        initialize(&gw, BOTH).await;
        let req = in_session(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#,
        ));
        let response = client().request(req).await.unwrap();
        let mut body = response.into_body();
        let event = sse(&[form(
            "g-1",
            "Your name?",
            json!({"name": {"type": "string"}}),
        )]);
        tx.send(Bytes::from(event)).await.unwrap();
        let mut seen = Vec::new();
        read_until(&mut body, &mut seen, "elicitation/create").await;
        drop(body);
        let answer = gateway_answer(&upstream, "g-1", Duration::from_secs(10)).await;
        assert_eq!(answer["error"]["data"]["reason"], "elicitation_client_gone");
        gw.shutdown().await;
    }
}

mod fan_out {
    use super::*;
    use crate::common::scripted::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_stream_of_thousands_of_blocked_elicitations_is_cut_without_fanning_out() {
        let upstream = legacy_server(|_| {
            let forms: Vec<_> = (0..5000)
                .map(|i| {
                    form(
                        &format!("p-{i}"),
                        "Password",
                        json!({"password": {"type": "string"}}),
                    )
                })
                .collect();
            sse(&forms)
        })
        .await;
        let gw = gateway(&config_for(
            &upstream.url("/mcp"),
            "limits:\n  max_elicitations_per_response: 50\n",
        ))
        .await;
        initialize(&gw, BOTH).await;
        let body = call_tool(&gw).await;
        assert!(!body.contains("elicitation/create"), "forwarded");
        assert!(body.contains("elicitations_per_response"), "{body}");
        assert!(
            body.contains("\"c-1\""),
            "the client's call ends with an error for its id"
        );
        // Let the gateway's answers drain, then count them and the sockets they used.
        let mut answers = 0;
        for _ in 0..200 {
            answers = upstream
                .requests()
                .iter()
                .map(scripted::body_json)
                .filter(|m| m.get("method").is_none() && m["error"].is_object())
                .count();
            if answers >= 50 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(
            answers, 50,
            "exactly the capped number of elicitations was answered"
        );
        assert!(
            upstream.connection_count() <= 2 + elicitgate::proxy::answer::AnswerLimit::IN_FLIGHT,
            "{} upstream connections",
            upstream.connection_count()
        );
        // Everyone else is still served.
        let (status, _, _) = send(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        ))
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        gw.shutdown().await;
    }
}

mod stdio {
    use super::*;
    use std::process::Stdio;

    fn rss_kib(pid: u32) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// A stdio gateway in front of `python3 -c child`, its stdin and stdout piped and never
    /// read here.
    fn stdio_gateway(config: &std::path::Path, child: &str) -> tokio::process::Child {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
            .args(["stdio", "--config"])
            .arg(config)
            .args(["--", "python3", "-c", child])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    /// The highest resident memory of `pid` over `samples` looks 100 ms apart.
    async fn peak_rss_kib(pid: u32, samples: usize) -> u64 {
        let mut peak = 0;
        for _ in 0..samples {
            tokio::time::sleep(Duration::from_millis(100)).await;
            peak = peak.max(rss_kib(pid));
        }
        peak
    }

    /// The resident memory of a stdio gateway in front of a quiet child, once loaded (its
    /// policy and lexicon built): what a flood is measured against.
    async fn idle_rss_kib(config: &std::path::Path) -> u64 {
        let mut idle = stdio_gateway(config, "import time; time.sleep(5)");
        let rss = peak_rss_kib(idle.id().unwrap(), 20).await;
        idle.start_kill().unwrap();
        let _ = idle.wait().await;
        rss
    }

    /// A child that floods its stdout while the client reads nothing: the gateway's memory stays
    /// bounded (the child waits on its pipe), and the gateway still exits promptly on EOF.
    #[tokio::test]
    async fn a_flooding_child_and_a_client_that_does_not_read_keep_memory_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("stdio.yaml");
        std::fs::write(
            &config,
            "audit: { sink: file, file: \"".to_owned()
                + &dir.path().join("audit.jsonl").display().to_string()
                + "\" }\nlog: { level: error }\ntimeouts: { shutdown_grace: 2s }\n",
        )
        .unwrap();
        let idle = idle_rss_kib(&config).await;
        assert!(idle > 0, "idle gateway not running");
        // ~1 KiB notifications, as fast as the pipe takes them (2 GiB if nothing pushed back).
        let flood = r#"import sys
line = ('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + 'x' * 1000 + '"}}\n').encode()
out = sys.stdout.buffer
for _ in range(2_000_000):
    out.write(line)
"#;
        let mut gw = stdio_gateway(&config, flood);
        let pid = gw.id().unwrap();
        // Nothing is read for a while; the peak is what matters.
        let peak = peak_rss_kib(pid, 30).await;
        assert!(peak > 0, "gateway not running");
        // The flood may fill the bounded queues (a few MiB), never the 2 GiB it offers.
        assert!(
            peak < idle + 32 * 1024,
            "gateway RSS grew to {peak} KiB (idle {idle} KiB) with a client that does not read"
        );
        // Client EOF with a full output queue: the gateway still ends (grace 2 s, then the
        // child is stopped), even though its stdout is never read.
        drop(gw.stdin.take());
        let ended = tokio::time::timeout(Duration::from_secs(30), gw.wait()).await;
        assert!(
            ended.is_ok(),
            "the gateway did not exit while its stdout was blocked"
        );
    }
}

mod audit_flood {
    use super::*;
    use crate::common::scripted::*;
    use serde_json::json;

    #[tokio::test]
    async fn one_session_cannot_flood_the_audit_log() {
        // Notification-shaped elicitations (no id): judged, audited and dropped, many per stream.
        let upstream = legacy_server(|_| {
            let forms: Vec<_> = (0..40)
                .map(|_| {
                    json!({"jsonrpc":"2.0","method":"elicitation/create","params":{
                        "message":"Password","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}})
                })
                .collect();
            sse(&forms)
        })
        .await;
        let gw = gateway(&config_for(
            &upstream.url("/mcp"),
            "audit:\n  max_events_per_minute: 10\n",
        ))
        .await;
        initialize(&gw, BOTH).await;
        for _ in 0..3 {
            call_tool(&gw).await;
        }
        let audit = gw.audit().await;
        let of_session = audit.iter().filter(|e| e["session"].is_string()).count();
        assert!(
            of_session <= 10,
            "{of_session} events of one session in a minute"
        );
        let m = metrics(gw.admin_addr).await;
        let suppressed: u64 = m
            .lines()
            .filter(|l| l.starts_with("elicitgate_audit_events_suppressed_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        assert!(suppressed >= 100, "suppressed {suppressed}: {m}");
        gw.shutdown().await;
    }
}

/// Fault injection: an upstream that breaks at each stage; every case ends cleanly, with a
/// clear error, and the gateway keeps serving.
mod faults {
    use super::*;
    use tokio::net::TcpListener;

    /// A raw upstream that answers every connection with `script` (then does `then`).
    async fn raw_upstream(script: &'static [u8], close: bool) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    // Read the request head (and small body).
                    let _ =
                        tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await;
                    let _ = s.write_all(script).await;
                    if close {
                        // Reset, not a clean close.
                        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                        drop(s);
                    } else {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                });
            }
        });
        addr
    }

    async fn post(gw: &TestGateway) -> (StatusCode, String) {
        let (status, _, body) = send(rpc_post(
            &gw.url(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}"#,
        ))
        .await;
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn upstream_killed_mid_json_is_a_502_for_the_clients_id() {
        let addr = raw_upstream(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,\"res",
            true,
        )
        .await;
        let gw = gateway(&config_for(&format!("http://{addr}/mcp"), "")).await;
        let (status, body) = post(&gw).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        assert!(body.contains("\"id\":7"), "{body}");
        assert!(
            !body.contains("\"res\""),
            "nothing of the broken body is forwarded: {body}"
        );
        gw.shutdown().await;
    }

    #[tokio::test]
    async fn upstream_reset_after_headers_is_a_clear_error() {
        let addr = raw_upstream(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n",
            true,
        )
        .await;
        let gw = gateway(&config_for(&format!("http://{addr}/mcp"), "")).await;
        let (status, body) = post(&gw).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        gw.shutdown().await;
    }

    #[tokio::test]
    async fn upstream_killed_mid_sse_ends_the_clients_stream() {
        let addr = raw_upstream(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n1a\r\nevent: message\ndata: {}\n\n\r\n",
            true,
        )
        .await;
        let gw = gateway(&config_for(&format!("http://{addr}/mcp"), "")).await;
        let response = client()
            .request(rpc_post(
                &gw.url(),
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}",
            ))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        use http_body_util::BodyExt;
        let ended =
            tokio::time::timeout(Duration::from_secs(20), response.into_body().collect()).await;
        assert!(ended.is_ok(), "the client's stream did not end");
        // The cut is counted, and the gateway still serves.
        let m = metrics(gw.admin_addr).await;
        assert!(
            m.contains(r#"elicitgate_upstream_errors_total{reason="body",route="demo"} 1"#),
            "{m}"
        );
        assert!(
            m.contains(r#"elicitgate_sse_streams_open{route="demo"} 0"#),
            "{m}"
        );
        gw.shutdown().await;
    }

    #[tokio::test]
    async fn an_upstream_that_never_answers_is_a_504() {
        let addr = raw_upstream(b"", false).await;
        let gw = gateway(&config_for(
            &format!("http://{addr}/mcp"),
            "timeouts:\n  upstream_first_byte: 500ms\n",
        ))
        .await;
        let (status, body) = post(&gw).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
        assert!(body.contains("first_byte_timeout"), "{body}");
        gw.shutdown().await;
    }
}

/// Fault injection: the audit file's disk fills up. Proxying and enforcement go on; the lost
/// lines are counted (`audit_write_errors_total`, alerted by `ElicitgateAuditWriteErrors`).
/// Needs a small tmpfs of its own (root, as in CI); skipped with a notice where it cannot mount.
#[tokio::test]
async fn a_full_audit_disk_is_counted_and_proxying_continues() {
    use crate::common::scripted::*;
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("full");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        // Mounting needs root (CI and the development machine have it); elsewhere this one
        // case cannot be set up, and says so loudly.
        eprintln!("disk-full test SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let upstream = legacy_server(|_| {
        let forms: Vec<_> = (0..60)
            .map(|i| {
                form(
                    &format!("p-{i}"),
                    "Password",
                    json!({"password": {"type": "string"}}),
                )
            })
            .collect();
        sse(&forms)
    })
    .await;
    let yaml = config_for(
        &upstream.url("/mcp"),
        &format!(
            "audit:\n  sink: file\n  file: \"{}\"\n  max_events_per_minute: 0\n",
            mnt.join("audit.jsonl").display()
        ),
    );
    let settings = elicitgate::settings::Settings::from_yaml(&yaml, dir.path()).unwrap();
    let running = elicitgate::start::start_with(settings, elicitgate::start::Options::default())
        .await
        .unwrap();
    let url = format!("http://{}/mcp", running.addr);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
    assert_eq!(send(rpc_post(&url, init)).await.0, StatusCode::OK);
    let mut errors = 0;
    for round in 0..40 {
        let req = in_session(rpc_post(
            &url,
            &format!(
                r#"{{"jsonrpc":"2.0","id":"c-{round}","method":"tools/call","params":{{"name":"t"}}}}"#
            ),
        ));
        let (status, _, _) = send(req).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "proxying goes on with the audit disk full"
        );
        let m = metrics(running.admin_addr).await;
        errors = m
            .lines()
            .find_map(|l| l.strip_prefix("elicitgate_audit_write_errors_total "))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if errors > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(errors > 0, "write errors on a full disk are counted");
    running.shutdown().await;
}

/// An upstream SSE event over `limits.max_sse_event` ends the stream, and the client still
/// gets what the bounds table promises: the blocked-content error for its request.
#[tokio::test]
async fn an_sse_event_over_its_bound_ends_with_the_blocked_content_error() {
    use crate::common::scripted::*;
    let huge = "x".repeat(200 * 1024);
    let upstream = legacy_server(move |msg| {
        format!(
            "event: message\ndata: {}\n\n",
            serde_json::json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":huge}})
        ) + &sse(&[serde_json::json!({"jsonrpc":"2.0","id":msg["id"],"result":{"content":[]}})])
    })
    .await;
    let gw = gateway(&config_for(
        &upstream.url("/mcp"),
        "limits: { max_sse_event: 64KiB }\n",
    ))
    .await;
    initialize(&gw, BOTH).await;
    let body = call_tool(&gw).await;
    let data = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no event reached the client: {body}"));
    let error: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(error["id"], "c-1", "{error}");
    assert_eq!(error["error"]["code"], -31042, "{error}");
    assert_eq!(
        error["error"]["data"]["reason"], "body_too_large",
        "{error}"
    );
    gw.shutdown().await;
}
