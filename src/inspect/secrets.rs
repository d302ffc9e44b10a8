//! `form.secret`: does a form ask the user to type a secret?
//!
//! Owns: compiling the lexicon (`lexicon.rs` plus a policy's `extra_secret_terms`) into
//! matchers once at policy load, and scanning a form's texts with them.
//!
//! How matching works, and the false-positive care behind it:
//! - **Only free-input properties are judged.** A secret can only be typed into a
//!   string, number or integer property (or one outside the subset, fail closed).
//!   Booleans and enums cannot carry a secret, so `remember_password: boolean` or
//!   `auth_method: enum [password, sso]` pass. For the same reason the `message` and the
//!   schema's own title/description are checked only when the form has at least one
//!   free-input property that is not exempted by `allow_property_names`.
//! - **Space-delimited scripts match whole words.** Text is NFKC-normalised (full-width
//!   `ＡＰＩ` → `API`), split on spaces, punctuation, `_`, `-`, camelCase and script
//!   changes, folded (lower case, accents removed). Terms are word sequences, so
//!   `apiKey`, `API_KEY`, `x-api-key`, `Clé d'API` match while `monkey`, `tokenizer`,
//!   `keyboard_layout`, `passing_grade`, `keystone`, `pinned`, `spinner`, `compass`,
//!   `bypass_cache` do not. A few glued compounds match as word *endings* (`dbpassword`,
//!   `Bankkontonummer`), never as beginnings (`Passwortrichtlinie` is a policy).
//! - **Scripts without spaces match substrings** (Han, kana, Hangul, Thai) on the
//!   compact form (folded, separators removed), leftmost-longest, with "suppressor"
//!   phrases that shadow the shorter term: 密码学 (cryptography), 令牌桶 (token bucket),
//!   パスワードポリシー, นโยบายรหัสผ่าน (password policy), トークン数 (token count).
//! - **A term naming a property of the secret is not a request for it**: a term followed
//!   by a meta word (`password policy`, `token count`, `api key name`, `password min
//!   length`) or preceded by one, possibly across linkers (`max_tokens`, `length of the
//!   password`, `politique de mot de passe`) is ignored. Decided: counting LLM tokens is
//!   benign; `tokens` alone is not a term, `max_tokens`/`token_count` pass.
//!   Linkers include possessives and "new", so "Enter a name for the new API key" and
//!   "Number of API keys to create" pass. "Choose a password policy level" passes;
//!   "Enter the password for the policy" is denied. This is the documented hard case:
//!   the rule errs toward denial whenever the secret noun stands on its own, e.g.
//!   "Enter the API key label" passes but "Label the API key you will paste" is denied.
//! - **Strong vs weak terms** (see `lexicon.rs`): weak terms (`token`, `secret`, `PIN`,
//!   `cookie`, `credit card`, `トークン`, `บัตรเครดิต`, …) match in labels (property
//!   names, titles) but in prose (descriptions, message) only within three words after a
//!   request cue ("enter", "your", "votre", "Ihr", …) or, for compact scripts, within a
//!   few characters of one (请输入, 入力, กรอก).
//! - **Homoglyphs**: words containing non-Latin letters (Cyrillic `раssword`) are also
//!   compared by their Unicode confusable skeleton against the Latin terms
//!   (`secret.confusable:<category>`).
//! - `format: "password"` and `writeOnly: true` are secrets whatever the name
//!   (`secret.format:password`, `secret.write_only`).
//!
//! A determined server can always rename a field; the detector targets honest mistakes
//! and lazy phishing, and is one layer among `form.schema`, `form.url` and URL-mode checks.
//! Never: records the text it scanned; findings carry only locations and detector names.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;

use super::lexicon::{self, Category, Strength};
use super::rule::{Hits, RuleId};
use super::schema::{self, key_loc};
use super::text::{self, Word};

/// Where a text sits, which decides whether weak terms need a cue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A field label: property name or title.
    Label,
    /// Prose: description or message.
    Prose,
}

#[derive(Debug)]
struct TermInfo {
    detector: String,
    confusable_detector: String,
    strength: Strength,
}

#[derive(Debug)]
struct Seq {
    /// Words after the first.
    rest: Vec<String>,
    term: usize,
}

