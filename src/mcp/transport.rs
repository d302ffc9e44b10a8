//! Transport stage of the message pipeline: what a body *is*, read from its headers the way the
//! most lenient supported client reads them.
//!
//! Owns three questions, answered from `Content-Type` and `Content-Encoding` alone (pure, no
//! I/O):
//! - **media**: would some MCP client parse this body as JSON or as an event stream? The
//!   official Python client takes any type that *starts with* `application/json` as JSON
//!   (`application/jsonx`, `application/json-rpc`) and any that starts with
//!   `text/event-stream` as a stream; the gateway is more lenient still (any type naming
//!   `json` or `event-stream`), so nothing a client reads escapes judgment;
//! - **charset**: JSON and SSE are judged as UTF-8 (what every SDK decodes by default); a
//!   declared charset other than UTF-8 (`utf-7` hides every keyword from a byte scan while
//!   Python's client decodes it) is refused;
//! - **codings**: the content codings to undo, in the order to undo them; a coding the
//!   gateway cannot decode is refused (the clients would decode it, or skip it silently).
//!
//! Never: reads bodies (that is [`crate::mcp::decode`]), decides what to do with a refusal.

use http::header::{HeaderMap, CONTENT_ENCODING, CONTENT_TYPE};

/// How a client would read a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// One JSON-RPC message (or batch) as a whole body.
    Json,
    /// Server-Sent Events.
    EventStream,
    /// Nothing an MCP client parses (no type, text/html, …): passed through untouched.
    Other,
}

/// A content coding the gateway decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Gzip,
    /// `deflate`: zlib-wrapped (RFC 9110 §8.4.1.2), or raw deflate as some servers send it.
    Deflate,
    Brotli,
    Zstd,
}

/// Why a body cannot be read the way a client would read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransportRefusal {
    #[error("a charset other than UTF-8")]
    Charset,
    #[error("a content coding the gateway cannot decode")]
    Coding,
    #[error("a media type that is both JSON and an event stream")]
    AmbiguousMedia,
}

impl TransportRefusal {
    /// Bounded label for metrics and audit.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Charset => "transport.charset",
            Self::Coding => "transport.coding",
            Self::AmbiguousMedia => "transport.media_type",
        }
    }
}

/// Most codings a body may stack (`gzip, gzip` is legal; httpx stops at 5).
pub const MAX_CODINGS: usize = 4;

/// What the headers say about a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyShape {
    pub media: Media,
    /// Codings to undo, outermost first (the reverse of the order they were applied).
    pub codings: Vec<Coding>,
}

impl BodyShape {
    /// True when the body reaches the next stage as sent (no decoding needed).
    pub fn is_identity(&self) -> bool {
        self.codings.is_empty()
    }
}

/// Classifies a body from its headers. Only bodies a client would parse ([`Media::Json`],
/// [`Media::EventStream`]) are held to the charset and coding rules; others pass untouched.
pub fn classify(headers: &HeaderMap) -> Result<BodyShape, TransportRefusal> {
    // The common answers, decided without parsing: one content type spelled as MCP servers
    // spell it, no coding.
    if !headers.contains_key(CONTENT_ENCODING) {
        let mut types = headers.get_all(CONTENT_TYPE).iter();
        if let (Some(only), None) = (types.next(), types.next()) {
            let media = match only.as_bytes() {
                b"application/json" | b"application/json; charset=utf-8" => Some(Media::Json),
                b"text/event-stream" | b"text/event-stream; charset=utf-8" => {
                    Some(Media::EventStream)
                }
                _ => None,
            };
            if let Some(media) = media {
                return Ok(BodyShape {
                    media,
                    codings: Vec::new(),
                });
            }
        }
    }
    let media = media(headers)?;
    if media == Media::Other {
        return Ok(BodyShape {
            media,
            codings: Vec::new(),
        });
    }
    charset(headers)?;
    Ok(BodyShape {
        media,
        codings: codings(headers)?,
    })
}

/// The media class of `Content-Type` (all of its values: a client may read any of them).
pub fn media(headers: &HeaderMap) -> Result<Media, TransportRefusal> {
    let mut json = false;
    let mut sse = false;
    for value in headers.get_all(CONTENT_TYPE) {
        let bytes = value.as_bytes();
        // Compared without case, anywhere in the value: a parameter cannot hide the type
        // from the gateway that a client finds by prefix.
        json |= contains_ignore_case(bytes, b"json");
        sse |= contains_ignore_case(bytes, b"event-stream");
    }
    match (json, sse) {
        (true, true) => Err(TransportRefusal::AmbiguousMedia),
        (true, false) => Ok(Media::Json),
        (false, true) => Ok(Media::EventStream),
        (false, false) => Ok(Media::Other),
    }
}

