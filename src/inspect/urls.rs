//! URL checks: `url.invalid`, `url.scheme`, `url.credentials`, `url.host`, `url.pii`
//! for URL-mode `url`s, and the clickable-link detector behind `form.url`.
//!
//! Owns:
//! - Parsing (WHATWG rules via the `url` crate). Because that parser silently drops
//!   tabs/newlines and treats `\` as `/`, a raw URL containing whitespace, control
//!   characters or backslashes is `url.invalid` (a client may parse it differently from
//!   what the user is shown). URLs over 8 KiB are `url.invalid` (bounded work).
//! - Hosts: IDNA/punycode labels (`host.punycode`), non-ASCII in the raw authority
//!   (`host.non_ascii`), decoded labels that mix scripts (`host.mixed_script`) or whose
//!   confusable skeleton is ASCII (`host.confusable`), IP literals (`host.ip_literal`,
//!   unless allowed or listed), deny/allow lists (`host.denied`, `host.not_allowed`).
//! - PII: path segments, query and fragment parameters are percent-decoded repeatedly
//!   (up to 4 rounds, to defeat double encoding; `+` is kept as `+`) and handed to
//!   `pii.rs`. Sensitive parameter *names* fail on any non-trivial value
//!   (`url.param:<name>`). Decided: `code` and `state` are not sensitive by name (OAuth
//!   authorize URLs legitimately carry `state`, and `code` is too generic), `key` is not
//!   either (its value still goes through the detectors, which catch `AIza…` etc.);
//!   presigned-URL signatures (`X-Amz-Signature`, `sig`, …) are, because a
//!   pre-authenticated URL is forbidden.
//! - Links in form text (`form.url`): `scheme://…`, `www.…`, `javascript:`, `vbscript:`,
//!   `data:<mime>`, `mailto:`, `tel:`/`sms:` with a number, `file:/`, after NFKC (so
//!   full-width `ｈｔｔｐｓ：／／` counts). Bare domains (`example.com`) are not links.
//!
//! Never: fetches the URL or resolves its host; records values (a query parameter name
//! appears in a location only if it is a short identifier that is not itself PII).

use std::borrow::Cow;
use std::sync::LazyLock;

use unicode_security::MixedScript;
use url::{Host, Url};

use super::pii;
use super::rule::{Hits, RuleId};
use crate::policy::compile::normalise_param_name;
use crate::policy::hosts::normalise_host;
use crate::policy::UrlPolicy;
use crate::text::fold as text;

/// Longest URL inspected.
pub(crate) const MAX_URL_BYTES: usize = 8192;

/// Built-in sensitive parameter names, normalised (lower case, no `-` `_` `.`).
const SENSITIVE_PARAMS: &[&str] = &[
    "token",
    "accesstoken",
    "idtoken",
    "refreshtoken",
    "authtoken",
    "apitoken",
    "bearertoken",
    "sessiontoken",
    "oauthtoken",
    "securitytoken",
    "apikey",
    "xapikey",
    "apisecret",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "clientsecret",
    "appsecret",
    "session",
    "sessionid",
    "sessid",
    "phpsessid",
    "jsessionid",
    "auth",
    "authorization",
    "jwt",
    "bearer",
    "credential",
    "credentials",
    "privatekey",
    "secretkey",
    "accesskey",
    "signature",
    "sig",
    "xamzsignature",
    "xamzcredential",
    "xamzsecuritytoken",
    "xgoogsignature",
    "xgoogcredential",
    "otp",
    "passcode",
    "pin",
    "cvv",
    "cvc",
    "ssn",
    "iban",
    "cardnumber",
    "ccnumber",
    "email",
    "emailaddress",
    "phone",
    "phonenumber",
    "dob",
    "dateofbirth",
];

/// Names ending in `token` that are pagination cursors, not credentials.
const BENIGN_TOKEN_PARAMS: &[&str] = &[
    "pagetoken",
    "nextpagetoken",
    "nexttoken",
    "continuationtoken",
    "synctoken",
    "cursortoken",
];

