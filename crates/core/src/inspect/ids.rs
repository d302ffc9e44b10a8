//! National identity numbers: value detectors behind `url.pii`, reported as
//! `pii.national_id:<country>` (ISO 3166 alpha-2, lower case, like the older `:cn`, `:th`).
//!
//! Owns: recognising, inside one already-decoded string, the identity numbers of Brazil
//! (CPF), Poland (PESEL), India (Aadhaar), the Netherlands (BSN), Turkey (T.C. Kimlik),
//! China (resident id), France (NIR), Spain (DNI/NIE), Italy (codice fiscale), Sweden
//! (personnummer), Finland (henkilötunnus), Norway (fødselsnummer), Denmark (CPR), Korea
//! (RRN), Israel (Teudat Zehut), Romania (CNP), South Africa, Thailand, the United
//! Kingdom (National Insurance number) and Singapore (NRIC/FIN); and the parameter names
//! that announce one ([`hint_for_name`]).
//!
//! Decisions (false positives kept low):
//! - Every number needs its checksum (Denmark, whose numbers have had none since 2007,
//!   needs its old mod-11 check unless a name announces a CPR) and its structure (valid
//!   birth date, century sign, county, month letter, …); the UK National Insurance number,
//!   which has no checksum, needs its structure (the prefix letters HMRC issues, a suffix
//!   A–D).
//! - Every number is reported only with context, a *hint*: a parameter, JSON member or
//!   path-segment label such as `cpf`, `pesel`, `national_id`, `doc` ([`hint_for_name`]) or
//!   a distinctive keyword in the same text (`CPF 52998224725`, [`hint_in_text`]). With
//!   one, bare digit runs ([`scan_hinted`]) and the format's own shapes
//!   ([`scan_formatted_for`]: separators or letters, `529.982.247-25`, `12345678Z`,
//!   `RSSMRA85T10A562S`) count. A hint naming one country checks that country's format
//!   only. Without one, URLs pass: order numbers, tickets and date-based references
//!   (`231218-4821`) take the same shapes and pass the same checksums often enough.
//! - Self-evident shapes without a hint ([`scan_formatted`]) are for the audit scrub,
//!   which removes more than `url.pii` refuses.
//! - A candidate must stand alone: not glued to letters or digits, nor to a digit group
//!   through a separator (`4111 1111 1111 1111` holds no 4-4-4 Aadhaar).
//!
//! Never: returns or stores the matched text — only a detector name.

use std::sync::LazyLock;

use regex::Regex;

/// A country whose identity numbers are recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Br,
    Pl,
    In,
    Nl,
    Tr,
    Cn,
    Fr,
    Es,
    It,
    Se,
    Fi,
    No,
    Dk,
    Kr,
    Il,
    Ro,
    Za,
    Th,
    Gb,
    Sg,
}

/// Every detector name of this module.
#[cfg(test)]
pub(crate) fn detector_names() -> impl Iterator<Item = &'static str> {
    use Kind::*;
    [
        Br, Pl, In, Nl, Tr, Cn, Fr, Es, It, Se, Fi, No, Dk, Kr, Il, Ro, Za, Th, Gb, Sg,
    ]
    .into_iter()
    .map(Kind::detector)
}

impl Kind {
    /// The detector name reported for this country.
    pub(crate) fn detector(self) -> &'static str {
        match self {
            Kind::Br => "pii.national_id:br",
            Kind::Pl => "pii.national_id:pl",
            Kind::In => "pii.national_id:in",
            Kind::Nl => "pii.national_id:nl",
            Kind::Tr => "pii.national_id:tr",
            Kind::Cn => "pii.national_id:cn",
            Kind::Fr => "pii.national_id:fr",
            Kind::Es => "pii.national_id:es",
            Kind::It => "pii.national_id:it",
            Kind::Se => "pii.national_id:se",
            Kind::Fi => "pii.national_id:fi",
            Kind::No => "pii.national_id:no",
            Kind::Dk => "pii.national_id:dk",
            Kind::Kr => "pii.national_id:kr",
            Kind::Il => "pii.national_id:il",
            Kind::Ro => "pii.national_id:ro",
            Kind::Za => "pii.national_id:za",
            Kind::Th => "pii.national_id:th",
            Kind::Gb => "pii.national_id:gb",
            Kind::Sg => "pii.national_id:sg",
        }
    }
}

