//! URL checks: `url.invalid`, `url.scheme`, `url.credentials`, `url.host`, `url.pii`
//! for URL-mode `url`s, and the clickable-link detector behind `form.url`.
//!
//! Owns:
//! - Parsing (WHATWG rules via the `url` crate). Because that parser silently drops
//!   tabs/newlines and treats `\` as `/`, a raw URL containing whitespace, control
//!   characters or backslashes is `url.invalid` (a client may parse it differently from
//!   what the user is shown). URLs over 32 KiB are `url.invalid` (bounded work).
//! - Hosts: IDNA/punycode labels (`host.punycode`), non-ASCII in the raw authority
//!   (`host.non_ascii`), decoded labels that mix scripts (`host.mixed_script`) or whose
//!   confusable skeleton is ASCII (`host.confusable`), IP literals (`host.ip_literal`,
//!   unless allowed or listed), deny/allow lists (`host.denied`, `host.not_allowed`).
//! - PII: path segments, query and fragment parameters are percent-decoded repeatedly
//!   (up to 4 rounds, to defeat double encoding), then NFKC-normalised (full-width
//!   `＠．＝＆？；` and digits act as ASCII), and handed to `pii.rs` / `ids.rs`. Query and
//!   fragment values are read as form data (`+` is a space) and also with `+` literal
//!   (base64, `jane+tag@…`); path text literally and with `+` as a separator.
//!   Sensitive parameter *names* fail on any non-trivial value (`url.param:<name>`), by
//!   the whole name or any segment of a nested one (`access[token]`, `a.b.token`,
//!   `data[0][ssn]`); national identity numbers count only with such context: a name
//!   such as `cpf`, `national_id` or `doc`, the path segment before (`/cpf/…`), or a
//!   keyword in the value (`CPF 529…`). E-mail addresses count in any script and spelled
//!   out (`jane(at)example.com`, `jane at example dot com`). Parameters inside a decoded value (`next=/cb?session=…`, what `？＆＝` became)
//!   and matrix parameters of path segments (`;jsessionid=…`) are checked like query
//!   parameters, one level deep. Values that are base64 or base64url (12 to 4096
//!   characters) are decoded once; decoded UTF-8 text goes through the same checks
//!   (JSON members by name and value), binary is ignored. Decided: `code` and `state`
//!   are not sensitive by name (OAuth authorize URLs legitimately carry `state`, and
//!   `code` is too generic), `key` is not either (its value still goes through the
//!   detectors, which catch `AIza…` etc.); presigned-URL signatures (`X-Amz-Signature`,
//!   `sig`, …) are, because a pre-authenticated URL is forbidden.
//! - Links in form text (`form.url`): `scheme://…`, `www.…`, `javascript:`, `vbscript:`,
//!   `data:<mime>`, `mailto:`, `tel:`/`sms:` with a number, `file:/`, after NFKC (so
//!   full-width `ｈｔｔｐｓ：／／` counts). Bare domains (`example.com`) are not links.
//!
//! Never: fetches the URL or resolves its host; records values (a query parameter name
//! appears in a location only if it is a short identifier that is not itself PII).

use std::borrow::Cow;
use std::sync::LazyLock;

use serde_json::Value;
use unicode_security::MixedScript;
use url::{Host, Url};

use super::ids::{self, Hint};
use super::pii;
use super::rule::{Hits, RuleId};
use crate::policy::compile::normalise_param_name;
use crate::policy::hosts::normalise_host;
use crate::policy::UrlPolicy;
use crate::text::fold as text;

/// Longest URL inspected; a longer one is `url.invalid` (`url.too_long`). 32 KiB is the most
/// a browser's address bar shows (Chromium's `kMaxURLDisplayChars`): the user could not
/// check a longer link, and real ones (OAuth, SAML redirects, deep links) stay well under.
pub(crate) const MAX_URL_BYTES: usize = 32 * 1024;

/// Longest base64 value decoded (characters, padding excluded): a few KiB of text.
const MAX_BASE64_CHARS: usize = 4096;

