//! OAuth-protected MCP servers through the gateway, with both official clients running the
//! whole MCP authorization flow (discovery of the Protected Resource Metadata, RFC 8414
//! metadata, dynamic registration, PKCE, the `resource` parameter, the token) against the
//! TypeScript SDK's own demo authorization server (`tests/peers/node/oauth_server.mjs`).
//!
//! Three set-ups (README "OAuth-protected upstreams"), each ending with a form elicitation
//! allowed and answered and a password form blocked:
//! 1. the upstream advertises its own URL; `public_url` makes the gateway the resource;
//! 2. the authorization server shares the upstream's origin: its endpoints are `http` routes;
//! 3. `identity.mode: jwt`: the gateway verifies the tokens and publishes the metadata itself.

use crate::common::peers::{client, oauth_server, Sdk};
use crate::common::redis::free_port;
use crate::common::*;
use http::StatusCode;
use serde_json::{json, Value};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn gateway_yaml(port: u16, extra: &str, routes: &str) -> String {
    format!(
        "public_url: \"http://127.0.0.1:{port}\"\nlisten: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:0\n{extra}\nroutes:\n{routes}"
    )
}

/// `identity.mode: jwt` trusting the demo authorization server at `issuer`, for `audience`.
fn jwt_identity(issuer: &str, public: &str, audience: &str) -> String {
    format!(
        "identity:\n  mode: jwt\n  jwt:\n    jwks_url: \"{issuer}/jwks\"\n    issuer: \"{issuer}/\"\n    audience: [\"{audience}\"]\n    algorithms: [ES256]\n    resource_metadata: \"{public}/.well-known/oauth-protected-resource/mcp\"\n"
    )
}

fn mcp_route(upstream_port: u16) -> String {
    format!(
        "  - name: mcp\n    path: /mcp\n    upstream: \"http://127.0.0.1:{upstream_port}/mcp\"\n"
    )
}

/// Both clients, through the gateway: authorized, a form answered, a password form blocked.
async fn flows_through(gw: &TestGateway) {
    for sdk in [Sdk::Python, Sdk::Node] {
        let url = gw.url();
        let out = client(
            sdk,
            &[
                "--url",
                &url,
                "--oauth",
                "--tool",
                "deploy",
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
                "--content",
                r#"{"env":"staging"}"#,
            ],
        )
        .await;
        assert_eq!(out["ok"], true, "{sdk:?}: {out}");
        assert_eq!(out["result"]["action"], "accept", "{sdk:?}: {out}");
        assert_eq!(
            out["result"]["content"],
            json!({"env":"staging"}),
            "{sdk:?}: {out}"
        );
        let out = client(
            sdk,
            &[
                "--url",
                &url,
                "--oauth",
                "--tool",
                "login",
                "--era",
                "legacy",
                "--caps",
                "both",
                "--answer",
                "accept",
                "--content",
                r#"{"password":"x"}"#,
            ],
        )
        .await;
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(0),
            "{sdk:?}: the password form reached the client: {out}"
        );
        assert_eq!(
            out["result"]["error"]["data"]["rules"],
            json!(["form.secret"]),
            "{sdk:?}: {out}"
        );
    }
}

async fn get_json(url: &str) -> (StatusCode, Value) {
    let req = http::Request::get(url)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let (status, _, body) = send(req).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_upstream_advertising_its_own_url_works_with_public_url() {
    let upstream = oauth_server(&["--auth", "separate"]).await;
    let port = free_port();
    let gw = gateway(&gateway_yaml(port, "", &mcp_route(upstream.port))).await;
    // The upstream's 401 names the gateway's metadata, whose resource is the gateway's URL.
    let (status, headers, _) = send(rpc_post(&gw.url(), INITIALIZE)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers["www-authenticate"].to_str().unwrap();
    let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{challenge}"
    );
    let (status, document) = get_json(&metadata).await;
    assert_eq!(status, StatusCode::OK, "{document}");
    assert_eq!(document["resource"], format!("http://127.0.0.1:{port}/mcp"));
    assert_eq!(
        document["authorization_servers"],
        json!([format!("{}/", upstream.auth_origin)])
    );
    flows_through(&gw).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn an_authorization_server_on_the_upstreams_origin_is_reached_through_http_routes() {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    // An authorization server behind the gateway is configured with its public issuer URL.
    let upstream = oauth_server(&["--auth", "same", "--issuer", &public]).await;
    let origin = format!("http://127.0.0.1:{}", upstream.port);
    let mut routes = mcp_route(upstream.port);
    for (name, path) in [
        ("as-metadata", "/.well-known/oauth-authorization-server"),
        ("as-authorize", "/authorize"),
        ("as-token", "/token"),
        ("as-register", "/register"),
    ] {
        routes.push_str(&format!(
            "  - name: {name}\n    path: {path}\n    protocol: http\n    upstream: \"{origin}{path}\"\n"
        ));
    }
    let gw = gateway(&gateway_yaml(port, "", &routes)).await;
    // JSON and form-encoded bodies on `http` routes are the authorization server's business.
    let (_, _, body) = send(rpc_post(
        &format!("{public}/register"),
        "{\"redirect_uris\":[]}",
    ))
    .await;
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("client_id") && !body.contains("JSON-RPC"),
        "the authorization server did not answer, or the route was read as MCP: {body}"
    );
    flows_through(&gw).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn the_gateway_as_resource_server_publishes_its_metadata_and_checks_the_audience() {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let upstream = oauth_server(&["--auth", "separate", "--jwt"]).await;
    let identity = jwt_identity(&upstream.auth_origin, &public, &format!("{public}/mcp"));
    let gw = gateway(&gateway_yaml(port, &identity, &mcp_route(upstream.port))).await;
    // The metadata is served before the identity check, built from the identity settings.
    let (status, document) = get_json(&format!(
        "{public}/.well-known/oauth-protected-resource/mcp"
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{document}");
    assert_eq!(document["resource"], format!("{public}/mcp"));
    assert_eq!(
        document["authorization_servers"],
        json!([format!("{}/", upstream.auth_origin)])
    );
    flows_through(&gw).await;
    // A token for another resource is refused by the gateway itself.
    let (status, _, _) = {
        let mut req = rpc_post(&gw.url(), INITIALIZE);
        req.headers_mut()
            .insert("authorization", "Bearer not-a-jwt".parse().unwrap());
        send(req).await
    };
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    gw.shutdown().await;
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused_by_the_gateway() {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let upstream = oauth_server(&["--auth", "separate", "--jwt"]).await;
    // The clients get tokens for this gateway's resource; the gateway accepts another one only.
    let identity = jwt_identity(&upstream.auth_origin, &public, "https://other.example/mcp");
    let gw = gateway(&gateway_yaml(port, &identity, &mcp_route(upstream.port))).await;
    for sdk in [Sdk::Python, Sdk::Node] {
        let url = gw.url();
        let out = client(
            sdk,
            &[
                "--url", &url, "--oauth", "--tool", "deploy", "--era", "legacy",
            ],
        )
        .await;
        assert_eq!(
            out["ok"], false,
            "{sdk:?}: a token for another audience was accepted: {out}"
        );
    }
    let metrics = metrics(gw.admin_addr).await;
    assert!(
        metrics.contains("elicitgate_unauthenticated_total"),
        "not counted"
    );
    gw.shutdown().await;
}