/// What a name says about the value next to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    /// Some identity number (`national_id`, `tax_id`, …): every format of the length.
    Any,
    /// One country's number (`cpf`, `pesel`, …): that format only.
    Kind(Kind),
}

/// Normalised names (lower case, no `-` `_` `.`) that announce one country's number.
const KIND_NAMES: &[(&str, Kind)] = &[
    ("cpf", Kind::Br),
    ("pesel", Kind::Pl),
    ("aadhaar", Kind::In),
    ("aadhar", Kind::In),
    ("uidai", Kind::In),
    ("bsn", Kind::Nl),
    ("burgerservicenummer", Kind::Nl),
    ("sofinummer", Kind::Nl),
    ("tckn", Kind::Tr),
    ("tckimlik", Kind::Tr),
    ("tckimlikno", Kind::Tr),
    ("kimlik", Kind::Tr),
    ("kimlikno", Kind::Tr),
    ("tcno", Kind::Tr),
    ("tc", Kind::Tr),
    ("shenfenzheng", Kind::Cn),
    ("sfz", Kind::Cn),
    ("nir", Kind::Fr),
    ("insee", Kind::Fr),
    ("securitesociale", Kind::Fr),
    ("numerosecuritesociale", Kind::Fr),
    ("numsecu", Kind::Fr),
    ("numsecu", Kind::Fr),
    ("numerosecu", Kind::Fr),
    ("dni", Kind::Es),
    ("nie", Kind::Es),
    ("nif", Kind::Es),
    ("cf", Kind::It),
    ("codicefiscale", Kind::It),
    ("codfisc", Kind::It),
    ("personnummer", Kind::Se),
    ("personnr", Kind::Se),
    ("pnr", Kind::Se),
    ("hetu", Kind::Fi),
    ("henkilotunnus", Kind::Fi),
    ("henkilötunnus", Kind::Fi),
    ("fnr", Kind::No),
    ("fodselsnummer", Kind::No),
    ("fødselsnummer", Kind::No),
    ("cpr", Kind::Dk),
    ("cprnr", Kind::Dk),
    ("cprnummer", Kind::Dk),
    ("rrn", Kind::Kr),
    ("jumin", Kind::Kr),
    ("juminbunho", Kind::Kr),
    ("teudatzehut", Kind::Il),
    ("zehut", Kind::Il),
    ("tz", Kind::Il),
    ("cnp", Kind::Ro),
    ("rsaid", Kind::Za),
    ("saidnumber", Kind::Za),
    ("thaiid", Kind::Th),
    ("nino", Kind::Gb),
    ("ninumber", Kind::Gb),
    ("nationalinsurance", Kind::Gb),
    ("nationalinsurancenumber", Kind::Gb),
    ("nric", Kind::Sg),
    ("nricno", Kind::Sg),
    ("nricnumber", Kind::Sg),
];

/// Normalised names that announce some identity number.
const ANY_NAMES: &[&str] = &[
    "nid",
    "nin",
    "doc",
    "docno",
    "docnumber",
    "document",
    "documentno",
    "documentnumber",
    "documento",
    "numerodocumento",
    "nrodocumento",
    "cedula",
    "identification",
    "identificationnumber",
    "identity",
    "nationalid",
    "nationalidnumber",
    "nationalidentitynumber",
    "nationalidentifier",
    "idnumber",
    "idno",
    "idcard",
    "idcardno",
    "idcardnumber",
    "identitynumber",
    "identitycard",
    "personalid",
    "personalnumber",
    "personalidnumber",
    "personalcode",
    "citizenid",
    "citizennumber",
    "residentid",
    "ssn",
    "socialsecuritynumber",
    "taxid",
    "taxnumber",
    "tin",
];

/// Words that announce a number when they occur in the text itself (distinctive ones
/// only: `tc`, `cf`, `nie`, … are ordinary words or abbreviations in running text).
const TEXT_WORDS: &[(&str, Kind)] = &[
    ("cpf", Kind::Br),
    ("pesel", Kind::Pl),
    ("aadhaar", Kind::In),
    ("bsn", Kind::Nl),
    ("tckn", Kind::Tr),
    ("kimlik", Kind::Tr),
    ("personnummer", Kind::Se),
    ("hetu", Kind::Fi),
    ("fodselsnummer", Kind::No),
    ("cpr", Kind::Dk),
    ("cnp", Kind::Ro),
    ("dni", Kind::Es),
    ("nir", Kind::Fr),
    ("rrn", Kind::Kr),
];

