//! Differential test over stdio, with the official MCP client SDKs as oracles (SPEC §9).
//!
//! A hostile stdio MCP server (`tests/peers/diff/hostile_stdio.py`, standard library only,
//! writing exact bytes on stdout) answers `tools/call <case>` with a case's lines: an elicitation
//! (a password form, a URL-mode link to `http://evil.example/…?email=…&token=…`, mode-less URL
//! members, or an allowed control) as a request line, a `-32042` error, a 2026-07-28
//! `input_required` result or a batch, written with a line-level variation (CRLF, a lone CR,
//! no line end before EOF, whitespace, a JSON text over several lines, raw U+2028/U+0085/control
//! characters) or a JSON one (NaN, 1e400, deep nesting, lone surrogate, invalid UTF-8, BOM,
//! duplicate keys, escapes, ambiguous envelopes, `-32042.0`).
//!
//! The oracle clients spawn, per case, either the hostile server itself (DIRECT) or
//! `elicitgate stdio --config … -- <hostile server>` (THROUGH THE GATEWAY):
//! `diff_client.py --command` (Python `mcp` 2.x: `stdio_client(StdioServerParameters)` +
//! `ClientSession`, and `Client(StdioServerParameters, mode="2026-07-28")` for the 2026 cases)
//! and `diff_client.mjs --command` (TypeScript `@modelcontextprotocol/sdk` 1.x:
//! `StdioClientTransport`, legacy only). Both answer a colour-only form
//! `accept {"colour":"blue"}` and decline everything else; the server reports, in its tool
//! result, the answer it received and the exact line that carried it.
//!
//! Invariants:
//! (a) through the gateway, no blocked elicitation reaches any client;
//! (b) an allowed control written the way a correct gateway must pass surfaces through the
//!     gateway exactly as it does directly;
//! (c) no client is left hanging through the gateway: a case that ends directly (with a result
//!     or an error) ends through the gateway too, within the per-case bound;
//! (d) client answers: what reaches the server as the answer to an allowed form through the
//!     gateway is what the client sent (and the same as directly).
//!
//! CI-sized: ~140 cases, about a minute and a half on 2 cores; `ELICITGATE_DIFF_LARGE=1`:
//! ~2,400 cases. Report in `<target>/tmp/differential-stdio/`. See docs/differential.md. Peers missing: skipped with a
//! notice, unless `ELICITGATE_REQUIRE_PEERS` is set.

use super::*;
use serde_json::json;
use std::fmt::Write as _;

/// The case never ended: no result, no error, and not cut short after a surfaced elicitation.
fn hung(rec: &Value) -> bool {
    rec["call"] == "timeout" && !rec["detail"].as_str().unwrap_or("").starts_with("ended ")
}

