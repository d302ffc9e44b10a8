//! A real Prometheus server (Debian's `prometheus`, installed by `.ci/run`) scrapes the gateway
//! while scenarios run, and the expected series are read back through its HTTP query API.
//! `promtool` lints the exposition and checks the shipped alert rules; the shipped Grafana
//! dashboard only queries metrics the gateway exports.

use crate::common::*;
use elicitgate::demo::client::DemoClient;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn require(tool: &str) {
    let found = std::process::Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    assert!(
        found,
        "`{tool}` not installed: run .ci/run (it installs Debian's prometheus)"
    );
}

/// Runs the demo's five cases through the gateway: one allowed and answered, four blocked.
async fn scenarios(gw: &TestGateway) {
    let both = json!({"elicitation": {"form": {}, "url": {}}});
    let cases = [
        (
            "deploy",
            both.clone(),
            json!({"action":"accept","content":{"env":"staging","confirm":true}}),
        ),
        (
            "login",
            both.clone(),
            json!({"action":"accept","content":{"password":"x"}}),
        ),
        ("connect_http", both.clone(), json!({"action":"accept"})),
        ("connect_pii", both, json!({"action":"accept"})),
        (
            "connect",
            json!({"elicitation": {}}),
            json!({"action":"accept"}),
        ),
    ];
    for (tool, caps, answer) in cases {
        let mut client = DemoClient::connect(&gw.url(), caps).await.unwrap();
        client.call(tool, answer).await.unwrap();
    }
}