/// Shortest base64 value decoded: 9 bytes, the least that holds an e-mail or an id.
const MIN_BASE64_CHARS: usize = 12;

/// JSON nodes visited in one base64-decoded value.
const MAX_JSON_NODES: usize = 256;

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
];

/// Names of personal data (not credentials): the value must look like what the name says
/// (`phone=redacted`, `email=unknown` carry nothing). Phone names of the listed languages,
/// since local numbers are told from order ids by their parameter name.
const PERSONAL_PARAMS: &[(&str, Personal)] = &[
    ("email", Personal::Email),
    ("emailaddress", Personal::Email),
    ("mail", Personal::Email),
    ("correo", Personal::Email),
    ("courriel", Personal::Email),
    ("phone", Personal::Phone),
    ("phonenumber", Personal::Phone),
    ("phoneno", Personal::Phone),
    ("tel", Personal::Phone),
    ("telephone", Personal::Phone),
    ("telefon", Personal::Phone),
    ("telefonnummer", Personal::Phone),
    ("telefono", Personal::Phone),
    ("telefone", Personal::Phone),
    ("telefoon", Personal::Phone),
    ("telefoonnummer", Personal::Phone),
    ("celular", Personal::Phone),
    ("cellulare", Personal::Phone),
    ("cell", Personal::Phone),
    ("cellphone", Personal::Phone),
    ("mobile", Personal::Phone),
    ("mobilenumber", Personal::Phone),
    ("mobil", Personal::Phone),
    ("mobilnummer", Personal::Phone),
    ("handy", Personal::Phone),
    ("handynummer", Personal::Phone),
    ("portable", Personal::Phone),
    ("whatsapp", Personal::Phone),
    ("msisdn", Personal::Phone),
    ("puhelin", Personal::Phone),
    ("telefonszam", Personal::Phone),
    ("sdt", Personal::Phone),
    ("dob", Personal::Date),
    ("dateofbirth", Personal::Date),
    ("birthdate", Personal::Date),
];

/// What a personal-data parameter's value must look like to be that data.
#[derive(Clone, Copy)]
enum Personal {
    /// An address: an `@` or a spelled-out one.
    Email,
    /// Seven digits or more.
    Phone,
    /// Six digits or more.
    Date,
}

impl Personal {
    fn plausible(self, value: &str) -> bool {
        let digits = value.bytes().filter(u8::is_ascii_digit).count();
        match self {
            Personal::Email => {
                value.contains(['@', '＠']) || pii::scan_value(value) == Some("pii.email")
            }
            Personal::Phone => digits >= 7,
            Personal::Date => digits >= 6,
        }
    }
}

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

/// The link detector that fires on `text`, if any. `gives_example` says whether a text
/// shows an example of what its field holds ("e.g. https://api.example.com"): a URL there
/// on a name reserved for documentation ([`documentation_host`]) leads to no one's page.
pub(crate) fn find_link(
    text_in: &str,
    gives_example: &dyn Fn(&str) -> bool,
) -> Option<&'static str> {
    let t = text::nfkc(text_in);
    let b = t.as_bytes();
    let maybe =
        memchr::memchr(b':', b).is_some() || b.windows(4).any(|w| w.eq_ignore_ascii_case(b"www."));
    if !maybe {
        return None;
    }
    let matches = LINKS.matches(&t);
    // `scheme://…` and `www.…` count only where one of them can be followed somewhere.
    let example = std::cell::OnceCell::new();
    let example = || *example.get_or_init(|| gives_example(text_in));
    let shown = |host: &str| !(documentation_host(host) && example());
    let led = |i: usize| match i {
        0 => URLS.find_iter(&t).any(|m| {
            let (scheme, rest) = m.as_str().split_once("://").unwrap_or(("", ""));
            let host = host_of(rest);
            // A connection string is handed to whatever claims its scheme, example or not.
            !host.contains('*')
                && (shown(host)
                    || CONNECTION_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
        }),
        6 => WWW.find_iter(&t).any(|m| shown(host_of(m.as_str()))),
        _ => true,
    };
    let first = matches.iter().find(|&i| led(i))?;
    Some(LINK_PATTERNS[first].1)
}

