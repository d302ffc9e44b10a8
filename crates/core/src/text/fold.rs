//! Text normalisation and word splitting shared by the detectors and the lexicon.
//!
//! Owns: normalisation before matching ([`normalize`]: HTML character references decoded,
//! every Unicode default-ignorable code point removed — ZWJ, ZWNJ, variation selectors, soft
//! hyphen, bidi controls — then NFKC so full-width `ＡＰＩ` is `API`), folding ([`fold`]:
//! accents removed, lower case with the Turkish dotted/dotless i and the Greek final sigma
//! folded to one letter, `ß`→`ss`, `ł`→`l`, Arabic-script letter variants unified), splitting identifiers and prose into words
//! across spaces, punctuation, `snake_case`, `kebab-case`, `camelCase`/`PascalCase` and
//! script changes (`APIキー` → `API` + `キー`), and the "compact" form (folded, only
//! letters and digits) used for substring matching in scripts written without spaces.
//! Never: decides anything.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use unicode_normalization::UnicodeNormalization;
use unicode_script::{Script, UnicodeScript};

/// How a character takes part in word splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharClass {
    /// Letters/digits of space-delimited scripts (Latin, Cyrillic, Greek, …).
    Word,
    /// Letters of scripts written without spaces (Han, kana, Hangul, Thai, Lao, Khmer,
    /// Myanmar): matched as substrings.
    Compact,
    /// Combining marks and script-neutral letters (e.g. `ー`): join the current word.
    Joiner,
    /// Everything else separates words.
    Separator,
}

pub(crate) fn is_compact_script(c: char) -> bool {
    // Every compact script starts at or after Thai (U+0E00): below it, no table lookup.
    if (c as u32) < 0x0E00 {
        return false;
    }
    matches!(
        c.script(),
        Script::Han
            | Script::Hiragana
            | Script::Katakana
            | Script::Hangul
            | Script::Thai
            | Script::Lao
            | Script::Khmer
            | Script::Myanmar
            | Script::Bopomofo
    )
}

pub(crate) fn class(c: char) -> CharClass {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() {
            CharClass::Word
        } else {
            CharClass::Separator
        };
    }
    if is_compact_script(c) {
        return CharClass::Compact;
    }
    if unicode_normalization::char::is_combining_mark(c) {
        // Vowel signs and viramas of Indic scripts, Hebrew points, …: part of the word.
        return CharClass::Joiner;
    }
    match c.script() {
        Script::Inherited => CharClass::Joiner,
        Script::Common if c.is_alphanumeric() => CharClass::Joiner,
        _ if c.is_alphanumeric() => CharClass::Word,
        _ => CharClass::Separator,
    }
}

/// NFKC after [`normalize`]'s other steps, without allocating for plain ASCII.
pub(crate) fn nfkc(s: &str) -> Cow<'_, str> {
    normalize(s)
}

/// Everything that must happen before words are compared: HTML character references
/// (`pass&#119;ord`, `API&nbsp;key`) decoded, default-ignorable code points removed, NFKC.
/// Plain ASCII without `&` or a backslash is returned as is.
pub fn normalize(s: &str) -> Cow<'_, str> {
    if plain_ascii(s) {
        return Cow::Borrowed(s);
    }
    let s = if s.contains("\\u") {
        unescape(s)
    } else {
        Cow::Borrowed(s)
    };
    let decoded = if s.contains('&') {
        Cow::Owned(html_escape::decode_html_entities(&s).into_owned())
    } else {
        s
    };
    if decoded.is_ascii() {
        return decoded;
    }
    // Most non-ASCII text is already NFKC and holds no invisible code point: no copy.
    let plain = !decoded
        .chars()
        .any(|c| is_default_ignorable(c) || decoration(c).is_some())
        && unicode_normalization::is_nfkc_quick(decoded.chars())
            == unicode_normalization::IsNormalized::Yes;
    if plain {
        return decoded;
    }
    Cow::Owned(
        decoded
            .chars()
            .filter(|c| !is_default_ignorable(*c))
            .filter_map(|c| decoration(c).unwrap_or(Some(c)))
            .nfkc()
            .filter(|c| !is_default_ignorable(*c))
            .collect(),
    )
}

