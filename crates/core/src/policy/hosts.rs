//! Host patterns for `url.allow_http_hosts`, `url.allowed_hosts`, `url.denied_hosts`.
//!
//! Owns: parsing a pattern once at policy load (exact host, IP literal, or `*.suffix`),
//! normalising it the way the `url` crate normalises hosts (lower case, IDNA to ASCII,
//! IPv6 without brackets, no trailing dot), and matching normalised hosts against it.
//! Never: resolves names.

use std::net::IpAddr;

/// One compiled host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// A host name or IP literal, compared exactly (after normalisation).
    Exact(String),
    /// `*.example.com`: any host ending in `.example.com` (not `example.com` itself).
    Subdomains(String),
}

impl HostPattern {
    /// Parse and normalise a pattern; the error says why it is not a host.
    pub fn parse(raw: &str) -> Result<HostPattern, String> {
        let s = raw.trim();
        if s.is_empty() {
            return Err("empty host pattern".into());
        }
        if let Some(rest) = s.strip_prefix("*.") {
            let host = normalise_name(rest)?;
            if !host.contains('.') {
                return Err(format!(
                    "`{raw}`: a wildcard needs at least two labels after `*.`"
                ));
            }
            return Ok(HostPattern::Subdomains(format!(".{host}")));
        }
        if s.contains('*') {
            return Err(format!(
                "`{raw}`: `*` is only allowed as a leading `*.` label"
            ));
        }
        let unbracketed = s
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .unwrap_or(s);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(HostPattern::Exact(ip.to_string()));
        }
        Ok(HostPattern::Exact(normalise_name(s)?))
    }

    /// Does the normalised `host` match?
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h == host,
            HostPattern::Subdomains(suffix) => {
                host.len() > suffix.len() && host.ends_with(suffix.as_str())
            }
        }
    }
}

fn normalise_name(s: &str) -> Result<String, String> {
    let trimmed = s.trim_end_matches('.');
    let ascii =
        idna::domain_to_ascii(trimmed).map_err(|_| format!("`{s}` is not a valid host name"))?;
    let valid = !ascii.is_empty()
        && ascii.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if valid {
        Ok(ascii)
    } else {
        Err(format!("`{s}` is not a valid host name"))
    }
}

/// Normalise a host as seen in a URL for matching: lower case, no trailing dot, IPv6
/// The default `url.protected_hosts`: brands most often impersonated in phishing (banks,
/// payment, mail and cloud accounts, developer platforms, wallets, delivery, games).
pub const DEFAULT_PROTECTED_HOSTS: &[&str] = &[
    "paypal.com",
    "apple.com",
    "icloud.com",
    "microsoft.com",
    "microsoftonline.com",
    "outlook.com",
    "google.com",
    "gmail.com",
    "youtube.com",
    "amazon.com",
    "facebook.com",
    "instagram.com",
    "whatsapp.com",
    "linkedin.com",
    "netflix.com",
    "spotify.com",
    "github.com",
    "gitlab.com",
    "dropbox.com",
    "docusign.com",
    "adobe.com",
    "salesforce.com",
    "atlassian.com",
    "slack.com",
    "zoom.us",
    "okta.com",
    "stripe.com",
    "shopify.com",
    "coinbase.com",
    "binance.com",
    "metamask.io",
    "chase.com",
    "wellsfargo.com",
    "bankofamerica.com",
    "americanexpress.com",
    "fedex.com",
    "dhl.com",
    "usps.com",
    "steampowered.com",
    "steamcommunity.com",
    "discord.com",
    "telegram.org",
    "openai.com",
    "anthropic.com",
    "yahoo.com",
    "ebay.com",
    "walmart.com",
    "roblox.com",
];

/// without brackets.
pub fn normalise_host(host: &str) -> String {
    let h = host
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(host);
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// A set of host patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostSet {
    patterns: Vec<HostPattern>,
}

impl HostSet {
    /// Compile patterns; each bad one is reported as `"{path}[i]: reason"`.
    pub fn compile(raw: &[String], path: &str, errors: &mut Vec<String>) -> HostSet {
        let mut patterns = Vec::with_capacity(raw.len());
        for (i, p) in raw.iter().enumerate() {
            match HostPattern::parse(p) {
                Ok(p) => patterns.push(p),
                Err(e) => errors.push(format!("{path}[{i}]: {e}")),
            }
        }
        HostSet { patterns }
    }

    /// From already-valid patterns (built-in defaults).
    pub fn from_patterns(patterns: Vec<HostPattern>) -> HostSet {
        HostSet { patterns }
    }

    /// No patterns?
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Does any pattern match the normalised `host`?
    pub fn matches(&self, host: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(host))
    }

    /// The patterns.
    pub fn patterns(&self) -> &[HostPattern] {
        &self.patterns
    }
}

/// A protected domain (`url.protected_hosts`) with its name label folded once, at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedHost {
    /// `paypal.com`, lower case.
    pub domain: String,
    /// `paypal`: the label a user reads as the brand.
    pub name: String,
    /// [`lookalike_fold`] of `name`.
    pub folded: String,
}

impl ProtectedHost {
    /// From a normalised domain name.
    pub fn new(domain: &str) -> ProtectedHost {
        let name = domain.split('.').next().unwrap_or(domain).to_string();
        ProtectedHost {
            domain: domain.to_string(),
            folded: lookalike_fold(&name),
            name,
        }
    }
}

/// The confusable skeleton of `s` (UTS #39), lower case, with the ASCII swaps phishing uses
/// folded (`0`→`o`, `1`/`i`→`l`, `rn`→`m`, …): how a look-alike and its brand compare.
pub fn lookalike_fold(s: &str) -> String {
    let skeleton: String = unicode_security::skeleton(s).collect();
    let lower = skeleton.to_lowercase();
    let mapped: String = lower
        .chars()
        .map(|c| match c {
            '0' => 'o',
            '1' | 'i' | '|' => 'l',
            '3' => 'e',
            '4' | '@' => 'a',
            '5' | '$' => 's',
            '7' => 't',
            '8' => 'b',
            c => c,
        })
        .collect();
    mapped
        .replace("rn", "m")
        .replace("vv", "w")
        .replace("cl", "d")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_match() {
        let p = HostPattern::parse("*.Example.COM").expect("wildcard");
        assert!(p.matches("a.example.com"));
        assert!(p.matches("a.b.example.com"));
        assert!(!p.matches("example.com"));
        assert!(!p.matches("badexample.com"));
        let p = HostPattern::parse("::1").expect("ipv6");
        assert!(p.matches(&normalise_host("[::1]")));
        let p = HostPattern::parse("[::1]").expect("bracketed ipv6");
        assert_eq!(p, HostPattern::Exact("::1".into()));
        let p = HostPattern::parse("bücher.example").expect("idna");
        assert!(p.matches("xn--bcher-kva.example"));
        assert!(HostPattern::parse("localhost.")
            .expect("dot")
            .matches("localhost"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        for bad in [
            "",
            "*",
            "*.com",
            "a.*.com",
            "exa mple.com",
            "https://example.com",
            "ex*ample.com",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad}");
        }
        let mut errors = Vec::new();
        let set = HostSet::compile(
            &["ok.example".into(), "*".into()],
            "p.url.denied_hosts",
            &mut errors,
        );
        assert_eq!(set.patterns().len(), 1);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("p.url.denied_hosts[1]:"));
    }
}
