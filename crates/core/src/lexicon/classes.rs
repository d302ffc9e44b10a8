//! Word classes: what a form's texts *name* without naming a secret — an expiry or a validity
//! (`expiry`), a payment card (`cards`), a month/year format (`month_year`).
//!
//! Owns: one compiled class (folded word sequences for space-delimited scripts, an automaton
//! over the compact form for scripts written without spaces) and the test "does this text
//! name a member". The lists are in `data/*.txt`; `inspect::secrets` combines the classes
//! (a field labelled with an expiry on a form that names a card asks for the card's expiry).
//! Never: decides a rule.

use foldhash::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use crate::text::fold as text;

/// A text read once for every class: its folded words and, when it holds a script written
/// without spaces, its compact form.
pub(crate) struct Read {
    words: std::rc::Rc<[text::Word]>,
    compact: Option<String>,
}

impl Read {
    pub(crate) fn new(t: &str) -> Read {
        let compact =
            (!t.is_ascii() && t.chars().any(text::is_compact_script)).then(|| text::compact(t));
        Read {
            words: text::words(t),
            compact,
        }
    }
}

/// A quick test that an ASCII text cannot name a member of some classes: none of its words
/// is a first word of one, read without allocating (a label is a few short words).
#[derive(Debug, Default)]
pub(crate) struct FirstWords {
    words: foldhash::HashSet<String>,
    stems: Vec<String>,
}

impl FirstWords {
    pub(crate) fn of(classes: &[&WordClass]) -> FirstWords {
        let mut firsts = FirstWords::default();
        for class in classes {
            let (words, stems) = class.first_words();
            firsts.words.extend(words.map(str::to_owned));
            firsts.stems.extend(stems.map(str::to_owned));
        }
        firsts
    }

    /// Might the ASCII `text` name a member? (`true` for any text with other characters.)
    pub(crate) fn may_name(&self, text: &str) -> bool {
        if !text.is_ascii() || text.contains('&') {
            return true;
        }
        let mut buf = [0u8; 32];
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .any(|w| {
                if w.len() > buf.len() {
                    return true;
                }
                let lower = &mut buf[..w.len()];
                lower.copy_from_slice(w.as_bytes());
                lower.make_ascii_lowercase();
                let lower = std::str::from_utf8(lower).unwrap_or_default();
                // camelCase and glued digits split further when read in full: let those
                // through.
                w.bytes().skip(1).any(|b| b.is_ascii_uppercase())
                    || self.words.contains(lower)
                    || self.stems.iter().any(|s| lower.starts_with(s.as_str()))
                    || lower.trim_end_matches(|c: char| c.is_ascii_digit()).len() < lower.len()
            })
    }
}

/// One class of words: members are word sequences (`son kullanma`, `date d expiration`) or,
/// in compact scripts, substrings (`有効期限`).
#[derive(Debug, Default)]
pub(crate) struct WordClass {
    /// First folded word → the remaining words of each member starting with it.
    by_first: HashMap<String, Vec<Vec<String>>>,
    /// Members whose first word is a stem (`kart*`): the stem and the remaining words.
    stems: Vec<(String, Vec<String>)>,
    compact: Option<AhoCorasick>,
}

impl WordClass {
    /// Compile `members` (written naturally; folded like input text). An empty member or an
    /// automaton that cannot be built is a data defect, reported in `errors`.
    pub(crate) fn new(members: &[&str], errors: &mut Vec<String>) -> WordClass {
        let mut class = WordClass::default();
        let mut patterns = Vec::new();
        for m in members {
            if !m.is_ascii() && m.chars().any(text::is_compact_script) {
                patterns.push(text::compact(m));
                continue;
            }
            // A word ending in `*` stays a stem through folding.
            let mut words: Vec<String> = Vec::new();
            for token in m.split_whitespace() {
                let stem = token.ends_with('*');
                let start = words.len();
                words.extend(text::words(token).iter().map(|w| w.folded.clone()));
                if stem && words.len() > start {
                    if let Some(last) = words.last_mut() {
                        last.push('*');
                    }
                }
            }
            match words.split_first() {
                Some((first, rest)) => match first.strip_suffix('*') {
                    Some(stem) if stem.chars().count() >= 3 => {
                        class.stems.push((stem.to_owned(), rest.to_vec()));
                    }
                    Some(_) => errors.push(format!("word class stem `{m}` is too short")),
                    None => class
                        .by_first
                        .entry(first.clone())
                        .or_default()
                        .push(rest.to_vec()),
                },
                None => errors.push(format!("word class member `{m}` has no word")),
            }
        }
        if !patterns.is_empty() {
            // A few dozen patterns per class: the contiguous NFA keeps them in kilobytes
            // where a DFA would take hundreds.
            match AhoCorasickBuilder::new()
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .match_kind(MatchKind::LeftmostFirst)
                .build(&patterns)
            {
                Ok(ac) => class.compact = Some(ac),
                Err(e) => errors.push(format!("word class automaton: {e}")),
            }
        }
        class
    }