/// How the call ended, short.
fn ending(rec: Option<&Value>) -> String {
    let Some(r) = rec else { return "??".into() };
    match r["call"].as_str().unwrap_or("?") {
        "timeout" if hung(r) => "HANG".into(),
        "timeout" => "cut".into(),
        other => other.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn official_stdio_clients_never_surface_what_the_gateway_blocks() {
    let Some(oracles) = oracles("stdio differential test", false) else {
        return;
    };
    let python = oracles.python.clone();
    let started = Instant::now();
    let large = env_flag("ELICITGATE_DIFF_LARGE");
    // Through the gateway every case must end, so its bound is generous; directly, a client
    // the hostile server leaves hanging only waits out its bound, so those runs wait shorter
    // and more at a time (a direct case that ends does so within a few seconds).
    let (gateway_limits, direct_limits) = if large {
        (
            (16, 6, Duration::from_secs(3600)),
            (24, 6, Duration::from_secs(3600)),
        )
    } else {
        (
            (8, 25, Duration::from_secs(480)),
            (12, 10, Duration::from_secs(480)),
        )
    };
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("differential-stdio");
    std::fs::create_dir_all(&out_dir).expect("report dir");
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases_file = tmp.path().join("cases.jsonl");
    let cases = list_cases(&python, "hostile_stdio.py", large, &cases_file);
    let meta: BTreeMap<String, Value> = cases
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c.clone()))
        .collect();

    // The strict built-in rules, minus the two that carry state across cases (as in
    // the HTTP differential test; each stdio case is a fresh gateway process anyway).
    let audit = out_dir.join("audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let config = tmp.path().join("stdio.yaml");
    std::fs::write(
        &config,
        format!(
            "audit: {{ sink: file, file: \"{}\" }}\nlog: {{ level: warn }}\npolicies:\n  default:\n    rules:\n      rate.limit: \"off\"\n      repeat.after_decline: \"off\"\n",
            audit.display()
        ),
    )
    .expect("config");
    let server = format!(
        "{} {}",
        python.display(),
        diff_dir().join("hostile_stdio.py").display()
    );
    let direct = server.clone();
    let through = format!(
        "{} stdio --config {} -- {server}",
        env!("CARGO_BIN_EXE_elicitgate"),
        config.display()
    );
    assert!(
        !through.contains("  ") && !through.contains('"'),
        "paths with spaces are not supported by the oracles' command splitting: {through}"
    );

    let clients = [Client::Python, Client::Node];
    let runs = clients.iter().flat_map(|&client| {
        [Way::Direct, Way::Gateway].map(|way| {
            let (command, limits) = if way == Way::Direct {
                (&direct, direct_limits)
            } else {
                (&through, gateway_limits)
            };
            let log = out_dir.join(format!(
                "{}-{}.log",
                client.name(),
                if way == Way::Direct {
                    "direct"
                } else {
                    "gateway"
                }
            ));
            let (oracles, cases_file) = (&oracles, &cases_file);
            let target = Target::Command(command.clone());
            async move {
                let recs = run_oracle(oracles, client, &target, cases_file, limits, &log).await;
                ((client, way), recs)
            }
        })
    });
    let mut results: BTreeMap<(Client, Way), BTreeMap<String, Value>> =
        futures_util::future::join_all(runs)
            .await
            .into_iter()
            .collect();
    // A case that seems to hang through the gateway (and ends directly), or is cut short
    // there before its answer arrives, is run again alone with a longer bound: on a loaded
    // 2-core machine, 12 concurrent process trees can miss 6 s without any hang. Only a case
    // that fails again counts.
    for client in clients {
        let suspects: Vec<&Value> = meta
            .iter()
            .filter(|(name, _)| {
                let get = |way| results[&(client, way)].get(name.as_str());
                // Never a record that surfaced something: a rerun must not hide a leak. A case
                // cut short after the same elicitation surfaced both ways, before the answer
                // the client sent directly reached the server through the gateway, is timing
                // too (the answer itself is what the rerun measures).
                matches!((get(Way::Direct), get(Way::Gateway)), (Some(d), Some(g))
                    if (hung(g) && !hung(d) && g["surfaced"].as_array().is_none_or(|a| a.is_empty()))
                        || (g["call"] == "timeout"
                            && !hung(g)
                            && g["answer"].is_null()
                            && !d["sent"].is_null()
                            && g["surfaced"] == d["surfaced"]))
            })
            .map(|(_, case)| case)
            .collect();
        if suspects.is_empty() {
            continue;
        }
        let again = tmp.path().join(format!("again-{}.jsonl", client.name()));
        let lines: String = suspects.iter().map(|c| format!("{c}\n")).collect();
        std::fs::write(&again, lines).expect("write suspects");
        let log = out_dir.join(format!("{}-gateway-again.log", client.name()));
        let recs = run_oracle(
            &oracles,
            client,
            &Target::Command(through.clone()),
            &again,
            (1, 20, Duration::from_secs(600)),
            &log,
        )
        .await;
        results
            .get_mut(&(client, Way::Gateway))
            .expect("gateway records")
            .extend(recs);
    }
    let elapsed = started.elapsed();

    let mut raw = String::new();
    for ((client, way), recs) in &results {
        for rec in recs.values() {
            let _ = writeln!(raw, "{} {:?} {}", client.name(), way, rec);
        }
    }
    std::fs::write(out_dir.join("records.txt"), raw).expect("write records");

    let rec = |client: Client, way: Way, case: &str| results[&(client, way)].get(case);
    let mut table = format!(
        "{:<28} {:<4} {:^11} {:^11} {:^19}  server got (python | node)\n",
        "case", "kind", "python D/G", "node D/G", "ends D/G (py, node)"
    );
    let (mut leaks, mut mismatches, mut hangs, mut missing, mut answers_bad) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut not_exploitable = Vec::new();
    // Per client: [blocked applicable, blocked surfaced directly, blocked via gateway,
    //   controls applicable, controls surfaced directly, identical via gateway,
    //   answers checked, answers identical raw]
    let mut counts: BTreeMap<Client, [usize; 8]> = BTreeMap::new();
    for (name, m) in &meta {
        let blocked = m["blocked"].as_bool().unwrap_or(true);
        let strict = m["strict_control"].as_bool().unwrap_or(false);
        let mut flags: Vec<String> = Vec::new();
        let mut cells = Vec::new();
        let mut ends = Vec::new();
        let mut any_direct = false;
        for client in clients {
            let (d, g) = (
                rec(client, Way::Direct, name),
                rec(client, Way::Gateway, name),
            );
            let (sd, sg) = (seen(d), seen(g));
            cells.push(format!("{}/{}", mark(sd), mark(sg)));
            ends.push(format!("{}/{}", ending(d), ending(g)));
            if sd == Seen::Missing || sg == Seen::Missing {
                missing.push(format!("{name} ({})", client.name()));
                continue;
            }
            if sd == Seen::NotApplicable {
                continue;
            }
            let (d, g) = (d.unwrap(), g.unwrap());
            let c = counts.entry(client).or_default();
            // (c) never left hanging through the gateway where the case ends directly.
            if hung(g) && !hung(d) {
                flags.push(format!("HANG:{}", client.name()));
                hangs.push(format!("{name} ({}): gateway {g}", client.name()));
            }
            if blocked {
                c[0] += 1;
                if sd == Seen::Surfaced {
                    c[1] += 1;
                    any_direct = true;
                }
                if sg == Seen::Surfaced {
                    c[2] += 1;
                    flags.push(format!("LEAK:{}", client.name()));
                    leaks.push(format!("{name} → {}: {}", client.name(), g["surfaced"]));
                }
                continue;
            }
            c[3] += 1;
            if sd != Seen::Surfaced {
                continue;
            }
            c[4] += 1;
            if shown(d) == shown(g) {
                c[5] += 1;
            } else if strict {
                flags.push(format!("CONTROL-DIFFERS:{}", client.name()));
                mismatches.push(format!(
                    "{name} ({}): direct {} / gateway {} ({})",
                    client.name(),
                    d["surfaced"],
                    g["surfaced"],
                    g["detail"]
                ));
                continue;
            } else {
                flags.push(format!("differs(not strict):{}", client.name()));
                continue;
            }
            // (d) the client's answer reaches the server as sent.
            if strict && !d["sent"].is_null() {
                c[6] += 1;
                let sent = &g["sent"];
                let expected = if m["era"] == "modern" {
                    json!({"inputResponses": {"elicitation": sent}})
                } else {
                    sent.clone()
                };
                // Directly, a case cut short after its elicitation (a loaded machine) may end
                // before the server reports the answer: compared only where it did not.
                let direct_differs = d["call"] != "timeout" && d["answer"] != g["answer"];
                if g["answer"] != expected || direct_differs {
                    flags.push(format!("ANSWER-DIFFERS:{}", client.name()));
                    answers_bad.push(format!(
                        "{name} ({}): sent {sent}, server got directly {} / through the gateway {}",
                        client.name(),
                        d["answer"],
                        g["answer"]
                    ));
                } else if d["answer_raw"] == g["answer_raw"] {
                    c[7] += 1;
                } else {
                    flags.push(format!("answer-bytes-differ:{}", client.name()));
                }
            }
        }
        if blocked && !any_direct {
            not_exploitable.push(name.clone());
            flags.push("not exploitable".into());
        }
        let got: Vec<String> = clients
            .iter()
            .map(|&c| answer(rec(c, Way::Gateway, name)))
            .collect();
        let _ = writeln!(
            table,
            "{:<28} {:<4} {:^11} {:^11} {:^19}  {}  {}",
            name,
            if blocked { "BLK" } else { "ok" },
            cells[0],
            cells[1],
            ends.join(" "),
            got.join(" | "),
            flags.join(" ")
        );
    }
    let refusals = std::fs::read_to_string(&audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "message.refused")
        .fold(BTreeMap::<String, usize>::new(), |mut m, e| {
            *m.entry(e["reason"].as_str().unwrap_or("?").to_owned())
                .or_default() += 1;
            m
        });
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "stdio differential run: {} cases ({} blocked, {} allowed controls), {} run, {:.1}s",
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
             controls {} applicable, {} surfaced directly, {} identical through the gateway; \
             accepted answers checked {}, byte-identical {}",
            client.name(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7]
        );
    }
    let _ = writeln!(
        summary,
        "  not exploitable (no client surfaces them directly): {} blocked cases; \
         gateway refusals by reason (audit): {refusals:?}",
        not_exploitable.len()
    );
    let _ = writeln!(
        summary,
        "  D = the client spawns the hostile server, G = the client spawns `elicitgate stdio -- \
         <hostile server>`; ends: ok/error, cut (1.5 s after a surfaced elicitation), HANG (no \
         end within the bound); full table and records: {}",
        out_dir.display()
    );
    std::fs::write(out_dir.join("table.txt"), format!("{summary}\n{table}")).expect("write table");
    if large {
        println!("{summary}");
    } else {
        println!("{summary}\n{table}");
    }

    let must_surface: [(&str, &[Client]); 7] = [
        ("req.pw.-", &clients),
        ("req.url.-", &clients),
        ("req.okform.-", &clients),
        ("req.okurl.-", &clients),
        ("e42.url.-", &clients),
        ("ir.pw.-", &[Client::Python]),
        ("ir.okform.-", &[Client::Python]),
    ];
    let broken: Vec<String> = must_surface
        .iter()
        .flat_map(|(case, cs)| cs.iter().map(move |&c| (case, c)))
        .filter(|&(case, c)| seen(rec(c, Way::Direct, case)) != Seen::Surfaced)
        .map(|(case, c)| format!("{case} ({}): {:?}", c.name(), rec(c, Way::Direct, case)))
        .collect();
    assert_oracles_sound(&broken, &missing, &out_dir);
    let logs = out_dir.display();
    let mut failures = String::new();
    for (what, list) in [
        (
            "blocked elicitations reached an official client THROUGH THE GATEWAY",
            &leaks,
        ),
        (
            "allowed controls surfaced differently through the gateway",
            &mismatches,
        ),
        (
            "cases left a client hanging through the gateway (they end directly)",
            &hangs,
        ),
        (
            "client answers reached the server differently through the gateway",
            &answers_bad,
        ),
    ] {
        if !list.is_empty() {
            let _ = writeln!(failures, "{} {what}:\n  {}", list.len(), list.join("\n  "));
        }
    }
    assert!(
        failures.is_empty(),
        "{failures}\n(table in {logs}/table.txt)"
    );
}
