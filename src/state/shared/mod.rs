//! The shared state store (`state.backend: redis`): enforcement state on a standalone Redis or
//! a Redis Cluster, so that any replica can judge what another forwarded.
//!
//! Owns the key layout, the atomic operations, and failing fast. Every key has the configured
//! prefix, a Redis Cluster hash tag, and an expiry. Keys name sessions, scopes, ids and asked
//! maps by digest only (SHA-256, 128 bits in hex), never by their text:
//!
//! | key | holds | expires |
//! |---|---|---|
//! | `P{s:H}:caps` | a session's record (declared modes, owner) | `timeouts.session_idle`, sliding |
//! | `P{s:H}:pending` | hash: request-id digest → `deadline|record` | last entry's deadline + grace |
//! | `P{s:H}:answered` | hash: request-id digest → deadline | the pending TTL |
//! | `P{c:G}:d:FP` | a decline of fingerprint FP in scope G | `repeat.window` |
//! | `P{c:G}:r:MIN` | elicitations of scope G in minute MIN (a sliding minute adds MIN−1's, weighted) | 2 minutes |
//! | `P{u:G}:E` | URL-mode id E of scope G: `0` asked, `1` completed | the pending TTL |
//! | `P{a:K}` | an asked 2026-07-28 `inputRequests` map | the pending TTL |
//!
//! Taking an answer is one Lua script over the session's two hashes (same hash tag, so one
//! slot): of two replicas taking the same answer, exactly one gets it. A completion is one
//! `SET … XX GET KEEPTTL`; a retry's map one `GETDEL`. Commands for different hash tags go out
//! concurrently (Cluster pipelines cannot cross slots), so a judgment costs one round trip.
//!
//! Every operation is bounded by `state.redis.timeout`; a failure is [`Unavailable`] and the
//! caller fails closed. Connections are made lazily and re-made by the client after a failure
//! (`redis::aio::ConnectionManager`, the Cluster client), so recovery needs nobody.

mod backend;
mod scripts;

use crate::settings::RedisSettings;
use crate::state::*;
use futures_util::future::join_all;
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Script, Value};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One multiplexed connection, standalone or Cluster.
#[derive(Clone)]
enum Conn {
    Single(redis::aio::ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Where the connections come from.
enum Target {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// The Redis-backed [`StateStore`].
pub struct RedisStore {
    target: Target,
    /// Connections made so far (lazily; a failed attempt is not retried for a second).
    conns: Mutex<Vec<Conn>>,
    wanted: usize,
    next: AtomicUsize,
    last_failed_connect: Mutex<Option<Instant>>,
    connecting: tokio::sync::Mutex<()>,
    prefix: String,
    timeout: Duration,
    connect_timeout: Duration,
    take: Script,
    put_pending: Script,
    declare: Script,
}

/// 128 bits of SHA-256 over the parts (NUL-separated), in hex.
fn digest(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
        h.update([0]);
    }
    let out = h.finalize();
    let mut hex = String::with_capacity(32);
    for b in &out[..16] {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// A store for `settings` (nothing is connected until the first operation).
    pub fn new(settings: &RedisSettings) -> anyhow::Result<Self> {
        let target = match &settings.url {
            Some(url) => Target::Single(redis::Client::open(url.expose())?),
            None => {
                let nodes: Vec<&str> = settings.cluster.iter().map(|s| s.expose()).collect();
                Target::Cluster(
                    redis::cluster::ClusterClient::builder(nodes)
                        .connection_timeout(settings.connect_timeout)
                        .response_timeout(settings.timeout)
                        .retries(1)
                        .build()?,
                )
            }
        };
        let wanted = match target {
            Target::Single(_) => settings.connections.max(1),
            Target::Cluster(_) => 1,
        };
        Ok(Self {
            target,
            conns: Mutex::new(Vec::new()),
            wanted,
            next: AtomicUsize::new(0),
            last_failed_connect: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            prefix: settings.key_prefix.clone(),
            timeout: settings.timeout,
            connect_timeout: settings.connect_timeout,
            take: Script::new(scripts::TAKE),
            put_pending: Script::new(scripts::PUT_PENDING),
            declare: Script::new(scripts::DECLARE),
        })
    }

    /// A connection, made on first use. After a failed attempt, callers fail fast for a
    /// second instead of each waiting for a connect timeout.
    async fn conn(&self) -> StoreResult<Conn> {
        if let Some(conn) = self.pick() {
            return Ok(conn);
        }
        let recently_failed = self
            .last_failed_connect
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1));
        if recently_failed {
            return Err(Unavailable);
        }
        // One attempt at a time, and callers that queued behind a failed one fail at once
        // instead of each making its own.
        let Ok(_one) = tokio::time::timeout(self.connect_timeout, self.connecting.lock()).await
        else {
            return Err(Unavailable);
        };
        if let Some(conn) = self.pick() {
            return Ok(conn);
        }
        if self
            .last_failed_connect
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return Err(Unavailable);
        }
        let made = tokio::time::timeout(self.connect_timeout, self.connect()).await;
        match made {
            Ok(Ok(conns)) => {
                let first = conns[0].clone();
                *self.conns.lock().unwrap_or_else(|p| p.into_inner()) = conns;
                Ok(first)
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "Could not connect to the Redis state store.");
                self.note_connect_failure();
                Err(Unavailable)
            }
            Err(_) => {
                tracing::warn!("Connecting to the Redis state store timed out.");
                self.note_connect_failure();
                Err(Unavailable)
            }
        }
    }

    fn note_connect_failure(&self) {
        *self
            .last_failed_connect
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    fn pick(&self) -> Option<Conn> {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if conns.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % conns.len();
        Some(conns[i].clone())
    }

    async fn connect(&self) -> redis::RedisResult<Vec<Conn>> {
        match &self.target {
            Target::Single(client) => {
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(self.connect_timeout)
                    .set_response_timeout(self.timeout)
                    .set_number_of_retries(1)
                    .set_max_delay(1000);
                let mut conns = Vec::with_capacity(self.wanted);
                for _ in 0..self.wanted {
                    let manager = redis::aio::ConnectionManager::new_with_config(
                        client.clone(),
                        config.clone(),
                    )
                    .await?;
                    conns.push(Conn::Single(manager));
                }
                Ok(conns)
            }
            Target::Cluster(client) => {
                Ok(vec![Conn::Cluster(client.get_async_connection().await?)])
            }
        }
    }

    /// Runs `work` on a connection within the operation timeout.
    async fn run<T, F, Fut>(&self, work: F) -> StoreResult<T>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let conn = self.conn().await?;
        match tokio::time::timeout(self.timeout, work(conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "A Redis state operation failed.");
                Err(Unavailable)
            }
            Err(_) => Err(Unavailable),
        }
    }

    fn session_tag(&self, route: &str, session: &str) -> String {
        format!(
            "{}{{s:{}}}",
            self.prefix,
            digest(&[route.as_bytes(), session.as_bytes()])
        )
    }

    fn scope_tag(&self, route: &str, scope: &str) -> String {
        format!(
            "{}{{c:{}}}",
            self.prefix,
            digest(&[route.as_bytes(), scope.as_bytes()])
        )
    }

    fn url_key(&self, key: &UrlKey) -> String {
        format!(
            "{}{{u:{}}}:{}",
            self.prefix,
            digest(&[key.route.as_bytes(), key.scope.as_bytes()]),
            digest(&[key.elicitation_id.as_bytes()])
        )
    }

    fn asked_key(&self, key: &AskedKey) -> String {
        let d = match key {
            AskedKey::RequestState {
                route,
                principal,
                digest: rs,
            } => digest(&[b"rs", route.as_bytes(), principal.as_bytes(), rs]),
            AskedKey::Call {
                route,
                principal,
                method,
                name,
            } => digest(&[
                b"call",
                route.as_bytes(),
                principal.as_bytes(),
                method.as_bytes(),
                name.as_bytes(),
            ]),
            AskedKey::Task {
                route,
                principal,
                task_id,
            } => digest(&[
                b"task",
                route.as_bytes(),
                principal.as_bytes(),
                task_id.as_bytes(),
            ]),
        };
        format!("{}{{a:{d}}}", self.prefix)
    }

    fn pending_field(key: &PendingKey) -> String {
        digest(&[key.id.as_bytes()])
    }

    /// A health check for the gauge: one `PING`.
    pub async fn ping(&self) -> StoreResult<()> {
        self.run(|mut c| async move { redis::cmd("PING").query_async::<()>(&mut c).await })
            .await
    }
}