/// The hint carried by one normalised name (or name segment), if any.
pub(crate) fn hint_for_name(norm: &str) -> Option<Hint> {
    // `aadhaar_no`, `cpf_number`, `pesel_nr`: a country's name with a number word after.
    let stem = ["number", "numero", "nummer", "num", "nr", "no"]
        .iter()
        .find_map(|w| norm.strip_suffix(w).filter(|s| s.len() >= 3))
        .unwrap_or(norm);
    if let Some((_, k)) = KIND_NAMES.iter().find(|(n, _)| *n == norm || *n == stem) {
        return Some(Hint::Kind(*k));
    }
    if ANY_NAMES.contains(&norm) {
        return Some(Hint::Any);
    }
    // `customer_national_id`, `user_pesel`: long hints also as a suffix.
    if let Some((_, k)) = KIND_NAMES
        .iter()
        .find(|(n, _)| n.len() >= 5 && norm.ends_with(n))
    {
        return Some(Hint::Kind(*k));
    }
    ANY_NAMES
        .iter()
        .any(|n| n.len() >= 9 && norm.ends_with(n))
        .then_some(Hint::Any)
}

/// Keywords in scripts without spaces, found as substrings (`身份证440304…`).
const TEXT_NAMES_NATIVE: &[(&str, Kind)] = &[
    ("身份证", Kind::Cn),
    ("身份證", Kind::Cn),
    ("주민등록번호", Kind::Kr),
    ("주민번호", Kind::Kr),
    ("บัตรประชาชน", Kind::Th),
    ("เลขประจำตัวประชาชน", Kind::Th),
];

/// The hint carried by a distinctive keyword inside `text` (`CPF: 529…`), if any.
pub(crate) fn hint_in_text(text: &str) -> Option<Hint> {
    if !text.is_ascii() {
        if let Some((_, k)) = TEXT_NAMES_NATIVE.iter().find(|(n, _)| text.contains(n)) {
            return Some(Hint::Kind(*k));
        }
    }
    if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| (3..=13).contains(&w.len()))
        .find_map(|w| {
            let w = w.to_ascii_lowercase();
            TEXT_WORDS.iter().find(|(n, _)| *n == w).map(|(_, k)| *k)
        })
        .map(Hint::Kind)
}

#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    // Static patterns, covered by tests.
    Regex::new(pattern).expect("static regex compiles")
}

type Validator = fn(&str) -> bool;

/// Self-evident shapes: `(pattern, country, validator of the match)`.
static SHAPES: LazyLock<Vec<(Regex, Kind, Validator)>> = LazyLock::new(|| {
    let shapes: [(&str, Kind, Validator); 16] = [
        (r"\d{17}[\dXx]", Kind::Cn, is_cn),
        (r"\d-\d{4}-\d{5}-\d{2}-\d", Kind::Th, |s| {
            is_th(&digits_of(s))
        }),
        (r"\d{3}\.\d{3}\.\d{3}-\d{2}|\d{9}-\d{2}", Kind::Br, |s| {
            is_cpf(&digits_of(s))
        }),
        (
            r"[2-9]\d{3} \d{4} \d{4}|[2-9]\d{3}-\d{4}-\d{4}",
            Kind::In,
            |s| is_aadhaar(&digits_of(s)),
        ),
        (r"\d{4}\.\d{2}\.\d{3}", Kind::Nl, |s| is_bsn(&digits_of(s))),
        (
            r"(?i)[1-478] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}",
            Kind::Fr,
            |s| is_nir(s) && nir_ordinary(s),
        ),
        (r"\d{8}-?[A-Z]|[XYZ]-?\d{7}-?[A-Z]", Kind::Es, is_dni_nie),
        (
            r"(?i)[A-Z]{6}[0-9LMNP-V]{2}[ABCDEHLMPRST][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]",
            Kind::It,
            is_codice_fiscale,
        ),
        (r"(?:1[89]|20)?\d{6}[-+]\d{4}", Kind::Se, |s| {
            is_personnummer(&digits_of(s))
        }),
        (r"\d{6}[-+A-FU-Y]\d{3}[0-9A-Y]", Kind::Fi, is_hetu),
        (r"\d{6} \d{5}", Kind::No, |s| is_fnr(&digits_of(s))),
        (r"\d{6}-\d{4}", Kind::Dk, |s| {
            let d = digits_of(s);
            is_cpr_date(&d) && cpr_mod11(&d)
        }),
        (r"\d{6}-\d{7}", Kind::Kr, |s| is_rrn(&digits_of(s))),
        (r"\d{6} \d{4} \d{3}", Kind::Za, |s| is_za(&digits_of(s))),
        (
            r"(?i)[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]",
            Kind::Gb,
            is_nino,
        ),
        (r"(?i)[STFG]\d{7}[A-Z]", Kind::Sg, is_nric),
    ];
    shapes.into_iter().map(|(p, k, v)| (re(p), k, v)).collect()
});

