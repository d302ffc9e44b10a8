//! `form.schema`: the restricted `requestedSchema` subset, and property classification
//! shared with the secret detector and the response validator.
//!
//! Owns: what a form may look like. Accepted is the union of the 2025-06-18, 2025-11-25
//! and 2026-07-28 subsets:
//! - top level: `type: "object"`, `properties` (a map), optional `required` (distinct
//!   names of existing properties), `$schema`, and — because SDK generators emit them and
//!   they do not widen the shape — `title`, `description`, `additionalProperties` (bool);
//! - string: `title`, `description`, `minLength`, `maxLength`, `format` ∈ {email, uri,
//!   date, date-time}, `pattern` (shown in the 2025-11-25 docs; must compile), `default`;
//! - number / integer: `title`, `description`, `minimum`, `maximum`, `default`;
//! - boolean: `title`, `description`, `default`;
//! - single-select: `type: "string"` with `enum` (+ legacy `enumNames`, same length) or
//!   `oneOf: [{const, title}]`, optional `default` among the values;
//! - multi-select: `type: "array"` with `items: {type: "string", enum}` or
//!   `items: {anyOf: [{const, title}]}`, `minItems`, `maxItems`, `default` (list of values).
//!
//! Everything else is denied: nested objects, arrays of objects or of free strings,
//! `$ref`, `allOf` / `anyOf` / `oneOf` / `not` / `if` outside the titled-enum shapes,
//! unknown types (incl. type lists such as `["string","null"]`), unknown keywords
//! (`writeOnly`, `format: password`, `x-…`), wrong keyword value types, inverted bounds
//! and defaults that do not fit. Nothing here recurses into arbitrary depth: the shape is
//! checked at fixed positions, so hostile nesting costs nothing and fails closed.
//! Never: looks at user content (there is none in a schema, but defaults are server
//! text and are never copied into findings).

use serde_json::{Map, Value};

use super::rule::{Hits, RuleId};

/// Formats a string property may declare.
pub(crate) const STRING_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// How a property is answered, which decides what the detectors look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PropKind {
    /// Free text: the user types anything.
    Text,
    /// A number; `integer` requires whole numbers.
    Number { integer: bool },
    /// A checkbox.
    Boolean,
    /// A choice among server-listed values; the user cannot type a secret into it.
    Choice { multi: bool },
    /// Outside the subset; treated like free text by the secret detector (fail closed).
    Invalid,
}

impl PropKind {
    /// Can the user type arbitrary content into this property?
    pub(crate) fn is_free_input(self) -> bool {
        match self {
            PropKind::Text | PropKind::Number { .. } | PropKind::Invalid => true,
            PropKind::Boolean | PropKind::Choice { .. } => false,
        }
    }
}

/// Classify one property schema.
pub(crate) fn kind_of(prop: &Value) -> PropKind {
    let Some(obj) = prop.as_object() else {
        return PropKind::Invalid;
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("string") if obj.contains_key("enum") || obj.contains_key("oneOf") => {
            PropKind::Choice { multi: false }
        }
        Some("string") => PropKind::Text,
        Some("number") => PropKind::Number { integer: false },
        Some("integer") => PropKind::Number { integer: true },
        Some("boolean") => PropKind::Boolean,
        Some("array") => {
            let items = obj.get("items");
            let listed = items.is_some_and(|i| i.get("enum").is_some() || i.get("anyOf").is_some());
            if listed {
                PropKind::Choice { multi: true }
            } else {
                PropKind::Invalid
            }
        }
        _ => PropKind::Invalid,
    }
}

/// How many options a property lists, in any of the places a client reads them from (`enum`,
/// `oneOf`, `anyOf`, `enumNames`, and the same under `items`): the largest of them.
pub(crate) fn choice_count(prop: &Value) -> usize {
    let lists = |v: &Value| {
        ["enum", "oneOf", "anyOf", "enumNames"]
            .iter()
            .filter_map(|k| v.get(k).and_then(Value::as_array).map(Vec::len))
            .max()
            .unwrap_or(0)
    };
    lists(prop).max(prop.get("items").map_or(0, lists))
}

