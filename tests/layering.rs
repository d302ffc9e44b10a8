//! The layering of `src/` (docs/architecture: imports point down only). Reads every module's
//! `crate::…` paths (test code excluded) and fails when a module imports one of a layer at or
//! above its own. A new top-level module must be given a layer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules by layer; a module may import only modules of lower layers.
const LAYERS: &[(&str, u8)] = &[
    // Leaves: wire formats and primitives.
    ("text", 0),
    ("metrics", 0),
    ("tls", 0),
    ("mcp", 0),
    // Request trace context, spans and verdict events (OpenTelemetry API only).
    ("spans", 0),
    // OpenTelemetry export (uses the TLS client configuration and the settings' types only).
    ("telemetry", 4),
    // The rule vocabulary and the secret lexicon, below both the policy and the decision.
    ("rules", 1),
    ("lexicon", 1),
    ("audit", 1),
    ("error", 1),
    ("elicitation", 1),
    // The compiled policy, then the pure decision on top of it.
    ("policy", 2),
    ("settings", 3),
    ("inspect", 3),
    // Decisions with state; never I/O (the transports implement its traits).
    ("enforce", 4),
    // Who is calling: token and header verification, JWKS refresh.
    ("identity", 4),
    // Backends of enforcement's interfaces (state on Redis), doing the I/O enforcement never does.
    ("state_redis", 5),
    // Transports, and what runs them.
    ("proxy", 5),
    ("admin", 6),
    ("reload", 6),
    // What a reload changes in the running transports (routes, certificate, policies).
    ("live", 6),
    ("stdio", 7),
    ("inspect_cli", 7),
    ("report", 7),
    ("demo", 7),
];

/// Known upward edges, each with the issue that removes it. Nothing else may be added here.
const KNOWN_EXCEPTIONS: &[(&str, &str)] = &[];

fn module_of(path: &Path, src: &Path) -> Option<String> {
    let rel = path.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_file(&path) {
            out.push(path);
        }
    }
}

/// Unit-test files included with `#[path]` (`x_tests.rs`, `tests.rs`).
fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// `crate::<module>` references outside comments and test code.
fn imports(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
        // `use crate::{a, b::c}` groups.
        if let Some(at) = code.find("crate::{") {
            for part in code[at + "crate::{".len()..].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

#[test]
fn imports_point_down_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut modules = BTreeSet::new();
    for file in files {
        let Some(module) = module_of(&file, &src) else {
            continue;
        };
        modules.insert(module.clone());
        let Some(&own) = layers.get(module.as_str()) else {
            violations.push(format!(
                "{module} ({}) has no layer in tests/layering.rs",
                file.display()
            ));
            continue;
        };
        for target in imports(&std::fs::read_to_string(&file).unwrap()) {
            // Not a module (a root item such as `crate::Shutdown` or a root function).
            let Some(&theirs) = layers.get(target.as_str()) else {
                continue;
            };
            if target == module || theirs < own {
                continue;
            }
            if KNOWN_EXCEPTIONS.contains(&(module.as_str(), target.as_str())) {
                continue;
            }
            violations.push(format!(
                "{} (layer {own}) imports {target} (layer {theirs})",
                file.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
    for (module, _) in LAYERS {
        assert!(
            modules.contains(*module),
            "{module} is listed but does not exist"
        );
    }
}

#[test]
fn the_reader_sees_grouped_and_nested_paths() {
    let text = "use crate::{audit::X, mcp};\nfn f() { crate::proxy::y(); } // crate::demo\n#[cfg(test)]\nuse crate::stdio;";
    let found = imports(text);
    assert_eq!(
        found,
        ["audit", "mcp", "proxy"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
