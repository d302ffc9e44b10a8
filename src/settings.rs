//! Process settings: listeners, TLS, routes, limits, timeouts, logging and auditing.
//!
//! Owns reading the YAML file through the `config` crate (with `ELICITGATE__…` environment
//! overrides), rejecting unknown keys, and validating everything at once: [`Settings::load`]
//! returns either a checked [`Settings`] or a [`ConfigErrors`] listing *every* problem found,
//! so an operator fixes a file in one pass. Nothing here runs on the request path.

mod audit;
mod environment;
mod scale;

pub use audit::*;
pub use scale::*;

use bytesize::ByteSize;
use elicitgate_core::policy::PolicySet;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Prefix of environment overrides: `ELICITGATE__LIMITS__MAX_REQUEST_BODY=8MiB`.
pub const ENV_PREFIX: &str = "ELICITGATE";

/// Every problem found in a configuration file.
#[derive(Debug, Default)]
pub struct ConfigErrors(pub Vec<String>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// rustls termination on the client listener.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
}

/// Bounds on what is read off the wire.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest client request body; larger ones get 413.
    pub max_request_body: ByteSize,
    /// Largest single SSE event from an upstream; a larger one ends the stream.
    pub max_sse_event: ByteSize,
    /// Client connections served at once; further ones wait in the accept queue.
    pub max_connections: usize,
    /// Largest JSON response read whole for inspection; a larger one gets 502 (fail closed).
    pub max_response_body: ByteSize,
    /// Legacy sessions whose declared capabilities are remembered (oldest evicted first).
    pub max_sessions: usize,
    /// Elicitations awaiting an answer, per kind of table (oldest evicted first).
    pub max_pending: usize,
    /// Bytes each table of asked elicitations may hold (oldest evicted first; an evicted
    /// legacy elicitation's server is told).
    pub max_pending_bytes: ByteSize,
    /// Concurrent HTTP/2 streams per client connection.
    pub max_streams_per_connection: u32,
    /// Elicitations one response (a JSON body, one message, or a whole SSE stream) may carry;
    /// past it the rest is refused and the stream ends with the blocked-content error.
    pub max_elicitations_per_response: usize,
    /// Bytes the whole process may hold in whole-body buffers at once (request bodies, JSON
    /// answers read for judgment); past it, requests get 503 at once.
    pub request_buffer_budget: ByteSize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_body: ByteSize::mib(4),
            max_sse_event: ByteSize::mib(4),
            max_connections: 10_000,
            max_response_body: ByteSize::mib(16),
            max_sessions: 100_000,
            max_pending: 10_000,
            max_pending_bytes: ByteSize::mib(64),
            max_elicitations_per_response: 64,
            max_streams_per_connection: 100,
            request_buffer_budget: ByteSize::mib(256),
        }
    }
}

/// The longest any timeout may be (365 days).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Timeouts, written with units (`500ms`, `10s`, `5m`); each at most [`MAX_TIMEOUT`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// TCP (and TLS) connect to an upstream; exceeded → 504.
    #[serde(with = "humantime_serde")]
    pub upstream_connect: Duration,
    /// From sending the request to the upstream's response head; exceeded → 504.
    #[serde(with = "humantime_serde")]
    pub upstream_first_byte: Duration,
    /// Longest silence on a streamed response body before the gateway ends it.
    #[serde(with = "humantime_serde")]
    pub stream_idle: Duration,
    /// Time a client gets to send a request head (slow-loris bound).
    #[serde(with = "humantime_serde")]
    pub client_header: Duration,
    /// Time a client gets to finish a TLS handshake.
    #[serde(with = "humantime_serde")]
    pub tls_handshake: Duration,
    /// On SIGTERM/SIGINT, how long in-flight requests may run before they are cut.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// How long a legacy session's capabilities are remembered after its last use.
    #[serde(with = "humantime_serde")]
    pub session_idle: Duration,
    /// A client connection with no request in flight for this long is closed (HTTP/2
    /// included; an SSE stream is a request in flight until it ends).
    #[serde(with = "humantime_serde")]
    pub client_idle: Duration,
    /// Time a client gets to send a whole request body; exceeded → 408.
    #[serde(with = "humantime_serde")]
    pub request_body: Duration,
    /// Longest silence between two pieces of a request body; exceeded → 408.
    #[serde(with = "humantime_serde")]
    pub request_body_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            upstream_connect: Duration::from_secs(5),
            upstream_first_byte: Duration::from_secs(60),
            stream_idle: Duration::from_secs(300),
            client_header: Duration::from_secs(30),
            tls_handshake: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            session_idle: Duration::from_secs(3600),
            client_idle: Duration::from_secs(60),
            request_body: Duration::from_secs(30),
            request_body_idle: Duration::from_secs(10),
        }
    }
}

