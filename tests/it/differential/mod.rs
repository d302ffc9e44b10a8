//! Differential tests with the official MCP client SDKs as oracles: every hostile case is run
//! once DIRECTLY against a hostile server and once THROUGH THE GATEWAY, and what each client
//! surfaces to its user is compared. [`http`]: Streamable HTTP (and the 2024-11-05 HTTP+SSE
//! transport), with the Python, TypeScript and Rust (`rmcp`) SDKs; [`stdio`]: a hostile stdio
//! server, with the Python and TypeScript SDKs; [`headers`]: how each client reads a repeated
//! header, and that through the gateway none gets to. This module holds what both share: finding the
//! installed oracles, listing the generated cases, running one oracle client over all of them,
//! and reading its records. See docs/differential.md.

mod headers;
mod http;
mod stdio;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn diff_dir() -> PathBuf {
    peers().join("diff")
}

fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| !v.is_empty() && v != "0")
        .unwrap_or(false)
}

/// The oracle installs: the Python venv with `mcp`, the TypeScript SDK and `node`, and the
/// `rmcp` client when it is built.
struct Oracles {
    python: PathBuf,
    node: PathBuf,
    rmcp: Option<PathBuf>,
}

/// The installed oracles for `test`, or `None` (skipped, with a notice) when the peers are
/// missing and `ELICITGATE_REQUIRE_PEERS` is not set. `with_rmcp`: also look for the Rust SDK
/// client.
fn oracles(test: &str, with_rmcp: bool) -> Option<Oracles> {
    let python = peers().join("python/.venv/bin/python");
    let sdk = peers().join("node/node_modules/@modelcontextprotocol/sdk/package.json");
    let mut missing = Vec::new();
    if !python.exists() {
        missing.push("the Python SDK venv (tests/peers/python/.venv)");
    }
    if !sdk.exists() {
        missing.push("the TypeScript SDK (tests/peers/node/node_modules)");
    }
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !node_ok {
        missing.push("node");
    }
    if missing.is_empty() {
        return Some(Oracles {
            python,
            node: PathBuf::from("node"),
            rmcp: if with_rmcp { rmcp_oracle() } else { None },
        });
    }
    let what = missing.join(", ");
    if env_flag("ELICITGATE_REQUIRE_PEERS") {
        panic!("{test}: missing {what}: run .ci/run (or see tests/peers/README.md)");
    }
    eprintln!(
        "{test} SKIPPED: missing {what}. Run .ci/run (or see tests/peers/README.md); \
         set ELICITGATE_REQUIRE_PEERS=1 to make a missing install a failure."
    );
    None
}

/// The Rust SDK oracle (`tests/peers/diff/rust`, a separate cargo project): used when its
/// binary is built (`ELICITGATE_RMCP_ORACLE` names it; `.ci/run` builds it in debug);
/// `ELICITGATE_DIFF_RMCP=1` builds it if needed and makes it required.
fn rmcp_oracle() -> Option<PathBuf> {
    let dir = diff_dir().join("rust");
    let bin = std::env::var_os("ELICITGATE_RMCP_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target/release/diff_client_rmcp"));
    let required = env_flag("ELICITGATE_DIFF_RMCP");
    if !bin.exists() && required {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--release", "--locked", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(dir.join("target"))
            .status()
            .expect("cargo build of the rmcp oracle");
        assert!(status.success(), "building the rmcp oracle failed");
    }
    if bin.exists() {
        return Some(bin);
    }
    println!(
        "differential test: rmcp oracle not built, running Python and TypeScript only \
         (cargo build --release --locked --manifest-path tests/peers/diff/rust/Cargo.toml)"
    );
    None
}