/// The compiled secret lexicon. Built once per distinct `extra_secret_terms` set.
#[derive(Debug)]
pub struct SecretLexicon {
    terms: Vec<TermInfo>,
    by_first: HashMap<String, Vec<Seq>>,
    by_first_skeleton: HashMap<String, Vec<Seq>>,
    suffixes: Vec<(String, usize)>,
    compact: Option<AhoCorasick>,
    /// Per compact pattern: the term it names, or `None` for a suppressor.
    compact_kinds: Vec<Option<usize>>,
    compact_cues: AhoCorasick,
}

struct Context {
    meta_after: HashSet<&'static str>,
    meta_before: HashSet<&'static str>,
    linkers: HashSet<&'static str>,
    cues: HashSet<&'static str>,
}

static CONTEXT: LazyLock<Context> = LazyLock::new(|| Context {
    meta_after: lexicon::META_AFTER.iter().copied().collect(),
    meta_before: lexicon::META_BEFORE.iter().copied().collect(),
    linkers: lexicon::LINKERS.iter().copied().collect(),
    cues: lexicon::CUES.iter().copied().collect(),
});

static BUILTIN: LazyLock<Arc<SecretLexicon>> = LazyLock::new(|| {
    // The built-in data is fixed and covered by tests; failure here is a build defect.
    #[allow(clippy::expect_used)]
    let lex = SecretLexicon::build(&[]).expect("built-in secret lexicon compiles");
    Arc::new(lex)
});

fn skeleton_fold(word: &str) -> String {
    let sk: String = unicode_security::skeleton(word).collect();
    text::fold(&sk)
}

fn has_compact_char(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(text::is_compact_script)
}

impl SecretLexicon {
    /// The built-in lexicon (shared).
    pub fn builtin() -> Arc<SecretLexicon> {
        Arc::clone(&BUILTIN)
    }