/// One upstream MCP server behind a path prefix.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSettings {
    /// Operator-chosen name; a label in metrics and audit events (`[A-Za-z0-9_-]`, ≤ 64).
    pub name: String,
    /// Path prefix on the gateway; `<path><rest>` goes to `<upstream><rest>`.
    pub path: String,
    /// `http://` or `https://` base URL of the MCP endpoint.
    pub upstream: String,
    /// Extra PEM CA bundle trusted for an `https` upstream, besides the system roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Name of the policy under `policies` for this route; absent = the shared default.
    #[serde(default)]
    pub policy: Option<String>,
    /// `mcp` (default): every message is read and judged as MCP. `http`: proxied without
    /// reading it as MCP (an authorization server's endpoints, other non-MCP paths).
    #[serde(default)]
    pub protocol: RouteProtocol,
}

/// What a route carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteProtocol {
    #[default]
    Mcp,
    Http,
}

/// A configuration value that must never be printed.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Log output format.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Logging (tracing) settings; `RUST_LOG` overrides `level`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `elicitgate=debug`.
    pub level: String,
    /// One structured line per client request (target `elicitgate::access`, in `format`):
    /// route, methods, status, duration, upstream, bytes. Never bodies or credentials.
    pub access: bool,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".into(),
            access: false,
        }
    }
}

/// OpenTelemetry export over OTLP/HTTP (protobuf): traces, and audit events as logs with
/// `audit.sink: otlp`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` and
    /// `/v1/logs` are appended. Absent: nothing is exported.
    pub endpoint: Option<String>,
    /// Headers sent with every export (an API key); values never logged.
    pub headers: std::collections::BTreeMap<String, Secret>,
    /// Longest one export may take.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// How often batches are sent.
    #[serde(with = "humantime_serde")]
    pub export_interval: Duration,
    /// Spans (and audit log records) queued for export; beyond it they are dropped.
    pub queue: usize,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Export a span per client request.
    pub traces: bool,
    /// Share of new traces sampled (0.0–1.0); a sampled or unsampled parent decides for its
    /// children.
    pub sample_ratio: f64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            endpoint: None,
            headers: Default::default(),
            timeout: Duration::from_secs(10),
            export_interval: Duration::from_secs(5),
            queue: 4096,
            service_name: "elicitgate".into(),
            traces: true,
            sample_ratio: 1.0,
        }
    }
}

