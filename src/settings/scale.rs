//! Settings for running several replicas and many users: where enforcement state lives
//! (`state:`) and how callers are identified (`identity:`). Validated with the rest of the
//! file, every problem reported at once.

use super::Secret;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Where enforcement state is kept.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StateBackend {
    /// In this process (one replica).
    #[default]
    Memory,
    /// On Redis, shared by every replica.
    Redis,
}

/// `state:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateSettings {
    pub backend: StateBackend,
    pub redis: RedisSettings,
}

/// `state.redis:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedisSettings {
    /// A standalone server: `redis://host:port/db` or `rediss://…` (TLS). Credentials may be
    /// in the URL; prefer `ELICITGATE__STATE__REDIS__URL` from a Secret.
    pub url: Option<Secret>,
    /// Redis Cluster seed nodes (instead of `url`).
    pub cluster: Vec<Secret>,
    /// Prefix of every key the gateway writes.
    pub key_prefix: String,
    /// Multiplexed connections to a standalone server, used in turn.
    pub connections: usize,
    /// Longest a state operation may take before it counts as unavailable (fail closed).
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Longest a (re)connection attempt may take.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
}

impl Default for RedisSettings {
    fn default() -> Self {
        Self {
            url: None,
            cluster: Vec::new(),
            key_prefix: "elicitgate:".into(),
            connections: 2,
            timeout: Duration::from_millis(250),
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// How callers are identified.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IdentityMode {
    /// Nobody is verified: per-user memory is per legacy session or 2026 retry chain.
    #[default]
    None,
    /// A bearer JWT, verified (principal = issuer + `sub`).
    Jwt,
    /// A user header set by an authenticating proxy in `trusted_proxies`.
    Header,
}

/// `identity:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdentitySettings {
    pub mode: IdentityMode,
    pub jwt: JwtSettings,
    pub header: HeaderIdentitySettings,
    /// Peers whose `X-Forwarded-For` (and, with `mode: header`, user header) is believed.
    pub trusted_proxies: Vec<String>,
}

/// `identity.jwt:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JwtSettings {
    /// A JWKS document on disk (re-read every `jwks_refresh`).
    pub jwks_file: Option<PathBuf>,
    /// A JWKS URL (fetched at start and every `jwks_refresh`, and when a token names an
    /// unknown key id, at most once per `jwks_refresh / 10`).
    pub jwks_url: Option<String>,
    #[serde(with = "humantime_serde")]
    pub jwks_refresh: Duration,
    /// Required `iss`.
    pub issuer: Option<String>,
    /// Accepted `aud` values (one must match).
    pub audience: Vec<String>,
    /// Accepted signature algorithms (asymmetric only).
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    #[serde(with = "humantime_serde")]
    pub leeway: Duration,
    /// The protected resource metadata URL named in `WWW-Authenticate` (RFC 9728).
    pub resource_metadata: Option<String>,
}

impl Default for JwtSettings {
    fn default() -> Self {
        Self {
            jwks_file: None,
            jwks_url: None,
            jwks_refresh: Duration::from_secs(300),
            issuer: None,
            audience: Vec::new(),
            algorithms: vec!["RS256".into(), "ES256".into()],
            leeway: Duration::from_secs(60),
            resource_metadata: None,
        }
    }
}

/// `identity.header:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HeaderIdentitySettings {
    /// The header carrying the authenticated user.
    pub name: String,
}

impl Default for HeaderIdentitySettings {
    fn default() -> Self {
        Self {
            name: "x-forwarded-user".into(),
        }
    }
}

/// The algorithms `identity.jwt.algorithms` may name (asymmetric: the gateway holds no
/// shared secret).
pub const JWT_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