/// One-pass prefilter over [`SHAPES`] (same order).
#[allow(clippy::expect_used)]
static SHAPE_SET: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    regex::RegexSet::new(SHAPES.iter().map(|(r, _, _)| r.as_str()))
        .expect("static regex set compiles")
});

/// Digit runs, possibly grouped, that a hint turns into candidates.
static RUN: LazyLock<Regex> = LazyLock::new(|| re(r"\d(?:[.\-/]?\d){4,17}"));

/// Is `s[start..end]` free-standing: not glued to an ASCII letter or digit, nor to a digit
/// through a single separator (so a group of a longer grouped number does not count)?
/// Other scripts do not glue: `身份证440304…` and `เลขบัตร1101…` are written without spaces.
fn isolated(s: &str, start: usize, end: usize) -> bool {
    let before: Vec<char> = s[..start].chars().rev().take(2).collect();
    let after: Vec<char> = s[end..].chars().take(2).collect();
    let glued = |side: &[char]| match side {
        [c, ..] if c.is_ascii_alphanumeric() => true,
        [sep, d, ..] => " -./+".contains(*sep) && d.is_ascii_digit(),
        _ => false,
    };
    !glued(&before) && !glued(&after)
}

/// The first self-evident identity number in `value` (see the module docs).
pub(crate) fn scan_formatted(value: &str) -> Option<&'static str> {
    scan_formatted_for(value, Hint::Any)
}

/// The first identity number in `value` written in its own format (separators, letters)
/// of the country `hint` announces, or of any country for a generic hint.
pub(crate) fn scan_formatted_for(value: &str, hint: Hint) -> Option<&'static str> {
    SHAPE_SET.matches(value).iter().find_map(|i| {
        let (pattern, kind, valid) = SHAPES.get(i)?;
        if hint != Hint::Any && hint != Hint::Kind(*kind) {
            return None;
        }
        pattern
            .find_iter(value)
            .any(|m| isolated(value, m.start(), m.end()) && valid(m.as_str()))
            .then(|| kind.detector())
    })
}

/// Countries whose bare-digit numbers have `n` digits.
fn kinds_of_length(n: usize) -> &'static [Kind] {
    match n {
        5..=8 => &[Kind::Il],
        9 => &[Kind::Nl, Kind::Il],
        10 => &[Kind::Se, Kind::Dk],
        11 => &[Kind::Br, Kind::Pl, Kind::Tr, Kind::No],
        12 => &[Kind::In, Kind::Se],
        13 => &[Kind::Kr, Kind::Ro, Kind::Za, Kind::Th],
        15 => &[Kind::Fr],
        18 => &[Kind::Cn],
        _ => &[],
    }
}

/// Is the bare digit string `d` a valid number of `kind` (`hint` announced one)?
fn valid_bare(kind: Kind, d: &[u8], hint: Hint) -> bool {
    let text = || d.iter().map(|x| char::from(b'0' + x)).collect::<String>();
    match kind {
        Kind::Br => is_cpf(d),
        Kind::Pl => is_pesel(d),
        Kind::In => is_aadhaar(d),
        Kind::Nl => is_bsn(d),
        Kind::Tr => is_tckn(d),
        Kind::Cn => is_cn(&text()),
        Kind::Fr => is_nir(&text()),
        Kind::Se => is_personnummer(d),
        Kind::No => is_fnr(d),
        // Numbers issued since 2007 may fail mod 11: only a CPR name excuses it.
        Kind::Dk => is_cpr_date(d) && (hint == Hint::Kind(Kind::Dk) || cpr_mod11(d)),
        Kind::Kr => is_rrn(d),
        Kind::Il => is_teudat_zehut(d),
        Kind::Ro => is_cnp(d),
        Kind::Za => is_za(d),
        Kind::Th => is_th(d),
        // Their numbers carry letters: found by `scan_formatted`.
        Kind::Es | Kind::It | Kind::Fi | Kind::Gb | Kind::Sg => false,
    }
}

