//! `form.secret`: does a form ask the user to type a secret?
//!
//! Owns: walking a requested schema for the texts that can ask for a secret and deciding
//! per input field from all of them. The words themselves, their languages and the matching
//! rules are [`crate::lexicon`].
//!
//! - **Free-input properties are judged by what they ask**: a string, number or integer
//!   property (or one outside the subset, fail closed) from its name and title (labels),
//!   its description (prose) and, when neither names a secret, its name and title read
//!   together (`api` titled `Key`). A weak term whose benign sense another text of the same
//!   field names is dropped (`pwd` titled "Working directory", a `token` described as a
//!   ticker symbol).
//! - **Choices and booleans cannot carry a secret** (`remember_password: boolean`,
//!   `auth_method: enum [password, sso]` pass), but their texts can tell the user to type one
//!   elsewhere: enum option titles, `enumNames`, a boolean's title and description, and any
//!   property's `default` are read as hidden text, where a term counts only next to a
//!   request cue ("paste your API key in the next field").
//! - The `message` and the schema's own title/description are checked only when the form
//!   has at least one free-input property that is not exempted by `allow_property_names`,
//!   and only for what an input can hold. Over one input they are about it; over several
//!   they count where they ask (a request verb near the term, not just "your") or name what
//!   only a shaped input takes (a card's expiry above month and year numbers).
//! - `format: "password"` and `writeOnly: true` are secrets whatever the name
//!   (`secret.format:password`, `secret.write_only`).
//!
//! A determined server can always rename a field; the detector targets honest mistakes
//! and lazy phishing, and is one layer among `form.schema`, `form.url` and URL-mode checks.
//! Never: records the text it scanned; findings carry only locations and detector names.

use std::collections::HashSet;

use serde_json::Value;

use crate::lexicon::Category;
pub use crate::lexicon::{Role, SecretLexicon};
use crate::text::fold as text;

use super::rule::{Hits, RuleId, Why};
use super::schema::{self, key_loc};

/// The steps of the decision procedure (docs/policy.md "Secret detection"), as a finding
/// explains itself.
mod step {
    pub const FORMAT_PASSWORD: &str = "`format: password` marks a secret input";
    pub const WRITE_ONLY: &str = "`writeOnly` marks a secret input";
    pub const HIDDEN: &str =
        "a choice's, a checkbox's or a default's text tells the user to type a secret (a request cue next to the term)";
    pub const HIDDEN_PLACED: &str =
        "a choice's or a checkbox's text names a secret and the input of the form it goes in";
    pub const LABEL: &str = "the field's name or title names a secret its type can hold";
    pub const DESCRIPTION: &str = "the field's description asks for a secret its type can hold";
    pub const SPLIT: &str = "the field's name and title read together name a secret";
    pub const FORM_TEXT: &str =
        "the form's message or title asks for a secret, and one of its inputs can hold it";
    pub const KEY_PREFIX: &str =
        "the field's default begins a well-known credential format for the user to complete";
    pub const TEMPLATE: &str =
        "the field's default is a configuration template whose variable names a secret to fill in";
}

