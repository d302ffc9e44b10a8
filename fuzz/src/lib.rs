//! Helpers shared by the fuzz targets: a JSON writer with alternative spellings (for the
//! "canonical re-parse" oracles) and small structured generators driven by
//! `arbitrary::Unstructured`. Nothing here calls into elicitgate, so renames in the gateway
//! only ever touch the (thin) targets.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// How to spell a JSON document. Every spelling denotes the same value to any conforming
/// parser (and to serde_json, which the gateway uses).
#[derive(Debug, Clone, Copy, Default)]
pub struct Spelling {
    /// Write every non-ASCII character of strings and keys as `\uXXXX` (surrogate pairs
    /// above the BMP).
    pub escape_non_ascii: bool,
    /// Write *every* character of strings and keys as `\uXXXX`, ASCII letters included.
    pub escape_all: bool,
    /// Write object members in reverse key order.
    pub reverse_keys: bool,
    /// Whitespace around every token (space, tab, CR, LF mixed).
    pub whitespace: bool,
}

impl Spelling {
    pub fn from_byte(b: u8) -> Spelling {
        Spelling {
            escape_non_ascii: b & 1 != 0,
            escape_all: b & 2 != 0,
            reverse_keys: b & 4 != 0,
            whitespace: b & 8 != 0,
        }
    }

    /// The four spellings every "canonical re-parse" oracle tries.
    pub const VARIANTS: [Spelling; 4] = [
        Spelling {
            escape_non_ascii: true,
            escape_all: false,
            reverse_keys: false,
            whitespace: false,
        },
        Spelling {
            escape_non_ascii: false,
            escape_all: false,
            reverse_keys: true,
            whitespace: true,
        },
        Spelling {
            escape_non_ascii: true,
            escape_all: true,
            reverse_keys: true,
            whitespace: false,
        },
        Spelling {
            escape_non_ascii: true,
            escape_all: false,
            reverse_keys: true,
            whitespace: true,
        },
    ];
}

/// Writes `v` as JSON text in the given spelling.
pub fn write_json(v: &Value, sp: Spelling) -> String {
    let mut out = String::new();
    write_value(v, sp, &mut out, 0);
    out
}

fn ws(sp: Spelling, out: &mut String, n: usize) {
    if sp.whitespace {
        out.push_str([" ", "\n", "\t ", "\r\n  ", ""][n % 5]);
    }
}

fn write_value(v: &Value, sp: Spelling, out: &mut String, n: usize) {
    ws(sp, out, n);
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(num) => out.push_str(&num.to_string()),
        Value::String(s) => write_str(s, sp, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(x, sp, out, n + i + 1);
            }
            ws(sp, out, n + 2);
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = o.iter().collect();
            if sp.reverse_keys {
                entries.reverse();
            }
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(sp, out, n + i);
                write_str(k, sp, out);
                ws(sp, out, n + i + 1);
                out.push(':');
                write_value(x, sp, out, n + i + 2);
            }
            ws(sp, out, n + 3);
            out.push('}');
        }
    }
    ws(sp, out, n + 4);
}