/// Every `www.…` run of a text (what `link.www` fires on).
#[allow(clippy::expect_used)]
static WWW: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\bwww\.[a-z0-9\-]+\.[^\s]+").expect("static regex compiles")
});

/// Every `scheme://…` run of a text (what `link.url` fires on).
#[allow(clippy::expect_used)]
static URLS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b[a-z][a-z0-9+.\-]{1,31}://[^\s]+").expect("static regex compiles")
});

/// Schemes of connection strings (`postgres://user:pass@host/db`): a field that shows one
/// with a password asks for credentials ([`shows_connection_with_password`]). They stay
/// links for `form.url`: a client may still hand them to whatever claims the scheme.
const CONNECTION_SCHEMES: &[&str] = &[
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "mongodb",
    "mongodb+srv",
    "redis",
    "rediss",
    "amqp",
    "amqps",
    "sqlserver",
    "mssql",
    "cassandra",
    "kafka",
    "nats",
    "mqtt",
    "mqtts",
    "clickhouse",
    "cockroachdb",
    "neo4j",
    "bolt",
    "jdbc",
    "memcached",
    "etcd",
    "s3",
    "gs",
    "az",
    "abfss",
    "hdfs",
];

/// The schemes of database URLs, which carry the database's credentials
/// (`postgres://app:…@db/prod`): a field labelled with one asks for them, as "Database URL"
/// does.
const DATABASE_SCHEMES: &[&str] = &[
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "mongodb",
    "mongodb+srv",
    "redis",
    "rediss",
    "sqlserver",
    "mssql",
    "clickhouse",
    "cockroachdb",
];

/// Does the label `text` (a title, or a `pattern` with `^` stripped) begin a database URL
/// (`Line starting with postgres://`, `^postgres(ql)?://`, `mongodb\+srv://.*`)?
pub(crate) fn names_database_url(text: &str) -> bool {
    let plain: String = text.chars().filter(|&c| c != '\\').collect::<String>();
    let plain = plain.to_ascii_lowercase();
    let Some(at) = plain.find("://") else {
        return false;
    };
    // The word before `://`, an optional group of the pattern (`(ql)?`) dropped.
    let head = plain[..at].trim_end_matches([')', '?']);
    let head = head.rsplit_once('(').map_or(head, |(h, _)| h);
    let scheme = head
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '+'))
        .next()
        .unwrap_or("");
    DATABASE_SCHEMES.contains(&scheme)
}

/// Does `text` show a connection string carrying a password (`postgres://user:pass@host`,
/// `mqtts://user:<password>@broker`)? A field described so holds credentials.
pub(crate) fn shows_connection_with_password(text: &str) -> bool {
    // Key-value connection strings (ADO.NET, ODBC, JDBC properties):
    // `Server=db01;Database=crm;User Id=sa;Password=...;`.
    let keyed = text.contains(';')
        && text.split(';').any(|pair| {
            pair.split_once('=').is_some_and(|(k, _)| {
                matches!(
                    k.trim().to_ascii_lowercase().as_str(),
                    "password" | "pwd" | "passwd" | "pass"
                )
            })
        });
    keyed
        || text.contains("://")
            && URLS.find_iter(text).any(|m| {
                let Some((scheme, rest)) = m.as_str().split_once("://") else {
                    return false;
                };
                let userinfo = rest.split(['/', '?', '#']).next().unwrap_or("");
                CONNECTION_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str())
                    && userinfo
                        .rsplit_once('@')
                        .is_some_and(|(user, _)| user.contains(':'))
            })
}

/// The host of an authority and what follows it (`user@host:port/path` → `host`).
fn host_of(authority_on: &str) -> &str {
    let authority = authority_on.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.split(':').next().unwrap_or(host)
}