/// A finding of `form.secret` for match `m`, explained by `because`.
fn record(
    hits: &mut Hits,
    lexicon: &SecretLexicon,
    at: String,
    m: &crate::lexicon::Match<'_>,
    because: &'static str,
) {
    let why = Why {
        because,
        term: lexicon.phrase(m.term),
    };
    hits.explain(RuleId::FormSecret, at, m.detector, why);
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
    // What the form's inputs can hold: its message and title taint only inputs that can
    // take what they name ("Thanks for changing your password — rate us" asks for a number).
    let mut room = Room::default();
    let mut inputs = 0usize;
    // Number inputs of one digit each: three or more are one number typed a digit per box
    // ("Enter your card PIN, one digit per box").
    let boxes = props.values().filter(|p| one_digit(p)).count();
    // Text inputs of one character or one numbered word each ("2nd character", "Word #3",
    // `maxLength: 1`): two or more take a secret piece by piece, which the message names
    // ("characters 2, 5 and 7 of your memorable word").
    let pieces = props
        .iter()
        .filter(|(name, p)| {
            schema::kind_of(p).is_free_input()
                && p.get("type").and_then(Value::as_str) == Some("string")
                && (p.get("maxLength").and_then(Value::as_u64) == Some(1)
                    || lexicon.names_piece(p.get("title").and_then(Value::as_str).unwrap_or(name)))
        })
        .count();
    // What fields ask by context or shape, decided once the whole form is read.
    let mut context = context::Context::default();
    // What a choice's, checkbox's or default's text tells the user to type counts once the
    // form is read, and only where one of its free inputs can take it, as the message does:
    // "启动 App 时需要输入 PIN 码" over two checkboxes is a setting, and a form with no input to
    // type into asks nothing.
    let mut hidden = Vec::new();
    let mut free_holds = Vec::new();
    // The labels of the free inputs (title, else name; a few words): a choice's or
    // checkbox's text naming one says what goes in it ("I confirm Value holds this peer's
    // WireGuard private key", "I'm pasting the client secret into Details").
    // Read only when a hidden text asks nothing by itself.
    let input_labels = std::cell::OnceCell::new();
    let input_labels = || {
        input_labels.get_or_init(|| {
            props
                .iter()
                .filter(|(_, p)| schema::kind_of(p).is_free_input())
                .map(|(name, p)| p.get("title").and_then(Value::as_str).unwrap_or(name))
                .map(|l| {
                    text::words(l)
                        .iter()
                        .map(|w| w.folded.clone())
                        .collect::<Vec<_>>()
                })
                .filter(|w| !w.is_empty() && w.len() <= 4)
                .collect::<Vec<Vec<String>>>()
        })
    };
    // Named as a place: after a preposition of place ("into Details", "in the Value
    // field"), or before what it holds ("Value holds", "Field 1 contains"); not "Did the
    // vendor hold API keys?" over an input titled "Vendor".
    let names_input = |t: &str| {
        let words: Vec<String> = text::words(t).iter().map(|w| w.folded.clone()).collect();
        input_labels().iter().any(|l| {
            words.windows(l.len()).enumerate().any(|(k, w)| {
                let before = words[k.saturating_sub(2)..k].iter().map(String::as_str);
                let after = words.get(k + l.len()).map(String::as_str);
                w == l.as_slice()
                    && (before.into_iter().any(|b| PLACE_PREPOSITIONS.contains(&b))
                        || after.is_some_and(|a| HOLDING_VERBS.contains(&a)))
            })
        })
    };
    for (name, prop) in props {
        if !allow.is_empty() && allow.contains(&text::fold(&text::nfkc(name))) {
            continue;
        }
        inputs += 1;
        let kind = schema::kind_of(prop);
        let loc = || format!("properties.{}", key_loc(name));
        if let Some(f) = prop.get("format").and_then(Value::as_str) {
            if text::fold(f) == "password" {
                let why = Why {
                    because: step::FORMAT_PASSWORD,
                    term: None,
                };
                let at = format!("{}.format", loc());
                hits.explain(RuleId::FormSecret, at, "secret.format:password", why);
            }
        }
        if prop.get("writeOnly").and_then(Value::as_bool) == Some(true) {
            let why = Why {
                because: step::WRITE_ONLY,
                term: None,
            };
            let at = format!("{}.writeOnly", loc());
            hits.explain(RuleId::FormSecret, at, "secret.write_only", why);
        }
        // An input labelled with what it holds ("Feedback", `reason`, "Ticket subject"): a
        // text input titled with a question ("¿Cuál era el nombre de tu primera mascota?")
        // holds its answer, not what the question names, and a question of circumstance
        // ("Where will you keep them?", "Why are you rotating early?") says what that answer
        // is; a number titled "How many cards?" holds the count it names.
        let holds = Holds::of(name, prop, kind, lexicon).split(boxes >= 3 && one_digit(prop));
        let own = kind.is_free_input() && {
            // The title is the label the user reads: a blank one ("Your reply") over a name
            // such as `id` leaves the input blank.
            match prop.get("title").and_then(Value::as_str) {
                Some(t) if holds == Holds::Text && text::is_question(t) => {
                    lexicon.names_content(name) || lexicon.asks_circumstance(t)
                }
                Some(t) => {
                    (lexicon.names_content(name)
                        && (t.chars().any(text::is_compact_script) || !lexicon.is_blank_request(t)))
                        || lexicon.names_content(t)
                }
                None => lexicon.names_content(name),
            }
        };
        // A free input's `default` is text the user edits in place ("My online banking
        // password is: "): prose, as if the field's description, unless the field names what
        // it holds ("Subject" pre-filled with "Forgot my password"). Elsewhere a hidden text.
        let free = kind.is_free_input();
        if free {
            free_holds.push(holds);
        }
        // A label that says anything of what the field holds ("Query", "Match regex") makes
        // its default that content pre-filled too (`service:auth "invalid password"`); only
        // under a blank label (`value`, untitled) is a default the text to complete.
        let labelled = || {
            own || lexicon.names_something(name)
                || prop
                    .get("title")
                    .and_then(Value::as_str)
                    .is_some_and(|t| lexicon.names_something(t))
        };
        hidden_texts(prop, kind, &mut |at, t| {
            // A configuration template pre-filled in a free input asks the user to complete
            // the variables it assigns: `OPENAI_API_KEY=sk-...`, `DB_PASSWORD=<your password>`.
            if free && at.is_none() {
                let template = assigned_names(t).find_map(|v| {
                    lexicon
                        .scan(v, Role::Label)
                        .filter(|m| holds.fits(m.category))
                });
                if let Some(m) = template {
                    record(
                        hits,
                        lexicon,
                        format!("{}.default", loc()),
                        &m,
                        step::TEMPLATE,
                    );
                    return;
                }
                // A credential's prefix begun in the input (`sk-proj-`, `ghp_`, `SG.`): the
                // rest is the user's to type.
                let begun = t.trim();
                if holds == Holds::Text
                    && (3..=24).contains(&begun.len())
                    && !begun.contains(char::is_whitespace)
                {
                    if let Some(d) = super::pii::pattern_key(&regex::escape(begun)) {
                        let why = Why {
                            because: step::KEY_PREFIX,
                            term: None,
                        };
                        hits.explain(RuleId::FormSecret, format!("{}.default", loc()), d, why);
                        return;
                    }
                }
            }
            // A default without a space is a value or an identifier (`OPENAI_API_KEY`), not
            // a sentence to complete.
            let sentence = t.trim().contains(char::is_whitespace);
            // A blank to complete names what the user types next, every term counting: a
            // label and a colon or a dash ("暗証番号：", "IBAN: DE", a prefix begun, "Код из
            // пуш-уведомления — "), a sentence ending in a copula ("My Social Security number
            // is "), a line to fill ("____"); and under a blank label, a phrase naming what
            // to type ("Your Shopee password", "herstelzin: woord1 … woord12").
            let blank = || {
                let trimmed = t.trim_end();
                trimmed.ends_with([':', '：', '=', '—', '–'])
                    || (sentence && t.contains("__"))
                    // A line left open after the secret it names last: "machine
                    // api.heroku.com login ops@acme.io password ".
                    || (sentence
                        && t.ends_with(' ')
                        && t.split_whitespace()
                            .next_back()
                            .is_some_and(|w| lexicon.scan(w, Role::Label).is_some()))
                    || trimmed
                        .rsplit_once([':', '：'])
                        .is_some_and(|(label, begun)| {
                            !label.trim().is_empty() && begun.trim().chars().count() <= 4
                        })
                    || (sentence && lexicon.ends_with_copula(t))
                    || (!labelled() && sentence && lexicon.is_naming_phrase(t))
            };
            let role = if free && at.is_none() && blank() {
                Role::Label
            } else if free && at.is_none() && sentence {
                // Under a label that names what it holds, a default is that content
                // pre-filled ("Forgot my password", a ticket subject, "Your password was
                // changed" in an e-mail template): a term counts only beside a request
                // verb. A question is asked of the user whatever field holds it ("What was
                // your mother's maiden name?").
                if labelled() && !text::is_question(t) {
                    Role::Hidden
                } else {
                    Role::Prose
                }
            } else {
                Role::Hidden
            };
            let found = lexicon
                .scan(t, role)
                .map(|m| (m, step::HIDDEN))
                .or_else(|| {
                    // Read as a statement: "Which provider's API key are you typing into
                    // Value?" is about the provider, and still says what goes in Value.
                    let stated = t.trim_end().trim_end_matches(['?', '？', '؟']);
                    (role == Role::Hidden && at.is_some() && names_input(t))
                        .then(|| lexicon.scan(stated, Role::Prose))
                        .flatten()
                        .map(|m| (m, step::HIDDEN_PLACED))
                });
            if let Some((m, because)) = found {
                let at = at.map_or_else(|| "default".to_owned(), |f| f());
                hidden.push((format!("{}.{at}", loc()), m, because));
            }
        });
        if !kind.is_free_input() {
            context.choice(name, prop, &loc(), lexicon);
            continue;
        }
        // The form's own texts are instructions for its inputs; when every input is a
        // property of a secret (`key_title`, `min_password_length`), they name the secret as
        // the topic ("Add an SSH key to your profile"), not as something to type.
        let field = Field {
            name,
            prop,
            holds,
            own,
        };
        let before = hits.count();
        let fits = check_field(&field, message, lexicon, &loc(), hits);
        // Nothing named a secret: the field may still ask for one by context or shape.
        if hits.count() == before {
            context.field(&field, message, &loc(), lexicon, hits);
        }
        if fits {
            // An input labelled with what it holds is not a blank the message can fill with
            // a secret it names in passing.
            if !named_format(prop) {
                room.add(holds, own);
            }
        }
    }
    for (at, m, because) in hidden {
        if free_holds.iter().any(|h| h.fits(m.category)) {
            record(hits, lexicon, at, &m, because);
        }
    }
    context.finish(schema, message, lexicon, hits);
    // The message fills only blank inputs: one labelled with what it holds ("Feedback",
    // `order_number`), or shaped as an address or an identifier (`format: email`), says what
    // it takes, whatever secret the message names.
    if !room.has_blank() {
        return;
    }
    // A form with one blank input: its message is about that input. With several, or over
    // an input that names its own content, the message names the form's topic as often as
    // it asks ("Thanks for resetting your password — rate us and tell us why"): it taints
    // the inputs only where it asks, with a request verb.
    let (title_role, prose_role) = if (inputs == 1 || pieces >= 2) && room.has_blank() {
        (Role::Label, Role::Prose)
    } else {
        (Role::Asked, Role::Asked)
    };
    for (kw, role) in [("title", title_role), ("description", prose_role)] {
        if let Some(m) = schema
            .get(kw)
            .and_then(Value::as_str)
            .and_then(|t| lexicon.scan(t, role))
            .filter(|m| room.fits(m.category))
        {
            let at = format!("requestedSchema.{kw}");
            record(hits, lexicon, at, &m, step::FORM_TEXT);
        }
    }
    // Over several inputs a message still asks for what only a shaped input can take: "Bis
    // wann ist Ihre Kreditkarte gültig?" above month and year numbers.
    let asked = |m: &str| {
        // A message that is itself a label ("PAN:", "Pwd:", "PIN: ____") over one blank
        // input names it.
        let label = prose_role == Role::Prose
            && (m.trim_end().ends_with([':', '：']) || m.contains("__"))
            && m.split_whitespace().count() <= 4;
        lexicon
            .scan(m, if label { Role::Label } else { prose_role })
            .filter(|hit| room.fits(hit.category))
            // The message may name the term's benign sense itself: "enter your 6-digit PIN
            // code (postal code) so the courier can route your parcel" (a sense word inside
            // another secret's name is none: "las 12 palabras de tu frase de recuperación").
            .filter(|hit| !lexicon.benign_sense_in(hit.term, m))
            // Over one blank input, a closing request for something else the message names
            // makes an earlier secret its topic.
            .filter(|_| !(prose_role == Role::Prose && lexicon.asks_for_other_content(m)))
            .or_else(|| {
                // A second reading only where it can differ: several inputs, one shaped.
                let shaped = prose_role == Role::Asked && room.0.iter().any(|s| s.shaped());
                shaped
                    .then(|| lexicon.scan(m, Role::Prose))
                    .flatten()
                    .filter(|hit| room.shaped_for(hit.category))
            })
    };
    if let Some(m) = message.and_then(asked) {
        record(hits, lexicon, "message".into(), &m, step::FORM_TEXT);
    }
}

