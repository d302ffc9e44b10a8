//! The layering of the gateway crate (docs/architecture.md): what the compiler cannot see.
//!
//! The compiler already enforces the biggest rule: everything pure lives in the
//! `elicitgate-core` crate, which has no I/O dependency (checked here too, on its manifest),
//! so a core module cannot reach tokio, hyper, tracing or redis at all. Inside the gateway
//! crate this test enforces:
//!
//! - **imports point down only**: every module's paths to other top-level modules —
//!   `crate::x`, grouped `crate::{x, y::z}` (over several lines too) and `super::…` chains
//!   that climb out of the module (`super::super::x`) — name a module of a lower layer;
//! - **`lib.rs` is a map**: it declares modules and nothing else, so nothing can be
//!   re-exported through it to dodge the layers;
//! - **enforcement does no I/O and knows no transport**: no sockets, files, processes, HTTP
//!   status codes or methods, whatever the spelling (`tokio::net::X`, `tokio::{net, …}`).
//!
//! Each check is a function of file text, and `the_checks_catch_*` tests prove each one fails
//! on the hole it exists to close. A new top-level module must be given a layer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules of the gateway crate by layer; a module may import only modules of
/// lower layers.
const LAYERS: &[(&str, u8)] = &[
    // Leaves: shutdown signal, Prometheus families, rustls configuration, request spans, and
    // the reading stages that touch HTTP headers and bodies.
    ("shutdown", 0),
    ("metrics", 0),
    ("tls", 0),
    ("spans", 0),
    ("mcp", 0),
    // The one gateway error type; redacted audit events and their sinks.
    ("error", 1),
    ("audit", 1),
    // The configuration (validates TLS files and syslog settings with their owners' code).
    ("settings", 2),
    // What enforcement remembers, in memory or on Redis.
    ("state", 3),
    // Decisions with state (never I/O: the transports implement its traits); who is calling;
    // OpenTelemetry export.
    ("enforce", 4),
    ("identity", 4),
    ("telemetry", 4),
    // The HTTP transport.
    ("proxy", 5),
    // The admin listener, and what a reload changes in the running transports.
    ("admin", 6),
    ("live", 6),
    // When to reload.
    ("reload", 7),
    // Building and running the whole gateway.
    ("start", 8),
    // Commands: the stdio transport, `inspect`, `report`, `demo`.
    ("stdio", 9),
    ("inspect_cli", 9),
    ("report", 9),
    ("demo", 9),
    // `test`: cases judged as `inspect` judges them.
    ("policy_test", 10),
];

/// Paths enforcement must never name: sockets, files, processes, and the HTTP transport's own
/// vocabulary (status codes and methods belong to the carriers' mappings).
const NO_IO_IN_ENFORCE: &[&str] = &[
    "tokio::net",
    "tokio::fs",
    "tokio::process",
    "tokio::io",
    "std::net::TcpStream",
    "std::net::TcpListener",
    "std::net::UdpSocket",
    "std::fs",
    "std::process",
    "hyper",
    "redis",
    "StatusCode",
    "http::Method",
    "Method::",
];

/// Dependencies the pure core crate must never have.
const NOT_IN_CORE: &[&str] = &[
    "tokio",
    "hyper",
    "hyper-util",
    "http",
    "http-body",
    "tracing",
    "redis",
    "prometheus",
    "opentelemetry",
    "reqwest",
    "mio",
    "socket2",
    "nix",
    "async-compression",
    "futures-util",
];

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file's module path inside `src/` (`src/enforce/answers.rs` → `enforce::answers`);
/// `None` for the crate roots.
fn module_path(path: &Path, src: &Path) -> Option<Vec<String>> {
    let rel = path.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    match parts.as_slice() {
        [] => None,
        [only] if only == "lib" || only == "main" => None,
        _ => Some(parts),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_file(&path) {
            out.push(path);
        }
    }
}

/// Unit-test files (`foo/tests.rs`, the one convention).
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
}