impl TelemetrySettings {
    fn validate(&self, errors: &mut Vec<String>) {
        if let Some(endpoint) = &self.endpoint {
            match url::Url::parse(endpoint) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => errors.push(format!(
                    "telemetry.endpoint: `{endpoint}` must be an http:// or https:// URL"
                )),
            }
        }
        for name in self.headers.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                errors.push(format!("telemetry.headers: `{name}` is not a header name"));
            }
        }
        for (name, value) in &self.headers {
            if http::HeaderValue::from_str(value.expose()).is_err() {
                errors.push(format!(
                    "telemetry.headers.{name}: not a valid header value"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            errors.push("telemetry.sample_ratio: must be between 0 and 1".into());
        }
        if self.queue == 0 || self.queue > 1_000_000 {
            errors.push("telemetry.queue: must be between 1 and 1000000".into());
        }
        if self.timeout.is_zero() || self.export_interval.is_zero() {
            errors.push("telemetry: timeout and export_interval must be greater than zero".into());
        }
    }
}

/// The checked process settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The origin (and optional base path) clients use to reach the gateway, without a
    /// trailing `/`: the resource its MCP routes are to OAuth clients (RFC 9728).
    pub public_url: Option<String>,
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// Threads serving `listen`, each with its own event loop, listener socket and upstream
    /// connections (0 in the file: one per CPU).
    pub workers: usize,
    pub tls: Option<TlsSettings>,
    pub limits: Limits,
    pub timeouts: Timeouts,
    pub log: LogSettings,
    pub audit: AuditSettings,
    /// Where enforcement state lives.
    pub state: StateSettings,
    /// How callers are identified.
    pub identity: IdentitySettings,
    /// OpenTelemetry export.
    pub telemetry: TelemetrySettings,
    pub routes: Vec<RouteSettings>,
    /// Every route's compiled policy.
    pub policies: Arc<PolicySet>,
    /// What `policies` was compiled from (the `policies` section and the routes that name a
    /// policy), so a reload can tell whether policies changed.
    pub policy_source: Arc<serde_json::Value>,
    /// Problems that do not stop the configuration from loading.
    pub warnings: Vec<String>,
}

/// More worker threads than this is a configuration mistake, not a machine.
const MAX_WORKERS: usize = 1024;

/// The keys the file may have at its top level.
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "public_url",
    "listen",
    "admin_listen",
    "workers",
    "tls",
    "limits",
    "timeouts",
    "log",
    "audit",
    "state",
    "identity",
    "telemetry",
    "routes",
    "policies",
];

/// Names the environment variable behind an error about a key the file may not even have
/// (`ELICITGATE__AUDIT__SALLT` is an unknown key `sallt`), so that the operator looks in the
/// right place.
fn blame_environment(error: String, overrides: &[String]) -> String {
    let culprit = overrides.iter().find(|name| {
        name.rsplit("__")
            .next()
            .is_some_and(|key| error.contains(&format!("`{}`", key.to_ascii_lowercase())))
    });
    match culprit {
        Some(name) => format!("{error} (from the environment variable {name}, not the file)"),
        None => error,
    }
}

impl Settings {
    /// Loads `path` (YAML) with environment overrides and validates it.
    pub fn load(path: &Path) -> Result<Settings, ConfigErrors> {
        Self::load_with(path, std::env::vars().collect())
    }

    /// [`Settings::load`] with the environment given as `(name, value)` pairs.
    pub fn load_with(path: &Path, vars: Vec<(String, String)>) -> Result<Settings, ConfigErrors> {
        let names: Vec<String> = vars
            .iter()
            .map(|(name, _)| name.clone())
            .filter(|name| name.starts_with(&format!("{ENV_PREFIX}__")))
            .collect();
        let env = environment::split(ENV_PREFIX, vars);
        let mut builder = config::Config::builder()
            .add_source(config::File::from(path).format(config::FileFormat::Yaml))
            .add_source(
                config::Environment::with_prefix(ENV_PREFIX)
                    .prefix_separator("__")
                    .separator("__")
                    .try_parsing(true)
                    .source(Some(env.plain.into_iter().collect())),
            );
        for (key, value) in env.indexed {
            builder = builder
                .set_override(key.as_str(), value)
                .map_err(|e| ConfigErrors(vec![format!("environment override `{key}`: {e}")]))?;
        }
        let source = builder
            .build()
            .map_err(|e| ConfigErrors(vec![format!("{}: {e}", path.display())]))?;
        Self::from_config(&source, path.parent().unwrap_or(Path::new("."))).map_err(
            |ConfigErrors(errors)| {
                ConfigErrors(
                    errors
                        .into_iter()
                        .map(|e| blame_environment(e, &names))
                        .collect(),
                )
            },
        )
    }

