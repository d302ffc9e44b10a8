//! Real third-party peers: MCP servers and clients written with the official Python and
//! TypeScript SDKs (`tests/peers/`), started as child processes that end with the test.
//! `.ci/run` installs them; a missing install fails the test with the command to run.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn python() -> PathBuf {
    let p = peers().join("python/.venv/bin/python");
    assert!(
        p.exists(),
        "Python SDK peers not installed: run .ci/run (or see tests/peers/README.md)"
    );
    p
}

fn node_checked() -> &'static str {
    assert!(
        peers()
            .join("node/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "TypeScript SDK peers not installed: run .ci/run (or see tests/peers/README.md)"
    );
    "node"
}

/// Which SDK a peer is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    Python,
    Node,
}

impl Sdk {
    fn command(self, script: &str) -> Command {
        let mut cmd = match self {
            Sdk::Python => {
                let mut c = Command::new(python());
                c.arg(peers().join("python").join(format!("{script}.py")));
                c
            }
            Sdk::Node => {
                let mut c = Command::new(node_checked());
                c.arg(peers().join("node").join(format!("{script}.mjs")));
                c
            }
        };
        cmd.kill_on_drop(true).stdin(Stdio::null());
        cmd
    }
}

/// A running SDK server; killed when dropped.
pub struct PeerServer {
    pub port: u16,
    _child: Child,
}

impl PeerServer {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// Starts an SDK server on a free loopback port and waits for its `READY <port>` line.
pub async fn server(sdk: Sdk, args: &[&str]) -> PeerServer {
    let mut cmd = sdk.command("server");
    cmd.args(["--port", "0", "--host", "127.0.0.1"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start SDK server");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read server stdout") {
            if let Some(port) = line.strip_prefix("READY ") {
                return port.trim().parse::<u16>().expect("port");
            }
        }
        panic!("{sdk:?} server exited before READY");
    })
    .await
    .expect("SDK server did not become ready");
    PeerServer {
        port,
        _child: child,
    }
}

/// Runs an SDK client to completion and returns its one JSON output line.
pub async fn client(sdk: Sdk, args: &[&str]) -> Value {
    let mut cmd = sdk.command("client");
    cmd.args(args).args(["--timeout", "40"]);
    let output = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("SDK client did not finish")
        .expect("run SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!(
                "{sdk:?} client printed no JSON line; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The OAuth-protected MCP server (`tests/peers/node/oauth_server.mjs`: the TypeScript SDK's
/// demo authorization server in front of a Streamable HTTP endpoint at `/mcp`); killed when
/// dropped.
pub struct OAuthServer {
    pub port: u16,
    /// Where its authorization server listens (`http://127.0.0.1:<port>`).
    pub auth_origin: String,
    _child: Child,
}

/// Starts the OAuth-protected server with `args` (`--auth same|separate`, `--issuer URL`,
/// `--resource URL`, `--jwt`).
pub async fn oauth_server(args: &[&str]) -> OAuthServer {
    let mut cmd = Command::new(node_checked());
    cmd.arg(peers().join("node/oauth_server.mjs"))
        .args(["--port", "0", "--host", "127.0.0.1"])
        .args(args)
        .kill_on_drop(true)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start the OAuth server");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (port, auth_origin) = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read server stdout") {
            if let Some(rest) = line.strip_prefix("READY ") {
                let mut words = rest.split_whitespace();
                let port = words.next().expect("port").parse::<u16>().expect("port");
                return (port, words.next().expect("origin").to_owned());
            }
        }
        panic!("the OAuth server exited before READY");
    })
    .await
    .expect("the OAuth server did not become ready");
    OAuthServer {
        port,
        auth_origin,
        _child: child,
    }
}
