//! Secrets never leak: known secrets, e-mails, card numbers and tokens are planted in every
//! place a client or server can put them (form content, defaults, descriptions, messages,
//! URLs, request state, headers) across allowed, blocked and rejected cases; the real binary
//! runs with debug JSON logs and a file audit sink; stdout, stderr, the audit file and
//! `/metrics` must contain none of the planted values.

use crate::common::scripted::*;
use crate::common::serve::Served;
use crate::common::*;
use http::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

const PASSWORD: &str = "Pl4nted-Passw0rd!";
const EMAIL: &str = "planted.victim@example.org";
const CARD: &str = "4111111111111111";
const TOKEN: &str = "ghp_PlantedToken0123456789abcdefABCDEF";
const BEARER: &str = "planted-bearer-credential-xyz";
const COOKIE: &str = "planted-cookie-value-123";
const DEFAULT: &str = "planted-default-value-777";
const DESCRIPTION: &str = "planted-description-text-555";
const MESSAGE: &str = "planted-message-text-999";
const QUERY: &str = "planted-query-value-444";
const STATE: &str = "planted-request-state-333";
// Key formats and numbers the scrub's own shapes do not know, only the policy's detectors:
// in a URL path segment and a query name, they must still never be written raw.
const HF_KEY: &str = "hf_PlantedHuggingFaceKey0123456789abcd";
const NPM_KEY: &str = "npm_PlantedNpmToken0123456789abcdefghijkl";
const STRIPE_KEY: &str = "rk_live_PlantedRestricted0123";
const PHONE: &str = "(415) 555-0134";
const PLANTED: &[&str] = &[
    HF_KEY,
    NPM_KEY,
    STRIPE_KEY,
    PHONE,
    PASSWORD,
    EMAIL,
    CARD,
    TOKEN,
    BEARER,
    COOKIE,
    DEFAULT,
    DESCRIPTION,
    MESSAGE,
    QUERY,
    STATE,
];

fn server_stream(msg: &Value) -> String {
    let region = json!({"type": "string", "title": "Region", "description": DESCRIPTION, "default": DEFAULT});
    match msg["params"]["name"].as_str().unwrap_or_default() {
        "allowed" => sse(&[form(
            "f-ok",
            &format!("Pick a region ({MESSAGE})"),
            json!({"region": region}),
        )]),
        "password" => sse(&[form(
            "f-pw",
            &format!("Enter your password {PASSWORD}"),
            json!({"password": {"type":"string","default": PASSWORD}}),
        )]),
        "invalid" => sse(&[form(
            "f-inv",
            "How many?",
            json!({"count": {"type": "integer"}}),
        )]),
        "bad_url" => sse(&[url_elicitation(
            "u-bad",
            "e-bad",
            &format!(
                "https://auth.example.com/u/{TOKEN}/{HF_KEY}/{NPM_KEY}/{}/connect?{STRIPE_KEY}=1&email={EMAIL}&token={QUERY}",
                PHONE.replace(' ', "%20")
            ),
        )]),
        "good_url" => sse(&[url_elicitation(
            "u-ok",
            "e-ok",
            &format!("https://auth.example.com/connect?flow={QUERY}"),
        )]),
        _ => sse(&[]),
    }
}

