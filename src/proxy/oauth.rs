//! MCP authorization through the gateway: the gateway is the resource its clients see, so it
//! publishes the OAuth 2.0 Protected Resource Metadata (RFC 9728) of every MCP route under
//! its own public URL, and points upstream challenges at it.
//!
//! Owns, with `public_url` set (or `identity.mode: jwt`, where the gateway is the resource
//! server itself):
//! - `GET /.well-known/oauth-protected-resource<route path>`: the upstream's document with
//!   `resource` set to `public_url` + the route's path, or under `identity.mode: jwt` a
//!   document built from the identity settings. Served before the identity check: a client
//!   reads it to learn how to authenticate.
//! - A `401` from an upstream: `resource_metadata` in its `WWW-Authenticate` is rewritten to
//!   the gateway's document for the route, so the client asks the gateway, whose document names
//!   the gateway as the resource (clients compare it with the URL they connect to).
//!
//! Never: tokens. Whatever the client sends in `Authorization` goes to the upstream as it
//! came; the authorization server is reached directly or through an `http` route.

use super::body::ResponseBody;
use super::upstream::Upstream;
use super::Route;
use crate::settings::{IdentityMode, Settings};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::time::Duration;

/// Where RFC 9728 puts a resource's metadata, before the resource's path.
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// Most bytes of an upstream's metadata document read.
const MAX_DOCUMENT: usize = 64 * 1024;
/// How long reading it may take.
const DOCUMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The gateway publishes metadata (`public_url` set, or it is the resource server itself).
pub fn publishes(settings: &Settings) -> bool {
    settings.public_url.is_some() || settings.identity.mode == IdentityMode::Jwt
}

/// The route path a metadata request names (`/.well-known/oauth-protected-resource/mcp` →
/// `/mcp`; the bare prefix names a route at `/`).
pub fn metadata_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(METADATA_PREFIX)?;
    match rest {
        "" => Some("/"),
        r if r.starts_with('/') => Some(r),
        _ => None,
    }
}

/// The resource a route is, as its clients see it: `public_url` + the route's path.
pub fn resource_of(public_url: &str, route: &Route) -> String {
    let base = public_url.trim_end_matches('/');
    let path = route.prefix();
    if path.is_empty() {
        format!("{base}/")
    } else {
        format!("{base}{path}")
    }
}

/// The URL of a route's metadata document under `public_url`.
pub fn metadata_url_of(public_url: &str, route: &Route) -> String {
    format!(
        "{}{METADATA_PREFIX}{}",
        public_url.trim_end_matches('/'),
        route.prefix()
    )
}

/// Answers a metadata request for `route`.
pub async fn metadata(settings: &Settings, route: &Route) -> Response<ResponseBody> {
    let public_url = settings.public_url.as_deref();
    if settings.identity.mode == IdentityMode::Jwt {
        // The gateway verifies the tokens: it is the resource server, and says so itself.
        let jwt = &settings.identity.jwt;
        let resource = match public_url {
            Some(url) => resource_of(url, route),
            None => return not_found(),
        };
        let mut document = json!({
            "resource": resource,
            "bearer_methods_supported": ["header"],
        });
        if let Some(issuer) = &jwt.issuer {
            document["authorization_servers"] = json!([issuer]);
        }
        return json_response(StatusCode::OK, &document);
    }
    let Some(public_url) = public_url else {
        return not_found();
    };
    match upstream_document(route).await {
        Some(mut document) => {
            document["resource"] = Value::from(resource_of(public_url, route));
            json_response(StatusCode::OK, &document)
        }
        None => not_found(),
    }
}

/// The upstream's own metadata document for the route's upstream path, bounded in size and
/// time; `None` when it has none (or not a JSON object).
async fn upstream_document(route: &Route) -> Option<Value> {
    let uri = route.upstream_metadata_uri().ok()?;
    let request = Request::get(uri)
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .ok()?;
    let response = fetch(&route.upstream, request).await?;
    let value: Value = serde_json::from_slice(&response).ok()?;
    value.is_object().then_some(value)
}

