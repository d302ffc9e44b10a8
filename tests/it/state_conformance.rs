//! One conformance suite for every state store: the same assertions run against the embedded
//! [`MemoryStore`] and the shared [`RedisStore`] on a real `redis-server`. A store passes only
//! if enforcement cannot tell which one it is talking to: sessions, announced sessions, pending
//! answers taken at most once, URL-mode completions, 2026 retries, declines and rate counts.
//!
//! `a` and `b` are two handles on one store (the same object for memory, two clients of one
//! server for Redis), so what one writes the other must read.

use crate::common::redis::RedisServer;
use elicitgate::settings::RedisSettings;
use elicitgate::state::memory::{MemoryLimits, MemoryStore};
use elicitgate::state::shared::RedisStore;
use elicitgate::state::*;
use elicitgate_core::elicitation::{ClientCaps, Mode};
use elicitgate_core::inspect::AskedElicitation;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const TTL: Duration = Duration::from_secs(60);

fn session(id: &str) -> SessionKey {
    SessionKey {
        route: Arc::from("demo"),
        session: Arc::from(id),
    }
}

fn pending_key(session: &str, id: &str) -> PendingKey {
    PendingKey {
        route: Arc::from("demo"),
        session: Arc::from(session),
        id: id.into(),
    }
}

fn pending_record(scope: &str) -> PendingRecord {
    let now = wall_ms();
    PendingRecord {
        asked: AskedElicitation {
            mode: Mode::Form,
            requested_schema: Some(
                json!({"type":"object","properties":{"region":{"type":"string"}}}),
            ),
            elicitation_id: None,
            key: None,
            fingerprint: 42,
        },
        asked_at_ms: now,
        deadline_ms: now + 60_000,
        mode: Mode::Form,
        scope: scope.into(),
        principal: Some("alice".into()),
    }
}

fn facts_query(session: Option<SessionKey>, scope: &str, fingerprints: Vec<u64>) -> FactsQuery {
    FactsQuery {
        route: Arc::from("demo"),
        session,
        session_ttl: TTL,
        scope: Arc::from(scope),
        fingerprints,
        address: None,
    }
}