async fn modern_upstream() -> MockUpstream {
    MockUpstream::start(|seen| {
        let msg = body_json(seen);
        let result = match msg["params"].get("inputResponses") {
            None => json!({"resultType":"input_required","requestState":STATE,"inputRequests":{
                "card":{"method":"elicitation/create","params":{"message":format!("Card holder name {MESSAGE}"),
                    "requestedSchema":{"type":"object","properties":{"holder":{"type":"string","default":DEFAULT,"description":DESCRIPTION}}}}}}}),
            Some(_) => json!({"resultType":"complete","content":[]}),
        };
        full(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":msg["id"],"result":result}).to_string())
    })
    .await
}

fn with_secret_headers(
    mut req: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    req.headers_mut()
        .insert("authorization", format!("Bearer {BEARER}").parse().unwrap());
    req.headers_mut().insert(
        "cookie",
        format!("session={COOKIE}; email={EMAIL}").parse().unwrap(),
    );
    req
}

#[tokio::test]
async fn planted_secrets_appear_in_no_output() {
    let legacy = legacy_server(server_stream).await;
    let modern = modern_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = dir.path().join("elicitgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nlog: {{ format: json, level: debug }}\naudit: {{ sink: file, file: \"{}\", salt: test-salt-long-enough }}\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"{}\"\n  - name: modern\n    path: /modern\n    upstream: \"{}\"\n",
            audit.display(),
            legacy.url("/mcp"),
            modern.url("/mcp"),
        ),
    )
    .unwrap();
    let served = Served::start(&config).await;
    let (addr, admin) = (served.addr.clone(), served.admin.clone());

    // Legacy session, with secret-bearing headers on every request.
    let url = format!("http://{addr}/mcp");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;
    send(with_secret_headers(rpc_post(&url, init))).await;
    let call = |name: &str| {
        with_secret_headers(in_session_req(
            &url,
            &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":name}})
                .to_string(),
        ))
    };
    for name in ["allowed", "password", "invalid", "bad_url", "good_url"] {
        send(call(name)).await;
    }
    let reply = |id: &str, result: Value| {
        with_secret_headers(in_session_req(
            &url,
            &json!({"jsonrpc":"2.0","id":id,"result":result}).to_string(),
        ))
    };
    let (status, _, _) = send(reply(
        "f-ok",
        json!({"action":"accept","content":{"region": format!("{CARD} {EMAIL}")}}),
    ))
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _, _) = send(reply(
        "f-inv",
        json!({"action":"accept","content":{"count": format!("{PASSWORD} {TOKEN}")}}),
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = send(reply(
        "never",
        json!({"action":"accept","content":{"x": EMAIL}}),
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    send(reply("u-ok", json!({"action":"accept"}))).await;

    // 2026-07-28: the request state and the answers carry planted values too.
    let murl = format!("http://{addr}/modern");
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}});
    let first = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"card":CARD},"_meta":meta}});
    send(with_secret_headers(rpc_post(&murl, &first.to_string()))).await;
    let bad = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pay","_meta":meta,"requestState":STATE,
        "inputResponses":{"card":{"action":"accept","content":{"holder": 42, "extra": EMAIL}}}}});
    send(with_secret_headers(rpc_post(&murl, &bad.to_string()))).await;
    let good = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pay","_meta":meta,"requestState":STATE,
        "inputResponses":{"card":{"action":"accept","content":{"holder": format!("{EMAIL} {CARD}")}}}}});
    send(with_secret_headers(rpc_post(&murl, &good.to_string()))).await;
    // An upstream failure path, with secrets in the request.
    let dead = format!("http://{addr}/nowhere?token={QUERY}");
    send(with_secret_headers(rpc_post(
        &dead,
        &json!({"jsonrpc":"2.0","id":9,"method":"x","params":{"p":PASSWORD}}).to_string(),
    )))
    .await;

    let metrics_text = metrics(admin.parse().unwrap()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SIGTERM: the gateway drains and exits, flushing everything.
    let output = served.stop().await;
    let (stdout_text, stderr_text) = (output.stdout, output.stderr);
    let audit_text = std::fs::read_to_string(&audit).unwrap();

    // The run did what it should (so the absence of secrets means something).
    assert!(
        audit_text.contains("\"elicitation.blocked\""),
        "{audit_text}"
    );
    assert!(audit_text.contains("\"answer.rejected\""));
    assert!(audit_text.contains("\"elicitation.answered\""));
    assert!(audit_text.contains("auth.example.com"));
    assert!(
        stderr_text.contains("Upstream request failed")
            || stderr_text.contains("elicitgate listening")
    );
    for (name, text) in [
        ("stdout", stdout_text.clone()),
        ("stderr", stderr_text.clone()),
        ("audit file", audit_text.clone()),
        ("/metrics", metrics_text.clone()),
    ] {
        for secret in PLANTED {
            assert!(!text.contains(secret), "{secret} leaked into {name}");
        }
        // Percent-encoded forms too.
        assert!(
            !text.contains("planted.victim%40example.org"),
            "encoded e-mail leaked into {name}"
        );
    }
}

fn in_session_req(url: &str, body: &str) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut req = rpc_post(url, body);
    req.headers_mut()
        .insert("mcp-session-id", "s-1".parse().unwrap());
    req.headers_mut()
        .insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
    req
}