async fn fetch(upstream: &Upstream, request: Request<Full<Bytes>>) -> Option<Bytes> {
    let response = upstream.send(request).await.ok()?;
    if !response.status().is_success() {
        tokio::spawn(response.into_body().discard());
        return None;
    }
    let limited = http_body_util::Limited::new(response.into_body(), MAX_DOCUMENT);
    let collected = tokio::time::timeout(DOCUMENT_TIMEOUT, limited.collect())
        .await
        .ok()?
        .ok()?;
    Some(collected.to_bytes())
}

/// Points `resource_metadata` of every `Bearer` challenge in an upstream's `401` at the
/// gateway's document for `route`. A challenge without one gets it added.
pub fn rewrite_challenges(headers: &mut HeaderMap, public_url: &str, route: &Route) {
    let url = metadata_url_of(public_url, route);
    let rewritten: Vec<HeaderValue> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| HeaderValue::from_str(&with_resource_metadata(v, &url)).ok())
        .collect();
    if rewritten.is_empty() {
        return;
    }
    headers.remove(header::WWW_AUTHENTICATE);
    for value in rewritten {
        headers.append(header::WWW_AUTHENTICATE, value);
    }
}

/// `challenge` with its `resource_metadata` parameter set to `url` (quoted), others kept.
fn with_resource_metadata(challenge: &str, url: &str) -> String {
    let Some((scheme, params)) = challenge.trim().split_once(' ') else {
        return if challenge.trim().eq_ignore_ascii_case("bearer") {
            format!("Bearer resource_metadata=\"{url}\"")
        } else {
            challenge.to_owned()
        };
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return challenge.to_owned();
    }
    let mut kept: Vec<String> = split_params(params)
        .into_iter()
        .filter(|p| {
            !p.split('=')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case("resource_metadata")
        })
        .collect();
    kept.push(format!("resource_metadata=\"{url}\""));
    format!("{scheme} {}", kept.join(", "))
}

/// Auth parameters split on the commas outside quoted strings.
fn split_params(params: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut escaped = false;
    for c in params.chars() {
        match c {
            '\\' if quoted && !escaped => {
                escaped = true;
                current.push(c);
                continue;
            }
            '"' if !escaped => quoted = !quoted,
            ',' if !quoted => {
                if !current.trim().is_empty() {
                    out.push(current.trim().to_owned());
                }
                current.clear();
                continue;
            }
            _ => {}
        }
        escaped = false;
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

fn json_response(status: StatusCode, document: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(Bytes::from(document.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn not_found() -> Response<ResponseBody> {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": "not_found", "error_description": "no protected resource metadata for this path"}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_paths_name_route_paths() {
        assert_eq!(
            metadata_path("/.well-known/oauth-protected-resource/mcp"),
            Some("/mcp")
        );
        assert_eq!(
            metadata_path("/.well-known/oauth-protected-resource"),
            Some("/")
        );
        assert_eq!(
            metadata_path("/.well-known/oauth-protected-resourcex"),
            None
        );
        assert_eq!(metadata_path("/mcp"), None);
    }

    #[test]
    fn challenges_point_at_the_gateway() {
        let url = "https://gw.example/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            with_resource_metadata(
                r#"Bearer error="invalid_token", resource_metadata="http://up:9/.well-known/oauth-protected-resource/mcp""#,
                url
            ),
            format!(r#"Bearer error="invalid_token", resource_metadata="{url}""#)
        );
        assert_eq!(
            with_resource_metadata("Bearer", url),
            format!(r#"Bearer resource_metadata="{url}""#)
        );
        assert_eq!(
            with_resource_metadata(r#"Bearer realm="a, b", scope="x""#, url),
            format!(r#"Bearer realm="a, b", scope="x", resource_metadata="{url}""#)
        );
        assert_eq!(
            with_resource_metadata("Basic realm=x", url),
            "Basic realm=x"
        );
    }
}
