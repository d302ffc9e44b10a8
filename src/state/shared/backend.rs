//! [`StateStore`] on Redis: each operation as the commands and scripts of the key layout in
//! [`super`], bounded by the operation timeout.

use super::{all, decode, encode, millis, RedisStore};
use crate::state::*;
use redis::Cmd;
use std::time::Duration;

impl StateStore for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn facts<'a>(&'a self, q: &'a FactsQuery) -> StoreFuture<'a, Facts> {
        Box::pin(async move {
            // A sliding minute: this wall-clock minute's count plus the previous minute's,
            // weighted by the part of it still inside the last 60 s, so a burst straddling a
            // minute boundary is not counted afresh (the estimate Cloudflare and nginx's
            // limit_req-style counters use; exact counts would need a sorted set per scope).
            let now_ms = wall_ms();
            let minute = now_ms / 60_000;
            let carry = 1.0 - (now_ms % 60_000) as f64 / 60_000.0;
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
                scope_pipe
                    .cmd("GET")
                    .arg(format!("{scope_tag}:r:{}", minute.saturating_sub(1)));
                let mut address_pipe = redis::pipe();
                if let Some(tag) = &address_tag {
                    let rate = format!("{tag}:r:{minute}");
                    for _ in &q.fingerprints {
                        address_pipe.cmd("INCR").arg(&rate);
                    }
                    address_pipe.cmd("PEXPIRE").arg(&rate).arg(120_000).ignore();
                    address_pipe
                        .cmd("GET")
                        .arg(format!("{tag}:r:{}", minute.saturating_sub(1)));
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
                let scope = scope_pipe.query_async::<Vec<Option<i64>>>(&mut c2);
                let address = async {
                    if address_tag.is_some() {
                        address_pipe.query_async::<Vec<Option<i64>>>(&mut c3).await
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
                if scope.len() != 2 * n + 1 || (by_address && address.len() != n + 1) {
                    return Err(Unavailable);
                }
                let session = match session {
                    Some(text) => Some(decode::<SessionRecord>(&text)?),
                    None => None,
                };
                let sliding = |counts: &[Option<i64>]| -> Vec<u32> {
                    let Some((previous, current)) = counts.split_last() else {
                        return Vec::new();
                    };
                    let carried = (previous.unwrap_or(0).max(0) as f64 * carry) as i64;
                    current
                        .iter()
                        .map(|v| {
                            let v = v.unwrap_or(0).saturating_add(carried);
                            u32::try_from(v).unwrap_or(u32::MAX)
                        })
                        .collect()
                };
                Ok(Facts {
                    session,
                    declined: scope[..n].iter().map(|v| v.unwrap_or(0) > 0).collect(),
                    counts: sliding(&scope[n..]),
                    address_counts: sliding(&address),
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
