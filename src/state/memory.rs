//! The embedded state store (`state.backend: memory`, the default): the [`StateStore`] of one
//! process, in bounded tables ([`TtlTable`]) behind one lock.
//!
//! Owns the bounds of the embedded state: sessions (`limits.max_sessions`), each table of
//! asked elicitations in entries and bytes (`limits.max_pending`, `limits.max_pending_bytes`;
//! the oldest evicted first, and an evicted legacy elicitation is reported so its server can be
//! told), and the rest by count. Every future it returns is ready at once.

use crate::state::table::TtlTable;
use crate::state::*;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bounds on the embedded tables.
#[derive(Debug, Clone)]
pub struct MemoryLimits {
    pub max_sessions: usize,
    pub max_pending: usize,
    pub max_pending_bytes: usize,
}

struct Tables {
    sessions: TtlTable<SessionKey, SessionRecord>,
    pending: TtlTable<PendingKey, PendingRecord>,
    answered: TtlTable<PendingKey, ()>,
    url_ids: TtlTable<UrlKey, bool>,
    asked: TtlTable<AskedKey, AskedRecord>,
    declined: TtlTable<DeclineKey, ()>,
    rate: TtlTable<(std::sync::Arc<str>, Scope), RateWindow>,
}

/// A sliding minute of elicitations for one scope: the count of the window that started at
/// `started`, and of the one before it, which is carried in proportion to the part of it still
/// inside the last 60 s (the same estimate the Redis store makes; no reset at a boundary).
#[derive(Debug, Clone, Copy)]
struct RateWindow {
    started: Instant,
    count: u32,
    previous: u32,
}

const MINUTE: Duration = Duration::from_secs(60);

/// The embedded store.
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

fn ready<'a, T: Send + 'a>(value: T) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(Ok(value)))
}

impl MemoryStore {
    pub fn new(limits: &MemoryLimits) -> Self {
        let pending = limits.max_pending;
        Self {
            tables: Mutex::new(Tables {
                sessions: TtlTable::new(limits.max_sessions),
                pending: TtlTable::with_budget(pending, limits.max_pending_bytes).reporting(),
                answered: TtlTable::new(pending),
                url_ids: TtlTable::new(pending),
                asked: TtlTable::with_budget(pending, limits.max_pending_bytes),
                declined: TtlTable::new(pending),
                rate: TtlTable::new(limits.max_sessions),
            }),
        }
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // A panic while holding the lock must not take enforcement down with it; the tables
        // stay structurally valid whatever was interrupted.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Tables {
    fn count(&mut self, route: &std::sync::Arc<str>, scope: &Scope, now: Instant) -> u32 {
        let key = (route.clone(), scope.clone());
        let window = match self.rate.get_mut(&key, now) {
            Some(w) => {
                let elapsed = now.duration_since(w.started);
                if elapsed >= 2 * MINUTE {
                    *w = RateWindow {
                        started: now,
                        count: 0,
                        previous: 0,
                    };
                } else if elapsed >= MINUTE {
                    *w = RateWindow {
                        started: w.started + MINUTE,
                        count: 0,
                        previous: w.count,
                    };
                }
                w.count = w.count.saturating_add(1);
                let w = *w;
                self.rate.touch(&key, now, 2 * MINUTE);
                w
            }
            None => {
                let window = RateWindow {
                    started: now,
                    count: 1,
                    previous: 0,
                };
                self.rate.insert(key, window, now, 2 * MINUTE);
                window
            }
        };
        let into = now.duration_since(window.started).as_secs_f64() / MINUTE.as_secs_f64();
        let carried = (f64::from(window.previous) * (1.0 - into.min(1.0))) as u32;
        window.count.saturating_add(carried)
    }
}

impl StateStore for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn facts<'a>(&'a self, q: &'a FactsQuery) -> StoreFuture<'a, Facts> {
        let now = Instant::now();
        let mut t = self.tables();
        let session = q.session.as_ref().and_then(|key| {
            t.sessions.touch(key, now, q.session_ttl);
            t.sessions.get(key, now).cloned()
        });
        let mut facts = Facts {
            session,
            ..Facts::default()
        };
        for &fingerprint in &q.fingerprints {
            let key = DeclineKey {
                route: q.route.clone(),
                scope: q.scope.clone(),
                fingerprint,
            };
            facts.declined.push(t.declined.get(&key, now).is_some());
            facts.counts.push(t.count(&q.route, &q.scope, now));
            if let Some(address) = &q.address {
                facts.address_counts.push(t.count(&q.route, address, now));
            }
        }
        ready(facts)
    }