/// With a hint: the first digit run in `value` (separators allowed) that is a valid
/// number of the announced country, or of any country when the hint is generic.
pub(crate) fn scan_hinted(value: &str, hint: Hint) -> Option<&'static str> {
    RUN.find_iter(value)
        .filter(|m| isolated(value, m.start(), m.end()))
        .find_map(|m| {
            let d = digits_of(m.as_str());
            // Short numbers are Israeli ids with their leading zeros dropped, if anything.
            if all_same(&d) || (d.len() < 9 && hint != Hint::Kind(Kind::Il)) {
                return None;
            }
            kinds_of_length(d.len())
                .iter()
                .copied()
                .filter(|k| hint == Hint::Any || hint == Hint::Kind(*k))
                .find(|k| valid_bare(*k, &d, hint))
                .map(Kind::detector)
        })
}

/// A UK National Insurance number: two prefix letters HMRC issues (not D, F, I, Q, U, V;
/// no O second; not BG, GB, KN, NK, NT, TN, ZZ), six digits, a suffix A–D.
fn is_nino(s: &str) -> bool {
    let t: Vec<u8> = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| b.to_ascii_uppercase())
        .collect();
    if t.len() != 9 {
        return false;
    }
    let (a, b) = (t[0], t[1]);
    let first_ok = !b"DFIQUV".contains(&a);
    let second_ok = !b"DFIQUVO".contains(&b);
    let banned = [b"BG", b"GB", b"KN", b"NK", b"NT", b"TN", b"ZZ"]
        .iter()
        .any(|p| p[0] == a && p[1] == b);
    first_ok && second_ok && !banned && matches!(t[8], b'A'..=b'D')
}

/// A Singapore NRIC or FIN of the S, T, F and G series: the check letter of its seven digits.
fn is_nric(s: &str) -> bool {
    let t = s.to_ascii_uppercase();
    let b = t.as_bytes();
    if b.len() != 9 {
        return false;
    }
    let d = digits_of(&t[1..8]);
    if d.len() != 7 {
        return false;
    }
    let offset = if matches!(b[0], b'T' | b'G') { 4 } else { 0 };
    let sum = weighted(&d, &[2, 7, 6, 5, 4, 3, 2]) + offset;
    let table: &[u8; 11] = if matches!(b[0], b'S' | b'T') {
        b"JZIHGFEDCBA"
    } else {
        b"XWUTRQPNMLK"
    };
    table[(sum % 11) as usize] == b[8]
}

// === Shared arithmetic ===

