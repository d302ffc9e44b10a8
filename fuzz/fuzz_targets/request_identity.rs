//! The request-identity parsers: how a request names its session (`Mcp-Session-Id` header and
//! the HTTP+SSE `sessionId` / `session_id` query) and who the client is behind trusted proxies
//! (`X-Forwarded-For`).
//!
//! Oracles: never a panic; a session named by more than one distinct value is ambiguous, and
//! the session chosen is one the request named; the client address is the peer or an address
//! written in the header (never one invented), and an untrusted peer is always its own client.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use elicitgate_core::request::{client_address, session_of};
use libfuzzer_sys::fuzz_target;
use std::net::IpAddr;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(header) = Option::<String>::arbitrary(&mut u) else { return };
    let Ok(query) = Option::<String>::arbitrary(&mut u) else { return };
    let (session, ambiguous) = session_of(header.as_deref(), query.as_deref());
    let named: Vec<String> = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .filter(|(k, _)| k == "sessionId" || k == "session_id")
        .map(|(_, v)| v.into_owned())
        .chain(header.clone())
        .collect();
    let distinct: std::collections::BTreeSet<&String> = named.iter().collect();
    if distinct.len() > 1 {
        assert!(ambiguous, "{header:?} {query:?}");
    }
    if let Some(s) = &session {
        assert!(named.iter().any(|n| n.as_str() == &**s), "chose an unnamed session");
    } else {
        assert!(named.is_empty());
    }

    let Ok(xff) = Vec::<String>::arbitrary(&mut u) else { return };
    let Ok(peer_bytes) = <[u8; 4]>::arbitrary(&mut u) else { return };
    let peer = IpAddr::from(peer_bytes);
    let nets: [ipnet::IpNet; 2] = ["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
    let client = client_address(&nets, peer, xff.iter().map(|v| Some(v.as_str())));
    let trusted = peer_bytes[0] == 10;
    if !trusted {
        assert_eq!(client, peer, "an untrusted peer's header was believed");
    } else if client != peer {
        let written = xff
            .iter()
            .flat_map(|v| v.split(','))
            .filter_map(|h| h.trim().parse::<IpAddr>().ok())
            .any(|a| a.to_canonical() == client);
        assert!(written, "{client} was never written in {xff:?}");
    }
});
