//! Shared enforcement state (`state.backend: redis`) against real `redis-server` processes:
//! the store's atomic operations from two replicas at once, replicas of the gateway sharing
//! sessions, answers and replays, the store going down and coming back mid-test, a Redis
//! Cluster, and anonymous users behind one address never sharing per-user memory.

use crate::common::redis::{RedisCluster, RedisServer};
use crate::common::scripted::*;
use crate::common::*;
use elicitgate::settings::RedisSettings;
use elicitgate::state::shared::RedisStore;
use elicitgate::state::*;
use elicitgate_core::inspect::AskedElicitation;
use http::StatusCode;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn redis_settings(url: &str) -> RedisSettings {
    RedisSettings {
        url: Some(serde_json::from_value(json!(url)).unwrap()),
        ..RedisSettings::default()
    }
}

fn record(scope: &str) -> PendingRecord {
    let now = wall_ms();
    PendingRecord {
        asked: AskedElicitation {
            mode: elicitgate_core::elicitation::Mode::Form,
            requested_schema: Some(
                json!({"type":"object","properties":{"region":{"type":"string"}}}),
            ),
            elicitation_id: None,
            key: None,
            fingerprint: 42,
        },
        asked_at_ms: now,
        deadline_ms: now + 60_000,
        mode: elicitgate_core::elicitation::Mode::Form,
        scope: scope.into(),
        principal: None,
    }
}

fn pending_key(id: &str) -> PendingKey {
    PendingKey {
        route: Arc::from("demo"),
        session: Arc::from("session-secret-123"),
        id: id.into(),
    }
}

#[tokio::test]
async fn two_replicas_taking_one_answer_get_it_exactly_once() {
    let redis = RedisServer::start();
    let a = Arc::new(RedisStore::new(&redis_settings(&redis.url())).unwrap());
    let b = Arc::new(RedisStore::new(&redis_settings(&redis.url())).unwrap());
    let ttl = Duration::from_secs(60);
    for round in 0..50 {
        let key = pending_key(&format!("\"e-{round}\""));
        a.put_pending(&key, &record("s:x"), ttl, None)
            .await
            .unwrap();
        let (ka, kb) = (key.clone(), key.clone());
        let (sa, sb) = (a.clone(), b.clone());
        let ta = tokio::spawn(async move { sa.take_pending(&ka, Take::Answer, ttl).await });
        let tb = tokio::spawn(async move { sb.take_pending(&kb, Take::Answer, ttl).await });
        let outcomes = [ta.await.unwrap().unwrap(), tb.await.unwrap().unwrap()];
        let won = outcomes
            .iter()
            .filter(|t| matches!(t, Taken::Pending(_)))
            .count();
        assert_eq!(won, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes.contains(&Taken::Answered),
            "the loser sees a replay"
        );
        // Release after an answer finds nothing: the server is not told twice.
        let released = b.take_pending(&key, Take::Release, ttl).await.unwrap();
        assert!(!matches!(released, Taken::Pending(_)), "{released:?}");
    }
    // Completions, 2026 retries, declines and rate counts across replicas, and what the store
    // may hold: the conformance suite (`state_conformance.rs`) runs them on this store too.
    // Nothing stored names the session id in clear.
    let dump = redis.dump();
    assert!(!dump.is_empty());
    assert!(!dump.contains("session-secret-123"), "{dump}");
    assert!(!dump.contains("eid-1"), "{dump}");
}

/// A legacy server whose `tools/call` streams `form` for tool `form` and a plain result for
/// anything else.
async fn form_server() -> MockUpstream {
    legacy_server(|msg| {
        if msg["params"]["name"] == "form" {
            sse(&[form(
                "f-1",
                "Pick a region",
                json!({"region":{"type":"string","enum":["eu","us"]}}),
            )])
        } else {
            sse(&[json!({"jsonrpc":"2.0","id":msg["id"],"result":{"content":[]}})])
        }
    })
    .await
}

fn redis_config(upstream: &MockUpstream, redis_yaml: &str) -> String {
    config_for(
        &upstream.url("/mcp"),
        &format!("state:\n  backend: redis\n  redis:\n    {redis_yaml}\n    timeout: 300ms\n    connect_timeout: 300ms\n"),
    )
}