/// What one free input can hold, from its `type`, `format` and `maximum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// A string: any secret.
    Text,
    /// `type: number|integer`: digits only ([`numeric_concept`]).
    Number,
    /// A number below 1000 (`maximum`): three digits at most, so at most a CVV; minutes of
    /// validity, a count of attempts or a rating hold none of the longer numbers.
    ThreeDigits,
    /// One digit of a number split over several boxes ([`one_digit`]): a digit of any
    /// number a secret is written in (a PIN, a one-time code, a card's).
    Digit,
    /// A number below 100: two digits hold no secret (a count, a percentage, a rating)
    /// but the month or year of a card's expiry.
    TwoDigits,
    /// A number labelled with a unit or a count ("Days until a password must be changed",
    /// "Number of users without MFA", "Remind me this many days before my card expires"): a
    /// quantity, no secret (months and years are no units here).
    Quantity,
    /// `format: date|date-time|time`: a date, so at most a card's expiry.
    Date,
    /// `format: email|hostname|ipv4|ipv6|uuid`: an address or identifier, no secret.
    Address,
    /// A `pattern` of fixed words (`^(yes|no)$`, `^DELETE$`): one of them, no secret.
    Fixed,
    /// `format: uri`: a link, which carries a password only as credentials in it
    /// (`postgres://user:pass@host`, "Database URL"); a link to a password-reset page or a
    /// webhook for expiring tokens holds none.
    Link,
}

