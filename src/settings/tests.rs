use super::*;

fn load(yaml: &str) -> Result<Settings, ConfigErrors> {
    Settings::from_yaml(yaml, Path::new("."))
}

const MINIMAL: &str = r#"
listen: "127.0.0.1:8080"
admin_listen: "127.0.0.1:9464"
routes:
  - name: demo
    path: /mcp
    upstream: "http://127.0.0.1:3001/mcp"
"#;

#[test]
fn minimal_config_gets_defaults() {
    let s = load(MINIMAL).unwrap();
    assert_eq!(s.routes.len(), 1);
    assert_eq!(s.limits.max_request_body, ByteSize::mib(4));
    assert_eq!(s.timeouts.upstream_connect, Duration::from_secs(5));
    assert!(s.tls.is_none());
}

#[test]
fn workers_default_to_one_per_cpu_and_are_bounded() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(load(MINIMAL).unwrap().workers, cpus);
    assert_eq!(
        load(&format!("{MINIMAL}workers: 0\n")).unwrap().workers,
        cpus
    );
    assert_eq!(load(&format!("{MINIMAL}workers: 3\n")).unwrap().workers, 3);
    let all = load(&format!("{MINIMAL}workers: 5000\n"))
        .unwrap_err()
        .0
        .join("\n");
    assert!(all.contains("workers: at most 1024"), "{all}");
}

#[test]
fn units_are_parsed() {
    let yaml = format!(
        "{MINIMAL}limits: {{ max_request_body: 64KiB, max_sse_event: 1MB }}\ntimeouts: {{ upstream_first_byte: 250ms, stream_idle: 2m }}\n"
    );
    let s = load(&yaml).unwrap();
    assert_eq!(s.limits.max_request_body.as_u64(), 64 * 1024);
    assert_eq!(s.limits.max_sse_event.as_u64(), 1_000_000);
    assert_eq!(s.timeouts.upstream_first_byte, Duration::from_millis(250));
    assert_eq!(s.timeouts.stream_idle, Duration::from_secs(120));
}

#[test]
fn every_error_is_reported_at_once() {
    let yaml = r#"
listen: "not an address"
admin_listen: "127.0.0.1:9464"
colour: blue
limits: { max_request_bodyy: 1KiB, max_connections: many, max_sse_event: huge }
timeouts: { upstream_connect: soon, stream_idle: later }
log: { format: xml, level: "info[" }
routes:
  - name: "bad name!"
    path: mcp
    upstream: "ftp://example.com/"
  - name: dup
    path: /a
    upstream: "http://127.0.0.1:1/"
    extra: 1
  - name: ok
    path: /b
    upstream: "http://127.0.0.1:1/"
  - name: ok
    path: /b
    upstream: "http://127.0.0.1:1/"
"#;
    let errors = load(yaml).unwrap_err().0;
    let all = errors.join("\n");
    for needle in [
        "unknown key `colour`",
        "listen:",
        "max_request_bodyy",
        "max_connections",
        "max_sse_event",
        "timeouts:",
        "upstream_connect",
        "stream_idle",
        "log:",
        "log.level",
        "routes[0].name",
        "routes[0].path",
        "routes[0].upstream",
        "routes[1]: unknown field `extra`",
        "routes[3]: duplicate name `ok`",
        "routes[3]: duplicate path `/b`",
    ] {
        assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
    }
}

#[test]
fn missing_files_and_routes_are_errors() {
    let yaml = "listen: 127.0.0.1:1\nadmin_listen: 127.0.0.1:2\ntls: { cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem }\n";
    let all = load(yaml).unwrap_err().0.join("\n");
    assert!(all.contains("/nonexistent/c.pem"));
    // Without routes the file is valid for stdio and inspect, with a warning.
    let s = load("policies: {}\n").unwrap();
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("routes: none configured")));
    assert_eq!(s.listen.port(), 8080);
}

