//! Verified identity (`identity.mode: jwt | header`) through the real gateway: 401 with a
//! `WWW-Authenticate` challenge for missing or bad tokens, a session bound to the principal
//! that created it (`session.mismatch`), per-principal memory that survives token refresh,
//! answers only from the principal asked, JWKS rotation picked up by the early refresh, and a
//! user header believed only from trusted proxies.

use crate::common::scripted::*;
use crate::common::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "https://gateway.test/mcp";

/// A signing key and its public JWK.
struct SigningKey {
    kid: String,
    der: Vec<u8>,
    jwk: Value,
}

fn signing_key(kid: &str) -> SigningKey {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    assert_eq!(raw[0], 4, "uncompressed point");
    SigningKey {
        kid: kid.into(),
        der: pair.serialize_der(),
        jwk: json!({"kty":"EC","crv":"P-256","kid":kid,"alg":"ES256","use":"sig",
            "x":URL_SAFE_NO_PAD.encode(&raw[1..33]),"y":URL_SAFE_NO_PAD.encode(&raw[33..65])}),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(key: &SigningKey, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&key.der)).unwrap()
}

fn claims(sub: &str, extra: Value) -> Value {
    let mut c = json!({"iss":ISSUER,"aud":AUDIENCE,"sub":sub,"iat":now(),"exp":now() + 600});
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    c
}

/// A signing key, and a JWKS file publishing it (the directory lives as long as the guard).
fn published_key() -> (SigningKey, tempfile::TempDir, std::path::PathBuf) {
    let key = signing_key("k1");
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys":[key.jwk]}).to_string()).unwrap();
    (key, dir, jwks)
}

/// A gateway verifying tokens against a JWKS file with one key, in front of `upstream`.
async fn jwt_gateway(upstream: &MockUpstream) -> (SigningKey, TestGateway, tempfile::TempDir) {
    let (key, dir, jwks) = published_key();
    let gw = gateway(&jwt_config(
        &upstream.url("/mcp"),
        &format!("jwks_file: \"{}\"", jwks.display()),
    ))
    .await;
    (key, gw, dir)
}

fn jwt_config(upstream: &str, jwks: &str) -> String {
    config_for(
        upstream,
        &format!("identity:\n  mode: jwt\n  jwt:\n    {jwks}\n    issuer: \"{ISSUER}\"\n    audience: [\"{AUDIENCE}\"]\n    algorithms: [ES256]\n    leeway: 5s\n    resource_metadata: \"https://gateway.test/.well-known/oauth-protected-resource\"\n"),
    )
}

async fn post_as(
    gw: &TestGateway,
    token: Option<&str>,
    session: bool,
    body: &str,
) -> (StatusCode, http::HeaderMap, Value) {
    let mut req = rpc_post(&gw.url(), body);
    if session {
        req = in_session(req);
    }
    if let Some(t) = token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let (status, headers, body) = send(req).await;
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, headers, value)
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#;