/// The `properties` map of a schema, if well-formed enough to iterate.
pub(crate) fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// A location component for a server-chosen key: kept as-is but bounded to 64 bytes.
pub(crate) fn key_loc(name: &str) -> &str {
    if name.len() <= 64 {
        return name;
    }
    let mut end = 64;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn keyword_detector(prefix: &str, kw: &str) -> String {
    let safe = kw.len() <= 32
        && kw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '$' | '_' | '-'));
    if safe {
        format!("{prefix}:{kw}")
    } else {
        prefix.to_string()
    }
}

/// Check `schema` against the subset, recording `form.schema` findings.
pub(crate) fn check(schema: &Value, hits: &mut Hits) {
    const LOC: &str = "requestedSchema";
    let Some(top) = schema.as_object() else {
        hits.add(RuleId::FormSchema, LOC, "schema.not_object");
        return;
    };
    for (kw, v) in top {
        match kw.as_str() {
            "type" => {
                if v.as_str() != Some("object") {
                    hits.add(
                        RuleId::FormSchema,
                        "requestedSchema.type",
                        "schema.top_type",
                    );
                }
            }
            "properties" | "required" => {}
            "$schema" | "title" | "description" => {
                if !v.is_string() {
                    hits.add(
                        RuleId::FormSchema,
                        format!("{LOC}.{kw}"),
                        "schema.bad_value",
                    );
                }
            }
            "additionalProperties" => {
                if !v.is_boolean() {
                    hits.add(
                        RuleId::FormSchema,
                        format!("{LOC}.{kw}"),
                        "schema.bad_value",
                    );
                }
            }
            other => hits.add(
                RuleId::FormSchema,
                LOC,
                keyword_detector("schema.unknown_keyword", other),
            ),
        }
    }
    if !top.contains_key("type") {
        hits.add(
            RuleId::FormSchema,
            "requestedSchema.type",
            "schema.top_type",
        );
    }
    let props = match top.get("properties") {
        Some(Value::Object(p)) => p,
        _ => {
            hits.add(
                RuleId::FormSchema,
                "requestedSchema.properties",
                "schema.properties",
            );
            return;
        }
    };
    match top.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            let mut seen: Vec<&str> = Vec::with_capacity(names.len());
            for n in names {
                match n.as_str() {
                    Some(s) if props.contains_key(s) && !seen.contains(&s) => seen.push(s),
                    _ => {
                        hits.add(
                            RuleId::FormSchema,
                            "requestedSchema.required",
                            "schema.required",
                        );
                        break;
                    }
                }
            }
        }
        Some(_) => hits.add(
            RuleId::FormSchema,
            "requestedSchema.required",
            "schema.required",
        ),
    }
    for (name, prop) in props {
        check_property(name, prop, hits);
    }
}

