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
//! | `P{c:G}:r:MIN` | elicitations of scope G in minute MIN | 2 minutes |
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

use crate::enforce::store::*;
use crate::settings::RedisSettings;
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

/// Takes a pending elicitation: KEYS = pending hash, answered hash; ARGV = field, purpose,
/// now (ms), answered-until (ms), answered hash TTL (ms).
const TAKE: &str = r"
local v = redis.call('HGET', KEYS[1], ARGV[1])
local now = tonumber(ARGV[3])
if v then
  local sep = string.find(v, '|', 1, true)
  local deadline = tonumber(string.sub(v, 1, sep - 1))
  if ARGV[2] == 'answer' and deadline <= now then return {'absent'} end
  redis.call('HDEL', KEYS[1], ARGV[1])
  if ARGV[2] == 'answer' then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
    if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then
      redis.call('PEXPIRE', KEYS[2], ARGV[5])
    end
  end
  return {'pending', string.sub(v, sep + 1)}
end
local a = redis.call('HGET', KEYS[2], ARGV[1])
if a and tonumber(a) > now then return {'answered'} end
return {'absent'}
";

/// Records a pending elicitation: KEYS = pending hash; ARGV = field, `deadline|record`, hash
/// TTL (ms), now (ms), grace (ms). Past 256 entries, those long past their deadline go; a
/// session holding 4096 is refused (an error: the caller fails closed).
const PUT_PENDING: &str = r"
if redis.call('HLEN', KEYS[1]) >= 4096 then
  return redis.error_reply('elicitgate: too many pending elicitations in one session')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
if redis.call('HLEN', KEYS[1]) > 256 then
  local limit = tonumber(ARGV[4]) - tonumber(ARGV[5])
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local sep = string.find(all[i + 1], '|', 1, true)
    if sep and tonumber(string.sub(all[i + 1], 1, sep - 1)) < limit then
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
end
return 1
";

/// Declares an announced session: KEYS = caps key; ARGV = record, TTL (ms).
const DECLARE: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 'unknown' end
if string.sub(v, 1, 12) == '{"caps":null' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 'declared'
end
return 'already'
"#;

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
            take: Script::new(TAKE),
            put_pending: Script::new(PUT_PENDING),
            declare: Script::new(DECLARE),
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
            AskedKey::RequestState { route, digest: rs } => digest(&[b"rs", route.as_bytes(), rs]),
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