/// Accepts no `charset` parameter or `utf-8` (any case, quoted or not, `utf8` too). Any other
/// parameter whose name starts with `charset` is refused: RFC 2231 spellings (`charset*=''utf-7`,
/// `charset*0=utf-7`) are decoded by Python's `email.message` and so by its MCP client.
pub fn charset(headers: &HeaderMap) -> Result<(), TransportRefusal> {
    for value in headers.get_all(CONTENT_TYPE) {
        let Ok(text) = value.to_str() else {
            return Err(TransportRefusal::Charset);
        };
        for param in text.split(';').skip(1) {
            let (name, val) = param.split_once('=').unwrap_or((param, ""));
            let name = name.trim();
            let named_charset = name
                .get(..7)
                .is_some_and(|head| head.eq_ignore_ascii_case("charset"));
            if !named_charset {
                continue;
            }
            if name.len() != 7 {
                return Err(TransportRefusal::Charset);
            }
            let val = val.trim().trim_matches('"').trim();
            if !(val.eq_ignore_ascii_case("utf-8") || val.eq_ignore_ascii_case("utf8")) {
                return Err(TransportRefusal::Charset);
            }
        }
    }
    Ok(())
}

/// The codings of every `Content-Encoding` value, outermost first; `identity` is skipped.
pub fn codings(headers: &HeaderMap) -> Result<Vec<Coding>, TransportRefusal> {
    let mut applied = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let text = value.to_str().map_err(|_| TransportRefusal::Coding)?;
        for token in text.split(',') {
            let token = token.trim();
            let coding = match token.to_ascii_lowercase().as_str() {
                "" | "identity" => continue,
                "gzip" | "x-gzip" => Coding::Gzip,
                "deflate" => Coding::Deflate,
                "br" => Coding::Brotli,
                "zstd" => Coding::Zstd,
                _ => return Err(TransportRefusal::Coding),
            };
            applied.push(coding);
        }
    }
    if applied.len() > MAX_CODINGS {
        return Err(TransportRefusal::Coding);
    }
    applied.reverse();
    Ok(applied)
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(ct: &str, ce: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        if let Some(ce) = ce {
            h.insert(CONTENT_ENCODING, HeaderValue::from_str(ce).unwrap());
        }
        h
    }

    #[test]
    fn media_types_are_read_as_leniently_as_any_client() {
        for json in [
            "application/json",
            "Application/JSON",
            "application/jsonx",
            "application/json-rpc",
            "application/json; charset=utf-8",
            "application/vnd.api+json",
            " application/json",
        ] {
            assert_eq!(
                classify(&headers(json, None)).unwrap().media,
                Media::Json,
                "{json}"
            );
        }
        for sse in [
            "text/event-stream",
            "TEXT/EVENT-STREAM; charset=UTF-8",
            "text/event-streamx",
        ] {
            assert_eq!(
                classify(&headers(sse, None)).unwrap().media,
                Media::EventStream,
                "{sse}"
            );
        }
        for other in ["text/html", "text/plain", "application/octet-stream"] {
            assert_eq!(
                classify(&headers(other, None)).unwrap().media,
                Media::Other,
                "{other}"
            );
        }
        assert_eq!(
            classify(&headers("text/event-stream; x=application/json", None)),
            Err(TransportRefusal::AmbiguousMedia)
        );
    }

    #[test]
    fn only_utf8_is_accepted_for_json_and_sse() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
            "text/event-stream; charset=utf8",
        ] {
            assert!(classify(&headers(ok, None)).is_ok(), "{ok}");
        }
        for bad in [
            "text/event-stream; charset=utf-7",
            "application/json; charset=utf-16",
            "application/json; charset=latin1",
            "text/event-stream; foo=bar; CharSet=\"UTF-7\"",
            "text/event-stream; charset*=''utf-7",
            "text/event-stream; charset*=utf-8''utf-7",
            "application/json; charset*0=utf-7",
            "application/json; charset*0*=''utf-7",
            "application/json; charset",
            "application/json; charset=",
        ] {
            assert_eq!(
                classify(&headers(bad, None)),
                Err(TransportRefusal::Charset),
                "{bad}"
            );
        }
        // Bodies no client parses keep whatever they declare.
        assert!(classify(&headers("text/html; charset=utf-7", None)).is_ok());
    }

    #[test]
    fn codings_are_undone_outermost_first_and_unknown_ones_refused() {
        let shape = classify(&headers("application/json", Some("deflate, GZIP"))).unwrap();
        assert_eq!(shape.codings, vec![Coding::Gzip, Coding::Deflate]);
        let shape = classify(&headers("text/event-stream", Some("identity"))).unwrap();
        assert!(shape.is_identity());
        for coding in ["br", "zstd", "x-gzip"] {
            assert_eq!(
                classify(&headers("application/json", Some(coding)))
                    .unwrap()
                    .codings
                    .len(),
                1
            );
        }
        for bad in ["compress", "foo, gzip", "gzip, gzip, gzip, gzip, gzip"] {
            assert_eq!(
                classify(&headers("application/json", Some(bad))),
                Err(TransportRefusal::Coding),
                "{bad}"
            );
        }
        // Codings on bodies no client parses are not the gateway's business.
        assert!(classify(&headers("text/html", Some("compress"))).is_ok());
    }
}