/// ASCII with nothing [`normalize`] decodes: no `&` of a character reference, no backslash of an
/// escape. Most texts are this.
fn plain_ascii(s: &str) -> bool {
    s.is_ascii() && memchr::memchr2(b'&', b'\\', s.as_bytes()).is_none()
}

/// Escapes a double-encoded string leaves in its text, read as the characters they name:
/// `\u0070assword`, `\u{70}in`. Written here: a JSON or Rust unescaper rejects the rest of
/// an ordinary sentence, and these two forms are all a reader decodes at a glance.
fn unescape(s: &str) -> Cow<'_, str> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(at) = rest.find("\\u") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let (hex, used) = match tail.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) if (1..=6).contains(&end) => (&braced[..end], end + 2),
                _ => ("", 0),
            },
            None => (tail.get(..4).unwrap_or(""), 4),
        };
        let decoded = (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(hex, 16).ok().and_then(char::from_u32))
            .flatten();
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &tail[used..];
                changed = true;
            }
            None => {
                out.push_str("\\u");
                rest = tail;
            }
        }
    }
    if !changed {
        return Cow::Borrowed(s);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Decorations NFKC keeps that leave a Latin letter readable: combining marks of the
/// symbol and supplement blocks drawn over a letter (`C⃝V⃝C⃝`, `p̷` is already NFKC-stable
/// but U+0337 is removed with the other accents when folding) are dropped (`Some(None)`);
/// squared, circled-negative and negative-squared capitals (`🅿🅸🅽`) and regional indicator
/// letters read as the letter (`Some(Some(c))`). `None`: not a decoration.
fn decoration(c: char) -> Option<Option<char>> {
    let u = c as u32;
    let letter = |base: u32| char::from_u32(u32::from(b'a') + (u - base));
    match u {
        0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F => Some(None),
        0x1F130..=0x1F149 => Some(letter(0x1F130)),
        0x1F150..=0x1F169 => Some(letter(0x1F150)),
        0x1F170..=0x1F189 => Some(letter(0x1F170)),
        0x1F1E6..=0x1F1FF => Some(letter(0x1F1E6)),
        _ => None,
    }
}

/// Unicode's `Default_Ignorable_Code_Point` (DerivedCoreProperties.txt, Unicode 15): code
/// points a renderer shows as nothing, so a word with one inside looks unchanged. A range
/// table rather than a crate: no maintained crate exposes this one property, and the list
/// is fixed by the standard.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// A property or parameter name as policies compare them: trimmed, normalised, folded.
pub fn fold_name(name: &str) -> String {
    fold(&normalize(name.trim()))
}

/// Letters folded to another letter so that spellings users treat as the same compare
/// equal: Turkish dotless `ı`, Greek final `ς`, letters without a decomposition that
/// ASCII keyboards replace (`ł`, `đ`, `ø`, …), and the Arabic-script variants Persian and
/// Urdu write differently (ی/ي/ى, ک/ك, ة/ه, أ/إ/آ/ا, ے, ہ/ھ), and Latin small capitals.
fn fold_letter(c: char, out: &mut String) -> bool {
    let to = match c {
        'ı' => "i",
        'ς' => "σ",
        'ł' => "l",
        'đ' => "d",
        'ø' => "o",
        'ħ' => "h",
        'æ' => "ae",
        'œ' => "oe",
        'þ' => "th",
        'ð' => "d",
        'ß' | 'ẞ' => "ss",
        '\u{06CC}' | '\u{0649}' | '\u{06D2}' | '\u{0626}' => "\u{064A}",
        '\u{06A9}' => "\u{0643}",
        '\u{0629}' | '\u{06C1}' | '\u{06BE}' | '\u{06C0}' => "\u{0647}",
        '\u{0623}' | '\u{0625}' | '\u{0622}' | '\u{0671}' => "\u{0627}",
        '\u{0624}' => "\u{0648}",
        '\u{0640}' => "",
        // Latin small capitals (no compatibility decomposition, so NFKC keeps them): read
        // as the letters they show.
        'ᴀ' => "a",
        'ʙ' => "b",
        'ᴄ' => "c",
        'ᴅ' => "d",
        'ᴇ' => "e",
        'ꜰ' => "f",
        'ɢ' => "g",
        'ʜ' => "h",
        'ɪ' => "i",
        'ᴊ' => "j",
        'ᴋ' => "k",
        'ʟ' => "l",
        'ᴍ' => "m",
        'ɴ' => "n",
        'ᴏ' => "o",
        'ᴘ' => "p",
        'ǫ' => "q",
        'ʀ' => "r",
        'ꜱ' => "s",
        'ᴛ' => "t",
        'ᴜ' => "u",
        'ᴠ' => "v",
        'ᴡ' => "w",
        'ʏ' => "y",
        'ᴢ' => "z",
        _ => return false,
    };
    out.push_str(to);
    true
}

/// Fold one word or phrase for comparison: compatibility decomposition, accents
/// (U+0300–U+036F) removed, lower case, `ß`→`ss`. The same function folds lexicon
/// terms, so every script is treated consistently.
pub(crate) fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    if s.is_ascii() {
        for c in s.chars() {
            out.push(c.to_ascii_lowercase());
        }
        return out;
    }
    for c in s.nfkd() {
        if ('\u{300}'..='\u{36f}').contains(&c) || is_default_ignorable(c) {
            continue;
        }
        // Arabic harakat (fatha, kasra, shadda, sukun, …) and the superscript alef: vowel
        // marks that most text leaves out.
        if ('\u{064B}'..='\u{065F}').contains(&c) || c == '\u{0670}' {
            continue;
        }
        if fold_letter(c, &mut out) {
            continue;
        }
        for l in c.to_lowercase() {
            if !('\u{300}'..='\u{36f}').contains(&l) && !fold_letter(l, &mut out) {
                out.push(l);
            }
        }
    }
    out
}

