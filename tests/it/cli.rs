//! The command-line contracts: `inspect` exit codes and output line, `check-config` reporting,
//! and `demo` ending every case as expected.

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_elicitgate");

fn config() -> String {
    format!("{}/config/elicitgate.yaml", env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary with `args`, `input` on its stdin.
fn run_with_stdin(args: &[&str], input: &str) -> std::process::Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn inspect(args: &[&str], input: &str) -> (i32, serde_json::Value) {
    let config = config();
    let mut all = vec!["inspect", "--config", &config];
    all.extend_from_slice(args);
    let out = run_with_stdin(&all, input);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "exactly one line: {text}");
    (
        out.status.code().unwrap(),
        serde_json::from_str(&text).unwrap(),
    )
}

#[test]
fn inspect_exit_codes_and_output() {
    let allowed = r#"{"message":"Choose the deployment target","requestedSchema":{"type":"object","properties":{"env":{"type":"string","enum":["staging","production"]}}}}"#;
    let (code, v) = inspect(&[], allowed);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")));
    assert_eq!(v["rules"], serde_json::json!([]));

    let denied = r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Enter your API key","requestedSchema":{"type":"object","properties":{"apiKey":{"type":"string"}}}}}"#;
    let (code, v) = inspect(&[], denied);
    assert_eq!((code, v["verdict"].as_str()), (1, Some("deny")));
    assert!(v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "form.secret"));
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| !f.to_string().contains("Enter your")));

    // A form-only client and a URL-mode request.
    let url = r#"{"mode":"url","elicitationId":"e","message":"Connect","url":"https://auth.example.com/x"}"#;
    let (code, v) = inspect(&["--capabilities", r#"{"elicitation":{}}"#], url);
    assert_eq!(code, 1);
    assert_eq!(v["rules"], serde_json::json!(["mode.undeclared"]));

    let (code, v) = inspect(&[], "not json");
    assert_eq!(code, 2);
    assert!(v["error"].is_string());
    let (code, _) = inspect(&["--route", "no-such-route"], allowed);
    assert_eq!(code, 2);
}

#[test]
fn check_config_reports_every_error_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "listen: nope\ncolour: blue\npolicies:\n  p:\n    rules: { form.secrets: deny }\n    url: { alowed_hosts: [] }\nroutes:\n  - { name: a, path: /a, upstream: \"http://127.0.0.1:1/\", policy: q }\n").unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    for needle in ["listen", "colour", "form.secrets", "alowed_hosts", "policy"] {
        assert!(err.contains(needle), "{needle} missing from:\n{err}");
    }
    // The shipped examples and the container image's default configuration.
    for file in [
        "config/elicitgate.yaml",
        "config/policy.yaml",
        "deploy/docker/elicitgate.yaml",
    ] {
        let out = Command::new(BIN)
            .args([
                "check-config",
                "--config",
                &format!("{}/{file}", env!("CARGO_MANIFEST_DIR")),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn demo_ends_every_case_as_expected() {
    let out = Command::new(BIN).arg("demo").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("BLOCKED by").count(), 4, "{text}");
    assert_eq!(text.matches("ALLOWED").count(), 1, "{text}");
    assert!(text.contains("All 5 cases ended as expected."));
}

/// The configuration embedded in the shipped Kubernetes manifest, as the pod reads it.
fn manifest_config() -> String {
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/elicitgate.yaml"
    ))
    .unwrap();
    let start = manifest
        .find("elicitgate.yaml: |\n")
        .expect("embedded config")
        + 19;
    manifest[start..]
        .lines()
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_shipped_manifest_is_valid_for_the_replicas_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    std::fs::write(&path, manifest_config()).unwrap();
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/elicitgate.yaml"
    ))
    .unwrap();
    let replicas: u32 = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("replicas:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("replicas");
    let config = manifest_config();
    assert!(
        replicas == 1 || config.contains("backend: redis"),
        "{replicas} replicas need the shared state store"
    );
    // With the Secret's environment the pod has, the configuration is valid.
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&path)
        .env(
            "ELICITGATE__STATE__REDIS__URL",
            "redis://redis.default.svc:6379/0",
        )
        .env(
            "ELICITGATE__AUDIT__SALT",
            "0123456789abcdef0123456789abcdef",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for var in ["ELICITGATE__STATE__REDIS__URL", "ELICITGATE__AUDIT__SALT"] {
        assert!(manifest.contains(var), "the pod gets {var} from the Secret");
    }
}