#[tokio::test]
async fn missing_and_bad_tokens_get_401_with_a_bearer_challenge() {
    let upstream = legacy_server(|_| sse(&[])).await;
    let (key, gw, _jwks_dir) = jwt_gateway(&upstream).await;

    let (status, headers, body) = post_as(&gw, None, false, INIT).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(
        "resource_metadata=\"https://gateway.test/.well-known/oauth-protected-resource\""
    ));
    assert!(
        !challenge.contains("invalid_token"),
        "no token is not an invalid one"
    );
    assert_eq!(body["id"], 0);

    let other = signing_key("k1");
    let bad = [
        token(&key, claims("alice", json!({"aud":"https://elsewhere"}))),
        token(&key, claims("alice", json!({"iss":"https://evil.test"}))),
        token(&key, claims("alice", json!({"exp": now() - 3600}))),
        token(&key, claims("alice", json!({"nbf": now() + 3600}))),
        token(&other, claims("alice", json!({}))),
        "not.a.jwt".to_owned(),
    ];
    for t in &bad {
        let (status, headers, _) = post_as(&gw, Some(t), false, INIT).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{t}");
        let challenge = headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    // An HS256 token signed with the public key as a secret (algorithm confusion) is refused.
    let confused = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims("alice", json!({})),
        &EncodingKey::from_secret(key.jwk.to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(
        post_as(&gw, Some(&confused), false, INIT).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        upstream.requests().len(),
        0,
        "nothing unauthenticated reached the server"
    );

    let good = token(&key, claims("alice", json!({})));
    assert_eq!(
        post_as(&gw, Some(&good), false, INIT).await.0,
        StatusCode::OK
    );
    let m = metrics(gw.admin_addr).await;
    assert!(
        m.contains("elicitgate_unauthenticated_total{reason=\"identity.token_missing\""),
        "{m}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_session_belongs_to_its_principal_and_answers_come_from_whoever_was_asked() {
    let upstream = legacy_server(|_| {
        sse(&[form(
            "f-1",
            "Pick a region",
            json!({"region":{"type":"string"}}),
        )])
    })
    .await;
    let (key, gw, _jwks_dir) = jwt_gateway(&upstream).await;
    let alice = token(&key, claims("alice", json!({})));
    let mallory = token(&key, claims("mallory", json!({})));
    assert_eq!(
        post_as(&gw, Some(&alice), false, INIT).await.0,
        StatusCode::OK
    );

    // Alice's session, used with Mallory's (valid) token: refused and audited.
    let (status, _, body) = post_as(&gw, Some(&mallory), true, CALL).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["data"]["rules"], json!(["session.mismatch"]));
    let refused = gw.audit_of("message.refused").await;
    assert!(
        refused
            .iter()
            .any(|e| e["rules"] == json!(["session.mismatch"])),
        "{refused:?}"
    );
    let seen_calls = upstream
        .requests()
        .iter()
        .map(scripted::body_json)
        .filter(|m| m["method"] == "tools/call")
        .count();
    assert_eq!(seen_calls, 0, "the hijacked call never reached the server");

    // Alice, with a refreshed token (new iat/exp), is still Alice.
    let alice_again = token(
        &key,
        claims("alice", json!({"iat": now() + 1, "exp": now() + 900})),
    );
    let (status, _, _) = post_as(&gw, Some(&alice_again), true, CALL).await;
    assert_eq!(status, StatusCode::OK);
    // Mallory cannot answer Alice's elicitation.
    let answer =
        json!({"jsonrpc":"2.0","id":"f-1","result":{"action":"accept","content":{"region":"eu"}}})
            .to_string();
    let (status, _, body) = post_as(&gw, Some(&mallory), true, &answer).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Alice can.
    let (status, _, body) = post_as(&gw, Some(&alice), true, &answer).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    gw.shutdown().await;
}

/// A 2026-07-28 server asking for a region on every call without answers.
async fn asking_server() -> MockUpstream {
    let n = Arc::new(AtomicUsize::new(0));
    MockUpstream::start(move |seen| {
        let msg = scripted::body_json(seen);
        let i = n.fetch_add(1, Ordering::Relaxed);
        let result = match msg["params"].get("inputResponses") {
            None => json!({"resultType":"input_required","requestState":format!("rs-{i}"),"inputRequests":{
                "region":{"method":"elicitation/create","params":{"mode":"form","message":"Pick a region",
                    "requestedSchema":{"type":"object","properties":{"region":{"type":"string"}}}}}}}),
            Some(_) => json!({"resultType":"complete","content":[]}),
        };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string())
    })
    .await
}

