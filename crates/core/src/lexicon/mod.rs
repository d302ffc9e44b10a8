//! The secret lexicon: what words name a secret, in which language, and the context words
//! that turn a mention into a request or into a property of the secret.
//!
//! Owns: the concept vocabulary ([`Category`], [`Strength`]), the per-language word lists in
//! `data/*.txt` (format in `data/README.md`, sources in each file's header and in
//! `docs/research/lexicon-sources.md`), parsing them once ([`Data::builtin`]), and the
//! compiled matcher ([`SecretLexicon`], in `matcher.rs`) that `policy` builds at load with
//! an operator's `extra_secret_terms` and `inspect` runs over a form's texts.
//! Never: walks schemas or decides rules — that is `inspect::secrets`.
//!
//! Below both `policy` and `inspect` (layering): neither imports the other for it.

mod classes;
mod matcher;

pub use matcher::{LabelSense, Match, Role, SecretLexicon};

use std::sync::LazyLock;

/// What kind of secret a term names; part of the detector name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Password,
    SeedPhrase,
    ApiKey,
    Token,
    ClientSecret,
    PrivateKey,
    Session,
    Otp,
    Pin,
    Card,
    CardExpiry,
    Cvv,
    Bank,
    NationalId,
    Credentials,
    /// From a policy's `extra_secret_terms`.
    Custom,
}

impl Category {
    /// Every built-in concept, in documentation order.
    pub const BUILTIN: [Category; 15] = [
        Category::Password,
        Category::SeedPhrase,
        Category::Pin,
        Category::Otp,
        Category::ApiKey,
        Category::Token,
        Category::ClientSecret,
        Category::PrivateKey,
        Category::Card,
        Category::CardExpiry,
        Category::Cvv,
        Category::Bank,
        Category::NationalId,
        Category::Session,
        Category::Credentials,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Password => "password",
            Category::SeedPhrase => "seed_phrase",
            Category::ApiKey => "api_key",
            Category::Token => "token",
            Category::ClientSecret => "client_secret",
            Category::PrivateKey => "private_key",
            Category::Session => "session",
            Category::Otp => "otp",
            Category::Pin => "pin",
            Category::Card => "card",
            Category::CardExpiry => "card_expiry",
            Category::Cvv => "cvv",
            Category::Bank => "bank",
            Category::NationalId => "national_id",
            Category::Credentials => "credentials",
            Category::Custom => "custom",
        }
    }

    fn parse(s: &str) -> Option<Category> {
        Category::BUILTIN.into_iter().find(|c| c.as_str() == s)
    }
}

/// Where a term may match; see `data/README.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strength {
    Strong,
    Weak,
}

/// One term of one language, as written in the data.
#[derive(Debug, Clone)]
pub struct Term {
    pub category: Category,
    pub lang: &'static str,
    pub strength: Strength,
    pub text: &'static str,
}

/// A weak term's benign senses: in a field whose texts contain one of `words`, the term
/// (folded) means something else.
#[derive(Debug, Clone)]
pub struct Sense {
    pub term: &'static str,
    pub words: Vec<&'static str>,
}

