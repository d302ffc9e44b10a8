//! Header rules for both directions (RFC 9110 §7.6.1): hop-by-hop fields are removed, every
//! end-to-end field passes untouched (all MCP headers, `Authorization`, `Last-Event-ID`,
//! unknown `Mcp-Param-*`), `X-Forwarded-*` are added towards the upstream, and SSE responses get
//! the anti-buffering fields intermediaries honour.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use std::net::IpAddr;

/// Fields that describe one connection, never forwarded.
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Removes hop-by-hop fields, including every field the `Connection` header names.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass of comparisons instead of a removal per name.
    if !headers.keys().any(|name| HOP_BY_HOP.contains(name)) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
}

/// The client address as an `X-Forwarded-For` value, formatted once per connection.
pub fn forwarded_for(peer: IpAddr) -> HeaderValue {
    HeaderValue::from_str(&peer.to_string()).unwrap_or(HeaderValue::from_static("unknown"))
}

/// Prepares client request headers for the upstream; `peer` is [`forwarded_for`]'s value.
pub fn to_upstream(headers: &mut HeaderMap, peer: &HeaderValue, scheme: &'static str) {
    strip_hop_by_hop(headers);
    // The client computes Host from the upstream URI; the original goes in X-Forwarded-Host.
    if let Some(host) = headers.remove(header::HOST) {
        headers.insert(HeaderName::from_static("x-forwarded-host"), host);
    }
    // The body is forwarded as one known-length buffer; hyper writes its own Content-Length.
    headers.remove(header::CONTENT_LENGTH);
    // Ask for bodies the gateway reads as sent; codings that still come are decoded (and
    // forwarded decoded), so the client's own Accept-Encoding has no use upstream.
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    let xff = HeaderName::from_static("x-forwarded-for");
    let prior = headers.get(&xff).map(|v| v.to_str());
    match prior {
        None => {
            headers.insert(xff, peer.clone());
        }
        Some(Ok(prior)) => {
            let peer = peer.to_str().unwrap_or_default();
            if let Ok(value) = HeaderValue::from_str(&format!("{prior}, {peer}")) {
                headers.insert(xff, value);
            }
        }
        // Not text: replaced by what the gateway knows.
        Some(Err(_)) => {
            headers.insert(xff, peer.clone());
        }
    }
    headers.insert(
        HeaderName::from_static("x-forwarded-proto"),
        HeaderValue::from_static(scheme),
    );
}

/// True when the `Content-Type` media type is `mime` (ASCII case-insensitive, parameters
/// ignored). Compared as bytes: a parameter that is not text does not hide the media type.
pub fn content_type_is(headers: &HeaderMap, mime: &str) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|value| {
        let media = value
            .as_bytes()
            .split(|b| *b == b';')
            .next()
            .unwrap_or_default();
        media.trim_ascii().eq_ignore_ascii_case(mime.as_bytes())
    })
}

/// True when a response's content type is `text/event-stream`.
pub fn is_event_stream(headers: &HeaderMap) -> bool {
    content_type_is(headers, "text/event-stream")
}

/// Prepares upstream response headers for the client.
pub fn to_client(headers: &mut HeaderMap, event_stream: bool) {
    strip_hop_by_hop(headers);
    if !event_stream {
        return;
    }
    // A relayed stream's length is not known in advance, and proxies and CDNs in front of us
    // must not hold events back (nginx honours X-Accel-Buffering).
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    let cache_control = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match cache_control {
        None => {
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-cache, no-transform"),
            );
        }
        Some(v) if !v.to_ascii_lowercase().contains("no-transform") => {
            if let Ok(value) = HeaderValue::from_str(&format!("{v}, no-transform")) {
                headers.insert(header::CACHE_CONTROL, value);
            }
        }
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_named_fields_and_hop_by_hop_are_removed() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-secret-hop"),
        );
        h.insert("x-secret-hop", HeaderValue::from_static("1"));
        h.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        h.insert("mcp-session-id", HeaderValue::from_static("abc"));
        h.insert("last-event-id", HeaderValue::from_static("7"));
        strip_hop_by_hop(&mut h);
        assert!(h.get("x-secret-hop").is_none());
        assert!(h.get(header::TRANSFER_ENCODING).is_none());
        assert_eq!(h.get("mcp-session-id").unwrap(), "abc");
        assert_eq!(h.get("last-event-id").unwrap(), "7");
    }

    #[test]
    fn forwarded_for_is_appended() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        h.insert(header::HOST, HeaderValue::from_static("gw.example"));
        to_upstream(
            &mut h,
            &forwarded_for("127.0.0.1".parse().unwrap()),
            "https",
        );
        assert_eq!(h.get("x-forwarded-for").unwrap(), "10.0.0.1, 127.0.0.1");
        assert_eq!(h.get("x-forwarded-proto").unwrap(), "https");
        assert_eq!(h.get("x-forwarded-host").unwrap(), "gw.example");
        assert!(h.get(header::HOST).is_none());
        let mut h = HeaderMap::new();
        to_upstream(&mut h, &forwarded_for("::1".parse().unwrap()), "http");
        assert_eq!(h.get("x-forwarded-for").unwrap(), "::1");
    }

    #[test]
    fn media_types_compare_without_parameters_or_case() {
        let mut h = HeaderMap::new();
        assert!(!content_type_is(&h, "application/json"));
        for (value, json) in [
            (&b"application/json"[..], true),
            (b"Application/JSON ; charset=utf-8", true),
            (b" application/json;charset=\xff", true),
            (b"application/json-seq", false),
            (b"application/jso", false),
            (b"text/json", false),
        ] {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_bytes(value).unwrap(),
            );
            assert_eq!(content_type_is(&h, "application/json"), json, "{value:?}");
        }
    }

    #[test]
    fn event_streams_get_anti_buffering_fields() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        assert!(is_event_stream(&h));
        assert!(!content_type_is(&h, "application/json"));
        to_client(&mut h, true);
        assert_eq!(h.get("x-accel-buffering").unwrap(), "no");
        assert_eq!(
            h.get(header::CACHE_CONTROL).unwrap(),
            "no-cache, no-transform"
        );
    }
}