    /// Loads settings from a YAML string (tests and the demo); relative file paths resolve
    /// against `base`.
    pub fn from_yaml(yaml: &str, base: &Path) -> Result<Settings, ConfigErrors> {
        let source = config::Config::builder()
            .add_source(config::File::from_str(yaml, config::FileFormat::Yaml))
            .build()
            .map_err(|e| ConfigErrors(vec![e.to_string()]))?;
        Self::from_config(&source, base)
    }

    fn from_config(source: &config::Config, base: &Path) -> Result<Settings, ConfigErrors> {
        let mut errors = Vec::new();
        let top = match source
            .clone()
            .try_deserialize::<config::Map<String, config::Value>>()
        {
            Ok(map) => map,
            Err(e) => return Err(ConfigErrors(vec![e.to_string()])),
        };
        let mut unknown: Vec<&String> = top
            .keys()
            .filter(|k| !TOP_LEVEL_KEYS.contains(&k.as_str()))
            .collect();
        unknown.sort();
        for key in unknown {
            errors.push(format!("unknown key `{key}`"));
        }
        let public_url = optional::<String>(&top, "public_url", &mut errors)
            .and_then(|url| check_public_url(&url, &mut errors));
        let listen = optional::<SocketAddr>(&top, "listen", &mut errors);
        let admin_listen = optional::<SocketAddr>(&top, "admin_listen", &mut errors);
        let workers = optional::<usize>(&top, "workers", &mut errors).unwrap_or(0);
        let tls = optional::<TlsSettings>(&top, "tls", &mut errors);
        let limits = section::<Limits>(&top, "limits", &mut errors);
        let timeouts = section::<Timeouts>(&top, "timeouts", &mut errors);
        let log = section::<LogSettings>(&top, "log", &mut errors);
        let audit = section::<AuditSettings>(&top, "audit", &mut errors);
        let state = section::<StateSettings>(&top, "state", &mut errors);
        let identity = section::<IdentitySettings>(&top, "identity", &mut errors);
        let telemetry = section::<TelemetrySettings>(&top, "telemetry", &mut errors);
        telemetry.validate(&mut errors);
        state.validate(&mut errors);
        identity.validate(&mut errors);
        let raw_policies =
            optional::<serde_json::Map<String, serde_json::Value>>(&top, "policies", &mut errors)
                .unwrap_or_default();
        let (indices, routes): (Vec<usize>, Vec<RouteSettings>) =
            routes(&top, &mut errors).into_iter().unzip();

        let route_refs: Vec<(String, Option<String>)> = routes
            .iter()
            .map(|r| (r.name.clone(), r.policy.clone()))
            .collect();
        let (policies, warnings) =
            match elicitgate_core::policy::compile_all(&raw_policies, &route_refs) {
                Ok((set, warnings)) => (Arc::new(set), warnings),
                Err(policy_errors) => {
                    errors.extend(policy_errors);
                    // Only to finish validating the rest; these settings are never returned.
                    match elicitgate_core::policy::compile_all(&serde_json::Map::new(), &[]) {
                        Ok((set, _)) => (Arc::new(set), Vec::new()),
                        Err(more) => {
                            errors.extend(more);
                            return Err(ConfigErrors(errors));
                        }
                    }
                }
            };
        let named: serde_json::Map<String, serde_json::Value> = route_refs
            .iter()
            .filter_map(|(route, policy)| Some((route.clone(), policy.clone()?.into())))
            .collect();
        let policy_source = Arc::new(serde_json::json!({
            "policies": &raw_policies,
            "routes": named,
        }));
        let mut settings = Settings {
            public_url,
            listen: listen.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080))),
            admin_listen: admin_listen.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 9464))),
            workers: match workers {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            },
            tls,
            limits,
            timeouts,
            log,
            audit,
            state,
            identity,
            telemetry,
            routes,
            policies,
            policy_source,
            warnings,
        };
        settings.resolve_paths(base);
        settings.validate(&indices, &mut errors);
        let audit_warnings = settings.audit.warnings();
        settings.warnings.extend(audit_warnings);
        if settings.routes.is_empty() && !errors.iter().any(|e| e.starts_with("routes")) {
            settings.warnings.push(
                "routes: none configured; `serve` needs at least one (stdio and inspect do not)"
                    .into(),
            );
        }
        if errors.is_empty() {
            Ok(settings)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    fn resolve_paths(&mut self, base: &Path) {
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(tls) = &mut self.tls {
            resolve(&mut tls.cert_file);
            resolve(&mut tls.key_file);
        }
        if let Some(file) = &mut self.audit.file {
            resolve(file);
        }
        if let Some(file) = &mut self.identity.jwt.jwks_file {
            resolve(file);
        }
        for route in &mut self.routes {
            if let Some(ca) = &mut route.ca_file {
                resolve(ca);
            }
        }
    }

    /// `indices` are the routes' positions in the file (routes that failed to parse are gone).
    fn validate(&self, indices: &[usize], errors: &mut Vec<String>) {
        if let Some(tls) = &self.tls {
            let before = errors.len();
            for file in [&tls.cert_file, &tls.key_file] {
                if !file.is_file() {
                    errors.push(format!("tls: file `{}` does not exist", file.display()));
                } else if let Err(e) = std::fs::File::open(file) {
                    errors.push(format!(
                        "tls: file `{}` cannot be read: {e}",
                        file.display()
                    ));
                }
            }
            // What `serve` would load: PEM that parses, a key that matches its certificate.
            if errors.len() == before {
                if let Err(e) = crate::tls::certified_key(&tls.cert_file, &tls.key_file) {
                    errors.push(format!("tls: {e:#}"));
                }
            }
        }
        if self.workers > MAX_WORKERS {
            errors.push(format!("workers: at most {MAX_WORKERS}"));
        }
        if self.limits.max_connections == 0 {
            errors.push("limits.max_connections: must be at least 1".into());
        }
        let l = &self.limits;
        for (name, value) in [
            ("max_request_body", l.max_request_body.as_u64()),
            ("max_sse_event", l.max_sse_event.as_u64()),
            ("max_response_body", l.max_response_body.as_u64()),
            ("max_pending_bytes", l.max_pending_bytes.as_u64()),
            ("max_sessions", l.max_sessions as u64),
            ("max_pending", l.max_pending as u64),
        ] {
            if value == 0 {
                errors.push(format!("limits.{name}: must be greater than zero"));
            }
        }
        if self.limits.max_streams_per_connection == 0 {
            errors.push("limits.max_streams_per_connection: must be greater than zero".into());
        }
        if self.limits.max_elicitations_per_response == 0 {
            errors.push("limits.max_elicitations_per_response: must be greater than zero".into());
        }
        if self.limits.request_buffer_budget < self.limits.max_request_body {
            errors.push(
                "limits.request_buffer_budget: must be at least limits.max_request_body".into(),
            );
        }
        self.audit.validate(errors);
        if self.audit.sink.contains(AuditSinkKind::Otlp) && self.telemetry.endpoint.is_none() {
            errors.push("audit.sink: `otlp` needs telemetry.endpoint".into());
        }
        if conflicting(self.listen, self.admin_listen) {
            errors.push(format!(
                "admin_listen: {} conflicts with listen {} (same port)",
                self.admin_listen, self.listen
            ));
        }
        if let Err(e) = self.log.level.parse::<tracing_subscriber::EnvFilter>() {
            errors.push(format!("log.level: {e}"));
        }
        let t = &self.timeouts;
        // (name, value, zero allowed). Deadlines are `now + timeout`: a duration of centuries
        // is no timeout at all, and past the clock's range it would panic on the request path.
        for (name, value, zero_allowed) in [
            ("upstream_connect", t.upstream_connect, false),
            ("upstream_first_byte", t.upstream_first_byte, false),
            ("stream_idle", t.stream_idle, false),
            ("client_header", t.client_header, false),
            ("tls_handshake", t.tls_handshake, false),
            ("shutdown_grace", t.shutdown_grace, true),
            ("session_idle", t.session_idle, true),
            ("client_idle", t.client_idle, false),
            ("request_body", t.request_body, false),
            ("request_body_idle", t.request_body_idle, false),
        ] {
            if value.is_zero() && !zero_allowed {
                errors.push(format!("timeouts.{name}: must be greater than zero"));
            }
            if value > MAX_TIMEOUT {
                errors.push(format!("timeouts.{name}: must be at most 365d"));
            }
        }
        for (n, (route, &i)) in self.routes.iter().zip(indices).enumerate() {
            route.validate(i, errors);
            if route
                .path
                .starts_with("/.well-known/oauth-protected-resource")
                && (self.public_url.is_some() || self.identity.mode == IdentityMode::Jwt)
            {
                errors.push(format!(
                    "routes[{i}].path: `{}` shadows the protected resource metadata the gateway publishes for its MCP routes",
                    route.path
                ));
            }
            for other in &self.routes[..n] {
                if other.name == route.name {
                    errors.push(format!("routes[{i}]: duplicate name `{}`", route.name));
                }
                if other.path == route.path {
                    errors.push(format!("routes[{i}]: duplicate path `{}`", route.path));
                }
            }
        }
    }
}

