//! The compiled secret lexicon: the data's terms as word-sequence and substring matchers,
//! built once per distinct `extra_secret_terms` set, and `scan` over one text.
//!
//! How matching works, and the false-positive care behind it:
//! - **Space-delimited scripts match whole words.** Text is normalised and split into
//!   folded words (`crate::text::fold`), so `apiKey`, `API_KEY`, `x-api-key`, `Clé d'API`
//!   match while `monkey`, `tokenizer`, `keyboard_layout` do not. A term's last word may be a
//!   stem (`hasł*`), a word with trailing digits also matches without them (`password2`),
//!   clitic prefixes glued to a word are stripped (`وكلمة`, `הסיסמה`), and a few glued
//!   compounds match as word *endings* (`dbpassword`), never as beginnings.
//! - **Scripts without spaces match substrings** (Han, kana, Hangul, Thai) on the compact
//!   form, leftmost-longest, with "suppressor" phrases that shadow the shorter term.
//! - **A term naming a property of the secret is not a request for it**: a term followed by
//!   a meta word (`password policy`, `token count`) or preceded by one, possibly across
//!   linkers (`max_tokens`, `length of the password`) is ignored; `benign` phrases
//!   (`secret santa`, `pin on the map`) shadow every term inside them.
//! - **Strong vs weak terms**: weak terms match in labels; in prose only near a request cue
//!   (three words before, not counting articles and numbers, or five after for verb-final
//!   languages). In [`Role::Hidden`] texts (enum option titles, defaults, booleans) every
//!   term needs a cue, and in [`Role::Cued`] (the example or pre-filled text of a field
//!   that names its content) every term needs one too.
//! - **Obfuscation** is undone before a second look, only when the first found nothing:
//!   homoglyph skeletons (`раssword` in Cyrillic, `secret.confusable:*`), leetspeak
//!   (`p@ssw0rd`) and letters spaced apart (`p a s s w o r d`) (`secret.obfuscated:*`).
//!
//! Never: records the text it scanned; a match names only its detector.

// The indexes are built once from the data files and only looked up with input: a fast
// non-cryptographic hasher (no HashDoS surface: nothing from the wire is inserted).
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::classes::{FirstWords, Read, WordClass};
use super::{Category, Data, Strength};
use crate::text::fold::{self as text, Word};

/// Where a text sits, which decides whether terms need a request cue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A field label: property name or title. Every term counts.
    Label,
    /// Prose: description or message. Weak terms need a cue.
    Prose,
    /// A place that cannot itself receive a secret but can tell the user to type one
    /// elsewhere (enum option titles, `enumNames`, defaults, boolean texts): every term
    /// needs a request verb, as in [`Role::Asked`] ("Remember your password" asks nothing).
    Hidden,
    /// Prose of a field labelled with what it holds ("Subject" described "e.g. Forgot my
    /// password"): it names the topic of that content as often as it asks, so every term
    /// needs a request cue, a possessive included ("Your Aadhaar number").
    Cued,
    /// The message (or title) of a form with several inputs: it names the form's topic as
    /// often as it asks, so every term needs a request *verb* ("enter", "paste", "введите";
    /// not a possessive such as "your") within six words before it or three after.
    Asked,
}

/// A scan's result: which term matched and its detector name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match<'a> {
    pub term: usize,
    pub detector: &'a str,
    /// A weak term (benign readings are common).
    pub weak: bool,
    /// The concept it names.
    pub category: Category,
}

#[derive(Debug)]
struct TermInfo {
    /// The term as its word list writes it (what `inspect` explains with).
    phrase: String,
    category: Category,
    /// Detector names, shared by every term of one concept (and language): interned.
    detector: Arc<str>,
    confusable_detector: Arc<str>,
    obfuscated_detector: Arc<str>,
    strength: Strength,
    /// Benign senses (each a folded word sequence) of this weak term.
    senses: Vec<Vec<String>>,
    /// Word sequences one of which the text must contain for this term to count (`code`
    /// with `sms`); empty for most terms.
    needs: Vec<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Pat {
    text: String,
    stem: bool,
}

impl Pat {
    fn of(word: &str) -> Pat {
        match word.strip_suffix('*') {
            Some(s) => Pat {
                text: s.to_owned(),
                stem: true,
            },
            None => Pat {
                text: word.to_owned(),
                stem: false,
            },
        }
    }

    fn fits(&self, key: &str) -> bool {
        if self.stem {
            key.starts_with(self.text.as_str())
        } else {
            key == self.text
                || strip_digits(key) == Some(self.text.as_str())
                || plural_of(key) == Some(self.text.as_str())
        }
    }
}

/// Word sequences by their first word, and where a second word is fixed (not a stem) also
/// by it: a common first word (`code`, `pin`, `16`) starts hundreds of terms, and a text
/// word is then compared only with those whose second word it is followed by.
#[derive(Debug, Default)]
struct Index {
    /// Sequences of one word, or whose second word is a stem.
    singles: HashMap<String, Vec<Seq>>,
    /// The others, by first and then second word.
    pairs: HashMap<String, HashMap<String, Vec<Seq>>>,
}

impl Index {
    fn from_map(map: HashMap<String, Vec<Seq>>) -> Index {
        let mut index = Index::default();
        for (first, seqs) in map {
            for seq in seqs {
                match seq.rest.first() {
                    Some(p) if !p.stem => index
                        .pairs
                        .entry(first.clone())
                        .or_default()
                        .entry(p.text.clone())
                        .or_default()
                        .push(seq),
                    _ => index.singles.entry(first.clone()).or_default().push(seq),
                }
            }
        }
        index
    }

    /// Does a sequence longer than one word start with `word`?
    fn continues(&self, word: &str) -> bool {
        self.pairs.contains_key(word)
            || self
                .singles
                .get(word)
                .is_some_and(|seqs| seqs.iter().any(|q| !q.rest.is_empty()))
    }
}

#[derive(Debug, Clone)]
struct Seq {
    /// Words after the first.
    rest: Vec<Pat>,
    /// The term, or `None` for a benign phrase.
    term: Option<usize>,
}

struct Context {
    meta_after: HashSet<String>,
    meta_before: HashSet<String>,
    /// Action words, either side of the term; outside labels only.
    actions: HashSet<String>,
    linkers: HashSet<String>,
    cues: HashSet<String>,
    /// Words naming a field's ordinary content (`feedback`, `email`, `rating`).
    content: HashSet<String>,
    /// Words that leave a label blank (`code`, `number`, `value`).
    blank: HashSet<String>,
    /// Cues that are no request verb (`need`, `choose`).
    weak_cues: HashSet<String>,
    /// Cues naming the place to type (`here`, `below`, `field`).
    place_cues: HashSet<String>,
    /// Reports of having typed (`typed`, `copied`): cues only where placed.
    done_cues: HashSet<String>,
    /// Words that turn a request into a prohibition (`never`, `not`).
    negations: HashSet<String>,
    /// Interrogatives that open a label's question: for a thing, for a circumstance.
    questions: HashSet<String>,
    circumstances: HashSet<String>,
    circumstances_late: HashSet<String>,
    questions_late: HashSet<String>,
    /// Folded words naming one piece of a secret (`character`, `word`).
    pieces: HashSet<String>,
    /// Folded word sequences naming a part of a number (`last 4 digits`).
    partial: Vec<Vec<String>>,
    /// Pronouns referring back to what an earlier sentence named (`it`, `them`).
    back_refs: HashSet<String>,
    /// [`Data::phrasal_cues`], folded, by first word: the words that follow it.
    phrasal_cues: HashMap<String, Vec<Vec<String>>>,
    /// "No" before a noun, a negation where a place follows the term (`no`, `kein`).
    none_here: HashSet<String>,
    /// Folded word sequences placing a request elsewhere or later (`next page`).
    deferred: Vec<Vec<String>>,
    /// Nouns that, opening a label, name what it holds.
    heads: HashSet<String>,
    copulas: HashSet<String>,
    conjunctions: HashSet<String>,
    /// Exact terms (`card exact: số thẻ`) and their term ids, by automaton pattern.
    exact: Option<(AhoCorasick, Vec<usize>)>,
    /// Folded example markers (`e.g.`, `例如`), and one automaton over them (a text is read
    /// once, not once per marker).
    examples: Vec<String>,
    examples_ac: Option<AhoCorasick>,
    /// Folded units and counts: words, and compact-script ones matched inside a label.
    units: HashSet<String>,
    compact_units: Vec<String>,
    relatives: HashSet<String>,
    postpositions: HashSet<String>,
    auxiliaries: HashSet<String>,
    negations_after: HashSet<String>,
    /// Folded clitic prefixes, longest first.
    clitics: Vec<String>,
}

/// What a field's label names besides secret terms ([`SecretLexicon::label_sense`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LabelSense {
    /// An expiry and nothing else but dates, a month/year format, a card and function
    /// words ("Expiry date", "Date d'expiration", `有効期限（月）`), not what expires
    /// ("Reisepass gültig bis", `licence_expiry`).
    pub bare_expiry: bool,
    /// A month, a year or a date and nothing else ("Month", "Año", `年`, "Date"); an
    /// expiry's month or year is a [`LabelSense::bare_expiry`].
    pub month_or_year: bool,
    /// An answer and nothing else ("Your answer", "Answer 1", `Respuesta`, `答案`).
    pub answer: bool,
    /// A verification ("Verify it's you", `Bestätigung`, `確認`).
    pub verification: bool,
}

/// The compiled secret lexicon.
pub struct SecretLexicon {
    terms: Vec<TermInfo>,
    by_first: Index,
    /// First-word stems by their first three characters: `(stem, seq)`.
    stems: HashMap<String, Vec<(String, Seq)>>,
    /// Confusable skeletons of the Latin-script terms, built on first need (a spoof-shaped
    /// word): computing skeletons for every term at load cost more than the rest of the build.
    by_first_skeleton: std::sync::OnceLock<Index>,
    /// The Latin-script terms' words (space-joined), from which the skeleton index is built.
    skeleton_terms: Vec<(Box<str>, usize)>,
    /// Glued-compound endings by their last two bytes: `(ending, term)`.
    suffixes: HashMap<[u8; 2], Vec<(String, usize)>>,
    compact: Option<AhoCorasick>,
    /// Per compact pattern: the term it names, or `None` for a suppressor.
    compact_kinds: Vec<Option<usize>>,
    compact_cues: AhoCorasick,
    /// Content words of scripts written without spaces (`意见`, `ความคิดเห็น`).
    compact_content: Option<AhoCorasick>,
    /// Blank words of scripts written without spaces (`番号`, `코드`).
    compact_blank: Option<AhoCorasick>,
    /// Negations of scripts written without spaces (`不要`, `อย่า`).
    compact_negations: Option<AhoCorasick>,
    /// Property words of scripts written without spaces, before (`จุดประสงค์`, `用途`) or
    /// after (`有効期限`) a term; `compact_meta_after[i]` says which side pattern `i` is on.
    compact_meta: Option<AhoCorasick>,
    compact_meta_after: Vec<bool>,
    /// Linkers of those scripts (`的`, `の`, `의`, `ของ`), compacted.
    compact_linkers: Vec<String>,
    /// Interrogatives of circumstance of those scripts (`いつ`, `什么时候`, `언제`).
    compact_circumstances: Option<AhoCorasick>,
    /// What a card's expiry is asked by, beyond its terms ([`SecretLexicon::names_expiry`]).
    expiry: WordClass,
    cards: WordClass,
    /// [`Data::acronyms`], as written.
    acronyms: HashSet<&'static str>,
    id_documents: WordClass,
    id_number_labels: WordClass,
    card_words: WordClass,
    recall_questions: WordClass,
    recall_contexts: WordClass,
    month_year: WordClass,
    verification: WordClass,
    /// The first words of the classes [`SecretLexicon::label_sense`] reads.
    label_firsts: FirstWords,
    /// The first words of `expiry` alone (descriptions and messages are long).
    expiry_firsts: FirstWords,
    dates: WordClass,
    months_years: WordClass,
    security_questions: WordClass,
    answers: WordClass,
    ctx: Context,
}

impl std::fmt::Debug for SecretLexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretLexicon")
            .field("terms", &self.terms.len())
            .finish_non_exhaustive()
    }
}

/// The built-in lexicon and how long building it took (data parse included).
static BUILTIN: LazyLock<(Arc<SecretLexicon>, std::time::Duration)> = LazyLock::new(|| {
    let started = std::time::Instant::now();
    // The built-in data is fixed and covered by tests; failure here is a build defect.
    #[allow(clippy::expect_used)]
    let lex = SecretLexicon::build(&[]).expect("built-in secret lexicon compiles");
    (Arc::new(lex), started.elapsed())
});

/// How a phrase of the data is read: a compact-script pattern, or folded words (a trailing
/// `*` kept on a stem's last word).
enum Phrase {
    Compact(String),
    Words(Vec<String>),
}

impl Phrase {
    fn read(phrase: &str) -> Phrase {
        let norm = text::normalize(phrase);
        if has_compact_char(&norm) {
            return Phrase::Compact(text::compact(phrase));
        }
        // Split on spaces first so a trailing `*` survives word splitting.
        let mut words = Vec::new();
        for part in norm.split_whitespace() {
            let stem = part.ends_with('*');
            let mut ws: Vec<String> = text::words_normalized(part.trim_end_matches('*'))
                .into_iter()
                .map(|w| w.folded)
                .collect();
            if stem {
                if let Some(last) = ws.last_mut() {
                    last.push('*');
                }
            }
            words.append(&mut ws);
        }
        Phrase::Words(words)
    }

    /// How a `sense` or `needs` line names its term: the words glued, `*` ignored (`pin
    /// code` = `pincode`).
    fn key(&self) -> String {
        match self {
            Phrase::Compact(pattern) => format!("c:{pattern}"),
            Phrase::Words(words) => words.concat().replace('*', ""),
        }
    }
}

fn sense_key(phrase: &str) -> String {
    Phrase::read(phrase).key()
}

fn skeleton_fold(word: &str) -> String {
    let sk: String = unicode_security::skeleton(word).collect();
    text::fold(&sk)
}

/// [`skeleton_fold`] of the word in capitals.
fn upper_skeleton(word: &str) -> String {
    skeleton_fold(&word.to_uppercase())
}

fn has_compact_char(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(text::is_compact_script)
}

/// Latin letters that look like a Greek or a Cyrillic one (folded, lower case).
fn native_lookalike(c: char, script: unicode_script::Script) -> Option<char> {
    use unicode_script::Script;
    const GREEK: [(char, char); 14] = [
        ('a', 'α'),
        ('b', 'β'),
        ('e', 'ε'),
        ('h', 'η'),
        ('i', 'ι'),
        ('k', 'κ'),
        ('m', 'μ'),
        ('n', 'ν'),
        ('o', 'ο'),
        ('p', 'ρ'),
        ('t', 'τ'),
        ('x', 'χ'),
        ('y', 'υ'),
        ('z', 'ζ'),
    ];
    const CYRILLIC: [(char, char); 13] = [
        ('a', 'а'),
        ('b', 'в'),
        ('c', 'с'),
        ('e', 'е'),
        ('h', 'н'),
        ('i', 'і'),
        ('k', 'к'),
        ('m', 'м'),
        ('o', 'о'),
        ('p', 'р'),
        ('t', 'т'),
        ('x', 'х'),
        ('y', 'у'),
    ];
    let table: &[(char, char)] = match script {
        Script::Greek => &GREEK,
        Script::Cyrillic => &CYRILLIC,
        _ => return None,
    };
    table.iter().find(|(l, _)| *l == c).map(|(_, n)| *n)
}