fn write_str(s: &str, sp: Spelling, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        let escape = sp.escape_all || (sp.escape_non_ascii && !c.is_ascii());
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || escape => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Collects the address of every node of `v` (itself included).
pub fn node_addresses(v: &Value, out: &mut Vec<*const Value>) {
    out.push(v as *const Value);
    match v {
        Value::Array(a) => a.iter().for_each(|x| node_addresses(x, out)),
        Value::Object(o) => o.values().for_each(|x| node_addresses(x, out)),
        _ => {}
    }
}

/// Collects the address range of every object key of `v`.
pub fn key_ranges(v: &Value, out: &mut Vec<(usize, usize)>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| key_ranges(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                out.push((k.as_ptr() as usize, k.len()));
                key_ranges(x, out);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Structured generators.

/// Words and fragments the generators draw text from: ordinary form words, secret words in
/// several scripts and spellings, URLs, hosts, e-mail addresses, tokens.
pub const WORDS: &[&str] = &[
    "name", "Name", "email", "e-mail", "username", "Branch", "environment", "Confirm",
    "deployment", "Please", "enter", "your", "the", "code", "number", "notify", "Quantity",
    "password", "Password", "PASSWORD", "passwd", "pass word", "pass_word", "passWord",
    "ｐａｓｓｗｏｒｄ", "pässword", "пароль", "Пароль", "密码", "密碼", "パスワード", "비밀번호",
    "contraseña", "mot de passe", "Passwort", "token", "api_key", "apiKey", "API key", "APIキー",
    "secret", "client secret", "pin", "PIN", "OTP", "one-time code", "2FA", "cvv", "CVC",
    "card number", "ssn", "social security number", "private key", "seed phrase",
    "mnemonic", "recovery phrase", "access token", "bearer", "credential", "IBAN",
    "https://example.com/", "http://example.com/login", "https://mcp.example.com/connect?x=1",
    "http://localhost:8080/cb", "https://user:pw@evil.example/", "https://xn--pypal-4ve.com/",
    "https://192.168.0.1/", "http://10.0.0.1/a", "https://paypal.com.evil.example/login",
    "javascript:alert(1)", "data:text/html,x", "ftp://example.com/", "HTTPS://EXAMPLE.COM",
    "https://example.com/card/4111%201111%201111%201111", "https://a.example/?email=a%40b.com",
    "https://a.example/?token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
    "https://a.example/#access_token=abc", "example.com", "www.example.com", "evil.example",
    "victim@example.com", "victim%40example.com", "a@b.co", "4111 1111 1111 1111",
    "4111111111111111", "123-45-6789", "+1 202 555 0143", "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "sk-live-0123456789abcdef", "AKIAIOSFODNN7EXAMPLE", "-----BEGIN PRIVATE KEY-----",
    " ", "  ", "\n", "\t", ".", ":", "/", "?", "&", "=", "%", "@", "_", "-", "\u{200b}",
    "\u{feff}", "\u{202e}", "\u{0301}", "ß", "İ", "ﬁ", "①", "Ⅸ", "ｈｔｔｐｓ://ｅｘａｍｐｌｅ．ｃｏｍ",
    "e\u{0301}", "ㅤ", "\u{00a0}", "\u{3000}",
];

pub const FORMATS: &[&str] = &["email", "uri", "date", "date-time", "password", "uuid", "x"];
pub const TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object", "null"];
pub const SCHEMA_KEYS: &[&str] = &[
    "type", "title", "description", "format", "enum", "enumNames", "oneOf", "anyOf", "const",
    "default", "minLength", "maxLength", "minimum", "maximum", "items", "pattern", "writeOnly",
    "x-secret", "properties", "required",
];

/// Text of one to a few dictionary words, sometimes with arbitrary characters mixed in.
pub fn text(u: &mut Unstructured<'_>) -> Result<String> {
    let n = u.int_in_range(0..=4)?;
    let mut s = String::new();
    for _ in 0..n {
        match u.int_in_range(0..=9)? {
            0 => s.push_str(<&str>::arbitrary_take(u)?),
            1 => s.push(char::arbitrary_take(u)?),
            _ => s.push_str(u.choose(WORDS)?),
        }
        if u.ratio(1, 2)? {
            s.push(' ');
        }
    }
    Ok(s)
}

trait Take<'a>: Sized {
    fn arbitrary_take(u: &mut Unstructured<'a>) -> Result<Self>;
}
impl<'a> Take<'a> for &'a str {
    fn arbitrary_take(u: &mut Unstructured<'a>) -> Result<Self> {
        let len = u.int_in_range(0..=12)?;
        let bytes = u.bytes(len.min(u.len()))?;
        Ok(match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        })
    }
}
impl<'a> Take<'a> for char {
    fn arbitrary_take(u: &mut Unstructured<'a>) -> Result<Self> {
        u.arbitrary::<char>()
    }
}

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Value::from(u.int_in_range(-40000i64..=40000)?),
        1 => Value::from(u.arbitrary::<i64>()?),
        2 => Number::from_f64(u.arbitrary::<f64>()?)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        _ => Value::from(-32042),
    })
}

/// A small arbitrary JSON value (depth-bounded), biased towards the dictionary.
pub fn any_value(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let top = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(text(u)?),
        4 => {
            let n = u.int_in_range(0..=3)?;
            let mut a = Vec::new();
            for _ in 0..n {
                a.push(any_value(u, depth - 1)?);
            }
            Value::Array(a)
        }
        _ => {
            let n = u.int_in_range(0..=3)?;
            let mut m = Map::new();
            for _ in 0..n {
                let k = if u.ratio(3, 4)? {
                    u.choose(SCHEMA_KEYS)?.to_string()
                } else {
                    text(u)?
                };
                m.insert(k, any_value(u, depth - 1)?);
            }
            Value::Object(m)
        }
    })
}