fn check_property(name: &str, prop: &Value, hits: &mut Hits) {
    let loc = format!("properties.{}", key_loc(name));
    if name.is_empty() {
        hits.add(RuleId::FormSchema, &loc, "schema.empty_name");
    }
    let Some(obj) = prop.as_object() else {
        hits.add(RuleId::FormSchema, loc, "schema.not_object");
        return;
    };
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(_)) => {
            hits.add(RuleId::FormSchema, loc, "schema.type_list");
            return;
        }
        Some(_) => {
            hits.add(RuleId::FormSchema, loc, "schema.unknown_type");
            return;
        }
        None => {
            let detector = if obj.contains_key("$ref") {
                "schema.ref"
            } else if ["allOf", "anyOf", "oneOf", "not", "if"]
                .iter()
                .any(|k| obj.contains_key(*k))
            {
                "schema.composition"
            } else {
                "schema.missing_type"
            };
            hits.add(RuleId::FormSchema, loc, detector);
            return;
        }
    };
    let allowed: &[&str] = match ty {
        "string" => &[
            "type",
            "title",
            "description",
            "minLength",
            "maxLength",
            "format",
            "pattern",
            "default",
            "enum",
            "enumNames",
            "oneOf",
        ],
        "number" | "integer" => &[
            "type",
            "title",
            "description",
            "minimum",
            "maximum",
            "default",
        ],
        "boolean" => &["type", "title", "description", "default"],
        "array" => &[
            "type",
            "title",
            "description",
            "minItems",
            "maxItems",
            "items",
            "default",
        ],
        "object" => {
            hits.add(RuleId::FormSchema, loc, "schema.nested_object");
            return;
        }
        _ => {
            hits.add(RuleId::FormSchema, loc, "schema.unknown_type");
            return;
        }
    };
    for kw in obj.keys() {
        if !allowed.contains(&kw.as_str()) {
            let detector = match kw.as_str() {
                "$ref" => "schema.ref".to_string(),
                "allOf" | "anyOf" | "oneOf" | "not" | "if" | "then" | "else" => {
                    "schema.composition".to_string()
                }
                "properties" | "additionalProperties" => "schema.nested_object".to_string(),
                other => keyword_detector("schema.unknown_keyword", other),
            };
            hits.add(RuleId::FormSchema, &loc, detector);
        }
    }
    for kw in ["title", "description"] {
        if obj.get(kw).is_some_and(|v| !v.is_string()) {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.{kw}"),
                "schema.bad_value",
            );
        }
    }
    match ty {
        "string" => check_string(&loc, obj, hits),
        "number" | "integer" => check_number(&loc, obj, ty == "integer", hits),
        "boolean" => {
            if obj.get("default").is_some_and(|d| !d.is_boolean()) {
                hits.add(
                    RuleId::FormSchema,
                    format!("{loc}.default"),
                    "schema.default",
                );
            }
        }
        _ => check_array(&loc, obj, hits),
    }
}

fn non_negative_int(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn check_bounds(loc: &str, obj: &Map<String, Value>, lo: &str, hi: &str, hits: &mut Hits) {
    let lo_v = obj.get(lo);
    let hi_v = obj.get(hi);
    for (kw, v) in [(lo, lo_v), (hi, hi_v)] {
        if v.is_some_and(|v| non_negative_int(v).is_none()) {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.{kw}"),
                "schema.bad_value",
            );
        }
    }
    if let (Some(a), Some(b)) = (
        lo_v.and_then(non_negative_int),
        hi_v.and_then(non_negative_int),
    ) {
        if a > b {
            hits.add(RuleId::FormSchema, loc, "schema.bounds");
        }
    }
}