impl RouteSettings {
    fn validate(&self, i: usize, errors: &mut Vec<String>) {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            errors.push(format!(
                "routes[{i}].name: `{}` must be 1-64 characters of [A-Za-z0-9_-]",
                self.name
            ));
        }
        if !self.path.starts_with('/') || self.path.contains(['?', '#']) {
            errors.push(format!(
                "routes[{i}].path: `{}` must start with `/` and have no query",
                self.path
            ));
        }
        match url::Url::parse(&self.upstream) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                if u.query().is_some() || u.fragment().is_some() {
                    errors.push(format!(
                        "routes[{i}].upstream: `{}` must not have a query or fragment",
                        self.upstream
                    ));
                }
                if u.scheme() == "http" && self.ca_file.is_some() {
                    errors.push(format!(
                        "routes[{i}].ca_file: only meaningful for an https upstream"
                    ));
                }
            }
            Ok(_) => errors.push(format!(
                "routes[{i}].upstream: `{}` must be an http:// or https:// URL",
                self.upstream
            )),
            Err(e) => errors.push(format!(
                "routes[{i}].upstream: `{}` is not a URL: {e}",
                self.upstream
            )),
        }
        if let Some(ca) = &self.ca_file {
            if !ca.is_file() {
                errors.push(format!(
                    "routes[{i}].ca_file: `{}` does not exist",
                    ca.display()
                ));
            } else if let Err(e) = crate::tls::client_config(Some(ca)) {
                errors.push(format!("routes[{i}].ca_file: {e:#}"));
            }
        }
    }
}