/// `elicitgate report` over audit JSON Lines in the shape the audit sink writes, from stdin,
/// as text and as JSON, with a window.
#[test]
fn report_summarises_audit_events_as_text_and_json() {
    let lines = concat!(
        r#"{"v":1,"ts":"2026-12-01T10:00:00.000Z","event":"elicitation.blocked","route":"mcp","mode":"form","verdict":"deny","rules":["form.secret"],"findings":[{"rule":"form.secret","location":"properties.p","detector":"secret.term:password@tr"}]}"#,
        "\n",
        r#"{"v":1,"ts":"2026-12-01T10:00:01.000Z","event":"elicitation.allowed","route":"mcp","mode":"form","verdict":"allow","rules":[]}"#,
        "\n",
        r#"{"v":1,"ts":"2026-12-01T10:00:05.000Z","event":"elicitation.answered","action":"decline","time_to_answer_ms":4000}"#,
        "\n"
    );
    let run = |args: &[&str]| {
        let mut all = vec!["report"];
        all.extend_from_slice(args);
        let out = run_with_stdin(&all, lines);
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&[]);
    assert!(text.contains("3 events"), "{text}");
    assert!(text.contains("secret.term:password@tr"), "{text}");
    assert!(text.contains("p50 4s"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&run(&["--format", "json"])).unwrap();
    assert_eq!(json["by_verdict"]["deny"], 1);
    assert_eq!(json["answers"]["decline"], 1);
    assert_eq!(
        json["time_to_answer_ms"]["p50"], 4000,
        "labelled percentiles"
    );
    let later: serde_json::Value = serde_json::from_str(&run(&[
        "--format",
        "json",
        "--since",
        "2026-12-01T10:00:02Z",
    ]))
    .unwrap();
    assert_eq!(later["events"], 1);
}

#[test]
fn stdio_with_a_route_no_config_has_is_an_error_not_another_policy() {
    let out = Command::new(BIN)
        .args([
            "stdio",
            "--config",
            &config(),
            "--route",
            "no-such-route",
            "--",
            "cat",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no route named `no-such-route`"), "{err}");
    assert!(out.stdout.is_empty(), "the relay ran");
}

#[test]
fn a_second_serve_on_a_listen_address_in_use_fails_instead_of_sharing_it() {
    let dir = tempfile::tempdir().unwrap();
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    // Another process's SO_REUSEPORT listener would let a plain second bind share the port:
    // the first instance here is a real `serve`.
    let config = dir.path().join("elicitgate.yaml");
    drop(holder);
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"http://127.0.0.1:9/mcp\"\n"
        ),
    )
    .unwrap();
    let mut first = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first serve did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut second = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It must exit on its own; one still running after the wait took part of the traffic.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = second.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = first.kill();
    let _ = first.wait();
    let output = second.wait_with_output().unwrap();
    let status = status.expect("a second instance started and kept serving the port");
    assert!(!status.success(), "a second instance started");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("already in use by another process"), "{err}");
}

/// `elicitgate test`: the shipped cases pass against the shipped policy file; a wrong
/// expectation exits 1 and shows both sides; an unreadable case file exits 2.
#[test]
fn test_runs_policy_cases_and_reports_every_mismatch() {
    let root = env!("CARGO_MANIFEST_DIR");
    let policy = format!("{root}/config/policy.yaml");
    let shipped = format!("{root}/config/cases/policy.yaml");
    let run = |files: &[&str]| {
        let out = Command::new(BIN)
            .args(["test", "--config", &policy])
            .args(files)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&[&shipped]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("5 cases: 5 passed, 0 failed"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.yaml");
    let text = std::fs::read_to_string(&shipped).unwrap().replace(
        "expect: { verdict: deny, rules: [form.secret] }\n\n  - name: the vendor's",
        "expect: { verdict: allow, rules: [] }\n\n  - name: the vendor's",
    );
    std::fs::write(&wrong, text).unwrap();
    let (code, out, _) = run(&[&shipped, wrong.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  "), "{out}");
    assert!(
        out.contains("- verdict: allow") && out.contains("+ verdict: deny"),
        "{out}"
    );
    assert!(
        out.contains("- rules: []") && out.contains("+ rules: [form.secret]"),
        "{out}"
    );
    assert!(out.contains("finding: form.secret at "), "{out}");
    assert!(out.contains("10 cases: 9 passed, 1 failed"), "{out}");

    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        "cases: [ {name: x, message: {}, expect: {verdict: maybe}} ]",
    )
    .unwrap();
    let (code, _, err) = run(&[broken.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("allow or deny"), "{err}");
}

/// A mistyped `ELICITGATE__…` variable is named as the culprit, not blamed on the file.
#[test]
fn an_unknown_key_from_the_environment_names_the_variable() {
    let out = Command::new(BIN)
        .args(["check-config", "--config", &config()])
        .env("ELICITGATE__AUDIT__SALLT", "0123456789abcdef")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sallt") && err.contains("environment variable ELICITGATE__AUDIT__SALLT"),
        "{err}"
    );
}