async fn call(gw: &TestGateway, name: &str) -> String {
    let req = in_session(rpc_post(
        &gw.url(),
        &json!({"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":name}})
            .to_string(),
    ));
    let (status, _, body) = send(req).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8(body.to_vec()).unwrap()
}

/// Declared via one replica, asked via another, answered via a third, replayed via the first.
async fn round_trip_across(replicas: &[TestGateway], upstream: &MockUpstream) {
    initialize(&replicas[0], BOTH).await;
    let stream = call(&replicas[1 % replicas.len()], "form").await;
    assert!(
        stream.contains("f-1"),
        "modes declared on another replica hold: {stream}"
    );
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    let third = &replicas[2 % replicas.len()];
    assert_eq!(
        answer(third, "f-1", accept.clone()).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = answer(&replicas[0], "f-1", accept).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a replay through another replica"
    );
    assert_eq!(body["error"]["data"]["rules"], json!(["response.unknown"]));
    let answers: Vec<Value> = upstream
        .requests()
        .iter()
        .map(body_json)
        .filter(|m| m["id"] == "f-1" && m.get("result").is_some())
        .collect();
    assert_eq!(answers.len(), 1, "the server got the answer once");
}

#[tokio::test]
async fn replicas_on_one_redis_share_sessions_answers_and_replays() {
    let redis = RedisServer::start();
    let upstream = form_server().await;
    let yaml = redis_config(&upstream, &format!("url: \"{}\"", redis.url()));
    let replicas = [
        gateway(&yaml).await,
        gateway(&yaml).await,
        gateway(&yaml).await,
    ];
    round_trip_across(&replicas, &upstream).await;
    // An invalid answer through any replica is refused, and the server's call ended.
    let stream = call(&replicas[2], "form").await;
    assert!(stream.contains("f-1"));
    let bad = json!({"action":"accept","content":{"region":"mars"}});
    let (status, body) = answer(&replicas[1], "f-1", bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["data"]["rules"], json!(["response.invalid"]));
    for gw in replicas {
        gw.shutdown().await;
    }
}

#[tokio::test]
async fn a_replica_restarted_mid_session_changes_nothing() {
    let redis = RedisServer::start();
    let upstream = form_server().await;
    let yaml = redis_config(&upstream, &format!("url: \"{}\"", redis.url()));
    let a = gateway(&yaml).await;
    initialize(&a, BOTH).await;
    // The session's replica goes away (a rolling restart); its successor knows the session.
    a.shutdown().await;
    let b = gateway(&yaml).await;
    assert!(call(&b, "form").await.contains("f-1"));
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    // The replica that showed the elicitation restarts before the answer arrives.
    b.shutdown().await;
    let c = gateway(&yaml).await;
    assert_eq!(answer(&c, "f-1", accept).await.0, StatusCode::ACCEPTED);
    c.shutdown().await;
}

#[tokio::test]
async fn a_redis_cluster_holds_the_same_state() {
    let cluster = RedisCluster::start();
    let upstream = form_server().await;
    let yaml = redis_config(&upstream, &format!("cluster: [{}]", cluster.seeds_yaml()));
    let replicas = [gateway(&yaml).await, gateway(&yaml).await];
    round_trip_across(&replicas, &upstream).await;
    // Keys of one session share a slot; the others spread over the masters.
    let keys: usize = cluster
        .nodes
        .iter()
        .map(|n| {
            crate::common::redis::cli(n.port, &["DBSIZE"])
                .and_then(|s| s.trim().parse::<usize>().ok())
                .unwrap_or(0)
        })
        .sum();
    assert!(keys >= 2, "state was written to the cluster");
    for gw in replicas {
        gw.shutdown().await;
    }
}

fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn wait_for_gauge(gw: &TestGateway, name: &str, want: f64) {
    for _ in 0..100 {
        if gauge(&metrics(gw.admin_addr).await, name) == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never became {want}");
}

#[tokio::test]
async fn with_redis_down_ordinary_traffic_flows_and_state_fails_closed_until_it_is_back() {
    let mut redis = RedisServer::start();
    let upstream = form_server().await;
    let gw = gateway(&redis_config(
        &upstream,
        &format!("url: \"{}\"", redis.url()),
    ))
    .await;
    initialize(&gw, BOTH).await;
    assert!(call(&gw, "form").await.contains("f-1"));
    wait_for_gauge(&gw, "elicitgate_state_store_up", 1.0).await;

    redis.stop();
    // Ordinary traffic never touches the store.
    assert!(call(&gw, "plain").await.contains("\"result\""));
    // The pending answer cannot be checked: refused, and the server's call ended.
    let accept = json!({"action":"accept","content":{"region":"eu"}});
    let (status, body) = answer(&gw, "f-1", accept).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["data"]["rules"], json!(["state.unavailable"]));
    let told = gateway_answer_within(&upstream, "f-1", Duration::from_secs(5)).await;
    assert!(told["error"].is_object(), "{told}");
    // A new elicitation is not shown; the server is answered as for any block.
    let stream = call(&gw, "form").await;
    assert!(!stream.contains("Pick a region"), "{stream}");
    let blocked = gw.audit_of("elicitation.blocked").await;
    assert!(
        blocked.iter().any(|e| e["rules"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("state.unavailable")))),
        "{blocked:?}"
    );
    wait_for_gauge(&gw, "elicitgate_state_store_up", 0.0).await;
    let m = metrics(gw.admin_addr).await;
    assert!(
        m.contains("elicitgate_state_store_errors_total{operation=\""),
        "{m}"
    );

    redis.restart();
    // Recovery needs nobody: the health check and the next operation reconnect.
    wait_for_gauge(&gw, "elicitgate_state_store_up", 1.0).await;
    // The restarted server is empty: the client initialises again and is served.
    initialize(&gw, BOTH).await;
    assert!(call(&gw, "form").await.contains("Pick a region"));
    gw.shutdown().await;
}

/// A 2026-07-28 server: a call without `inputResponses` asks for a region; a retry that
/// declined is asked the same again (a new `requestState`); an accepted one completes.
async fn asking_2026_server() -> MockUpstream {
    let n = Arc::new(AtomicUsize::new(0));
    MockUpstream::start(move |seen| {
        let msg = body_json(seen);
        let i = n.fetch_add(1, Ordering::Relaxed);
        let ask = json!({"resultType":"input_required","requestState":format!("rs-{i}"),"inputRequests":{
            "region":{"method":"elicitation/create","params":{"mode":"form","message":"Pick a region",
                "requestedSchema":{"type":"object","properties":{"region":{"type":"string"}}}}}}});
        let result = match msg["params"]["inputResponses"]["region"]["action"].as_str() {
            None => ask,
            Some("decline") => ask,
            Some(_) => json!({"resultType":"complete","content":[]}),
        };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string())
    })
    .await
}

async fn modern(gw: &TestGateway, extra: Value) -> Value {
    let mut params = json!({"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}).to_string();
    let mut req = rpc_post(&gw.url(), &body);
    req.headers_mut()
        .insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    json(&send(req).await.2)
}

/// Anonymous users behind one address (no `Authorization`, same 127.0.0.1) on both backends.
async fn anonymous_users_do_not_share_declines(gw: &TestGateway) {
    // Client A is asked, declines; the server asks the same again in A's retry chain.
    let asked = modern(gw, json!({})).await;
    let rs = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let decline = json!({"region":{"action":"decline"}});
    let again = modern(gw, json!({"requestState":rs,"inputResponses":decline})).await;
    assert_eq!(
        again["error"]["data"]["rules"],
        json!(["repeat.after_decline"]),
        "asked again in the same chain after a decline: {again}"
    );
    // Client B, same address, its own request: the same form is allowed.
    let other = modern(gw, json!({})).await;
    assert_eq!(other["result"]["resultType"], "input_required", "{other}");
}

#[tokio::test]
async fn anonymous_2026_users_behind_one_address_are_not_one_user() {
    let upstream = asking_2026_server().await;
    let gw = gateway(&config_for(&upstream.url("/mcp"), "")).await;
    anonymous_users_do_not_share_declines(&gw).await;
    gw.shutdown().await;
    let redis = RedisServer::start();
    let gw = gateway(&redis_config(
        &upstream,
        &format!("url: \"{}\"", redis.url()),
    ))
    .await;
    anonymous_users_do_not_share_declines(&gw).await;
    gw.shutdown().await;
}
