use super::*;
use crate::inspect::ids;

fn d(s: &str) -> Option<&'static str> {
    scan_value(s)
}

#[test]
fn emails() {
    assert_eq!(d("john.doe@example.com"), Some("pii.email"));
    assert_eq!(d("user=jane+tag@corp.example.org&x=1"), Some("pii.email"));
    assert_eq!(d("@handle_only"), None);
}

#[test]
fn phones_and_their_lookalikes() {
    for p in [
        "+14155552671",
        "+1 415 555 2671",
        "+33 6 12 34 56 78",
        "(415) 555-2671",
        "415-555-2671",
        "415.555.2671",
        "13812345678",
        "138-1234-5678",
        "0812345678",
        "081-234-5678",
        "06 12 34 56 78",
        "090-1234-5678",
        "+66812345678",
    ] {
        assert_eq!(d(p), Some("pii.phone"), "{p}");
    }
    for n in [
        "2024-01-15",
        "15-01-2024",
        "1712345678",
        "1712345678901",
        "12345",
        "v1.2.3.4",
        "192.168.100.200",
        "123-456-7890",
        "order-42",
        "550e8400-e29b-41d4-a716-446655440000",
        "00123456789",
        "3.14159265358",
        "release/2026-08",
    ] {
        assert_eq!(d(n), None, "{n}");
    }
}

#[test]
fn cards_need_iin_length_and_luhn() {
    for c in [
        "4111111111111111",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "5555555555554444",
        "378282246310005",
        "6011111111111117",
        "3530111333300000",
        "2223003122003222",
    ] {
        assert_eq!(d(c), Some("pii.card"), "{c}");
    }
    // Luhn fails / no IIN / timestamps.
    for n in [
        "4111111111111112",
        "1234567812345670",
        "1712345678901",
        "0000000000000000",
    ] {
        assert_ne!(d(n), Some("pii.card"), "{n}");
    }
}

#[test]
fn ibans_need_country_length_and_mod97() {
    for i in [
        "DE89370400440532013000",
        "GB82WEST12345698765432",
        "FR1420041010050500013M02606",
        "de89 3704 0044 0532 0130 00",
    ] {
        assert_eq!(d(i), Some("pii.iban"), "{i}");
    }
    assert_eq!(d("DE89370400440532013001"), None);
    assert_eq!(d("ZZ89370400440532013000"), None);
}

#[test]
fn national_ids() {
    assert_eq!(d("123-45-6789"), Some("pii.ssn"));
    assert_eq!(d("000-45-6789"), None);
    assert_eq!(d("666-45-6789"), None);
    assert_eq!(d("123-45-67890"), None);
    // Other countries' numbers need context in values; the audit scrub takes any shape.
    assert_eq!(d("11010519491231002X"), None);
    assert_eq!(scan_scrub("11010519491231002X"), Some("pii.national_id:cn"));
    assert_eq!(scan_scrub("440304199001011233"), Some("pii.national_id:cn"));
    assert_eq!(scan_scrub("440304199001011234"), None);
    assert_eq!(scan_scrub("1-1017-00230-07-4"), Some("pii.national_id:th"));
    assert_eq!(scan_scrub("1-1017-00230-07-5"), None);
    let cn = Some(ids::Hint::Kind(ids::Kind::Cn));
    assert_eq!(
        scan_value_hinted("11010519491231002X", cn),
        Some("pii.national_id:cn")
    );
    assert_eq!(
        scan_value_hinted("Thai ID 1-1017-00230-07-4", None),
        None,
        "no distinctive keyword"
    );
    assert_eq!(
        scan_value_hinted("1-1017-00230-07-4", Some(ids::Hint::Any)),
        Some("pii.national_id:th")
    );
    assert_eq!(
        scan_value_hinted("1-1017-00230-07-4", cn),
        None,
        "a hint naming one country checks that country only"
    );
}

