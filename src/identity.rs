//! Who is calling: the identity stage of the request path (`identity:` in the settings).
//!
//! Owns verifying a caller and resolving the client address:
//!
//! - `mode: jwt`: a bearer JWT (RFC 6750 `Authorization: Bearer …`) verified against the keys of
//!   a JWKS (file or URL, refreshed; an unknown key id triggers an early, rate-limited refresh),
//!   with the configured issuer, audiences, asymmetric algorithms and clock leeway. The
//!   principal is a digest of issuer and `sub`, so it survives token refresh and never holds
//!   the token. Signature and claim checks are the `jsonwebtoken` crate's; verified tokens are
//!   cached until they expire (bounded), so a client reusing its token costs one hash.
//! - `mode: header`: a user header set by an authenticating proxy, believed only from
//!   `trusted_proxies`.
//! - `trusted_proxies` also govern `X-Forwarded-For`: the client address is the last hop no
//!   trusted proxy added.
//!
//! A request that must prove an identity and does not is refused with 401 and a
//! `WWW-Authenticate: Bearer` challenge (the MCP authorization spec's resource server role,
//! RFC 9728 `resource_metadata` when configured). Nothing here logs or stores a token.

use crate::settings::{parse_cidr, IdentityMode, IdentitySettings};
use arc_swap::ArcSwap;
use elicitgate_core::request;
use http::{HeaderMap, HeaderName, HeaderValue};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Who a request proved to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proven {
    /// Identity is off: nobody is verified.
    Anonymous,
    /// A verified principal (a digest).
    Principal(Arc<str>),
}

/// Why a request was refused at the identity stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthenticated {
    /// The `WWW-Authenticate` challenge.
    pub challenge: HeaderValue,
    /// A bounded, value-free label for metrics and the error body.
    pub reason: &'static str,
}

/// Verified tokens remembered at most (then the cache starts over).
const TOKEN_CACHE: usize = 10_000;

/// The identity stage, shared by every worker.
pub struct Identity {
    mode: IdentityMode,
    trusted: Vec<ipnet::IpNet>,
    header: Option<HeaderName>,
    jwt: Option<Jwt>,
    realm_challenge: String,
}

struct Jwt {
    keys: ArcSwap<Vec<Key>>,
    source: JwksSource,
    validation: HashMap<Algorithm, Validation>,
    refresh: Duration,
    last_refresh: Mutex<Option<Instant>>,
    /// Verified tokens, by SHA-256 of the token.
    tokens: Mutex<HashMap<[u8; 32], Verified>>,
    /// Bumped on every key set change: a cached verification by an older set is void.
    generation: std::sync::atomic::AtomicU64,
    /// Woken when a token names a key id the JWKS does not hold.
    early: tokio::sync::Notify,
}

/// A verified token: principal, `exp`, and the key set generation that verified it.
type Verified = (Arc<str>, u64, u64);

struct Key {
    kid: Option<String>,
    algorithm: Option<Algorithm>,
    key: DecodingKey,
}

#[derive(Debug, Clone)]
enum JwksSource {
    File(PathBuf),
    Url(String),
}

#[derive(serde::Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    exp: u64,
}

fn hex_digest(prefix: &str, parts: &[&[u8]]) -> Arc<str> {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
        h.update([0]);
    }
    let out = h.finalize();
    let mut hex = String::with_capacity(prefix.len() + 32);
    hex.push_str(prefix);
    for b in &out[..16] {
        let _ = write!(hex, "{b:02x}");
    }
    Arc::from(hex)
}

fn parse_algorithm(name: &str) -> Option<Algorithm> {
    Some(match name {
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "EdDSA" => Algorithm::EdDSA,
        _ => return None,
    })
}