impl StateStore for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn facts<'a>(&'a self, q: &'a FactsQuery) -> StoreFuture<'a, Facts> {
        Box::pin(async move {
            let minute = wall_ms() / 60_000;
            let scope_tag = self.scope_tag(&q.route, &q.scope);
            let address_tag = q.address.as_ref().map(|a| self.scope_tag(&q.route, a));
            let session_key = q
                .session
                .as_ref()
                .map(|s| format!("{}:caps", self.session_tag(&s.route, &s.session)));
            let ttl = millis(q.session_ttl);
            let by_address = address_tag.is_some();
            self.run(|conn| async move {
                let mut scope_pipe = redis::pipe();
                for fp in &q.fingerprints {
                    scope_pipe
                        .cmd("EXISTS")
                        .arg(format!("{scope_tag}:d:{fp:016x}"));
                }
                let rate = format!("{scope_tag}:r:{minute}");
                for _ in &q.fingerprints {
                    scope_pipe.cmd("INCR").arg(&rate);
                }
                scope_pipe.cmd("PEXPIRE").arg(&rate).arg(120_000).ignore();
                let mut address_pipe = redis::pipe();
                if let Some(tag) = &address_tag {
                    let rate = format!("{tag}:r:{minute}");
                    for _ in &q.fingerprints {
                        address_pipe.cmd("INCR").arg(&rate);
                    }
                    address_pipe.cmd("PEXPIRE").arg(&rate).arg(120_000).ignore();
                }
                let (mut c1, mut c2, mut c3) = (conn.clone(), conn.clone(), conn);
                let session = async {
                    match &session_key {
                        Some(k) => {
                            redis::cmd("GETEX")
                                .arg(k)
                                .arg("PX")
                                .arg(ttl)
                                .query_async::<Option<String>>(&mut c1)
                                .await
                        }
                        None => Ok::<Option<String>, redis::RedisError>(None),
                    }
                };
                let scope = scope_pipe.query_async::<Vec<i64>>(&mut c2);
                let address = async {
                    if address_tag.is_some() {
                        address_pipe.query_async::<Vec<i64>>(&mut c3).await
                    } else {
                        Ok(Vec::new())
                    }
                };
                let (session, scope, address) = tokio::join!(session, scope, address);
                Ok((session?, scope?, address?))
            })
            .await
            .and_then(|(session, scope, address)| {
                let n = q.fingerprints.len();
                if scope.len() != 2 * n || (by_address && address.len() != n) {
                    return Err(Unavailable);
                }
                let session = match session {
                    Some(text) => Some(decode::<SessionRecord>(&text)?),
                    None => None,
                };
                let count = |v: &i64| u32::try_from(*v).unwrap_or(u32::MAX);
                Ok(Facts {
                    session,
                    declined: scope[..n].iter().map(|v| *v > 0).collect(),
                    counts: scope[n..].iter().map(count).collect(),
                    address_counts: address.iter().map(count).collect(),
                })
            })
        })
    }

    fn put_session<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        ttl: Duration,
        only_new: bool,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let value = encode(&record)?;
            let k = format!("{}:caps", self.session_tag(&key.route, &key.session));
            self.run(|mut c| async move {
                let mut cmd = redis::cmd("SET");
                cmd.arg(&k).arg(value).arg("PX").arg(millis(ttl));
                if only_new {
                    cmd.arg("NX");
                }
                let done: Option<String> = cmd.query_async(&mut c).await?;
                Ok(done.is_some())
            })
            .await
        })
    }

    fn declare_announced<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, Declared> {
        Box::pin(async move {
            let value = encode(&record)?;
            let k = format!("{}:caps", self.session_tag(&key.route, &key.session));
            let outcome: String = self
                .run(|mut c| async move {
                    self.declare
                        .key(&k)
                        .arg(value)
                        .arg(millis(ttl))
                        .invoke_async(&mut c)
                        .await
                })
                .await?;
            Ok(match outcome.as_str() {
                "declared" => Declared::Declared,
                "already" => Declared::AlreadyDeclared,
                _ => Declared::Unknown,
            })
        })
    }

    fn session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let k = format!("{}:caps", self.session_tag(&key.route, &key.session));
            let text: Option<String> = self
                .run(|mut c| async move { redis::cmd("GET").arg(&k).query_async(&mut c).await })
                .await?;
            text.map(|t| decode(&t)).transpose()
        })
    }

    fn touch_session<'a>(&'a self, key: &'a SessionKey, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let k = format!("{}:caps", self.session_tag(&key.route, &key.session));
            self.run(|mut c| async move {
                redis::cmd("PEXPIRE")
                    .arg(&k)
                    .arg(millis(ttl))
                    .query_async::<()>(&mut c)
                    .await
            })
            .await
        })
    }

    fn end_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let tag = self.session_tag(&key.route, &key.session);
            self.run(|mut c| async move {
                redis::cmd("DEL")
                    .arg(format!("{tag}:caps"))
                    .arg(format!("{tag}:pending"))
                    .query_async::<()>(&mut c)
                    .await
            })
            .await
        })
    }

    fn put_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        record: &'a PendingRecord,
        ttl: Duration,
        url: Option<&'a UrlKey>,
    ) -> StoreFuture<'a, Vec<PendingKey>> {
        Box::pin(async move {
            let value = format!("{}|{}", record.deadline_ms, encode(record)?);
            let hash = format!("{}:pending", self.session_tag(&key.route, &key.session));
            let field = Self::pending_field(key);
            let hash_ttl = millis(ttl + RELEASE_GRACE);
            let url_key = url.map(|u| self.url_key(u));
            self.run(|conn| async move {
                let (mut c1, mut c2) = (conn.clone(), conn);
                let pending = async {
                    self.put_pending
                        .key(&hash)
                        .arg(&field)
                        .arg(&value)
                        .arg(hash_ttl)
                        .arg(wall_ms())
                        .arg(millis(RELEASE_GRACE))
                        .invoke_async::<()>(&mut c1)
                        .await
                };
                let url = async {
                    match &url_key {
                        Some(k) => {
                            redis::cmd("SET")
                                .arg(k)
                                .arg("0")
                                .arg("PX")
                                .arg(millis(ttl))
                                .query_async::<()>(&mut c2)
                                .await
                        }
                        None => Ok(()),
                    }
                };
                let (a, b) = tokio::join!(pending, url);
                a.and(b)
            })
            .await?;
            // Redis bounds itself (expiry, `maxmemory`): nothing is evicted for the caller.
            Ok(Vec::new())
        })
    }

    fn take_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        purpose: Take,
        answered_ttl: Duration,
    ) -> StoreFuture<'a, Taken> {
        Box::pin(async move {
            let tag = self.session_tag(&key.route, &key.session);
            let field = Self::pending_field(key);
            let now = wall_ms();
            let purpose = match purpose {
                Take::Answer => "answer",
                Take::Release => "release",
            };
            let reply: Vec<String> = self
                .run(|mut c| async move {
                    self.take
                        .key(format!("{tag}:pending"))
                        .key(format!("{tag}:answered"))
                        .arg(&field)
                        .arg(purpose)
                        .arg(now)
                        .arg(now.saturating_add(millis(answered_ttl)))
                        .arg(millis(answered_ttl))
                        .invoke_async(&mut c)
                        .await
                })
                .await?;
            match reply.first().map(String::as_str) {
                Some("pending") => {
                    let record = decode::<PendingRecord>(reply.get(1).ok_or(Unavailable)?)?;
                    Ok(Taken::Pending(Box::new(record)))
                }
                Some("answered") => Ok(Taken::Answered),
                Some("absent") => Ok(Taken::Absent),
                _ => Err(Unavailable),
            }
        })
    }

    fn forget_pending<'a>(&'a self, keys: &'a [PendingKey]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let deletions: Vec<(String, String)> = keys
                .iter()
                .map(|k| {
                    let hash = format!("{}:pending", self.session_tag(&k.route, &k.session));
                    (hash, Self::pending_field(k))
                })
                .collect();
            let commands = deletions.iter().map(|(hash, field)| {
                let mut cmd = redis::cmd("HDEL");
                cmd.arg(hash).arg(field);
                cmd
            });
            let commands: Vec<Cmd> = commands.collect();
            self.run(|conn| all(conn, commands)).await
        })
    }

    fn put_url_ids<'a>(&'a self, keys: &'a [UrlKey], ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if keys.is_empty() {
                return Ok(());
            }
            let names: Vec<String> = keys.iter().map(|k| self.url_key(k)).collect();
            let commands: Vec<Cmd> = names
                .iter()
                .map(|k| {
                    let mut cmd = redis::cmd("SET");
                    cmd.arg(k).arg("0").arg("PX").arg(millis(ttl));
                    cmd
                })
                .collect();
            self.run(|conn| all(conn, commands)).await
        })
    }

    fn complete_url<'a>(&'a self, key: &'a UrlKey) -> StoreFuture<'a, Completion> {
        Box::pin(async move {
            let k = self.url_key(key);
            let before: Option<String> = self
                .run(|mut c| async move {
                    redis::cmd("SET")
                        .arg(&k)
                        .arg("1")
                        .arg("XX")
                        .arg("GET")
                        .arg("KEEPTTL")
                        .query_async(&mut c)
                        .await
                })
                .await?;
            Ok(match before.as_deref() {
                Some("0") => Completion::Completed,
                Some(_) => Completion::AlreadyCompleted,
                None => Completion::Unknown,
            })
        })
    }

    fn put_asked<'a>(
        &'a self,
        key: &'a AskedKey,
        record: &'a AskedRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let value = encode(record)?;
            let k = self.asked_key(key);
            self.run(|mut c| async move {
                redis::cmd("SET")
                    .arg(&k)
                    .arg(value)
                    .arg("PX")
                    .arg(millis(ttl))
                    .query_async::<()>(&mut c)
                    .await
            })
            .await
        })
    }

    fn take_asked<'a>(&'a self, key: &'a AskedKey) -> StoreFuture<'a, Option<AskedRecord>> {
        Box::pin(async move {
            let k = self.asked_key(key);
            let text: Option<String> = self
                .run(|mut c| async move { redis::cmd("GETDEL").arg(&k).query_async(&mut c).await })
                .await?;
            text.map(|t| decode(&t)).transpose()
        })
    }

    fn remember_decline<'a>(
        &'a self,
        key: &'a DeclineKey,
        window: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if window.is_zero() {
                return Ok(());
            }
            let k = format!(
                "{}:d:{:016x}",
                self.scope_tag(&key.route, &key.scope),
                key.fingerprint
            );
            self.run(|mut c| async move {
                redis::cmd("SET")
                    .arg(&k)
                    .arg("1")
                    .arg("PX")
                    .arg(millis(window))
                    .query_async::<()>(&mut c)
                    .await
            })
            .await
        })
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(RedisStore::ping(self))
    }
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