#[test]
fn conflicting_listeners_and_unwritable_audit_paths_are_errors() {
    let all = load("listen: 0.0.0.0:8080\nadmin_listen: 127.0.0.1:8080\n")
        .unwrap_err()
        .0
        .join("\n");
    assert!(
        all.contains("admin_listen: 127.0.0.1:8080 conflicts with listen"),
        "{all}"
    );
    assert!(load("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n").is_ok());
    let all = load("audit: { sink: file, file: /nonexistent-dir/audit.jsonl }\n")
        .unwrap_err()
        .0
        .join("\n");
    assert!(
        all.contains("audit.file: directory `/nonexistent-dir`"),
        "{all}"
    );
    // Every problem at once: both of them in one load.
    let all = load(
        "listen: 127.0.0.1:7000\nadmin_listen: 127.0.0.1:7000\naudit: { sink: file, file: /nonexistent-dir/a.jsonl }\n",
    )
    .unwrap_err()
    .0;
    assert_eq!(all.len(), 2, "{all:?}");
}

#[test]
fn example_configs_in_the_repo_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Settings::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
    }
    assert!(seen > 0);
}

#[test]
fn state_and_identity_default_to_one_process_and_nobody_verified() {
    let s = load(MINIMAL).unwrap();
    assert_eq!(s.state.backend, StateBackend::Memory);
    assert_eq!(s.identity.mode, IdentityMode::None);
    let redis = load(&format!(
        "{MINIMAL}state:\n  backend: redis\n  redis: {{ url: \"redis://127.0.0.1:6379/0\", timeout: 100ms }}\n"
    ))
    .unwrap();
    assert_eq!(redis.state.redis.timeout, Duration::from_millis(100));
}

#[test]
fn state_and_identity_errors_are_all_reported_at_once() {
    let all = load(&format!(
        "{MINIMAL}state:\n  backend: redis\n  redis: {{ key_prefix: \"a{{b}}\", connections: 0 }}\n\
         identity:\n  mode: jwt\n  trusted_proxies: [\"10.0.0.0/33\"]\n  jwt: {{ algorithms: [HS256] }}\n"
    ))
    .unwrap_err()
    .0
    .join("\n");
    for expected in [
        "state.redis: `backend: redis` needs `url`",
        "state.redis.key_prefix: must not contain",
        "state.redis.connections: 1 to 64",
        "identity.trusted_proxies: `10.0.0.0/33`",
        "identity.jwt: `mode: jwt` needs `jwks_file` or `jwks_url`",
        "identity.jwt.issuer: required",
        "identity.jwt.audience: at least one",
        "identity.jwt.algorithms: `HS256` is not one of",
    ] {
        assert!(all.contains(expected), "missing `{expected}` in:\n{all}");
    }
    let unknown = load(&format!("{MINIMAL}state:\n  backnd: redis\n"))
        .unwrap_err()
        .0
        .join("\n");
    assert!(unknown.contains("backnd"), "{unknown}");
    let header = load(&format!("{MINIMAL}identity:\n  mode: header\n"))
        .unwrap_err()
        .0
        .join("\n");
    assert!(
        header.contains("`mode: header` needs the proxies"),
        "{header}"
    );
    let bad_url = load(&format!(
        "{MINIMAL}state:\n  backend: redis\n  redis: {{ url: \"http://x\" }}\n"
    ))
    .unwrap_err()
    .0
    .join("\n");
    assert!(
        bad_url.contains("not a redis:// or rediss:// URL"),
        "{bad_url}"
    );
    assert!(
        !bad_url.contains("http://x"),
        "URLs may hold credentials: never echoed"
    );
}

#[test]
fn audit_sinks_are_one_a_list_or_comma_separated() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let s = load(&format!(
        "audit:\n  sink: [file, syslog]\n  file: {}\n  rotate_every: 24h\n  syslog: {{ address: \"127.0.0.1:514\", transport: tcp }}\n",
        file.display()
    ))
    .unwrap();
    assert_eq!(
        s.audit.sink.0,
        vec![AuditSinkKind::File, AuditSinkKind::Syslog]
    );
    assert_eq!(s.audit.rotate_every, Some(Duration::from_secs(86_400)));
    let syslog = s.audit.syslog.clone().unwrap();
    assert_eq!(syslog.facility, "local0");
    assert_eq!(syslog.app_name, "elicitgate");
    assert_eq!(syslog.max_message, ByteSize::kib(8));
    let audit_warnings =
        |s: &Settings| s.warnings.iter().filter(|w| w.starts_with("audit")).count();
    assert_eq!(audit_warnings(&s), 0, "{:?}", s.warnings);
    // The old single value keeps working, and so does `off`.
    assert_eq!(
        load("audit: { sink: off }\n").unwrap().audit.sink.0,
        vec![AuditSinkKind::Off]
    );
    assert_eq!(load("").unwrap().audit.sink.0, vec![AuditSinkKind::Stdout]);
    let s =
        load("audit: { sink: \"stdout,syslog\", syslog: { address: \"[::1]:6514\" } }\n").unwrap();
    assert_eq!(
        s.audit.sink.0,
        vec![AuditSinkKind::Stdout, AuditSinkKind::Syslog]
    );
    // Settings that do nothing are warned about.
    let s = load("audit: { rotate_every: 1h, syslog: { address: \"127.0.0.1:514\" } }\n").unwrap();
    assert_eq!(audit_warnings(&s), 2, "{:?}", s.warnings);
}