impl Holds {
    /// A one-digit number among the boxes of a split number holds a digit of it.
    fn split(self, boxes: bool) -> Holds {
        if boxes && self == Holds::TwoDigits {
            Holds::Digit
        } else {
            self
        }
    }

    fn of(name: &str, prop: &Value, kind: schema::PropKind, lexicon: &SecretLexicon) -> Holds {
        if matches!(kind, schema::PropKind::Number { .. }) {
            // An amount of money counts too: "Require a delivery PIN for orders over ($)".
            let counted = || {
                lexicon.names_quantity(name)
                    || prop
                        .get("title")
                        .and_then(Value::as_str)
                        .is_some_and(|t| lexicon.names_quantity(t) || t.contains(CURRENCY))
            };
            return match prop.get("maximum").and_then(Value::as_f64) {
                _ if counted() => Holds::Quantity,
                Some(max) if max < 100.0 => Holds::TwoDigits,
                Some(max) if max < 1000.0 => Holds::ThreeDigits,
                _ => Holds::Number,
            };
        }
        match prop.get("format").and_then(Value::as_str) {
            Some(f) if DATE_FORMATS.contains(&f) => Holds::Date,
            Some("email" | "idn-email" | "hostname" | "ipv4" | "ipv6" | "uuid") => Holds::Address,
            Some("uri" | "iri" | "uri-reference" | "iri-reference") => Holds::Link,
            _ if ["title", "description"].iter().any(|k| {
                prop.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(shows_full_date)
            }) =>
            {
                Holds::Date
            }
            _ if fixed_words(prop) => Holds::Fixed,
            _ => Holds::Text,
        }
    }