/// The decimal digits of `s`, separators dropped (identity numbers here, card numbers in
/// `pii`).
pub(crate) fn digits_of(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

/// The Luhn check (payment cards in `pii`; Swedish, South African and other ids here).
pub(crate) fn luhn(d: &[u8]) -> bool {
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            let x = u32::from(x);
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 {
                    y - 9
                } else {
                    y
                }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn num(d: &[u8]) -> u32 {
    d.iter().fold(0, |acc, x| acc * 10 + u32::from(*x))
}

fn weighted(d: &[u8], weights: &[u32]) -> u32 {
    d.iter().zip(weights).map(|(x, w)| u32::from(*x) * w).sum()
}

fn all_same(d: &[u8]) -> bool {
    d.windows(2).all(|w| w[0] == w[1])
}

/// A real calendar date (proleptic Gregorian; leap years counted).
pub(crate) fn valid_date(year: u32, month: u32, day: u32) -> bool {
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// A two-digit year whose century is unknown: Feb 29 allowed when either century has it.
fn valid_yymmdd(yy: u32, month: u32, day: u32) -> bool {
    valid_date(2000 + yy, month, day) || valid_date(1900 + yy, month, day)
}

// === Validators, one per format ===

/// Brazil CPF: 11 digits, two mod-11 check digits; all-same-digit numbers are invalid.
fn is_cpf(d: &[u8]) -> bool {
    if d.len() != 11 || all_same(d) {
        return false;
    }
    let check = |n: usize| {
        let sum: u32 = d[..n]
            .iter()
            .enumerate()
            .map(|(i, x)| u32::from(*x) * (n as u32 + 1 - i as u32))
            .sum();
        (sum * 10 % 11) % 10 == u32::from(d[n])
    };
    check(9) && check(10)
}

/// Poland PESEL: YYMMDD (century in the month: +80 1800s, +20 2000s, +40, +60), serial,
/// check digit with weights 1-3-7-9.
fn is_pesel(d: &[u8]) -> bool {
    if d.len() != 11 {
        return false;
    }
    let sum = weighted(&d[..10], &[1, 3, 7, 9, 1, 3, 7, 9, 1, 3]);
    if (10 - sum % 10) % 10 != u32::from(d[10]) {
        return false;
    }
    let (yy, mm, dd) = (num(&d[0..2]), num(&d[2..4]), num(&d[4..6]));
    let (century, month) = match mm {
        1..=12 => (1900, mm),
        21..=32 => (2000, mm - 20),
        41..=52 => (2100, mm - 40),
        61..=72 => (2200, mm - 60),
        81..=92 => (1800, mm - 80),
        _ => return false,
    };
    valid_date(century + yy, month, dd)
}

const VERHOEFF_D: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];
const VERHOEFF_P: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];

fn verhoeff(d: &[u8]) -> bool {
    let c = d.iter().rev().enumerate().fold(0u8, |c, (i, x)| {
        let p = VERHOEFF_P[i % 8][usize::from(*x % 10)];
        VERHOEFF_D[usize::from(c)][usize::from(p)]
    });
    c == 0
}

/// India Aadhaar: 12 digits, the first not 0 or 1, Verhoeff check digit.
fn is_aadhaar(d: &[u8]) -> bool {
    d.len() == 12 && d[0] >= 2 && !all_same(d) && verhoeff(d)
}

/// Netherlands BSN: 9 digits, 11-proof (weights 9…2, the last digit −1).
fn is_bsn(d: &[u8]) -> bool {
    if d.len() != 9 || d.iter().all(|x| *x == 0) {
        return false;
    }
    let sum = weighted(&d[..8], &[9, 8, 7, 6, 5, 4, 3, 2]);
    sum % 11 == u32::from(d[8])
}

/// Turkey T.C. Kimlik: 11 digits, first not 0; d10 = (7·odd − even) mod 10, d11 = sum mod 10.
fn is_tckn(d: &[u8]) -> bool {
    if d.len() != 11 || d[0] == 0 {
        return false;
    }
    let odd: u32 = [0, 2, 4, 6, 8].iter().map(|&i| u32::from(d[i])).sum();
    let even: u32 = [1, 3, 5, 7].iter().map(|&i| u32::from(d[i])).sum();
    // (7·odd − even) mod 10, kept non-negative: −even ≡ 9·even (mod 10).
    let d10 = (odd * 7 + 9 * even) % 10;
    let d11 = d[..10].iter().map(|x| u32::from(*x)).sum::<u32>() % 10;
    d10 == u32::from(d[9]) && d11 == u32::from(d[10])
}

/// China resident id: 18 characters, region, birth date, ISO 7064 MOD 11-2 check (`X` = 10).
fn is_cn(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 18 || !(b'1'..=b'8').contains(&b[0]) || !b[..17].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let d = digits_of(&s[..17]);
    let year = num(&d[6..10]);
    if !(1900..=2099).contains(&year) || !valid_date(year, num(&d[10..12]), num(&d[12..14])) {
        return false;
    }
    let sum = weighted(&d, &[7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]);
    b"10X98765432"[(sum % 11) as usize] == b[17].to_ascii_uppercase()
}

/// France NIR: sex, YY, MM, department (`2A`/`2B` for Corsica), commune, order, and a
/// key 97 − (number mod 97); spaces allowed.
fn is_nir(s: &str) -> bool {
    let c: String = s
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if c.len() != 15 || !c.is_ascii() || !matches!(c.as_bytes()[0], b'1'..=b'4' | b'7' | b'8') {
        return false;
    }
    let dept = &c[5..7];
    let body = match dept {
        "2A" => format!("{}19{}", &c[..5], &c[7..13]),
        "2B" => format!("{}18{}", &c[..5], &c[7..13]),
        "00" => return false,
        _ => c[..13].to_string(),
    };
    let (Ok(n), Ok(key), Ok(month)) = (
        body.parse::<u64>(),
        c[13..15].parse::<u64>(),
        c[3..5].parse::<u32>(),
    ) else {
        return false;
    };
    let month_ok = matches!(month, 1..=12 | 20..=42 | 50..=99);
    month_ok && 97 - n % 97 == key
}

/// Without a hint, only the common NIR: sex 1 or 2 and a known birth month (01–12), so
/// that random 15-digit numbers rarely qualify.
fn nir_ordinary(s: &str) -> bool {
    let c: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let month = c.get(3..5).and_then(|m| m.parse::<u32>().ok());
    c.starts_with(['1', '2']) && matches!(month, Some(1..=12))
}

const DNI_LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";

/// Spain DNI (8 digits + letter) and NIE (`X`/`Y`/`Z` + 7 digits + letter): letter = n mod 23.
fn is_dni_nie(s: &str) -> bool {
    let c: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
    let [first, middle @ .., letter] = c.as_slice() else {
        return false;
    };
    let (lead, digits, want) = match first {
        b'X' => (0, middle, 7),
        b'Y' => (1, middle, 7),
        b'Z' => (2, middle, 7),
        _ => (0, &c[..c.len() - 1], 8),
    };
    if digits.len() != want || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let n = digits
        .iter()
        .fold(lead, |acc, b| acc * 10 + u32::from(b - b'0'));
    if n == 0 {
        return false;
    }
    DNI_LETTERS[(n % 23) as usize] == *letter
}

/// Codice fiscale check-character values of characters in odd (1st, 3rd, …) positions,
/// indexed by digit value or letter − `A`.
const CF_ODD: [u32; 26] = [
    1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23,
];

/// The digit an omocodia letter stands for (`L`=0 … `V`=9), or a digit itself.
fn cf_digit(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        _ => b"LMNPQRSTUV"
            .iter()
            .position(|x| *x == c)
            .and_then(|p| u32::try_from(p).ok()),
    }
}