/// The cases a hostile server generates (`<script> --list`), as JSON objects and as the file
/// the oracle clients read.
fn list_cases(python: &Path, script: &str, large: bool, out: &Path) -> Vec<Value> {
    let mut cmd = std::process::Command::new(python);
    cmd.arg(diff_dir().join(script)).arg("--list");
    if large {
        cmd.arg("--large");
    }
    let output = cmd.output().expect("hostile server --list");
    assert!(
        output.status.success(),
        "{script} --list failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(out, &output.stdout).expect("write cases");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("case JSON"))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Client {
    Python,
    Node,
    Rmcp,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Python => "python",
            Client::Node => "node",
            Client::Rmcp => "rmcp",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Way {
    Direct,
    Gateway,
}

/// What an oracle client talks to: an HTTP endpoint, or a command it spawns per case (the
/// stdio server itself, or `elicitgate stdio -- <server>`).
enum Target {
    Url(String),
    Command(String),
}

/// Runs one oracle over every case of `cases_file` against `target`, `limits` being
/// (concurrency, per-case timeout in seconds, overall bound); returns case name → record.
async fn run_oracle(
    oracles: &Oracles,
    client: Client,
    target: &Target,
    cases_file: &Path,
    (concurrency, per_case_timeout, overall): (usize, u64, Duration),
    log: &Path,
) -> BTreeMap<String, Value> {
    let mut cmd = match client {
        Client::Python => {
            let mut c = Command::new(&oracles.python);
            c.arg(diff_dir().join("diff_client.py"));
            c
        }
        Client::Node => {
            let mut c = Command::new(&oracles.node);
            c.arg(diff_dir().join("diff_client.mjs"));
            c
        }
        Client::Rmcp => Command::new(oracles.rmcp.as_ref().expect("rmcp oracle")),
    };
    let described = match target {
        Target::Url(url) => {
            cmd.arg("--url").arg(url);
            url.clone()
        }
        Target::Command(command) => {
            cmd.arg("--command").arg(command).arg("--accept-colour");
            command.clone()
        }
    };
    cmd.arg("--cases")
        .arg(cases_file)
        .args(["--concurrency", &concurrency.to_string()])
        .args(["--timeout", &per_case_timeout.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("oracle log"))
        .kill_on_drop(true);
    let child = cmd.spawn().expect("start oracle client");
    let output = tokio::time::timeout(overall, child.wait_with_output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{} oracle against {described} did not finish within {overall:?} (log: {})",
                client.name(),
                log.display()
            )
        })
        .expect("run oracle client");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (v["case"].as_str().unwrap_or_default().to_owned(), v)
        })
        .collect()
}

/// The oracles themselves worked: every plain case surfaced directly (`broken` lists those
/// that did not), and every client produced a record for every case run (`missing`).
fn assert_oracles_sound(broken: &[String], missing: &[String], out_dir: &Path) {
    let logs = out_dir.display();
    assert!(
        broken.is_empty(),
        "the oracle is broken: plain cases did not surface directly (logs in {logs}):\n{}",
        broken.join("\n")
    );
    assert!(
        missing.is_empty(),
        "oracle clients produced no record for {} case runs (crashed? logs in {logs}): {}",
        missing.len(),
        missing
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// What the user was shown, for comparison: via, mode, message, URL, property names.
fn shown(rec: &Value) -> Vec<[String; 5]> {
    rec["surfaced"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    ["via", "mode", "message", "url", "props"].map(|k| match &s[k] {
                        Value::Null => String::new(),
                        Value::String(x) => x.clone(),
                        other => other.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    NotApplicable,
    Surfaced,
    Not,
    Missing,
}

fn seen(rec: Option<&Value>) -> Seen {
    match rec {
        None => Seen::Missing,
        Some(r) if r["call"] == "n/a" => Seen::NotApplicable,
        Some(r) if r["surfaced"].as_array().is_some_and(|a| !a.is_empty()) => Seen::Surfaced,
        Some(_) => Seen::Not,
    }
}

fn mark(s: Seen) -> &'static str {
    match s {
        Seen::NotApplicable => "n/a",
        Seen::Surfaced => "YES",
        Seen::Not => "-",
        Seen::Missing => "??",
    }
}

/// The upstream's view of the answer to its elicitation, short (gateway rules or action).
fn answer(rec: Option<&Value>) -> String {
    match rec.map(|r| &r["answer"]) {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(o)) if o.contains_key("error") => {
            let rules = o
                .get("rules")
                .and_then(|r| r.as_array())
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            format!("err {}[{rules}]", o["error"])
        }
        Some(Value::Object(o)) if o.contains_key("action") => {
            o["action"].as_str().unwrap_or("?").to_owned()
        }
        Some(Value::Object(o)) if o.contains_key("inputResponses") => "retried".to_owned(),
        Some(other) => other.to_string().chars().take(20).collect(),
    }
}