    /// The built-in lexicon plus `extra` terms (category `custom`, strong). Errors name
    /// the offending extra term by index.
    pub fn build(extra: &[String]) -> Result<SecretLexicon, Vec<String>> {
        let mut errors = Vec::new();
        let mut terms = Vec::new();
        let mut by_first: HashMap<String, Vec<Seq>> = HashMap::new();
        let mut by_first_skeleton: HashMap<String, Vec<Seq>> = HashMap::new();
        let mut compact_patterns: Vec<String> = Vec::new();
        let mut compact_kinds: Vec<Option<usize>> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();

        let mut entries: Vec<(String, String, Strength, String)> = Vec::new();
        for (cat, lang, strength, list) in lexicon::TERMS {
            for term in list.split('|') {
                entries.push((
                    format!("{}@{}", cat.as_str(), lang),
                    cat.as_str().to_string(),
                    *strength,
                    term.to_string(),
                ));
            }
        }
        for (i, term) in extra.iter().enumerate() {
            let usable = text::compact(term).chars().any(char::is_alphabetic);
            if !usable {
                errors.push(format!("extra_secret_terms[{i}]: term has no letters"));
                continue;
            }
            let cat = Category::Custom.as_str();
            entries.push((
                cat.to_string(),
                cat.to_string(),
                Strength::Strong,
                term.clone(),
            ));
        }

        for (detector, cat, strength, term) in entries {
            let id = terms.len();
            if has_compact_char(&text::nfkc(&term)) {
                let pattern = text::compact(&term);
                if !seen.insert(format!("c:{pattern}")) {
                    continue;
                }
                compact_patterns.push(pattern);
                compact_kinds.push(Some(id));
            } else {
                let words: Vec<String> = text::words(&term).into_iter().map(|w| w.folded).collect();
                let Some((first, rest)) = words.split_first() else {
                    continue;
                };
                if !seen.insert(format!("w:{}", words.join(" "))) {
                    continue;
                }
                by_first.entry(first.clone()).or_default().push(Seq {
                    rest: rest.to_vec(),
                    term: id,
                });
                let sk: Vec<String> = words.iter().map(|w| skeleton_fold(w)).collect();
                if let Some((sk_first, sk_rest)) = sk.split_first() {
                    by_first_skeleton
                        .entry(sk_first.clone())
                        .or_default()
                        .push(Seq {
                            rest: sk_rest.to_vec(),
                            term: id,
                        });
                }
            }
            terms.push(TermInfo {
                detector: format!("secret.term:{detector}"),
                confusable_detector: format!("secret.confusable:{cat}"),
                strength,
            });
        }
        for seqs in by_first.values_mut().chain(by_first_skeleton.values_mut()) {
            seqs.sort_by_key(|q| std::cmp::Reverse(q.rest.len()));
        }
        let mut suffixes = Vec::new();
        for s in lexicon::SUFFIX_TERMS {
            let folded = text::fold(s);
            let term = by_first
                .get(&folded)
                .and_then(|seqs| seqs.iter().find(|q| q.rest.is_empty()))
                .map(|q| q.term);
            match term {
                Some(t) => suffixes.push((folded, t)),
                None => errors.push(format!("suffix term `{s}` is not a single-word term")),
            }
        }
        for s in lexicon::SUPPRESSORS {
            compact_patterns.push(text::compact(s));
            compact_kinds.push(None);
        }
        let compact = if compact_patterns.is_empty() {
            None
        } else {
            match AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&compact_patterns)
            {
                Ok(ac) => Some(ac),
                Err(e) => {
                    errors.push(format!("secret lexicon automaton: {e}"));
                    None
                }
            }
        };
        let cue_patterns: Vec<String> = lexicon::COMPACT_CUES
            .iter()
            .map(|c| text::compact(c))
            .collect();
        let compact_cues = match AhoCorasick::new(&cue_patterns) {
            Ok(ac) => ac,
            Err(e) => {
                errors.push(format!("secret cue automaton: {e}"));
                return Err(errors);
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(SecretLexicon {
            terms,
            by_first,
            by_first_skeleton,
            suffixes,
            compact,
            compact_kinds,
            compact_cues,
        })
    }

    /// The detector name of the first secret term requested by `text`, if any.
    pub(crate) fn scan(&self, text: &str, role: Role) -> Option<&str> {
        let words = text::words(text);
        let keys: Vec<&str> = words.iter().map(|w| w.folded.as_str()).collect();
        if let Some(t) = self.scan_words(&words, &keys, role, &self.by_first, false) {
            return Some(&self.terms[t].detector);
        }
        if words.iter().any(|w| w.non_latin) {
            let skeletons: Vec<String> = words.iter().map(|w| skeleton_fold(&w.folded)).collect();
            let keys: Vec<&str> = skeletons.iter().map(String::as_str).collect();
            if let Some(t) = self.scan_words(&words, &keys, role, &self.by_first_skeleton, true) {
                return Some(&self.terms[t].confusable_detector);
            }
        }
        if has_compact_char(text) {
            if let Some(t) = self.scan_compact(text, role) {
                return Some(&self.terms[t].detector);
            }
        }
        None
    }

    fn scan_words(
        &self,
        words: &[Word],
        keys: &[&str],
        role: Role,
        index: &HashMap<String, Vec<Seq>>,
        need_non_latin: bool,
    ) -> Option<usize> {
        let mut i = 0;
        while i < keys.len() {
            let Some((term, len)) = self.match_at(keys, i, index) else {
                i += 1;
                continue;
            };
            // A suppressed phrase also covers the shorter terms inside it
            // ("personal access token name" must not re-match at "access token").
            if suppressed(keys, i, len) {
                i += len;
                continue;
            }
            let homoglyph_ok = !need_non_latin || words[i..i + len].iter().any(|w| w.non_latin);
            let cue_ok = self.terms[term].strength == Strength::Strong
                || role == Role::Label
                || cued(keys, i);
            if homoglyph_ok && cue_ok {
                return Some(term);
            }
            i += 1;
        }
        None
    }

    fn match_at(
        &self,
        keys: &[&str],
        i: usize,
        index: &HashMap<String, Vec<Seq>>,
    ) -> Option<(usize, usize)> {
        if let Some(seqs) = index.get(keys[i]) {
            for seq in seqs {
                let n = seq.rest.len();
                let fits = i + 1 + n <= keys.len()
                    && keys[i + 1..i + 1 + n]
                        .iter()
                        .zip(&seq.rest)
                        .all(|(a, b)| *a == b.as_str());
                if fits {
                    return Some((seq.term, n + 1));
                }
            }
        }
        let word = keys[i];
        self.suffixes
            .iter()
            .find(|(s, _)| word.len() > s.len() && word.ends_with(s.as_str()))
            .map(|(_, t)| (*t, 1))
    }

    fn scan_compact(&self, text: &str, role: Role) -> Option<usize> {
        let ac = self.compact.as_ref()?;
        let c = text::compact(text);
        for m in ac.find_iter(&c) {
            let Some(term) = self
                .compact_kinds
                .get(m.pattern().as_usize())
                .copied()
                .flatten()
            else {
                continue;
            };
            if self.terms[term].strength == Strength::Weak
                && role == Role::Prose
                && !self.compact_cued(&c, m.start(), m.end())
            {
                continue;
            }
            return Some(term);
        }
        None
    }

    fn compact_cued(&self, c: &str, start: usize, end: usize) -> bool {
        const WINDOW: usize = 24;
        let lo = start.saturating_sub(WINDOW);
        let hi = (end + WINDOW).min(c.len());
        self.compact_cues
            .find_iter(c)
            .any(|m| m.end() >= lo && m.start() <= hi)
    }
}

fn suppressed(keys: &[&str], i: usize, len: usize) -> bool {
    let ctx = &*CONTEXT;
    if keys
        .get(i + len)
        .is_some_and(|w| ctx.meta_after.contains(w))
    {
        return true;
    }
    let mut j = i;
    let mut skipped = 0;
    while j > 0 {
        j -= 1;
        let w = keys[j];
        if ctx.linkers.contains(w) && skipped < 3 {
            skipped += 1;
            continue;
        }
        return ctx.meta_before.contains(w);
    }
    false
}

fn cued(keys: &[&str], i: usize) -> bool {
    let ctx = &*CONTEXT;
    keys[i.saturating_sub(3)..i]
        .iter()
        .any(|w| ctx.cues.contains(w))
}

/// Run `form.secret` over a form. `allow` holds folded exempt property names.
pub(crate) fn check_form(
    schema: &Value,
    message: Option<&str>,
    lexicon: &SecretLexicon,
    allow: &HashSet<String>,
    hits: &mut Hits,
) {
    let Some(props) = schema::properties(schema) else {
        return;
    };
    let mut free_input = false;
    for (name, prop) in props {
        if !allow.is_empty() && allow.contains(&text::fold(&text::nfkc(name))) {
            continue;
        }
        let kind = schema::kind_of(prop);
        let loc = || format!("properties.{}", key_loc(name));
        if let Some(f) = prop.get("format").and_then(Value::as_str) {
            if text::fold(f) == "password" {
                hits.add(
                    RuleId::FormSecret,
                    format!("{}.format", loc()),
                    "secret.format:password",
                );
            }
        }
        if prop.get("writeOnly").and_then(Value::as_bool) == Some(true) {
            hits.add(
                RuleId::FormSecret,
                format!("{}.writeOnly", loc()),
                "secret.write_only",
            );
        }
        if !kind.is_free_input() {
            continue;
        }
        free_input = true;
        if let Some(d) = lexicon.scan(name, Role::Label) {
            hits.add(RuleId::FormSecret, loc(), d);
        }
        if let Some(d) = prop
            .get("title")
            .and_then(Value::as_str)
            .and_then(|t| lexicon.scan(t, Role::Label))
        {
            hits.add(RuleId::FormSecret, format!("{}.title", loc()), d);
        }
        let description = prop.get("description").and_then(Value::as_str);
        if let Some(d) = description.and_then(|t| lexicon.scan(t, Role::Prose)) {
            hits.add(RuleId::FormSecret, format!("{}.description", loc()), d);
        }
    }
    if !free_input {
        return;
    }
    for (kw, role) in [("title", Role::Label), ("description", Role::Prose)] {
        if let Some(d) = schema
            .get(kw)
            .and_then(Value::as_str)
            .and_then(|t| lexicon.scan(t, role))
        {
            hits.add(RuleId::FormSecret, format!("requestedSchema.{kw}"), d);
        }
    }
    if let Some(d) = message.and_then(|m| lexicon.scan(m, Role::Prose)) {
        hits.add(RuleId::FormSecret, "message", d);
    }
}

#[cfg(test)]
mod tests;