/// Italy codice fiscale: surname/name letters, YY, month letter, day (+40 for women),
/// town code, check letter; digits may be replaced by omocodia letters.
fn is_codice_fiscale(s: &str) -> bool {
    let c = s.to_ascii_uppercase().into_bytes();
    if c.len() != 16 {
        return false;
    }
    let day = match (cf_digit(c[9]), cf_digit(c[10])) {
        (Some(a), Some(b)) => a * 10 + b,
        _ => return false,
    };
    if !matches!(day, 1..=31 | 41..=71) || !b"ABCDEHLMPRST".contains(&c[8]) {
        return false;
    }
    let value = |b: u8| match b {
        b'0'..=b'9' => u32::from(b - b'0'),
        _ => u32::from(b.wrapping_sub(b'A')) % 26,
    };
    let sum: u32 = c[..15]
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let v = value(*b);
            if i % 2 == 0 {
                CF_ODD[v as usize % 26]
            } else {
                v
            }
        })
        .sum();
    u32::from(c[15]) == u32::from(b'A') + sum % 26
}

/// Sweden personnummer: (YY)YYMMDD NNNC, day +60 for a samordningsnummer, Luhn over the
/// 10 digits.
fn is_personnummer(d: &[u8]) -> bool {
    let d = match d.len() {
        10 => d,
        12 if matches!(num(&d[..2]), 18..=20) => &d[2..],
        _ => return false,
    };
    let day = num(&d[4..6]);
    let day = if day > 60 { day - 60 } else { day };
    valid_yymmdd(num(&d[..2]), num(&d[2..4]), day) && !all_same(d) && luhn(d)
}

const HETU_CHECK: &[u8; 31] = b"0123456789ABCDEFHJKLMNPRSTUVWXY";

/// Finland henkilötunnus: DDMMYY, century sign (`+` 1800s, `-` `U`–`Y` 1900s, `A`–`F`
/// 2000s), individual number 002–899, check character (DDMMYYZZZ mod 31).
fn is_hetu(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 11 || !s.is_ascii() {
        return false;
    }
    let century = match b[6] {
        b'+' => 1800,
        b'-' | b'U'..=b'Y' => 1900,
        b'A'..=b'F' => 2000,
        _ => return false,
    };
    let (Ok(date), Ok(individual)) = (s[..6].parse::<u32>(), s[7..10].parse::<u32>()) else {
        return false;
    };
    let (dd, mm, yy) = (date / 10_000, date / 100 % 100, date % 100);
    if !valid_date(century + yy, mm, dd) || !(2..=899).contains(&individual) {
        return false;
    }
    HETU_CHECK[((date * 1000 + individual) % 31) as usize] == b[10]
}

