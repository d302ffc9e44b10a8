//! Text handling shared by the detectors, the lexicon, the policy and the audit scrubber, so
//! that what is redacted is read exactly as what is detected: bounded percent-decoding (here)
//! and Unicode normalisation, folding and word splitting ([`fold`]).

pub mod fold;

use percent_encoding::percent_decode_str;
use std::borrow::Cow;

/// Most rounds of percent-decoding applied (`%2540` is `@` after two).
pub const DECODE_ROUNDS: usize = 4;

/// Repeated percent-decoding (invalid UTF-8 replaced), bounded by [`DECODE_ROUNDS`]; stops as
/// soon as a round changes nothing.
pub fn percent_decode_repeatedly(s: &str) -> Cow<'_, str> {
    let mut cur: Cow<'_, str> = Cow::Borrowed(s);
    for _ in 0..DECODE_ROUNDS {
        if !cur.contains('%') {
            break;
        }
        let next = percent_decode_str(&cur).decode_utf8_lossy().into_owned();
        if next == *cur {
            break;
        }
        cur = Cow::Owned(next);
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_nested_encodings_and_stops() {
        assert_eq!(
            percent_decode_repeatedly("victim%2540example.com"),
            "victim@example.com"
        );
        assert_eq!(percent_decode_repeatedly("a%20b"), "a b");
        assert_eq!(percent_decode_repeatedly("100%"), "100%");
        assert!(matches!(
            percent_decode_repeatedly("plain"),
            Cow::Borrowed(_)
        ));
    }
}