/// Reads a JWKS document into verification keys (keys it cannot use are skipped).
fn parse_jwks(text: &str) -> anyhow::Result<Vec<Key>> {
    let set: JwkSet = serde_json::from_str(text)?;
    let keys: Vec<Key> = set
        .keys
        .iter()
        .filter(|jwk| {
            // Keys published for encryption never verify a signature.
            !matches!(
                jwk.common.public_key_use,
                Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
            )
        })
        .filter_map(|jwk| {
            let key = DecodingKey::from_jwk(jwk).ok()?;
            let algorithm = jwk
                .common
                .key_algorithm
                .and_then(|a| parse_algorithm(&format!("{a:?}")));
            Some(Key {
                kid: jwk.common.key_id.clone(),
                algorithm,
                key,
            })
        })
        .collect();
    anyhow::ensure!(!keys.is_empty(), "the JWKS holds no usable key");
    Ok(keys)
}

impl Identity {
    /// The stage for `settings` (a JWKS file is read now; a JWKS URL by [`Identity::refresh`]).
    pub fn new(settings: &IdentitySettings) -> anyhow::Result<Self> {
        let trusted = settings
            .trusted_proxies
            .iter()
            .filter_map(|c| parse_cidr(c))
            .collect();
        let jwt = match settings.mode {
            IdentityMode::Jwt => Some(Jwt::new(settings)?),
            _ => None,
        };
        let header = match settings.mode {
            IdentityMode::Header => Some(HeaderName::from_bytes(settings.header.name.as_bytes())?),
            _ => None,
        };
        let mut realm_challenge = String::from("Bearer realm=\"elicitgate\"");
        if let Some(url) = &settings.jwt.resource_metadata {
            let _ = write!(realm_challenge, ", resource_metadata=\"{url}\"");
        }
        Ok(Self {
            mode: settings.mode,
            trusted,
            header,
            jwt,
            realm_challenge,
        })
    }

    /// Identity is off.
    pub fn is_off(&self) -> bool {
        self.mode == IdentityMode::None
    }

    fn trusts(&self, peer: IpAddr) -> bool {
        request::is_trusted(&self.trusted, peer)
    }

    /// The client's address: the peer, or — when the peer is a trusted proxy — the last
    /// `X-Forwarded-For` hop that no trusted proxy added.
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let values = headers.get_all("x-forwarded-for");
        request::client_address(&self.trusted, peer, values.iter().map(|v| v.to_str().ok()))
    }

    /// Verifies the caller of a request from `peer`.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: IpAddr,
    ) -> Result<Proven, Unauthenticated> {
        match self.mode {
            IdentityMode::None => Ok(Proven::Anonymous),
            IdentityMode::Header => {
                let name = self
                    .header
                    .as_ref()
                    .ok_or_else(|| self.refuse(None, "identity.header"))?;
                if !self.trusts(peer) {
                    return Err(self.refuse(None, "identity.untrusted_peer"));
                }
                // One value, or the caller is ambiguous: a proxy that appends its header
                // (a second field, or `a, b` in one) instead of replacing it leaves the
                // client's own value beside the proven one, and readers disagree on which
                // counts (first, last, joined). Refused, never guessed.
                let mut values = headers.get_all(name).iter();
                let user = values
                    .next()
                    .map(HeaderValue::as_bytes)
                    .filter(|v| !v.is_empty() && v.len() <= 1024)
                    .ok_or_else(|| self.refuse(None, "identity.header_missing"))?;
                if values.next().is_some() || user.contains(&b',') {
                    return Err(self.refuse(None, "identity.header_ambiguous"));
                }
                Ok(Proven::Principal(hex_digest("h:", &[user])))
            }
            IdentityMode::Jwt => {
                let jwt = self
                    .jwt
                    .as_ref()
                    .ok_or_else(|| self.refuse(None, "identity.jwt"))?;
                if headers
                    .get_all(http::header::AUTHORIZATION)
                    .iter()
                    .nth(1)
                    .is_some()
                {
                    return Err(self.refuse(None, "identity.token_ambiguous"));
                }
                let token =
                    bearer(headers).ok_or_else(|| self.refuse(None, "identity.token_missing"))?;
                jwt.verify(token)
                    .map(Proven::Principal)
                    .map_err(|reason| self.refuse(Some(reason), reason))
            }
        }
    }

    fn refuse(&self, invalid: Option<&'static str>, reason: &'static str) -> Unauthenticated {
        let mut text = self.realm_challenge.clone();
        if let Some(why) = invalid {
            let _ = write!(
                text,
                ", error=\"invalid_token\", error_description=\"{why}\""
            );
        }
        Unauthenticated {
            challenge: HeaderValue::from_str(&text)
                .unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"elicitgate\"")),
            reason,
        }
    }

    /// Re-reads the JWKS (file or URL); keeps the current keys when that fails.
    pub async fn refresh(&self) -> anyhow::Result<()> {
        match &self.jwt {
            Some(jwt) => jwt.refresh().await,
            None => Ok(()),
        }
    }

    /// How often [`Identity::refresh`] should run (`None`: no JWKS).
    pub fn refresh_every(&self) -> Option<Duration> {
        self.jwt.as_ref().map(|j| j.refresh)
    }

    /// Waits until a token names a key id the JWKS does not hold and an early refresh is
    /// allowed (at most once per tenth of the refresh period).
    pub async fn early_refresh_wanted(&self) {
        let Some(jwt) = &self.jwt else {
            return std::future::pending().await;
        };
        loop {
            jwt.early.notified().await;
            if jwt.take_early_refresh() {
                return;
            }
        }
    }
}

