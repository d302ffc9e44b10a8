//! Text normalisation and word splitting shared by the detectors.
//!
//! Owns: Unicode folding (NFKC compatibility mapping so full-width `ＡＰＩ` is `API`,
//! accents removed, lower case, `ß`→`ss`), splitting identifiers and prose into words
//! across spaces, punctuation, `snake_case`, `kebab-case`, `camelCase`/`PascalCase` and
//! script changes (`APIキー` → `API` + `キー`), and the "compact" form (folded, only
//! letters and digits) used for substring matching in scripts written without spaces.
//! Never: decides anything.

use std::borrow::Cow;

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
    match c.script() {
        Script::Inherited => CharClass::Joiner,
        Script::Common if c.is_alphanumeric() => CharClass::Joiner,
        _ if c.is_alphanumeric() => CharClass::Word,
        _ => CharClass::Separator,
    }
}

/// NFKC, without allocating for ASCII.
pub(crate) fn nfkc(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.nfkc().collect())
    }
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
        if ('\u{300}'..='\u{36f}').contains(&c) {
            continue;
        }
        if c == 'ß' || c == 'ẞ' {
            out.push_str("ss");
            continue;
        }
        for l in c.to_lowercase() {
            out.push(l);
        }
    }
    out
}

/// The compact form: folded text keeping only word and compact characters (all
/// separators removed), for substring matching of compact-script terms.
pub(crate) fn compact(s: &str) -> String {
    let folded = fold(s);
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
}

/// Split `text` (any case, any normalisation) into folded words of space-delimited
/// scripts. Compact-script runs act as separators here (they are matched on the
/// compact form instead).
pub(crate) fn words(text: &str) -> Vec<Word> {
    if text.is_ascii() {
        return ascii_words(text);
    }
    let text = nfkc(text);
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut non_latin = false;
    let flush = |current: &mut String, non_latin: &mut bool, out: &mut Vec<Word>| {
        if !current.is_empty() {
            out.push(Word {
                folded: fold(current),
                non_latin: *non_latin,
            });
            current.clear();
        }
        *non_latin = false;
    };
    for (i, &c) in chars.iter().enumerate() {
        match class(c) {
            CharClass::Separator | CharClass::Compact => {
                flush(&mut current, &mut non_latin, &mut out);
            }
            CharClass::Joiner => {
                if !current.is_empty() {
                    current.push(c);
                }
            }
            CharClass::Word => {
                if !current.is_empty() && camel_boundary(&chars, i) {
                    flush(&mut current, &mut non_latin, &mut out);
                }
                if !c.is_ascii() && c.script() != Script::Latin {
                    non_latin = true;
                }
                current.push(c);
            }
        }
    }
    flush(&mut current, &mut non_latin, &mut out);
    out
}

/// [`words`] for ASCII input: same boundaries, no intermediate buffers.
fn ascii_words(text: &str) -> Vec<Word> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let push = |out: &mut Vec<Word>, s: usize, e: usize| {
        let mut folded = text[s..e].to_string();
        folded.make_ascii_lowercase();
        out.push(Word {
            folded,
            non_latin: false,
        });
    };
    for i in 0..b.len() {
        let c = b[i];
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take() {
                push(&mut out, s, i);
            }
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
                    push(&mut out, s, i);
                    start = Some(i);
                }
            }
            Some(_) => {}
        }
    }
    if let Some(s) = start {
        push(&mut out, s, b.len());
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

    fn w(s: &str) -> Vec<String> {
        words(s).into_iter().map(|w| w.folded).collect()
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
                .into_iter()
                .map(|w| w.folded)
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
