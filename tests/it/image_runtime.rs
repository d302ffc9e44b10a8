//! The container image's runtime assumptions (Dockerfile), proven without a container engine:
//! the binary runs as distroless' non-root user 65532, from `/`, with an empty environment
//! (no shell, no `PATH`, no `HOME`), its configuration in a read-only directory, and nothing
//! to write but stdout/stderr; it becomes ready, serves, and drains on SIGTERM. (The image's
//! own default configuration is checked with the shipped examples in `tests/it/cli.rs`.)

use crate::common::redis::{binary, free_port};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

const NONROOT: u32 = 65532;

fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn runs_as_the_image_runs_it_non_root_read_only_config_empty_environment() {
    if !nix_is_root() {
        eprintln!("image_runtime: skipped, switching to uid {NONROOT} needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    let (port, admin) = (free_port(), free_port());
    let config = etc.join("elicitgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\nworkers: 1\n\
             log: {{ level: warn, format: json }}\naudit: {{ sink: stdout }}\n\
             routes:\n  - name: mcp\n    path: /mcp\n    upstream: \"http://127.0.0.1:9/mcp\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o555)).unwrap();
    // The temp dir itself is root's 0700: let the other user reach the config inside it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut child = Command::new(binary())
        .args(["serve", "--config"])
        .arg(&config)
        .env_clear()
        .current_dir("/")
        .uid(NONROOT)
        .gid(NONROOT)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn as 65532");
    let mut ready = false;
    for _ in 0..200 {
        if get(admin, "/readyz").is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
            ready = true;
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(ready, "never became ready as uid {NONROOT}");
    let metrics = get(admin, "/metrics").unwrap_or_default();
    assert!(metrics.contains("elicitgate_build_info"), "{metrics}");
    // The upstream is down: the gateway answers for it (502), proving the route is served.
    let answer = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    };
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    // SIGTERM: drains and exits cleanly.
    let pid = child.id() as i32;
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = (0..400)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(25));
            child.try_wait().ok().flatten()
        })
        .expect("exits after SIGTERM");
    assert!(status.success(), "{status}");
}

fn nix_is_root() -> bool {
    // /proc/self belongs to the effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
