//! A reload changes everything that can change live — routes, upstream TLS
//! roots, the serving certificate and key, the log level — and names what cannot (listen
//! addresses, workers, limits, …) in a warning, a metric and the audit event, never ignoring
//! it silently. A reload that cannot build every part changes none.

use crate::common::*;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

/// A mock upstream answering every request with `{"result":{"from":<name>}}`.
async fn named_upstream(
    name: &'static str,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> MockUpstream {
    MockUpstream::start_with_tls(
        move |_| {
            full(
                StatusCode::OK,
                "application/json",
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"from":"{name}"}}}}"#),
            )
        },
        tls,
    )
    .await
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Polls `check` (bounded) until it holds.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..150 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}

/// Status and `result.from` of a ping through the gateway at `path`.
async fn ping(gw: &TestGateway, path: &str) -> (StatusCode, String) {
    let (status, _, body) = send(rpc_post(&format!("http://{}{path}", gw.addr), PING)).await;
    let from = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["result"]["from"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (status, from)
}

async fn has_metric(gw: &TestGateway, line: &str) -> bool {
    metrics(gw.admin_addr).await.contains(line)
}

/// The `detail` of every `policy.loaded` audit event so far.
async fn loaded_details(gw: &TestGateway) -> Vec<String> {
    gw.audit_of("policy.loaded")
        .await
        .into_iter()
        .filter_map(|e| e["detail"].as_str().map(str::to_owned))
        .collect()
}

fn routes_yaml(routes: &[(&str, &str, &str)], extra: &str) -> String {
    let mut yaml = format!("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n{extra}\nroutes:\n");
    for (name, path, upstream) in routes {
        yaml.push_str(&format!(
            "  - {{ name: {name}, path: \"{path}\", upstream: \"{upstream}\" }}\n"
        ));
    }
    yaml
}

#[tokio::test]
async fn routes_are_added_moved_and_removed_live() {
    let a = named_upstream("a", None).await;
    let b = named_upstream("b", None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let one = routes_yaml(&[("a", "/a", &a.url("/mcp"))], "");
    std::fs::write(&path, &one).unwrap();
    let gw = gateway_in(&one, dir.path(), Some(path.clone())).await;
    assert_eq!(ping(&gw, "/a").await, (StatusCode::OK, "a".into()));
    assert_eq!(ping(&gw, "/b").await.0, StatusCode::NOT_FOUND);

    // A route is added: it answers at once, through its own upstream.
    write_atomically(
        &path,
        &routes_yaml(
            &[("a", "/a", &a.url("/mcp")), ("b", "/b", &b.url("/mcp"))],
            "",
        ),
    );
    until("route b answers", || async {
        ping(&gw, "/b").await == (StatusCode::OK, "b".into())
    })
    .await;
    assert_eq!(ping(&gw, "/a").await, (StatusCode::OK, "a".into()));
    assert!(has_metric(&gw, r#"elicitgate_config_changes_total{part="routes"} 1"#).await);
    assert!(
        loaded_details(&gw)
            .await
            .iter()
            .any(|d| d == "changed: routes"),
        "{:?}",
        loaded_details(&gw).await
    );

    // Route a now points at b's upstream; route b is gone.
    write_atomically(&path, &routes_yaml(&[("a", "/a", &b.url("/mcp"))], ""));
    until("route a moved to upstream b", || async {
        ping(&gw, "/a").await == (StatusCode::OK, "b".into())
    })
    .await;
    assert_eq!(ping(&gw, "/b").await.0, StatusCode::NOT_FOUND);

    // A file with no route at all is refused; the running table stays.
    write_atomically(
        &path,
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes: []\n",
    );
    until("the empty table is refused", || async {
        has_metric(&gw, "elicitgate_policy_last_reload_success 0").await
    })
    .await;
    assert_eq!(ping(&gw, "/a").await, (StatusCode::OK, "b".into()));
    gw.shutdown().await;
}

#[tokio::test]
async fn settings_that_need_a_restart_are_named_not_ignored() {
    let a = named_upstream("a", None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let yaml = routes_yaml(&[("a", "/a", &a.url("/mcp"))], "");
    std::fs::write(&path, &yaml).unwrap();
    let gw = gateway_in(&yaml, dir.path(), Some(path.clone())).await;
    assert!(has_metric(&gw, "elicitgate_config_restart_required 0").await);

    // Another listen address and a new limit, plus a route change that does apply.
    let b = named_upstream("b", None).await;
    let changed = routes_yaml(
        &[("a", "/a", &b.url("/mcp"))],
        "limits: { max_connections: 7 }",
    )
    .replacen("listen: 127.0.0.1:0\n", "listen: 127.0.0.1:1\n", 1);
    write_atomically(&path, &changed);
    until("the reload applied", || async {
        ping(&gw, "/a").await == (StatusCode::OK, "b".into())
    })
    .await;
    until("restart required is exposed", || async {
        has_metric(&gw, "elicitgate_config_restart_required 1").await
    })
    .await;
    let details = loaded_details(&gw).await;
    assert!(
        details
            .iter()
            .any(|d| d == "changed: routes; restart required: listen, limits"),
        "{details:?}"
    );
    // Still served where it started.
    assert_eq!(ping(&gw, "/a").await.0, StatusCode::OK);

    // Back to the running values: nothing waits for a restart any more.
    write_atomically(&path, &routes_yaml(&[("a", "/a", &b.url("/mcp"))], ""));
    until("restart no longer required", || async {
        has_metric(&gw, "elicitgate_config_restart_required 0").await
    })
    .await;
    gw.shutdown().await;
}

/// A client that trusts only `ca_pem` and opens a fresh connection for each request.
async fn tls_ping(ca_pem: &str, port: u16) -> Result<StatusCode, String> {
    let client = https_client(ca_pem);
    let req = Request::post(format!("https://localhost:{port}/a"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(PING.as_bytes())))
        .unwrap();
    match client.request(req).await {
        Ok(response) => {
            let status = response.status();
            let _ = response.into_body().collect().await;
            Ok(status)
        }
        Err(e) => Err(format!("{e:?}")),
    }
}

/// Copies a generated PKI's certificate and key over `cert`/`key` (rename-replace).
fn install_pki(from: &TestPki, cert: &Path, key: &Path) {
    write_atomically(cert, &std::fs::read_to_string(&from.cert_file).unwrap());
    write_atomically(key, &std::fs::read_to_string(&from.key_file).unwrap());
}

#[tokio::test]
async fn the_serving_certificate_is_replaced_without_a_restart() {
    let a = named_upstream("a", None).await;
    let dir = tempfile::tempdir().unwrap();
    let (one_dir, two_dir) = (dir.path().join("one"), dir.path().join("two"));
    std::fs::create_dir_all(&one_dir).unwrap();
    std::fs::create_dir_all(&two_dir).unwrap();
    let (one, two) = (pki(&one_dir), pki(&two_dir));
    let tls_dir = dir.path().join("tls");
    std::fs::create_dir_all(&tls_dir).unwrap();
    let (cert, key) = (tls_dir.join("tls.crt"), tls_dir.join("tls.key"));
    install_pki(&one, &cert, &key);
    let path = dir.path().join("elicitgate.yaml");
    let yaml = routes_yaml(
        &[("a", "/a", &a.url("/mcp"))],
        &format!(
            "tls: {{ cert_file: \"{}\", key_file: \"{}\" }}",
            cert.display(),
            key.display()
        ),
    );
    std::fs::write(&path, &yaml).unwrap();
    let gw = gateway_in(&yaml, dir.path(), Some(path.clone())).await;
    let port = gw.addr.port();
    assert_eq!(tls_ping(&one.ca_pem, port).await, Ok(StatusCode::OK));
    assert!(tls_ping(&two.ca_pem, port).await.is_err());

    // The certificate files change (as cert-manager renews a Secret); the configuration file
    // does not. The watch on the files' directory sees it.
    install_pki(&two, &cert, &key);
    until("the new certificate is served", || async {
        tls_ping(&two.ca_pem, port).await == Ok(StatusCode::OK)
    })
    .await;
    assert!(tls_ping(&one.ca_pem, port).await.is_err());
    assert!(
        has_metric(
            &gw,
            r#"elicitgate_config_changes_total{part="serving_cert"} 1"#
        )
        .await
    );

    // A key that does not match its certificate is refused: the served one stays.
    write_atomically(&key, &std::fs::read_to_string(&one.key_file).unwrap());
    until("the mismatched key is refused", || async {
        has_metric(&gw, "elicitgate_policy_last_reload_success 0").await
    })
    .await;
    assert_eq!(tls_ping(&two.ca_pem, port).await, Ok(StatusCode::OK));
    gw.shutdown().await;
}

#[tokio::test]
async fn upstream_trust_roots_are_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let (up_dir, other_dir) = (dir.path().join("up"), dir.path().join("other"));
    std::fs::create_dir_all(&up_dir).unwrap();
    std::fs::create_dir_all(&other_dir).unwrap();
    let (up, other) = (pki(&up_dir), pki(&other_dir));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(
        elicitgate::tls::server_config(
            elicitgate::tls::ServingCert::load(&up.cert_file, &up.key_file).unwrap(),
        )
        .unwrap(),
    ));
    let upstream = named_upstream("secure", Some(acceptor)).await;
    let https_url = format!("https://localhost:{}/mcp", upstream.addr.port());
    // The route trusts the wrong CA at first.
    let ca = dir.path().join("upstream-ca.pem");
    std::fs::write(&ca, &other.ca_pem).unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let yaml = format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: a\n    path: /a\n    upstream: \"{https_url}\"\n    ca_file: \"{}\"\n",
        ca.display()
    );
    std::fs::write(&path, &yaml).unwrap();
    let gw = gateway_in(&yaml, dir.path(), Some(path.clone())).await;
    assert_eq!(ping(&gw, "/a").await.0, StatusCode::BAD_GATEWAY);

    // The bundle is corrected (only the bundle file changes).
    write_atomically(&ca, &up.ca_pem);
    until("the upstream is trusted", || async {
        ping(&gw, "/a").await == (StatusCode::OK, "secure".into())
    })
    .await;
    assert!(
        has_metric(
            &gw,
            r#"elicitgate_config_changes_total{part="upstream_tls"} 1"#
        )
        .await
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn the_log_level_changes_live() {
    let a = named_upstream("a", None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let yaml = routes_yaml(
        &[("a", "/a", &a.url("/mcp"))],
        "log: { level: warn }\naudit: { sink: off }",
    );
    std::fs::write(&path, &yaml).unwrap();
    let settings = elicitgate::settings::Settings::from_yaml(&yaml, dir.path()).unwrap();
    let levels: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = levels.clone();
    let running = elicitgate::start::start_with(
        settings,
        elicitgate::start::Options {
            config_path: Some(path.clone()),
            log_level: Some(Box::new(move |level: &str| {
                seen.lock().unwrap().push(level.to_owned());
                Ok(())
            })),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    write_atomically(
        &path,
        &yaml.replace("level: warn", "level: \"elicitgate=debug,info\""),
    );
    let admin = running.admin_addr;
    until("the level is applied", || async {
        metrics(admin)
            .await
            .contains(r#"elicitgate_config_changes_total{part="log_level"} 1"#)
    })
    .await;
    assert_eq!(
        *levels.lock().unwrap(),
        vec!["elicitgate=debug,info".to_owned()]
    );
    running.shutdown().await;
}

/// The real binary: `log.level` goes from `warn` to `info` in the file, and the reload's own
/// info line (silent at `warn`) appears on stderr; a `listen` change is warned about.
#[test]
fn the_binary_applies_a_new_log_level_and_warns_about_listen() {
    use crate::common::redis::free_port;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let (port, admin) = (free_port(), free_port());
    let yaml = |level: &str, listen: u16| {
        format!(
            "listen: 127.0.0.1:{listen}\nadmin_listen: 127.0.0.1:{admin}\nworkers: 1\n\
             log: {{ level: {level}, format: json }}\naudit: {{ sink: off }}\n\
             routes:\n  - name: mcp\n    path: /mcp\n    upstream: \"http://127.0.0.1:9/mcp\"\n"
        )
    };
    std::fs::write(&path, yaml("warn", port)).unwrap();
    let (mut child, rx) = serve_with_stderr(&path, admin);
    write_atomically(&path, &yaml("info", port + 1));
    let mut seen = Vec::new();
    // A bound on waiting, not a timing assertion: the file watcher is slow on a loaded machine.
    let deadline = std::time::Instant::now() + Duration::from_secs(45);
    while std::time::Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
        let reloaded = seen.iter().any(|l| l.contains("Configuration reloaded"));
        let warned = seen
            .iter()
            .any(|l| l.contains("take effect only after a restart") && l.contains("listen"));
        if reloaded && warned {
            break;
        }
    }
    let _ = nix_kill(child.id());
    let _ = child.wait();
    let all = seen.join("\n");
    assert!(all.contains("Configuration reloaded"), "{all}");
    assert!(all.contains(r#"log_level"#), "{all}");
    assert!(all.contains("take effect only after a restart"), "{all}");
    assert!(
        !all.contains('\u{1b}'),
        "no ANSI codes when stderr is a pipe: {all}"
    );
}

fn nix_kill(pid: u32) -> std::io::Result<()> {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("kill failed"))
    }
}