/// The compact form: folded text keeping only word and compact characters (all
/// separators removed), for substring matching of compact-script terms.
pub(crate) fn compact(s: &str) -> String {
    let folded = fold(&normalize(s));
    folded
        .chars()
        .filter(|c| !matches!(class(*c), CharClass::Separator))
        .collect()
}

/// A word of a space-delimited script, folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) folded: String,
    /// True when the word contains non-ASCII letters outside the Latin script (Cyrillic,
    /// Greek, …): candidates for homoglyph (skeleton) checks.
    pub(crate) non_latin: bool,
    /// A sentence ended between the previous word and this one (`.`, `!`, `?`, `;` and
    /// their full-width and Arabic forms): request cues and negations do not reach across.
    pub(crate) stop_before: bool,
    /// A question mark (`?`, `？`, `؟`) follows the word: its sentence is a question.
    pub(crate) asks: bool,
}

/// Punctuation that ends a sentence.
fn ends_sentence(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | ';' | '。' | '！' | '？' | '；' | '؟' | '؛' | '।' | '॥'
    )
}

/// Split `text` (any case, any normalisation) into folded words of space-delimited
/// scripts. Compact-script runs act as separators here (they are matched on the
/// compact form instead).
///
/// Inside a [`memo_scope`] a text read before is not split again: one form's labels are read by
/// several rules.
pub(crate) fn words(text: &str) -> Rc<[Word]> {
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let Some(seen) = memo.as_mut() else {
            return split(text).into();
        };
        if let Some((_, w)) = seen.iter().find(|(t, _)| **t == *text) {
            return Rc::clone(w);
        }
        let w: Rc<[Word]> = split(text).into();
        if seen.len() < MEMO_TEXTS {
            seen.push((text.into(), Rc::clone(&w)));
        }
        w
    })
}

fn split(text: &str) -> Vec<Word> {
    if plain_ascii(text) {
        return ascii_words(text);
    }
    words_normalized(&nfkc(text))
}

/// Texts remembered per scope: a form's labels, descriptions and choices, up to a bound that
/// keeps the lookup short on a form of many fields (later texts are split each time).
const MEMO_TEXTS: usize = 48;

/// Texts split in one scope, with their words.
type Memo = Vec<(Box<str>, Rc<[Word]>)>;

thread_local! {
    /// The texts split in the current [`memo_scope`], `None` outside one.
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// While the returned guard lives, [`words`] remembers what it split on this thread; the
/// outermost guard forgets it all when dropped, so nothing outlives one inspection.
#[must_use]
pub fn memo_scope() -> MemoScope {
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let outer = memo.is_none();
        if outer {
            *memo = Some(Vec::new());
        }
        MemoScope { outer }
    })
}