/// The token of an `Authorization: Bearer …` header (scheme case-insensitive).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= 16 * 1024)
        .then_some(token)
}

impl Jwt {
    fn new(settings: &IdentitySettings) -> anyhow::Result<Self> {
        let j = &settings.jwt;
        let mut validation = HashMap::new();
        for name in &j.algorithms {
            let alg = parse_algorithm(name)
                .ok_or_else(|| anyhow::anyhow!("unsupported JWT algorithm {name}"))?;
            let mut v = Validation::new(alg);
            v.leeway = j.leeway.as_secs();
            v.validate_nbf = true;
            v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            if let Some(iss) = &j.issuer {
                v.set_issuer(&[iss]);
            }
            v.set_audience(&j.audience);
            validation.insert(alg, v);
        }
        let (source, keys) = match (&j.jwks_file, &j.jwks_url) {
            (Some(file), _) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
                (JwksSource::File(file.clone()), parse_jwks(&text)?)
            }
            (None, Some(url)) => (JwksSource::Url(url.clone()), Vec::new()),
            (None, None) => anyhow::bail!("identity.jwt needs jwks_file or jwks_url"),
        };
        Ok(Self {
            keys: ArcSwap::from_pointee(keys),
            source,
            validation,
            refresh: j.jwks_refresh,
            last_refresh: Mutex::new(None),
            tokens: Mutex::new(HashMap::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            early: tokio::sync::Notify::new(),
        })
    }

