//! Differential test with the official MCP client SDKs as oracles (SPEC §9).
//!
//! A hostile upstream (`tests/peers/diff/hostile_upstream.py`, standard library only, every
//! byte under its control) answers `tools/call <case>` with a generated case: an elicitation
//! wrapped in a content coding, a media type or charset, an SSE framing edge, a JSON oddity, an
//! envelope or params ambiguity. The oracle clients run every case in a fresh session —
//! `diff_client.py` (Python `mcp` 2.x: `ClientSession` over `streamable_http_client`, and
//! `Client(mode="2026-07-28")` for the 2026 cases), `diff_client.mjs` (TypeScript
//! `@modelcontextprotocol/sdk` 1.x, legacy only) and, when its binary is built, the Rust SDK
//! `rmcp` (`tests/peers/diff/rust`, legacy only) — once DIRECTLY against the upstream and once
//! THROUGH the real gateway, and report what reached their elicitation callback (or, for a
//! `-32042` error, the elicitations the SDK hands the application).
//!
//! Invariants:
//! (a) through the gateway, no blocked elicitation (password form, URL to
//!     `http://evil.example/…?email=…&token=…`, mode-less URL+form) reaches any client;
//! (b) an allowed control (a favourite-colour form, an https link) sent through a variation a
//!     correct gateway must pass surfaces through the gateway exactly as it does directly (same
//!     mode, message, URL and property names).
//! The direct run tells which variations a client actually reads ("exploitable"); a blocked
//! variation no client surfaces directly is reported as not exploitable (and still asserted).
//!
//! Size: the CI-sized run (~300 cases) takes about a minute; `ELICITGATE_DIFF_LARGE=1` runs the
//! cartesian generator (~4,600 cases, ~10 minutes). The full table and the raw oracle lines
//! are written to `<target>/tmp/differential/`. See docs/differential.md.
//!
//! Peers missing: skipped with a notice, unless `ELICITGATE_REQUIRE_PEERS` is set (then a
//! failure naming the install command).

use super::*;
use crate::common::{config_for, gateway};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The hostile upstream; killed when dropped.
struct Upstream {
    port: u16,
    _child: Child,
}