/// A name reserved for documentation (RFC 2606, RFC 6761: `example.com|net|org` and the
/// `.example`, `.test` and `.invalid` domains, with their subdomains) or the `example`
/// name under a country code that localised documentation uses the same way
/// (`www.example.co.jp`, `api.example.cn`). Shown as an example of what a field holds, it
/// is no link ([`find_link`]); anywhere else it stays one ("Read https://evil.example/login
/// first"), as does `localhost`, which leads to the user's own machine.
fn documentation_host(host: &str) -> bool {
    // The name itself, up to what ends it in running text ("www.example.jpで", "(…com)").
    let end = host
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .unwrap_or(host.len());
    let host = host[..end].trim_end_matches('.').to_ascii_lowercase();
    let labels: Vec<&str> = host.rsplit('.').collect();
    let cc = |l: &str| l.len() == 2 && l.bytes().all(|b| b.is_ascii_lowercase());
    match labels.as_slice() {
        [tld, ..] if matches!(*tld, "example" | "test" | "invalid") => true,
        [tld, "example", ..] => matches!(*tld, "com" | "net" | "org") || cc(tld),
        [tld, sld, "example", ..] => {
            cc(tld)
                && matches!(
                    *sld,
                    "co" | "com" | "ne" | "net" | "or" | "org" | "ac" | "go"
                )
        }
        _ => false,
    }
}

/// Repeated percent-decoding, bounded: the one decoding the audit scrubber uses too.
fn decode(s: &str) -> Cow<'_, str> {
    crate::text::percent_decode_repeatedly(s)
}

/// What the detectors read: percent-decoded (bounded), then NFKC so full-width `＠．＝＆？`
/// and digits count as their ASCII forms (and the ideographic full stop `。` as `.`);
/// decoded once more when NFKC produced escapes (`％４０`).
fn normalise(s: &str) -> String {
    let decoded = decode(s);
    let folded = text::nfkc(&decoded).replace('\u{3002}', ".");
    if folded.contains('%') && folded != decoded {
        decode(&folded).into_owned()
    } else {
        folded
    }
}

/// `+` as a space, except a leading one: it is how E.164 numbers start.
fn plus_as_space(s: &str) -> String {
    let (lead, rest) = s.strip_prefix('+').map_or(("", s), |r| ("+", r));
    format!("{lead}{}", rest.replace('+', " "))
}

/// A query or fragment component read as application/x-www-form-urlencoded (`+` is a
/// space, [`plus_as_space`]), then [`normalise`]d.
fn form_decode(raw: &str) -> String {
    normalise(&plus_as_space(raw))
}

/// Every reading of a raw value, most likely first: query and fragment values as form
/// data, then with `+` literal (base64 and `jane+tag@…` keep theirs); path text as is, then
/// with `+` as a separator (`4111+1111+…` is still a card number).
fn readings(raw: &str, form: bool) -> Vec<String> {
    let literal = normalise(raw);
    let mut out = if form {
        vec![form_decode(raw), literal]
    } else {
        let spaced = plus_as_space(&literal);
        vec![literal, spaced]
    };
    out.dedup();
    out
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

/// The segments of a nested parameter name: `access[token]`, `a.b.token`, `data[0][ssn]`.
fn name_segments(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(['[', ']', '.', ':', ' '])
        .filter(|s| !s.is_empty())
        .map(normalise_param_name)
}

/// The whole name normalised, brackets and colons dropped (`page[token]` is `pagetoken`).
fn whole_name(name: &str) -> String {
    normalise_param_name(&name.replace(['[', ']', ':', ' '], ""))
}

/// The sensitive normalised name `name` is, or holds as a segment, if any.
fn sensitive_name(name: &str, policy: &UrlPolicy) -> Option<String> {
    let whole = whole_name(name);
    if BENIGN_TOKEN_PARAMS.contains(&whole.as_str()) {
        return None;
    }
    if is_sensitive_param(&whole, policy) {
        return Some(whole);
    }
    name_segments(name).find(|s| is_sensitive_param(s, policy))
}

/// The identity-number hint a name (or one of its segments) carries (`cpf`, `user[pesel]`).
pub(super) fn name_hint(name: &str) -> Option<Hint> {
    ids::hint_for_name(&whole_name(name))
        .or_else(|| name_segments(name).find_map(|s| ids::hint_for_name(&s)))
}

fn is_trivial(value: &str) -> bool {
    value.is_empty() || TRIVIAL_VALUES.contains(&value.to_ascii_lowercase().as_str())
}

fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && pii::scan_value(name).is_none()
}