/// The words with each Greek- or Cyrillic-majority word's Latin look-alikes written in that
/// script; `None` when no word has any.
fn respelled(words: &[Word]) -> Option<Vec<Word>> {
    use unicode_script::{Script, UnicodeScript};
    if !words.iter().any(|w| w.non_latin && mixed_script(&w.folded)) {
        return None;
    }
    let mut changed = false;
    let out = words
        .iter()
        .map(|w| {
            if !w.non_latin || !mixed_script(&w.folded) {
                return w.clone();
            }
            // The word's own script, when every Latin letter in it has a look-alike there.
            let script = [Script::Greek, Script::Cyrillic].into_iter().find(|&s| {
                w.folded.chars().any(|c| c.script() == s)
                    && w.folded
                        .chars()
                        .filter(|c| c.script() == Script::Latin)
                        .all(|c| native_lookalike(c, s).is_some())
            });
            let Some(script) = script else {
                return w.clone();
            };
            let folded: String = w
                .folded
                .chars()
                .map(|c| native_lookalike(c, script).unwrap_or(c))
                .collect();
            changed |= folded != w.folded;
            Word {
                folded,
                ..w.clone()
            }
        })
        .collect();
    changed.then_some(out)
}

/// `word` without a plural `s` (`tokens`, `codes`), for words of at least three letters.
fn plural_of(word: &str) -> Option<&str> {
    word.strip_suffix('s')
        .filter(|w| w.len() >= 3 && !w.ends_with('s') && w.is_ascii())
}

/// `word` without its trailing ASCII digits, when it has letters before them.
fn strip_digits(word: &str) -> Option<&str> {
    let t = word.trim_end_matches(|c: char| c.is_ascii_digit());
    (t.len() < word.len() && t.chars().count() >= 2).then_some(t)
}

/// The first `n` characters of `s`, when it has that many (a slice, no allocation).
fn first_chars(s: &str, n: usize) -> Option<&str> {
    match s.char_indices().nth(n) {
        Some((end, _)) => Some(&s[..end]),
        None => (s.chars().count() == n).then_some(s),
    }
}

fn folded_words(s: &str) -> Vec<String> {
    text::words(s).iter().map(|w| w.folded.clone()).collect()
}

fn folded_set(list: &[&str]) -> HashSet<String> {
    list.iter()
        .map(|w| text::fold(&text::normalize(w)))
        .collect()
}

/// The shared index build: one entry per distinct word sequence.
struct Builder {
    terms: Vec<TermInfo>,
    by_first: HashMap<String, Vec<Seq>>,
    stems: HashMap<String, Vec<(String, Seq)>>,
    skeleton_terms: Vec<(Box<str>, usize)>,
    compact_patterns: Vec<String>,
    compact_kinds: Vec<Option<usize>>,
    seen: HashSet<String>,
}

impl Builder {
    fn add_words(&mut self, words: &[String], term: Option<usize>) -> bool {
        let Some((first, rest)) = words.split_first() else {
            return false;
        };
        if !self.seen.insert(format!("w:{}", words.join(" "))) {
            return false;
        }
        let seq = Seq {
            rest: rest.iter().map(|w| Pat::of(w)).collect(),
            term,
        };
        let head = Pat::of(first);
        if head.stem {
            match first_chars(&head.text, 3) {
                Some(key) => self
                    .stems
                    .entry(key.to_owned())
                    .or_default()
                    .push((head.text.clone(), seq.clone())),
                None => return false,
            }
        } else {
            self.by_first
                .entry(head.text.clone())
                .or_default()
                .push(seq);
        }
        if let Some(term) = term {
            if !head.stem && words.iter().all(|w| w.is_ascii()) {
                self.skeleton_terms.push((words.join(" ").into(), term));
            }
        }
        true
    }

    /// Adds one phrase (a term when `term` is set, else a benign phrase / suppressor).
    fn add(&mut self, phrase: &Phrase, term: Option<usize>) -> bool {
        let words = match phrase {
            Phrase::Compact(pattern) => {
                if pattern.is_empty() || !self.seen.insert(format!("c:{pattern}")) {
                    return false;
                }
                self.compact_patterns.push(pattern.clone());
                self.compact_kinds.push(term);
                return true;
            }
            Phrase::Words(words) => words,
        };
        let added = self.add_words(words, term);
        // The glued spelling of a multi-word term (`seedphrase`, `cardnumber`): written so
        // in identifiers, and what letters spaced apart join into.
        if words.len() > 1 && !words.iter().any(|w| w.ends_with('*')) {
            let glued: String = words.concat();
            if glued.chars().count() >= 6 {
                self.add_words(&[glued], term);
            }
        }
        added
    }
}

impl SecretLexicon {
    /// The built-in lexicon (shared).
    pub fn builtin() -> Arc<SecretLexicon> {
        Arc::clone(&BUILTIN.0)
    }

    /// For the load report: the built-in lexicon's term count, its languages, and the time
    /// its first build took.
    pub fn builtin_report() -> (usize, usize, std::time::Duration) {
        let languages = Data::builtin().map_or(0, |d| d.languages.len());
        (BUILTIN.0.len(), languages, BUILTIN.1)
    }

    /// The built-in lexicon plus `extra` terms (category `custom`, strong). Errors name
    /// the offending extra term by index.
    pub fn build(extra: &[String]) -> Result<SecretLexicon, Vec<String>> {
        let data = Data::builtin().map_err(<[String]>::to_vec)?;
        let mut errors = Vec::new();
        let mut b = Builder {
            terms: Vec::new(),
            by_first: HashMap::new(),
            stems: HashMap::new(),
            skeleton_terms: Vec::new(),
            compact_patterns: Vec::new(),
            compact_kinds: Vec::new(),
            seen: HashSet::new(),
        };
        let mut entries: Vec<(String, Category, Strength, &str)> = Vec::new();
        for t in &data.terms {
            let detector = format!("{}@{}", t.category.as_str(), t.lang);
            entries.push((detector, t.category, t.strength, t.text));
        }
        for (i, term) in extra.iter().enumerate() {
            if !text::compact(term).chars().any(char::is_alphabetic) {
                errors.push(format!("extra_secret_terms[{i}]: term has no letters"));
                continue;
            }
            let cat = Category::Custom;
            entries.push((
                cat.as_str().to_owned(),
                cat,
                Strength::Strong,
                term.as_str(),
            ));
        }
        let mut by_text: HashMap<String, Vec<usize>> = HashMap::new();
        let mut names: HashMap<String, Arc<str>> = HashMap::new();
        let mut intern = |name: String| -> Arc<str> {
            names
                .entry(name)
                .or_insert_with_key(|n| Arc::from(n.as_str()))
                .clone()
        };
        for (detector, cat, strength, phrase) in entries {
            let id = b.terms.len();
            let read = Phrase::read(phrase);
            if !b.add(&read, Some(id)) {
                continue;
            }
            by_text.entry(read.key()).or_default().push(id);
            b.terms.push(TermInfo {
                phrase: phrase.to_owned(),
                category: cat,
                detector: intern(format!("secret.term:{detector}")),
                confusable_detector: intern(format!("secret.confusable:{}", cat.as_str())),
                obfuscated_detector: intern(format!("secret.obfuscated:{}", cat.as_str())),
                strength,
                senses: Vec::new(),
                needs: Vec::new(),
            });
        }
        // Exact terms: their own entries, found by one automaton over lower-case NFC text.
        let mut exact_patterns = Vec::new();
        let mut exact_ids = Vec::new();
        for t in &data.exact {
            exact_ids.push(b.terms.len());
            exact_patterns.push(text::nfkc(t.text).to_lowercase());
            b.terms.push(TermInfo {
                phrase: t.text.to_owned(),
                category: t.category,
                detector: intern(format!("secret.term:{}@{}", t.category.as_str(), t.lang)),
                confusable_detector: intern(format!("secret.confusable:{}", t.category.as_str())),
                obfuscated_detector: intern(format!("secret.obfuscated:{}", t.category.as_str())),
                strength: t.strength,
                senses: Vec::new(),
                needs: Vec::new(),
            });
        }
        let exact = if exact_patterns.is_empty() {
            None
        } else {
            match AhoCorasick::new(&exact_patterns) {
                Ok(ac) => Some((ac, exact_ids)),
                Err(e) => {
                    errors.push(format!("exact term automaton: {e}"));
                    None
                }
            }
        };
        for phrase in &data.benign {
            b.add(&Phrase::read(phrase), None);
        }
        for s in &data.suppress {
            b.compact_patterns.push(text::compact(s));
            b.compact_kinds.push(None);
        }
        for sense in &data.senses {
            // A sense naming no term changes nothing (the data test lists them).
            let Some(ids) = by_text.get(&sense_key(sense.term)) else {
                continue;
            };
            let words: Vec<Vec<String>> = sense.words.iter().map(|w| folded_words(w)).collect();
            for &id in ids {
                b.terms[id].senses.extend(words.iter().cloned());
            }
        }
        for need in &data.needs {
            let Some(ids) = by_text.get(&sense_key(need.term)) else {
                errors.push(format!("needs line for `{}`, which is no term", need.term));
                continue;
            };
            let words: Vec<Vec<String>> = need.words.iter().map(|w| folded_words(w)).collect();
            for &id in ids {
                b.terms[id].needs.extend(words.iter().cloned());
            }
        }
        for seqs in b.by_first.values_mut() {
            seqs.sort_by_key(|q| std::cmp::Reverse(q.rest.len()));
        }
        let mut suffixes: HashMap<[u8; 2], Vec<(String, usize)>> = HashMap::new();
        for s in &data.suffix {
            let folded = text::fold(s);
            let term = b
                .by_first
                .get(&folded)
                .and_then(|seqs| seqs.iter().find(|q| q.rest.is_empty()))
                .and_then(|q| q.term);
            match term {
                Some(t) if folded.len() >= 2 => {
                    let b = folded.as_bytes();
                    let tail = [b[b.len() - 2], b[b.len() - 1]];
                    suffixes.entry(tail).or_default().push((folded, t));
                }
                Some(_) => errors.push(format!("suffix term `{s}` is too short")),
                None => errors.push(format!("suffix term `{s}` is not a single-word term")),
            }
        }
        let compact = Self::automaton(&b.compact_patterns, &mut errors);
        let examples: Vec<String> = folded_set(&data.examples).into_iter().collect();
        let examples_ac = match AhoCorasick::new(&examples) {
            Ok(ac) => Some(ac),
            Err(e) => {
                errors.push(format!("example marker automaton: {e}"));
                None
            }
        };
        let cue_patterns: Vec<String> =
            data.compact_cues.iter().map(|c| text::compact(c)).collect();
        let compact_cues = match AhoCorasick::new(&cue_patterns) {
            Ok(ac) => ac,
            Err(e) => {
                errors.push(format!("secret cue automaton: {e}"));
                return Err(errors);
            }
        };
        let (compact_content, content): (Vec<&str>, Vec<&str>) =
            data.content.iter().partition(|w| has_compact_char(w));
        let content_patterns: Vec<String> =
            compact_content.iter().map(|c| text::compact(c)).collect();
        let compact_content = Self::automaton(&content_patterns, &mut errors);
        let (compact_blank, blank): (Vec<&str>, Vec<&str>) =
            data.blank.iter().partition(|w| has_compact_char(w));
        let blank_patterns: Vec<String> = compact_blank.iter().map(|c| text::compact(c)).collect();
        let compact_blank = Self::automaton(&blank_patterns, &mut errors);
        let (compact_negations, negations): (Vec<&str>, Vec<&str>) =
            data.negations.iter().partition(|w| has_compact_char(w));
        let negation_patterns: Vec<String> =
            compact_negations.iter().map(|c| text::compact(c)).collect();
        let compact_negations = Self::automaton(&negation_patterns, &mut errors);
        let (compact_before, meta_before): (Vec<&str>, Vec<&str>) =
            data.meta_before.iter().partition(|w| has_compact_char(w));
        let (compact_after, meta_after): (Vec<&str>, Vec<&str>) =
            data.meta_after.iter().partition(|w| has_compact_char(w));
        let meta_patterns: Vec<String> = compact_before
            .iter()
            .chain(&compact_after)
            .map(|c| text::compact(c))
            .collect();
        let compact_meta_after: Vec<bool> = (0..meta_patterns.len())
            .map(|i| i >= compact_before.len())
            .collect();
        let compact_meta = Self::automaton(&meta_patterns, &mut errors);
        let (compact_late, late_words): (Vec<&str>, Vec<&str>) = data
            .circumstances_late
            .iter()
            .partition(|w| has_compact_char(w));
        let late_patterns: Vec<String> = compact_late.iter().map(|c| text::compact(c)).collect();
        let compact_circumstances = Self::automaton(&late_patterns, &mut errors);
        let (compact_linkers, linkers): (Vec<&str>, Vec<&str>) =
            data.linkers.iter().partition(|w| has_compact_char(w));
        let compact_linkers = compact_linkers.iter().map(|c| text::compact(c)).collect();
        let expiry = WordClass::new(&data.expiry, &mut errors);
        let cards = WordClass::new(&data.cards, &mut errors);
        let id_documents = WordClass::new(&data.id_documents, &mut errors);
        let id_number_labels = WordClass::new(&data.id_number_labels, &mut errors);
        let card_words = WordClass::new(&data.card_words, &mut errors);
        let recall_questions = WordClass::new(&data.recall_questions, &mut errors);
        let recall_contexts = WordClass::new(&data.recall_contexts, &mut errors);
        let month_year = WordClass::new(&data.month_year, &mut errors);
        let verification = WordClass::new(&data.verification, &mut errors);
        let dates = WordClass::new(&data.dates, &mut errors);
        let months_years = WordClass::new(&data.months_years, &mut errors);
        let security_questions = WordClass::new(&data.security_questions, &mut errors);
        let answers = WordClass::new(&data.answers, &mut errors);
        let label_firsts =
            FirstWords::of(&[&expiry, &months_years, &dates, &answers, &verification]);
        let expiry_firsts = FirstWords::of(&[&expiry]);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut clitics: Vec<String> = data.clitics.iter().map(|c| text::fold(c)).collect();
        clitics.sort_by_key(|c| std::cmp::Reverse(c.chars().count()));
        clitics.dedup();
        Ok(SecretLexicon {
            terms: b.terms,
            by_first: Index::from_map(b.by_first),
            stems: b.stems,
            by_first_skeleton: std::sync::OnceLock::new(),
            skeleton_terms: b.skeleton_terms,
            suffixes,
            compact,
            compact_kinds: b.compact_kinds,
            compact_cues,
            compact_content,
            compact_blank,
            compact_negations,
            compact_meta,
            compact_meta_after,
            compact_linkers,
            compact_circumstances,
            expiry,
            cards,
            acronyms: data.acronyms.iter().copied().collect(),
            id_documents,
            id_number_labels,
            card_words,
            recall_questions,
            recall_contexts,
            month_year,
            label_firsts,
            expiry_firsts,
            verification,
            dates,
            months_years,
            security_questions,
            answers,
            ctx: Context {
                meta_after: folded_set(&meta_after),
                meta_before: folded_set(&meta_before),
                actions: folded_set(&data.actions),
                linkers: folded_set(&linkers),
                cues: folded_set(&data.cues),
                content: folded_set(&content),
                blank: folded_set(&blank),
                weak_cues: folded_set(&data.weak_cues),
                place_cues: folded_set(&data.place_cues),
                done_cues: folded_set(&data.done_cues),
                negations: folded_set(&negations),
                questions: folded_set(&data.questions),
                circumstances: folded_set(&data.circumstances),
                // Compact scripts list theirs as `suppress`: only the words of spaced ones
                // count, and a phrase left with a number alone names nothing.
                pieces: folded_set(&data.pieces),
                partial: data
                    .partial
                    .iter()
                    .map(|p| folded_words(p))
                    .filter(|p| p.iter().any(|w| !is_number(w)))
                    .collect(),
                deferred: data.deferred.iter().map(|p| folded_words(p)).collect(),
                none_here: folded_set(&data.none_here),
                back_refs: folded_set(&data.back_refs),
                phrasal_cues: data.phrasal_cues.iter().fold(HashMap::new(), |mut by, p| {
                    let mut words = text::words(p)
                        .iter()
                        .map(|w| w.folded.clone())
                        .collect::<Vec<_>>()
                        .into_iter();
                    if let Some(first) = words.next() {
                        let rest: Vec<String> = words.collect();
                        if !rest.is_empty() {
                            by.entry(first).or_insert_with(Vec::new).push(rest);
                        }
                    }
                    by
                }),
                circumstances_late: folded_set(&late_words),
                questions_late: folded_set(&data.questions_late),
                heads: folded_set(&data.heads),
                copulas: folded_set(&data.copulas),
                conjunctions: folded_set(&data.conjunctions),
                examples,
                examples_ac,
                exact,
                units: folded_set(&data.units),
                relatives: folded_set(&data.relatives),
                postpositions: folded_set(&data.postpositions),
                auxiliaries: folded_set(&data.auxiliaries),
                negations_after: folded_set(&data.negations_after),
                compact_units: folded_set(&data.units)
                    .into_iter()
                    .filter(|u| has_compact_char(u))
                    .collect(),
                clitics,
            },
        })
    }

