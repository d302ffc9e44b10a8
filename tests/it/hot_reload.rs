//! Hot reload: behaviour changes after the file changes (in place, by rename-replace as a
//! Kubernetes ConfigMap does, and on SIGHUP); an invalid edit keeps the running policy.

use crate::common::scripted::*;
use crate::common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

fn config(upstream: &str, kill_switch: bool) -> String {
    format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\npolicies:\n  p:\n    kill_switch: {kill_switch}\nroutes:\n  - name: demo\n    path: /mcp\n    policy: p\n    upstream: \"{upstream}\"\n"
    )
}

/// Is an elicitation forwarded right now (in the session [`initialize`] opened)?
async fn forwarded(gw: &TestGateway) -> bool {
    call_tool(gw).await.contains("elicitation/create")
}

/// Waits (bounded) until the gateway's behaviour is `want`.
async fn until_forwarded(gw: &TestGateway, want: bool) {
    for _ in 0..100 {
        if forwarded(gw).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("behaviour never became forwarded={want}");
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn metric(gw: &TestGateway, line: &str) -> bool {
    for _ in 0..100 {
        if metrics(gw.admin_addr).await.contains(line) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn policy_changes_apply_live_and_invalid_edits_are_refused() {
    let upstream =
        legacy_server(|_| sse(&[form("f-1", "Pick a colour", json!({"c":{"type":"string"}}))]))
            .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let up = upstream.url("/mcp");
    std::fs::write(&path, config(&up, false)).unwrap();
    let gw = gateway_in(
        &std::fs::read_to_string(&path).unwrap(),
        dir.path(),
        Some(path.clone()),
    )
    .await;
    initialize(&gw, BOTH).await;
    assert!(forwarded(&gw).await);

    // In-place edit: the kill switch goes on.
    std::fs::write(&path, config(&up, true)).unwrap();
    until_forwarded(&gw, false).await;
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="success"} 1"#
        )
        .await
    );

    // An invalid edit (unknown key) is refused; the running policy stays.
    std::fs::write(
        &path,
        config(&up, false).replace("kill_switch", "kill_swtich"),
    )
    .unwrap();
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="failure"} 1"#
        )
        .await
    );
    assert!(metric(&gw, "elicitgate_policy_last_reload_success 0").await);
    assert!(!forwarded(&gw).await, "the old policy still applies");
    assert_eq!(gw.audit_of("policy.reload_failed").await.len(), 1);

    // Rename-replace, as an editor or a ConfigMap update does.
    write_atomically(&path, &config(&up, false));
    until_forwarded(&gw, true).await;
    assert!(metric(&gw, "elicitgate_policy_last_reload_success 1").await);

    // Repeated rename-replace keeps being seen (the watch survives inode changes).
    write_atomically(&path, &config(&up, true));
    until_forwarded(&gw, false).await;
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="success"} 3"#
        )
        .await
    );

    // SIGHUP reloads even when the file did not change (file events with identical bytes
    // are ignored, so this count can only come from the signal).
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="success"} 4"#
        )
        .await
    );
    gw.shutdown().await;
}

/// "Bad ConfigMap, roll back": after a broken file is refused, restoring the exact file that
/// was running is a change like any other — it is applied and the success gauge returns to 1.
#[tokio::test]
async fn restoring_the_running_file_after_a_refused_edit_is_applied() {
    let upstream =
        legacy_server(|_| sse(&[form("f-1", "Pick a colour", json!({"c":{"type":"string"}}))]))
            .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let up = upstream.url("/mcp");
    let good = config(&up, false);
    std::fs::write(&path, &good).unwrap();
    let gw = gateway_in(&good, dir.path(), Some(path.clone())).await;
    initialize(&gw, BOTH).await;
    assert!(forwarded(&gw).await);

    write_atomically(&path, &good.replace("kill_switch", "kill_swtich"));
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="failure"} 1"#
        )
        .await
    );
    assert!(metric(&gw, "elicitgate_policy_last_reload_success 0").await);

    write_atomically(&path, &good);
    assert!(
        metric(
            &gw,
            r#"elicitgate_policy_reloads_total{result="success"} 1"#
        )
        .await,
        "the rolled-back file was not applied"
    );
    assert!(metric(&gw, "elicitgate_policy_last_reload_success 1").await);
    assert!(forwarded(&gw).await);
    gw.shutdown().await;
}

/// A reload that puts a route's policy in dry run is visible: `route_policy` names the mode,
/// and what would have been blocked is counted and audited as `would_deny`, not as `audit`.
#[tokio::test]
async fn dry_run_turned_on_by_reload_is_visible_in_metrics_and_the_audit() {
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Sign in",
            json!({"password":{"type":"string"}}),
        )])
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("elicitgate.yaml");
    let up = upstream.url("/mcp");
    let enforcing = config(&up, false);
    std::fs::write(&path, &enforcing).unwrap();
    let gw = gateway_in(&enforcing, dir.path(), Some(path.clone())).await;
    assert!(
        metric(
            &gw,
            r#"elicitgate_route_policy{mode="enforce",policy="p",route="demo"} 1"#
        )
        .await
    );
    initialize(&gw, BOTH).await;
    assert!(!forwarded(&gw).await, "blocked while enforcing");

    write_atomically(
        &path,
        &enforcing.replace(
            "kill_switch: false",
            "kill_switch: false\n    dry_run: true",
        ),
    );
    until_forwarded(&gw, true).await;
    assert!(
        metric(
            &gw,
            r#"elicitgate_route_policy{mode="dry_run",policy="p",route="demo"} 1"#
        )
        .await
    );
    let m = metrics(gw.admin_addr).await;
    assert!(
        !m.contains(r#"mode="enforce""#),
        "the old mode is cleared: {m}"
    );
    assert!(
        m.contains(
            r#"elicitgate_elicitations_total{mode="form",route="demo",verdict="would_deny"}"#
        ),
        "{m}"
    );
    let audited = gw.audit_of("elicitation.audited").await;
    assert!(
        audited.iter().any(|e| e["verdict"] == "would_deny"),
        "{audited:?}"
    );
    gw.shutdown().await;
}