    fn fits(self, c: Category) -> bool {
        match self {
            Holds::Text => true,
            Holds::Number => numeric_concept(c),
            Holds::ThreeDigits => c == Category::Cvv,
            Holds::Digit => numeric_concept(c) && c != Category::Password,
            Holds::TwoDigits => c == Category::CardExpiry,
            Holds::Quantity => false,
            Holds::Date => c == Category::CardExpiry,
            Holds::Address | Holds::Fixed => false,
            Holds::Link => matches!(c, Category::Credentials | Category::Custom),
        }
    }
}

/// Does the text input's `pattern` take fixed words only (`^(yes|no)$`, `^DELETE$`,
/// `^(?:sms|email)$`): a choice written as a pattern, which no secret matches?
fn fixed_words(prop: &Value) -> bool {
    let Some(p) = prop.get("pattern").and_then(Value::as_str) else {
        return false;
    };
    let Some(p) = p.strip_prefix('^').and_then(|p| p.strip_suffix('$')) else {
        return false;
    };
    let p = p.strip_prefix("(?i)").unwrap_or(p);
    let p = p
        .strip_prefix("(?:")
        .or_else(|| p.strip_prefix('('))
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(p);
    p.split('|').all(|w| {
        !w.is_empty()
            && w.len() <= 24
            && w.chars().any(|c| c.is_alphabetic())
            && w.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
    })
}

/// Prepositions placing a text in an input: "I typed the CVV in Extra info", "pasting the
/// secret into Details", "im Feld Antwort", "dans le champ Réponse".
const PLACE_PREPOSITIONS: &[&str] = &[
    "in", "into", "inside", "under", "im", "ins", "unter", "dans", "en", "em", "no", "na", "nel",
    "nella", "nell", "nello", "в", "во", "w", "we", "di", "ke",
];

/// Verbs saying what an input holds, right after its label: "Value holds", "Field 1
/// contains".
const HOLDING_VERBS: &[&str] = &["holds", "contains", "has", "is", "enthalt", "contient"];

/// Currency signs: a number titled with one is an amount.
const CURRENCY: &[char] = &[
    '$', '€', '£', '¥', '₹', '₽', '₴', '₩', '₺', '₫', '฿', '₱', '₦', '₪', '₸', '₼', '₾', '﷼',
];

/// One kind of input of a form: what it can hold, and whether its label names what it
/// holds (`rating`, "Feedback") rather than leaving it blank (`value`, `month`, untitled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    holds: Holds,
    own: bool,
}

impl Slot {
    /// A blank input that is not free text: its shape (a number, a date) says what it is
    /// for, where a text input says nothing.
    fn shaped(&self) -> bool {
        self.holds != Holds::Text && !self.own
    }
}

/// The inputs of one form, by what they can hold.
#[derive(Debug, Default)]
struct Room(Vec<Slot>);

