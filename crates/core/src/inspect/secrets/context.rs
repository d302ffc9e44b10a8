//! Secrets a form asks for by context or shape rather than by a term: a card's expiry under
//! a bare expiry or month/year label beside a payment card, an answer field on a form that
//! names a security question, a verification label above a code-shaped pattern, a
//! connection string with a password shown in a field, a pattern that takes a well-known
//! credential format or a card's number lengths.
//!
//! Owns: collecting such fields while [`super::check_form`] walks the schema
//! ([`Context::field`], for the fields no term decided) and the form-wide decisions once
//! every field is read ([`Context::finish`]). The words are the lexicon's word classes
//! (`expiry`, `dates`, `cards`, `month_year`, `months_years`, `answers`,
//! `security_questions`, `verification` in `data/shared.txt`).

use serde_json::Value;

use super::super::{pii, urls};
use super::{schema, Field, Hits, Holds, Role, RuleId, SecretLexicon, Why};
use crate::lexicon::Category;
use crate::text::fold as text;

/// The steps of the decision procedure these rules take (docs/policy.md, "Asks by shape and
/// context"), as a finding explains itself.
mod step {
    pub const EXPIRY: &str =
        "the field's label names an expiry (or a month or a year of one), and the form names a payment card or the field a month/year format";
    pub const ANSWER: &str =
        "the field's label names an answer, and the form names a security question";
    pub const CODE_SHAPE: &str =
        "the field's label names a verification and its pattern takes a code of four to eight digits";
    pub const RECALL: &str =
        "the field's title (over a blank, the form's message) is a classic security question, and the form names an account recovery or an identity check";
    pub const CONNECTION: &str = "the field shows the shape of a connection string with a password";
    pub const DATABASE_URL: &str =
        "the field's label or pattern begins a database URL, which carries its credentials";
    pub const CODE_MESSAGE: &str =
        "the field is a blank shaped as a code of four to eight characters, and the form's message names a one-time code";
    pub const VARIABLE: &str =
        "the field is a blank for a value, and the form's message names a variable that holds a secret";
    pub const DOCUMENT: &str =
        "the field's label is a document's number named generically, and the form names an identity document";
    pub const CODE_SENT: &str =
        "the field's label is a code word alone, and the form's message says how the code was sent";
    pub const KEY_FORMAT: &str = "the field's pattern takes a well-known credential format";
    pub const ACRONYM: &str =
        "the field's label names a national number by its capitals (SIN, NINO, NIE, PAN)";
    pub const CARD_SHAPE: &str =
        "the field takes the lengths of a payment card's number and nothing else (its pattern, or its length beside a card)";
}

