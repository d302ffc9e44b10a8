//! Byte-level pre-scan: can this JSON text carry an elicitation at all?
//!
//! Owns the fast path that lets most messages skip full JSON parsing. It must never say "no"
//! to a message a client would read as an elicitation: the needles are member names and
//! string values that every carrier must contain, and JSON can only spell those differently
//! through `\u` escapes or `\/`, so any text containing either of those escape sequences is
//! always parsed. That holds for UTF-8 text only: a NUL byte (UTF-16 and UTF-32 spell ASCII
//! with them; valid UTF-8 JSON never contains one) or a UTF-16 byte-order mark also forces a
//! parse, which then refuses the text.

use memchr::memmem::Finder;
use std::sync::LazyLock;

/// Needles; one of them appears literally in every elicitation carrier:
/// - `elicitation`: `elicitation/create` (legacy requests, `inputRequests` entries),
///   `elicitations` (the `-32042` error's `data.elicitations`) and `elicitation/complete`
///   (completion notifications);
/// - `input_required`: 2026-07-28 results and tasks (the `resultType` / `status` value);
/// - `inputRe`: `inputRequests` and `inputResponses` (client retries, `tasks/update`).
///
/// Few, short needles: each is one SIMD pass, which beats a multi-pattern automaton here and
/// also beats one pass for the shared `input` (common letters make many false candidates;
/// `benches/relay.rs` measured it at twice the time on English text).
static CARRIERS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
    [
        Finder::new("elicitation").into_owned(),
        Finder::new("input_required").into_owned(),
        Finder::new("inputRe").into_owned(),
    ]
});

/// The member that declares a message's protocol version in `_meta` (2026-07-28).
static META_2026: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new("modelcontextprotocol/protocolVersion").into_owned());

/// True when the text has a `\u` or `\/` escape, the only ways JSON can spell a needle
/// differently.
fn has_spelling_escape(json: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', json).any(|i| matches!(json.get(i + 1), Some(b'u' | b'/')))
}

/// True when `json` might carry an elicitation (or an answer to one) and must be parsed.
pub fn may_carry_elicitation(json: &[u8]) -> bool {
    CARRIERS.iter().any(|f| f.find(json).is_some())
        || has_spelling_escape(json)
        || not_utf8_json(json)
}

/// True when the text cannot be UTF-8 JSON in a way that could hide the needles.
fn not_utf8_json(json: &[u8]) -> bool {
    json.starts_with(b"\xFE\xFF")
        || json.starts_with(b"\xFF\xFE")
        || memchr::memchr(0, json).is_some()
}

/// [`may_carry_elicitation`], or the message may declare its protocol version in `_meta`
/// (2026-07-28) — the only era signal on stdio, where there is no `MCP-Protocol-Version`
/// header.
pub fn may_carry_elicitation_or_2026_meta(json: &[u8]) -> bool {
    may_carry_elicitation(json) || META_2026.find(json).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_results_skip_parsing() {
        assert!(!may_carry_elicitation(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#
        ));
        // `input` alone is not a carrier.
        assert!(!may_carry_elicitation(
            br#"{"result":{"content":[{"type":"text","text":"input inputs input_ inputR"}]}}"#
        ));
        // Ordinary escapes (new lines, quotes, backslashes) do not force a parse.
        assert!(!may_carry_elicitation(
            br#"{"result":{"content":[{"type":"text","text":"a\nb \"q\" c:\\dir"}]}}"#
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
            r#"{"result":{"inputRequests":{}}}"#,
            r#"{"result":{"resultType":"input\u005frequired"}}"#,
            r#"{"x":"a\\\u0065"}"#,
            r#"{"input":"input_","inputs":1,"params":{"inputResponses":{}}}"#,
        ] {
            assert!(may_carry_elicitation(text.as_bytes()), "{text}");
            assert!(
                may_carry_elicitation_or_2026_meta(text.as_bytes()),
                "{text}"
            );
        }
    }

    #[test]
    fn text_that_is_not_utf8_json_is_always_parsed() {
        let utf16: Vec<u8> = r#"{"method":"elicitation/create"}"#
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert!(may_carry_elicitation(&utf16));
        assert!(may_carry_elicitation(b"\xFF\xFE"));
        assert!(may_carry_elicitation(b"{\"a\":\"\x00\"}"));
    }

    #[test]
    fn a_2026_meta_declaration_is_caught_by_the_combined_scan_only() {
        let text =
            br#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(!may_carry_elicitation(text));
        assert!(may_carry_elicitation_or_2026_meta(text));
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert!(!may_carry_elicitation_or_2026_meta(plain));
    }
}