fn optional<T: DeserializeOwned>(
    top: &config::Map<String, config::Value>,
    key: &str,
    errors: &mut Vec<String>,
) -> Option<T> {
    top.get(key).and_then(|v| decode(v.clone(), key, errors))
}

/// A section whose every key has a default (`limits`, `timeouts`, `log`, …). serde stops at the
/// first bad value, so when the whole section does not decode, each key is decoded alone
/// (the others defaulted) and every bad one is reported.
fn section<T: DeserializeOwned + Default>(
    top: &config::Map<String, config::Value>,
    key: &str,
    errors: &mut Vec<String>,
) -> T {
    let Some(value) = top.get(key) else {
        return T::default();
    };
    let whole = match value.clone().try_deserialize::<T>() {
        Ok(decoded) => return decoded,
        Err(e) => e,
    };
    let Ok(mut table) = value.clone().into_table() else {
        errors.push(format!("{key}: {whole}"));
        return T::default();
    };
    let mut names: Vec<String> = table.keys().cloned().collect();
    names.sort();
    let mut bad = 0;
    for name in names {
        let mut one = config::Map::new();
        one.insert(name.clone(), table[&name].clone());
        let alone = config::Value::new(None, config::ValueKind::Table(one));
        if let Err(e) = alone.try_deserialize::<T>() {
            errors.push(format!("{key}: {e}"));
            table.remove(&name);
            bad += 1;
        }
    }
    if bad == 0 {
        errors.push(format!("{key}: {whole}"));
    }
    // The good keys still count, so later checks (a log filter, a file path) see them.
    config::Value::new(None, config::ValueKind::Table(table))
        .try_deserialize::<T>()
        .unwrap_or_default()
}