/// Guard of [`memo_scope`].
pub struct MemoScope {
    outer: bool,
}

impl Drop for MemoScope {
    fn drop(&mut self) {
        if self.outer {
            MEMO.with(|memo| *memo.borrow_mut() = None);
        }
    }
}

/// Does `text` end with a question mark (`?`, `？`, `؟`)?
pub(crate) fn is_question(text: &str) -> bool {
    text.trim_end().ends_with(['?', '？', '؟'])
}

/// [`words`] of a text [`normalize`] has already read.
pub(crate) fn words_normalized(text: &str) -> Vec<Word> {
    if text.is_ascii() {
        return ascii_words(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut non_latin = false;
    let mut stop = false;
    let flush =
        |current: &mut String, non_latin: &mut bool, stop: &mut bool, out: &mut Vec<Word>| {
            if !current.is_empty() {
                out.push(Word {
                    folded: fold(current),
                    non_latin: *non_latin,
                    stop_before: std::mem::take(stop),
                    asks: false,
                });
                current.clear();
            }
            *non_latin = false;
        };
    for (i, &c) in chars.iter().enumerate() {
        match class(c) {
            CharClass::Separator | CharClass::Compact => {
                flush(&mut current, &mut non_latin, &mut stop, &mut out);
                // Greek writes its question mark as `;` (U+037E folds to it).
                let greek = |w: &Word| w.folded.chars().any(|g| matches!(g, '\u{370}'..='\u{3FF}'));
                if let Some(last) = out.last_mut() {
                    if matches!(c, '?' | '？' | '؟')
                        || (matches!(c, ';' | '\u{37E}') && greek(last))
                    {
                        last.asks = true;
                    }
                }
                let next_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
                stop |= ends_sentence(c) && (next_space || !c.is_ascii());
            }
            CharClass::Joiner => {
                if !current.is_empty() {
                    current.push(c);
                }
            }
            CharClass::Word => {
                if !current.is_empty() && camel_boundary(&chars, i) {
                    flush(&mut current, &mut non_latin, &mut stop, &mut out);
                }
                if !c.is_ascii() && c.script() != Script::Latin {
                    non_latin = true;
                }
                current.push(c);
            }
        }
    }
    flush(&mut current, &mut non_latin, &mut stop, &mut out);
    out
}

/// [`words`] for ASCII input: same boundaries, no intermediate buffers.
fn ascii_words(text: &str) -> Vec<Word> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 6 + 1);
    let mut start: Option<usize> = None;
    let mut stop = false;
    let push = |out: &mut Vec<Word>, s: usize, e: usize, stop: &mut bool| {
        let mut folded = text[s..e].to_string();
        folded.make_ascii_lowercase();
        out.push(Word {
            folded,
            non_latin: false,
            stop_before: std::mem::take(stop),
            asks: false,
        });
    };
    for i in 0..b.len() {
        let c = b[i];
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take() {
                push(&mut out, s, i, &mut stop);
            }
            if c == b'?' {
                if let Some(last) = out.last_mut() {
                    last.asks = true;
                }
            }
            // `#` after a word, not before one, reads "number": "Card #", "CC#", "Acct #"
            // (`#tag` and `#1` stay separators).
            if c == b'#' {
                let after_word = i > 0
                    && (b[i - 1].is_ascii_alphanumeric()
                        || (b[i - 1] == b' ' && i > 1 && b[i - 2].is_ascii_alphanumeric()));
                let word_next = b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric);
                if after_word && !word_next {
                    out.push(Word {
                        folded: "number".to_owned(),
                        non_latin: false,
                        stop_before: std::mem::take(&mut stop),
                        asks: false,
                    });
                }
            }
            // `document.cookie`, `e.g.` inside a word end nothing; `Done. Now` does.
            let next_space = b.get(i + 1).is_none_or(u8::is_ascii_whitespace);
            stop |= ends_sentence(char::from(c)) && next_space;
            continue;
        }
        match start {
            None => start = Some(i),
            Some(s) if c.is_ascii_uppercase() && i > s => {
                let prev = b[i - 1];
                let next_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
                let boundary = prev.is_ascii_lowercase()
                    || (prev.is_ascii_uppercase() && next_lower)
                    || (prev.is_ascii_digit() && next_lower);
                if boundary {
                    push(&mut out, s, i, &mut stop);
                    start = Some(i);
                }
            }
            Some(_) => {}
        }
    }
    if let Some(s) = start {
        push(&mut out, s, b.len(), &mut stop);
    }
    out
}

