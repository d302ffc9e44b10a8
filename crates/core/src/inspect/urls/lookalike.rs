//! Look-alikes of protected hosts (`url.host`, detector `host.lookalike`).
//!
//! Owns deciding whether a host imitates one of the policy's protected domains
//! (`url.protected_hosts`, by default `policy::hosts::DEFAULT_PROTECTED_HOSTS`, the most
//! impersonated brands) without being it. Each label of the host, and each hyphen-separated
//! part of a label, is folded once and compared with each protected domain's name label
//! (`paypal` of `paypal.com`, folded at load):
//! - by its Unicode confusable skeleton (UTS #39) folded (`policy::hosts::lookalike_fold`)
//!   for the ASCII swaps phishing uses (`0`→`o`, `1`/`i`→`l`, `3`→`e`, `4`/`@`→`a`, `5`→`s`, `7`→`t`, `8`→`b`,
//!   `rn`→`m`, `vv`→`w`, `cl`→`d`): `paypa1`, `g00gle`, `arnazon`, `micros0ft`;
//! - by edit distance (Damerau–Levenshtein, `strsim`) 1 on that fold, for names of six or
//!   more letters: `gooogle`, `amazom`, `facebok`; a part shorter than the name must keep
//!   its first letter (`cloud.looker.com` is no `icloud`).
//!
//! A part spelled exactly as the brand is not a look-alike (`github.example.com` is a company's
//! GitHub Enterprise, `paypal.de` is PayPal) unless the label pairs it with a word of account
//! phishing (`paypal-secure-login.com`, `microsoft-account-security.net`; the brand may open
//! a longer part: `appleid-verify.com`), or the brand's whole domain stands inside another
//! domain's name (`accounts.google.com.signin-verify.io`). The brand's own domain and its
//! subdomains never are. Work: a few labels × the list, each comparison bounded by the label
//! length (≤ 63).

use crate::policy::hosts::{lookalike_fold, ProtectedHost};

/// The protected domain `host` imitates, if any. `host` is lower case, without a trailing dot;
/// `unicode` is its decoded form when it had punycode labels (else `host` itself).
pub(crate) fn imitated<'a>(
    host: &str,
    unicode: &str,
    protected: &'a [ProtectedHost],
) -> Option<&'a str> {
    if protected.iter().any(|p| {
        host == p.domain
            || host
                .strip_suffix(p.domain.as_str())
                .is_some_and(|h| h.ends_with('.'))
    }) {
        return None;
    }
    let labels: Vec<&str> = unicode.split('.').collect();
    // The last label is the TLD: `paypal.c0m` imitates nothing a user reads as the name.
    let names = &labels[..labels.len().saturating_sub(1)];
    // Each part folded once, compared with every protected name (folded at load).
    let parts: Vec<(&str, String)> = names
        .iter()
        .flat_map(|l| std::iter::once(*l).chain(l.split('-').filter(|p| p.len() != l.len())))
        .filter(|p| p.len() >= 3)
        .map(|p| (p, lookalike_fold(p)))
        .collect();
    let near = |part: &str, folded: &str, p: &ProtectedHost| {
        (folded.len() >= p.folded.len() || part.chars().next() == p.name.chars().next())
            && strsim::damerau_levenshtein(folded, &p.folded) == 1
    };
    // A label that pairs a brand with a word of account phishing; the brand may be split by
    // hyphens too (`pay-pal-secure`, `micro-soft-support`).
    let combo = |p: &ProtectedHost| {
        names.iter().any(|label| {
            let pieces = || label.split('-');
            label.contains('-')
                && pieces().any(|x| PHISHING_WORDS.contains(&x))
                && (pieces().any(|x| x.starts_with(p.name.as_str()))
                    || label.replace('-', "").starts_with(p.name.as_str()))
        })
    };
    // The brand's domain followed by more labels of another domain.
    let embedded = |p: &ProtectedHost| {
        unicode.match_indices(p.domain.as_str()).any(|(at, _)| {
            (at == 0 || unicode[..at].ends_with('.'))
                && unicode[at + p.domain.len()..].starts_with('.')
        })
    };
    protected.iter().find_map(|p| {
        (parts.iter().any(|(part, folded)| {
            *part != p.name && (*folded == p.folded || (p.name.len() >= 6 && near(part, folded, p)))
        }) || (p.name.len() >= 4 && combo(p))
            || embedded(p))
        .then_some(p.domain.as_str())
    })
}