/// Fields collected for the form-wide decisions.
#[derive(Default)]
pub(super) struct Context<'a> {
    /// Inputs labelled with a bare expiry ([`Context::card_expiries`]).
    expiries: Vec<(String, &'a Value)>,
    /// Inputs labelled with a month or a year only.
    parts: Vec<(String, &'a Value)>,
    /// Text inputs labelled with an answer only ([`Context::security_answers`]).
    answers: Vec<String>,
    /// Text inputs titled with a classic security question ([`Context::security_answers`]).
    recalls: Vec<String>,
    /// Blank inputs shaped as a card's number (13 to 19 characters, or a pattern of 15 or 16
    /// digits), its security code (a pattern of 3 digits) or its expiry
    /// (`^\d{2}/\d{2}$`): the card's when the form names a card ([`Context::card_shapes`]).
    shapes: Vec<(String, Category)>,
    /// Blank inputs shaped as a one-time code: four to eight characters by their lengths,
    /// or digits by their pattern ([`Context::code_shapes`]).
    codes: Vec<String>,
    /// Free text inputs labelled as a blank for a value ("Value", "Variable value", "Text")
    /// ([`Context::variable_values`]).
    values: Vec<String>,
    /// Text inputs labelled as a document's number generically ("Document number", "ID
    /// number") ([`Context::document_numbers`]).
    documents: Vec<String>,
}

impl<'a> Context<'a> {
    /// Read one free input no term decided: collect it for the form-wide rules, or record
    /// what its shape asks for (a verification code, credentials).
    pub(super) fn field(
        &mut self,
        field: &Field<'a>,
        message: Option<&str>,
        loc: &str,
        lexicon: &SecretLexicon,
        hits: &mut Hits,
    ) {
        let Field {
            name, prop, holds, ..
        } = *field;
        let title = prop.get("title").and_then(Value::as_str);
        let label = title.unwrap_or(name);
        // Whether the label names anything, read once: several rules ask.
        let label_names_cell = std::cell::OnceCell::new();
        let label_names = || *label_names_cell.get_or_init(|| lexicon.names_something(label));
        // A national number named by its capitals ("SIN (9 digits)", "NINO"): written in
        // lower case the same letters are common words ("sin", "niño", "nie", "pan").
        if holds.fits(Category::NationalId) && lexicon.names_acronym(label) {
            explain(hits, loc, "secret.context:national_id", step::ACRONYM);
            return;
        }
        // A label that is a code word alone ("Code", "Código", "Kode"), under a message
        // saying how the code came ("We just called you and read out a six-digit code",
        // "Te enviamos un código a tu correo"): the one-time code, as the label would be
        // with those words in it.
        if holds.fits(Category::Otp) {
            // (Word counts say nothing of scripts written without spaces.)
            let short = !label_names()
                && (1..=2).contains(&text::words(label).len())
                && !label.chars().any(text::is_compact_script);
            let own = |p: &str| {
                let words = |t: &str| -> Vec<String> {
                    text::words(t).iter().map(|w| w.folded.clone()).collect()
                };
                // The match opens at the label (it may run on: "Code. We texted").
                words(p).starts_with(&words(label))
            };
            let code_at_label = |t: &str| {
                lexicon.scan(t, Role::Label).filter(|h| {
                    h.category == Category::Otp && lexicon.phrase(h.term).is_some_and(own)
                })
            };
            // The label must be such a code word (it is one beside "sent") before the whole
            // message is read with it.
            let code_word = || code_at_label(&format!("{label} sent")).is_some();
            if let Some(m) = message.filter(|_| short && code_word()) {
                if let Some(hit) = code_at_label(&format!("{label}. {m}")) {
                    explain(hits, loc, hit.detector, step::CODE_SENT);
                    return;
                }
            }
        }
        let names = lexicon.label_sense(name);
        let titles = title.map(|t| lexicon.label_sense(t)).unwrap_or_default();
        // A part of a date by the label the user reads: the name stands in only without a
        // title (a field named `date` titled "희망 수령일", a delivery date, is no card's).
        let part = if title.is_some() {
            titles.month_or_year
        } else {
            names.month_or_year
        };
        // A number counting something ("Days before expiry") is no card's expiry.
        let counted = || {
            holds != Holds::Text
                && (lexicon.names_quantity(name)
                    || title.is_some_and(|t| lexicon.names_quantity(t)))
        };
        // Under a blank label ("Value", "Input") the description says what the field holds:
        // "Key in the new expiry date from your replacement card (MM/YY)".
        // A description that says what a field holds is a phrase, not a page: one of a
        // few words is read, the label first.
        let described_expiry = || {
            !label_names()
                && prop
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| d.len() <= 160 && lexicon.names_expiry(d))
        };
        // A question for a title and an answer in the description: the question itself
        // ("您小学班主任的姓名是？", "请输入注册时设置的答案").
        let answered_question = || {
            title.is_some_and(crate::text::fold::is_question)
                && prop
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| d.len() <= 160 && lexicon.names_answer(d))
        };
        if holds.fits(Category::CardExpiry)
            && (names.bare_expiry || titles.bare_expiry || described_expiry())
            && !counted()
        {
            self.expiries.push((loc.to_owned(), prop));
        } else if holds == Holds::Text && (names.answer || titles.answer || answered_question()) {
            self.answers.push(loc.to_owned());
        } else if holds == Holds::Text
            && (title.is_some_and(|t| lexicon.asks_recall_question(t))
                // Or the message's last sentence asks it above a blank ("Account recovery: in
                // what city were you born?" over "Your reply").
                || (!label_names()
                    && message.is_some_and(|m| {
                        let last = m.trim_end().trim_end_matches(['.', '!', '。']);
                        let last = last.rsplit(['.', '!', '。']).next().unwrap_or(last);
                        last.len() <= 200 && lexicon.asks_recall_question(last)
                    })))
        {
            self.recalls.push(loc.to_owned());
        } else if holds.fits(Category::CardExpiry) && part {
            self.parts.push((loc.to_owned(), prop));
        }
        // A blank input shaped as a card's number or its expiry, decided once the form is
        // read: "Value" of 13 to 19 characters on a form adding a payment card. Under a
        // label that is the bare word for a card ("Card", "Kartu", `บัตร`) that shape is the
        // card's number whatever the form says.
        let digits = digits_range(prop);
        let len = |k: &str| prop.get(k).and_then(Value::as_u64);
        let card_lengths = len("minLength").is_some_and(|n| (12..=15).contains(&n))
            && len("maxLength").is_some_and(|n| (16..=19).contains(&n));
        let card_shape =
            card_lengths || digits.is_some_and(|(lo, hi)| (15..=16).contains(&lo) && hi <= 16);
        let card_label = holds == Holds::Text && card_shape && lexicon.is_card_word(label);
        if holds == Holds::Text && (card_label || !label_names()) {
            let expiry_shape = prop
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|p| matches!(p, "^\\d{2}/\\d{2}$" | "^[0-9]{2}/[0-9]{2}$"));
            // Fifteen or sixteen digits exactly (`^[0-9]{16}$`): a card's number too, on a
            // form naming a card; three exactly, its security code (four is as often the
            // last four digits that tell a saved card apart).
            if card_shape {
                if card_label {
                    explain(hits, loc, "secret.context:card", step::CARD_SHAPE);
                    return;
                }
                self.shapes.push((loc.to_owned(), Category::Card));
            } else if card_label {
                // The bare card word names no part of a card by another shape.
            } else if digits == Some((3, 3)) && !counted() {
                self.shapes.push((loc.to_owned(), Category::Cvv));
            } else if expiry_shape {
                self.shapes.push((loc.to_owned(), Category::CardExpiry));
            }
        }
        if holds == Holds::Text && label_names() && lexicon.is_id_number_label(label) {
            self.documents.push(loc.to_owned());
        }
        if holds == Holds::Text && code_shape(prop) && lexicon.is_blank_request(label) {
            self.codes.push(loc.to_owned());
        }
        // (Not one whose pattern takes a variable's name: `^[A-Z_][A-Z0-9_]*$`.)
        let names_variable = prop
            .get("pattern")
            .and_then(Value::as_str)
            .is_some_and(|p| p.starts_with("^[A-Z"));
        if holds == Holds::Text
            && !names_variable
            && (!label_names() || (lexicon.names_blank(label) && !lexicon.names_content(label)))
        {
            self.values.push(loc.to_owned());
        }
        // A one-time code asked by its shape: an input labelled with a verification whose
        // pattern takes four to eight digits ("Verify it's you", `^[0-9]{6}$`).
        // A number ranging over such codes counts too (`maximum: 999999`), and under a blank
        // label a short description names the verification ("The verification number we
        // emailed to you", "Current 6-digit number shown on your hardware token").
        let described_verification = || {
            !label_names()
                && prop
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| d.len() <= 160 && lexicon.label_sense(d).verification)
        };
        if holds.fits(Category::Otp)
            && (digits_pattern(prop) || code_range(prop))
            && (names.verification || titles.verification || described_verification())
        {
            explain(hits, loc, "secret.context:otp", step::CODE_SHAPE);
        }
        // A card's number asked by its shape: a pattern of the card lengths only, under a
        // label that names no other content ("Order number" may take those lengths too).
        if holds.fits(Category::Card) && card_pattern(prop) && !lexicon.names_content(label) {
            explain(
                hits,
                &format!("{loc}.pattern"),
                "secret.context:card",
                step::CARD_SHAPE,
            );
        }
        // A credential asked by its format: the field's pattern opens with a well-known one
        // (`^gh[pousr]_…`, `^sk-…`, `^whsec_…`, `^-----BEGIN OPENSSH PRIVATE KEY-----`), or
        // its label or description shows one's prefix ("Begins with NRAK-", "xoxb-…").
        if holds == Holds::Text {
            if let Some(d) = prop
                .get("pattern")
                .and_then(Value::as_str)
                .and_then(pii::pattern_key)
            {
                explain(hits, &format!("{loc}.pattern"), d, step::KEY_FORMAT);
            } else if let Some((at, d)) = ["title", "description"].into_iter().find_map(|k| {
                let t = prop.get(k).and_then(Value::as_str)?;
                shown_prefixes(t).find_map(pii::pattern_key).map(|d| (k, d))
            }) {
                explain(hits, &format!("{loc}.{at}"), d, step::KEY_FORMAT);
            }
        }
        // Credentials asked by their shape: the field shows a connection string with a
        // password ("e.g. postgresql://benutzer:passwort@host:5432/db"), or its label or
        // pattern begins a database URL ("Line starting with postgres://").
        if holds == Holds::Text
            && ["title", "description", "default"]
                .into_iter()
                .filter_map(|k| prop.get(k).and_then(Value::as_str))
                .any(urls::shows_connection_with_password)
        {
            explain(hits, loc, "secret.context:credentials", step::CONNECTION);
        } else if holds == Holds::Text
            && ["title", "pattern"]
                .into_iter()
                .filter_map(|k| prop.get(k).and_then(Value::as_str))
                .any(urls::names_database_url)
        {
            explain(hits, loc, "secret.context:credentials", step::DATABASE_URL);
        }
    }

    /// Read one choice: a list of the twelve months or of the coming years, labelled with an
    /// expiry, a month or a year ("Expiry month", "Year"), is one part of a card's expiry
    /// chosen rather than typed, decided as a typed part is ([`Context::card_expiries`]).
    pub(super) fn choice(
        &mut self,
        name: &str,
        prop: &'a Value,
        loc: &str,
        lexicon: &SecretLexicon,
    ) {
        if !(month_choice(prop) || year_choice(prop)) {
            return;
        }
        let label = prop.get("title").and_then(Value::as_str).unwrap_or(name);
        let sense = lexicon.label_sense(label);
        if sense.bare_expiry || sense.month_or_year {
            self.parts.push((loc.to_owned(), prop));
        }
    }

    /// Decide what the collected fields ask, the whole form read.
    pub(super) fn finish(
        self,
        schema: &Value,
        message: Option<&str>,
        lexicon: &SecretLexicon,
        hits: &mut Hits,
    ) {
        if self.expiries.is_empty()
            && self.parts.is_empty()
            && self.answers.is_empty()
            && self.recalls.is_empty()
            && self.shapes.is_empty()
            && self.codes.is_empty()
            && self.values.is_empty()
            && self.documents.is_empty()
        {
            return;
        }
        let form = Form { schema, message };
        self.code_shapes(message, lexicon, hits);
        self.variable_values(message, lexicon, hits);
        self.document_numbers(&form, lexicon, hits);
        self.card_shapes(&form, lexicon, hits);
        self.card_expiries(&form, lexicon, hits);
        self.security_answers(&form, lexicon, hits);
    }

    /// A card's expiry asked by context: an input that can hold it, labelled with an expiry
    /// or a validity alone ("Date d'expiration", "Son kullanma tarihi", `有効期限（月）`),
    /// asks for a card's when its own texts write a month/year format (`MM/AA`,
    /// "Monat/Jahr", a pattern of months) or the form names a payment card anywhere
    /// ("Complétez les informations de votre carte bancaire"). A membership's or a
    /// document's expiry on a form without a card passes.
    ///
    /// An input labelled with a month or a year only ("Month", "Año") is one part of a
    /// card's expiry when the form names a payment card and either an expiry (the message, a
    /// title) or a month in a pattern (`^(0[1-9]|1[0-2])$`).
    fn card_expiries(&self, form: &Form<'_>, lexicon: &SecretLexicon, hits: &mut Hits) {
        if self.expiries.is_empty() && self.parts.is_empty() {
            return;
        }
        let months = |prop: &Value| {
            own_texts(prop).any(|t| lexicon.shows_month_year(t))
                || prop
                    .get("pattern")
                    .and_then(Value::as_str)
                    .is_some_and(|p| p.contains("0[1-9]|1[0-2]") || p.contains("0[1-9]|1[012]"))
        };
        let card = || {
            form.texts()
                .any(|t| lexicon.names_card(t) || lexicon.names_card_expiring(t))
        };
        let mut named_card = None;
        for (at, prop) in &self.expiries {
            if months(prop) || *named_card.get_or_insert_with(card) {
                explain(hits, at, "secret.context:card_expiry", step::EXPIRY);
            }
        }
        // A month and a year together beside a card are its expiry, named or not
        // ("Verifica la tarjeta guardada antes del próximo cargo": Mes, Año), the month
        // typed or chosen from the twelve.
        if !self.parts.is_empty()
            && *named_card.get_or_insert_with(card)
            && (self.parts.len() >= 2
                || schema::properties(form.schema)
                    .is_some_and(|props| props.values().any(month_choice))
                || self.parts.iter().any(|(_, p)| months(p))
                || form.texts().any(|t| lexicon.names_expiry(t)))
        {
            for (at, _) in &self.parts {
                explain(hits, at, "secret.context:card_expiry", step::EXPIRY);
            }
        }
    }

    /// A blank input shaped as a one-time code asks for the code the message names ("Un code
    /// vient d'être envoyé à c•••@orange.fr. Merci de le recopier ci-dessous" above "Valeur"
    /// of six characters and "Faire confiance à cet appareil"), whatever else the message
    /// says of it: the shape says what goes in.
    fn code_shapes(&self, message: Option<&str>, lexicon: &SecretLexicon, hits: &mut Hits) {
        if self.codes.is_empty() {
            return;
        }
        let named = message.and_then(|m| {
            lexicon
                .scan(m, Role::Label)
                .filter(|h| h.category == Category::Otp && !lexicon.benign_sense_in(h.term, m))
        });
        if let Some(hit) = named {
            for at in &self.codes {
                explain(hits, at, hit.detector, step::CODE_MESSAGE);
            }
        }
    }

    /// A document's number named generically ("Document number", "License / ID number")
    /// is an identity number on a form that names an identity document anywhere: its
    /// message, a title, or the choices of document ("Driver's license", "State ID").
    fn document_numbers(&self, form: &Form<'_>, lexicon: &SecretLexicon, hits: &mut Hits) {
        if self.documents.is_empty() {
            return;
        }
        // The choices' texts as the client shows them (`enumNames`, `oneOf` titles, else the
        // `enum` values themselves), read by the walk the hidden texts take.
        let mut named = form.texts().any(|t| lexicon.names_id_document(t));
        for prop in schema::properties(form.schema)
            .into_iter()
            .flatten()
            .map(|(_, p)| p)
        {
            if !named {
                super::hidden_texts(prop, schema::kind_of(prop), &mut |_, t| {
                    named |= lexicon.names_id_document(t);
                });
            }
        }
        if named {
            for at in &self.documents {
                explain(hits, at, "secret.context:national_id", step::DOCUMENT);
            }
        }
    }

    /// A blank for a value takes the value of the variable the message names when that
    /// variable, written as one (`AWS_SECRET_ACCESS_KEY`, `STRIPE_SECRET_KEY`), names a
    /// secret: "Add masked CI/CD variable AWS_SECRET_ACCESS_KEY" above "Variable value".
    fn variable_values(&self, message: Option<&str>, lexicon: &SecretLexicon, hits: &mut Hits) {
        let Some(m) = message.filter(|_| !self.values.is_empty()) else {
            return;
        };
        let variable = |w: &str| {
            let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            w.contains('_')
                && w.len() <= 64
                && w.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
                && w.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        };
        let named = m
            .split_whitespace()
            .filter(|w| variable(w))
            .find_map(|w| lexicon.scan(w, Role::Label));
        if let Some(hit) = named {
            for at in &self.values {
                explain(hits, at, hit.detector, step::VARIABLE);
            }
        }
    }

    /// A blank input shaped as a card's number, security code or expiry asks for it when the
    /// form names a payment card ("Your Visa ending 1188 was renewed. Key in the new expiry
    /// date" above "Input" of pattern `^\d{2}/\d{2}$`; "Value" of `^[0-9]{3}$` beside "Save
    /// this card").
    fn card_shapes(&self, form: &Form<'_>, lexicon: &SecretLexicon, hits: &mut Hits) {
        if self.shapes.is_empty()
            || !form
                .texts()
                .any(|t| lexicon.names_card(t) || lexicon.names_card_expiring(t))
        {
            return;
        }
        for (at, category) in &self.shapes {
            let (detector, because) = match category {
                Category::Card => ("secret.context:card", step::CARD_SHAPE),
                Category::Cvv => ("secret.context:cvv", step::CARD_SHAPE),
                _ => ("secret.context:card_expiry", step::EXPIRY),
            };
            explain(hits, at, detector, because);
        }
    }

    /// The answer to a security question is a password: a text input labelled only as an
    /// answer ("Your answer", `Respuesta`) on a form that names a security question anywhere
    /// (its message, or a question chosen from a list: "Answer your security question"); one
    /// titled with a classic security question ("What was your first pet's name?") on a form
    /// that names one, an account recovery or an identity check.
    fn security_answers(&self, form: &Form<'_>, lexicon: &SecretLexicon, hits: &mut Hits) {
        if !self.answers.is_empty() && form.texts().any(|t| lexicon.names_security_question(t)) {
            for at in &self.answers {
                explain(hits, at, "secret.context:password", step::ANSWER);
            }
        }
        if !self.recalls.is_empty() && form.texts().any(|t| lexicon.names_recall_context(t)) {
            for at in &self.recalls {
                explain(hits, at, "secret.context:password", step::RECALL);
            }
        }
    }
}