    /// The first words of the members of spaced scripts, and the stems among them.
    pub(crate) fn first_words(&self) -> (impl Iterator<Item = &str>, impl Iterator<Item = &str>) {
        (
            self.by_first.keys().map(String::as_str),
            self.stems.iter().map(|(s, _)| s.as_str()),
        )
    }

    /// Does `text` contain a member (a whole-word sequence, or a compact substring)?
    pub(crate) fn named_in(&self, text: &str) -> bool {
        self.named(&Read::new(text))
    }

    /// [`WordClass::named_in`] over a text already read.
    pub(crate) fn named(&self, read: &Read) -> bool {
        self.member_at(&read.words).next().is_some()
            || self
                .compact
                .as_ref()
                .zip(read.compact.as_deref())
                .is_some_and(|(ac, c)| ac.is_match(c))
    }

    /// The words of a text no member of any of `classes` covers, and whether compact-script
    /// text is left over too: "Reisepass gültig bis" leaves `reisepass` past `gültig bis`.
    pub(crate) fn uncovered<'r>(
        classes: &[&WordClass],
        read: &'r Read,
    ) -> (impl Iterator<Item = &'r str>, bool) {
        let mut covered = vec![false; read.words.len()];
        for class in classes {
            for (i, len) in class.member_at(&read.words) {
                covered[i..i + len].iter_mut().for_each(|c| *c = true);
            }
        }
        let rest = read
            .words
            .iter()
            .zip(covered)
            .filter(|(_, c)| !c)
            .map(|(w, _)| w.folded.as_str());
        let compact_left = read.compact.as_deref().is_some_and(|c| {
            let mut c = c.to_owned();
            for class in classes {
                if let Some(ac) = &class.compact {
                    c = ac.replace_all(&c, &vec![""; ac.patterns_len()]);
                }
            }
            c.chars().any(text::is_compact_script)
        });
        (rest, compact_left)
    }

    /// Each member occurrence in `words`: its first word's index and its length in words
    /// (the longest member starting there).
    fn member_at<'w>(
        &'w self,
        words: &'w [text::Word],
    ) -> impl Iterator<Item = (usize, usize)> + 'w {
        // A member's word ending in `*` is a stem (`kartı*` matches `kartınızı`).
        let same = |member: &str, word: &str| match member.strip_suffix('*') {
            Some(stem) => word.starts_with(stem),
            None => member == word,
        };
        words.iter().enumerate().filter_map(move |(i, w)| {
            let stems = self
                .stems
                .iter()
                .filter(|(s, _)| w.folded.starts_with(s.as_str()))
                .map(|(_, r)| r);
            let whole = self.by_first.get(&w.folded).into_iter().flatten();
            whole
                .chain(stems)
                .filter(|rest| {
                    words.len() > i + rest.len()
                        && rest
                            .iter()
                            .zip(&words[i + 1..])
                            .all(|(r, w)| same(r, &w.folded))
                })
                .map(|rest| rest.len() + 1)
                .max()
                .map(|len| (i, len))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_match_as_whole_word_sequences_or_compact_substrings() {
        let mut errors = Vec::new();
        let class = WordClass::new(
            &[
                "expiry",
                "son kullanma",
                "有効期限",
                "kredi kart*",
                "kartı*",
            ],
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert!(class.named_in("Expiry (MM/YY)"));
        assert!(class.named_in("Son kullanma tarihi"));
        assert!(class.named_in("カードの有効期限（月）"));
        assert!(!class.named_in("Expiryless plan"));
        assert!(!class.named_in("son"));
        assert!(!class.named_in("Kullanma son"));
        assert!(class.named_in("Kredi kartınızı güncelleyin"));
        assert!(class.named_in("Kartınızın"));
        assert!(!class.named_in("Kart"));
    }

    #[test]
    fn first_words_let_through_every_text_that_may_name_a_member() {
        let mut errors = Vec::new();
        let class = WordClass::new(&["expiry date", "kart*"], &mut errors);
        let firsts = FirstWords::of(&[&class]);
        for t in [
            "Expiry",
            "card EXPIRY (MM/YY)",
            "kartın",
            "expiryDate",
            "word2",
            "Ablauf é",
        ] {
            assert!(firsts.may_name(t), "{t}");
        }
        for t in ["Branch", "Deploy at", "Git branch to release"] {
            assert!(!firsts.may_name(t), "{t}");
        }
    }

    #[test]
    fn an_empty_member_is_a_data_defect() {
        let mut errors = Vec::new();
        WordClass::new(&["--"], &mut errors);
        assert_eq!(errors.len(), 1);
    }
}