    fn automaton(patterns: &[String], errors: &mut Vec<String>) -> Option<AhoCorasick> {
        if patterns.is_empty() {
            return None;
        }
        match AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns)
        {
            Ok(ac) => Some(ac),
            Err(e) => {
                errors.push(format!("secret lexicon automaton: {e}"));
                None
            }
        }
    }

    /// The built-in data's `sense` lines that name no term (a data defect; tested).
    pub fn unknown_senses() -> Vec<&'static str> {
        let Ok(data) = Data::builtin() else {
            return Vec::new();
        };
        let known: HashSet<String> = data.terms.iter().map(|t| sense_key(t.text)).collect();
        data.senses
            .iter()
            .filter(|s| !known.contains(&sense_key(s.term)))
            .map(|s| s.term)
            .collect()
    }

    /// Number of compiled terms (for load-time reporting).
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether the lexicon holds no term.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Does one of `texts` name a benign sense of `term` (`pwd` and "working directory")?
    /// The term with id `term` as its word list writes it (`mot de passe`).
    pub fn phrase(&self, term: usize) -> Option<&str> {
        self.terms.get(term).map(|t| t.phrase.as_str())
    }

    pub fn benign_sense(&self, term: usize, texts: &[&str]) -> bool {
        let Some(info) = self.terms.get(term) else {
            return false;
        };
        if info.senses.is_empty() {
            return false;
        }
        texts.iter().any(|t| {
            let words = folded_words(t);
            info.senses.iter().any(|sense| {
                !sense.is_empty() && words.windows(sense.len()).any(|w| w == sense.as_slice())
            })
        })
    }

    /// [`SecretLexicon::benign_sense`] read in one text that may name other secrets: a sense
    /// word inside another term's phrase ("frase" in "frase de recuperación") does not count,
    /// but for an expiry: a token's or a key's expiry is theirs ("What is the token's expiry
    /// date?").
    pub fn benign_sense_in(&self, term: usize, text: &str) -> bool {
        let Some(info) = self.terms.get(term) else {
            return false;
        };
        if info.senses.is_empty() {
            return false;
        }
        let words = folded_words(text);
        let keys: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut covered = vec![false; keys.len()];
        let mut j = 0;
        while info.category != Category::CardExpiry && j < keys.len() {
            match self.match_at(&keys, j, &self.by_first, false) {
                Some((Some(t), len)) if t != term => {
                    covered[j..j + len].iter_mut().for_each(|c| *c = true);
                    j += len;
                }
                _ => j += 1,
            }
        }
        info.senses.iter().any(|sense| {
            !sense.is_empty()
                && keys.windows(sense.len()).enumerate().any(|(k, w)| {
                    w.iter().zip(sense).all(|(a, b)| *a == b.as_str())
                        && !covered[k..k + sense.len()].iter().any(|c| *c)
                })
        })
    }

    /// The first secret term requested by `text`, if any.
    pub fn scan(&self, text: &str, role: Role) -> Option<Match<'_>> {
        self.scan_detail(text, role).0
    }

    /// [`SecretLexicon::scan`], and whether `text` names a property of a secret rather than
    /// the secret (`password_expiry_days`, `min_password_length`, "token count"): a term was
    /// found only as an attribute. A field so named asks for no secret, whatever its title
    /// repeats.
    pub fn scan_detail(&self, text: &str, role: Role) -> (Option<Match<'_>>, bool) {
        if role == Role::Hidden && text::is_question(text) {
            // A question in a checkbox or an option ("Forgot your password?") asks about the
            // secret, not for it.
            return (None, false);
        }
        let words = text::words(text);
        let keys: Vec<&str> = words.iter().map(|w| w.folded.as_str()).collect();
        let (hit, suppressed) = self.scan_words(&words, &keys, role, &self.by_first, false);
        if let Some(t) = hit {
            if role == Role::Label && self.named_by_head(text, &keys, t) {
                return (None, true);
            }
            if self.compact_suppressed(text, t) {
                return (None, true);
            }
            return (Some(self.hit(t, |i| &i.detector)), false);
        }
        let mut attribute = suppressed;
        if role == Role::Label && !suppressed {
            if let Some(t) = self.exact_term(text) {
                return (Some(self.hit(t, |i| &i.detector)), false);
            }
        }
        if has_compact_char(text) {
            let (hit, property) = self.scan_compact(text, role);
            if let Some(t) = hit {
                return (Some(self.hit(t, |i| &i.detector)), false);
            }
            attribute |= property;
        }
        (self.scan_rest(text, &words, &keys, role), attribute)
    }

    /// An exact term (written with its accents) that ends `text` or its first clause: "Số
    /// thẻ", "Số thẻ (16 chữ số)", not "Số thẻ thành viên" (a membership card).
    fn exact_term(&self, text: &str) -> Option<usize> {
        let (ac, ids) = self.ctx.exact.as_ref()?;
        if text.is_ascii() {
            return None;
        }
        // Identifiers join words with `_` or `-` (`số_thẻ`).
        let lower = text::nfkc(text).to_lowercase().replace(['_', '-'], " ");
        ac.find_iter(&lower).find_map(|m| {
            let before = lower[..m.start()].chars().next_back();
            let after = lower[m.end()..].trim_start().chars().next();
            let alone = before.is_none_or(|c| !c.is_alphanumeric())
                && after.is_none_or(|c| !c.is_alphanumeric());
            alone.then(|| ids[m.pattern().as_usize()])
        })
    }

    /// An identifier is named by its last word (`otp_phone_label`, `tokenPurpose`): a
    /// property word there, after the term, makes the field a property of the secret.
    fn named_by_head(&self, text: &str, keys: &[&str], term: usize) -> bool {
        let Some(last) = keys.last() else {
            return false;
        };
        let term_last = self.terms[term].phrase.split_whitespace().last();
        keys.len() <= 6
            && !text.trim().contains(char::is_whitespace)
            && (self.ctx.meta_after.contains(*last) || self.ctx.content.contains(*last))
            && term_last.is_none_or(|w| text::fold(w) != *last)
    }

    fn skeleton_index(&self) -> &Index {
        self.by_first_skeleton.get_or_init(|| {
            let mut index: HashMap<String, Vec<Seq>> = HashMap::new();
            for (joined, term) in &self.skeleton_terms {
                let words: Vec<&str> = joined.split(' ').collect();
                // Skeletons differ by case (`ν` looks like `v`, `Ν` like `N`): the term's
                // skeleton in lower and in upper case.
                let lower: Vec<String> = words.iter().map(|w| skeleton_fold(w)).collect();
                let upper: Vec<String> = words.iter().map(|w| upper_skeleton(w)).collect();
                let both = if upper == lower { 1 } else { 2 };
                for sk in [&lower, &upper].into_iter().take(both) {
                    if let Some((first, rest)) = sk.split_first() {
                        index.entry(first.clone()).or_default().push(Seq {
                            rest: rest.iter().map(|w| Pat::of(w)).collect(),
                            term: Some(*term),
                        });
                    }
                }
            }
            for seqs in index.values_mut() {
                seqs.sort_by_key(|q| std::cmp::Reverse(q.rest.len()));
            }
            Index::from_map(index)
        })
    }

    /// The passes after the scripts' own: homoglyphs, obfuscation.
    fn scan_rest(
        &self,
        text: &str,
        words: &[Word],
        keys: &[&str],
        role: Role,
    ) -> Option<Match<'_>> {
        if words.iter().any(spoof_candidate) {
            // Only words that can be spoofs: mixed scripts, or a skeleton that is all
            // ASCII (a Cyrillic or small-capital spelling of a Latin word). Real words of
            // another script keep their own spelling. Context (meta words, cues) is read on
            // the words as written.
            let skeletons: Vec<String> = words
                .iter()
                .map(|w| {
                    if spoof_candidate(w) {
                        skeleton_fold(&w.folded)
                    } else {
                        w.folded.clone()
                    }
                })
                .collect();
            let sk_keys: Vec<&str> = skeletons.iter().map(String::as_str).collect();
            if let (Some(t), _) =
                self.scan_keys(words, &sk_keys, keys, role, self.skeleton_index(), true)
            {
                return Some(self.hit(t, |i| &i.confusable_detector));
            }
            // Capitals spoofed (`ΡΙΝ`: Greek capitals fold to `ριν`, whose skeleton is `piv`).
            let upper: Vec<String> = words.iter().map(|w| upper_skeleton(&w.folded)).collect();
            let up_keys: Vec<&str> = upper.iter().map(String::as_str).collect();
            if let (Some(t), _) =
                self.scan_keys(words, &up_keys, keys, role, self.skeleton_index(), true)
            {
                return Some(self.hit(t, |i| &i.confusable_detector));
            }
        }
        // A Greek or Cyrillic word with Latin look-alikes inside (`KΩΔIKOΣ`, `пaрoль`): read in
        // its own script.
        if let Some(native) = respelled(words) {
            let keys: Vec<&str> = native.iter().map(|w| w.folded.as_str()).collect();
            if let (Some(t), _) = self.scan_words(&native, &keys, role, &self.by_first, false) {
                return Some(self.hit(t, |i| &i.confusable_detector));
            }
        }
        self.scan_obfuscated(text, words, role)
            .map(|t| self.hit(t, |i| &i.obfuscated_detector))
    }

    /// Does `text` end with a word that begins a longer term (`api` of "api key", `card` of
    /// "card number")? Then the field's next text may complete it.
    pub fn may_continue(&self, text: &str) -> bool {
        // Words never span whitespace: the last one is in the last whitespace-separated part.
        let tail = text
            .trim_end()
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or("");
        text::words(tail)
            .last()
            .is_some_and(|w| self.by_first.continues(&w.folded))
    }

    /// Does the label `text` say anything of what its field holds: a word that is not a
    /// generic one (`value`, `code`, `answer`), an article or a number? "Error code" does,
    /// "Value" and "Your answer" do not.
    /// Is `text` a phrase naming a thing, with no request cue and no negation in it ("The
    /// PIN of the SIM card inserted in the modem")? Under a blank label such a description
    /// says what the field holds, as a label would.
    pub fn is_naming_phrase(&self, text: &str) -> bool {
        let ctx = &self.ctx;
        // Ten words at most: a longer text is read no further.
        if text.len() > 200 {
            return false;
        }
        let words = text::words(text);
        // Word counts say nothing of scripts written without spaces.
        (2..=10).contains(&words.len())
            && !text.chars().any(text::is_compact_script)
            && !text::is_question(text)
            && words.iter().skip(1).all(|w| !w.stop_before)
            && words.iter().all(|w| {
                let w = w.folded.as_str();
                let request = ctx.cues.contains(w) && !ctx.linkers.contains(w);
                let refused = ctx.negations.contains(w) || ctx.none_here.contains(w);
                !request && !refused && !ctx.meta_before.contains(w)
            })
    }

    /// Is the label `text` a blank that names nothing, request words and places aside
    /// ("Value", "Introduce el valor", "Enter here", "Feld 1")?
    pub fn is_blank_request(&self, text: &str) -> bool {
        let ctx = &self.ctx;
        // A label written without spaces has no words to read: it is blank only when its
        // compact form is ("รหัสไปรษณีย์", a postal code, is not).
        if has_compact_char(text) && self.compact_names_something(&text::compact(text)) {
            return false;
        }
        text::words(text).iter().all(|w| {
            let w = w.folded.as_str();
            ctx.blank.contains(w)
                || ctx.linkers.contains(w)
                || is_number(w)
                || ctx.cues.contains(w)
                || ctx.place_cues.contains(w)
        })
    }

    /// Does the label `text` hold a blank word ("Value", "Variable value", "New value")?
    pub fn names_blank(&self, text: &str) -> bool {
        text::words(text)
            .iter()
            .any(|w| self.ctx.blank.contains(&w.folded))
    }

    pub fn names_something(&self, text: &str) -> bool {
        let ctx = &self.ctx;
        text::words(text).iter().any(|w| {
            !(ctx.blank.contains(&w.folded)
                || ctx.linkers.contains(&w.folded)
                || is_number(&w.folded))
        }) || (has_compact_char(text) && self.compact_names_something(&text::compact(text)))
    }

    /// Does a label written without spaces say more than its blank words ("订单号" does,
    /// "输入" and "答案" do not)? Compact runs are no words for [`text::words`].
    fn compact_names_something(&self, compact: &str) -> bool {
        let scripted = |s: &str| s.chars().filter(|c| text::is_compact_script(*c)).count();
        let blank: usize = self.compact_blank.as_ref().map_or(0, |ac| {
            ac.find_iter(compact)
                .map(|m| scripted(&compact[m.range()]))
                .sum()
        });
        scripted(compact) > blank
    }

    /// Does the label `text` name what its field holds, something no secret is (`feedback`,
    /// "E-mail address", `reason_for_reset`, "ความคิดเห็น")? One content word is enough
    /// unless a blank word says the field waits for something named elsewhere ("Code from
    /// the e-mail", "Number on the card"); a label of generic words (`value`) names nothing.
    pub fn names_content(&self, text: &str) -> bool {
        let words = text::words(text);
        let has = |set: &HashSet<String>| {
            words.iter().any(|w| {
                set.contains(&w.folded) || strip_digits(&w.folded).is_some_and(|s| set.contains(s))
            })
        };
        let compact = has_compact_char(text).then(|| text::compact(text));
        let has_compact = |ac: &Option<AhoCorasick>| {
            compact
                .as_deref()
                .is_some_and(|c| ac.as_ref().is_some_and(|ac| ac.is_match(c)))
        };
        let content = has(&self.ctx.content) || has_compact(&self.compact_content);
        content && !has(&self.ctx.blank) && !has_compact(&self.compact_blank)
    }

    /// Is `text` a question opened by an interrogative of circumstance ("Where will you keep
    /// them?", "¿Por qué lo cambias?"), past articles and prepositions?
    pub fn asks_circumstance(&self, text: &str) -> bool {
        let words = text::words(text);
        words.last().is_some_and(|w| w.asks)
            && words
                .iter()
                .find(|w| !self.ctx.linkers.contains(&w.folded))
                .is_some_and(|w| self.ctx.circumstances.contains(&w.folded))
    }

    /// Does the label `text` name an expiry or a validity (`Expiry date`, "Son kullanma
    /// tarihi", `有効期限（月）`)?
    pub fn names_expiry(&self, text: &str) -> bool {
        self.expiry_firsts.may_name(text) && self.expiry.named_in(text)
    }

    /// What the label `text` names besides secret terms, read once ([`LabelSense`]).
    pub fn label_sense(&self, text: &str) -> LabelSense {
        if !self.label_firsts.may_name(text) {
            return LabelSense::default();
        }
        let read = Read::new(text);
        let expiry = self.expiry.named(&read);
        let months = self.months_years.named(&read);
        LabelSense {
            bare_expiry: expiry
                && self.only(
                    &[
                        &self.expiry,
                        &self.month_year,
                        &self.dates,
                        &self.months_years,
                        &self.cards,
                    ],
                    &read,
                ),
            month_or_year: !expiry
                && (months || self.dates.named(&read))
                && self.only(&[&self.months_years, &self.month_year, &self.dates], &read),
            answer: self.answers.named(&read) && self.only(&[&self.answers], &read),
            verification: self.verification.named(&read),
        }
    }

    /// Does `text` close by asking for something it names, after naming a secret before?
    /// "Your IBAN has been verified. Add a reference for this payee", "A new private key was
    /// generated. Give it a friendly name", "We reset your password. Tell us what went wrong":
    /// its last sentence requests (a request verb, or a question) a content word
    /// (`reference`, `name`, `device`) or asks a question of its own, and names no secret, so the
    /// secret of an earlier sentence is the topic. "We sent a code. Enter it below" asks for
    /// the code: its last sentence names nothing of its own.
    pub fn asks_for_other_content(&self, text: &str) -> bool {
        let words = text::words(text);
        let Some(start) = (1..words.len()).rev().find(|&k| words[k].stop_before) else {
            return false;
        };
        let last = &words[start..];
        let keys: Vec<&str> = last.iter().map(|w| w.folded.as_str()).collect();
        let ctx = &self.ctx;
        // The request (a request verb, or an interrogative of a question) and its object:
        // a content word among the next three words ("Give it a friendly name", "Which
        // device are you restoring on?"; not "Enter it below to link your account").
        let question = last.last().is_some_and(|w| w.asks);
        let Some(v) = keys.iter().position(|w| {
            (ctx.cues.contains(*w) && !ctx.linkers.contains(*w))
                || (question && (ctx.questions.contains(*w) || ctx.circumstances.contains(*w)))
        }) else {
            return false;
        };
        // An interrogative asks for something other than the secret the sentence does not
        // name: "Tell us what went wrong", "Who owns it?", "Where would you like to pick up
        // the letter?".
        // Not a question of what an earlier sentence named ("What is it?"), nor a request
        // to type here ("Escribe aquí el código que contiene").
        let interrogative = |w: &str| ctx.questions.contains(w) || ctx.circumstances.contains(w);
        let refers_back = keys.iter().any(|w| ctx.back_refs.contains(*w));
        let placed = keys.iter().any(|w| ctx.place_cues.contains(*w));
        let object = keys[v + 1..].iter().filter(|w| !ctx.linkers.contains(**w));
        let names = (question && interrogative(keys[v]) && !refers_back)
            || object
                .clone()
                .next()
                .is_some_and(|w| interrogative(w) && !refers_back && !placed)
            // A content word after a request verb ("Give it a friendly name"); a verb of
            // need explains instead ("Lo necesitamos para formalizar la reserva").
            || ((question || !ctx.weak_cues.contains(keys[v]))
                && object
                    .take(3)
                    .any(|w| ctx.content.contains(*w) && !ctx.blank.contains(*w)));
        names
            && self
                .scan_words(last, &keys, Role::Label, &self.by_first, false)
                .0
                .is_none()
    }

    /// Is `label` one numbered piece of a secret typed piece by piece ("2nd character",
    /// "Character 5", `char_7`, "Word #3")? A piece word, a number (or an ordinal), and at
    /// most a linker or a blank word besides.
    pub fn names_piece(&self, label: &str) -> bool {
        // Numbered or not a piece: most labels are read no further.
        if !label.chars().any(char::is_numeric) {
            return false;
        }
        let words = text::words(label);
        let ctx = &self.ctx;
        let numbered = |w: &str| w.as_bytes().first().is_some_and(u8::is_ascii_digit);
        words.len() <= 4
            && words.iter().any(|w| ctx.pieces.contains(&w.folded))
            && words.iter().any(|w| numbered(&w.folded))
            && words.iter().all(|w| {
                ctx.pieces.contains(&w.folded)
                    || numbered(&w.folded)
                    || ctx.linkers.contains(&w.folded)
                    || ctx.blank.contains(&w.folded)
            })
    }

    /// Does `text` end with a copula, a sentence left for the user to complete ("My Social
    /// Security number is ", "Mein aktuelles Passwort ist ")?
    pub fn ends_with_copula(&self, text: &str) -> bool {
        text::words(text)
            .last()
            .is_some_and(|w| self.ctx.copulas.contains(&w.folded))
    }

    /// Is the folded `word` a linker (an article, a possessive, a preposition)?
    pub fn is_linker(&self, word: &str) -> bool {
        self.ctx.linkers.contains(word)
    }

    /// Does `text` name an answer anywhere ("请输入注册时设置的答案")?
    pub fn names_answer(&self, text: &str) -> bool {
        self.answers.named_in(text)
    }

    /// Does `text` name a security question ("Answer your security question", `密保问题`)?
    pub fn names_security_question(&self, text: &str) -> bool {
        self.security_questions.named_in(text)
    }

    /// Is `text` a question of the classic security questions ("What was your first pet's
    /// name?", "Who was your favorite teacher?")?
    pub fn asks_recall_question(&self, text: &str) -> bool {
        text::is_question(text) && self.recall_questions.named_in(text)
    }

    /// Does `text` name an account recovery or an identity check ("Account recovery",
    /// "Security check before discussing your claim")?
    pub fn names_recall_context(&self, text: &str) -> bool {
        self.recall_contexts.named_in(text) || self.security_questions.named_in(text)
    }

    /// Is the text made of members of `classes`, linkers, generic words and numbers only?
    fn only(&self, classes: &[&WordClass], read: &Read) -> bool {
        let (mut rest, compact_left) = WordClass::uncovered(classes, read);
        !compact_left
            && rest
                .all(|w| self.ctx.linkers.contains(w) || self.ctx.blank.contains(w) || is_number(w))
    }

    /// Is the label `text` (a few words) a national number named by its capitals ("SIN",
    /// "SIN (9 digits)", "NIE number"), written as capitals?
    pub fn names_acronym(&self, text: &str) -> bool {
        let words = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty());
        let mut named = false;
        for (k, w) in words.enumerate() {
            if k >= 4 {
                return false;
            }
            named |= self.acronyms.contains(w);
        }
        named
    }

    /// Does `text` name an identity document ("Driver's license", "State ID", `passport`)?
    pub fn names_id_document(&self, text: &str) -> bool {
        self.id_documents.named_in(text)
    }

    /// Is the label `text` a document's number named generically and nothing else
    /// ("Document number", "License / ID number", "ID number")?
    pub fn is_id_number_label(&self, text: &str) -> bool {
        let read = Read::new(text);
        self.id_number_labels.named(&read)
            && self.only(&[&self.id_number_labels, &self.id_documents], &read)
    }

    /// Does `text` name a payment card ("Complete your card details", `بطاقتك`)?
    pub fn names_card(&self, text: &str) -> bool {
        self.cards.named_in(text)
    }

    /// Is the label `text` the bare word for a card and nothing else ("Card", "Kartu",
    /// `บัตร`)?
    pub fn is_card_word(&self, text: &str) -> bool {
        self.card_words.named_in(text) && self.only(&[&self.card_words], &Read::new(text))
    }

    /// Does `text` name a card's expiry in one breath ("Your card is about to expire",
    /// "カードの有効期限")? The bare word for a card beside an expiry: a payment card's,
    /// benign phrases (an identity card's, a gift card's) aside.
    pub fn names_card_expiring(&self, text: &str) -> bool {
        self.card_words.named_in(text) && self.names_expiry(text) && !self.names_benign(text)
    }

    /// Does `text` hold a benign phrase (a thing named that is no secret: "ID card",
    /// "gift card")?
    fn names_benign(&self, text: &str) -> bool {
        let words = text::words(text);
        let keys: Vec<&str> = words.iter().map(|w| w.folded.as_str()).collect();
        (0..keys.len()).any(|i| {
            matches!(
                self.match_at(&keys, i, &self.by_first, false),
                Some((None, _))
            )
        })
    }

    /// Does `text` write a month/year format (`MM/YY`, "mois/année", `月/年`)?
    pub fn shows_month_year(&self, text: &str) -> bool {
        self.month_year.named_in(text)
    }

    /// Does the label `text` name a unit or a count (`days`, `max_attempts`, "Wymuszaj
    /// zmianę hasła co (dni)", `次数`)? A number so labelled holds a quantity.
    pub fn names_quantity(&self, text: &str) -> bool {
        let units = &self.ctx.units;
        text::words(text).iter().any(|w| units.contains(&w.folded))
            || (has_compact_char(text) && {
                let c = text::compact(text);
                self.ctx
                    .compact_units
                    .iter()
                    .any(|u| c.contains(u.as_str()))
            })
    }

    /// Does `text` give an example of what its field holds ("e.g. Forgot my password",
    /// "例如：忘记登录密码", "z. B. Passwort vergessen")? A marker counts as a word of its own:
    /// `pl.` in "pl. jelszó" but not inside "appl.".
    pub fn gives_example(&self, text: &str) -> bool {
        self.example_split(text).is_some()
    }

    /// `text` folded and split at its first example marker: what comes before (an
    /// instruction, "Inkl. Zugangsdaten, z. B. …") and the example itself.
    pub fn example_split(&self, text: &str) -> Option<(String, String)> {
        let ac = self.ctx.examples_ac.as_ref()?;
        let folded = text::fold(&text::normalize(text));
        let letter = |c: char| c.is_alphanumeric() && !text::is_compact_script(c);
        let at = ac
            .find_overlapping_iter(&folded)
            .filter(|m| {
                let marker = &self.ctx.examples[m.pattern().as_usize()];
                let (first, last) = (marker.chars().next(), marker.chars().next_back());
                let before = folded[..m.start()].chars().next_back();
                let after = folded[m.end()..].chars().next();
                let glued_before = first.is_some_and(letter) && before.is_some_and(letter);
                let glued_after = last.is_some_and(letter) && after.is_some_and(letter);
                !(glued_before || glued_after)
            })
            .map(|m| m.start())
            .min()?;
        Some((folded[..at].to_string(), folded[at..].to_string()))
    }

    /// Does `text` name a property of a secret rather than the secret? See
    /// [`SecretLexicon::scan_detail`].
    pub fn names_attribute(&self, text: &str) -> bool {
        self.scan_detail(text, Role::Label).1
    }

    fn hit(&self, term: usize, name: impl Fn(&TermInfo) -> &Arc<str>) -> Match<'_> {
        Match {
            term,
            detector: name(&self.terms[term]),
            weak: self.terms[term].strength == Strength::Weak,
            category: self.terms[term].category,
        }
    }

    /// Leetspeak undone, letters spaced apart joined, right-to-left overrides read as they
    /// display; `None` when none applies.
    fn scan_obfuscated(&self, text: &str, words: &[Word], role: Role) -> Option<usize> {
        let plain_scan = |plain: &str| {
            let words = text::words(plain);
            let keys: Vec<&str> = words.iter().map(|w| w.folded.as_str()).collect();
            self.scan_words(&words, &keys, role, &self.by_first, false)
                .0
        };
        if !may_be_rewritten(text) {
            return self.scan_case_and_spacing(text, words, role, plain_scan);
        }
        if let Some(shown) = as_displayed(text) {
            if let Some(t) = plain_scan(&shown) {
                return Some(t);
            }
        }
        // Markup inside words (`<b>to</b>ken`, `s**ee**d`, `to.ken`) removed.
        if let Some(plain) = unmarked(&text::normalize(text)) {
            if let Some(t) = plain_scan(&plain) {
                return Some(t);
            }
        }
        if text.chars().any(|c| leet(c).is_some()) || text.contains("\\/") {
            if let Some(plain) = unleet(&text::normalize(text)) {
                if let Some(t) = plain_scan(&plain) {
                    return Some(t);
                }
            }
        }
        self.scan_case_and_spacing(text, words, role, plain_scan)
    }

    /// The passes that apply to any text: case games and letters spaced apart.
    fn scan_case_and_spacing(
        &self,
        text: &str,
        words: &[Word],
        role: Role,
        plain_scan: impl Fn(&str) -> Option<usize>,
    ) -> Option<usize> {
        // Case games (`PaSsWoRd`, `PASSword`, `cVv`) read as one word rather than split as
        // camelCase.
        if odd_case(text) {
            if let Some(t) = plain_scan(&text.to_lowercase()) {
                return Some(t);
            }
        }
        let joined = join_spaced(words)?;
        let keys: Vec<&str> = joined.iter().map(|w| w.folded.as_str()).collect();
        self.scan_words(&joined, &keys, role, &self.by_first, false)
            .0
    }

    fn scan_words(
        &self,
        words: &[Word],
        keys: &[&str],
        role: Role,
        index: &Index,
        need_non_latin: bool,
    ) -> (Option<usize>, bool) {
        self.scan_keys(words, keys, keys, role, index, need_non_latin)
    }

    /// Terms matched on `match_keys`, their context (meta words, cues) read on `keys`.
    fn scan_keys(
        &self,
        words: &[Word],
        match_keys: &[&str],
        keys: &[&str],
        role: Role,
        index: &Index,
        need_non_latin: bool,
    ) -> (Option<usize>, bool) {
        let mut suppressed_seen = false;
        // Whether a benign phrase stands anywhere in the text: read once, on the first term
        // that needs it (a long text repeating `code … sms` must not be re-read per term).
        let mut benign_in_text: Option<bool> = None;
        let mut i = 0;
        while i < keys.len() {
            let Some((term, len)) = self.match_at(match_keys, i, index, need_non_latin) else {
                i += 1;
                continue;
            };
            let Some(term) = term else {
                // A benign phrase shadows every term inside it.
                i += len;
                continue;
            };
            // A term too common alone (`code`) counts only beside what makes it a secret
            // (`sms`, `texted`) anywhere in the text.
            // A benign phrase anywhere names what was sent ("the promo code we sent by SMS").
            let needs = &self.terms[term].needs;
            if !needs.is_empty()
                && (!needs
                    .iter()
                    .any(|n| !n.is_empty() && keys.windows(n.len()).any(|w| w == n.as_slice()))
                    || *benign_in_text.get_or_insert_with(|| {
                        (0..keys.len()).any(|j| {
                            matches!(self.match_at(match_keys, j, index, false), Some((None, _)))
                        })
                    }))
            {
                i += 1;
                continue;
            }
            // A suppressed phrase also covers the shorter terms inside it
            // ("personal access token name" must not re-match at "access token").
            // Context is read within the term's sentence: "We texted you a code. Type it
            // here" does not make `type` a property of the code.
            let (lo, hi) = sentence(words, i, len);
            let question = words[lo..hi].last().is_some_and(|w| w.asks);
            if self.suppressed(&keys[lo..hi], (i - lo, len, term), role, question) {
                suppressed_seen = true;
                i += len;
                continue;
            }
            let owned = self.terms[term].category != Category::CardExpiry;
            let homoglyph_ok = !need_non_latin || words[i..i + len].iter().any(spoof_candidate);
            let cue_ok = match role {
                Role::Label => true,
                // A passive request past a long subject, or a request by pronoun in the
                // next sentence ("The npm automation token for publishing @acme/ui is
                // required. Enter it below"), asks as it does over several inputs.
                Role::Prose => {
                    self.terms[term].strength == Strength::Strong
                        || self.cued(&keys[lo..hi], i - lo, len, owned)
                        || self.passive_request(&keys[lo..hi], i - lo, len, &|w| {
                            self.ctx.cues.contains(w) && !self.ctx.linkers.contains(w)
                        })
                        || self.asked_back(&keys[hi..])
                }
                Role::Cued => self.cued_near(&keys[lo..hi], i - lo, len),
                Role::Hidden | Role::Asked => {
                    self.verb_cued(&keys[lo..hi], i - lo, len, role == Role::Hidden)
                        || (role == Role::Asked && self.asked_back(&keys[hi..]))
                }
            };
            // A question for the term itself asks for it in any role but a choice's text:
            // "¿Cuál es su PIN?", "Qual è il PIN di questa carta?".
            let cue_ok = cue_ok
                || (question
                    && !matches!(role, Role::Label | Role::Hidden)
                    && (self.asks_what(&keys[lo..hi], i - lo, owned)
                        || self.asked_late(&keys[lo..hi], i - lo, len)));
            // "Never share your seed phrase", "Do not include your password": a warning.
            // A label undoes only a prohibited request ("não informe sua senha").
            let cue_ok = cue_ok
                && if role == Role::Label {
                    !self.prohibited(&keys[lo..hi], i - lo)
                } else {
                    !self.negated(&keys[lo..hi], i - lo, len)
                };
            if homoglyph_ok && cue_ok {
                return (Some(term), suppressed_seen);
            }
            i += 1;
        }
        (None, suppressed_seen)
    }

    /// The longest sequence starting at `keys[i]`: `(term or benign, words covered)`.
    fn match_at(
        &self,
        keys: &[&str],
        i: usize,
        index: &Index,
        skeletons_only: bool,
    ) -> Option<(Option<usize>, usize)> {
        let mut best: Option<(Option<usize>, usize)> = None;
        let consider = |seq: &Seq, best: &mut Option<(Option<usize>, usize)>| {
            let n = seq.rest.len();
            let fits = i + 1 + n <= keys.len()
                && keys[i + 1..i + 1 + n]
                    .iter()
                    .zip(&seq.rest)
                    .all(|(k, p)| p.fits(k));
            if fits && best.is_none_or(|(_, l)| n + 1 > l) {
                *best = Some((seq.term, n + 1));
            }
        };
        let next = keys.get(i + 1).copied();
        for head in self.heads(keys[i]) {
            if let Some(seqs) = index.singles.get(head) {
                for seq in seqs {
                    consider(seq, &mut best);
                }
            }
            if let (Some(pairs), Some(next)) = (index.pairs.get(head), next) {
                // The forms a second word may take (`Pat::fits`): as written, without
                // trailing digits, without a plural `s`.
                let forms = [Some(next), strip_digits(next), plural_of(next)];
                for (n, form) in forms.into_iter().enumerate() {
                    let Some(form) = form else { continue };
                    if forms[..n].contains(&Some(form)) {
                        continue;
                    }
                    for seq in pairs.get(form).into_iter().flatten() {
                        consider(seq, &mut best);
                    }
                }
            }
            if skeletons_only {
                continue;
            }
            if let Some(key) = first_chars(head, 3) {
                for (stem, seq) in self.stems.get(key).into_iter().flatten() {
                    if head.starts_with(stem.as_str()) {
                        consider(seq, &mut best);
                    }
                }
            }
        }
        if best.is_some() || skeletons_only {
            return best;
        }
        let word = keys[i].as_bytes();
        let tail = [*word.get(word.len().checked_sub(2)?)?, *word.last()?];
        self.suffixes
            .get(&tail)?
            .iter()
            .find(|(s, _)| word.len() > s.len() && word.ends_with(s.as_bytes()))
            .map(|(_, t)| (Some(*t), 1))
    }

    /// The forms of one word a term may start with: itself, without trailing digits,
    /// without a glued clitic prefix.
    fn heads<'k>(&'k self, word: &'k str) -> impl Iterator<Item = &'k str> + 'k {
        let digits = word
            .as_bytes()
            .last()
            .is_some_and(u8::is_ascii_digit)
            .then(|| strip_digits(word))
            .flatten();
        // Clitics are Arabic-, Hebrew- and Persian-script prefixes: never on an ASCII word.
        let clitic = (!word.is_ascii())
            .then(|| {
                self.ctx.clitics.iter().find_map(move |c| {
                    word.strip_prefix(c.as_str())
                        .filter(|rest| rest.chars().count() >= 2)
                })
            })
            .flatten();
        std::iter::once(word).chain(digits).chain(clitic)
    }

    /// A label (one sentence of it) that asks about the secret at `keys[i..i + len]`, not
    /// for it: opened by a head noun with words between ("Reason for revoking the token",
    /// "Date the PIN was issued"; "Team API token" is the team's token), or a question with
    /// an interrogative of circumstance, first ("When did you last change your password?")
    /// or, in languages that place it inside, anywhere outside the term ("Şifrenizi en son
    /// ne zaman değiştirdiniz?"), or opened by one of things or persons followed by another
    /// noun than the secret ("Which app generates your 2FA codes?", "Who should own the
    /// deploy key?"; "What is your PIN?" and "Who was your first teacher?" ask for it, and
    /// "What you type after your username" is no question). A card's expiry is itself a
    /// date and stays asked.
    fn label_about(
        &self,
        keys: &[&str],
        (i, len, term): (usize, usize, usize),
        question: bool,
    ) -> bool {
        let ctx = &self.ctx;
        if self.terms[term].category == Category::CardExpiry {
            return false;
        }
        let first = keys[0];
        // "Name and password" names two things; "Name of the password" one of its properties;
        // "Owner's SSN" is the owner's.
        if i >= 2
            && ctx.heads.contains(first)
            && keys[1] != "s"
            && !keys[1..i].iter().any(|w| ctx.conjunctions.contains(*w))
        {
            return true;
        }
        if self.relative_clause(keys, i) {
            return true;
        }
        self.question_about(keys, (i, len, term), question, false)
    }

    /// The questions of [`SecretLexicon::label_about`]. In prose only those of circumstance
    /// and those a copula opens ("What is this token for?" describing a note field): a
    /// question there that names another noun first still asks by context ("What end date
    /// is printed on your debit card?").
    fn question_about(
        &self,
        keys: &[&str],
        (i, len, term): (usize, usize, usize),
        question: bool,
        prose: bool,
    ) -> bool {
        let ctx = &self.ctx;
        let first = keys[0];
        // A label opened by an interrogative of circumstance asks its question without the
        // mark ("Где токен оказался в открытом доступе"), unless it also asks to type ("When
        // prompted, enter the PIN").
        let question = question
            || (!prose
                && keys[..i]
                    .iter()
                    .find(|w| !ctx.linkers.contains(**w))
                    .is_some_and(|w| ctx.circumstances.contains(*w))
                && !keys
                    .iter()
                    .any(|w| ctx.cues.contains(*w) && !ctx.linkers.contains(*w)));
        if !question || self.terms[term].category == Category::CardExpiry {
            return false;
        }
        // A yes/no question label names the secret as its topic: "Do you use the same
        // password anywhere else?", "Have you changed your PIN since?" (but "Could you enter
        // your PIN?" asks; in prose the next sentence may ask: "Did you rotate your API
        // key? Paste the new one.").
        if !prose
            && i > 0
            && ctx.auxiliaries.contains(first)
            && !keys
                .iter()
                .any(|w| ctx.cues.contains(*w) && !ctx.linkers.contains(*w))
        {
            return true;
        }
        if self.circumstance_question(keys, i, term, question) {
            return true;
        }
        let outside = keys[..i].iter().chain(&keys[i + len..]);
        if outside
            .into_iter()
            .any(|w| ctx.circumstances_late.contains(*w))
        {
            return true;
        }
        if i == 0 || !ctx.questions.contains(first) {
            return false;
        }
        // "What's your online banking password?" asks for it, whatever modifies it; "What
        // is this token for?" asks its purpose, and "Who will hold the admin credentials?"
        // names another verb's object: past the copulas an article, a possessive or the term
        // itself must come first.
        if keys.get(1).is_some_and(|w| ctx.copulas.contains(*w)) {
            let next = (1..i).find(|&j| !ctx.copulas.contains(keys[j]));
            let verb_between =
                next.is_some_and(|j| !(ctx.linkers.contains(keys[j]) || is_number(keys[j])));
            return verb_between
                || (i + len + 1 == keys.len() && ctx.linkers.contains(keys[i + len]));
        }
        // A label so opened asks about the secret whatever comes between ("Which service is
        // this password for?"); in prose, when the interrogative's own noun comes first, the
        // question asks for that: "Which app generates your 2FA codes?" (not "What code did
        // we just text you?").
        let mut between = keys[1..i]
            .iter()
            .filter(|w| !(ctx.linkers.contains(**w) || is_number(w)));
        if prose {
            between
                .next()
                .is_some_and(|w| !ctx.cues.contains(*w) && !ctx.auxiliaries.contains(*w))
        } else {
            between.next().is_some()
        }
    }

    /// A label that opens with what its field holds, then a relative clause holding the term
    /// ("CI pipeline that will use this token", "Host where the private key is installed"):
    /// the field holds the opening noun. Only when that noun names content or is a head noun
    /// (not "The number that appears on your card"), with no conjunction or request cue in
    /// the label.
    fn relative_clause(&self, keys: &[&str], i: usize) -> bool {
        let ctx = &self.ctx;
        let Some(r) = (1..i).find(|&j| ctx.relatives.contains(keys[j])) else {
            return false;
        };
        let head = &keys[..r];
        head.iter()
            .any(|w| ctx.content.contains(*w) || ctx.heads.contains(*w))
            && !head.iter().any(|w| ctx.blank.contains(*w))
            && !keys.iter().any(|w| {
                ctx.conjunctions.contains(*w)
                    || (ctx.cues.contains(*w) && !ctx.linkers.contains(*w))
            })
    }

    /// A question opened by an interrogative of circumstance, with the term after it ("When
    /// did you last change your password?"): about the secret. A card's expiry is itself a
    /// date and stays asked. The interrogative may follow a preposition or an article ("À quand remonte … votre
    /// mot de passe ?").
    fn circumstance_question(&self, keys: &[&str], i: usize, term: usize, question: bool) -> bool {
        question
            && keys[..i]
                .iter()
                .find(|w| !self.ctx.linkers.contains(**w))
                .is_some_and(|w| self.ctx.circumstances.contains(*w))
            && self.terms[term].category != Category::CardExpiry
    }

    fn suppressed(
        &self,
        keys: &[&str],
        (i, len, term): (usize, usize, usize),
        role: Role,
        question: bool,
    ) -> bool {
        let ctx = &self.ctx;
        // "Create an API key" (the server creates it) is about a key; a field titled
        // "Create a password" asks for one.
        if role != Role::Label {
            let before = i.checked_sub(1).and_then(|j| keys.get(j));
            let skip_linkers = keys[..i]
                .iter()
                .rev()
                .take(4)
                .find(|w| !ctx.linkers.contains(**w));
            let acted = [before, skip_linkers, keys.get(i + len)]
                .into_iter()
                .flatten()
                .any(|w| ctx.actions.contains(*w));
            // "Create a personal access token and paste it here": made, then asked for.
            let asked_after = keys[i + len..].iter().any(|w| {
                ctx.cues.contains(*w) && !ctx.linkers.contains(*w) && !ctx.weak_cues.contains(*w)
            });
            // Sending is what makes a `needs` term a secret ("we sent you an SMS").
            if acted && !asked_after && self.terms[term].needs.is_empty() {
                return true;
            }
        }
        // A card's or an account's number qualified by the part that identifies it: "Last 4
        // digits of your account number", "Kontonummer (letzte 4 Stellen)" — not "Full
        // account number (not just the last 4)".
        let partial = |p: &Vec<String>| {
            keys.windows(p.len()).enumerate().any(|(k, w)| {
                w.iter().eq(p.iter())
                    && !keys[k.saturating_sub(3)..k]
                        .iter()
                        .any(|n| ctx.negations.contains(*n))
            })
        };
        if matches!(self.terms[term].category, Category::Card | Category::Bank)
            && ctx.partial.iter().any(|p| !p.is_empty() && partial(p))
        {
            return true;
        }
        // A request placed elsewhere or later, with no place here named: "Next, we'll ask
        // for your Social Security Number on a secure page", "You'll enter the actual
        // credentials on Snowflake's own page in the next step".
        // Read within twelve words of the term, so that a long run of text costs linear time.
        let near = &keys[i.saturating_sub(12)..(i + len + 12).min(keys.len())];
        if role != Role::Label
            && ctx
                .deferred
                .iter()
                .any(|p| !p.is_empty() && near.windows(p.len()).any(|w| w.iter().eq(p.iter())))
            && !near.iter().any(|w| ctx.place_cues.contains(*w))
        {
            return true;
        }
        // "password policy", "password min length" — but not "Password (min 8 characters)",
        // where the meta word counts the characters of the requested secret.
        // Nor where it shows the requested value's shape: "recovery codes (format
        // xxxxx-xxxxx)".
        let counted = keys
            .get(i + len + 1)
            .is_some_and(|w| is_number(w) || is_placeholder(w));
        // Past a postposition the property follows its possessor: "टोकन का स्वामी" (the
        // token's owner), "ٹوکن کا مالک".
        // Past a copula, what is said of the term: "what the secret is used for", "the
        // token will be rotated" (skipped up to twice: "will be").
        let mut next = i + len;
        while next < i + len + 2 && keys.get(next).is_some_and(|w| ctx.copulas.contains(*w)) {
            next += 1;
        }
        let after = match keys.get(next) {
            Some(w) if ctx.postpositions.contains(*w) => keys.get(next + 1),
            w => w,
        };
        if !counted && after.is_some_and(|w| ctx.meta_after.contains(*w)) {
            return true;
        }
        if role == Role::Label && self.label_about(keys, (i, len, term), question) {
            return true;
        }
        // In prose too a question can ask about the secret: "Where did you hear that we'd
        // need your Social Security number?", "What is this token for?".
        if role != Role::Label && self.question_about(keys, (i, len, term), question, true) {
            return true;
        }
        // A request whose object is something else: "Enter a name for your API key", "Tell
        // us why you're revoking this token".
        if role != Role::Label
            && self.terms[term].category != Category::CardExpiry
            && self.object_elsewhere(keys, i)
        {
            return true;
        }
        // So does a relative clause after what the text is about: "Hostname of the server
        // whose admin password will be rotated", "A description that helps your team
        // understand what this secret holds".
        if role != Role::Label && self.relative_clause(keys, i) {
            return true;
        }
        // In a label, a term followed by what a field holds is that thing's name: "API key
        // owner", `token_audience`, "Password reset email", not the key.
        if role == Role::Label
            && keys
                .get(i + len)
                .is_some_and(|w| ctx.content.contains(*w) && !ctx.blank.contains(*w))
        {
            return true;
        }
        let mut j = i;
        let mut skipped = 0;
        while j > 0 {
            j -= 1;
            let w = keys[j];
            if ctx.conjunctions.contains(w) {
                // "Nombre y contraseña": the name and the password, not the password's name.
                return false;
            }
            let number = is_number(w);
            if (ctx.linkers.contains(w) || number) && skipped < 3 {
                skipped += 1;
                continue;
            }
            // In prose a request after the term wins: "Label the API key you will paste"
            // asks for the key, "Label of the API key" does not.
            let after = (i + len + 3).min(keys.len());
            let requested = role != Role::Label
                && keys[i + len..after]
                    .iter()
                    .any(|w| ctx.cues.contains(*w) && !ctx.linkers.contains(*w));
            // In a label a head noun joined to the term by a preposition names what the
            // field holds: "Kubernetes secret name for the registry credentials" (but "Team
            // API token", with nothing between, is the team's token; a card's expiry is a
            // date itself: "Date de fin de validité de votre carte").
            let head = role == Role::Label
                && skipped > 0
                && ctx.heads.contains(w)
                // A possessive is no preposition: "Owner's SSN" is the owner's.
                && keys.get(j + 1) != Some(&"s")
                && self.terms[term].category != Category::CardExpiry;
            return (ctx.meta_before.contains(w) || head) && !requested;
        }
        false
    }

    /// Does the request before the term ask for something else the text names, the term
    /// being its topic? The first word after the
    /// verb, articles and numbers aside, names what the user types: a content word ("Enter
    /// a name for your API key", "Indícanos el nombre que quieres dar a la nueva clave de
    /// API") or an interrogative of circumstance ("Tell us why you're revoking this
    /// token"; not a card's expiry, which "when" asks for). A conjunction before the term
    /// adds it as a second object: "Enter your email address and password" asks for both.
    fn object_elsewhere(&self, keys: &[&str], i: usize) -> bool {
        let ctx = &self.ctx;
        let verb = |w: &str| ctx.cues.contains(w) && !ctx.linkers.contains(w);
        let skip = |w: &str| ctx.linkers.contains(w) || is_number(w);
        let lo = i.saturating_sub(8);
        let Some(v) = keys[lo..i].iter().rposition(|w| verb(w)).map(|v| v + lo) else {
            return false;
        };
        let object = |v: usize| {
            let between = &keys[v + 1..i];
            if between.iter().any(|w| ctx.conjunctions.contains(*w)) {
                return None;
            }
            let o = between.iter().position(|w| !skip(w))?;
            Some((between[o], &between[o + 1..]))
        };
        // The term inside a clause of circumstance whose verb only needs it: "Describe why
        // this integration needs a token" (not "When prompted, enter your PIN").
        let clause = ctx.weak_cues.contains(keys[v])
            && keys[v.saturating_sub(4)..v]
                .iter()
                .any(|w| ctx.circumstances.contains(*w));
        let Some((first, rest)) = object(v) else {
            return clause;
        };
        // A content word joined to the term by a preposition only ("a name for your API
        // key"); one right before it modifies it ("your email password" is a password).
        let content = ctx.content.contains(first)
            && !ctx.blank.contains(first)
            && !rest.is_empty()
            && rest.iter().all(|w| skip(w));
        content || ctx.circumstances.contains(first) || clause
    }

    /// A request cue within three words before the term, or five after it (verb-final
    /// languages: `şifrenizi girin`, `पासवर्ड दर्ज करें`). `owned`: an owner's possessive may
    /// stand between (not before a card's expiry, which a token has too).
    fn cued(&self, keys: &[&str], i: usize, len: usize, owned: bool) -> bool {
        let ctx = &self.ctx;
        // After it: verb-final clauses put the request last, past a relative clause ("টোকেন
        // তৈরি করেছেন সেটি পেস্ট করুন", paste the token you created).
        let after = (i + len + 5).min(keys.len());
        if keys[i + len..after].iter().any(|w| ctx.cues.contains(*w)) {
            return true;
        }
        // Three words back, not counting articles, possessives and numbers: "Type your
        // 4-digit banking PIN", "Bitte geben Sie das soeben erzeugte Token ein"; an owner's
        // possessive counts as one word ("Type the Wi-Fi network's password").
        let mut counted = 0;
        let mut j = i;
        while j > 0 {
            if let Some(owner) = self.owner_before(keys, j).filter(|_| owned) {
                j = owner;
                counted += 1;
            } else {
                j -= 1;
                let w = keys[j];
                if ctx.cues.contains(w) {
                    return true;
                }
                if !(ctx.linkers.contains(w) || is_number(w)) {
                    counted += 1;
                }
            }
            if counted >= 3 {
                return false;
            }
        }
        false
    }

    /// A request cue, a possessive included but not a weak cue ("Forgot my password, need a
    /// reset link"), within six words before the term (numbers not
    /// counted: "Your 12-digit Aadhaar number", "Your Kaiser Permanente sign-in password") or
    /// three after it.
    fn cued_near(&self, keys: &[&str], i: usize, len: usize) -> bool {
        let cue = |w: &&str| self.ctx.cues.contains(*w) && !self.ctx.weak_cues.contains(*w);
        let after = (i + len + 3).min(keys.len());
        keys[i + len..after].iter().any(cue)
            || keys[i.saturating_sub(12)..i]
                .iter()
                .rev()
                .filter(|w| !is_number(w))
                .take(6)
                .any(cue)
    }

    /// A request verb (a cue that is not a linker, so not "your") within six words before
    /// the term or three after it. In the texts of choices and checkboxes (`typed`), only a
    /// verb of typing: "Choose how to receive your code", "Require an admin PIN to exit"
    /// name the secret; the same weak cues in a message ("PIN required") ask for it.
    fn verb_cued(&self, keys: &[&str], i: usize, len: usize, typed: bool) -> bool {
        // In a choice's or checkbox's text a weak cue counts only with a place to type:
        // "write one of your backup codes in the Notes field", not "write it on paper".
        // "I copied my session cookie into the Data field" reports the typing it asks for.
        let placed = typed && keys.iter().any(|w| self.ctx.place_cues.contains(*w));
        let verb = |w: &&str| {
            (self.ctx.cues.contains(*w)
                && !self.ctx.linkers.contains(*w)
                && !(typed && !placed && self.ctx.weak_cues.contains(*w)))
                || (placed && self.ctx.done_cues.contains(*w))
        };
        // Verb-final clauses of other scripts put the request past the object's words:
        // "رمز عبور حساب کاربری خود را وارد نمایید" (five after).
        let reach = if keys[i].is_ascii() { 3 } else { 5 };
        let after = (i + len + reach).min(keys.len());
        // "No passwords are needed": what follows the term is said of none.
        let none = i > 0 && self.ctx.none_here.contains(keys[i - 1]);
        if !none && keys[i + len..after].iter().any(verb) {
            return true;
        }
        if self.passive_request(keys, i, len, &|w| verb(&w)) {
            return true;
        }
        // Six words back, not counting numbers: "enter characters 2, 5 and 7 of your
        // memorable word"; a term coordinated with an earlier object has the window again
        // from the conjunction ("provide your Auth0 application's client ID and client
        // secret"). A request of several words counts as one ("Key in the consumer secret",
        // "Could you let us know the SMTP password").
        let mut counted = 0;
        let mut coordinated = false;
        let from = i.saturating_sub(18);
        for (k, w) in keys[from..i].iter().enumerate().rev() {
            if verb(w) || (!typed && self.phrasal_at(&keys[..i], from + k)) {
                return true;
            }
            if !coordinated && self.ctx.conjunctions.contains(*w) {
                coordinated = true;
                counted = 0;
            } else if !is_number(w) {
                counted += 1;
                if counted >= 6 {
                    return false;
                }
            }
        }
        false
    }

    /// A passive request closing the term's clause, within eight words: "The current
    /// password for your Jira Cloud account is needed", "… has to be entered below"; not
    /// "No passport number is needed", "Why is it still needed?".
    fn passive_request(
        &self,
        keys: &[&str],
        i: usize,
        len: usize,
        verb: &dyn Fn(&str) -> bool,
    ) -> bool {
        let ctx = &self.ctx;
        let far = (i + len + 9).min(keys.len());
        // A negation counts from just before the term to the request ("Your PIN is not
        // needed"), not in a later clause ("… is needed; nothing will be charged"); the
        // sentence is read for a denial only once a request is found.
        let requested = (i + len..far.saturating_sub(1)).any(|k| {
            ctx.copulas.contains(keys[k])
                && verb(keys[k + 1])
                && !keys[i.saturating_sub(2)..k + 2]
                    .iter()
                    .any(|w| ctx.negations.contains(*w))
        });
        requested
            && !(i > 0 && ctx.none_here.contains(keys[i - 1]))
            && !keys.iter().any(|w| ctx.circumstances.contains(*w))
    }

    /// Does the question close, within three words of the term, on an interrogative of the
    /// languages that put it last ("client secret değeri nedir?", "আপনার app_secret কী?")?
    /// A term that opens the question is its subject however long the rest: "Mã OTP mà ngân
    /// hàng vừa gửi đến số điện thoại của bạn là gì?", "رمز عبور حساب کاربری شما در سامانه چیست؟".
    fn asked_late(&self, keys: &[&str], i: usize, len: usize) -> bool {
        let end = keys.len();
        let opens = keys[..i].iter().all(|w| self.ctx.linkers.contains(*w));
        end > i + len
            && (end <= i + len + 3 || (opens && end <= i + len + 14))
            && keys[end.saturating_sub(2)..]
                .iter()
                .any(|w| self.ctx.questions_late.contains(*w))
    }

    /// Does a request of several words open at `keys[k]` (`key in`, `let us know`), a
    /// pronoun allowed after its first word ("Pop it in")?
    fn phrasal_at(&self, keys: &[&str], k: usize) -> bool {
        let ctx = &self.ctx;
        let fits = |rest: &[String], at: usize| {
            keys.get(at..at + rest.len())
                .is_some_and(|w| w.iter().zip(rest).all(|(a, b)| *a == b.as_str()))
        };
        ctx.phrasal_cues.get(keys[k]).is_some_and(|rests| {
            rests.iter().any(|rest| {
                fits(rest, k + 1)
                    || (keys.get(k + 1).is_some_and(|w| ctx.back_refs.contains(*w))
                        && fits(rest, k + 2))
            })
        })
    }

    /// Is the term at `i` what an interrogative and a copula right before it ask for, past
    /// articles, possessives and numbers ("Cuál es su PIN", "Quel est votre code", "Was ist
    /// Ihre PIN")?
    /// Two modifiers may stand between ("Was ist Ihre aktuelle PIN?"), and an owner's
    /// possessive counts as one, whatever the owner's own words ("What is the Wi-Fi
    /// network's password?"), unless the term is a card's expiry (a token has one too).
    fn asks_what(&self, keys: &[&str], i: usize, owned: bool) -> bool {
        let ctx = &self.ctx;
        let mut j = i;
        let (mut skipped, mut modifiers) = (0, 0);
        while j > 0 && skipped < 4 {
            let w = keys[j - 1];
            if let Some(owner) = self.owner_before(keys, j).filter(|_| owned) {
                j = owner;
                modifiers += 1;
            } else if ctx.copulas.contains(w) || ctx.questions.contains(w) {
                break;
            } else if ctx.linkers.contains(w) || is_number(w) {
                j -= 1;
            } else if modifiers < 2 && !ctx.conjunctions.contains(w) {
                j -= 1;
                modifiers += 1;
            } else {
                break;
            }
            skipped += 1;
        }
        j >= 2 && ctx.copulas.contains(keys[j - 1]) && ctx.questions.contains(keys[j - 2])
    }

    /// Where the owner of a possessive ending right before `keys[j]` opens ("the Wi-Fi
    /// network's" → at `wi`): up to three words back, to the article, possessive or copula
    /// before them. `None` when `keys[j - 1]` is no possessive `'s` ("what's" is a copula).
    fn owner_before(&self, keys: &[&str], j: usize) -> Option<usize> {
        let ctx = &self.ctx;
        if j < 2 || keys[j - 1] != "s" || ctx.questions.contains(keys[j - 2]) {
            return None;
        }
        let mut k = j - 2;
        let stop = k.saturating_sub(2);
        while k > stop
            && !ctx.linkers.contains(keys[k - 1])
            && !ctx.copulas.contains(keys[k - 1])
            && !ctx.cues.contains(keys[k - 1])
        {
            k -= 1;
        }
        Some(k)
    }

    /// Does the sentence after the term's open with a request for it by a pronoun: "We
    /// texted you a code. Enter it below", "… Please paste it here"? A request verb within
    /// its first three words, the pronoun right after (a linker between at most).
    fn asked_back(&self, next: &[&str]) -> bool {
        let ctx = &self.ctx;
        let verb = |w: &str| {
            ctx.cues.contains(w) && !ctx.linkers.contains(w) && !ctx.weak_cues.contains(w)
        };
        // Not a request for something of it: "Donnez-lui un nom", "Give it a name".
        let names_other = |rest: &[&str]| {
            rest.iter()
                .filter(|w| !ctx.linkers.contains(**w))
                .take(3)
                .any(|w| ctx.content.contains(*w) && !ctx.blank.contains(*w))
        };
        next.iter().take(3).enumerate().any(|(k, w)| {
            let after = &next[k + 1..];
            // The pronoun may be glued to the verb: "Pégalo aquí", "Inseriscilo qui sotto".
            (verb(w) || self.phrasal_at(next, k))
                && (ctx.back_refs.contains(*w)
                    || after.iter().take(2).any(|p| ctx.back_refs.contains(*p)))
                && !names_other(after)
        })
    }

    /// A negation before the term with at most two other words between, linkers aside:
    /// "never share my login credentials", "do not include your seed phrase", "we will
    /// never ask for your PIN"; not "don't worry, just enter your password".
    fn negated(&self, keys: &[&str], i: usize, len: usize) -> bool {
        // Verb-final clauses negate after the verb, closing the sentence within three words
        // (eight for the negative imperatives listed as `negations_after`, which end the
        // sentence or come right before its verb): "আপনার পাসওয়ার্ড
        // লিখবেন না" (do not write your password), "पासवर्ड दर्ज न करें". Only in scripts of
        // the verb-final languages: a Latin word closing an English sentence after the term
        // ("printed next to the signature strip") is no negation of it; Turkish, written in
        // Latin letters, lists its own (`negations_after`: "Şifrenizi buraya yazmayın").
        let end = keys.len();
        let tail = keys.get(i + len..).unwrap_or_default();
        let closing = |words: usize, negation: &dyn Fn(&str) -> bool| {
            end > i + len && end <= i + len + words && tail.iter().any(|w| negation(w))
        };
        // A negative imperative closes the sentence (last word or before its verb), past a
        // list of what not to write: "कृपया यहाँ PIN, OTP या कार्ड नंबर न लिखें".
        let imperative = end > i + len
            && end <= i + len + 8
            && keys[end.saturating_sub(2)..]
                .iter()
                .any(|w| self.ctx.negations_after.contains(*w));
        if closing(3, &|w| !w.is_ascii() && self.ctx.negations.contains(w)) || imperative {
            return true;
        }
        // "No password here", "no PIN needed in this field": "no" right before the term
        // negates it when a place follows (not "No PIN? Enter your password").
        let none_before = i > 0 && self.ctx.none_here.contains(keys[i - 1]);
        let placed_after = keys[i + len..(i + len + 3).min(end)]
            .iter()
            .any(|w| self.ctx.place_cues.contains(*w));
        if none_before && placed_after {
            return true;
        }
        let mut others = 0;
        for w in keys[i.saturating_sub(8)..i].iter().rev() {
            if self.ctx.negations.contains(*w) {
                return true;
            }
            if !self.ctx.linkers.contains(*w) {
                others += 1;
                if others > 2 {
                    break;
                }
            }
        }
        self.prohibited(keys, i)
    }

    /// A prohibited request covers its whole list: "Do not paste API keys, tokens or the
    /// contents of .env files", "never share my MFA codes or password" — a negation up to
    /// three words before a request verb ("Jangan sekali-kali masukkan nombor kad"), with no
    /// other request verb up to the term. A negating verb ("redact API keys and
    /// authorization headers") covers its list too. Labels read it as well: "Conte mais (não
    /// informe sua senha)".
    fn prohibited(&self, keys: &[&str], i: usize) -> bool {
        let verb = |w: &str| self.ctx.cues.contains(w) && !self.ctx.linkers.contains(w);
        let negation = |w: &str| self.ctx.negations.contains(w);
        let Some(v) = keys[..i].iter().rposition(|w| verb(w) || negation(w)) else {
            return false;
        };
        negation(keys[v]) || keys[v.saturating_sub(3)..v].iter().any(|w| negation(w))
    }

    /// Terms of scripts written without spaces: the first one asked for, and whether a term
    /// was found only as a property of a secret (a property word right before or after it:
    /// `จุดประสงค์ของโทเคน`, "the token's purpose").
    fn scan_compact(&self, text: &str, role: Role) -> (Option<usize>, bool) {
        let Some(ac) = self.compact.as_ref() else {
            return (None, false);
        };
        let question = text.contains(['?', '？', '؟']);
        let c = text::compact(text);
        let mut property = false;
        // Where the last negated term ended: a negation covers its list ("请勿在此填写任何密码或
        // 验证码", "密码、验证码": the separator is gone once compacted).
        let mut negated_until: Option<usize> = None;
        for m in ac.find_iter(&c) {
            let kind = self
                .compact_kinds
                .get(m.pattern().as_usize())
                .copied()
                .flatten();
            let Some(term) = kind else {
                // A `suppress` phrase names a property of the secret it holds (`令牌的用途`):
                // in a label, the field is about that secret.
                property |= role == Role::Label;
                continue;
            };
            let needs_cue = match role {
                Role::Label => false,
                Role::Prose => self.terms[term].strength == Strength::Weak,
                Role::Hidden | Role::Asked => true,
                Role::Cued => {
                    // A possessive is a cue here, as it is for weak terms in prose.
                    if !self.compact_cued(&c, m.start(), m.end()) {
                        continue;
                    }
                    false
                }
            };
            if needs_cue && !self.compact_cued(&c, m.start(), m.end()) {
                continue;
            }
            let listed = negated_until.is_some_and(|end| {
                c.get(end..m.start())
                    .is_some_and(|gap| gap.is_empty() || self.ctx.conjunctions.contains(gap))
            });
            if role != Role::Label && (listed || self.compact_negated(&c, m.start(), m.end())) {
                negated_until = Some(m.end());
                continue;
            }
            if role == Role::Label
                && !self.compact_cued(&c, m.start(), m.end())
                && (self.compact_property(&c, m.start(), m.end())
                    || (question && self.compact_circumstance(&c, m.start(), m.end())))
            {
                property = true;
                continue;
            }
            return (Some(term), false);
        }
        (None, property)
    }

    /// An interrogative of circumstance of a compact script outside the term
    /// (`パスワードをいつ変更しましたか`): with a question mark, the label asks about it.
    fn compact_circumstance(&self, c: &str, start: usize, end: usize) -> bool {
        self.compact_circumstances.as_ref().is_some_and(|ac| {
            ac.find_iter(c)
                .any(|m| m.end() <= start || m.start() >= end)
        })
    }

    /// A property word of a compact script right before or after the term, or with only a
    /// linker between (`โทเคน` in `จุดประสงค์ของโทเคน`, `用途` in `令牌的用途`). Labels
    /// without a request cue only: prose and asks join sentences once separators are gone
    /// ("请输入密码（长度…）").
    fn compact_property(&self, c: &str, start: usize, end: usize) -> bool {
        let Some(ac) = &self.compact_meta else {
            return false;
        };
        let linked = |gap: &str| gap.is_empty() || self.compact_linkers.iter().any(|l| l == gap);
        ac.find_iter(c).any(|m| {
            if self.compact_meta_after[m.pattern().as_usize()] {
                m.start() >= end && c.get(end..m.start()).is_some_and(linked)
            } else {
                m.end() <= start && c.get(m.end()..start).is_some_and(linked)
            }
        })
    }

    /// A negation just before the term or, for verb-final languages, just after it
    /// (`请勿分享密码`, `パスワードを入力しないで`): a warning, not a request.
    fn compact_negated(&self, c: &str, start: usize, end: usize) -> bool {
        // Eight letters before the term; after it sixteen: a verb phrase may stand between
        // ("비밀번호를 닉네임으로 사용하지 마세요").
        let Some(ac) = &self.compact_negations else {
            return false;
        };
        let (lo, hi) = letters_around(c, start, end, (8, 16));
        ac.find_iter(c)
            .any(|m| (m.end() <= start && m.end() >= lo) || (m.start() >= end && m.start() <= hi))
    }

    /// A Latin term inside text of a script without spaces (`OTP 카드 수량`), named by a
    /// suppressor of that script that contains it (`otp카드수량`).
    fn compact_suppressed(&self, text: &str, term: usize) -> bool {
        if !has_compact_char(text) {
            return false;
        }
        let Some(ac) = &self.compact else {
            return false;
        };
        let phrase = text::compact(&self.terms[term].phrase);
        let c = text::compact(text);
        ac.find_iter(&c).any(|m| {
            self.compact_kinds.get(m.pattern().as_usize()) == Some(&None)
                && c[m.start()..m.end()].contains(phrase.as_str())
        })
    }

    fn compact_cued(&self, c: &str, start: usize, end: usize) -> bool {
        let (lo, hi) = letters_around(c, start, end, (8, 8));
        self.compact_cues
            .find_iter(c)
            .any(|m| m.end() >= lo && m.start() <= hi)
    }
}