async fn query(client: &reqwest_lite::Client, prom: &str, q: &str) -> Vec<Value> {
    let v = client
        .get_json(&format!("http://{prom}/api/v1/query"), &[("query", q)])
        .await;
    assert_eq!(v["status"], "success", "{v}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn value(sample: &Value) -> f64 {
    sample["value"][1].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_expected_series() {
    require("prometheus");
    require("promtool");
    let upstream = elicitgate::demo::server::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let gw = gateway(&config_for(&format!("http://{upstream}/mcp"), "")).await;
    scenarios(&gw).await;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}\nrule_files: [\"{}\"]\nscrape_configs:\n  - job_name: elicitgate\n    static_configs: [{{ targets: [\"{}\"] }}]\n",
            repo("deploy/prometheus/alerts.yml").display(),
            gw.admin_addr
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = format!("127.0.0.1:{port}");
    let _prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start prometheus");

    let http = reqwest_lite::Client::new();
    // Wait (bounded) until the gateway has been scraped.
    let mut up = Vec::new();
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Some(v) = http
            .try_get_json(
                &format!("http://{prom}/api/v1/query"),
                &[("query", "up{job=\"elicitgate\"}")],
            )
            .await
        {
            up = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if up.first().is_some_and(|s| value(s) == 1.0) {
                break;
            }
        }
    }
    assert_eq!(
        up.first().map(value),
        Some(1.0),
        "Prometheus never scraped the gateway: {up:?}"
    );

    let deny = query(
        &http,
        &prom,
        r#"sum(elicitgate_elicitations_total{route="demo",verdict="deny"})"#,
    )
    .await;
    assert_eq!(deny.first().map(value), Some(4.0));
    let allow = query(
        &http,
        &prom,
        r#"elicitgate_elicitations_total{route="demo",verdict="allow",mode="form"}"#,
    )
    .await;
    assert_eq!(allow.first().map(value), Some(1.0));
    let by_rule = query(
        &http,
        &prom,
        r#"sum by (rule) (elicitgate_rule_matches_total{route="demo",action="deny"})"#,
    )
    .await;
    let rules: BTreeSet<String> = by_rule
        .iter()
        .map(|s| s["metric"]["rule"].as_str().unwrap().to_owned())
        .collect();
    let expected: BTreeSet<String> = ["form.secret", "url.scheme", "url.pii", "mode.undeclared"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(rules, expected);
    let accepted = query(
        &http,
        &prom,
        r#"elicitgate_answers_total{route="demo",mode="form",action="accept"}"#,
    )
    .await;
    assert_eq!(accepted.first().map(value), Some(1.0));
    let tta = query(
        &http,
        &prom,
        r#"elicitgate_time_to_answer_seconds_count{route="demo"}"#,
    )
    .await;
    assert_eq!(tta.first().map(value), Some(1.0));
    let ok = query(
        &http,
        &prom,
        r#"sum(elicitgate_gateway_answers_total{route="demo",result="ok"})"#,
    )
    .await;
    assert_eq!(
        ok.first().map(value),
        Some(4.0),
        "the gateway answered the server for each block"
    );
    let reload = query(&http, &prom, "elicitgate_policy_last_reload_success").await;
    assert_eq!(reload.first().map(value), Some(1.0));
    let info = query(&http, &prom, "elicitgate_build_info").await;
    assert_eq!(info.len(), 1);
    // The shipped rules loaded into the server.
    let rules = http
        .get_json(&format!("http://{prom}/api/v1/rules"), &[])
        .await;
    let names: Vec<&str> = rules["data"]["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        names.contains(&"ElicitgatePolicyReloadFailing"),
        "{names:?}"
    );

    // promtool lints the exposition format.
    let text = metrics(gw.admin_addr).await;
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .await
        .unwrap();
    let out = lint.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn shipped_alert_rules_and_scrape_config_pass_promtool() {
    require("promtool");
    for args in [
        vec!["check", "rules", "deploy/prometheus/alerts.yml"],
        vec!["test", "rules", "deploy/prometheus/alerts_test.yml"],
        vec!["check", "config", "deploy/prometheus/prometheus.yml"],
    ] {
        let out = Command::new("promtool")
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn dashboard_and_alerts_query_only_exported_metrics() {
    let names = elicitgate::metrics::Metrics::new().family_names();
    let exported: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let known = |name: &str| {
        exported.contains(name)
            || ["_bucket", "_sum", "_count"]
                .iter()
                .any(|s| name.strip_suffix(s).is_some_and(|b| exported.contains(b)))
    };
    let re = regex::Regex::new(r"elicitgate_[a-z_]+").unwrap();
    for file in [
        "deploy/grafana/elicitgate-dashboard.json",
        "deploy/prometheus/alerts.yml",
    ] {
        let body = std::fs::read_to_string(repo(file)).unwrap();
        if file.ends_with(".json") {
            let dash: Value = serde_json::from_str(&body).unwrap();
            let panels = dash["panels"].as_array().unwrap();
            assert!(panels.len() >= 8);
            // Every query follows the dashboard's namespace and instance filters.
            for target in panels.iter().flat_map(|p| p["targets"].as_array().unwrap()) {
                let expr = target["expr"].as_str().unwrap();
                assert!(
                    expr.contains(r#"namespace=~"$namespace",instance=~"$instance""#),
                    "{expr} ignores the namespace and instance filters"
                );
            }
        }
        for m in re.find_iter(&body) {
            assert!(
                known(m.as_str()),
                "{file} uses {} which the gateway does not export",
                m.as_str()
            );
        }
    }
}

/// A tiny JSON-over-HTTP GET client on hyper (no extra HTTP stack for tests).
mod reqwest_lite {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use serde_json::Value;

    pub struct Client(
        hyper_util::client::legacy::Client<
            hyper_util::client::legacy::connect::HttpConnector,
            Full<Bytes>,
        >,
    );

    impl Client {
        pub fn new() -> Self {
            Self(
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http(),
            )
        }

        pub async fn try_get_json(&self, url: &str, query: &[(&str, &str)]) -> Option<Value> {
            let mut u = url::Url::parse(url).ok()?;
            for (k, v) in query {
                u.query_pairs_mut().append_pair(k, v);
            }
            let req = http::Request::get(u.as_str())
                .body(Full::new(Bytes::new()))
                .ok()?;
            let resp = self.0.request(req).await.ok()?;
            let body = resp.into_body().collect().await.ok()?.to_bytes();
            serde_json::from_slice(&body).ok()
        }

        pub async fn get_json(&self, url: &str, query: &[(&str, &str)]) -> Value {
            self.try_get_json(url, query)
                .await
                .unwrap_or_else(|| panic!("GET {url} failed"))
        }
    }
}

/// Every shipped alert links a runbook section that exists, and every runbook section is an
/// alert's: an alert cannot ship without telling on-call what to do.
#[test]
fn every_alert_has_a_runbook() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let alerts = std::fs::read_to_string(root.join("deploy/prometheus/alerts.yml")).unwrap();
    let runbooks = std::fs::read_to_string(root.join("docs/runbooks.md")).unwrap();
    let names: Vec<&str> = alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let sections: Vec<&str> = runbooks
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect();
    for name in &names {
        assert!(
            alerts.contains(&format!(
                "runbook_url: \"docs/runbooks.md#{}\"",
                name.to_lowercase()
            )),
            "{name} has no runbook_url"
        );
        assert!(
            sections.contains(name),
            "docs/runbooks.md has no section {name}"
        );
    }
    for section in &sections {
        assert!(names.contains(section), "runbook {section} is no alert's");
    }
}
