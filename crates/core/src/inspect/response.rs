//! `response.invalid`: does a client's answer fit what was asked?
//!
//! Owns: the `ElicitResult` shape (`action` ∈ accept/decline/cancel; `content` only on a
//! form-mode accept; extra top-level keys such as `_meta` are tolerated) and validation
//! of `content` against the asked `requestedSchema`: unknown field, wrong type (integers
//! must be whole; any JSON number is a number), enum miss, missing required,
//! `minLength`/`maxLength` (in Unicode scalar values), `minimum`/`maximum`,
//! `minItems`/`maxItems`, `pattern`, and the `email`, `uri`, `date`, `date-time` formats.
//! A property outside the subset (only possible when `form.schema` is not `deny`) accepts
//! any value: the validator cannot know its meaning.
//! Never: puts answer content into findings. Unknown content keys are client-chosen, so
//! they are reported at `content`, not by name.

use serde_json::{Map, Value};

use super::rule::{Hits, RuleId};
use super::schema::{self, key_loc, PropKind};
use super::AskedElicitation;
use crate::elicitation::Mode;

const RULE: RuleId = RuleId::ResponseInvalid;

pub(crate) fn check(asked: &AskedElicitation, answer: &Value, hits: &mut Hits) {
    let Some(obj) = answer.as_object() else {
        hits.add(RULE, "result", "response.not_object");
        return;
    };
    let content = obj.get("content");
    match obj.get("action").and_then(Value::as_str) {
        Some("accept") => match asked.mode {
            Mode::Url => {
                if content.is_some() {
                    hits.add(RULE, "content", "response.content_on_url_accept");
                }
            }
            Mode::Form => check_content(asked.requested_schema.as_ref(), content, hits),
        },
        Some("decline") | Some("cancel") => {
            if content.is_some() {
                hits.add(RULE, "content", "response.content_without_accept");
            }
        }
        _ => hits.add(RULE, "action", "response.bad_action"),
    }
}

fn check_content(schema: Option<&Value>, content: Option<&Value>, hits: &mut Hits) {
    let empty = Map::new();
    let props = schema.and_then(schema::properties).unwrap_or(&empty);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let content = match content {
        None => {
            if !required.is_empty() {
                hits.add(RULE, "content", "response.missing_required");
            }
            return;
        }
        Some(Value::Object(c)) => c,
        Some(_) => {
            hits.add(RULE, "content", "response.content_not_object");
            return;
        }
    };
    for (key, value) in content {
        match props.get(key) {
            Some(prop) => check_value(&format!("content.{}", key_loc(key)), prop, value, hits),
            None => hits.add(RULE, "content", "response.unknown_field"),
        }
    }
    for name in required {
        if !content.contains_key(name) {
            hits.add(
                RULE,
                format!("content.{}", key_loc(name)),
                "response.missing_required",
            );
        }
    }
}

fn allowed_values(prop: &Value, multi: bool) -> Option<Vec<&str>> {
    let holder = if multi { prop.get("items")? } else { prop };
    let list = holder
        .get("enum")
        .or_else(|| holder.get(if multi { "anyOf" } else { "oneOf" }))?
        .as_array()?;
    Some(
        list.iter()
            .filter_map(|v| {
                v.as_str()
                    .or_else(|| v.get("const").and_then(Value::as_str))
            })
            .collect(),
    )
}

fn check_value(loc: &str, prop: &Value, value: &Value, hits: &mut Hits) {
    match schema::kind_of(prop) {
        PropKind::Invalid => {}
        PropKind::Boolean => {
            if !value.is_boolean() {
                hits.add(RULE, loc, "response.type");
            }
        }
        PropKind::Number { integer } => {
            let Some(x) = value.as_f64() else {
                hits.add(RULE, loc, "response.type");
                return;
            };
            let whole = value.is_i64() || value.is_u64() || x.fract() == 0.0;
            if integer && !whole {
                hits.add(RULE, loc, "response.type");
            }
            let below = prop
                .get("minimum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x < m);
            let above = prop
                .get("maximum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x > m);
            if below || above {
                hits.add(RULE, loc, "response.range");
            }
        }
        PropKind::Text => {
            let Some(s) = value.as_str() else {
                hits.add(RULE, loc, "response.type");
                return;
            };
            let n = s.chars().count() as u64;
            let short = prop
                .get("minLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| n < m);
            let long = prop
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| n > m);
            if short || long {
                hits.add(RULE, loc, "response.length");
            }
            if let Some(f) = prop.get("format").and_then(Value::as_str) {
                let ok = match f {
                    "email" => is_email(s),
                    "uri" => url::Url::parse(s).is_ok(),
                    "date" => is_date(s),
                    "date-time" => is_date_time(s),
                    _ => true,
                };
                if !ok {
                    hits.add(RULE, loc, "response.format");
                }
            }
            if let Some(p) = prop.get("pattern").and_then(Value::as_str) {
                let tested = super::pattern::EcmaPattern::compile(p).map(|r| r.test(s));
                match tested {
                    Ok(Some(true)) => {}
                    Ok(None) => hits.add(RULE, loc, "response.pattern_cost"),
                    _ => hits.add(RULE, loc, "response.pattern"),
                }
            }
        }
        PropKind::Choice { multi: false } => {
            let ok = match (value.as_str(), allowed_values(prop, false)) {
                (Some(s), Some(vals)) => vals.contains(&s),
                _ => false,
            };
            if !ok {
                hits.add(RULE, loc, "response.enum");
            }
        }
        PropKind::Choice { multi: true } => {
            let Some(items) = value.as_array() else {
                hits.add(RULE, loc, "response.type");
                return;
            };
            let vals = allowed_values(prop, true).unwrap_or_default();
            if !items
                .iter()
                .all(|i| i.as_str().is_some_and(|s| vals.contains(&s)))
            {
                hits.add(RULE, loc, "response.enum");
            }
            let n = items.len() as u64;
            let few = prop
                .get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|m| n < m);
            let many = prop
                .get("maxItems")
                .and_then(Value::as_u64)
                .is_some_and(|m| n > m);
            if few || many {
                hits.add(RULE, loc, "response.items");
            }
        }
    }
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && local.len() <= 64
        && !local.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn two(s: &str, at: usize) -> Option<u32> {
    let b = s.as_bytes().get(at..at + 2)?;
    if b.iter().all(u8::is_ascii_digit) {
        Some(u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'))
    } else {
        None
    }
}

pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !b[..4].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let (Some(month), Some(day)) = (two(s, 5), two(s, 8)) else {
        return false;
    };
    super::ids::valid_date(year, month, day)
}

/// RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub(crate) fn is_date_time(s: &str) -> bool {
    if s.len() < 20 || !s.is_char_boundary(10) || !is_date(&s[..10]) {
        return false;
    }
    let rest = &s[10..];
    let b = rest.as_bytes();
    if !matches!(b[0], b'T' | b't') || b.get(3) != Some(&b':') || b.get(6) != Some(&b':') {
        return false;
    }
    let (Some(h), Some(m), Some(sec)) = (two(rest, 1), two(rest, 4), two(rest, 7)) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 60 {
        return false;
    }
    let mut tz = &rest[9..];
    if let Some(frac) = tz.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        tz = &frac[digits..];
    }
    match tz.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', _, _, b':', _, _] => {
            matches!((two(tz, 1), two(tz, 4)), (Some(oh), Some(om)) if oh <= 23 && om <= 59)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