async fn start_upstream(python: &Path, log: &Path) -> Upstream {
    let mut child = Command::new(python)
        .arg(diff_dir().join("hostile_upstream.py"))
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("upstream log"))
        .kill_on_drop(true)
        .spawn()
        .expect("start hostile_upstream.py");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("read upstream stdout") {
            if let Some(port) = line.strip_prefix("READY ") {
                return port.trim().parse::<u16>().expect("port");
            }
        }
        panic!("hostile upstream exited before READY");
    })
    .await
    .expect("hostile upstream did not become ready");
    Upstream {
        port,
        _child: child,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn official_clients_never_surface_what_the_gateway_blocks() {
    let Some(oracles) = oracles("differential test", true) else {
        return;
    };
    let started = Instant::now();
    let large = env_flag("ELICITGATE_DIFF_LARGE");
    let (concurrency, per_case_timeout, overall) = if large {
        (16, 8, Duration::from_secs(3600))
    } else {
        (10, 8, Duration::from_secs(240))
    };
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("differential");
    std::fs::create_dir_all(&out_dir).expect("report dir");
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases_file = tmp.path().join("cases.jsonl");
    let cases = list_cases(&oracles.python, "hostile_upstream.py", large, &cases_file);
    let meta: BTreeMap<String, Value> = cases
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c.clone()))
        .collect();

    let upstream = start_upstream(&oracles.python, &out_dir.join("upstream.log")).await;
    let direct_url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    // The strict built-in rules, minus the two that carry state from one case to the next
    // (rate per principal, repeat after decline): every case must be judged on its own.
    let policy = "policies:\n  default:\n    rules:\n      rate.limit: \"off\"\n      repeat.after_decline: \"off\"\n";
    let gw = gateway(&config_for(&direct_url, policy)).await;
    let gw_url = gw.url();

    let run = |client: Client, path: Way| {
        let url = match path {
            Way::Direct => direct_url.clone(),
            Way::Gateway => gw_url.clone(),
        };
        let log = out_dir.join(format!(
            "{}-{}.log",
            client.name(),
            if path == Way::Direct {
                "direct"
            } else {
                "gateway"
            }
        ));
        let oracles = &oracles;
        let cases_file = cases_file.clone();
        async move {
            let target = Target::Url(url);
            let limits = (concurrency, per_case_timeout, overall);
            let recs = run_oracle(oracles, client, &target, &cases_file, limits, &log).await;
            ((client, path), recs)
        }
    };
    let mut clients = vec![Client::Python, Client::Node];
    if oracles.rmcp.is_some() {
        clients.push(Client::Rmcp);
    }
    let runs = clients
        .iter()
        .flat_map(|&c| [run(c, Way::Direct), run(c, Way::Gateway)]);
    let results: BTreeMap<(Client, Way), BTreeMap<String, Value>> =
        futures_util::future::join_all(runs)
            .await
            .into_iter()
            .collect();
    let elapsed = started.elapsed();

    // Raw oracle lines, for whoever reads the report.
    let mut raw = String::new();
    for ((client, path), recs) in &results {
        for rec in recs.values() {
            let _ = writeln!(raw, "{} {:?} {}", client.name(), path, rec);
        }
    }
    std::fs::write(out_dir.join("records.txt"), raw).expect("write records");

    let rec = |client: Client, path: Way, case: &str| results[&(client, path)].get(case);
    let mut table = String::new();
    let mut interesting = String::new();
    let _ = write!(table, "{:<48} {:<4}", "case", "kind");
    for client in &clients {
        let _ = write!(table, " {:^13}", format!("{} D/G", client.name()));
    }
    let _ = writeln!(
        table,
        "  gateway→upstream ({})",
        clients
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let mut leaks: Vec<String> = Vec::new();
    let mut mismatches: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut not_exploitable: Vec<String> = Vec::new();
    // Per client: [blocked applicable, blocked surfaced directly, blocked surfaced via gateway,
    //              controls applicable, controls surfaced directly, controls equal via gateway]
    let mut counts: BTreeMap<Client, [usize; 6]> = BTreeMap::new();
    for (name, m) in &meta {
        let blocked = m["blocked"].as_bool().unwrap_or(true);
        let strict = m["strict_control"].as_bool().unwrap_or(false);
        let mut flags = Vec::new();
        let mut cells = Vec::new();
        let mut any_direct = false;
        for &client in &clients {
            let d = rec(client, Way::Direct, name);
            let g = rec(client, Way::Gateway, name);
            let (sd, sg) = (seen(d), seen(g));
            cells.push(format!("{}/{}", mark(sd), mark(sg)));
            if sd == Seen::Missing || sg == Seen::Missing {
                missing.push(format!("{name} ({})", client.name()));
                continue;
            }
            if sd == Seen::NotApplicable {
                continue;
            }
            let c = counts.entry(client).or_default();
            if blocked {
                c[0] += 1;
                if sd == Seen::Surfaced {
                    c[1] += 1;
                    any_direct = true;
                }
                if sg == Seen::Surfaced {
                    c[2] += 1;
                    flags.push(format!("LEAK:{}", client.name()));
                    leaks.push(format!(
                        "{name} → {}: {}",
                        client.name(),
                        g.map(|r| r["surfaced"].to_string()).unwrap_or_default()
                    ));
                }
            } else {
                c[3] += 1;
                if sd == Seen::Surfaced {
                    c[4] += 1;
                    let (dv, gv) = (shown(d.unwrap()), shown(g.unwrap()));
                    if dv == gv {
                        c[5] += 1;
                    } else if strict {
                        flags.push(format!("CONTROL-DIFFERS:{}", client.name()));
                        mismatches.push(format!(
                            "{name} ({}): direct {} / gateway {} ({})",
                            client.name(),
                            d.unwrap()["surfaced"],
                            g.unwrap()["surfaced"],
                            g.unwrap()["detail"]
                        ));
                    } else {
                        flags.push(format!("differs(not strict):{}", client.name()));
                    }
                }
            }
        }
        if blocked && !any_direct {
            not_exploitable.push(name.clone());
            flags.push("not exploitable".into());
        }
        let mut line = format!("{:<48} {:<4}", name, if blocked { "BLK" } else { "ok" });
        for cell in &cells {
            let _ = write!(line, " {cell:^13}");
        }
        let answers: Vec<String> = clients
            .iter()
            .map(|&c| answer(rec(c, Way::Gateway, name)))
            .collect();
        let _ = write!(line, "  {}  {}", answers.join(" | "), flags.join(" "));
        let _ = writeln!(table, "{line}");
        if flags
            .iter()
            .any(|f| f.starts_with("LEAK") || f.starts_with("CONTROL"))
        {
            let _ = writeln!(interesting, "{line}");
        }
    }
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "differential run: {} cases ({} blocked, {} allowed controls), {} run, {:.1}s",
        meta.len(),
        meta.values().filter(|m| m["blocked"] == true).count(),
        meta.values().filter(|m| m["blocked"] == false).count(),
        if large { "large" } else { "CI-sized" },
        elapsed.as_secs_f64()
    );
    for (client, c) in &counts {
        let _ = writeln!(
            summary,
            "  {:<6}: blocked {} applicable, {} surfaced directly, {} surfaced THROUGH THE GATEWAY; \
             controls {} applicable, {} surfaced directly, {} identical through the gateway",
            client.name(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5]
        );
    }
    let _ = writeln!(
        summary,
        "  not exploitable (no client surfaces them directly): {} blocked cases",
        not_exploitable.len()
    );
    let _ = writeln!(
        summary,
        "  D = directly against the hostile upstream, G = through the gateway; YES = reached the \
         client's elicitation callback (or its -32042 error helper); n/a = era not spoken"
    );
    let _ = writeln!(
        summary,
        "  full table and raw oracle records: {}",
        out_dir.display()
    );
    std::fs::write(out_dir.join("table.txt"), format!("{summary}\n{table}")).expect("write table");
    if large {
        println!("{summary}\nleaks and differing controls:\n{interesting}");
    } else {
        println!("{summary}\n{table}");
    }

    // The oracles work: the plain variants surface directly in every client that speaks the era.
    let must_surface = [
        ("sse.pw.id.es.-", &clients[..]),
        ("sse.url.id.es.-", &clients[..]),
        ("sse.okform.id.es.-", &clients[..]),
        ("sse.okurl.id.es.-", &clients[..]),
        ("e42.url.id.json.-", &clients[..]),
        ("ir.pw.id.json.-", &[Client::Python][..]),
        ("ir.okform.id.json.-", &[Client::Python][..]),
    ];
    let mut broken = Vec::new();
    for (case, clients) in must_surface {
        for &client in clients {
            if seen(rec(client, Way::Direct, case)) != Seen::Surfaced {
                broken.push(format!(
                    "{case} ({}): {}",
                    client.name(),
                    rec(client, Way::Direct, case)
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| "no record".into())
                ));
            }
        }
    }
    assert_oracles_sound(&broken, &missing, &out_dir);
    let logs = out_dir.display();
    let mut failures = String::new();
    if !leaks.is_empty() {
        let _ = writeln!(
            failures,
            "{} blocked elicitations reached an official client THROUGH THE GATEWAY:\n  {}",
            leaks.len(),
            leaks.join("\n  ")
        );
    }
    if !mismatches.is_empty() {
        let _ = writeln!(
            failures,
            "{} allowed controls surfaced differently through the gateway:\n  {}",
            mismatches.len(),
            mismatches.join("\n  ")
        );
    }
    let distinct: BTreeSet<&str> = leaks
        .iter()
        .map(|l| l.split(' ').next().unwrap_or_default())
        .collect();
    assert!(
        failures.is_empty(),
        "{failures}\n({} distinct cases; table in {logs}/table.txt)",
        distinct.len()
    );
    gw.shutdown().await;
}