impl Room {
    fn add(&mut self, holds: Holds, own: bool) {
        let slot = Slot { holds, own };
        if !self.0.contains(&slot) {
            self.0.push(slot);
        }
    }
    /// Some input's label leaves it blank.
    fn has_blank(&self) -> bool {
        self.0.iter().any(|s| !s.own)
    }
    /// A blank input can hold `c`.
    fn fits(&self, c: Category) -> bool {
        self.0.iter().any(|s| !s.own && s.holds.fits(c))
    }
    /// A blank shaped input takes `c` ([`Slot::shaped`]) by its shape: a PIN, a code, a
    /// card's digits or expiry; a password of digits is possible, but a number field is no
    /// sign of one.
    fn shaped_for(&self, c: Category) -> bool {
        c != Category::Password && self.0.iter().any(|s| s.shaped() && s.holds.fits(c))
    }
}

/// Formats that say what a field holds and that no secret has (an e-mail address, a host):
/// their descriptions mention secrets only as instructions ("we will send a verification
/// code to this address"), so a term there needs a request cue, and a message naming a
/// secret does not fill them.
const NAMED_FORMATS: &[&str] = &[
    "email",
    "idn-email",
    "uri",
    "iri",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Does `text` show the format of a full date, a day, a month and a year as runs of one
/// repeated letter joined by `-`, `/` or `.` ("(YYYY-MM-DD)", "GG.AA.YYYY", "ปปปป-ดด-วว")?
/// A field so labelled holds a date, whatever secret its label names ("Password last
/// changed (YYYY-MM-DD)"); a card's expiry is month and year only (`MM/YY`).
fn shows_full_date(text: &str) -> bool {
    let one_letter_run = |part: &str| {
        let mut chars = part.chars().flat_map(char::to_lowercase);
        let first = chars.next();
        let n = part.chars().count();
        first.is_some_and(|f| f.is_alphabetic() && chars.all(|c| c == f)) && (n == 2 || n == 4)
    };
    if !text.contains(['-', '/', '.']) {
        return false;
    }
    text.split(|c: char| !(c.is_alphabetic() || matches!(c, '-' | '/' | '.')))
        .any(|token| {
            let mut n = 0;
            token.split(['-', '/', '.']).all(|p| {
                n += 1;
                n <= 3 && one_letter_run(p)
            }) && n == 3
        })
}

/// Formats of a date: at most a card's expiry ([`Holds::Date`]).
const DATE_FORMATS: &[&str] = &["date", "date-time", "time"];

/// A property in one of the [`NAMED_FORMATS`].
fn named_format(prop: &Value) -> bool {
    prop.get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| NAMED_FORMATS.contains(&f))
}

/// Concepts a number can hold: a numeric field (`type: number|integer`) cannot take a key,
/// token or phrase, so a "seed" or "token" there is something else; a password of digits
/// (a passcode, a payment password) it can.
fn numeric_concept(c: Category) -> bool {
    matches!(
        c,
        Category::Pin
            | Category::Password
            | Category::Otp
            | Category::Card
            | Category::CardExpiry
            | Category::Cvv
            | Category::Bank
            | Category::NationalId
            | Category::Custom
    )
}

/// The variables a configuration template assigns, one per line (`OPENAI_API_KEY=sk-...`,
/// `export DB_PASSWORD=`): names of letters, digits and underscores only, so prose with an
/// equals sign ("a = b") assigns none.
fn assigned_names(t: &str) -> impl Iterator<Item = &str> {
    t.lines().filter_map(|line| {
        let (name, _) = line.split_once('=')?;
        let name = name.trim();
        let name = name.strip_prefix("export ").unwrap_or(name).trim();
        let ident = name.len() >= 3
            && name.contains('_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ident.then_some(name)
    })
}

/// A number input that takes one digit (`maximum` 9 at most, no negative `minimum`).
fn one_digit(prop: &Value) -> bool {
    let num = |k: &str| prop.get(k).and_then(Value::as_f64);
    matches!(
        prop.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    ) && num("maximum").is_some_and(|m| m <= 9.0)
        && num("minimum").is_none_or(|m| m >= 0.0)
}

/// A free input as [`check_field`] reads it.
struct Field<'a> {
    name: &'a str,
    prop: &'a Value,
    /// What it can hold ([`Holds::of`]).
    holds: Holds,
    /// Its name or title names what it holds ([`SecretLexicon::names_content`]).
    own: bool,
}

