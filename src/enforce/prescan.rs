//! Byte-level pre-scan: can this JSON text carry an elicitation at all?
//!
//! Owns the fast path that lets most messages skip full JSON parsing. It must never say "no"
//! to a message a client would read as an elicitation: the needles are member names and
//! string values that every carrier must contain, and JSON can only spell those differently
//! through `\u` escapes or `\/`, so any text containing either of those escape sequences is
//! always parsed.

use memchr::memmem::Finder;
use std::sync::LazyLock;

/// Needles: one of these appears literally in every elicitation carrier.
/// - `elicitation/create`: legacy requests and `inputRequests` entries;
/// - `input_required`: 2026-07-28 results and tasks (the `resultType` / `status` value);
/// - `inputResponses`: client retries and `tasks/update`;
/// - `elicitations`: the `-32042` error's `data.elicitations`;
/// - `elicitation/complete`: completion notifications.
static NEEDLES: LazyLock<Vec<Finder<'static>>> = LazyLock::new(|| {
    [
        "elicitation/create",
        "input_required",
        "inputRequests",
        "inputResponses",
        "elicitations",
        "elicitation/complete",
        "\\u",
        "\\/",
    ]
    .iter()
    .map(|n| Finder::new(n.as_bytes()).into_owned())
    .collect()
});

static META_2026: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"modelcontextprotocol/protocolVersion").into_owned());

/// True when a client message may declare its protocol version in `_meta` (2026-07-28), the
/// only era signal on stdio, where there is no `MCP-Protocol-Version` header. (An escaped
/// spelling is caught by [`may_carry_elicitation`]'s escape needles.)
pub fn declares_2026_meta(json: &[u8]) -> bool {
    META_2026.find(json).is_some()
}

/// True when `json` might carry an elicitation (or an answer to one) and must be parsed.
pub fn may_carry_elicitation(json: &[u8]) -> bool {
    NEEDLES.iter().any(|f| f.find(json).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_results_skip_parsing() {
        assert!(!may_carry_elicitation(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#
        ));
    }

    #[test]
    fn every_carrier_is_caught_including_escaped_spellings() {
        for text in [
            r#"{"method":"elicitation/create"}"#,
            r#"{"method":"elicitation\/create"}"#,
            r#"{"method":"\u0065licitation/create"}"#,
            r#"{"result":{"resultType":"input_required"}}"#,
            r#"{"error":{"code":-32042,"data":{"elicitations":[]}}}"#,
            r#"{"params":{"inputResponses":{}}}"#,
            r#"{"method":"notifications/elicitation/complete"}"#,
        ] {
            assert!(may_carry_elicitation(text.as_bytes()), "{text}");
        }
    }
}