fn string_list(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// `[{const, title}]` → the consts; `None` when the shape is wrong.
fn titled_consts(v: &Value) -> Option<Vec<&str>> {
    let arr = v.as_array()?;
    if arr.is_empty() {
        return None;
    }
    arr.iter()
        .map(|o| {
            let o = o.as_object()?;
            let ok = o.len() == 2 && o.get("title").is_some_and(Value::is_string);
            if ok {
                o.get("const")?.as_str()
            } else {
                None
            }
        })
        .collect()
}

fn check_string(loc: &str, obj: &Map<String, Value>, hits: &mut Hits) {
    check_bounds(loc, obj, "minLength", "maxLength", hits);
    if let Some(f) = obj.get("format") {
        if !f.as_str().is_some_and(|f| STRING_FORMATS.contains(&f)) {
            hits.add(RuleId::FormSchema, format!("{loc}.format"), "schema.format");
        }
    }
    if let Some(p) = obj.get("pattern") {
        let compiled = p.as_str().map(super::pattern::EcmaPattern::compile);
        let detector = match compiled {
            Some(Ok(_)) => None,
            Some(Err(super::pattern::Refused::Exponential)) => Some("schema.pattern_cost"),
            _ => Some("schema.pattern"),
        };
        if let Some(d) = detector {
            hits.add(RuleId::FormSchema, format!("{loc}.pattern"), d);
        }
    }
    let has_enum = obj.contains_key("enum");
    let has_one_of = obj.contains_key("oneOf");
    let values: Option<Vec<&str>> = match (has_enum, has_one_of) {
        (true, true) => {
            hits.add(RuleId::FormSchema, loc, "schema.enum");
            None
        }
        (true, false) => match obj.get("enum").and_then(string_list) {
            Some(vals) if !vals.is_empty() => {
                if let Some(names) = obj.get("enumNames") {
                    if string_list(names).is_none_or(|n| n.len() != vals.len()) {
                        hits.add(
                            RuleId::FormSchema,
                            format!("{loc}.enumNames"),
                            "schema.enum",
                        );
                    }
                }
                Some(vals)
            }
            _ => {
                hits.add(RuleId::FormSchema, format!("{loc}.enum"), "schema.enum");
                None
            }
        },
        (false, true) => match obj.get("oneOf").and_then(titled_consts) {
            Some(vals) => Some(vals),
            None => {
                hits.add(
                    RuleId::FormSchema,
                    format!("{loc}.oneOf"),
                    "schema.composition",
                );
                None
            }
        },
        (false, false) => None,
    };
    if obj.contains_key("enumNames") && !has_enum {
        hits.add(
            RuleId::FormSchema,
            format!("{loc}.enumNames"),
            "schema.enum",
        );
    }
    if (has_enum || has_one_of)
        && ["minLength", "maxLength", "format", "pattern"]
            .iter()
            .any(|k| obj.contains_key(*k))
    {
        hits.add(RuleId::FormSchema, loc, "schema.enum");
    }
    if let Some(d) = obj.get("default") {
        let fits = match (d.as_str(), &values) {
            (Some(s), Some(vals)) => vals.contains(&s),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !fits {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.default"),
                "schema.default",
            );
        }
    }
}

fn check_number(loc: &str, obj: &Map<String, Value>, integer: bool, hits: &mut Hits) {
    let min = obj.get("minimum");
    let max = obj.get("maximum");
    for (kw, v) in [("minimum", min), ("maximum", max)] {
        if v.is_some_and(|v| !v.is_number()) {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.{kw}"),
                "schema.bad_value",
            );
        }
    }
    if let (Some(a), Some(b)) = (min.and_then(Value::as_f64), max.and_then(Value::as_f64)) {
        if a > b {
            hits.add(RuleId::FormSchema, loc, "schema.bounds");
        }
    }
    if let Some(d) = obj.get("default") {
        let fits = match d.as_f64() {
            Some(x) => {
                (!integer || x.fract() == 0.0)
                    && min.and_then(Value::as_f64).is_none_or(|m| x >= m)
                    && max.and_then(Value::as_f64).is_none_or(|m| x <= m)
            }
            None => false,
        };
        if !fits {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.default"),
                "schema.default",
            );
        }
    }
}

fn check_array(loc: &str, obj: &Map<String, Value>, hits: &mut Hits) {
    check_bounds(loc, obj, "minItems", "maxItems", hits);
    let values: Option<Vec<&str>> = match obj.get("items") {
        Some(Value::Object(items)) => {
            let ty = items.get("type");
            if items.contains_key("properties") || ty.and_then(Value::as_str) == Some("object") {
                hits.add(
                    RuleId::FormSchema,
                    format!("{loc}.items"),
                    "schema.array_of_objects",
                );
                None
            } else if let Some(e) = items.get("enum") {
                let keys_ok = items.keys().all(|k| k == "type" || k == "enum");
                let type_ok = ty.is_none_or(|t| t.as_str() == Some("string"));
                match string_list(e) {
                    Some(vals) if !vals.is_empty() && keys_ok && type_ok => Some(vals),
                    _ => {
                        hits.add(RuleId::FormSchema, format!("{loc}.items"), "schema.enum");
                        None
                    }
                }
            } else if let Some(a) = items.get("anyOf") {
                let keys_ok = items.keys().all(|k| k == "type" || k == "anyOf");
                let type_ok = ty.is_none_or(|t| t.as_str() == Some("string"));
                match titled_consts(a) {
                    Some(vals) if keys_ok && type_ok => Some(vals),
                    _ => {
                        hits.add(
                            RuleId::FormSchema,
                            format!("{loc}.items"),
                            "schema.composition",
                        );
                        None
                    }
                }
            } else {
                hits.add(
                    RuleId::FormSchema,
                    format!("{loc}.items"),
                    "schema.free_array",
                );
                None
            }
        }
        _ => {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.items"),
                "schema.free_array",
            );
            None
        }
    };
    if let Some(d) = obj.get("default") {
        let fits = match (string_list(d), &values) {
            (Some(ds), Some(vals)) => ds.iter().all(|x| vals.contains(x)),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !fits {
            hits.add(
                RuleId::FormSchema,
                format!("{loc}.default"),
                "schema.default",
            );
        }
    }
}