/// Norway fødselsnummer: DDMMYY (D-number day +40, H-number month +40), individual
/// number, two mod-11 check digits.
fn is_fnr(d: &[u8]) -> bool {
    if d.len() != 11 {
        return false;
    }
    let check = |n: usize, w: &[u32]| match 11 - weighted(&d[..n], w) % 11 {
        11 => d[n] == 0,
        10 => false,
        k => u32::from(d[n]) == k,
    };
    let day = num(&d[0..2]);
    let month = num(&d[2..4]);
    let day = if day > 40 { day - 40 } else { day };
    let month = if month > 40 { month - 40 } else { month };
    valid_yymmdd(num(&d[4..6]), month, day)
        && check(9, &[3, 7, 6, 1, 8, 9, 4, 5, 2])
        && check(10, &[5, 4, 3, 2, 7, 6, 5, 4, 3, 2])
}

/// Denmark CPR: DDMMYY + 4 digits with a valid date.
fn is_cpr_date(d: &[u8]) -> bool {
    d.len() == 10 && !all_same(d) && valid_yymmdd(num(&d[4..6]), num(&d[2..4]), num(&d[0..2]))
}

/// The CPR mod-11 check that numbers issued before 2007 satisfy.
fn cpr_mod11(d: &[u8]) -> bool {
    d.len() == 10 && weighted(d, &[4, 3, 2, 7, 6, 5, 4, 3, 2, 1]).is_multiple_of(11)
}

/// Korea RRN: YYMMDD, sex/century digit, 5 digits, check digit (11 − weighted mod 11) mod 10.
fn is_rrn(d: &[u8]) -> bool {
    if d.len() != 13 {
        return false;
    }
    let century = match d[6] {
        1 | 2 | 5 | 6 => 1900,
        3 | 4 | 7 | 8 => 2000,
        _ => 1800,
    };
    let sum = weighted(&d[..12], &[2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5]);
    valid_date(century + num(&d[..2]), num(&d[2..4]), num(&d[4..6]))
        && (11 - sum % 11) % 10 == u32::from(d[12])
}

/// Israel Teudat Zehut: up to 9 digits (left-padded with zeros), Luhn.
fn is_teudat_zehut(d: &[u8]) -> bool {
    if !(5..=9).contains(&d.len()) || d.iter().all(|x| *x == 0) {
        return false;
    }
    let mut padded = vec![0u8; 9 - d.len()];
    padded.extend_from_slice(d);
    luhn(&padded)
}

/// Romania CNP: sex/century, YYMMDD, county 01–52, serial, check with key 279146358279
/// (remainder 10 is 1).
fn is_cnp(d: &[u8]) -> bool {
    if d.len() != 13 || d[0] == 0 {
        return false;
    }
    let (yy, mm, dd) = (num(&d[1..3]), num(&d[3..5]), num(&d[5..7]));
    let date = match d[0] {
        1 | 2 => valid_date(1900 + yy, mm, dd),
        3 | 4 => valid_date(1800 + yy, mm, dd),
        5 | 6 => valid_date(2000 + yy, mm, dd),
        // Residents (7, 8) and foreigners (9): century not encoded.
        _ => valid_yymmdd(yy, mm, dd),
    };
    let county = num(&d[7..9]);
    let check = match weighted(&d[..12], &[2, 7, 9, 1, 4, 6, 3, 5, 8, 2, 7, 9]) % 11 {
        10 => 1,
        r => r,
    };
    date && (1..=52).contains(&county) && check == u32::from(d[12])
}

/// South Africa: YYMMDD, 4-digit sequence, citizenship 0–2, one digit, Luhn.
fn is_za(d: &[u8]) -> bool {
    d.len() == 13
        && d[10] <= 2
        && valid_yymmdd(num(&d[..2]), num(&d[2..4]), num(&d[4..6]))
        && luhn(d)
}

/// Thailand: 13 digits, first not 0 or 9, check (11 − weighted mod 11) mod 10.
fn is_th(d: &[u8]) -> bool {
    if d.len() != 13 || d[0] == 0 || d[0] == 9 {
        return false;
    }
    let sum = weighted(&d[..12], &[13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
    (11 - sum % 11) % 10 == u32::from(d[12])
}

#[cfg(test)]
mod tests;