/// The form-wide texts the context rules read.
struct Form<'v> {
    schema: &'v Value,
    message: Option<&'v str>,
}

impl<'v> Form<'v> {
    /// Every text of the form: its message, title and description, and each property's
    /// name, title and description.
    fn texts(&self) -> impl Iterator<Item = &'v str> + use<'v> {
        let schema = self.schema;
        let own = [self.message, schema.get("title").and_then(Value::as_str)]
            .into_iter()
            .flatten()
            .chain(schema.get("description").and_then(Value::as_str));
        let fields = schema::properties(schema)
            .into_iter()
            .flatten()
            .flat_map(|(name, p)| std::iter::once(name.as_str()).chain(own_texts(p)));
        own.chain(fields)
    }
}

/// A property's title and description.
fn own_texts(prop: &Value) -> impl Iterator<Item = &str> {
    ["title", "description"]
        .into_iter()
        .filter_map(|k| prop.get(k).and_then(Value::as_str))
}

/// A finding of `form.secret` decided by context, at `at`.
fn explain(hits: &mut Hits, at: &str, detector: &str, because: &'static str) {
    let why = Why {
        because,
        term: None,
    };
    hits.explain(RuleId::FormSecret, at, detector, why);
}

/// The credential prefixes a text shows: a run of letters and digits ended by `-` or `_`,
/// alone or before an ellipsis (`sk-…`, `xoxb-...`, "Begins with NRAK-").
fn shown_prefixes(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '\'' | ','))
        .map(|w| w.trim_end_matches(['…', '.', '*']))
        .filter(|w| {
            w.len() >= 3
                && w.len() <= 16
                && w.ends_with(['-', '_'])
                && w[..w.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// The values a choice offers: its `enum`, else its `oneOf` consts.
fn choice_values(prop: &Value) -> Vec<&Value> {
    match (prop.get("enum"), prop.get("oneOf")) {
        (Some(Value::Array(e)), _) => e.iter().collect(),
        (_, Some(Value::Array(o))) => o.iter().filter_map(|c| c.get("const")).collect(),
        _ => Vec::new(),
    }
}

/// A choice of the twelve months: `enum` (or `oneOf` consts) of `1`–`12` or `01`–`12`.
fn month_choice(prop: &Value) -> bool {
    let values = choice_values(prop);
    let month = |v: &&Value| match v {
        Value::String(s) => s.parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)),
        Value::Number(n) => n.as_u64().is_some_and(|n| (1..=12).contains(&n)),
        _ => false,
    };
    values.len() == 12 && values.iter().all(month)
}

/// Is a text input shaped as a one-time code: four to eight characters by both its lengths
/// (`minLength: 6, maxLength: 6`), or four to eight digits by its pattern?
fn code_shape(prop: &Value) -> bool {
    let len = |k: &str| prop.get(k).and_then(Value::as_u64);
    let lengths = matches!((len("minLength"), len("maxLength")),
        (Some(lo), Some(hi)) if 4 <= lo && lo <= hi && hi <= 8);
    lengths || digits_pattern(prop)
}

/// Is the choice a run of three to fifteen consecutive years, written in two digits or four
/// (`["25", "26", …]`, `[2025, 2026, …]`): the years a card can expire in?
fn year_choice(prop: &Value) -> bool {
    let years: Option<Vec<u64>> = choice_values(prop)
        .iter()
        .map(|v| match v {
            Value::String(s) if matches!(s.len(), 2 | 4) => s.parse::<u64>().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        })
        .collect();
    years.is_some_and(|y| {
        (3..=15).contains(&y.len())
            && y.windows(2).all(|w| w[1] == w[0] + 1)
            && (y[0] < 100 || (2000..2100).contains(&y[0]))
    })
}

/// Does the field's `pattern` take exactly four to eight digits (`^[0-9]{6}$`, `^\\d{4,8}$`)?
fn digits_pattern(prop: &Value) -> bool {
    digits_range(prop).is_some_and(|(lo, hi)| 4 <= lo && hi <= 8)
}

/// Does the number's range span the codes of four to eight digits and nothing longer
/// (`maximum: 999999`, `minimum: 100000`)?
fn code_range(prop: &Value) -> bool {
    let get = |k: &str| prop.get(k).and_then(Value::as_f64);
    let Some(max) = get("maximum") else {
        return false;
    };
    let min = get("minimum").unwrap_or(0.0);
    (4..=8).any(|k| {
        let top = 10f64.powi(k);
        max == top - 1.0 && (min == 0.0 || min == top / 10.0)
    })
}

/// Does the field's `pattern` take the lengths of a payment card's number and only those
/// (`^[0-9]{13,19}$`, `^\\d{12,19}$`, `^[0-9]{15,16}$`)? Thirteen to nineteen digits is what
/// ISO/IEC 7812 allows; no other everyday number spans that range.
fn card_pattern(prop: &Value) -> bool {
    digits_range(prop).is_some_and(|(lo, hi)| (12..=15).contains(&lo) && (16..=19).contains(&hi))
}

/// The lengths a `pattern` of digits only takes (`^[0-9]{6}$` → 6..6, `^\\d{4,8}$` → 4..8).
fn digits_range(prop: &Value) -> Option<(u32, u32)> {
    let p = prop.get("pattern").and_then(Value::as_str)?;
    let p = p.strip_prefix('^').unwrap_or(p);
    let p = p.strip_suffix('$').unwrap_or(p);
    let count = p
        .strip_prefix("\\d{")
        .or_else(|| p.strip_prefix("[0-9]{"))
        .and_then(|r| r.strip_suffix('}'))?;
    let n = |n: &str| n.trim().parse::<u32>().ok();
    match count.split_once(',') {
        Some((lo, hi)) => Some((n(lo)?, n(hi)?)),
        None => n(count).map(|c| (c, c)),
    }
}