/// Everything the data files say, merged over languages.
#[derive(Debug, Default)]
pub struct Data {
    pub terms: Vec<Term>,
    /// Terms matched as written, accents and all, in a label they end (`card exact: số
    /// thẻ`): their folded form is another language's ordinary words (`so the`).
    pub exact: Vec<Term>,
    pub meta_after: Vec<&'static str>,
    pub meta_before: Vec<&'static str>,
    /// Actions on a secret (`create`, `erstellen`): attributes in prose, not in labels.
    pub actions: Vec<&'static str>,
    pub linkers: Vec<&'static str>,
    pub cues: Vec<&'static str>,
    pub compact_cues: Vec<&'static str>,
    pub suppress: Vec<&'static str>,
    pub benign: Vec<&'static str>,
    /// Words naming a field's ordinary content (feedback, e-mail, rating): a field so
    /// labelled is not a blank the form's message can fill with a secret it names.
    pub content: Vec<&'static str>,
    /// Words that leave a label blank whatever else it names (`code`, `number`, `value`):
    /// "Code from the e-mail" waits for the code the message names.
    pub blank: Vec<&'static str>,
    /// Cues that make a weak term a request in prose but are no request verb (`need`,
    /// `choose`, `tell`): also in `cues`.
    pub weak_cues: Vec<&'static str>,
    /// Cues naming the place to type (`here`, `below`, `field`): also in `cues`.
    pub place_cues: Vec<&'static str>,
    /// Reports of having typed (`typed`, `copied`, `eingetragen`): a request only in a
    /// choice's or checkbox's text that names the place ("I typed my PIN in the Notes box").
    pub done_cues: Vec<&'static str>,
    /// Words that turn a request into a prohibition (`never`, `not`, `nie`, `不要`).
    pub negations: Vec<&'static str>,
    /// Interrogatives that ask for a thing (`which`, `what`, `welche`): a label asking
    /// "which service is this password for" asks for the service.
    pub questions: Vec<&'static str>,
    /// Interrogatives that ask for a circumstance or a person (`when`, `why`, `how`, `who`,
    /// `wann`): a label so opened asks about the secret, never for it.
    pub circumstances: Vec<&'static str>,
    /// One piece of a secret typed piece by piece (`character`, `word`, `Zeichen`): a
    /// field labelled with one and a number ("2nd character", "Word #3").
    pub pieces: Vec<&'static str>,
    /// A part of a number that identifies it without giving it (`last 4 digits`, `ending
    /// in`, `letzte 4 stellen`): a card or account number so qualified is no secret.
    pub partial: Vec<&'static str>,
    /// "No" before a noun (`no`, `kein`, `aucun`): a negation only with a place after the
    /// term ("no password here", "kein Passwort hier eingeben").
    pub none_here: Vec<&'static str>,
    /// Pronouns referring back to what an earlier sentence named (`it`, `them`, `lo`):
    /// "We sent a code. What is it?" asks for the code.
    pub back_refs: Vec<&'static str>,
    /// Requests of several words (`key in`, `pop in`, `let us know`): a request verb as one
    /// word is, a pronoun allowed after the first ("Pop it in below").
    pub phrasal_cues: Vec<&'static str>,
    /// A request placed on another page or at a later step (`next page`, `secure page`,
    /// `separately`): "We'll ask for your password on the next, secure page" asks nothing here.
    pub deferred: Vec<&'static str>,
    /// The same interrogatives of languages that put them inside the question, after the
    /// secret (`kab`, `ne zaman`, `いつ`): anywhere in a question label.
    pub circumstances_late: Vec<&'static str>,
    /// Interrogatives that close a question after what it asks for (`nedir`, `چیست`, `কী`):
    /// "client secret değeri nedir?" asks for the client secret.
    pub questions_late: Vec<&'static str>,
    /// Nouns that, opening a label, name what it holds whatever secret follows (`reason`,
    /// `date`, `comment`: "Date the PIN was issued").
    pub heads: Vec<&'static str>,
    /// Copulas and auxiliaries skipped after an interrogative (`is`, `s`, `ist`, `est`).
    pub copulas: Vec<&'static str>,
    /// Coordinating conjunctions (`and`, `or`, `und`): a role word before one names the
    /// other thing of a pair ("Name and password"), not a property of the secret.
    pub conjunctions: Vec<&'static str>,
    /// Markers of an example (`e.g.`, `z. B.`, `例如`): a field labelled with what it holds
    /// and described by an example reads the secret it names as that content's topic.
    pub examples: Vec<&'static str>,
    /// Units and counts (`days`, `attempts`, `Anzahl`, `次数`): a number labelled with one
    /// holds a quantity, not a secret's digits ("Days until a password must be changed").
    pub units: Vec<&'static str>,
    /// Relative pronouns (`that`, `where`, `который`): a label opening with what the field
    /// holds, then a relative clause naming a secret, holds the first ("CI pipeline that
    /// will use this token").
    pub relatives: Vec<&'static str>,
    /// Possessive postpositions (`का`, `کا`, `এর`): a property word after one, following a
    /// term, names the term's property ("टोकन का स्वामी", the token's owner).
    pub postpositions: Vec<&'static str>,
    /// Auxiliaries that open a yes/no question (`do`, `have`, `are`): a label so opened,
    /// with no request verb, asks about the secret it names ("Do you use the same password
    /// anywhere else?").
    pub auxiliaries: Vec<&'static str>,
    /// Negations that close a verb-final sentence, as its last word or the one before its
    /// verb, up to eight words after the term (`yazmayın`, `değil`, `نکنید`, `न`).
    pub negations_after: Vec<&'static str>,
    pub suffix: Vec<&'static str>,
    pub clitics: Vec<&'static str>,
    /// Words naming an expiry or a validity (`expiry`, `Ablaufdatum`, `有効期限`): a field so
    /// labelled on a form that names a payment card, or shaped as month/year, asks for the
    /// card's expiry.
    pub expiry: Vec<&'static str>,
    /// Words naming a payment card (`card`, `Kreditkarte`, `بطاقة`).
    pub cards: Vec<&'static str>,
    /// National numbers named by their capitals (`SIN`, `NINO`, `NIE`, `PAN`), as written:
    /// in lower case each is a common word ("sin", "niño", "nie", "pan") and names nothing.
    pub acronyms: Vec<&'static str>,
    /// Identity documents (`passport`, `driver s license`, `state id`, `Personalausweis`): a
    /// form naming one asks its generic number label ("Document number", "ID number") for
    /// that document's number.
    pub id_documents: Vec<&'static str>,
    /// Generic labels of a document's number (`document number`, `id number`, `number`).
    pub id_number_labels: Vec<&'static str>,
    /// The bare word for a card (`card`, `carte`, `カード`): a card, payment or not, whose
    /// expiry a text naming both is about ("Your card is about to expire").
    pub card_words: Vec<&'static str>,
    /// What the classic security questions ask about (`first pet`, `city were you born`,
    /// `favorite teacher`): a text input titled with such a question, on a form that names a
    /// recovery or a security check (`recall_contexts`), holds a security answer.
    pub recall_questions: Vec<&'static str>,
    /// Words of account recovery and identity checks (`recovery`, `security check`).
    pub recall_contexts: Vec<&'static str>,
    /// A month/year format as forms write it (`MM/YY`, `mois/année`, `月/年`).
    pub month_year: Vec<&'static str>,
    /// Date words (`date`, `Datum`, `日付`, month and year) and the compact-script particles
    /// that join them to an expiry (`の`, `的`): an expiry label of nothing else is bare.
    pub dates: Vec<&'static str>,
    /// Month and year words (`month`, `Jahr`, `年`, `mm`, `yy`): a label of nothing else is
    /// one part of a date.
    pub months_years: Vec<&'static str>,
    /// Words naming a security question (`security question`, `密保问题`), and labels of
    /// an answer (`answer`, `Antwort`, `答案`): an answer field on a form that names a
    /// security question asks for a password.
    pub security_questions: Vec<&'static str>,
    pub answers: Vec<&'static str>,
    /// Words naming a verification (`verify`, `Bestätigung`, `確認`): an input so labelled
    /// whose pattern takes four to eight digits asks for a one-time code.
    pub verification: Vec<&'static str>,
    pub senses: Vec<Sense>,
    /// Terms too common alone to name a secret (`code`, `код`) and the words one of which the
    /// same text must also contain for them to (`sms`, `texted`, `отправили`): reused
    /// [`Sense`] shape, `words` being the needed ones.
    pub needs: Vec<Sense>,
    /// Languages in file order.
    pub languages: Vec<&'static str>,
}