/// Every store must pass this: `a` and `b` are two handles on one store.
async fn conformance(a: Arc<dyn StateStore>, b: Arc<dyn StateStore>) {
    // Sessions: written once with `only_new`, read by the other handle, ended.
    let s1 = session("session-secret-123");
    let declared = SessionRecord {
        caps: Some(ClientCaps::from_capabilities(
            &json!({"elicitation": {"form": {}}}),
        )),
        principal: Some("alice".into()),
    };
    assert!(a
        .put_session(&s1, declared.clone(), TTL, true)
        .await
        .unwrap());
    let other = SessionRecord {
        caps: Some(ClientCaps::none()),
        principal: None,
    };
    assert!(
        !b.put_session(&s1, other, TTL, true).await.unwrap(),
        "only_new overwrote"
    );
    assert_eq!(b.session(&s1).await.unwrap(), Some(declared.clone()));
    b.touch_session(&s1, TTL).await.unwrap();
    let facts = a
        .facts(&facts_query(Some(s1.clone()), "s:x", vec![]))
        .await
        .unwrap();
    assert_eq!(facts.session, Some(declared.clone()));

    // Announced sessions: the first initialize declares, a second changes nothing, a session
    // nobody announced declares nothing.
    let announced = session("announced");
    let unannounced = SessionRecord {
        caps: None,
        principal: None,
    };
    assert!(a
        .put_session(&announced, unannounced, TTL, true)
        .await
        .unwrap());
    assert_eq!(
        b.declare_announced(&announced, declared.clone(), TTL)
            .await
            .unwrap(),
        Declared::Declared
    );
    assert_eq!(
        a.declare_announced(&announced, declared.clone(), TTL)
            .await
            .unwrap(),
        Declared::AlreadyDeclared
    );
    assert_eq!(
        a.declare_announced(&session("never-announced"), declared.clone(), TTL)
            .await
            .unwrap(),
        Declared::Unknown
    );
    assert_eq!(b.session(&session("never-announced")).await.unwrap(), None);

    // Pending answers: taken once; a replay is seen as answered; a release after an answer
    // finds nothing; an unknown id is absent.
    let k1 = pending_key("session-secret-123", "\"e-1\"");
    let evicted = a
        .put_pending(&k1, &pending_record("s:x"), TTL, None)
        .await
        .unwrap();
    assert!(evicted.is_empty(), "{evicted:?}");
    match b.take_pending(&k1, Take::Answer, TTL).await.unwrap() {
        Taken::Pending(record) => assert_eq!(*record, pending_record_like(&record)),
        other => panic!("the answer was not pending: {other:?}"),
    }
    assert_eq!(
        a.take_pending(&k1, Take::Answer, TTL).await.unwrap(),
        Taken::Answered
    );
    assert!(!matches!(
        b.take_pending(&k1, Take::Release, TTL).await.unwrap(),
        Taken::Pending(_)
    ));
    assert_eq!(
        a.take_pending(
            &pending_key("session-secret-123", "\"nobody\""),
            Take::Answer,
            TTL
        )
        .await
        .unwrap(),
        Taken::Absent
    );
    // Released without an answer: the releaser gets it, nobody else.
    let k2 = pending_key("session-secret-123", "7");
    a.put_pending(&k2, &pending_record("s:x"), TTL, None)
        .await
        .unwrap();
    assert!(matches!(
        b.take_pending(&k2, Take::Release, TTL).await.unwrap(),
        Taken::Pending(_)
    ));
    assert!(!matches!(
        a.take_pending(&k2, Take::Answer, TTL).await.unwrap(),
        Taken::Pending(_)
    ));
    // Forgotten: no answer is accepted any more.
    let k3 = pending_key("session-secret-123", "8");
    a.put_pending(&k3, &pending_record("s:x"), TTL, None)
        .await
        .unwrap();
    b.forget_pending(std::slice::from_ref(&k3)).await.unwrap();
    assert!(!matches!(
        a.take_pending(&k3, Take::Answer, TTL).await.unwrap(),
        Taken::Pending(_)
    ));
    // Ending a session forgets what is pending in it.
    let k4 = pending_key("session-secret-123", "9");
    a.put_pending(&k4, &pending_record("s:x"), TTL, None)
        .await
        .unwrap();
    b.end_session(&s1).await.unwrap();
    assert_eq!(a.session(&s1).await.unwrap(), None);
    assert!(!matches!(
        a.take_pending(&k4, Take::Answer, TTL).await.unwrap(),
        Taken::Pending(_)
    ));

    // URL-mode ids: unknown until recorded, completed once.
    let url = UrlKey {
        route: Arc::from("demo"),
        scope: Arc::from("s:x"),
        elicitation_id: "eid-1".into(),
    };
    assert_eq!(b.complete_url(&url).await.unwrap(), Completion::Unknown);
    a.put_url_ids(std::slice::from_ref(&url), TTL)
        .await
        .unwrap();
    assert_eq!(b.complete_url(&url).await.unwrap(), Completion::Completed);
    assert_eq!(
        a.complete_url(&url).await.unwrap(),
        Completion::AlreadyCompleted
    );

    // 2026 retries: an asked map is consumed by exactly one retry.
    let asked_key = AskedKey::RequestState {
        route: Arc::from("demo"),
        principal: Arc::from("c:1"),
        digest: [7; 32],
    };
    let asked = AskedRecord {
        entries: Default::default(),
        asked_at_ms: wall_ms(),
        scope: "c:1".into(),
        chain: "c:1".into(),
        principal: None,
    };
    a.put_asked(&asked_key, &asked, TTL).await.unwrap();
    // The same requestState asked of another principal is another entry.
    let theirs = AskedKey::RequestState {
        route: Arc::from("demo"),
        principal: Arc::from("c:2"),
        digest: [7; 32],
    };
    assert_eq!(b.take_asked(&theirs).await.unwrap(), None);
    assert_eq!(b.take_asked(&asked_key).await.unwrap(), Some(asked));
    assert_eq!(a.take_asked(&asked_key).await.unwrap(), None);

    // Declines and rate counts: per scope, seen through either handle.
    let decline = DeclineKey {
        route: Arc::from("demo"),
        scope: Arc::from("s:x"),
        fingerprint: 42,
    };
    a.remember_decline(&decline, TTL).await.unwrap();
    let query = facts_query(None, "s:x", vec![42, 43]);
    let facts = b.facts(&query).await.unwrap();
    assert_eq!(facts.declined, [true, false]);
    assert_eq!(facts.counts, [1, 2]);
    assert_eq!(a.facts(&query).await.unwrap().counts, [3, 4]);
    let elsewhere = a.facts(&facts_query(None, "s:y", vec![42])).await.unwrap();
    assert_eq!(
        elsewhere.declined,
        [false],
        "a decline leaked into another scope"
    );
    assert_eq!(elsewhere.counts, [1]);

    a.ping().await.unwrap();
    b.ping().await.unwrap();
}

/// The record as it was put (a store may not change what it holds).
fn pending_record_like(taken: &PendingRecord) -> PendingRecord {
    PendingRecord {
        asked_at_ms: taken.asked_at_ms,
        deadline_ms: taken.deadline_ms,
        ..pending_record("s:x")
    }
}

#[tokio::test]
async fn the_memory_store_conforms() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new(&MemoryLimits {
        max_sessions: 1_000,
        max_pending: 1_000,
        max_pending_bytes: 1 << 20,
    }));
    assert_eq!(store.backend(), "memory");
    conformance(store.clone(), store).await;
}

#[tokio::test]
async fn the_redis_store_conforms() {
    let redis = RedisServer::start();
    let settings = RedisSettings {
        url: Some(serde_json::from_value(json!(redis.url())).unwrap()),
        ..RedisSettings::default()
    };
    let a: Arc<dyn StateStore> = Arc::new(RedisStore::new(&settings).unwrap());
    let b: Arc<dyn StateStore> = Arc::new(RedisStore::new(&settings).unwrap());
    assert_eq!(a.backend(), "redis");
    conformance(a, b).await;
    // Nothing stored names a session id or an elicitation id in clear.
    let dump = redis.dump();
    assert!(!dump.is_empty());
    assert!(!dump.contains("session-secret-123"), "{dump}");
    assert!(!dump.contains("eid-1"), "{dump}");
}