/// The code of a file without comments, string literals and its test module (everything from
/// the first `#[cfg(test)]`).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
                out.push_str("\"\"");
            }
            // A char literal ('"', '{'): skipped so it opens no string or group. Lifetimes
            // ('a) are left alone: they are followed by neither an escape nor a closing quote.
            '\'' => {
                let mut ahead = chars.clone();
                let first = ahead.next();
                let literal = match first {
                    Some('\\') => true,
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if literal {
                    for c in chars.by_ref() {
                        if c == '\'' {
                            break;
                        }
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn ident(rest: &str) -> &str {
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The first segment of every item of a `{…}` group starting at `group` (just after `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                start = false;
                let name = ident(&group[i..]);
                if !name.is_empty() {
                    heads.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    heads
}

/// The top-level modules of this crate that the code of module `own` (its module path) names,
/// through `crate::` paths or `super::` chains that climb to the crate root.
fn imports(own: &[String], code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        let (root_reached, after) = if boundary && rest.starts_with("crate::") {
            (true, "crate::".len())
        } else if boundary && rest.starts_with("super::") {
            let mut supers = 0;
            let mut at = 0;
            while code[i + at..].starts_with("super::") {
                supers += 1;
                at += "super::".len();
            }
            (supers >= own.len(), at)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        if root_reached {
            let tail = code[i + after..].trim_start();
            if let Some(group) = tail.strip_prefix('{') {
                found.extend(group_heads(group));
            } else {
                let name = ident(tail);
                if !name.is_empty() {
                    found.insert(name.to_owned());
                }
            }
        }
        i += after;
    }
    found
}

/// What is wrong with `lib.rs`: anything but module declarations, attributes and docs.
fn lib_is_not_a_map(text: &str) -> Vec<String> {
    code_of(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("#!["))
        .filter(|l| !(l.starts_with("pub mod ") || l.starts_with("mod ")) || !l.ends_with(';'))
        .map(|l| format!("lib.rs is not only a module map: `{l}`"))
        .collect()
}

/// Paths of [`NO_IO_IN_ENFORCE`] that `code` names, spelled whole or through a group
/// (`tokio::{net, …}`).
fn io_in(code: &str) -> Vec<String> {
    let mut named: BTreeSet<String> = BTreeSet::new();
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    for forbidden in NO_IO_IN_ENFORCE {
        let bytes = flat.as_bytes();
        let mut from = 0;
        while let Some(at) = flat[from..].find(forbidden) {
            let at = from + at;
            let before_ok =
                at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            let end = at + forbidden.len();
            let after_ok = end >= flat.len()
                || forbidden.ends_with("::")
                || !(bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_');
            if before_ok && after_ok {
                named.insert((*forbidden).to_owned());
            }
            from = end;
        }
    }
    // Groups: `tokio::{io::AsyncRead, net}` names tokio::io and tokio::net.
    for krate in ["tokio", "std", "http"] {
        let open = format!("{krate}::{{");
        let mut from = 0;
        while let Some(at) = flat[from..].find(&open) {
            let start = from + at + open.len();
            for head in group_heads(&flat[start..]) {
                let path = format!("{krate}::{head}");
                if NO_IO_IN_ENFORCE
                    .iter()
                    .any(|f| *f == path || f.starts_with(&format!("{path}::")))
                    || (krate == "http" && (head == "StatusCode" || head == "Method"))
                {
                    named.insert(path);
                }
            }
            from = start;
        }
    }
    named.into_iter().collect()
}

/// Dependencies of the core crate's manifest that [`NOT_IN_CORE`] forbids.
fn core_io_dependencies(manifest: &str) -> Vec<String> {
    let mut section = String::new();
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if NOT_IN_CORE.contains(&name)
            || name.starts_with("opentelemetry")
            || name.starts_with("tokio")
        {
            found.push(name.to_owned());
        }
    }
    found
}

#[test]
fn imports_point_down_only() {
    let src = manifest_dir().join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut modules = BTreeSet::new();
    for file in files {
        let Some(path) = module_path(&file, &src) else {
            continue;
        };
        let module = path[0].clone();
        modules.insert(module.clone());
        let Some(&own) = layers.get(module.as_str()) else {
            violations.push(format!(
                "{module} ({}) has no layer in tests/it/layering.rs",
                file.display()
            ));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for target in imports(&path, &code) {
            // Not a module (a root item, or a name the compiler would refuse anyway).
            let Some(&theirs) = layers.get(target.as_str()) else {
                continue;
            };
            if target == module || theirs < own {
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
fn lib_rs_is_only_the_module_map() {
    let text = std::fs::read_to_string(manifest_dir().join("src/lib.rs")).unwrap();
    let problems = lib_is_not_a_map(&text);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every top-level module has a layer, and every layer names a declared module.
    let declared: BTreeSet<String> = code_of(&text)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_owned())
        .collect();
    let listed: BTreeSet<String> = LAYERS.iter().map(|(m, _)| m.to_string()).collect();
    assert_eq!(declared, listed, "lib.rs's modules and LAYERS differ");
}

#[test]
fn enforcement_does_no_io_and_knows_no_transport() {
    let mut files = Vec::new();
    rust_files(&manifest_dir().join("src/enforce"), &mut files);
    assert!(files.len() > 5, "{files:?}");
    let mut violations = Vec::new();
    for file in files {
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for named in io_in(&code) {
            violations.push(format!("{} names {named}", file.display()));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_core_crate_has_no_io_dependency() {
    let manifest = std::fs::read_to_string(manifest_dir().join("crates/core/Cargo.toml")).unwrap();
    let found = core_io_dependencies(&manifest);
    assert!(found.is_empty(), "elicitgate-core depends on {found:?}");
}

fn own(path: &str) -> Vec<String> {
    path.split("::").map(str::to_owned).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_reader_sees_grouped_nested_and_multiline_paths() {
    let text = "use crate::{audit::X, mcp,\n    proxy::{a, b}};\nfn f() { crate::demo::y(); } // crate::stdio\nconst S: &str = \"crate::reload\";\n#[cfg(test)]\nuse crate::start;";
    assert_eq!(
        imports(&own("enforce::answers"), &code_of(text)),
        set(&["audit", "demo", "mcp", "proxy"])
    );
}

#[test]
fn the_checks_catch_super_super_imports() {
    // From enforce/answers.rs, `super::super::proxy` is `crate::proxy`.
    let code = code_of("use super::super::proxy::respond;\nuse super::record::Recorder;");
    assert_eq!(imports(&own("enforce::answers"), &code), set(&["proxy"]));
    // From enforce/mod.rs one `super` is enough; grouped, too.
    let code = code_of("use super::{proxy, stdio::refusal_line};");
    assert_eq!(imports(&own("enforce"), &code), set(&["proxy", "stdio"]));
    // Inside the module it is no import at all.
    let code = code_of("use super::judge::ServerVerdict;");
    assert!(imports(&own("enforce::server"), &code).is_empty());
}

#[test]
fn the_checks_catch_re_exports_through_lib_rs() {
    assert!(lib_is_not_a_map("//! map\n#![forbid(unsafe_code)]\npub mod a;\nmod b;\n").is_empty());
    for hole in [
        "pub mod a;\npub use a::Thing;\n",
        "pub mod a;\npub use crate::proxy as p;\n",
        "pub mod a;\npub fn start() {}\n",
        "pub mod a {\n}\n",
    ] {
        assert!(!lib_is_not_a_map(hole).is_empty(), "{hole}");
    }
}

#[test]
fn the_checks_catch_io_in_enforcement() {
    for hole in [
        "use tokio::net::TcpStream;",
        "let s = tokio::net::TcpStream::connect(a);",
        "use tokio::{net, sync::Mutex};",
        "use tokio::{\n    io::AsyncWriteExt,\n    sync,\n};",
        "use std::fs::File;",
        "use http::{HeaderMap, StatusCode};",
        "fn f(m: &http::Method) {}",
        "if *method == Method::POST {}",
        "use hyper::body::Incoming;",
    ] {
        assert!(!io_in(&code_of(hole)).is_empty(), "{hole}");
    }
    for fine in [
        "use tokio::sync::Mutex;",
        "use std::net::IpAddr;",
        "use http::HeaderMap;",
        "// tokio::net in a comment",
        "let s = \"tokio::net\";",
        "struct Hyperlink;",
    ] {
        assert!(
            io_in(&code_of(fine)).is_empty(),
            "{fine}: {:?}",
            io_in(&code_of(fine))
        );
    }
}

#[test]
fn the_checks_catch_io_dependencies_of_the_core() {
    let clean = "[package]\nname = \"x\"\n[dependencies]\nserde_json.workspace = true\n[dev-dependencies]\ntokio = \"1\"\n";
    assert!(core_io_dependencies(clean).is_empty());
    for hole in [
        "[dependencies]\ntokio = { version = \"1\" }\n",
        "[dependencies]\ntracing.workspace = true\n",
        "[dependencies]\nhyper = \"1\"\n",
        "[dependencies]\nopentelemetry_sdk = \"0.33\"\n",
    ] {
        assert!(!core_io_dependencies(hole).is_empty(), "{hole}");
    }
}
