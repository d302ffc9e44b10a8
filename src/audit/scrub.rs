//! Defence in depth for everything the gateway writes about traffic: a last pass over a
//! finished audit line (or log field) that replaces anything PII- or secret-shaped.
//!
//! Audit events are redacted structurally (values are never copied into them); this scrub is
//! the second wall, for what a server chose to put into names it controls (property names,
//! URL paths, hosts). It is deliberately broad: a false positive costs a `[redacted]` in a log.
//!
//! Two passes over the (percent-decoded) text: broad shapes (e-mail, JWT, key formats, digit
//! runs, IBANs, PEM), then every token between JSON and URL delimiters through the policy's
//! own detectors ([`elicitgate_core::inspect::detect_secret`], what `url.pii` runs): whatever
//! the policy can detect, the scrub redacts, whichever list a new key format is added to.

use regex::Regex;
use std::borrow::Cow;

/// The marker that replaces every redacted value.
pub const REDACTED: &str = "[redacted]";

/// Compiled scrub patterns.
pub struct Scrubber {
    patterns: Regex,
}

impl Scrubber {
    pub fn new() -> Result<Self, regex::Error> {
        let patterns = [
            // e-mail addresses (also percent-encoded @)
            r"[A-Za-z0-9._%+\-]+(?:@|%40)[A-Za-z0-9.\-]+\.[A-Za-z]{2,}",
            // JWTs
            r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
            // well-known key and token formats
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_\-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[A-Za-z0-9_\-]{30,}|glpat-[A-Za-z0-9_\-]{16,})",
            // bearer / basic credentials
            r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}",
            // runs of 9+ digits, possibly separated: card numbers, phone numbers, national ids
            r"\+?\d(?:[ \-.]?\d){8,}",
            // IBAN-shaped
            r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b",
            // PEM blocks
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
        ]
        .join("|");
        Ok(Self {
            patterns: Regex::new(&patterns)?,
        })
    }

    /// `text` with every PII- or secret-shaped run replaced by [`REDACTED`]. Percent-encoded
    /// text is decoded first, the way the URL detectors decode it (`%2540` is `@`, `%20` a
    /// space, `%2E` a dot), so nothing the detector found hides from the scrub in its encoding.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let shaped = match elicitgate_core::text::percent_decode_repeatedly(text) {
            Cow::Borrowed(_) => self.patterns.replace_all(text, REDACTED),
            Cow::Owned(decoded) => {
                Cow::Owned(self.patterns.replace_all(&decoded, REDACTED).into_owned())
            }
        };
        match redact_detected(&shaped) {
            Some(redacted) => Cow::Owned(redacted),
            None => shaped,
        }
    }
}

/// Delimiters between the values of a JSON line or a URL: a token between them is what a
/// detector judges (a path segment, a query name or value, a JSON string).
fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        '"' | '/' | '?' | '&' | '=' | '#' | ',' | ';' | '{' | '}' | '[' | ']' | '\\' | '\n' | '\t'
    )
}

/// `text` with every token the policy's detectors flag replaced by [`REDACTED`]; `None` when
/// none is flagged.
fn redact_detected(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut start = 0;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), '"')))
    {
        if !is_delimiter(c) {
            continue;
        }
        let token = &text[start..i];
        if token.len() >= 6 && elicitgate_core::inspect::detect_secret(token).is_some() {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..start]);
            buf.push_str(REDACTED);
            copied = i;
        }
        start = i + c.len_utf8();
    }
    out.map(|mut buf| {
        buf.push_str(&text[copied..]);
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_secret_shapes_and_keeps_ordinary_text() {
        let s = Scrubber::new().unwrap();
        for secret in [
            "alice@example.com",
            "alice%40example.com",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
            "ghp_abcdefghijklmnopqrstuvwxyz0123",
            "sk-proj-abcdefghijklmnop1234",
            "AKIAABCDEFGHIJKLMNOP",
            "Bearer abc.def.ghi-123",
            "4111 1111 1111 1111",
            "+1 415 555 0100",
            "DE89370400440532013000",
        ] {
            let line = format!("{{\"x\":\"pre {secret} post\"}}");
            let out = s.scrub(&line);
            assert!(!out.contains(secret), "{secret} survived: {out}");
            assert!(out.contains(REDACTED));
        }
        // Percent-encoded, once or twice: decoded as the detector decodes, then scrubbed.
        for encoded in [
            "/card/4111%201111%201111%201111",
            "/u/victim%2540example.com",
            "/t/eyJhbGciOiJIUzI1NiJ9%2EeyJzdWIiOiIxIn0%2Esig",
            "/p/%2B1%20415%20555%200100",
        ] {
            let out = s.scrub(encoded);
            assert!(out.contains(REDACTED), "{encoded} survived: {out}");
            for digits in ["4111", "victim", "eyJzdWIi", "555"] {
                assert!(!out.contains(digits), "{encoded} left {digits}: {out}");
            }
        }
        let benign = r#"{"route":"demo","rules":["form.secret"],"path":"/connect","port":8080}"#;
        assert_eq!(s.scrub(benign), benign);
    }

    #[test]
    fn whatever_the_policy_detects_is_redacted() {
        let s = Scrubber::new().unwrap();
        // Key formats and numbers only the policy's detectors know, in a path or a query name.
        for secret in [
            "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "(415) 555-0100",
            "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        ] {
            assert!(
                elicitgate_core::inspect::detect_secret(secret).is_some(),
                "the policy does not detect {secret}"
            );
            for line in [
                format!(r#"{{"url":{{"path":"/v1/{secret}/x","query":["{secret}"]}}}}"#),
                format!("/hooks/{secret}?a=1"),
            ] {
                let out = s.scrub(&line);
                assert!(!out.contains(secret), "{secret} survived: {out}");
                assert!(out.contains(REDACTED), "{out}");
            }
        }
    }
}