/// Runs single-key commands concurrently (each may live on another Cluster node).
async fn all(conn: Conn, commands: Vec<Cmd>) -> redis::RedisResult<()> {
    let done = join_all(commands.iter().map(|cmd| {
        let mut c = conn.clone();
        async move { cmd.query_async::<()>(&mut c).await }
    }))
    .await;
    done.into_iter().collect()
}

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| {
        tracing::warn!(error = %e, "An unreadable record in the Redis state store.");
        Unavailable
    })
}

/// Largest record written (what was asked is already trimmed for validation and bounded by
/// `form.limits`; this is the backstop against a hostile server filling Redis).
const MAX_RECORD: usize = 1 << 20;

fn encode<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    let text = serde_json::to_string(value).map_err(|_| Unavailable)?;
    if text.len() > MAX_RECORD {
        tracing::warn!(
            bytes = text.len(),
            "A state record over 1 MiB was not written; what needed it fails closed."
        );
        return Err(Unavailable);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hold_digests_and_one_hash_tag_each() {
        let store = RedisStore::new(&RedisSettings {
            url: Some(serde_json::from_str("\"redis://127.0.0.1:1\"").unwrap()),
            ..RedisSettings::default()
        })
        .unwrap();
        let tag = store.session_tag("r", "secret-session-id");
        assert!(tag.starts_with("elicitgate:{s:"));
        assert!(!tag.contains("secret"));
        let url = store.url_key(&UrlKey {
            route: "r".into(),
            scope: "s:x".into(),
            elicitation_id: "my-id".into(),
        });
        assert_eq!(url.matches('{').count(), 1);
        assert!(!url.contains("my-id"));
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unavailable_within_the_bound() {
        let store = RedisStore::new(&RedisSettings {
            // A port nothing listens on (TEST-NET would leave loopback).
            url: Some(serde_json::from_str("\"redis://127.0.0.1:1\"").unwrap()),
            connect_timeout: Duration::from_millis(200),
            ..RedisSettings::default()
        })
        .unwrap();
        assert_eq!(store.ping().await, Err(Unavailable));
        // Right after a failed attempt, callers fail at once (no second connect attempt).
        assert_eq!(store.ping().await, Err(Unavailable));
        assert!(store.conns.lock().unwrap().is_empty());
    }
}