/// The embedded data files, `(file name, text)`.
const FILES: &[(&str, &str)] = &[
    ("shared.txt", include_str!("data/shared.txt")),
    ("en.txt", include_str!("data/en.txt")),
    ("zh.txt", include_str!("data/zh.txt")),
    ("es.txt", include_str!("data/es.txt")),
    ("ar.txt", include_str!("data/ar.txt")),
    ("pt.txt", include_str!("data/pt.txt")),
    ("id.txt", include_str!("data/id.txt")),
    ("fr.txt", include_str!("data/fr.txt")),
    ("ja.txt", include_str!("data/ja.txt")),
    ("ru.txt", include_str!("data/ru.txt")),
    ("de.txt", include_str!("data/de.txt")),
    ("ko.txt", include_str!("data/ko.txt")),
    ("tr.txt", include_str!("data/tr.txt")),
    ("vi.txt", include_str!("data/vi.txt")),
    ("it.txt", include_str!("data/it.txt")),
    ("pl.txt", include_str!("data/pl.txt")),
    ("fa.txt", include_str!("data/fa.txt")),
    ("nl.txt", include_str!("data/nl.txt")),
    ("th.txt", include_str!("data/th.txt")),
    ("uk.txt", include_str!("data/uk.txt")),
    ("hi.txt", include_str!("data/hi.txt")),
    ("bn.txt", include_str!("data/bn.txt")),
    ("ur.txt", include_str!("data/ur.txt")),
    ("he.txt", include_str!("data/he.txt")),
    ("sv.txt", include_str!("data/sv.txt")),
    ("cs.txt", include_str!("data/cs.txt")),
    ("ro.txt", include_str!("data/ro.txt")),
    ("hu.txt", include_str!("data/hu.txt")),
    ("el.txt", include_str!("data/el.txt")),
    ("fil.txt", include_str!("data/fil.txt")),
    ("da.txt", include_str!("data/da.txt")),
    ("no.txt", include_str!("data/no.txt")),
    ("fi.txt", include_str!("data/fi.txt")),
    ("sw.txt", include_str!("data/sw.txt")),
    ("ta.txt", include_str!("data/ta.txt")),
    ("te.txt", include_str!("data/te.txt")),
    ("mr.txt", include_str!("data/mr.txt")),
    ("gu.txt", include_str!("data/gu.txt")),
    ("kn.txt", include_str!("data/kn.txt")),
    ("ml.txt", include_str!("data/ml.txt")),
    ("pa.txt", include_str!("data/pa.txt")),
    ("ne.txt", include_str!("data/ne.txt")),
    ("si.txt", include_str!("data/si.txt")),
    ("bg.txt", include_str!("data/bg.txt")),
    ("mk.txt", include_str!("data/mk.txt")),
    ("sr.txt", include_str!("data/sr.txt")),
    ("hr.txt", include_str!("data/hr.txt")),
    ("sk.txt", include_str!("data/sk.txt")),
    ("sl.txt", include_str!("data/sl.txt")),
    ("lt.txt", include_str!("data/lt.txt")),
    ("lv.txt", include_str!("data/lv.txt")),
    ("et.txt", include_str!("data/et.txt")),
    ("ca.txt", include_str!("data/ca.txt")),
    ("gl.txt", include_str!("data/gl.txt")),
    ("af.txt", include_str!("data/af.txt")),
    ("az.txt", include_str!("data/az.txt")),
    ("kk.txt", include_str!("data/kk.txt")),
    ("uz.txt", include_str!("data/uz.txt")),
    ("ka.txt", include_str!("data/ka.txt")),
    ("hy.txt", include_str!("data/hy.txt")),
    ("am.txt", include_str!("data/am.txt")),
    ("my.txt", include_str!("data/my.txt")),
    ("km.txt", include_str!("data/km.txt")),
    ("lo.txt", include_str!("data/lo.txt")),
    ("ha.txt", include_str!("data/ha.txt")),
    ("yo.txt", include_str!("data/yo.txt")),
    ("zu.txt", include_str!("data/zu.txt")),
    ("mn.txt", include_str!("data/mn.txt")),
    ("eu.txt", include_str!("data/eu.txt")),
    ("be.txt", include_str!("data/be.txt")),
    ("is.txt", include_str!("data/is.txt")),
    ("sq.txt", include_str!("data/sq.txt")),
    ("cy.txt", include_str!("data/cy.txt")),
    ("ga.txt", include_str!("data/ga.txt")),
    ("ps.txt", include_str!("data/ps.txt")),
    ("ckb.txt", include_str!("data/ckb.txt")),
    ("kmr.txt", include_str!("data/kmr.txt")),
    ("tg.txt", include_str!("data/tg.txt")),
    ("ky.txt", include_str!("data/ky.txt")),
    ("tk.txt", include_str!("data/tk.txt")),
    ("tt.txt", include_str!("data/tt.txt")),
    ("ug.txt", include_str!("data/ug.txt")),
    ("sd.txt", include_str!("data/sd.txt")),
    ("or.txt", include_str!("data/or.txt")),
    ("as.txt", include_str!("data/as.txt")),
    ("lb.txt", include_str!("data/lb.txt")),
    ("mt.txt", include_str!("data/mt.txt")),
    ("fy.txt", include_str!("data/fy.txt")),
    ("fo.txt", include_str!("data/fo.txt")),
    ("br.txt", include_str!("data/br.txt")),
    ("oc.txt", include_str!("data/oc.txt")),
    ("eo.txt", include_str!("data/eo.txt")),
    ("gd.txt", include_str!("data/gd.txt")),
    ("ht.txt", include_str!("data/ht.txt")),
    ("sm.txt", include_str!("data/sm.txt")),
    ("mi.txt", include_str!("data/mi.txt")),
    ("co.txt", include_str!("data/co.txt")),
    ("so.txt", include_str!("data/so.txt")),
    ("ig.txt", include_str!("data/ig.txt")),
    ("rw.txt", include_str!("data/rw.txt")),
    ("mg.txt", include_str!("data/mg.txt")),
    ("ti.txt", include_str!("data/ti.txt")),
    ("om.txt", include_str!("data/om.txt")),
    ("wo.txt", include_str!("data/wo.txt")),
    ("sn.txt", include_str!("data/sn.txt")),
    ("xh.txt", include_str!("data/xh.txt")),
    ("st.txt", include_str!("data/st.txt")),
    ("ny.txt", include_str!("data/ny.txt")),
    ("ln.txt", include_str!("data/ln.txt")),
    ("tn.txt", include_str!("data/tn.txt")),
    ("jv.txt", include_str!("data/jv.txt")),
    ("su.txt", include_str!("data/su.txt")),
    ("ceb.txt", include_str!("data/ceb.txt")),
    ("ilo.txt", include_str!("data/ilo.txt")),
    ("hmn.txt", include_str!("data/hmn.txt")),
    ("qu.txt", include_str!("data/qu.txt")),
    ("gn.txt", include_str!("data/gn.txt")),
    ("ay.txt", include_str!("data/ay.txt")),
    ("tpi.txt", include_str!("data/tpi.txt")),
    ("tet.txt", include_str!("data/tet.txt")),
];