/// Values that carry no secret whatever the parameter is called.
const TRIVIAL_VALUES: &[&str] = &[
    "true", "false", "0", "1", "yes", "no", "null", "none", "on", "off",
];

const LINK_PATTERNS: [(&str, &str); 7] = [
    (r"(?i)\b[a-z][a-z0-9+.\-]{1,31}://[^\s]", "link.url"),
    (r"(?i)\b(?:javascript|vbscript):\S", "link.script"),
    (r"(?i)\bdata:[a-z]+/[a-z0-9.+\-]+[;,]", "link.data"),
    (r"(?i)\bmailto:\S", "link.mailto"),
    (r"(?i)\b(?:tel|sms|callto):\+?[0-9]", "link.tel"),
    (r"(?i)\bfile:/", "link.file"),
    (r"(?i)\bwww\.[a-z0-9\-]+\.[a-z]", "link.www"),
];

#[allow(clippy::expect_used)]
static LINKS: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    regex::RegexSet::new(LINK_PATTERNS.iter().map(|(p, _)| p)).expect("static regex set compiles")
});

/// The link detector that fires on `text`, if any.
pub(crate) fn find_link(text_in: &str) -> Option<&'static str> {
    let t = text::nfkc(text_in);
    let b = t.as_bytes();
    let maybe =
        memchr::memchr(b':', b).is_some() || b.windows(4).any(|w| w.eq_ignore_ascii_case(b"www."));
    if !maybe {
        return None;
    }
    LINKS.matches(&t).iter().next().map(|i| LINK_PATTERNS[i].1)
}

/// Repeated percent-decoding, bounded: the one decoding the audit scrubber uses too.
fn decode(s: &str) -> Cow<'_, str> {
    crate::text::percent_decode_repeatedly(s)
}

fn is_sensitive_param(norm: &str, policy: &UrlPolicy) -> bool {
    if BENIGN_TOKEN_PARAMS.contains(&norm) {
        return false;
    }
    SENSITIVE_PARAMS.contains(&norm)
        || policy.extra_sensitive_params.contains(norm)
        || (norm.len() > 5 && norm.ends_with("token"))
        || norm.ends_with("apikey")
        || norm.ends_with("password")
        || norm.ends_with("secret")
}

fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && pii::scan_value(name).is_none()
}

/// Check a query-like string (`a=b&c=d`) under `prefix` (`url.query` / `url.fragment`).
fn check_params(raw: &str, prefix: &str, policy: &UrlPolicy, hits: &mut Hits) {
    for (i, pair) in raw.split(['&', ';']).enumerate() {
        if pair.is_empty() {
            continue;
        }
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode(raw_name);
        let value = decode(raw_value);
        let loc = if safe_name(&name) {
            format!("{prefix}.{name}")
        } else {
            format!("{prefix}[{i}]")
        };
        if let Some(d) = pii::scan_value(&name) {
            hits.add(RuleId::UrlPii, format!("{prefix}[{i}]"), d);
        }
        let norm = normalise_param_name(&name);
        let trivial =
            value.is_empty() || TRIVIAL_VALUES.contains(&value.to_ascii_lowercase().as_str());
        if !trivial && is_sensitive_param(&norm, policy) {
            let detector = if safe_name(&norm) {
                format!("url.param:{norm}")
            } else {
                "url.param".to_string()
            };
            hits.add(RuleId::UrlPii, &loc, detector);
        }
        if let Some(d) = pii::scan_value(&value) {
            hits.add(RuleId::UrlPii, &loc, d);
        }
    }
}

fn raw_authority(raw: &str) -> &str {
    let after = raw.split_once("://").map_or("", |(_, rest)| rest);
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    &after[..end]
}