/// Where a schema string sits; turned into a location string only when reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextLoc<'a> {
    /// The property, or `None` for the schema's own title/description.
    pub(crate) property: Option<&'a str>,
    /// The field within it, e.g. `title`, `enum`, `oneOf.title`, `name`.
    pub(crate) field: &'static str,
}

impl TextLoc<'_> {
    /// `properties.<name>.<field>` or `requestedSchema.<field>`.
    pub(crate) fn render(&self) -> String {
        match self.property {
            Some(p) => format!("properties.{}.{}", key_loc(p), self.field),
            None => format!("requestedSchema.{}", self.field),
        }
    }
}

/// Every server-written string of a schema at the positions the subset defines:
/// property names, titles, descriptions, string defaults, enum values and labels. Used
/// by `form.limits` and `form.url`. Bounded: fixed depth.
pub(crate) fn for_each_text<'a>(
    schema: &'a Value,
    mut f: impl FnMut(TextLoc<'a>, TextRole, &'a str),
) {
    let Some(top) = schema.as_object() else {
        return;
    };
    for kw in ["title", "description"] {
        if let Some(s) = top.get(kw).and_then(Value::as_str) {
            f(
                TextLoc {
                    property: None,
                    field: kw,
                },
                TextRole::Label,
                s,
            );
        }
    }
    let Some(props) = properties(schema) else {
        return;
    };
    for (name, prop) in props {
        let at = |field: &'static str| TextLoc {
            property: Some(name.as_str()),
            field,
        };
        f(at("name"), TextRole::Key, name.as_str());
        let Some(obj) = prop.as_object() else {
            continue;
        };
        for kw in ["title", "description"] {
            if let Some(s) = obj.get(kw).and_then(Value::as_str) {
                f(at(kw), TextRole::Label, s);
            }
        }
        match obj.get("default") {
            Some(Value::String(s)) => f(at("default"), TextRole::Value, s),
            Some(Value::Array(ds)) => {
                for d in ds.iter().filter_map(Value::as_str) {
                    f(at("default"), TextRole::Value, d);
                }
            }
            _ => {}
        }
        let items = obj.get("items");
        let lists = [
            (obj.get("enum"), "enum", TextRole::Value),
            (obj.get("enumNames"), "enumNames", TextRole::Label),
            (
                items.and_then(|i| i.get("enum")),
                "items.enum",
                TextRole::Value,
            ),
        ];
        for (list, kw, role) in lists {
            if let Some(Value::Array(vals)) = list {
                for v in vals.iter().filter_map(Value::as_str) {
                    f(at(kw), role, v);
                }
            }
        }
        let titled = [
            (obj.get("oneOf"), "oneOf.title", "oneOf.const"),
            (
                items.and_then(|i| i.get("anyOf")),
                "items.anyOf.title",
                "items.anyOf.const",
            ),
        ];
        for (list, title_kw, const_kw) in titled {
            if let Some(Value::Array(opts)) = list {
                for o in opts {
                    if let Some(t) = o.get("title").and_then(Value::as_str) {
                        f(at(title_kw), TextRole::Label, t);
                    }
                    if let Some(c) = o.get("const").and_then(Value::as_str) {
                        f(at(const_kw), TextRole::Value, c);
                    }
                }
            }
        }
    }
}

/// What a schema string is, for the detectors that care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextRole {
    /// A property name.
    Key,
    /// Text shown to the user: a title, description, or option label.
    Label,
    /// A value: a default or an enum value.
    Value,
}

#[cfg(test)]
mod tests;