#[test]
fn audit_sink_problems_are_all_reported_at_once() {
    let all = load(
        "audit:\n  sink: [syslog, file, syslog]\n  file: /nonexistent-dir/a.jsonl\n  rotate_every: 0s\n  syslog:\n    address: \"syslog.example:514\"\n    facility: local9\n    app_name: \"my app\"\n    max_message: 100KiB\n    colour: blue\n",
    )
    .unwrap_err()
    .0
    .join("\n");
    // Unknown keys are rejected on their own (the section does not parse).
    assert!(all.contains("colour"), "{all}");
    let all = load(
        "audit:\n  sink: [syslog, file, syslog]\n  file: /nonexistent-dir/a.jsonl\n  rotate_every: 0s\n  syslog:\n    address: \"syslog.example:514\"\n    facility: local9\n    app_name: \"my app\"\n    max_message: 100KiB\n",
    )
    .unwrap_err()
    .0;
    let text = all.join("\n");
    for expected in [
        "audit.sink: `syslog` listed twice",
        "audit.file: directory `/nonexistent-dir`",
        "audit.rotate_every: must be at least 1s",
        "audit.syslog.address: `syslog.example:514` is not an `IP:port` address",
        "audit.syslog.facility: unknown `local9`",
        "audit.syslog.app_name: `my app` must be",
        "audit.syslog.max_message: must be between 480 and 65507 bytes over udp",
    ] {
        assert!(text.contains(expected), "missing {expected}: {text}");
    }
    assert_eq!(all.len(), 7, "{all:?}");
    for (yaml, expected) in [
        ("audit: { sink: [off, stdout] }", "`off` cannot be combined"),
        ("audit: { sink: [] }", "audit.sink: empty"),
        ("audit: { sink: kafka }", "unknown sink `kafka`"),
        ("audit: { sink: syslog }", "audit.syslog: required"),
        ("audit: { sink: syslog, syslog: { transport: tcp } }", "audit.syslog.address: required"),
        (
            "audit: { sink: syslog, syslog: { address: \"127.0.0.1:514\", transport: tcp, max_message: 2MiB } }",
            "between 480 and 1048576 bytes over tcp",
        ),
    ] {
        let all = load(&format!("{yaml}\n")).unwrap_err().0.join("\n");
        assert!(all.contains(expected), "{yaml}: {all}");
    }
}

#[test]
fn unparsable_certificates_and_ca_bundles_are_errors_like_serve_would_meet() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let yaml = format!(
        "listen: 127.0.0.1:1\nadmin_listen: 127.0.0.1:2\n\
         tls: {{ cert_file: \"{0}\", key_file: \"{0}\" }}\n\
         routes:\n  - {{ name: a, path: /a, upstream: \"https://example.com/\", ca_file: \"{0}\" }}\n",
        junk.display()
    );
    let all = load(&yaml).unwrap_err().0.join("\n");
    assert!(all.contains("tls: no certificate found"), "{all}");
    assert!(
        all.contains("routes[0].ca_file: no certificate found"),
        "{all}"
    );
}

#[test]
fn timeouts_of_centuries_are_errors_not_panics_on_the_request_path() {
    let yaml = format!(
        "{MINIMAL}timeouts: {{ stream_idle: 1000years, request_body: 400d, shutdown_grace: 365d, client_idle: 18446744073709551615s }}\n"
    );
    let all = load(&yaml).unwrap_err().0.join("\n");
    for name in ["stream_idle", "request_body", "client_idle"] {
        assert!(
            all.contains(&format!("timeouts.{name}: must be at most 365d")),
            "{all}"
        );
    }
    assert!(!all.contains("shutdown_grace"), "{all}");
}