/// One schema property: mostly well-formed, sometimes odd.
pub fn property(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let mut p = Map::new();
    if u.ratio(7, 8)? {
        p.insert("type".into(), Value::from(*u.choose(TYPES)?));
    }
    if u.ratio(1, 2)? {
        p.insert("title".into(), Value::String(text(u)?));
    }
    if u.ratio(1, 3)? {
        p.insert("description".into(), Value::String(text(u)?));
    }
    if u.ratio(1, 4)? {
        p.insert("format".into(), Value::from(*u.choose(FORMATS)?));
    }
    if u.ratio(1, 5)? {
        let n = u.int_in_range(0..=3)?;
        let mut e = Vec::new();
        for _ in 0..n {
            e.push(Value::String(text(u)?));
        }
        p.insert("enum".into(), Value::Array(e));
    }
    if u.ratio(1, 6)? {
        let n = u.int_in_range(0..=3)?;
        let mut e = Vec::new();
        for _ in 0..n {
            let mut o = Map::new();
            o.insert("const".into(), Value::String(text(u)?));
            o.insert("title".into(), Value::String(text(u)?));
            e.push(Value::Object(o));
        }
        let key = if u.arbitrary()? { "oneOf" } else { "anyOf" };
        p.insert(key.into(), Value::Array(e));
    }
    if u.ratio(1, 6)? {
        p.insert("default".into(), any_value(u, 1)?);
    }
    if u.ratio(1, 8)? {
        let inner = if depth > 0 {
            property(u, depth - 1)?
        } else {
            any_value(u, 1)?
        };
        p.insert("items".into(), inner);
    }
    while more(u, 8)? {
        let k = u.choose(SCHEMA_KEYS)?.to_string();
        p.insert(k, any_value(u, 2)?);
    }
    Ok(Value::Object(p))
}

/// Elicitation `params`: a form or URL-mode request, mostly well-formed.
pub fn params(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut m = Map::new();
    match u.int_in_range(0..=7)? {
        0 => {}
        1..=3 => {
            m.insert("mode".into(), Value::from("form"));
        }
        4..=6 => {
            m.insert("mode".into(), Value::from("url"));
        }
        _ => {
            m.insert("mode".into(), any_value(u, 1)?);
        }
    }
    if u.ratio(15, 16)? {
        let msg = if u.ratio(15, 16)? {
            Value::String(text(u)?)
        } else {
            any_value(u, 1)?
        };
        m.insert("message".into(), msg);
    }
    if u.ratio(2, 3)? {
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from("object"));
        let mut props = Map::new();
        let n = u.int_in_range(0..=5)?;
        for _ in 0..n {
            let name = if u.ratio(3, 4)? {
                u.choose(WORDS)?.to_string()
            } else {
                text(u)?
            };
            props.insert(name, property(u, 2)?);
        }
        let names: Vec<Value> = props.keys().map(|k| Value::from(k.as_str())).collect();
        schema.insert("properties".into(), Value::Object(props));
        if u.arbitrary()? {
            schema.insert("required".into(), Value::Array(names));
        }
        while more(u, 10)? {
            let k = u.choose(SCHEMA_KEYS)?.to_string();
            schema.insert(k, any_value(u, 2)?);
        }
        m.insert("requestedSchema".into(), Value::Object(schema));
    }
    if u.ratio(1, 2)? {
        let url = match u.int_in_range(0..=3)? {
            0 => text(u)?,
            _ => {
                let mut s = u.choose(WORDS)?.to_string();
                for _ in 0..u.int_in_range(0..=3)? {
                    s.push_str(u.choose(WORDS)?);
                }
                s
            }
        };
        m.insert("url".into(), Value::String(url));
    }
    if u.ratio(1, 2)? {
        m.insert("elicitationId".into(), Value::String(text(u)?));
    }
    while more(u, 12)? {
        m.insert(text(u)?, any_value(u, 2)?);
    }
    Ok(Value::Object(m))
}

/// Ids as servers write them.
pub fn rpc_id(u: &mut Unstructured<'_>) -> Result<Option<Value>> {
    Ok(match u.int_in_range(0..=5)? {
        0 => None,
        1 => Some(Value::Null),
        2 => Some(Value::String(text(u)?)),
        3 => Some(Value::from(1.0)),
        4 => Some(any_value(u, 1)?),
        _ => Some(Value::from(u.int_in_range(0..=100)?)),
    })
}