/// One free-input field, decided from its name, title and description together. Returns
/// whether it is an input of its own (not a property of a secret).
fn check_field(
    field: &Field<'_>,
    message: Option<&str>,
    lexicon: &SecretLexicon,
    loc: &str,
    hits: &mut Hits,
) -> bool {
    let Field {
        name,
        prop,
        holds,
        own,
    } = *field;
    let title = prop.get("title").and_then(Value::as_str);
    let description = prop.get("description").and_then(Value::as_str);
    // A field shaped as an address reads its description as an instruction: a term there
    // counts only beside a request verb.
    let prose = if named_format(prop) {
        Role::Hidden
    } else {
        Role::Prose
    };
    // A description with an example ("e.g.", "例如") under a label that says what the field
    // holds reads the example as that content's topic, where a term counts beside a request
    // cue only ("Subject": "e.g. Forgot my password"; "Error code": "e.g. 401
    // invalid_api_key"). Under a label naming its content the whole description is about it
    // ("令牌备注": "用于区分不同令牌，例如…"); under another only the example is, and what comes
    // before it may ask ("Verbindungs-URI": "Inkl. Zugangsdaten, z. B. mysql://…"). Under a
    // blank label ("Value": "e.g. your GitHub token") an example is what to type.
    let labelled = || own || lexicon.names_something(title.unwrap_or(name));
    let scan_description = |d: &str| match lexicon.example_split(d) {
        Some(_) if prose == Role::Prose && own => lexicon.scan(d, Role::Cued),
        Some((before, example)) if prose == Role::Prose && labelled() => lexicon
            .scan(&before, Role::Prose)
            .or_else(|| lexicon.scan(&example, Role::Cued)),
        _ => lexicon.scan(d, prose),
    };
    let (name_scan, name_attribute) = lexicon.scan_detail(name, Role::Label);
    let (title_hit, title_attribute) = match title {
        Some(t) => lexicon.scan_detail(t, Role::Label),
        None => (None, false),
    };
    // A title that opens with the very secret the name holds a word of overrules the name
    // read as its property: `lost_card_number` titled "Full card number", `code_email`
    // titled "Code reçu par e-mail" (not "Team that owns the deploy token").
    let title_opens_with_name = || {
        let (Some(t), Some(m)) = (title, title_hit.as_ref()) else {
            return false;
        };
        let phrase: Vec<String> = lexicon
            .phrase(m.term)
            .map(|p| {
                text::words(p)
                    .iter()
                    .map(|w| w.folded.clone())
                    .filter(|w| !lexicon.is_linker(w))
                    .collect()
            })
            .unwrap_or_default();
        let title_words: Vec<String> = text::words(t).iter().map(|w| w.folded.clone()).collect();
        let name_words: HashSet<String> =
            text::words(name).iter().map(|w| w.folded.clone()).collect();
        // The name's other words (what made it a property: `name`, `channel`, `preview`)
        // are not the title's.
        let others_absent = name_words
            .iter()
            .filter(|w| !phrase.contains(w) && !lexicon.is_linker(w))
            .all(|w| !title_words.contains(w));
        // A longer phrase may add one qualifier the name leaves out ("full card number").
        let missing = phrase.iter().filter(|w| !name_words.contains(*w)).count();
        !phrase.is_empty()
            && (missing == 0 || (missing == 1 && phrase.len() >= 3))
            && others_absent
            && title_words
                .iter()
                .position(|w| w == &phrase[0])
                .is_some_and(|k| k <= 2)
    };
    if title_attribute || (name_attribute && !title_opens_with_name()) {
        // `password_expiry_days`, "Minimum password length", "Title for the SSH key": a
        // property of a secret, whatever its other texts say about the secret.
        return false;
    }
    // The field's texts and the form's message: where a benign sense may be named ("Drop a
    // pin on the map" above a field titled "Label for the pin").
    let texts: Vec<&str> = [Some(name), title, description, message]
        .into_iter()
        .flatten()
        .collect();
    // `part` is appended to the field's location, built only for a finding.
    let report = |part: &str,
                  m: Option<crate::lexicon::Match<'_>>,
                  because: &'static str,
                  hits: &mut Hits| match m {
        Some(m) if !lexicon.benign_sense(m.term, &texts) && holds.fits(m.category) => {
            record(hits, lexicon, format!("{loc}{part}"), &m, because);
            true
        }
        _ => false,
    };
    // A weak term in the name (`pwd`, `pin`, `tkn`) is overruled by a title, the label the
    // user reads, that names no secret ("Working directory", "Postal code"); so is any term
    // by a title that restates the name in a sense that is no secret (`credentials` titled
    // "Professional credentials").
    let restated = |t: &str| {
        let title_words: HashSet<String> =
            text::words(t).iter().map(|w| w.folded.clone()).collect();
        let name_words = text::words(name);
        !name_words.is_empty() && name_words.iter().all(|w| title_words.contains(&w.folded))
    };
    let name_term = name_scan.as_ref().map(|m| m.term);
    // A title naming a secret the field cannot hold ("マイナンバーカードの有効期限" over a date, a
    // document's expiry) names no secret here either.
    let title_silent = title_hit.as_ref().is_none_or(|h| !holds.fits(h.category));
    let name_hit =
        name_scan.filter(|m| !(title_silent && title.is_some_and(|t| m.weak || restated(t))));
    let mut found = report("", name_hit, step::LABEL, hits);
    found |= report(".title", title_hit, step::LABEL, hits);
    if let Some(d) = description {
        // Under a blank label ("Value", untitled) a description that is a phrase naming a
        // thing names what the field holds: "The PIN of the SIM card inserted in the modem".
        let named = || {
            (!labelled() && lexicon.is_naming_phrase(d))
                .then(|| lexicon.scan(d, Role::Label))
                .flatten()
        };
        found |= report(
            ".description",
            scan_description(d).or_else(named),
            step::DESCRIPTION,
            hits,
        );
    }
    if !found {
        // A name split across the field's texts: `api` titled "Key", `card` described as
        // "number". Descriptions of up to three words only: a sentence is prose, not a name.
        let few_words = |t: &str| t.len() <= 48 && t.split_whitespace().count() <= 3;
        // An example ("e.g. DB_PASSWORD", "যেমন: Google Authenticator") names no part of
        // the field's own name.
        let short = description.filter(|d| few_words(d) && !lexicon.gives_example(d));
        let split = lexicon.may_continue(name) || title.is_some_and(|t| lexicon.may_continue(t));
        if split && (title.is_some_and(few_words) || short.is_some()) {
            let joined = [Some(name), title, short]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            // A one-word name and title also glued, for languages that write one word
            // (`Pass` titled "wort").
            let one_word = |t: &str| !t.is_empty() && t.chars().all(char::is_alphabetic);
            let glued = title
                .filter(|t| one_word(name) && one_word(t))
                .map(|t| format!("{name}{t}"));
            let joined_hit = lexicon
                .scan(&joined, Role::Label)
                .or_else(|| glued.and_then(|g| lexicon.scan(&g, Role::Label)))
                // The name's own term, which a title restating it overruled ("Customer
                // account number" for `account_number`), is no term split across the two.
                .filter(|m| !m.weak && Some(m.term) != name_term);
            report(".title", joined_hit, step::SPLIT, hits);
        }
    }
    true
}