/// The byte bounds of `letters.0` letters before `c[start..end]` and `letters.1` after it.
/// A letter is a character, but a Hangul syllable, which folding decomposes into two or
/// three jamo, counts once ("를 아래에" is four letters, not ten), and so does a word of
/// Latin letters or digits ("인증키(Encoding)를 붙여넣어").
fn letters_around(c: &str, start: usize, end: usize, letters: (usize, usize)) -> (usize, usize) {
    // Where a letter starts: not inside a syllable, not inside an ASCII word.
    let starts = |prev: Option<char>, ch: char| {
        let jamo = matches!(ch, '\u{1160}'..='\u{11FF}');
        let in_word = ch.is_ascii_alphanumeric() && prev.is_some_and(|p| p.is_ascii_alphanumeric());
        !(jamo || in_word)
    };
    let before = &c[..start];
    let lo = before
        .char_indices()
        .rev()
        .filter(|&(i, ch)| starts(before[..i].chars().next_back(), ch))
        .nth(letters.0.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let after = &c[end..];
    let mut prev = c[..end].chars().next_back();
    let hi = after
        .char_indices()
        .filter(|&(_, ch)| {
            let first = starts(prev, ch);
            prev = Some(ch);
            first
        })
        .nth(letters.1)
        .map_or(c.len(), |(i, _)| end + i);
    (lo, hi)
}

/// A word of digits only ("4" of "4-digit", a year): skipped where cues and role words are
/// counted.
/// A placeholder for a value's characters: `xxxxx`, `nnnn`, `9999`.
fn is_placeholder(w: &str) -> bool {
    let mut chars = w.chars();
    chars.next().is_some_and(|c| {
        matches!(c, 'x' | 'n' | 'a' | '9' | '0') && w.len() >= 3 && chars.all(|d| d == c)
    })
}

fn is_number(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}

/// Lower-case Cyrillic and Greek letters that look like Latin ones (after folding): a word
/// made only of these can be a Latin word spelt in another script.
const LATIN_LOOKALIKES: &str = "аеорсухіјѕԁһӏԛԝѡьвкмнтποιкνρυχαεηβτ";

/// Worth a confusable skeleton: a word mixing scripts (`раssword`), or one written only in
/// letters that look Latin (`раѕѕwоrd` is not possible, `рор` is). Real words of other
/// scripts are left alone, which also keeps the skeleton's cost off ordinary text.
fn spoof_candidate(w: &Word) -> bool {
    w.non_latin
        && (mixed_script(&w.folded)
            || w.folded
                .chars()
                .all(|c| c.is_ascii() || LATIN_LOOKALIKES.contains(c)))
}

/// A word mixing letters of several scripts (`раssword`: Cyrillic and Latin).
fn mixed_script(word: &str) -> bool {
    use unicode_script::{Script, UnicodeScript};
    let mut seen: Option<Script> = None;
    for c in word.chars().filter(|c| c.is_alphabetic()) {
        let s = c.script();
        if matches!(s, Script::Common | Script::Inherited) {
            continue;
        }
        match seen {
            None => seen = Some(s),
            Some(p) if p != s => return true,
            Some(_) => {}
        }
    }
    false
}

/// `text` as it displays when it holds a direction override: a right-to-left override
/// (U+202E) run (up to U+202C, U+2069 or the end) displays reversed; so does a
/// left-to-right override (U+202D) run of right-to-left letters, stored backwards to read
/// forwards (LRO + `رورملا ةملك` shows as كلمة المرور). `None` without an override.
fn as_displayed(text: &str) -> Option<String> {
    if !text.contains(['\u{202E}', '\u{202D}']) {
        return None;
    }
    let rtl = |c: &char| matches!(*c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF);
    let mut out = String::with_capacity(text.len());
    let mut run: Vec<char> = Vec::new();
    let mut open: Option<char> = None;
    let flush = |run: &mut Vec<char>, open: Option<char>, out: &mut String| {
        let reverse = open == Some('\u{202E}') || run.iter().any(rtl);
        if reverse {
            out.extend(run.drain(..).rev());
        } else {
            out.extend(run.drain(..));
        }
    };
    for c in text.chars() {
        match c {
            '\u{202E}' | '\u{202D}' => {
                flush(&mut run, open, &mut out);
                open = Some(c);
            }
            '\u{202C}' | '\u{2069}' if open.is_some() => {
                flush(&mut run, open, &mut out);
                open = None;
            }
            _ if open.is_some() => run.push(c),
            _ => out.push(c),
        }
    }
    flush(&mut run, open, &mut out);
    Some(out)
}

/// A word whose case changes in a way camelCase does not: twice or more (`PaSsWoRd`, `cVv`)
/// or a capital run running into small letters (`PASSword`; `APIKey` reads the same).
fn odd_case(text: &str) -> bool {
    // No upper-case letter after a lower-case one, nor three capitals in a row: no game.
    if text.is_ascii()
        && !text
            .as_bytes()
            .windows(2)
            .any(|w| w[1].is_ascii_uppercase() && w[0].is_ascii_alphabetic())
    {
        return false;
    }
    let (mut switches, mut upper_run, mut prev) = (0, 0, None::<bool>);
    for c in text.chars() {
        if !c.is_alphabetic() {
            (switches, upper_run, prev) = (0, 0, None);
            continue;
        }
        let upper = c.is_uppercase();
        if let Some(p) = prev {
            if p != upper {
                switches += 1;
                if switches >= 2 || (!upper && upper_run >= 3) {
                    return true;
                }
            }
        }
        upper_run = if upper { upper_run + 1 } else { 0 };
        prev = Some(upper);
    }
    false
}

/// Can the display, markup or leetspeak passes change `text`? Plain ASCII without a
/// character reference, markup, leetspeak character or a `.`/`-` inside a word cannot:
/// one pass over the bytes spares most labels and sentences the three rewrites. Kept in
/// step with [`as_displayed`] (non-ASCII overrides), [`unmarked`] and [`leet`].
fn may_be_rewritten(text: &str) -> bool {
    let b = text.as_bytes();
    !text.is_ascii()
        || b.iter().enumerate().any(|(i, &c)| match c {
            b'&' | b'<' | b'*' | b'~' | b'`' | b'\\' | b'|' | b'!' | b'@' | b'$' => true,
            b'0'..=b'9' => true,
            b'.' | b'-' => {
                i > 0
                    && b[i - 1].is_ascii_alphanumeric()
                    && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
            }
            _ => false,
        })
}

/// `text` without markup inside words: HTML tags (`<b>`, `<span></span>`), emphasis marks
/// (`*`, `~`, `` ` ``), a `.` or `·` between two letters (`to.ken`) and a hyphen between
/// single characters (`2-F-A`; a hyphen joins real compounds, `may-ari`, and `pass-word`
/// already reads as two words); `None` when there is none.
fn unmarked(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let alnum = |j: usize| b.get(j).is_some_and(u8::is_ascii_alphanumeric);
    // One character between separators (`2-F-A`): nothing else or another hyphen around it.
    let lone = |j: Option<usize>| j.is_none_or(|j| !alnum(j) || b[j] == b'-');
    let dotted = (1..b.len().saturating_sub(1)).any(|i| match b[i] {
        b'.' => b[i - 1].is_ascii_alphabetic() && b[i + 1].is_ascii_alphabetic(),
        b'-' => alnum(i - 1) && alnum(i + 1) && lone(i.checked_sub(2)) && lone(Some(i + 2)),
        _ => false,
    });
    if !dotted && !text.contains(['<', '*', '~', '`', '·']) {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '<' {
            // A tag: up to 40 characters to the next `>`.
            let end = chars[i..].iter().take(42).position(|&x| x == '>');
            if let Some(e) = end.filter(|&e| e > 0 && !chars[i + 1..i + e].contains(&'<')) {
                i += e + 1;
                changed = true;
                continue;
            }
        }
        let between_letters = i > 0
            && chars.get(i + 1).is_some_and(|n| n.is_alphabetic())
            && chars[i - 1].is_alphabetic();
        // `2-F-A`: every part one character long.
        let lone = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_none_or(|x| !x.is_alphanumeric() || *x == '-')
        };
        let spelt = c == '-'
            && i > 0
            && chars[i - 1].is_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric())
            && lone(i.checked_sub(2))
            && lone(Some(i + 2));
        if matches!(c, '*' | '~' | '`') || (matches!(c, '.' | '·') && between_letters) || spelt {
            changed = true;
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    changed.then_some(out)
}

/// The letter a leetspeak character stands for.
fn leet(c: char) -> Option<char> {
    Some(match c {
        '0' => 'o',
        '1' | '!' => 'i',
        '3' => 'e',
        '4' | '@' => 'a',
        '5' | '$' => 's',
        '7' => 't',
        '|' => 'l',
        _ => return None,
    })
}

/// `text` with leetspeak characters inside letter runs replaced (`p@ssw0rd` → `password`,
/// `4pi` → `api`, `C\/V` → `cvv`); `None` when there is none. A run must hold two letters
/// or more, or one among three characters (`4P1`), so numbers and lone symbols stay as
/// they are.
fn unleet(original: &str) -> Option<String> {
    // Letters drawn with two or three characters first (`\/` v, `|<` k, `|\|` n).
    let text = original
        .replace("|\\|", "n")
        .replace("\\/", "v")
        .replace("|<", "k");
    let drawn = text.len() != original.len();
    let chars: Vec<char> = text.chars().collect();
    let in_run = |c: char| c.is_alphanumeric() || leet(c).is_some();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        if !in_run(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && in_run(chars[i]) {
            i += 1;
        }
        let run = &chars[start..i];
        let letters = run.iter().filter(|c| c.is_alphabetic()).count();
        let leety = (letters >= 2 || (letters == 1 && run.len() >= 3))
            && run.iter().any(|c| leet(*c).is_some());
        // In a Cyrillic or Greek word a digit stands for a letter of that script (`пар0ль`).
        let cyrillic = run.iter().any(|c| ('\u{400}'..='\u{4ff}').contains(c));
        let greek = run.iter().any(|c| ('\u{370}'..='\u{3ff}').contains(c));
        let letter = |c: char| match (c, cyrillic, greek) {
            ('0', true, _) => Some('о'),
            ('3', true, _) => Some('з'),
            ('4', true, _) => Some('ч'),
            ('6', true, _) => Some('б'),
            ('@' | '4', false, true) => Some('α'),
            ('0', false, true) => Some('ο'),
            _ => leet(c),
        };
        for &c in run {
            // A rewritten run is lower-cased whole, so `P4SSW0RD` is not split as camelCase.
            match letter(c) {
                Some(l) if leety => out.push(l),
                _ if leety => out.extend(c.to_lowercase()),
                _ => out.push(c),
            }
        }
        changed |= leety;
    }
    // A drawn letter lower-cases the text, so `C\/V` is not split as camelCase.
    (changed || drawn).then(|| if drawn { out.to_lowercase() } else { out })
}

/// The sentence around `words[i..i + len]`: `(first word, end)`.
fn sentence(words: &[Word], i: usize, len: usize) -> (usize, usize) {
    let lo = (1..=i).rev().find(|&k| words[k].stop_before).unwrap_or(0);
    let hi = (i + len..words.len())
        .find(|&k| k > i && words[k].stop_before)
        .unwrap_or(words.len());
    (lo, hi)
}

/// Words with every run of three or more one-letter words joined into one (`p a s s w o r
/// d`, `P-A-S-S-W-O-R-D`, `S.S.N.`); `None` when there is no such run.
fn join_spaced(words: &[Word]) -> Option<Vec<Word>> {
    let single = |w: &Word| {
        let mut chars = w.folded.chars();
        chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none()
    };
    if !words.windows(3).any(|run| run.iter().all(single)) {
        return None;
    }
    let mut out = Vec::with_capacity(words.len());
    let mut changed = false;
    let mut i = 0;
    while i < words.len() {
        let mut j = i;
        while j < words.len() && single(&words[j]) {
            j += 1;
        }
        if j - i >= 3 {
            let folded: String = words[i..j].iter().map(|w| w.folded.as_str()).collect();
            let non_latin = words[i..j].iter().any(|w| w.non_latin);
            let stop_before = words[i].stop_before;
            out.push(Word {
                folded,
                non_latin,
                stop_before,
                asks: words[j - 1].asks,
            });
            changed = true;
            i = j;
        } else {
            out.push(words[i].clone());
            i += 1;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leetspeak_is_undone_inside_words_only() {
        assert_eq!(unleet("p@ssw0rd").as_deref(), Some("password"));
        assert_eq!(unleet("pa$$word").as_deref(), Some("password"));
        assert_eq!(unleet("4pi key").as_deref(), Some("api key"));
        assert_eq!(unleet("P4SSW0RD").as_deref(), Some("password"));
        assert_eq!(unleet("step 1 of 3"), None);
        assert_eq!(unleet("plain"), None);
    }

    #[test]
    fn decorations_markup_and_case_games_are_undone() {
        let lex = SecretLexicon::builtin();
        for spoof in [
            "PASSword for that user",
            "SeEd PhRaSe",
            "cVv",
            "Service account <b>to</b>ken",
            "C<span></span>V<span></span>V",
            "Paste the s**ee**d phr**a**se below",
            "Refresh to.ken",
            "C\u{20dd}V\u{20dd}C\u{20dd}",
            "\u{1f17f}\u{1f178}\u{1f17d} code",
            "C\\/V (back of card)",
            "4P1 K3Y",
            "KΩΔIKOΣ ΠPOΣBAΣHΣ",
            "ΡΙΝ",
            "S.S.N.",
            "\u{202d}رورملا ةملك\u{202c}",
        ] {
            assert!(lex.scan(spoof, Role::Label).is_some(), "{spoof}");
        }
        // What the same transformations must not invent.
        for plain in [
            "Symbol tokena (np. SOL)",
            "Pangalan ng may-ari ng credit card",
            "Library card number",
            "firstName",
            "e.g. 42",
        ] {
            assert!(lex.scan(plain, Role::Label).is_none(), "{plain}");
        }
    }

    #[test]
    fn negations_and_sentence_ends_bound_a_request() {
        let lex = SecretLexicon::builtin();
        for warning in [
            "Do not paste API keys, tokens or the contents of .env files here",
            "I will never share my MFA codes or password with anyone",
            "Redact API keys and Authorization headers before pasting logs",
            "Please don't include your Wi-Fi password",
        ] {
            assert!(lex.scan(warning, Role::Hidden).is_none(), "{warning}");
            assert!(lex.scan(warning, Role::Prose).is_none(), "{warning}");
        }
        assert!(lex
            .scan("Don't worry. Enter your PIN here", Role::Asked)
            .is_some());
        // A property word in the next sentence is not the term's.
        assert!(lex
            .scan("We texted you a code. Type it here", Role::Prose)
            .is_some());
    }

    #[test]
    fn how_a_label_opens_says_whether_it_asks_for_the_secret() {
        let lex = SecretLexicon::builtin();
        for about in [
            "Which service is this password for?",
            "Which app generates your 2FA codes?",
            "When did you last change your password?",
            "Who should own the new deploy key?",
            "Reason for revoking the token",
            "Date the PIN was issued",
            "Comment to attach to the SSH key",
            "Wann haben Sie Ihr Passwort zuletzt geändert?",
            "Motivo del cambio de contraseña",
            "Şifrenizi en son ne zaman değiştirdiniz?",
            "पासवर्ड आख़िरी बार कब बदला था?",
            "パスワードをいつ変更しましたか？",
        ] {
            assert_eq!(lex.scan_detail(about, Role::Label), (None, true), "{about}");
        }
        for ask in ["Şifreniz nedir?", "Şifrenizi girin", "पासवर्ड क्या है?"]
        {
            assert!(lex.scan(ask, Role::Label).is_some(), "{ask}");
        }
        for ask in [
            "What is your PIN?",
            "What's the password for the admin account?",
            "Who was your first teacher?",
            "Which password unlocks the laptop?",
            "Wie lautet Ihr Passwort?",
            "Team API token",
            "What you typed after your username",
            "When prompted, enter your password",
            "Date on your card (MM/YY)",
        ] {
            assert!(lex.scan(ask, Role::Label).is_some(), "{ask}");
        }
    }

    #[test]
    fn a_term_too_common_alone_needs_its_context() {
        let lex = SecretLexicon::builtin();
        for ask in [
            "We just texted a code to the number ending 0417. Type it here.",
            "Мы отправили код в SMS. Введите его.",
        ] {
            assert!(lex.scan(ask, Role::Prose).is_some(), "{ask}");
        }
        for plain in [
            "Code",
            "Enter the code printed on your ticket",
            "Source code",
        ] {
            assert!(lex.scan(plain, Role::Prose).is_none(), "{plain}");
        }
        // A benign phrase still shadows it.
        assert!(lex
            .scan("Enter the promo code we sent by SMS", Role::Prose)
            .is_none());
    }

    #[test]
    fn compact_scripts_name_a_property_next_to_the_term() {
        let lex = SecretLexicon::builtin();
        for about in [
            "จุดประสงค์ของโทเคน",
            "密码的用途",
            "パスワードの用途",
            "비밀번호의 용도",
        ] {
            assert_eq!(lex.scan_detail(about, Role::Label), (None, true), "{about}");
        }
        // Not in prose, where separators gone join sentences, nor after a request.
        assert!(lex.scan("请输入密码的用途", Role::Label).is_some());
        assert!(lex.scan("กรุณากรอกรหัสผ่าน", Role::Label).is_some());
    }

    #[test]
    fn letters_spelt_with_dots_or_hyphens_are_joined() {
        assert_eq!(unmarked("2-F-A c.o.d.e").as_deref(), Some("2FA code"));
        assert_eq!(unmarked("e-mail"), None);
        assert_eq!(unmarked("may-ari ng T-Mobile"), None);
        let lex = SecretLexicon::builtin();
        assert!(lex.scan("2-F-A c.o.d.e", Role::Label).is_some());
    }

    #[test]
    fn spaced_letters_are_joined() {
        let words = text::words("p a s s w o r d please");
        let joined =
            join_spaced(&words).map(|w| w.into_iter().map(|w| w.folded).collect::<Vec<_>>());
        assert_eq!(
            joined,
            Some(vec!["password".to_owned(), "please".to_owned()])
        );
        assert!(join_spaced(&text::words("a b")).is_none());
        // Three letters apart are an abbreviation spelled out: `S.S.N.`, `C V V`.
        let joined = join_spaced(&text::words("S.S.N.")).map(|w| w[0].folded.clone());
        assert_eq!(joined.as_deref(), Some("ssn"));
    }

    /// A card's or an account's number qualified by the part that identifies it is no ask
    /// for it; an identity number's last digits still are, and so is a negated part.
    #[test]
    fn a_part_of_a_number_is_no_ask_for_it() {
        let lex = SecretLexicon::builtin();
        for t in [
            "Last 4 digits of your account number",
            "Card number (last four digits)",
            "Letzte 4 Stellen Ihrer Kontonummer",
            "Laatste 4 cijfers van je rekeningnummer",
            "口座番号の下4桁",
            "계좌번호 뒤 4자리",
        ] {
            assert!(lex.scan(t, Role::Label).is_none(), "{t}");
        }
        for t in [
            "Last 4 digits of your SSN",
            "Full account number (not just the last 4)",
            "Card number",
            "The 4 digits printed above the card number",
        ] {
            assert!(lex.scan(t, Role::Label).is_some(), "{t}");
        }
    }

    /// A message closing with a request for other content it names makes an earlier
    /// secret its topic; one closing with "enter it" still asks for the secret.
    #[test]
    fn a_closing_request_for_other_content() {
        let lex = SecretLexicon::builtin();
        for t in [
            "A new private key was generated on the server. Give it a friendly name so you can find it later.",
            "Your seed phrase never leaves your device. Which device are you restoring the wallet on?",
        ] {
            assert!(lex.asks_for_other_content(t), "{t}");
        }
        for t in [
            "We sent a code to your WhatsApp. Enter it below to link your loyalty account.",
            "Ti abbiamo inviato un SMS con un codice. Inseriscilo qui sotto per confermare la modifica del numero di telefono.",
            "Your account is ready. Enter the name and the password you will use.",
            "Enter your PIN.",
        ] {
            assert!(!lex.asks_for_other_content(t), "{t}");
        }
    }

    /// The bare word for a card beside an expiry names a card's expiry; a document's card
    /// (a benign phrase), or a card or an expiry alone, does not.
    #[test]
    fn a_card_expiring() {
        let lex = SecretLexicon::builtin();
        for t in [
            "Your card is about to expire",
            "カードの有効期限が近づいています",
            "Votre carte arrive à expiration",
        ] {
            assert!(lex.names_card_expiring(t), "{t}");
        }
        for t in [
            "Your card was declined",
            "Remind the team before the certificate expires",
            "Личната ви карта изтича скоро",
            "Scadenza riportata sulla carta di circolazione",
        ] {
            assert!(!lex.names_card_expiring(t), "{t}");
        }
    }

    #[test]
    fn the_builtin_lexicon_compiles() {
        let lex = SecretLexicon::builtin();
        assert!(!lex.is_empty());
        assert!(lex.scan("password2", Role::Label).is_some());
        assert!(lex.scan("p a s s w o r d", Role::Label).is_some());
        assert!(lex.scan("pass\u{200d}word", Role::Label).is_some());
        assert!(lex.scan("p@ssw0rd", Role::Label).is_some());
        assert!(lex.scan("P4SSW0RD", Role::Label).is_some());
        assert!(lex.scan("Пар0ль", Role::Label).is_some());
        assert!(lex.scan("\u{202E}drowssap\u{202C}", Role::Label).is_some());
        assert!(lex.scan("ᴘᴀssᴡᴏʀᴅ", Role::Label).is_some());
        assert!(lex.scan("PaSsWoRd", Role::Label).is_some());
        assert!(lex.scan("S e e d   p h r a s e", Role::Label).is_some());
        assert!(lex.names_attribute("password_expiry_days"));
        assert!(lex
            .scan("Password (min 8 characters)", Role::Label)
            .is_some());
        assert!(lex.scan("password_min_length", Role::Label).is_none());
        assert!(!lex.names_attribute("password"));
    }
}