/// Is there a camel-case word boundary before `chars[i]` (an uppercase letter)?
/// `apiKey` → api|Key; `APIKey` → API|Key; `Auth2Token` → Auth2|Token; `2FA` stays whole.
fn camel_boundary(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    if i == 0 || !c.is_uppercase() {
        return false;
    }
    let prev = chars[i - 1];
    let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
    if prev.is_lowercase() {
        return true;
    }
    if prev.is_uppercase() && next_lower {
        return true;
    }
    prev.is_ascii_digit() && next_lower
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_splits_each_text_once_and_forgets_on_leaving() {
        // Outside a scope every call splits anew.
        assert!(!Rc::ptr_eq(&words("API key"), &words("API key")));
        {
            let _outer = memo_scope();
            let first = words("API key");
            {
                let _inner = memo_scope();
                assert!(Rc::ptr_eq(&first, &words("API key")));
            }
            // The inner guard leaves the outer scope's memory alone.
            assert!(Rc::ptr_eq(&first, &words("API key")));
            assert_eq!(words("Api Key")[1].folded, "key");
            assert!(!Rc::ptr_eq(&first, &words("Api Key")));
        }
        assert!(MEMO.with(|m| m.borrow().is_none()));
        // A scope remembers a bounded number of texts; later ones are still split right.
        let _scope = memo_scope();
        for i in 0..MEMO_TEXTS + 8 {
            let t = format!("field {i}");
            assert_eq!(words(&t)[1].folded, i.to_string());
        }
        assert_eq!(
            MEMO.with(|m| m.borrow().as_ref().map(Vec::len)),
            Some(MEMO_TEXTS)
        );
    }

    fn w(s: &str) -> Vec<String> {
        words(s).iter().map(|w| w.folded.clone()).collect()
    }

    #[test]
    fn splits_identifier_styles() {
        assert_eq!(w("apiKey"), ["api", "key"]);
        assert_eq!(w("API_KEY"), ["api", "key"]);
        assert_eq!(w("api-key"), ["api", "key"]);
        assert_eq!(w("x-api-key"), ["x", "api", "key"]);
        assert_eq!(w("APIKey"), ["api", "key"]);
        assert_eq!(w("clientSecret"), ["client", "secret"]);
        assert_eq!(w("Auth2Token"), ["auth2", "token"]);
        assert_eq!(w("2FA code"), ["2fa", "code"]);
        assert_eq!(w("tokenizer_name"), ["tokenizer", "name"]);
    }

    #[test]
    fn folds_width_case_and_accents() {
        assert_eq!(w("ＡＰＩキー"), ["api"]);
        assert_eq!(compact("ＡＰＩキー"), "apiキー");
        assert_eq!(w("Clé d'API"), ["cle", "d", "api"]);
        assert_eq!(w("Straße Schlüssel"), ["strasse", "schlussel"]);
        assert_eq!(w("CONTRASEÑA"), ["contrasena"]);
    }

    #[test]
    fn compact_keeps_thai_marks_and_drops_spaces() {
        assert_eq!(compact("รหัส ผ่าน"), compact("รหัสผ่าน"));
        assert_eq!(compact("請輸入 密碼！"), "請輸入密碼");
    }

    #[test]
    fn ascii_fast_path_matches_general_path() {
        for s in [
            "apiKey",
            "APIKey",
            "x-api-key",
            "Auth2Token",
            "2FA code",
            "  a__b--C ",
            "HTTPServer2Go",
            "already lower",
        ] {
            let fast: Vec<_> = ascii_words(s).into_iter().map(|w| w.folded).collect();
            // Route through the general path by appending a non-ASCII separator.
            let general: Vec<_> = words(&format!("{s}\u{00a0}"))
                .iter()
                .map(|w| w.folded.clone())
                .collect();
            assert_eq!(fast, general, "{s}");
        }
    }

    #[test]
    fn marks_non_latin_words() {
        let ws = words("раssword password");
        assert!(ws[0].non_latin);
        assert!(!ws[1].non_latin);
    }
}
