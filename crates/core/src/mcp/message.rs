//! Strict JSON stage of the message pipeline: one message text in, one parsed JSON-RPC message
//! of exactly one shape out, or a typed reason why it cannot be read.
//!
//! The parser is serde_json's, bounded (depth 128, the whole text already bounded by the
//! framing stage). Everything a client may read differently from it is a refusal, never a
//! guess: `NaN`/`Infinity` and `1e400` (pydantic reads them as floats), nesting past the bound,
//! lone surrogates and invalid UTF-8 (Python and JavaScript decode them), a leading BOM
//! (`response.json()` strips it), and envelopes that are more than one shape
//! ([`crate::mcp::jsonrpc::classify`]).
//!
//! Never: decides whether a text needs reading at all (that is the byte pre-scan in
//! `enforce::prescan`), judges content.

use super::jsonrpc::{classify, Shape};
use serde_json::Value;

/// Why a message text cannot be read the way a client would read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("a byte-order mark before the JSON text")]
    Bom,
    #[error("nesting deeper than the gateway reads")]
    Depth,
    #[error("a number the gateway cannot represent (NaN, Infinity, out of range)")]
    Number,
    #[error("invalid UTF-8 or a lone surrogate")]
    Unicode,
    #[error("not JSON")]
    Syntax,
    #[error("not exactly one JSON-RPC shape")]
    Envelope,
}

impl Unreadable {
    /// Bounded label for metrics and audit.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Bom => "json.bom",
            Self::Depth => "json.depth",
            Self::Number => "json.number",
            Self::Unicode => "json.unicode",
            Self::Syntax => "json.syntax",
            Self::Envelope => "jsonrpc.shape",
        }
    }
}

/// The member at `path` (object keys, outermost first) of a parsed message. What
/// `Value::pointer` does for a constant path, without parsing the pointer and allocating each
/// unescaped token on every call.
pub fn member<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// Parses a JSON text strictly.
pub fn parse(text: &[u8]) -> Result<Value, Unreadable> {
    serde_json::from_slice::<Value>(text).map_err(|e| why(text, &e))
}

/// Parses one JSON-RPC message: strict JSON, then exactly one shape. Batches (arrays) are
/// returned as they are, for callers that refuse or split them.
pub fn read(text: &[u8]) -> Result<(Value, Shape), Unreadable> {
    let value = parse(text)?;
    if value.is_array() {
        return Ok((value, Shape::Invalid));
    }
    match classify(&value) {
        Shape::Invalid => Err(Unreadable::Envelope),
        shape => Ok((value, shape)),
    }
}

/// Names the cause of a parse failure. serde_json's error kinds are coarse; its messages are
/// stable enough to tell these apart, and anything unrecognised is plain `Syntax`.
fn why(text: &[u8], e: &serde_json::Error) -> Unreadable {
    if text.starts_with(b"\xEF\xBB\xBF")
        || text.starts_with(b"\xFE\xFF")
        || text.starts_with(b"\xFF\xFE")
    {
        return Unreadable::Bom;
    }
    let m = e.to_string();
    if m.contains("recursion limit") {
        Unreadable::Depth
    } else if m.contains("number out of range") || has_nonfinite(text) {
        Unreadable::Number
    } else if m.contains("surrogate")
        || m.contains("hex escape")
        || m.contains("unicode")
        || m.contains("UTF-8")
        || m.contains("control character")
    {
        Unreadable::Unicode
    } else {
        Unreadable::Syntax
    }
}

/// `NaN`, `Infinity` or `-Infinity` as bare words (a cheap hint for the reason only).
fn has_nonfinite(text: &[u8]) -> bool {
    let f = |n: &[u8]| text.windows(n.len()).any(|w| w == n);
    f(b"NaN") || f(b"Infinity")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_reads_what_a_json_pointer_reads() {
        let m: Value = serde_json::from_str(
            r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"a":[1]}}"#,
        )
        .unwrap();
        let path = ["params", "_meta", "io.modelcontextprotocol/protocolVersion"];
        assert_eq!(
            member(&m, &path),
            m.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        );
        assert_eq!(
            member(&m, &path).and_then(Value::as_str),
            Some("2026-07-28")
        );
        assert_eq!(member(&m, &["params", "missing"]), None);
        // Keys only: an array on the way is not indexed.
        assert_eq!(member(&m, &["params", "a", "0"]), None);
        assert_eq!(member(&m, &[]), Some(&m));
    }

    #[test]
    fn what_a_client_reads_and_serde_does_not_is_a_named_refusal() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}1{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: Vec<(Vec<u8>, Unreadable)> = vec![
            (
                b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_vec(),
                Unreadable::Bom,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":NaN}}".to_vec(),
                Unreadable::Number,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":-Infinity}}".to_vec(),
                Unreadable::Number,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1e400}}".to_vec(),
                Unreadable::Number,
            ),
            (deep.into_bytes(), Unreadable::Depth),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"\\ud800\"}}".to_vec(),
                Unreadable::Unicode,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"\xff\"}}".to_vec(),
                Unreadable::Unicode,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"result\":{}}".to_vec(),
                Unreadable::Envelope,
            ),
            (b"{\"jsonrpc\":\"2.0\",".to_vec(), Unreadable::Syntax),
        ];
        for (text, want) in cases {
            assert_eq!(
                read(&text).map(|_| ()),
                Err(want),
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
        let (v, shape) = read(br#"{"jsonrpc":"2.0","id":1,"result":{"x":1.5e3}}"#).unwrap();
        assert_eq!(shape, Shape::Result);
        assert_eq!(v["result"]["x"], 1500.0);
    }
}