    fn put_session<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        ttl: Duration,
        only_new: bool,
    ) -> StoreFuture<'a, bool> {
        let now = Instant::now();
        let mut t = self.tables();
        if only_new && t.sessions.get(key, now).is_some() {
            return ready(false);
        }
        t.sessions.insert(key.clone(), record, now, ttl);
        ready(true)
    }

    fn declare_announced<'a>(
        &'a self,
        key: &'a SessionKey,
        record: SessionRecord,
        _ttl: Duration,
    ) -> StoreFuture<'a, Declared> {
        let now = Instant::now();
        let mut t = self.tables();
        let outcome = match t.sessions.get_mut(key, now) {
            Some(s) if s.caps.is_none() => {
                *s = record;
                Declared::Declared
            }
            Some(_) => Declared::AlreadyDeclared,
            None => Declared::Unknown,
        };
        ready(outcome)
    }

    fn session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<SessionRecord>> {
        let found = self.tables().sessions.get(key, Instant::now()).cloned();
        ready(found)
    }

    fn touch_session<'a>(&'a self, key: &'a SessionKey, ttl: Duration) -> StoreFuture<'a, ()> {
        self.tables().sessions.touch(key, Instant::now(), ttl);
        ready(())
    }

    fn end_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, ()> {
        let mut t = self.tables();
        t.sessions.remove(key, Instant::now());
        t.pending
            .retain_keys(|k| !(k.route == key.route && k.session == key.session));
        // The client ended the session, and the server with it: nothing to answer.
        t.pending.take_dropped();
        ready(())
    }

    fn put_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        record: &'a PendingRecord,
        ttl: Duration,
        url: Option<&'a UrlKey>,
    ) -> StoreFuture<'a, Vec<PendingKey>> {
        let now = Instant::now();
        let mut t = self.tables();
        if let Some(url) = url {
            t.url_ids.insert(url.clone(), false, now, ttl);
        }
        let weight = record.weight();
        t.pending.insert_weighted(
            key.clone(),
            record.clone(),
            weight,
            now,
            ttl + RELEASE_GRACE,
        );
        // Evicted to make room: their servers are told by the caller. (Expired ones are
        // found by the caller's own release table.)
        let evicted = t
            .pending
            .take_dropped_keys()
            .into_iter()
            .filter(|(_, why)| *why == crate::state::table::Dropped::Evicted)
            .map(|(k, _)| k)
            .collect();
        ready(evicted)
    }

    fn take_pending<'a>(
        &'a self,
        key: &'a PendingKey,
        purpose: Take,
        answered_ttl: Duration,
    ) -> StoreFuture<'a, Taken> {
        let now = Instant::now();
        let mut t = self.tables();
        let live = t
            .pending
            .get(key, now)
            .map(|r| purpose == Take::Release || wall_ms() < r.deadline_ms);
        let taken = match live {
            Some(true) => {
                let record = t.pending.remove(key, now).map(Box::new);
                if purpose == Take::Answer {
                    t.answered.insert(key.clone(), (), now, answered_ttl);
                }
                record.map_or(Taken::Absent, Taken::Pending)
            }
            Some(false) => Taken::Absent,
            None if t.answered.get(key, now).is_some() => Taken::Answered,
            None => Taken::Absent,
        };
        ready(taken)
    }

    fn forget_pending<'a>(&'a self, keys: &'a [PendingKey]) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        let mut t = self.tables();
        for key in keys {
            t.pending.remove(key, now);
        }
        ready(())
    }

    fn put_url_ids<'a>(&'a self, keys: &'a [UrlKey], ttl: Duration) -> StoreFuture<'a, ()> {
        let now = Instant::now();
        let mut t = self.tables();
        for key in keys {
            t.url_ids.insert(key.clone(), false, now, ttl);
        }
        ready(())
    }

    fn complete_url<'a>(&'a self, key: &'a UrlKey) -> StoreFuture<'a, Completion> {
        let mut t = self.tables();
        let outcome = match t.url_ids.get_mut(key, Instant::now()) {
            Some(done) if !*done => {
                *done = true;
                Completion::Completed
            }
            Some(_) => Completion::AlreadyCompleted,
            None => Completion::Unknown,
        };
        ready(outcome)
    }

    fn put_asked<'a>(
        &'a self,
        key: &'a AskedKey,
        record: &'a AskedRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        let weight = record.weight();
        self.tables().asked.insert_weighted(
            key.clone(),
            record.clone(),
            weight,
            Instant::now(),
            ttl,
        );
        ready(())
    }

    fn take_asked<'a>(&'a self, key: &'a AskedKey) -> StoreFuture<'a, Option<AskedRecord>> {
        let taken = self.tables().asked.remove(key, Instant::now());
        ready(taken)
    }

    fn remember_decline<'a>(
        &'a self,
        key: &'a DeclineKey,
        window: Duration,
    ) -> StoreFuture<'a, ()> {
        if !window.is_zero() {
            self.tables()
                .declined
                .insert(key.clone(), (), Instant::now(), window);
        }
        ready(())
    }

    fn sweep(&self) {
        let now = Instant::now();
        let mut t = self.tables();
        t.sessions.sweep(now);
        t.pending.sweep(now);
        t.pending.take_dropped();
        t.answered.sweep(now);
        t.url_ids.sweep(now);
        t.asked.sweep(now);
        t.declined.sweep(now);
        t.rate.sweep(now);
    }

    fn counts(&self) -> (usize, usize) {
        let t = self.tables();
        (t.sessions.len(), t.asked.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elicitgate_core::inspect::AskedElicitation;
    use std::sync::Arc;

    fn now_or_never<T>(f: StoreFuture<'_, T>) -> T {
        use std::task::{Context, Poll};
        let mut f = f;
        let waker = std::task::Waker::noop();
        match f.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(v) => v.expect("memory store never fails"),
            Poll::Pending => panic!("memory store futures are ready at once"),
        }
    }

    fn record(deadline_ms: u64) -> PendingRecord {
        PendingRecord {
            asked: AskedElicitation {
                mode: elicitgate_core::elicitation::Mode::Form,
                requested_schema: None,
                elicitation_id: None,
                key: None,
                fingerprint: 7,
            },
            asked_at_ms: 0,
            deadline_ms,
            mode: elicitgate_core::elicitation::Mode::Form,
            scope: "s".into(),
            principal: None,
        }
    }

    fn store() -> MemoryStore {
        MemoryStore::new(&MemoryLimits {
            max_sessions: 10,
            max_pending: 2,
            max_pending_bytes: usize::MAX,
        })
    }

    fn key(id: &str) -> PendingKey {
        PendingKey {
            route: Arc::from("r"),
            session: Arc::from("s"),
            id: id.into(),
        }
    }

    #[test]
    fn an_answer_is_taken_once_then_known_as_answered() {
        let s = store();
        let ttl = Duration::from_secs(60);
        now_or_never(s.put_pending(&key("1"), &record(u64::MAX), ttl, None));
        let first = now_or_never(s.take_pending(&key("1"), Take::Answer, ttl));
        assert!(matches!(first, Taken::Pending(_)));
        assert_eq!(
            now_or_never(s.take_pending(&key("1"), Take::Answer, ttl)),
            Taken::Answered
        );
        assert_eq!(
            now_or_never(s.take_pending(&key("2"), Take::Answer, ttl)),
            Taken::Absent
        );
    }

    #[test]
    fn past_its_deadline_an_answer_is_refused_but_a_release_still_takes_it() {
        let s = store();
        let ttl = Duration::from_secs(60);
        now_or_never(s.put_pending(&key("1"), &record(1), ttl, None));
        assert_eq!(
            now_or_never(s.take_pending(&key("1"), Take::Answer, ttl)),
            Taken::Absent
        );
        let released = now_or_never(s.take_pending(&key("1"), Take::Release, ttl));
        assert!(matches!(released, Taken::Pending(_)));
    }

    #[test]
    fn eviction_is_reported_to_the_caller() {
        let s = store();
        let ttl = Duration::from_secs(60);
        for id in ["1", "2"] {
            assert!(now_or_never(s.put_pending(&key(id), &record(u64::MAX), ttl, None)).is_empty());
        }
        let evicted = now_or_never(s.put_pending(&key("3"), &record(u64::MAX), ttl, None));
        assert_eq!(evicted, vec![key("1")]);
    }

    #[test]
    fn a_url_id_completes_once() {
        let s = store();
        let k = UrlKey {
            route: Arc::from("r"),
            scope: Arc::from("s"),
            elicitation_id: "e".into(),
        };
        assert_eq!(now_or_never(s.complete_url(&k)), Completion::Unknown);
        now_or_never(s.put_url_ids(std::slice::from_ref(&k), Duration::from_secs(9)));
        assert_eq!(now_or_never(s.complete_url(&k)), Completion::Completed);
        assert_eq!(
            now_or_never(s.complete_url(&k)),
            Completion::AlreadyCompleted
        );
    }

    #[test]
    fn the_rate_count_slides_over_a_minute_boundary_instead_of_resetting() {
        let store = store();
        let mut t = store.tables();
        let (route, scope): (Arc<str>, Scope) = ("r".into(), "s".into());
        let t0 = Instant::now();
        for n in 1..=6 {
            assert_eq!(t.count(&route, &scope, t0), n);
        }
        // Just past the first window: nearly all of its six are still in the last minute.
        let t1 = t0 + MINUTE + Duration::from_secs(6);
        assert_eq!(t.count(&route, &scope, t1), 1 + 5);
        // Half-way through the second window: half of them are.
        assert_eq!(t.count(&route, &scope, t0 + MINUTE + MINUTE / 2), 2 + 3);
        // Two quiet minutes later nothing is carried.
        assert_eq!(t.count(&route, &scope, t0 + 5 * MINUTE), 1);
    }
}