/// A whole message carrying `params` as one of the MCP carriers (or a batch of them).
pub fn message_with(u: &mut Unstructured<'_>, p: Value) -> Result<Value> {
    let mut m = Map::new();
    if u.ratio(7, 8)? {
        m.insert("jsonrpc".into(), Value::from("2.0"));
    }
    if let Some(id) = rpc_id(u)? {
        m.insert("id".into(), id);
    }
    match u.int_in_range(0..=3)? {
        0 => {
            m.insert("method".into(), Value::from("elicitation/create"));
            m.insert("params".into(), p);
        }
        1 => {
            let mut entry = Map::new();
            entry.insert("method".into(), Value::from("elicitation/create"));
            entry.insert("params".into(), p);
            let mut reqs = Map::new();
            reqs.insert(text(u)?, Value::Object(entry));
            if u.ratio(1, 3)? {
                reqs.insert(text(u)?, any_value(u, 2)?);
            }
            let mut result = Map::new();
            result.insert("resultType".into(), Value::from("input_required"));
            if u.ratio(1, 4)? {
                let mut task = Map::new();
                task.insert("inputRequests".into(), Value::Object(reqs));
                result.insert("task".into(), Value::Object(task));
            } else {
                result.insert("inputRequests".into(), Value::Object(reqs));
            }
            m.insert("result".into(), Value::Object(result));
        }
        2 => {
            let mut err = Map::new();
            let code = match u.int_in_range(0..=4)? {
                0 => Value::from(-32042.0),
                1 => serde_json::from_str("-3.2042e4").unwrap_or(Value::Null),
                2 => Value::from("-32042"),
                3 => number(u)?,
                _ => Value::from(-32042),
            };
            err.insert("code".into(), code);
            err.insert("message".into(), Value::String(text(u)?));
            let mut data = Map::new();
            let mut items = vec![p];
            while more(u, 3)? {
                items.push(any_value(u, 2)?);
            }
            data.insert("elicitations".into(), Value::Array(items));
            err.insert("data".into(), Value::Object(data));
            m.insert("error".into(), Value::Object(err));
        }
        _ => return Ok(p),
    }
    Ok(Value::Object(m))
}

/// An arbitrary message: an MCP carrier around generated params, sometimes junk, sometimes a
/// batch.
pub fn message(u: &mut Unstructured<'_>) -> Result<Value> {
    match u.int_in_range(0..=9)? {
        0 => any_value(u, 4),
        1 => {
            let n = u.int_in_range(0..=3)?;
            let mut a = Vec::new();
            for _ in 0..n {
                let p = params(u)?;
                a.push(message_with(u, p)?);
            }
            Ok(Value::Array(a))
        }
        _ => {
            let p = params(u)?;
            let mut m = message_with(u, p)?;
            // Extra envelope members that make a message ambiguous.
            if let Value::Object(o) = &mut m {
                while more(u, 6)? {
                    let k = *u.choose(&[
                        "method", "result", "error", "id", "params", "jsonrpc", "task",
                    ])?;
                    o.insert(k.into(), any_value(u, 3)?);
                }
            }
            Ok(m)
        }
    }
}

/// Checks named in the environment variable `FUZZ_SKIP` (comma-separated) are skipped: a
/// long run sets it to the names of findings already recorded in docs/fuzzing.md, so that
/// one known divergence does not stop the search for others. The smoke never sets it.
pub fn enabled(check: &str) -> bool {
    static SKIP: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    !SKIP
        .get_or_init(|| {
            std::env::var("FUZZ_SKIP")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .iter()
        .any(|s| s == check)
}

/// Structural equality, with floats equal within a few ULPs: without its `float_roundtrip`
/// feature (which the gateway does not enable) serde_json may read back a float it wrote a
/// few ULPs off (found by the extraction target with the subnormal `6.2544069776578e-310`).
/// That is serde_json's documented trade-off, not a gateway finding.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(p), Some(q)) if x.is_f64() && y.is_f64() => {
                    p == q
                        || (p.is_sign_negative() == q.is_sign_negative()
                            && p.to_bits().abs_diff(q.to_bits()) <= 4)
                }
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        _ => a == b,
    }
}

/// One more repetition with probability 1/n; never once the input is used up (an exhausted
/// `Unstructured` answers every `ratio` with its lower bound, which would loop forever).
fn more(u: &mut Unstructured<'_>, n: u32) -> Result<bool> {
    Ok(!u.is_empty() && u.int_in_range(1..=n)? == n)
}
