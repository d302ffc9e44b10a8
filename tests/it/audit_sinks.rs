//! Audit sinks a SIEM takes, end to end: the real gateway sends its audit events to a real
//! Debian `rsyslogd` (installed by `.ci/run`) over UDP and over TCP (RFC 6587 octet
//! counting), started on loopback ports picked free in a temporary directory and stopped by
//! PID; a collector outage is counted while proxying goes on, and TCP delivery resumes after
//! the collector restarts. A separate `elicitgate serve` process re-opens its audit file on
//! SIGHUP (logrotate's `postrotate kill -HUP`).
//!
//! Without `rsyslogd` the syslog cases are skipped with a notice, unless
//! `ELICITGATE_REQUIRE_PEERS` is set (CI): then a missing install is a failure.

use crate::common::scripted::*;
use crate::common::*;
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RSYSLOGD: &[&str] = &["/usr/sbin/rsyslogd", "rsyslogd"];

fn rsyslogd() -> Option<&'static str> {
    let found = RSYSLOGD.iter().copied().find(|bin| {
        Command::new(bin)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        let required =
            std::env::var("ELICITGATE_REQUIRE_PEERS").is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(
            !required,
            "rsyslogd not installed: run .ci/run (it installs Debian's rsyslog)"
        );
        eprintln!("audit sink test SKIPPED: rsyslogd not installed (run .ci/run); set ELICITGATE_REQUIRE_PEERS=1 to make this a failure");
    }
    found
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `rsyslogd`, listening on loopback UDP and TCP, writing every message it receives to
/// `received.log` in the full RFC 5424 form.
struct Rsyslog {
    bin: &'static str,
    dir: tempfile::TempDir,
    udp: u16,
    tcp: u16,
    child: Option<Child>,
}

impl Rsyslog {
    fn start(bin: &'static str) -> Self {
        let mut r = Self {
            bin,
            dir: tempfile::tempdir().unwrap(),
            udp: free_udp_port(),
            tcp: free_tcp_port(),
            child: None,
        };
        r.spawn();
        r
    }

    fn received(&self) -> PathBuf {
        self.dir.path().join("received.log")
    }

    fn spawn(&mut self) {
        let d = self.dir.path().display();
        let conf = self.dir.path().join("rsyslog.conf");
        std::fs::write(
            &conf,
            format!(
                r#"global(workDirectory="{d}" maxMessageSize="64k")
module(load="imudp")
module(load="imtcp")
input(type="imudp" address="127.0.0.1" port="{udp}")
input(type="imtcp" address="127.0.0.1" port="{tcp}")
action(type="omfile" file="{d}/received.log" template="RSYSLOG_SyslogProtocol23Format")
"#,
                udp = self.udp,
                tcp = self.tcp
            ),
        )
        .unwrap();
        let child = Command::new(self.bin)
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(self.dir.path().join("rsyslogd.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rsyslogd");
        self.child = Some(child);
        // Ready once its TCP input accepts (the UDP input starts alongside).
        let addr: SocketAddr = ([127, 0, 0, 1], self.tcp).into();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "rsyslogd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Stops it (by PID: the child handle) and waits for it to exit.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Received messages from `app`, parsed.
    fn messages(&self, app: &str) -> Vec<Received> {
        std::fs::read_to_string(self.received())
            .unwrap_or_default()
            .lines()
            .filter_map(Received::parse)
            .filter(|m| m.app == app)
            .collect()
    }

    /// Waits (bounded) for a message from `app` with `msgid`.
    async fn wait_for(&self, app: &str, msgid: &str, at_least: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got: Vec<_> = self
                .messages(app)
                .into_iter()
                .filter(|m| m.msgid == msgid)
                .collect();
            if got.len() >= at_least {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{msgid} from {app} never arrived: {:?}",
                std::fs::read_to_string(self.received()).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One RFC 5424 message as rsyslog wrote it.
#[derive(Debug)]
struct Received {
    pri: u16,
    host: String,
    app: String,
    msgid: String,
    sd: String,
    msg: Value,
}

impl Received {
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix('<')?;
        let (pri, rest) = rest.split_once(">1 ")?;
        let f: Vec<&str> = rest.splitn(7, ' ').collect();
        let [_ts, host, app, _pid, msgid, sd, msg] = f.as_slice() else {
            return None;
        };
        Some(Self {
            pri: pri.parse().ok()?,
            host: (*host).to_owned(),
            app: (*app).to_owned(),
            msgid: (*msgid).to_owned(),
            sd: (*sd).to_owned(),
            msg: serde_json::from_str(msg.trim()).ok()?,
        })
    }
}

/// A legacy upstream whose every tool call asks for a password (blocked by `form.secret`).
async fn password_server() -> MockUpstream {
    legacy_server(|_| {
        sse(&[form(
            "p-1",
            "Password",
            json!({"password": {"type": "string"}}),
        )])
    })
    .await
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;

/// One tool call whose elicitation is blocked; the proxy must answer it.
async fn blocked_call(url: &str) {
    let (status, _, _) = send(rpc_post(url, INIT)).await;
    assert_eq!(status, http::StatusCode::OK);
    let req = in_session(rpc_post(
        url,
        r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#,
    ));
    let (status, _, _) = send(req).await;
    assert_eq!(status, http::StatusCode::OK, "the proxy keeps answering");
}

async fn start_gateway(upstream: &MockUpstream, audit: &str) -> elicitgate::start::Running {
    let yaml = config_for(&upstream.url("/mcp"), audit);
    let settings = elicitgate::settings::Settings::from_yaml(&yaml, Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    elicitgate::start::start_with(settings, elicitgate::start::Options::default())
        .await
        .unwrap()
}

/// `elicitgate_audit_delivery_failures_total{sink="syslog"}`, all reasons.
async fn syslog_failures(admin: SocketAddr) -> u64 {
    metrics(admin)
        .await
        .lines()
        .filter(|l| {
            l.starts_with("elicitgate_audit_delivery_failures_total{")
                && l.contains("sink=\"syslog\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn syslog_audit(app: &str, port: u16, transport: &str) -> String {
    format!(
        "audit:\n  sink: syslog\n  max_events_per_minute: 0\n  syslog:\n    address: \"127.0.0.1:{port}\"\n    transport: {transport}\n    app_name: {app}\n    hostname: gw-test\n"
    )
}

#[tokio::test]
async fn blocked_elicitations_reach_a_real_rsyslog_over_udp_and_tcp() {
    let Some(bin) = rsyslogd() else { return };
    let rsyslog = Rsyslog::start(bin);
    let upstream = password_server().await;
    for (app, port, transport) in [
        ("eg-udp", rsyslog.udp, "udp"),
        ("eg-tcp", rsyslog.tcp, "tcp"),
    ] {
        let gw = start_gateway(&upstream, &syslog_audit(app, port, transport)).await;
        blocked_call(&format!("http://{}/mcp", gw.addr)).await;
        let got = rsyslog.wait_for(app, "elicitation.blocked", 1).await;
        let m = &got[0];
        // local0 (16) * 8 + notice (5)
        assert_eq!(m.pri, 133, "{transport}: {m:?}");
        assert_eq!(m.host, "gw-test");
        assert_eq!(m.sd, "-");
        assert_eq!(m.msg["event"], "elicitation.blocked", "{transport}");
        assert_eq!(m.msg["v"], 1);
        assert!(m.msg["rules"].to_string().contains("form.secret"), "{m:?}");
        // Other events are info: local0 * 8 + 6.
        let policy = rsyslog.wait_for(app, "policy.loaded", 1).await;
        assert_eq!(policy[0].pri, 134);
        assert_eq!(syslog_failures(gw.admin_addr).await, 0, "{transport}");
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn a_collector_outage_is_counted_and_tcp_delivery_resumes_after_a_restart() {
    let Some(bin) = rsyslogd() else { return };
    let mut rsyslog = Rsyslog::start(bin);
    let upstream = password_server().await;
    let gw = start_gateway(&upstream, &syslog_audit("eg-outage", rsyslog.tcp, "tcp")).await;
    let url = format!("http://{}/mcp", gw.addr);
    blocked_call(&url).await;
    rsyslog
        .wait_for("eg-outage", "elicitation.blocked", 1)
        .await;

    rsyslog.stop();
    // The proxy keeps answering at full speed; what syslog cannot take is counted.
    let started = Instant::now();
    let mut failures = 0;
    for _ in 0..40 {
        blocked_call(&url).await;
        failures = syslog_failures(gw.admin_addr).await;
        if failures >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(failures >= 3, "delivery failures are counted: {failures}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a down collector does not slow the proxy"
    );
    let m = metrics(gw.admin_addr).await;
    assert!(
        m.contains(
            "elicitgate_audit_delivery_failures_total{reason=\"disconnected\",sink=\"syslog\"}"
        ),
        "{m}"
    );

    // Back on the same ports: delivery resumes by itself (backoff at most 5 s).
    let before = rsyslog.messages("eg-outage").len();
    rsyslog.spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        blocked_call(&url).await;
        let after: Vec<_> = rsyslog
            .messages("eg-outage")
            .into_iter()
            .filter(|m| m.msgid == "elicitation.blocked")
            .collect();
        if !after.is_empty() {
            assert_eq!(after[0].msg["event"], "elicitation.blocked");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "delivery did not resume ({before} messages before the restart)"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    gw.shutdown().await;
}

/// Waits (bounded) until `path` holds at least `n` blocked events.
async fn blocked_in(path: &Path, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let count = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"event\":\"elicitation.blocked\""))
            .count();
        if count >= n || Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sighup_reopens_the_audit_file_after_logrotate_renamed_it() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = password_server().await;
    let audit = dir.path().join("audit.jsonl");
    let rotated = dir.path().join("audit.jsonl.1");
    let (port, admin) = (free_tcp_port(), free_tcp_port());
    let config = dir.path().join("elicitgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\nlog: {{ level: error }}\naudit:\n  sink: [file]\n  file: \"{}\"\n  max_events_per_minute: 0\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"{}\"\n",
            audit.display(),
            upstream.url("/mcp")
        ),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Serving (and so listening for SIGHUP) once a request is answered.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "elicitgate serve did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    blocked_call(&url).await;
    assert_eq!(blocked_in(&audit, 1).await, 1);

    // logrotate: rename, then `postrotate kill -HUP`.
    std::fs::rename(&audit, &rotated).unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !audit.exists() {
        assert!(
            Instant::now() < deadline,
            "the audit file was not re-opened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    blocked_call(&url).await;
    blocked_call(&url).await;
    assert_eq!(
        blocked_in(&audit, 2).await,
        2,
        "new events in a new file at the path"
    );
    assert_eq!(
        blocked_in(&rotated, 1).await,
        1,
        "the rotated file keeps the old ones"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP did not stop the gateway"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(40), child.wait()).await;
}

/// A TCP collector that accepts and never reads: what it cannot take is counted, the file sink
/// beside it gets every event, and proxying goes on (the writer's 2 s write bound and the
/// sink's bounded queue keep it off the request path).
#[tokio::test]
async fn a_tcp_collector_that_never_reads_is_counted_and_proxying_goes_on() {
    use socket2::{Domain, Socket, Type};
    let collector = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    // A small receive window (inherited by accepted connections) fills after a few events.
    collector.set_recv_buffer_size(4096).unwrap();
    collector
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    collector.listen(16).unwrap();
    let port = collector.local_addr().unwrap().as_socket().unwrap().port();
    let collector: TcpListener = collector.into();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = collector.accept() {
            held.push(s); // accepted, never read
        }
    });

    // Large events: a form of many long property names (its shape is audited, not its text).
    let mut props = serde_json::Map::new();
    props.insert("password".into(), json!({"type": "string"}));
    for i in 0..90 {
        props.insert(
            format!("a_property_name_long_enough_to_fill_a_socket_buffer_{i:03}"),
            json!({"type": "string"}),
        );
    }
    let schema = Value::Object(props);
    let upstream = legacy_server(move |_| sse(&[form("p-1", "Sign in", schema.clone())])).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let audit = format!(
        "audit:\n  sink: [file, syslog]\n  file: \"{}\"\n  queue: 16\n  max_events_per_minute: 0\n  syslog:\n    address: \"127.0.0.1:{port}\"\n    transport: tcp\n    max_message: 64KiB\n",
        file.display()
    );
    let gw = start_gateway(&upstream, &audit).await;
    let url = format!("http://{}/mcp", gw.addr);
    let calls = 400;
    for _ in 0..calls {
        blocked_call(&url).await;
    }
    // The stuck writer's queue fills at once (`queue_full`), and the stuck write is given up
    // after 2 s (`write_error`); wait (bounded) until both are counted.
    let counted = |m: &str, reason: &str| {
        m.contains(&format!(
            "elicitgate_audit_delivery_failures_total{{reason=\"{reason}\",sink=\"syslog\"}}"
        ))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut m = metrics(gw.admin_addr).await;
    while !(counted(&m, "queue_full") && counted(&m, "write_error")) && Instant::now() < deadline {
        blocked_call(&url).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        m = metrics(gw.admin_addr).await;
    }
    assert!(counted(&m, "queue_full"), "the queue is bounded: {m}");
    assert!(counted(&m, "write_error"), "a stuck write is given up: {m}");
    assert!(
        blocked_in(&file, calls).await >= calls,
        "the file sink beside it got every event"
    );
    // Still serving, with the collector still stuck.
    blocked_call(&url).await;
    gw.shutdown().await;
}