#[test]
fn public_url_is_an_https_origin_or_loopback_http() {
    let with = |url: &str| load(&format!("public_url: \"{url}\"\n{MINIMAL}"));
    assert_eq!(
        with("https://mcp.example.com/")
            .unwrap()
            .public_url
            .as_deref(),
        Some("https://mcp.example.com")
    );
    assert_eq!(
        with("http://127.0.0.1:8080").unwrap().public_url.as_deref(),
        Some("http://127.0.0.1:8080")
    );
    assert!(with("http://localhost:8080/gw").is_ok());
    for bad in [
        "http://mcp.example.com",
        "ftp://mcp.example.com",
        "https://mcp.example.com/?x=1",
        "https://user:pw@mcp.example.com",
        "/relative",
    ] {
        let all = with(bad).unwrap_err().0.join("\n");
        assert!(all.contains("public_url"), "{bad}: {all}");
    }
}

#[test]
fn routes_carry_mcp_or_plain_http_and_never_shadow_published_metadata() {
    let s = load(&format!(
        "{MINIMAL}  - name: token\n    path: /token\n    protocol: http\n    upstream: \"http://127.0.0.1:3001/token\"\n"
    ))
    .unwrap();
    assert_eq!(s.routes[0].protocol, RouteProtocol::Mcp);
    assert_eq!(s.routes[1].protocol, RouteProtocol::Http);
    let bad = load(&format!(
        "{MINIMAL}  - name: x\n    path: /x\n    protocol: grpc\n    upstream: \"http://127.0.0.1:3001/x\"\n"
    ));
    assert!(bad.is_err());
    let shadow = format!(
        "public_url: \"https://gw.example\"\n{MINIMAL}  - name: prm\n    path: /.well-known/oauth-protected-resource/mcp\n    protocol: http\n    upstream: \"http://127.0.0.1:3001/x\"\n"
    );
    let all = load(&shadow).unwrap_err().0.join("\n");
    assert!(
        all.contains("shadows the protected resource metadata"),
        "{all}"
    );
}

#[test]
fn a_short_audit_salt_is_an_error() {
    let short = load(&format!("{MINIMAL}audit: {{ salt: x }}\n")).unwrap_err();
    assert!(
        short.to_string().contains("audit.salt: at least 16 bytes"),
        "{short}"
    );
    assert!(load(&format!("{MINIMAL}audit: {{ salt: 0123456789abcdef }}\n")).is_ok());
}

fn env(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn list_entries_are_overridden_and_added_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("elicitgate.yaml");
    std::fs::write(&file, MINIMAL).unwrap();
    let s = Settings::load_with(
        &file,
        env(&[
            (
                "ELICITGATE__ROUTES__0__UPSTREAM",
                "http://10.0.0.7:3000/mcp",
            ),
            ("ELICITGATE__ROUTES__1__NAME", "second"),
            ("ELICITGATE__ROUTES__1__PATH", "/second"),
            (
                "ELICITGATE__ROUTES__1__UPSTREAM",
                "http://10.0.0.8:3000/mcp",
            ),
            ("ELICITGATE__LIMITS__MAX_CONNECTIONS", "77"),
        ]),
    )
    .unwrap();
    assert_eq!(s.routes[0].name, "demo");
    assert_eq!(s.routes[0].upstream.to_string(), "http://10.0.0.7:3000/mcp");
    assert_eq!(s.routes[1].name, "second");
    assert_eq!(s.routes[1].upstream.to_string(), "http://10.0.0.8:3000/mcp");
    assert_eq!(s.limits.max_connections, 77);
}

#[test]
fn a_mistyped_list_entry_override_is_blamed_on_its_variable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("elicitgate.yaml");
    std::fs::write(&file, MINIMAL).unwrap();
    let ConfigErrors(errors) = Settings::load_with(
        &file,
        env(&[("ELICITGATE__ROUTES__0__UPSTRAEM", "http://10.0.0.7/mcp")]),
    )
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("ELICITGATE__ROUTES__0__UPSTRAEM"),
        "{errors:?}"
    );
}