/// The text a base64 or base64url value (either alphabet, padded or not) stands for, when
/// it is UTF-8 text without control characters. Bounded: [`MIN_BASE64_CHARS`] to
/// [`MAX_BASE64_CHARS`] characters, one decoding, then [`normalise`]d.
fn base64_text(value: &str) -> Option<String> {
    let v = value.trim();
    let body = v.trim_end_matches('=');
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
    if !(MIN_BASE64_CHARS..=MAX_BASE64_CHARS).contains(&body.len())
        || v.len() - body.len() > 2
        || body.len() % 4 == 1
        || !body.bytes().all(alphabet)
        || body.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let text = String::from_utf8(pii::base64url_decode(body)?).ok()?;
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return None;
    }
    Some(normalise(&text))
}

/// How far a value is from the URL: inside parameters embedded in a value, inside text
/// decoded from base64. Each is unwrapped once, never further.
#[derive(Clone, Copy)]
struct Depth {
    embedded: bool,
    decoded: bool,
}

const TOP: Depth = Depth {
    embedded: false,
    decoded: false,
};

/// The `url.pii` checks of path, query and fragment.
struct Scan<'a> {
    policy: &'a UrlPolicy,
    hits: &'a mut Hits,
}

impl Scan<'_> {
    fn add(&mut self, loc: &str, detector: impl Into<String>) {
        self.hits.add(RuleId::UrlPii, loc, detector);
    }

    /// A query-like string (`a=b&c=d`) under `prefix` (`url.query` / `url.fragment`).
    fn params(&mut self, raw: &str, prefix: &str) {
        for (i, pair) in raw.split(['&', ';']).enumerate() {
            if pair.is_empty() {
                continue;
            }
            let index_loc = format!("{prefix}[{i}]");
            let Some((raw_name, raw_value)) = pair.split_once('=') else {
                // A bare name is a value too (`?am9obkBleGFtcGxlLmNvbQ`, `?token＝…`).
                self.value(&readings(pair, true), None, &index_loc, TOP);
                continue;
            };
            let name = form_decode(raw_name);
            if let Some(d) = pii::scan_value(&name) {
                self.add(&index_loc, d);
            }
            let loc = if safe_name(&name) {
                format!("{prefix}.{name}")
            } else {
                index_loc
            };
            self.param(&name, &readings(raw_value, true), &loc, TOP);
        }
    }

    /// `url.param:<name>` when `name` is sensitive (the name only if it is safe to show),
    /// or names personal data that `value` looks like.
    fn sensitive(&mut self, name: &str, value: &str, loc: &str) {
        let personal = || {
            let whole = whole_name(name);
            std::iter::once(whole).chain(name_segments(name)).find(|n| {
                PERSONAL_PARAMS
                    .iter()
                    .any(|(p, kind)| p == n && kind.plausible(value))
            })
        };
        if let Some(norm) = sensitive_name(name, self.policy).or_else(personal) {
            let detector = if safe_name(&norm) {
                format!("url.param:{norm}")
            } else {
                "url.param".to_string()
            };
            self.add(loc, detector);
        }
    }

    /// One `name=value` parameter (query, fragment, path matrix or embedded): a sensitive
    /// name with a non-trivial value, then the value itself.
    fn param(&mut self, name: &str, values: &[String], loc: &str, depth: Depth) {
        let value = values.first().map_or("", String::as_str);
        if !is_trivial(value) {
            self.sensitive(name, value, loc);
        }
        self.value(values, name_hint(name), loc, depth);
    }

    /// The value detectors over every reading of one value, then the parameters it embeds
    /// and the text it encodes in base64.
    fn value(&mut self, values: &[String], hint: Option<Hint>, loc: &str, depth: Depth) {
        if let Some(d) = values.iter().find_map(|v| pii::scan_value_hinted(v, hint)) {
            self.add(loc, d);
        }
        if !depth.embedded {
            if let Some(v) = values.iter().find(|v| v.contains('=')) {
                self.embedded(v, loc, depth);
            }
        }
        if !depth.decoded {
            if let Some(text) = values.iter().rev().find_map(|v| base64_text(v)) {
                self.decoded(&text, hint, loc);
            }
        }
    }

    /// Parameters inside decoded text: `next=/cb?token=…`, matrix parameters
    /// (`app;jsessionid=…`), what full-width `？＆＝` became after NFKC.
    fn embedded(&mut self, text: &str, loc: &str, depth: Depth) {
        let inner = Depth {
            embedded: true,
            ..depth
        };
        for pair in text.split(['&', ';', '?', '#']) {
            if let Some((name, value)) = pair.split_once('=') {
                self.param(name.trim(), &[value.trim().to_string()], loc, inner);
            }
        }
    }

    /// Text decoded from base64: JSON members by name and value, then the text as a value.
    fn decoded(&mut self, text: &str, hint: Option<Hint>, loc: &str) {
        let t = text.trim_start();
        if t.starts_with(['{', '[']) {
            if let Ok(json) = serde_json::from_str::<Value>(t) {
                let mut budget = MAX_JSON_NODES;
                self.json(&json, hint, loc, &mut budget);
            }
        }
        let depth = Depth {
            embedded: false,
            decoded: true,
        };
        self.value(&[text.to_string()], hint, loc, depth);
    }

    /// A JSON value decoded from base64: members whose names are sensitive, values the
    /// detectors recognise (a member name is the hint for its value). At most `budget`
    /// nodes.
    fn json(&mut self, v: &Value, hint: Option<Hint>, loc: &str, budget: &mut usize) {
        let Some(rest) = budget.checked_sub(1) else {
            return;
        };
        *budget = rest;
        match v {
            Value::Object(members) => {
                for (name, member) in members {
                    let value = match member {
                        Value::String(s) if !is_trivial(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    };
                    if let Some(value) = value {
                        self.sensitive(name, &value, loc);
                    }
                    self.json(member, name_hint(name), loc, budget);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.json(i, hint, loc, budget)),
            Value::String(s) => self.json_scalar(&normalise(s), hint, loc),
            Value::Number(n) if hint.is_some() => self.json_scalar(&n.to_string(), hint, loc),
            _ => {}
        }
    }

    fn json_scalar(&mut self, s: &str, hint: Option<Hint>, loc: &str) {
        if let Some(d) = pii::scan_value_hinted(s, hint) {
            self.add(loc, d);
        }
    }

    /// One path segment: its text (and its base64), and its matrix parameters
    /// (`;jsessionid=…`) checked like query parameters. `label` is the segment before it,
    /// read as a name: `/cpf/52998224725` announces a CPF as `?cpf=` does.
    fn segment(&mut self, raw: &str, label: Option<&str>) {
        let hint = label.and_then(|l| name_hint(&decode(l)));
        self.value(&readings(raw, false), hint, "url.path", TOP);
    }

    fn path(&mut self, url: &Url) {
        if url.cannot_be_a_base() {
            self.segment(url.path(), None);
        } else if let Some(segments) = url.path_segments() {
            let mut label = None;
            for seg in segments {
                self.segment(seg, label);
                label = Some(seg);
            }
        }
    }

    fn fragment(&mut self, raw: &str) {
        let has_params = normalise(raw).contains('=');
        if has_params {
            self.params(raw, "url.fragment");
        }
        let depth = Depth {
            embedded: has_params,
            decoded: false,
        };
        self.value(&readings(raw, true), None, "url.fragment", depth);
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
            if !policy.protected_hosts.is_empty() {
                let (unicode, _) = idna::domain_to_unicode(&name);
                if lookalike::imitated(&name, &unicode, &policy.protected_hosts).is_some() {
                    hits.add(RuleId::UrlHost, "url.host", "host.lookalike");
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
    let mut scan = Scan { policy, hits };
    scan.path(&url);
    if let Some(q) = url.query() {
        scan.params(q, "url.query");
    }
    if let Some(f) = url.fragment() {
        scan.fragment(f);
    }
}

mod lookalike;

#[cfg(test)]
mod tests;