fn decode<T: DeserializeOwned>(v: config::Value, at: &str, errors: &mut Vec<String>) -> Option<T> {
    v.try_deserialize::<T>()
        .map_err(|e| errors.push(format!("{at}: {e}")))
        .ok()
}

fn routes(
    top: &config::Map<String, config::Value>,
    errors: &mut Vec<String>,
) -> Vec<(usize, RouteSettings)> {
    let Some(value) = top.get("routes") else {
        return Vec::new();
    };
    match value.clone().into_array() {
        Ok(items) => items
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| decode(v, &format!("routes[{i}]"), errors).map(|r| (i, r)))
            .collect(),
        Err(e) => {
            errors.push(format!("routes: {e}"));
            Vec::new()
        }
    }
}

/// `public_url`: an absolute `https` URL (plain `http` only for a loopback host), without
/// query, fragment or credentials; returned without a trailing `/`.
fn check_public_url(url: &str, errors: &mut Vec<String>) -> Option<String> {
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => {
            errors.push(format!("public_url: `{url}` is not an absolute URL ({e})"));
            return None;
        }
    };
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => errors.push(format!(
            "public_url: `{url}` must be https (plain http only for a loopback host)"
        )),
        other => errors.push(format!("public_url: scheme `{other}` must be https")),
    }
    if parsed.host().is_none() {
        errors.push(format!("public_url: `{url}` has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        errors.push(format!(
            "public_url: `{url}` must not have a query or fragment"
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        errors.push(format!("public_url: `{url}` must not carry credentials"));
    }
    Some(parsed.as_str().trim_end_matches('/').to_owned())
}

/// Two listeners that cannot both bind: the same port on the same address, or on any
/// address when one of them is the unspecified address (`0.0.0.0`, `::`). Port 0 never
/// conflicts (the system picks).
fn conflicting(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() != 0
        && a.port() == b.port()
        && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

/// What `serve` needs to open `file` for appending: an existing directory, and the file (when
/// it exists) a writable regular file. Checked without creating anything.
fn check_writable(file: &Path, what: &str, errors: &mut Vec<String>) {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() && !m.permissions().readonly() => {}
        Ok(m) if m.is_dir() => errors.push(format!(
            "{what}: directory `{}` is not writable",
            dir.display()
        )),
        Ok(_) => errors.push(format!("{what}: `{}` is not a directory", dir.display())),
        Err(e) => errors.push(format!("{what}: directory `{}`: {e}", dir.display())),
    }
    if let Ok(m) = std::fs::metadata(file) {
        if !m.is_file() {
            errors.push(format!(
                "{what}: `{}` is not a regular file",
                file.display()
            ));
        } else if m.permissions().readonly() {
            errors.push(format!("{what}: `{}` is read-only", file.display()));
        }
    }
}

#[cfg(test)]
mod tests;