fn modern(extra: Value) -> String {
    let mut params = json!({"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}).to_string()
}

#[tokio::test]
async fn per_principal_memory_survives_token_refresh_and_retries_belong_to_their_principal() {
    let upstream = asking_server().await;
    let (key, gw, _jwks_dir) = jwt_gateway(&upstream).await;
    let alice = token(&key, claims("alice", json!({})));
    let bob = token(&key, claims("bob", json!({})));

    let (_, _, asked) = post_as(&gw, Some(&alice), false, &modern(json!({}))).await;
    let rs = asked["result"]["requestState"].as_str().unwrap().to_owned();
    // Bob cannot answer what Alice was asked: what was asked is kept per principal, so his
    // retry with her requestState finds nothing pending (and leaves hers untouched).
    let accept = json!({"region":{"action":"accept","content":{"region":"eu"}}});
    let (status, _, body) = post_as(
        &gw,
        Some(&bob),
        false,
        &modern(json!({"requestState":rs,"inputResponses":accept})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["data"]["rules"], json!(["response.unknown"]));
    // Alice declines.
    let decline = json!({"region":{"action":"decline"}});
    let (status, _, body) = post_as(
        &gw,
        Some(&alice),
        false,
        &modern(json!({"requestState":rs,"inputResponses":decline})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Alice, with a refreshed token, is not asked the same again; Bob is.
    let alice_again = token(&key, claims("alice", json!({"exp": now() + 900})));
    let (_, _, again) = post_as(&gw, Some(&alice_again), false, &modern(json!({}))).await;
    assert_eq!(
        again["error"]["data"]["rules"],
        json!(["repeat.after_decline"]),
        "{again}"
    );
    let (_, _, for_bob) = post_as(&gw, Some(&bob), false, &modern(json!({}))).await;
    assert_eq!(
        for_bob["result"]["resultType"], "input_required",
        "{for_bob}"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_rotated_key_is_picked_up_from_the_jwks_url() {
    let old = signing_key("old");
    let new = signing_key("new");
    let published = Arc::new(Mutex::new(json!({"keys":[old.jwk]})));
    let jwks = {
        let published = published.clone();
        MockUpstream::start(move |_| {
            full(
                StatusCode::OK,
                "application/json",
                published.lock().unwrap().to_string(),
            )
        })
        .await
    };
    let upstream = legacy_server(|_| sse(&[])).await;
    let gw = gateway(&jwt_config(
        &upstream.url("/mcp"),
        &format!(
            "jwks_url: \"{}\"\n    jwks_refresh: 10s",
            jwks.url("/jwks.json")
        ),
    ))
    .await;
    let with_old = token(&old, claims("alice", json!({})));
    assert_eq!(
        post_as(&gw, Some(&with_old), false, INIT).await.0,
        StatusCode::OK
    );
    // The issuer rotates: a token with the new key id triggers an early refresh.
    *published.lock().unwrap() = json!({"keys":[old.jwk, new.jwk]});
    let with_new = token(&new, claims("alice", json!({})));
    let mut accepted = false;
    for _ in 0..50 {
        if post_as(&gw, Some(&with_new), false, INIT).await.0 == StatusCode::OK {
            accepted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(accepted, "the new key was never picked up");
    gw.shutdown().await;
}

#[tokio::test]
async fn a_user_header_is_believed_only_from_trusted_proxies() {
    let upstream = legacy_server(|_| sse(&[])).await;
    let trusted = gateway(&config_for(
        &upstream.url("/mcp"),
        "identity:\n  mode: header\n  header: { name: x-authenticated-user }\n  trusted_proxies: [\"127.0.0.0/8\"]\n",
    ))
    .await;
    let mut req = rpc_post(&trusted.url(), INIT);
    req.headers_mut()
        .insert("x-authenticated-user", "alice@example.com".parse().unwrap());
    assert_eq!(send(req).await.0, StatusCode::OK);
    let (status, headers, _) = send(rpc_post(&trusted.url(), INIT)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no user header");
    assert!(headers.contains_key("www-authenticate"));
    trusted.shutdown().await;

    let untrusted = gateway(&config_for(
        &upstream.url("/mcp"),
        "identity:\n  mode: header\n  trusted_proxies: [\"10.0.0.0/8\"]\n",
    ))
    .await;
    let mut req = rpc_post(&untrusted.url(), INIT);
    req.headers_mut()
        .insert("x-forwarded-user", "alice@example.com".parse().unwrap());
    assert_eq!(
        send(req).await.0,
        StatusCode::UNAUTHORIZED,
        "a header from an untrusted peer"
    );
    untrusted.shutdown().await;
}

#[tokio::test]
async fn with_identity_on_an_unknown_session_is_not_found_not_anyones() {
    let upstream = legacy_server(|_| sse(&[])).await;
    let (key, gw, _jwks_dir) = jwt_gateway(&upstream).await;
    let alice = token(&key, claims("alice", json!({})));
    // Session `s-1` was never created through the gateway (or expired): 404, so the client
    // starts a new session, instead of anyone holding the id being let in.
    let (status, _, body) = post_as(&gw, Some(&alice), true, CALL).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["data"]["rules"], json!(["session.mismatch"]));
    gw.shutdown().await;
}