fn check_host(raw: &str, url: &Url, policy: &UrlPolicy, hits: &mut Hits) {
    let Some(host) = url.host() else {
        if matches!(url.scheme(), "http" | "https") {
            hits.add(RuleId::UrlInvalid, "url.host", "url.no_host");
        }
        return;
    };
    let name = normalise_host(&host.to_string());
    let listed = policy.allow_http_hosts.matches(&name) || policy.allowed_hosts.matches(&name);
    match host {
        Host::Ipv4(_) | Host::Ipv6(_) => {
            if !policy.allow_ip_literals && !listed {
                hits.add(RuleId::UrlHost, "url.host", "host.ip_literal");
            }
        }
        Host::Domain(d) => {
            let authority = raw_authority(raw);
            let host_part = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if !host_part.is_ascii() {
                hits.add(RuleId::UrlHost, "url.host", "host.non_ascii");
            }
            for label in d.split('.') {
                if label.len() >= 4 && label[..4].eq_ignore_ascii_case("xn--") {
                    hits.add(RuleId::UrlHost, "url.host", "host.punycode");
                    let (unicode, _) = idna::domain_to_unicode(label);
                    if !unicode.as_str().is_single_script() {
                        hits.add(RuleId::UrlHost, "url.host", "host.mixed_script");
                    }
                    let sk: String = unicode_security::skeleton(&unicode).collect();
                    if sk.is_ascii() && sk != unicode {
                        hits.add(RuleId::UrlHost, "url.host", "host.confusable");
                    }
                } else if !label.is_ascii() {
                    // Non-special schemes keep hosts opaque (not IDNA-encoded).
                    hits.add(RuleId::UrlHost, "url.host", "host.non_ascii");
                }
            }
        }
    }
    if policy.denied_hosts.matches(&name) {
        hits.add(RuleId::UrlHost, "url.host", "host.denied");
    }
    if !policy.allowed_hosts.is_empty() && !policy.allowed_hosts.matches(&name) {
        hits.add(RuleId::UrlHost, "url.host", "host.not_allowed");
    }
}

/// All URL-mode checks on `raw`.
pub(crate) fn check_url(raw: &str, policy: &UrlPolicy, hits: &mut Hits) {
    if raw.len() > MAX_URL_BYTES {
        hits.add(RuleId::UrlInvalid, "url", "url.too_long");
        return;
    }
    if raw
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        hits.add(RuleId::UrlInvalid, "url", "url.unsafe_chars");
    }
    let url = match Url::parse(raw) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            hits.add(RuleId::UrlInvalid, "url", "url.relative");
            return;
        }
        Err(_) => {
            hits.add(RuleId::UrlInvalid, "url", "url.parse");
            return;
        }
    };
    match url.scheme() {
        "https" => {}
        "http" => {
            let host = url.host_str().map(normalise_host).unwrap_or_default();
            if !policy.allow_http_hosts.matches(&host) {
                hits.add(RuleId::UrlScheme, "url.scheme", "scheme.http");
            }
        }
        _ => hits.add(RuleId::UrlScheme, "url.scheme", "scheme.other"),
    }
    if !url.username().is_empty() || url.password().is_some() {
        hits.add(RuleId::UrlCredentials, "url.userinfo", "url.userinfo");
    }
    check_host(raw, &url, policy, hits);
    if url.cannot_be_a_base() {
        if let Some(d) = pii::scan_value(&decode(url.path())) {
            hits.add(RuleId::UrlPii, "url.path", d);
        }
    } else if let Some(segments) = url.path_segments() {
        for seg in segments {
            if let Some(d) = pii::scan_value(&decode(seg)) {
                hits.add(RuleId::UrlPii, "url.path", d);
            }
        }
    }
    if let Some(q) = url.query() {
        check_params(q, "url.query", policy, hits);
    }
    if let Some(f) = url.fragment() {
        if f.contains('=') {
            check_params(f, "url.fragment", policy, hits);
        }
        if let Some(d) = pii::scan_value(&decode(f)) {
            hits.add(RuleId::UrlPii, "url.fragment", d);
        }
    }
}

#[cfg(test)]
mod tests;
