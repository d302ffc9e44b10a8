use super::*;
use crate::inspect::rule::{Enforcement, RuleAction};
use crate::policy::Policy;

fn findings_with(url: &str, policy: &Policy) -> Vec<(String, String, String)> {
    let mut hits = Hits::new();
    check_url(url, policy.url(), &mut hits);
    hits.resolve(|_| RuleAction::Deny, Enforcement::Enforce, None)
        .findings
        .into_iter()
        .map(|f| (f.rule.as_str().to_string(), f.location, f.detector))
        .collect()
}

fn findings(url: &str) -> Vec<(String, String, String)> {
    findings_with(url, &Policy::builtin_default())
}

fn detectors(url: &str) -> Vec<String> {
    findings(url).into_iter().map(|f| f.2).collect()
}

#[test]
fn clean_urls_pass() {
    for u in [
        "https://mcp.example.com/ui/set_api_key",
        "https://srv.example/connect?e=e-42",
        "https://mcp.example.com/connect/github?flow=8f1c2a",
        "https://accounts.example.com/o/oauth2/auth?client_id=abc&redirect_uri=https%3A%2F%2Fmcp.example.com%2Fcb&state=xyz123&scope=repo&response_type=code",
        "http://localhost:8080/setup",
        "http://127.0.0.1:3000/cb",
        "http://[::1]/x",
        "https://pay.example.com/checkout/sess_42?page_token=abc123",
        "https://example.com/report/2024-01-15?t=1712345678901",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn invalid_urls() {
    assert_eq!(detectors("/relative/path"), ["url.relative"]);
    assert_eq!(detectors("https://"), ["url.parse"]);
    assert_eq!(detectors("not a url"), ["url.unsafe_chars", "url.relative"]);
    assert!(detectors("https://exa\nmple.com/").contains(&"url.unsafe_chars".to_string()));
    assert!(
        detectors("https://evil.example\\@good.example/").contains(&"url.unsafe_chars".to_string())
    );
    let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
    assert_eq!(detectors(&long), ["url.too_long"]);
    // A long real link (a SAML redirect's deflated request, a deep link) is judged, not refused.
    let saml = format!(
        "https://idp.example.com/sso?SAMLRequest={}&RelayState=%2Fdashboard",
        "fZJNT8MwDIbv%2FIoq9zZpt1EtWicNJsSkIRAbHLhEaWrWSG1S7BTGvydtkdhunJLnLlKyeLpxkXvJ"
            .repeat(300)
    );
    assert!(saml.len() > 20_000 && saml.len() < MAX_URL_BYTES);
    assert!(findings(&saml).is_empty(), "{:?}", findings(&saml));
}

#[test]
fn schemes() {
    assert_eq!(detectors("http://example.com/"), ["scheme.http"]);
    assert_eq!(detectors("javascript:alert(1)"), ["scheme.other"]);
    assert_eq!(detectors("ftp://files.example.com/a"), ["scheme.other"]);
    assert_eq!(detectors("data:text/html,hi"), ["scheme.other"]);
}

#[test]
fn credentials_in_userinfo() {
    assert_eq!(
        detectors("https://user:pass@example.com/"),
        ["url.userinfo"]
    );
    assert_eq!(detectors("https://user@example.com/"), ["url.userinfo"]);
}

#[test]
fn hosts() {
    assert!(detectors("https://xn--pple-43d.com/login").contains(&"host.punycode".to_string()));
    let d = detectors("https://аpple.com/login");
    assert!(
        d.contains(&"host.non_ascii".to_string()) && d.contains(&"host.punycode".to_string()),
        "{d:?}"
    );
    assert!(detectors("https://xn--80ak6aa92e.com/").contains(&"host.confusable".to_string()));
    assert_eq!(detectors("https://93.184.216.34/x"), ["host.ip_literal"]);
    assert_eq!(detectors("https://[2001:db8::1]/x"), ["host.ip_literal"]);
    assert_eq!(
        detectors("http://2130706433/"),
        Vec::<String>::new(),
        "decimal 127.0.0.1 is loopback-listed"
    );
    assert_eq!(detectors("http://0x7f000001/"), Vec::<String>::new());
}

#[test]
fn host_lists() {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let raw: crate::policy::model::RawPolicy = serde_json::from_value(serde_json::json!({
        "url": {"allowed_hosts": ["*.example.com", "auth.partner.test"], "denied_hosts": ["evil.example.com"],
                "allow_ip_literals": true, "extra_sensitive_params": ["ticket"]}
    })).expect("raw");
    let p = crate::policy::compile::compile_policy("t", &raw, &mut errors, &mut warnings);
    assert!(errors.is_empty(), "{errors:?}");
    let d = |u: &str| {
        findings_with(u, &p)
            .into_iter()
            .map(|f| f.2)
            .collect::<Vec<_>>()
    };
    assert!(d("https://a.example.com/").is_empty());
    assert!(d("https://auth.partner.test/").is_empty());
    assert_eq!(d("https://example.com/"), ["host.not_allowed"]);
    assert_eq!(d("https://evil.example.com/"), ["host.denied"]);
    assert_eq!(d("https://other.test/"), ["host.not_allowed"]);
    assert_eq!(d("https://10.0.0.1/"), ["host.not_allowed"]);
    assert_eq!(
        d("https://a.example.com/?ticket=abc123"),
        ["url.param:ticket"]
    );
}

#[test]
fn pii_in_path_query_fragment() {
    let f = findings("https://example.com/users/john.doe@example.com/profile");
    assert_eq!(
        f,
        [("url.pii".into(), "url.path".into(), "pii.email".into())]
    );
    let f = findings("https://example.com/cb?token=abc123def456");
    assert_eq!(
        f,
        [(
            "url.pii".into(),
            "url.query.token".into(),
            "url.param:token".into()
        )]
    );
    let f = findings("https://example.com/cb#access_token=abc123def456&token_type=bearer");
    assert_eq!(
        f,
        [(
            "url.pii".into(),
            "url.fragment.access_token".into(),
            "url.param:accesstoken".into()
        )]
    );
    let f = findings("https://example.com/x?e=john%2540example.com");
    assert_eq!(
        f,
        [("url.pii".into(), "url.query.e".into(), "pii.email".into())]
    );
    assert_eq!(
        detectors("https://example.com/x?phone=%2B14155552671"),
        ["url.param:phone", "pii.phone"]
    );
    assert_eq!(
        detectors("https://example.com/pay?c=4111111111111111"),
        ["pii.card"]
    );
    assert_eq!(
        detectors("https://example.com/x?X-Amz-Signature=abcdef0123"),
        ["url.param:xamzsignature"]
    );
    assert_eq!(
        detectors("https://example.com/x?session=true"),
        Vec::<String>::new()
    );
    assert_eq!(
        detectors("https://example.com/x?next_page_token=abc123"),
        Vec::<String>::new()
    );
    assert_eq!(
        detectors("https://example.com/x?key=AIzaSyA1234567890abcdefghijklmnopqrstuv"),
        ["secret.key:google"]
    );
    // A PII-looking parameter name is reported by index, never by name.
    let f = findings("https://example.com/x?john@example.com=1");
    assert_eq!(
        f,
        [("url.pii".into(), "url.query[0]".into(), "pii.email".into())]
    );
}

#[test]
fn links_in_text() {
    for (t, want) in [
        ("Visit https://evil.example/login", Some("link.url")),
        // An allowlist pattern offers nothing to follow; a connection string is a link.
        ("One pattern per line, e.g. https://*.example.com/*", None),
        (
            "e.g. https://*.example.com/* or see https://evil.example",
            Some("link.url"),
        ),
        ("e.g. postgres://user@host:5432/db", Some("link.url")),
        ("see [docs](http://x.example)", Some("link.url")),
        ("ｈｔｔｐｓ：／／evil.example", Some("link.url")),
        ("click javascript:alert(1)", Some("link.script")),
        ("go to www.evil.example now", Some("link.www")),
        ("mail mailto:a@b.example", Some("link.mailto")),
        ("call tel:+14155552671", Some("link.tel")),
        ("img data:image/png;base64,AAAA", Some("link.data")),
        ("Metadata: version 2", None),
        ("Deploy to api.example.com?", None),
        ("Time: 10:30", None),
        ("Tel: +33 6 12 34 56 78", None),
    ] {
        assert_eq!(find_link(t, &|_| false), want, "{t}");
    }
}

/// Shown as an example of what a field holds, a name reserved for documentation is no link;
/// any other host, a connection string, or the same name outside an example still is.
#[test]
fn documentation_examples_are_no_links() {
    let example = |t: &str| t.contains("e.g.") || t.contains("例：");
    for (t, want) in [
        ("Audience, e.g. https://api.example.com", None),
        ("e.g. https://app.example.com/callback?x=1", None),
        ("例：www.example.co.jp", None),
        ("e.g. www.example.cn", None),
        ("e.g. https://hooks.example.org, https://x.test/a", None),
        ("e.g. https://login.example.com.evil.io", Some("link.url")),
        ("e.g. https://example.top/login", Some("link.url")),
        ("e.g. https://myexample.com", Some("link.url")),
        (
            "e.g. https://api.example.com or https://evil.io",
            Some("link.url"),
        ),
        (
            "e.g. postgres://app:pw@db.example.com/prod",
            Some("link.url"),
        ),
        ("e.g. http://localhost:8080", Some("link.url")),
        ("Read https://evil.example/login first", Some("link.url")),
        ("Open www.example.com", Some("link.www")),
    ] {
        assert_eq!(find_link(t, &example), want, "{t}");
    }
}

#[test]
fn query_values_are_form_decoded() {
    assert_eq!(
        detectors("https://example.com/pay?c=4111+1111+1111+1111"),
        ["pii.card"]
    );
    assert_eq!(
        detectors("https://example.com/x?p=+33+6+12+34+56+78"),
        ["pii.phone"]
    );
    assert_eq!(
        detectors("https://example.com/x?p=415+555+2671"),
        ["pii.phone"]
    );
    // `%2B` stays a plus; a literal `+` in an e-mail tag still reads as an e-mail.
    assert_eq!(
        detectors("https://example.com/x?u=jane+tag@corp.example.org"),
        ["pii.email"]
    );
    for u in [
        "https://example.com/search?q=hello+world",
        "https://example.com/search?q=c%2B%2B+tutorial&page=2",
        "https://example.com/search?q=how+to+reset+a+password",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn nested_parameter_names() {
    for (u, want) in [
        (
            "https://example.com/x?access[token]=abc123",
            "url.param:accesstoken",
        ),
        (
            "https://example.com/x?user[password]=hunter22",
            "url.param:userpassword",
        ),
        (
            "https://example.com/x?a.b.token=xyz123",
            "url.param:abtoken",
        ),
        ("https://example.com/x?data[0][ssn]=xyz123", "url.param:ssn"),
        (
            "https://example.com/x?auth[api_key]=k123456",
            "url.param:authapikey",
        ),
        (
            "https://example.com/x?creds[secret]=s3cr3t",
            "url.param:credssecret",
        ),
    ] {
        assert_eq!(detectors(u), [want], "{u}");
    }
    for u in [
        "https://example.com/x?page[token]=abc123",
        "https://example.com/x?filter[status]=active&page[size]=10",
        "https://example.com/x?user[name]=bob",
        "https://example.com/x?access[token]=true",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn base64_values_are_decoded_once() {
    for (u, want) in [
        // john@example.com
        (
            "https://example.com/x?d=am9obkBleGFtcGxlLmNvbQ",
            "pii.email",
        ),
        (
            "https://example.com/x?d=am9obkBleGFtcGxlLmNvbQ%3D%3D",
            "pii.email",
        ),
        ("https://example.com/u/am9obkBleGFtcGxlLmNvbQ", "pii.email"),
        // 4111111111111111
        (
            "https://example.com/x?d=NDExMTExMTExMTExMTExMQ==",
            "pii.card",
        ),
        // token=abc123&user=bob
        (
            "https://example.com/x?d=dG9rZW49YWJjMTIzJnVzZXI9Ym9i",
            "url.param:token",
        ),
        // {"user":"bob","password":"hunter2"}
        (
            "https://example.com/x?d=eyJ1c2VyIjoiYm9iIiwicGFzc3dvcmQiOiJodW50ZXIyIn0",
            "url.param:password",
        ),
        // {"cpf":"52998224725"}
        (
            "https://example.com/x?d=eyJjcGYiOiI1Mjk5ODIyNDcyNSJ9",
            "pii.national_id:br",
        ),
    ] {
        assert_eq!(detectors(u), [want], "{u}");
    }
    // Opaque state that decodes to binary, JSON and text without PII, short values.
    for u in [
        "https://example.com/cb?state=rAnD0m+B64/State+Value+==",
        "https://example.com/cb?state=Q3VzdG9tU3RhdGUxMjM0NTY3OA",
        "https://example.com/x?cursor=eyJpZCI6MTIzfQ",
        "https://example.com/x?after=YXJyYXljb25uZWN0aW9uOjEw",
        "https://example.com/x?gclid=Cj0KCQjw8O-VBhCpARIsACMvVLMSSU3pQxyzAbCdEf0123456789aB_cD",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
    assert_eq!(
        base64_text("am9obkBleGFtcGxlLmNvbQ").as_deref(),
        Some("john@example.com")
    );
    assert_eq!(base64_text("am9obkBl"), None, "too short");
    assert_eq!(base64_text(&"QUFB".repeat(1100)), None, "too long");
    assert_eq!(base64_text("123456789012345"), None, "a number");
    assert_eq!(base64_text("//79/Pv6+fj39vX0"), None, "binary");
}

#[test]
fn path_parameters() {
    for (u, want) in [
        (
            "https://example.com/app;jsessionid=ABCDEF0123",
            "url.param:jsessionid",
        ),
        (
            "https://example.com/cb;sessionid=abcdef123/next",
            "url.param:sessionid",
        ),
        (
            "https://example.com/a;v=1;token=zzz999/b",
            "url.param:token",
        ),
        (
            "https://example.com/p;e=am9obkBleGFtcGxlLmNvbQ",
            "pii.email",
        ),
    ] {
        assert_eq!(
            findings(u),
            [("url.pii".into(), "url.path".into(), want.into())],
            "{u}"
        );
    }
    assert!(findings("https://example.com/cars;color=red;year=2024").is_empty());
}

#[test]
fn fullwidth_separators_after_nfkc() {
    for (u, want) in [
        ("https://example.com/x?e=john＠example．com", "pii.email"),
        (
            "https://example.com/x?e=john%EF%BC%A0example.com",
            "pii.email",
        ),
        ("https://example.com/users/john＠example.com", "pii.email"),
        (
            "https://example.com/x?q=x＆token＝abc123",
            "url.param:token",
        ),
        ("https://example.com/cb？token＝abc123", "url.param:token"),
        (
            "https://example.com/x#access_token＝abc123",
            "url.param:accesstoken",
        ),
        (
            "https://example.com/x?c=４１１１１１１１１１１１１１１１",
            "pii.card",
        ),
    ] {
        assert_eq!(detectors(u), [want], "{u}");
    }
    for u in [
        "https://example.com/docs/ｇｕｉｄｅ／ｓｔａｒｔ",
        "https://example.com/x?q=ｈｅｌｌｏ＋ｗｏｒｌｄ",
        "https://example.com/商品/カメラ？色＝黒",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn national_ids_in_urls() {
    for (u, want) in [
        (
            "https://example.com/x?doc=529.982.247-25",
            "pii.national_id:br",
        ),
        (
            "https://example.com/clientes/cpf/529.982.247-25/pedidos",
            "pii.national_id:br",
        ),
        (
            "https://example.com/users/national-id/11010519491231002X",
            "pii.national_id:cn",
        ),
        (
            "https://example.com/x?cpf=52998224725",
            "pii.national_id:br",
        ),
        (
            "https://example.com/x?pesel=44051401359",
            "pii.national_id:pl",
        ),
        (
            "https://example.com/x?q=PESEL+44051401359",
            "pii.national_id:pl",
        ),
        (
            "https://example.com/x?user[national_id]=10000000146",
            "pii.national_id:tr",
        ),
        (
            "https://example.com/p?codice_fiscale=RSSMRA85T10A562S",
            "pii.national_id:it",
        ),
        ("https://example.com/x?dni=12345678Z", "pii.national_id:es"),
        (
            "https://example.com/x?personnummer=811218-9876",
            "pii.national_id:se",
        ),
    ] {
        assert_eq!(
            detectors(u).last().map(String::as_str),
            Some(want),
            "{u}: {:?}",
            detectors(u)
        );
    }
    for u in [
        "https://example.com/x?order_id=52998224725",
        "https://example.com/order/44051401359",
        "https://example.com/x?cpf=52998224726",
        "https://example.com/x?pesel=44051401358",
        // Without context a valid-looking number is an order, ticket or reference.
        "https://example.com/x?q=529.982.247-25",
        "https://example.com/p/RSSMRA85T10A562S",
        "https://example.com/x?id=12345678Z",
        "https://example.com/tickets/811218-9876",
        "https://example.com/orders/11010519491231002X",
        "https://example.com/ref/1-1017-00230-07-4",
        "https://example.com/kyc?n=2341+2341+2346",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn personal_data_parameters_count_when_their_value_looks_like_the_data() {
    for (u, d) in [
        (
            "https://shop.example/c?telefon=030%2090182044",
            "url.param:telefon",
        ),
        (
            "https://shop.example/c?celular=(11)%2091234-5678",
            "url.param:celular",
        ),
        (
            "https://shop.example/c?whatsapp=55%201234%205678",
            "url.param:whatsapp",
        ),
        (
            "https://shop.example/c?mobile=9876543210",
            "url.param:mobile",
        ),
        (
            "https://shop.example/c?user[telefoon]=06-12345678",
            "url.param:telefoon",
        ),
    ] {
        assert!(
            detectors(u).iter().any(|x| x == d),
            "{u}: {:?}",
            detectors(u)
        );
    }
    for u in [
        "https://crm.example/contact?phone=redacted",
        "https://crm.example/contact?phone=unknown&email=hidden",
        "https://crm.example/contact?dob=withheld",
        "https://crm.example/contact?tel=ext",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn a_bare_ssn_counts_where_a_name_announces_an_identity_number() {
    assert!(
        detectors("https://hr.example/f?social_security_number=478213956")
            .contains(&"pii.ssn".to_string())
    );
    assert!(
        detectors("https://hr.example/f?national_id=478%2021%203956")
            .contains(&"pii.ssn".to_string())
    );
    for u in [
        "https://shop.example/o?order_number=478213956",
        "https://hr.example/f?social_security_number=000213956",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

#[test]
fn uk_and_singapore_numbers_count_with_their_names() {
    for (u, d) in [
        ("https://hr.example/f?nric=S8123457D", "pii.national_id:sg"),
        ("https://hr.example/f?nric=S1234567D", "pii.national_id:sg"),
        (
            "https://gov.example/national-insurance/JG103783C/",
            "pii.national_id:gb",
        ),
        (
            "https://hr.example/f?nino=JG%2010%2037%2083%20C",
            "pii.national_id:gb",
        ),
    ] {
        assert!(
            detectors(u).iter().any(|x| x == d),
            "{u}: {:?}",
            detectors(u)
        );
    }
    for u in [
        "https://hr.example/f?nric=S1234567A",
        "https://hr.example/f?nino=QQ123456C",
        "https://shop.example/orders/JG103783C",
    ] {
        assert!(findings(u).is_empty(), "{u}: {:?}", findings(u));
    }
}

/// Connection strings with a password, as URLs or as key-value pairs; without one, none.
#[test]
fn connection_strings_with_a_password() {
    for t in [
        "e.g. postgresql://app:s3cret@db:5432/prod",
        "Server=db01;Database=crm;User Id=sa;Password=...;",
        "Например: Server=...;User Id=sa;Pwd=...",
    ] {
        assert!(shows_connection_with_password(t), "{t}");
    }
    for t in [
        "e.g. postgresql://app@db:5432/prod",
        "Server=db01;Database=crm;Integrated Security=true;",
        "Password policy; minimum length",
    ] {
        assert!(!shows_connection_with_password(t), "{t}");
    }
}