impl StateSettings {
    pub(super) fn validate(&self, errors: &mut Vec<String>) {
        let r = &self.redis;
        if self.backend == StateBackend::Redis {
            match (&r.url, r.cluster.is_empty()) {
                (None, true) => errors.push(
                    "state.redis: `backend: redis` needs `url` (standalone) or `cluster` (seed nodes)"
                        .into(),
                ),
                (Some(_), false) => {
                    errors.push("state.redis: set `url` or `cluster`, not both".into())
                }
                _ => {}
            }
            for (i, url) in r.url.iter().chain(&r.cluster).enumerate() {
                let ok = url::Url::parse(url.expose())
                    .is_ok_and(|u| matches!(u.scheme(), "redis" | "rediss") && u.host().is_some());
                if !ok {
                    errors.push(format!(
                        "state.redis: URL #{} is not a redis:// or rediss:// URL with a host",
                        i + 1
                    ));
                }
            }
        }
        if r.key_prefix.is_empty() || r.key_prefix.len() > 64 {
            errors.push("state.redis.key_prefix: 1 to 64 characters".into());
        }
        if r.key_prefix.contains(['{', '}']) {
            errors.push(
                "state.redis.key_prefix: must not contain `{` or `}` (Redis Cluster hash tags)"
                    .into(),
            );
        }
        if !(1..=64).contains(&r.connections) {
            errors.push("state.redis.connections: 1 to 64".into());
        }
        if r.timeout.is_zero() || r.connect_timeout.is_zero() {
            errors
                .push("state.redis: `timeout` and `connect_timeout` must be longer than 0s".into());
        }
    }
}

impl IdentitySettings {
    pub(super) fn validate(&self, errors: &mut Vec<String>) {
        for cidr in &self.trusted_proxies {
            if parse_cidr(cidr).is_none() {
                errors.push(format!(
                    "identity.trusted_proxies: `{cidr}` is not an address or CIDR block"
                ));
            }
        }
        match self.mode {
            IdentityMode::None => {}
            IdentityMode::Jwt => {
                let j = &self.jwt;
                match (&j.jwks_file, &j.jwks_url) {
                    (None, None) => errors
                        .push("identity.jwt: `mode: jwt` needs `jwks_file` or `jwks_url`".into()),
                    (Some(_), Some(_)) => {
                        errors.push("identity.jwt: set `jwks_file` or `jwks_url`, not both".into())
                    }
                    _ => {}
                }
                if let Some(u) = &j.jwks_url {
                    if !url::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "https" | "http")) {
                        errors.push("identity.jwt.jwks_url: not an http(s) URL".into());
                    }
                }
                if j.issuer.as_deref().is_none_or(str::is_empty) {
                    errors.push("identity.jwt.issuer: required with `mode: jwt`".into());
                }
                if j.audience.is_empty() {
                    errors.push("identity.jwt.audience: at least one accepted audience".into());
                }
                if j.algorithms.is_empty() {
                    errors.push("identity.jwt.algorithms: at least one".into());
                }
                for alg in &j.algorithms {
                    if !JWT_ALGORITHMS.contains(&alg.as_str()) {
                        errors.push(format!(
                            "identity.jwt.algorithms: `{alg}` is not one of {}",
                            JWT_ALGORITHMS.join(", ")
                        ));
                    }
                }
                if j.jwks_refresh < Duration::from_secs(1) {
                    errors.push("identity.jwt.jwks_refresh: at least 1s".into());
                }
            }
            IdentityMode::Header => {
                if http::HeaderName::from_bytes(self.header.name.as_bytes()).is_err() {
                    errors.push("identity.header.name: not a valid header name".into());
                }
                if self.trusted_proxies.is_empty() {
                    errors.push(
                        "identity.trusted_proxies: `mode: header` needs the proxies whose header is believed"
                            .into(),
                    );
                }
            }
        }
    }
}

/// An address (`10.0.0.1`, `::1`) or CIDR block (`10.0.0.0/8`).
pub fn parse_cidr(text: &str) -> Option<ipnet::IpNet> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>().ok().or_else(|| {
        text.parse::<std::net::IpAddr>()
            .ok()
            .map(ipnet::IpNet::from)
    })
}
