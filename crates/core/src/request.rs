//! What a request says about itself, read without I/O: whether its path can be routed as
//! the upstream will read it, the session it names and the client address behind trusted
//! proxies. The gateway hands these functions header values as text;
//! the fuzz target `request_identity` drives them directly.
//!
//! Never: I/O, or trusting a hop that a trusted proxy did not add.

use ipnet::IpNet;
use std::net::IpAddr;
use std::sync::Arc;

/// Whether a request path reads the same to every reader: no dot segments (`.`, `..`),
/// spelled plainly or percent-encoded (`%2e`, `%2E`, mixed), and no encoded or backslash
/// separators (`%2f`, `%5c`, `\`). Routing is by path prefix; an upstream that resolves dot
/// segments (RFC 3986 §5.2.4) or decodes separators would serve a path no route exposes, so
/// such paths are refused before routing, never forwarded raw.
pub fn path_is_plain(path: &str) -> bool {
    if path.contains('\\') {
        return false;
    }
    let lower = path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return false;
    }
    lower
        .split('/')
        .map(|segment| segment.replace("%2e", "."))
        .all(|segment| segment != "." && segment != "..")
}

/// The session a request names, and whether it names it ambiguously. Streamable HTTP names
/// it in `Mcp-Session-Id`; the 2024-11-05 HTTP+SSE transport in the POST URI's query
/// (`sessionId` in the TypeScript SDK, `session_id` in Python's). More than one query value,
/// or a header and a query value that differ, is ambiguous.
pub fn session_of(header: Option<&str>, query: Option<&str>) -> (Option<Arc<str>>, bool) {
    let mut in_query: Option<std::borrow::Cow<'_, str>> = None;
    let mut ambiguous = false;
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if k == "sessionId" || k == "session_id" {
            ambiguous |= in_query.is_some();
            in_query = Some(v);
        }
    }
    match (header, in_query) {
        (Some(h), Some(q)) => (Some(Arc::from(h)), ambiguous || h != q),
        (Some(h), None) => (Some(Arc::from(h)), ambiguous),
        (None, Some(q)) => (Some(Arc::from(q.as_ref())), ambiguous),
        (None, None) => (None, ambiguous),
    }
}

/// Whether `ip` lies in one of the `trusted` networks. An IPv4 client on a dual-stack listener
/// arrives as `::ffff:a.b.c.d` and is compared as IPv4.
pub fn is_trusted(trusted: &[IpNet], ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    trusted.iter().any(|net| net.contains(&ip))
}

/// The client's address: `peer`, or — when `peer` is a trusted proxy — the last
/// `X-Forwarded-For` hop that no trusted proxy added. `forwarded_for` are the header's values
/// in order, `None` for a value that is not visible ASCII (which ends the walk at `peer`).
pub fn client_address<'a>(
    trusted: &[IpNet],
    peer: IpAddr,
    forwarded_for: impl IntoIterator<Item = Option<&'a str>>,
) -> IpAddr {
    if trusted.is_empty() || !is_trusted(trusted, peer) {
        return peer;
    }
    let peer = peer.to_canonical();
    let mut hops: Vec<&str> = Vec::new();
    for value in forwarded_for {
        let Some(text) = value else {
            return peer;
        };
        hops.extend(text.split(',').map(str::trim));
    }
    // Right to left: trusted proxies' hops are skipped; the first other hop is the client.
    // A hop that is not a bare address (`ip:port`, `unknown`, garbage) ends the walk at the
    // last address known good: what lies left of it cannot be told apart from forgery.
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(addr) = hop.parse::<IpAddr>() else {
            return client;
        };
        client = addr.to_canonical();
        if !is_trusted(trusted, client) {
            return client;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter()
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn dot_segments_and_encoded_separators_are_not_plain() {
        for plain in [
            "/mcp",
            "/mcp/",
            "/mcp/a.b",
            "/mcp/...",
            "/mcp/.well-known/x",
            "/",
        ] {
            assert!(path_is_plain(plain), "{plain}");
        }
        for crooked in [
            "/mcp/../admin",
            "/mcp/./x",
            "/mcp/..",
            "/mcp/%2e%2e/admin",
            "/mcp/%2E%2e/admin",
            "/mcp/x/%2E%2E/%2e%2e/admin",
            "/mcp/.%2e/admin",
            "/mcp/%2e/x",
            "/mcp%2f..%2fadmin",
            "/mcp/..%5cadmin",
            "/mcp\\..\\admin",
        ] {
            assert!(!path_is_plain(crooked), "{crooked}");
        }
    }

    #[test]
    fn a_session_named_twice_differently_is_ambiguous() {
        assert_eq!(session_of(Some("a"), None), (Some(Arc::from("a")), false));
        assert_eq!(
            session_of(Some("a"), Some("sessionId=a")),
            (Some(Arc::from("a")), false)
        );
        assert!(session_of(Some("a"), Some("sessionId=b")).1);
        assert!(session_of(None, Some("sessionId=a&session_id=a")).1);
        assert_eq!(session_of(None, Some("x=1")), (None, false));
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let trusted = nets(&["10.0.0.0/8"]);
        let peer: IpAddr = "10.0.0.1".parse().unwrap();
        let outsider: IpAddr = "192.0.2.7".parse().unwrap();
        let xff = |v: &'static str| [Some(v)];
        assert_eq!(
            client_address(&trusted, outsider, xff("198.51.100.1")),
            outsider
        );
        assert_eq!(
            client_address(&trusted, peer, xff("198.51.100.1, 10.0.0.9")),
            "198.51.100.1".parse::<IpAddr>().unwrap()
        );
        // A hop that is not an address ends the walk at the last good one.
        assert_eq!(
            client_address(&trusted, peer, xff("198.51.100.1, unknown, 10.0.0.9")),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
        // An unreadable value: the peer itself.
        assert_eq!(client_address(&trusted, peer, [None]), peer);
        assert!(is_trusted(&trusted, "::ffff:10.1.2.3".parse().unwrap()));
        assert_eq!(client_address(&[], peer, xff("198.51.100.1")), peer);
    }
}
