//! Several replicas, as a platform team runs them: three `elicitgate serve` processes on one
//! real `redis-server`, behind Debian's nginx balancing round robin with no stickiness (every
//! request may land on another replica), an authenticating proxy's user header set by nginx,
//! and the official Python and TypeScript SDK clients against a Python SDK server. Benign flows
//! must work as through one gateway; memory (declines, rates) holds across replicas; a replica
//! restarted mid-test changes nothing.

use crate::common::peers::{client, server, Sdk};
use crate::common::redis::{binary, free_port, RedisServer};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// One `elicitgate serve` process.
struct Replica {
    port: u16,
    admin: u16,
    config: std::path::PathBuf,
    child: Option<Child>,
}

impl Replica {
    fn start(dir: &Path, i: usize, upstream: &str, redis: &str) -> Self {
        let (port, admin) = (free_port(), free_port());
        let config = dir.join(format!("replica-{i}.yaml"));
        std::fs::write(
            &config,
            format!(
                "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\nworkers: 1\n\
                 audit: {{ sink: off }}\nlog: {{ level: warn }}\n\
                 state:\n  backend: redis\n  redis: {{ url: \"{redis}\" }}\n\
                 identity:\n  mode: header\n  header: {{ name: x-authenticated-user }}\n  trusted_proxies: [\"127.0.0.1/32\"]\n\
                 policies:\n  default:\n    rate: {{ max_per_minute: 8 }}\n    repeat: {{ window: 10m }}\n\
                 routes:\n  - name: mcp\n    path: /mcp\n    upstream: \"{upstream}\"\n"
            ),
        )
        .unwrap();
        let mut replica = Self {
            port,
            admin,
            config,
            child: None,
        };
        replica.spawn();
        replica
    }

    fn spawn(&mut self) {
        let child = Command::new(binary())
            .arg("serve")
            .arg("--config")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("elicitgate serve");
        self.child = Some(child);
        for _ in 0..200 {
            if http_get(self.admin, "/readyz").is_some_and(|b| b.starts_with("HTTP/1.1 200")) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("replica on {} never became ready", self.port);
    }

    fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.spawn();
    }

    /// A counter's total over all label sets, from this replica's `/metrics`.
    fn total(&self, family: &str, filter: &str) -> f64 {
        let text = http_get(self.admin, "/metrics").unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with(family) && l.contains(filter))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A plain HTTP/1.1 GET on loopback; the whole response as text.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// nginx in front of the replicas: round robin, a new upstream connection per request (so
/// each request may go elsewhere), streaming both ways, the user header set as an
/// authenticating proxy would.
struct Nginx {
    port: u16,
    child: Child,
}

impl Nginx {
    fn start(dir: &Path, replicas: &[Replica]) -> Self {
        let port = free_port();
        let servers: String = replicas
            .iter()
            .map(|r| format!("    server 127.0.0.1:{};\n", r.port))
            .collect();
        let d = dir.display();
        let conf = dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\n\
                 events {{ worker_connections 256; }}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
                 fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 upstream replicas {{\n{servers}  }}\n\
                 server {{\n    listen 127.0.0.1:{port};\n    location / {{\n\
                 proxy_pass http://replicas;\n      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
                 proxy_set_header X-Authenticated-User \"alice@example.com\";\n\
                 proxy_buffering off;\n      proxy_request_buffering off;\n      proxy_read_timeout 60s;\n    }}\n  }}\n}}\n"
            ),
        )
        .unwrap();
        let nginx = ["/usr/sbin/nginx", "nginx"]
            .into_iter()
            .find(|n| {
                Command::new(n)
                    .arg("-v")
                    .stderr(Stdio::null())
                    .status()
                    .is_ok()
            })
            .expect("nginx not installed: run .ci/run (it installs Debian's nginx)");
        let child = Command::new(nginx)
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx");
        let nginx = Self { port, child };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return nginx;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        drop(nginx);
        panic!("nginx did not start");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Nginx {
    /// SIGTERM to the master (our child), which stops its workers; SIGKILL would orphan them.
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn run(
    sdk: Sdk,
    url: &str,
    era: &str,
    tool: &str,
    answer: &str,
    content: Option<&str>,
) -> Value {
    let mut args = vec![
        "--url", url, "--tool", tool, "--era", era, "--caps", "both", "--answer", answer,
    ];
    if let Some(c) = content {
        args.extend(["--content", c]);
    }
    client(sdk, &args).await
}

fn rules_of(out: &Value) -> Vec<String> {
    let data = if out["result"]["error"].is_object() {
        &out["result"]["error"]["data"]["rules"]
    } else {
        &out["error"]["data"]["rules"]
    };
    data.as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn three_replicas_behind_round_robin_serve_sdk_clients_as_one_gateway() {
    let redis = RedisServer::start();
    let srv = server(Sdk::Python, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::start(dir.path(), i, &srv.url(), &redis.url()))
        .collect();
    let nginx = Nginx::start(dir.path(), &replicas);
    let url = nginx.url();
    let staging = r#"{"env":"staging","confirm":true}"#;

    // Legacy sessions, both SDKs: initialize, the elicitation on the call's stream, the answer
    // and the rest of the session each land wherever nginx sends them.
    for sdk in [Sdk::Python, Sdk::Node] {
        let out = run(sdk, &url, "legacy", "deploy", "accept", Some(staging)).await;
        assert_eq!(out["ok"], true, "{sdk:?}: {out}");
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(1),
            "{sdk:?}: {out}"
        );
        assert_eq!(out["result"]["action"], "accept", "{sdk:?}: {out}");
    }
    // A replica restarted between sessions (and mid-run for the others) changes nothing.
    replicas[1].restart();
    // 2026-07-28: the retry lands on another replica and is accepted once.
    let out = run(
        Sdk::Python,
        &url,
        "modern",
        "deploy",
        "accept",
        Some(staging),
    )
    .await;
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["result"]["action"], "accept", "{out}");

    // Every replica served part of it, and none refused a benign answer.
    for (i, r) in replicas.iter().enumerate() {
        assert!(
            r.total("elicitgate_requests_total", "") > 0.0,
            "replica {i} got no traffic"
        );
        assert_eq!(
            r.total("elicitgate_response_rejections_total", ""),
            0.0,
            "replica {i}"
        );
    }

    // Repeat memory is per principal and holds across replicas: the user declines through
    // one session; a new session (another SDK, other replicas) is not asked the same again.
    let out = run(Sdk::Python, &url, "legacy", "github_user", "decline", None).await;
    assert_eq!(out["result"]["action"], "decline", "{out}");
    let out = run(
        Sdk::Node,
        &url,
        "legacy",
        "github_user",
        "accept",
        Some(r#"{"username":"octo"}"#),
    )
    .await;
    assert!(
        rules_of(&out).contains(&"repeat.after_decline".to_owned()),
        "{out}"
    );
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len),
        Some(0),
        "{out}"
    );

    // The rate limit (8 a minute for the user) counts on every replica together. Five or more
    // were counted above; the minute slides, so a wall-clock minute boundary does not reset it.
    let mut limited = false;
    for _ in 0..9 {
        let out = run(
            Sdk::Python,
            &url,
            "legacy",
            "deploy",
            "accept",
            Some(staging),
        )
        .await;
        if rules_of(&out).contains(&"rate.limit".to_owned()) {
            limited = true;
            break;
        }
    }
    assert!(limited, "the shared rate limit never applied");
}
