//! Every refusal kind rendered on every carrier (HTTP and stdio), checked against the table in
//! docs/security-model.md "Refusals on the wire": status, JSON-RPC code, the id answered, and the same body on
//! both carriers. A kind added to enforcement without a row (or a row without a kind) fails.

use elicitgate::enforce::{Refusal, SessionRefusal};
use elicitgate::proxy::respond;
use elicitgate::stdio::refusal_line;
use elicitgate_core::inspect::{RuleId, Verdict};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One row of the security model's table.
#[derive(Debug)]
struct Row {
    /// Status when the refusal answers an id.
    status: u16,
    /// Status when it answers none (only where the row names a second one).
    status_without_id: Option<u16>,
    code: i64,
    data: Vec<String>,
}

fn documented_table() -> BTreeMap<String, Row> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/security-model.md"
    ))
    .unwrap();
    let start = doc
        .find("## Refusals on the wire")
        .expect("docs/security-model.md has a \"Refusals on the wire\" section");
    let mut rows = BTreeMap::new();
    for line in doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| Kind"))
        .skip(2)
    {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [kind, _what, http, stdio, code, data] = cells[..] else {
            panic!("a row of six cells: {line}");
        };
        assert_eq!(stdio, "one line", "{line}");
        let statuses: Vec<u16> = http
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .filter(|n| (100..600).contains(n))
            .collect();
        // Members every refusal of the kind has (`a`, `b: "x"`); "`c` when …" is optional.
        let data = data
            .split([',', ';'])
            .map(str::trim)
            .filter(|d| !d.contains(" when "))
            .map(|d| {
                d.trim_matches('`')
                    .split(['`', ':'])
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        rows.insert(
            kind.trim_matches('`').to_owned(),
            Row {
                status: statuses[0],
                status_without_id: statuses.get(1).copied(),
                code: code.parse().unwrap(),
                data,
            },
        );
    }
    rows
}

fn verdict(rule: RuleId) -> Verdict {
    Verdict {
        denied_by: vec![rule],
        ..Verdict::allow()
    }
}

/// One refusal of every kind, answering id 7.
fn every_kind() -> Vec<Refusal> {
    let id = json!(7);
    let id = Some(&id);
    vec![
        Refusal::unreadable(id, "jsonrpc.shape"),
        Refusal::encoding(id, "charset"),
        Refusal::answer(id, &verdict(RuleId::ResponseInvalid)),
        Refusal::answer_to_waiting_server(id, &verdict(RuleId::ResponseInvalid)),
        Refusal::session(
            id,
            SessionRefusal::Mismatch,
            &verdict(RuleId::SessionMismatch),
        ),
        Refusal::session(
            id,
            SessionRefusal::Unknown,
            &verdict(RuleId::SessionMismatch),
        ),
        Refusal::session(
            id,
            SessionRefusal::StoreUnavailable,
            &verdict(RuleId::StateUnavailable),
        ),
        Refusal::server_content(id, &[RuleId::FormSecret], None),
        Refusal::server_content(id, &[RuleId::RequestMalformed], Some("json.number")),
    ]
}

async fn http_form(refusal: &Refusal) -> (u16, String, Value) {
    let response = respond::refusal(refusal);
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, content_type, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn every_refusal_kind_is_written_as_documented_on_every_carrier() {
    let table = documented_table();
    let mut seen = std::collections::BTreeSet::new();
    for refusal in every_kind() {
        let label = refusal.label();
        seen.insert(label);
        let row = table
            .get(label)
            .unwrap_or_else(|| panic!("{label} has no row in the security model's table"));

        let (status, content_type, body) = http_form(&refusal).await;
        assert_eq!(status, row.status, "{label}: HTTP status");
        assert_eq!(content_type, "application/json", "{label}");
        assert_eq!(body["jsonrpc"], "2.0", "{label}");
        assert_eq!(body["id"], 7, "{label}: the refused message's id");
        assert_eq!(body["error"]["code"], row.code, "{label}: JSON-RPC code");
        assert_eq!(body["error"]["data"]["gateway"], "elicitgate", "{label}");
        for member in &row.data {
            assert!(
                body["error"]["data"].get(member).is_some(),
                "{label}: error.data.{member} missing: {body}"
            );
        }

        // stdio: one line, the same JSON-RPC response.
        let line = refusal_line(&refusal);
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'), "{label}");
        let on_stdio: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(on_stdio, body, "{label}: the carriers disagree");

        // What a waiting server gets is the same error for its own id.
        if refusal.tell_server {
            assert_eq!(
                serde_json::from_slice::<Value>(&refusal.message()).unwrap(),
                body
            );
        }
    }
    let listed: std::collections::BTreeSet<&str> = table.keys().map(String::as_str).collect();
    assert_eq!(
        seen, listed,
        "the security model lists kinds the gateway does not have"
    );
}

#[tokio::test]
async fn refusals_without_an_id_answer_null() {
    let table = documented_table();
    for refusal in [
        Refusal::unreadable(None::<&Value>, "jsonrpc.shape"),
        Refusal::server_content(None::<&Value>, &[RuleId::RequestMalformed], Some("media")),
    ] {
        let row = &table[refusal.label()];
        let (status, _, body) = http_form(&refusal).await;
        assert_eq!(
            status,
            row.status_without_id.unwrap_or(row.status),
            "{}",
            refusal.label()
        );
        assert_eq!(body["id"], Value::Null);
        let on_stdio: Value = serde_json::from_slice(&refusal_line(&refusal)).unwrap();
        assert_eq!(on_stdio, body);
    }
}