    fn verify(&self, token: &str) -> Result<Arc<str>, &'static str> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        use std::sync::atomic::Ordering;
        let generation = self.generation.load(Ordering::Acquire);
        if let Some((principal, exp, verified_by)) = self.cached(&digest) {
            if verified_by == generation && exp.saturating_add(self.leeway()) > now {
                return Ok(principal);
            }
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| "malformed")?;
        let validation = self.validation.get(&header.alg).ok_or("algorithm")?;
        let keys = self.keys.load();
        let candidates: Vec<&Key> = keys
            .iter()
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
            .filter(|k| k.algorithm.is_none_or(|a| a == header.alg))
            .collect();
        if candidates.is_empty() {
            // A key rotated in at the issuer: the refresher is woken (it refreshes at most
            // once per tenth of the refresh period).
            self.early.notify_one();
            return Err("unknown_key");
        }
        let claims = candidates
            .iter()
            .find_map(|k| jsonwebtoken::decode::<Claims>(token, &k.key, validation).ok())
            .ok_or("invalid")?
            .claims;
        let principal = hex_digest("u:", &[claims.iss.as_bytes(), claims.sub.as_bytes()]);
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        if tokens.len() >= TOKEN_CACHE {
            tokens.clear();
        }
        tokens.insert(digest, (principal.clone(), claims.exp, generation));
        Ok(principal)
    }

    fn leeway(&self) -> u64 {
        self.validation.values().next().map_or(0, |v| v.leeway)
    }

    fn cached(&self, digest: &[u8; 32]) -> Option<Verified> {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(digest)
            .cloned()
    }

    fn take_early_refresh(&self) -> bool {
        let mut last = self.last_refresh.lock().unwrap_or_else(|p| p.into_inner());
        let due = last.is_none_or(|t| t.elapsed() >= self.refresh / 10);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    async fn refresh(&self) -> anyhow::Result<()> {
        let text = match &self.source {
            JwksSource::File(path) => tokio::fs::read_to_string(path).await?,
            JwksSource::Url(url) => fetch(url).await?,
        };
        let keys = parse_jwks(&text)?;
        // Keys first, then the generation: a verification that loaded the old keys caches
        // under the old generation, which no lookup accepts any more.
        self.keys.store(Arc::new(keys));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        // Tokens verified with keys that are gone must be checked again.
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.last_refresh.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(())
    }
}

/// Fetches a JWKS document (bounded: 1 MiB, 10 s).
async fn fetch(url: &str) -> anyhow::Result<String> {
    use http_body_util::{BodyExt, Empty, Limited};
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(crate::tls::client_config(None)?)
        .https_or_http()
        .enable_http1()
        .build();
    let client: hyper_util::client::legacy::Client<_, Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(https);
    let uri: http::Uri = url.parse()?;
    let request = http::Request::get(uri)
        .header("accept", "application/json")
        .body(Empty::new())?;
    let response = tokio::time::timeout(Duration::from_secs(10), client.request(request)).await??;
    anyhow::ensure!(
        response.status().is_success(),
        "JWKS fetch: HTTP {}",
        response.status()
    );
    let body = tokio::time::timeout(
        Duration::from_secs(10),
        Limited::new(response.into_body(), 1 << 20).collect(),
    )
    .await?
    .map_err(|e| anyhow::anyhow!("JWKS fetch: {e}"))?;
    Ok(String::from_utf8(body.to_bytes().to_vec())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(trusted: &[&str]) -> Identity {
        Identity::new(&IdentitySettings {
            trusted_proxies: trusted.iter().map(|s| s.to_string()).collect(),
            ..IdentitySettings::default()
        })
        .unwrap()
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_client_is_the_last_hop_no_trusted_proxy_added() {
        let id = identity(&["10.0.0.0/8"]);
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let client: IpAddr = "203.0.113.7".parse().unwrap();
        assert_eq!(
            id.client_address(proxy, &xff(&["1.2.3.4, 203.0.113.7"])),
            client
        );
        assert_eq!(
            id.client_address(proxy, &xff(&["1.2.3.4", "203.0.113.7, 10.0.0.9"])),
            client
        );
        // An untrusted peer's header is ignored.
        assert_eq!(id.client_address(client, &xff(&["1.2.3.4"])), client);
        // A hop that is not an address ends the walk: nothing left of it is believed.
        assert_eq!(
            id.client_address(proxy, &xff(&["1.2.3.4, 203.0.113.7:5000"])),
            proxy
        );
        assert_eq!(
            id.client_address(proxy, &xff(&["1.2.3.4, unknown, 10.0.0.9"])),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
        // An IPv4 peer on a dual-stack listener is still the trusted proxy.
        let mapped: IpAddr = "::ffff:10.0.0.5".parse().unwrap();
        assert_eq!(id.client_address(mapped, &xff(&["203.0.113.7"])), client);
    }

    #[test]
    fn identity_off_proves_nobody_and_refuses_nobody() {
        let id = identity(&[]);
        assert_eq!(
            id.authenticate(&HeaderMap::new(), "127.0.0.1".parse().unwrap()),
            Ok(Proven::Anonymous)
        );
    }
}
