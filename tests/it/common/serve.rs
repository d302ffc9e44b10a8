//! The real binary, as an operator runs it: `elicitgate serve --config FILE` with JSON logs on
//! stderr, its addresses read from its "listening" line, stopped by SIGTERM, and everything it
//! wrote to stdout and stderr returned — for tests that read what the process outputs (logs,
//! the access log, audit on stdout).

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::task::JoinHandle;

/// A running `elicitgate serve`.
pub struct Served {
    child: tokio::process::Child,
    pub addr: String,
    pub admin: String,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
}

/// What the process wrote, once it has exited.
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

impl Served {
    /// Starts the binary on `config` (which must ask for `log.format: json`) and waits for its
    /// listening line.
    pub async fn start(config: &Path) -> Self {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_elicitgate"))
            .args(["serve", "--config"])
            .arg(config)
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let stdout = tokio::spawn(async move {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s).await;
            s
        });
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                seen.push_str(&line);
                seen.push('\n');
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let (Some(a), Some(b)) = (
                    v["fields"]["addr"].as_str(),
                    v["fields"]["admin_addr"].as_str(),
                ) {
                    return Some((a.to_owned(), b.to_owned()));
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        let Some((addr, admin)) = found else {
            panic!("the gateway did not start:\n{seen}");
        };
        let stderr = tokio::spawn(async move {
            let mut rest = seen;
            while let Ok(Some(line)) = lines.next_line().await {
                rest.push_str(&line);
                rest.push('\n');
            }
            rest
        });
        Self {
            child,
            addr,
            admin,
            stdout,
            stderr,
        }
    }

    /// SIGTERM, a clean exit (asserted), and everything the process wrote.
    pub async fn stop(mut self) -> Output {
        let pid = self.child.id().unwrap().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the gateway did not exit after SIGTERM")
            .unwrap();
        assert!(status.success(), "gateway exit: {status}");
        Output {
            stdout: self.stdout.await.unwrap(),
            stderr: self.stderr.await.unwrap(),
        }
    }
}