/// The texts of a property that cannot receive a secret but can ask for one elsewhere:
/// enum option titles (`oneOf`/`anyOf`, also under `items`), `enumNames` (the `enum` values
/// where there are none), `default`, and a
/// boolean's or a choice's own title and description.
/// A hidden text's location relative to its property, built only for a finding; `None` for
/// the `default`.
type HiddenAt<'a> = Option<&'a dyn Fn() -> String>;

/// `each` takes the text's location ([`HiddenAt`]) and the text.
fn hidden_texts(prop: &Value, kind: schema::PropKind, each: &mut dyn FnMut(HiddenAt<'_>, &str)) {
    if let Some(d) = prop.get("default").and_then(Value::as_str) {
        each(None, d);
    }
    if !kind.is_free_input() {
        for kw in ["title", "description"] {
            if let Some(t) = prop.get(kw).and_then(Value::as_str) {
                each(Some(&|| kw.to_owned()), t);
            }
        }
    }
    let mut options = |v: &Value, prefix: &str| {
        for kw in ["oneOf", "anyOf"] {
            for (i, opt) in v
                .get(kw)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                for field in ["title", "description"] {
                    if let Some(t) = opt.get(field).and_then(Value::as_str) {
                        each(Some(&|| format!("{prefix}{kw}[{i}].{field}")), t);
                    }
                }
            }
        }
        // Without `enumNames` a client shows the `enum` values themselves as the choices'
        // texts ("I'll type the code from my authenticator app in the Response box").
        let names = v.get("enumNames").and_then(Value::as_array);
        let (kw, texts) = match names {
            Some(names) => ("enumNames", Some(names)),
            None => ("enum", v.get("enum").and_then(Value::as_array)),
        };
        for (i, t) in texts.into_iter().flatten().enumerate() {
            if let Some(t) = t.as_str() {
                each(Some(&|| format!("{prefix}{kw}[{i}]")), t);
            }
        }
    };
    options(prop, "");
    if let Some(items) = prop.get("items") {
        options(items, "items.");
    }
}

mod context;
#[cfg(test)]
mod tests;