static BUILTIN_DATA: LazyLock<Result<Data, Vec<String>>> = LazyLock::new(|| {
    let mut data = Data::default();
    let mut errors = Vec::new();
    for (name, text) in FILES {
        data.parse_file(name, text, &mut errors);
    }
    if errors.is_empty() {
        Ok(data)
    } else {
        Err(errors)
    }
});

fn items(list: &'static str) -> impl Iterator<Item = &'static str> {
    list.split('|').map(str::trim).filter(|t| !t.is_empty())
}

impl Data {
    /// The parsed built-in data, or every malformed line (a build defect: the unit tests
    /// parse it).
    pub fn builtin() -> Result<&'static Data, &'static [String]> {
        match &*BUILTIN_DATA {
            Ok(d) => Ok(d),
            Err(e) => Err(e),
        }
    }

    fn parse_file(&mut self, name: &str, text: &'static str, errors: &mut Vec<String>) {
        let mut lang: Option<&'static str> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("{name}:{}", n + 1);
            if let Some(code) = line.strip_prefix("@lang ") {
                let code = code.trim();
                if !self.languages.contains(&code) && code != "mul" {
                    self.languages.push(code);
                }
                lang = Some(code);
                continue;
            }
            let Some((key, list)) = line.split_once(':') else {
                errors.push(format!("{}: no `key:`", at()));
                continue;
            };
            let key = key.trim();
            if let Some(term) = key.strip_prefix("sense ") {
                self.senses.push(Sense {
                    term: term.trim(),
                    words: items(list).collect(),
                });
                continue;
            }
            if let Some(term) = key.strip_prefix("needs ") {
                self.needs.push(Sense {
                    term: term.trim(),
                    words: items(list).collect(),
                });
                continue;
            }
            let target = match key {
                "meta_after" => Some(&mut self.meta_after),
                "meta_before" => Some(&mut self.meta_before),
                "actions" => Some(&mut self.actions),
                "linkers" => Some(&mut self.linkers),
                "cues" => Some(&mut self.cues),
                "compact_cues" => Some(&mut self.compact_cues),
                "suppress" => Some(&mut self.suppress),
                "benign" => Some(&mut self.benign),
                "content" => Some(&mut self.content),
                "blank" => Some(&mut self.blank),
                "negations" => Some(&mut self.negations),
                "questions" => Some(&mut self.questions),
                "circumstances" => Some(&mut self.circumstances),
                "partial" => Some(&mut self.partial),
                "deferred" => Some(&mut self.deferred),
                "none_here" => Some(&mut self.none_here),
                "back_refs" => Some(&mut self.back_refs),
                "phrasal_cues" => Some(&mut self.phrasal_cues),
                "pieces" => Some(&mut self.pieces),
                "circumstances_late" => Some(&mut self.circumstances_late),
                "questions_late" => Some(&mut self.questions_late),
                "heads" => Some(&mut self.heads),
                "copulas" => Some(&mut self.copulas),
                "conjunctions" => Some(&mut self.conjunctions),
                "examples" => Some(&mut self.examples),
                "units" => Some(&mut self.units),
                "relatives" => Some(&mut self.relatives),
                "postpositions" => Some(&mut self.postpositions),
                "auxiliaries" => Some(&mut self.auxiliaries),
                "negations_after" => Some(&mut self.negations_after),
                "suffix" => Some(&mut self.suffix),
                "clitics" => Some(&mut self.clitics),
                "expiry" => Some(&mut self.expiry),
                "cards" => Some(&mut self.cards),
                "acronyms" => Some(&mut self.acronyms),
                "id_documents" => Some(&mut self.id_documents),
                "id_number_labels" => Some(&mut self.id_number_labels),
                "card_words" => Some(&mut self.card_words),
                "recall_questions" => Some(&mut self.recall_questions),
                "recall_contexts" => Some(&mut self.recall_contexts),
                "month_year" => Some(&mut self.month_year),
                "verification" => Some(&mut self.verification),
                "dates" => Some(&mut self.dates),
                "months_years" => Some(&mut self.months_years),
                "security_questions" => Some(&mut self.security_questions),
                "answers" => Some(&mut self.answers),
                _ => None,
            };
            if let Some(target) = target {
                target.extend(items(list));
                continue;
            }
            if key == "weak_cues" {
                self.weak_cues.extend(items(list));
                self.cues.extend(items(list));
                continue;
            }
            if key == "done_cues" {
                self.done_cues.extend(items(list));
                continue;
            }
            if key == "place_cues" {
                self.place_cues.extend(items(list));
                self.cues.extend(items(list));
                continue;
            }
            let (key, exact) = match key.strip_suffix(" exact") {
                Some(k) => (k.trim(), true),
                None => (key, false),
            };
            let (cat, strength) = match key.strip_suffix(" weak") {
                Some(c) => (c.trim(), Strength::Weak),
                None => (key, Strength::Strong),
            };
            let Some(category) = Category::parse(cat) else {
                errors.push(format!("{}: unknown key `{key}`", at()));
                continue;
            };
            let Some(lang) = lang else {
                errors.push(format!("{}: a term before `@lang`", at()));
                continue;
            };
            for t in items(list) {
                let term = Term {
                    category,
                    lang,
                    strength,
                    text: t,
                };
                if exact {
                    self.exact.push(term);
                } else {
                    self.terms.push(term);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_files_parse_and_cover_every_language_and_concept() {
        let data = match Data::builtin() {
            Ok(d) => d,
            Err(e) => panic!("lexicon data: {e:#?}"),
        };
        let langs = [
            "en", "zh", "es", "ar", "pt", "id", "ms", "fr", "ja", "ru", "de", "ko", "tr", "vi",
            "it", "pl", "fa", "nl", "th", "uk", "hi", "bn", "ur", "he", "sv", "cs", "ro", "hu",
            "el", "fil", "da", "no", "fi", "sw",
        ];
        let mut missing = Vec::new();
        for lang in langs {
            for cat in Category::BUILTIN {
                if cat == Category::Credentials {
                    continue;
                }
                if !data
                    .terms
                    .iter()
                    .any(|t| t.lang == lang && t.category == cat)
                {
                    missing.push(format!("{lang}/{}", cat.as_str()));
                }
            }
        }
        assert!(missing.is_empty(), "no terms for {missing:?}");
        let unknown = SecretLexicon::unknown_senses();
        assert!(unknown.is_empty(), "senses naming no term: {unknown:?}");
    }
}
