//! The docs stay true to the product: the configuration and policy references name every key
//! the gateway reads and no key it does not; relative links and the repository paths a doc
//! names exist; product docs describe the product as it is, not the project's history.
//!
//! The keys are not listed by hand: each settings section is asked by serde itself. A section
//! with `deny_unknown_fields` answers an unknown key with "unknown field `x`, expected one of
//! `a`, `b`…", and a key that is itself a section answers the same one level down, so the walk
//! finds every key, at any depth, the day it is added.

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const PROBE: &str = "\u{1}probe";

fn doc(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `{k1: {k2: … {last: inner}}}`.
fn nest(path: &[String], inner: Value) -> Value {
    path.iter().rev().fold(inner, |acc, key| {
        let mut m = Map::new();
        m.insert(key.clone(), acc);
        Value::Object(m)
    })
}

/// The keys serde lists for the section at `path` of `T`, or `None` when it is not a section.
fn section_keys<T: DeserializeOwned>(path: &[String]) -> Option<Vec<String>> {
    let probe = nest(path, json!({ PROBE: 0 }));
    let error = serde_json::from_value::<T>(probe).err()?.to_string();
    if !error.contains(&format!("unknown field `{PROBE}`")) {
        return None;
    }
    let (_, list) = error.split_once("expected ")?;
    Some(
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// Every leaf key of `T` under `prefix`, dotted (`syslog.address`).
fn leaf_keys<T: DeserializeOwned>(prefix: &str) -> BTreeSet<String> {
    fn walk<T: DeserializeOwned>(path: &mut Vec<String>, prefix: &str, out: &mut BTreeSet<String>) {
        let keys = section_keys::<T>(path).unwrap_or_else(|| panic!("{path:?} is not a section"));
        for key in keys {
            path.push(key);
            if section_keys::<T>(path).is_some() {
                walk::<T>(path, prefix, out);
            } else {
                out.insert(format!("{prefix}{}", path.join(".")));
            }
            path.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk::<T>(&mut Vec::new(), prefix, &mut out);
    out
}

/// Every key of the process configuration, as the reference writes it.
fn configuration_keys() -> BTreeSet<String> {
    use elicitgate::settings::*;
    let mut keys = BTreeSet::new();
    for &top in TOP_LEVEL_KEYS {
        let p = format!("{top}.");
        let section = match top {
            "tls" => leaf_keys::<TlsSettings>(&p),
            "limits" => leaf_keys::<Limits>(&p),
            "timeouts" => leaf_keys::<Timeouts>(&p),
            "log" => leaf_keys::<LogSettings>(&p),
            "audit" => leaf_keys::<AuditSettings>(&p),
            "state" => leaf_keys::<StateSettings>(&p),
            "identity" => leaf_keys::<IdentitySettings>(&p),
            "telemetry" => leaf_keys::<TelemetrySettings>(&p),
            "routes" => leaf_keys::<RouteSettings>("routes[]."),
            // Each policy's fields are the policy reference's (checked below).
            "policies" => BTreeSet::from(["policies.<name>".to_string()]),
            "public_url" | "listen" | "admin_listen" | "workers" => BTreeSet::from([top.into()]),
            other => panic!("top-level key `{other}` is new: teach this test its section type"),
        };
        keys.extend(section);
    }
    keys
}

/// The keys named in the first cell of each row of the first table after `heading` whose
/// header starts with `header`. A cell may name several keys: `` `a.b`, `c` `` is `a.b` and
/// `a.c` (a key without a dot is relative to the first key's parent).
fn documented_keys(doc: &str, heading: &str, header: &str) -> BTreeSet<String> {
    let section = doc
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no section {heading}"));
    let mut keys = BTreeSet::new();
    for row in section
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
    {
        let first = row
            .trim_start_matches('|')
            .split(" | ")
            .next()
            .unwrap_or("");
        let named: Vec<&str> = first.split('`').skip(1).step_by(2).collect();
        let Some(head) = named.first() else { continue };
        let parent = head.rsplit_once('.').map(|(p, _)| p).unwrap_or("");
        for key in &named {
            if key.contains('.') || parent.is_empty() {
                keys.insert(key.to_string());
            } else {
                keys.insert(format!("{parent}.{key}"));
            }
        }
    }
    keys
}

fn assert_same(what: &str, read: &BTreeSet<String>, documented: &BTreeSet<String>) {
    let missing: Vec<_> = read.difference(documented).collect();
    let stale: Vec<_> = documented.difference(read).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{what}: keys missing from the reference {missing:?}; rows naming keys that do not exist {stale:?}"
    );
}

#[test]
fn the_configuration_reference_names_every_key_and_only_real_ones() {
    let read = configuration_keys();
    assert!(
        read.contains("audit.syslog.max_message"),
        "the walk reaches nested sections"
    );
    assert!(read.contains("routes[].upstream"));
    let mut documented = documented_keys(
        &doc("docs/configuration.md"),
        "# Configuration reference",
        "| Key |",
    );
    // `policies.<name>.tools` is a pointer row into the policy reference.
    documented.remove("policies.<name>.tools");
    assert_same("docs/configuration.md", &read, &documented);
}

#[test]
fn the_policy_reference_names_every_field_and_only_real_ones() {
    use elicitgate_core::policy::model::{RawPolicy, RawToolOverride};
    let policy = doc("docs/policy.md");
    let read = leaf_keys::<RawPolicy>("");
    let documented: BTreeSet<String> = documented_keys(&policy, "## Fields", "| Field |")
        .into_iter()
        // `rules.<rule id>` documents the map `rules`.
        .map(|k| {
            k.strip_suffix(".<rule id>")
                .map(str::to_string)
                .unwrap_or(k)
        })
        .collect();
    assert_same("docs/policy.md Fields", &read, &documented);
    // An override's `modes` and `url` take the policy's fields, documented once above.
    let read: BTreeSet<String> = section_keys::<RawToolOverride>(&[])
        .expect("a tool override is a section")
        .into_iter()
        .collect();
    let documented = documented_keys(&policy, "## Per-tool overrides", "| Field |");
    assert_same("docs/policy.md Per-tool overrides", &read, &documented);
}

/// The product's docs: what a user reads.
fn product_docs() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "BENCHMARKS.md",
        "CONTRIBUTING.md",
        "SECURITY.md",
    ]
    .iter()
    .map(|p| Path::new(ROOT).join(p))
    .collect();
    for dir in ["docs", "docs/research", "deploy/kubernetes", "tests/peers"] {
        let Ok(entries) = std::fs::read_dir(Path::new(ROOT).join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "md") {
                docs.push(entry.path());
            }
        }
    }
    docs.sort();
    docs
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(doc: &str) -> BTreeSet<String> {
    let mut in_code = false;
    doc.lines()
        .filter(|l| {
            if l.starts_with("```") {
                in_code = !in_code;
            }
            !in_code && l.starts_with('#')
        })
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

#[test]
fn relative_links_and_named_paths_resolve() {
    let mut broken = Vec::new();
    for doc_path in product_docs() {
        let doc = std::fs::read_to_string(&doc_path).unwrap();
        let dir = doc_path.parent().unwrap();
        let name = doc_path.strip_prefix(ROOT).unwrap().display().to_string();
        // Markdown links: ](target) outside code spans.
        for (i, _) in doc.match_indices("](") {
            let rest = &doc[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let linked = if file.is_empty() {
                doc_path.clone()
            } else {
                dir.join(file)
            };
            if !linked.exists() {
                broken.push(format!("{name}: link to {target}: no such file"));
                continue;
            }
            if !fragment.is_empty() && linked.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&linked).unwrap();
                if !anchors(&text).contains(fragment) {
                    broken.push(format!("{name}: link to {target}: no such heading"));
                }
            }
        }
        // Repository paths in code spans: `src/…`, `tests/it/…`, `deploy/…`.
        for span in doc.split('`').skip(1).step_by(2) {
            let roots = [
                "src/",
                "crates/",
                "tests/",
                "deploy/",
                "config/",
                "bench/",
                "benches/",
                "fuzz/",
                "docs/",
                ".ci/",
                "examples/",
            ];
            if span.contains(char::is_whitespace)
                || span.contains(['*', '<', '{', '$', '…'])
                || !roots.iter().any(|r| span.starts_with(r))
            {
                continue;
            }
            let path = span.split("::").next().unwrap_or(span);
            let path = path.split(['#', ':']).next().unwrap_or(path);
            if !Path::new(ROOT).join(path).exists() {
                broken.push(format!("{name}: names `{span}`, which does not exist"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn product_docs_describe_the_product_not_its_history() {
    // Built from parts so this file does not match itself.
    let words = [["iss", "ue"].concat(), ["rou", "nd"].concat()];
    let mut found = Vec::new();
    for doc_path in product_docs() {
        let doc = std::fs::read_to_string(&doc_path).unwrap();
        let name = doc_path.strip_prefix(ROOT).unwrap().display().to_string();
        for (n, line) in doc.lines().enumerate() {
            let lower = line.to_lowercase();
            for word in &words {
                for (i, _) in lower.match_indices(word.as_str()) {
                    let after = lower[i + word.len()..].trim_start_matches([' ', '#', 's']);
                    if after.starts_with(|c: char| c.is_ascii_digit()) {
                        found.push(format!("{name}:{}: {line}", n + 1));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "history in product docs:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_anchor_rule_matches_githubs() {
    assert_eq!(
        anchor(" Bounds: what a peer sees when it reaches one"),
        "bounds-what-a-peer-sees-when-it-reaches-one"
    );
    assert_eq!(
        anchor("Secret detection (`form.secret`)"),
        "secret-detection-formsecret"
    );
    assert_eq!(
        anchor("Reload, and rolling back"),
        "reload-and-rolling-back"
    );
}
