//! `elicitgate inspect`: judge one JSON document offline with a compiled policy.
//!
//! Owns: the CLI contract. Input is one JSON document: a JSON-RPC request
//! (`elicitation/create`), result (`input_required`, `tasks/get`), error (`-32042`), a
//! batch of those, or a bare elicitation `params` object. Output is one JSON line:
//! `{"verdict":"allow"|"deny","rules":[…],"findings":[{"elicitation","rule","location","detector"}]}`
//! with exit code 0 (allow), 1 (deny), or 2 with `{"error":"…"}` for usage or parse
//! errors (including a document that contains no elicitation).
//!
//! Context: associated, no repeat or rate history. Capabilities default to
//! `{"elicitation":{"form":{},"url":{}}}`. Era per elicitation: `inputRequests` entries
//! are 2026-07-28, `-32042` elements and `elicitation/create` requests / bare params are
//! judged as 2025-11-25 (so a URL-mode request without `elicitationId` fails
//! `url.missing_id`; wrap 2026 params in an `input_required` result to judge them as 2026).
//! Never: reads files or the clock (the caller passes bytes in and prints the line).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use serde_json::{json, Value};

use elicitgate_core::elicitation::{extract_all, Carrier, ClientCaps};
use elicitgate_core::inspect::{inspect, Era, InspectContext, Verdict};
use elicitgate_core::policy::Policy;

/// Exit code for allow.
pub const EXIT_ALLOW: i32 = 0;
/// Exit code for deny.
pub const EXIT_DENY: i32 = 1;
/// Exit code for usage or parse errors.
pub const EXIT_ERROR: i32 = 2;

fn error_line(msg: &str) -> (i32, String) {
    (EXIT_ERROR, json!({ "error": msg }).to_string())
}

/// Run the inspect command on `input` with optional `--capabilities` JSON.
pub fn run(policy: &Policy, capabilities_json: Option<&str>, input: &[u8]) -> (i32, String) {
    let caps = match capabilities_json {
        None => ClientCaps::form_and_url(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() => ClientCaps::from_capabilities(&v),
            Ok(_) => return error_line("--capabilities must be a JSON object"),
            Err(e) => return error_line(&format!("--capabilities is not valid JSON: {e}")),
        },
    };
    let document: Value = match serde_json::from_slice(input) {
        Ok(v) => v,
        Err(e) => return error_line(&format!("input is not valid JSON: {e}")),
    };
    let views = extract_all(&document);
    if views.is_empty() {
        return error_line("no elicitation found in input");
    }
    let mut combined = Verdict::allow();
    let mut findings = Vec::new();
    for view in &views {
        let era = match view.carrier {
            Carrier::InputRequest => Era::Stateless2026,
            Carrier::LegacyRequest | Carrier::UrlRequiredError => Era::Legacy2025_11,
        };
        let verdict = inspect(view, &caps, &InspectContext::standalone(era), policy);
        let source = view.source();
        for f in &verdict.findings {
            let mut finding = json!({
                "elicitation": source,
                "rule": f.rule.as_str(),
                "location": f.location,
                "detector": f.detector,
            });
            if let Some(because) = f.because {
                finding["because"] = json!(because);
            }
            if let Some(term) = &f.term {
                finding["term"] = json!(term);
            }
            findings.push(finding);
        }
        combined.merge(verdict);
    }
    let line = json!({
        "verdict": combined.decision.as_str(),
        "rules": combined.rules.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        "findings": findings,
    });
    let code = if combined.is_deny() {
        EXIT_DENY
    } else {
        EXIT_ALLOW
    };
    (code, line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_default(input: &str) -> (i32, Value) {
        let (code, line) = run(&Policy::builtin_default(), None, input.as_bytes());
        assert!(!line.contains('\n'));
        (code, serde_json::from_str(&line).expect("one JSON line"))
    }

    #[test]
    fn allows_seed_github_username_form() {
        let (code, out) = run_default(
            r#"{"method":"elicitation/create","params":{"mode":"form","message":"請提供您的 GitHub 使用者名稱",
               "requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}"#,
        );
        assert_eq!(code, EXIT_ALLOW);
        assert_eq!(out["verdict"], "allow");
        assert_eq!(out["rules"], json!([]));
    }

    #[test]
    fn each_secret_finding_names_its_term_and_its_step() {
        let (code, out) = run_default(
            r#"{"message":"Connexion au tableau de bord","requestedSchema":{"type":"object",
               "properties":{"v":{"type":"string","title":"Valeur","description":"Votre mot de passe"}}}}"#,
        );
        assert_eq!(code, EXIT_DENY);
        let f = &out["findings"][0];
        assert_eq!(f["location"], "properties.v.description");
        assert_eq!(f["term"], "mot de passe");
        assert_eq!(
            f["because"],
            "the field's description asks for a secret its type can hold"
        );
    }

    #[test]
    fn denies_api_key_form_with_rules_and_findings() {
        let (code, out) = run_default(
            r#"{"message":"Configure","requestedSchema":{"type":"object","properties":{"apiKey":{"type":"string"}}}}"#,
        );
        assert_eq!(code, EXIT_DENY);
        assert_eq!(out["verdict"], "deny");
        assert_eq!(out["rules"], json!(["form.secret"]));
        assert_eq!(out["findings"][0]["location"], "properties.apiKey");
        assert_eq!(out["findings"][0]["elicitation"], "params");
    }

    #[test]
    fn combines_several_elicitations() {
        let (code, out) = run_default(
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{
                "a":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},
                "b":{"method":"elicitation/create","params":{"mode":"url","message":"go","url":"http://evil.example/x"}}}}}"#,
        );
        assert_eq!(code, EXIT_DENY);
        assert_eq!(out["rules"], json!(["url.scheme"]));
        assert_eq!(out["findings"][0]["elicitation"], "inputRequests.b");
    }

    #[test]
    fn capabilities_flag_is_honoured() {
        let input = br#"{"mode":"url","elicitationId":"e1","message":"Connect","url":"https://auth.example.com/c"}"#;
        let (code, _) = run(&Policy::builtin_default(), None, input);
        assert_eq!(code, EXIT_ALLOW);
        let (code, line) = run(
            &Policy::builtin_default(),
            Some(r#"{"elicitation":{}}"#),
            input,
        );
        assert_eq!(code, EXIT_DENY);
        assert!(line.contains("mode.undeclared"));
    }

    #[test]
    fn usage_errors_exit_2() {
        for (caps, input) in [
            (None, "not json"),
            (None, ""),
            (None, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (Some("{"), r#"{"message":"m","requestedSchema":{}}"#),
            (Some("[]"), r#"{"message":"m","requestedSchema":{}}"#),
        ] {
            let (code, line) = run(&Policy::builtin_default(), caps, input.as_bytes());
            assert_eq!(code, EXIT_ERROR, "{input}");
            let v: Value = serde_json::from_str(&line).expect("json");
            assert!(v["error"].is_string());
        }
    }
}