/// Words that phishing pairs with a brand in one label (`paypal-secure-login`): what an
/// account page is about. Not words of ordinary products (`google-analytics`,
/// `apple-music-fans`).
const PHISHING_WORDS: &[&str] = &[
    "login",
    "logon",
    "signin",
    "sign",
    "secure",
    "security",
    "verify",
    "verification",
    "account",
    "accounts",
    "update",
    "support",
    "confirm",
    "auth",
    "authentication",
    "billing",
    "unlock",
    "recovery",
    "recover",
    "alert",
    "alerts",
    "password",
    "reset",
    "wallet",
    "id",
    "helpdesk",
    "validation",
    "validate",
    "suspended",
    "locked",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Vec<ProtectedHost> {
        crate::policy::hosts::DEFAULT_PROTECTED_HOSTS
            .iter()
            .map(|d| ProtectedHost::new(d))
            .collect()
    }

    fn judge(host: &str) -> Option<String> {
        imitated(host, host, &list()).map(str::to_string)
    }

    #[test]
    fn ascii_swaps_and_near_misses_imitate_their_brand() {
        for (host, brand) in [
            ("paypa1.com", "paypal.com"),
            ("paypai-secure.net", "paypal.com"),
            ("g00gle.com", "google.com"),
            ("arnazon.co", "amazon.com"),
            ("micros0ft-support.com", "microsoft.com"),
            ("login.rnicrosoft.net", "microsoft.com"),
            ("gooogle.com", "google.com"),
            ("faceb00k.com", "facebook.com"),
            ("githuh.io", "github.com"),
            ("app1e.com", "apple.com"),
            ("c0inbase-verify.com", "coinbase.com"),
            ("paypal-secure-login.com", "paypal.com"),
            ("appleid-verify-account.com", "apple.com"),
            ("microsoft-account-security.net", "microsoft.com"),
            ("accounts.google.com.signin-verify.io", "google.com"),
            ("www.paypal.com.account-review.net", "paypal.com"),
            ("gogle.com", "google.com"),
            ("pay-pal-secure.com", "paypal.com"),
            ("micro-soft-support.com", "microsoft.com"),
            ("appleid.apple.com.verify-account.info", "apple.com"),
        ] {
            assert_eq!(judge(host).as_deref(), Some(brand), "{host}");
        }
    }

    #[test]
    fn the_brand_its_subdomains_exact_names_and_unrelated_hosts_pass() {
        for host in [
            "paypal.com",
            "www.paypal.com",
            "accounts.google.com",
            "paypal.de",
            "github.example.com",
            "google-analytics.com",
            "example.com",
            "ample.com",
            "apply.example.org",
            "docs.rs",
            "mcp.internal",
            "githubusercontent.com",
            "gitlab.example.net",
            "northwind.cloud.looker.com",
            "cloud.example.com",
            "acme-cloud.io",
            "loud.acme.io",
            "apple-music-fans.com",
            "paypal-developer.example.org",
            "mygoogle.com.example",
        ] {
            assert_eq!(judge(host), None, "{host}");
        }
    }

    #[test]
    fn greek_and_cyrillic_homoglyphs_fold_to_the_brand() {
        // The decoded form of a punycode host: Cyrillic а and Greek ο.
        assert_eq!(
            imitated("xn--pypal-4ve.com", "pаypal.com", &list()),
            Some("paypal.com")
        );
        assert_eq!(
            imitated("xn--ggle-0nda.com", "gοοgle.com", &list()),
            Some("google.com")
        );
    }

    #[test]
    fn an_empty_list_protects_nothing() {
        assert_eq!(imitated("paypa1.com", "paypa1.com", &[]), None);
    }
}