#[test]
fn emails_in_any_script_and_spelled_out() {
    for e in [
        "jane.doe@example.com",
        "josé@bücher.de",
        "用户@例子.广告",
        "用户@例子。广告",
        "пользователь@пример.рф",
        "jane(at)example.com",
        "jane (at) example (dot) com",
        "jane[at]example[dot]co[dot]uk",
        "jane {at} mail.example.org",
        "jane at example dot com",
        "contact: JANE AT EXAMPLE DOT COM",
    ] {
        assert_eq!(d(e), Some("pii.email"), "{e}");
    }
    for e in [
        "log in at example.com",
        "meet at noon",
        "look at the dot matrix",
        "rated (at) least 5 stars",
        "price@",
        "@handle",
    ] {
        assert_eq!(d(e), None, "{e}");
    }
}

#[test]
fn jwts_need_a_json_header_with_alg() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    assert_eq!(d(jwt), Some("secret.jwt"));
    assert_eq!(d("eyJub3QiOiJhIGp3dCJ9.eyJzdWIiOiIxIn0.sig"), None);
    assert_eq!(d("eyJxxxxxxx.yyyyyyyyy.zzzz"), None);
}

#[test]
fn key_prefixes() {
    let cases = [
        (
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "secret.key:github",
        ),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "secret.key:github",
        ),
        (
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7",
            "secret.key:sk",
        ),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "secret.key:stripe"),
        ("AKIAIOSFODNN7EXAMPLE", "secret.key:aws"),
        ("xoxb-123456789012-abcdefghijkl", "secret.key:slack"),
        (
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "secret.key:google",
        ),
        ("glpat-abcdefghij0123456789", "secret.key:gitlab"),
        ("-----BEGIN RSA PRIVATE KEY-----", "secret.private_key"),
        ("-----BEGIN+OPENSSH+PRIVATE+KEY-----", "secret.private_key"),
    ];
    for (v, want) in cases {
        assert_eq!(d(v), Some(want), "{v}");
    }
    for v in [
        "pk_live_51H8abcdefghijklmnopqrstuv",
        "sk-reykjavik-conference-2024-and-more-words",
        "task-ghp_short",
        "AIDAIOSFODNN7EXAMPLE",
        "-----BEGIN PUBLIC KEY-----",
    ] {
        assert_eq!(d(v), None, "{v}");
    }
}

#[test]
fn checksum_helpers() {
    assert!(luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
    assert!(is_iban("NO9386011117947"));
    assert_eq!(
        base64url_decode("eyJhIjoxfQ").as_deref(),
        Some(&b"{\"a\":1}"[..])
    );
    assert!(base64url_decode("a*b").is_none());
}

/// A pattern that opens with a credential's literal prefix takes that credential; bare
/// digits, hex, or a prefix no credential has take none.
#[test]
fn patterns_that_take_credentials() {
    for (p, want) in [
        (r"^gh[pousr]_[A-Za-z0-9]{36}$", Some("secret.key:github")),
        (r"^sk-[A-Za-z0-9_-]{32,}$", Some("secret.key:sk")),
        (r"^xoxb-[0-9A-Za-z-]+$", Some("secret.key:slack")),
        (r"^whsec_[A-Za-z0-9]+$", Some("secret.key:stripe_webhook")),
        (r"^(?:sk|rk)_live_\w+$", None),
        (r"^sk_live_[0-9a-zA-Z]{24,}$", Some("secret.key:stripe")),
        (r"^AKIA[A-Z0-9]{16}$", Some("secret.key:aws")),
        (r"^glpat\-[\w-]{20}$", Some("secret.key:gitlab")),
        (
            "^-----BEGIN OPENSSH PRIVATE KEY-----",
            Some("secret.private_key"),
        ),
        (
            r"^-----BEGIN [A-Z ]+PRIVATE KEY-----",
            Some("secret.private_key"),
        ),
        (r"^pk_live_[0-9a-zA-Z]{24}$", None),
        (r"^(0x)?[0-9a-fA-F]{64}$", None),
        (r"^[a-f0-9]{40}$", None),
        (r"^[0-9]{6}$", None),
        (r"^ORD-\d{6}$", None),
        (r"^ssh-(rsa|ed25519) ", None),
        (r"^skeleton-[a-z]+$", None),
    ] {
        assert_eq!(pattern_key(p), want, "{p}");
    }
}
