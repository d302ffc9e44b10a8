//! `elicitgate test`: policy as code. A file of cases — a message, the route whose policy
//! judges it, the client's capabilities, and the verdict and rules expected — is run against a
//! configuration, and every mismatch is reported, as `opa test` does for Rego. Teams keep their
//! policy and its cases in one repository and run this in their CI.
//!
//! Owns: the case file format and the report. Judging is `elicitgate inspect`'s
//! ([`crate::inspect_cli::run`]), so a case passes here exactly when `inspect` gives the same
//! answer. Never: reads files or the clock (the caller passes text in and prints the report).
//!
//! The file is YAML (or JSON, which YAML reads too):
//!
//! ```yaml
//! cases:
//!   - name: a password form is blocked
//!     route: mcp                      # optional: that route's policy; default: the default
//!     capabilities: {elicitation: {form: {}}}   # optional, as for `inspect`
//!     message: {jsonrpc: "2.0", id: 1, method: elicitation/create, params: {…}}
//!     expect: {verdict: deny, rules: [form.secret]}   # rules optional: then not compared
//! ```

use elicitgate_core::policy::PolicySet;
use serde::Deserialize;
use serde_json::Value;

/// One case of a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub route: Option<String>,
    #[serde(default)]
    pub capabilities: Option<Value>,
    pub message: Value,
    pub expect: Expect,
}

/// What a case expects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `allow` or `deny`.
    pub verdict: String,
    /// Every rule that matched (deny and audit), in any order; absent: not compared.
    #[serde(default)]
    pub rules: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    cases: Vec<Case>,
}

/// The cases of one file, or why it cannot be read.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    let source = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Yaml))
        .build()
        .map_err(|e| e.to_string())?;
    let file: CaseFile = source.try_deserialize().map_err(|e| e.to_string())?;
    for (i, case) in file.cases.iter().enumerate() {
        if !matches!(case.expect.verdict.as_str(), "allow" | "deny") {
            return Err(format!(
                "case #{} ({}): expect.verdict must be allow or deny, not `{}`",
                i + 1,
                case.name,
                case.expect.verdict
            ));
        }
    }
    Ok(file.cases)
}

/// How one case ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// What differs: `(field, expected, got)`, and the findings as evidence.
    Failed {
        differences: Vec<(&'static str, String, String)>,
        findings: Vec<String>,
    },
    /// The case cannot be judged (no such route, no elicitation in the message, …).
    Error(String),
}

/// Judges `case` with `policies` (routes named in `routes`), as `inspect` would.
pub fn judge(policies: &PolicySet, routes: &[&str], case: &Case) -> Outcome {
    let policy = match &case.route {
        Some(name) if !routes.contains(&name.as_str()) => {
            return Outcome::Error(format!("no route named `{name}`"))
        }
        Some(name) => policies.for_route(name),
        None => policies.default_policy(),
    };
    let capabilities = case.capabilities.as_ref().map(Value::to_string);
    let input = case.message.to_string();
    let (_, line) = crate::inspect_cli::run(&policy, capabilities.as_deref(), input.as_bytes());
    let got: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    if let Some(error) = got["error"].as_str() {
        return Outcome::Error(error.to_owned());
    }
    let verdict = got["verdict"].as_str().unwrap_or_default().to_owned();
    let mut rules: Vec<String> = got["rules"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    rules.sort();
    let mut differences = Vec::new();
    if verdict != case.expect.verdict {
        differences.push(("verdict", case.expect.verdict.clone(), verdict));
    }
    if let Some(expected) = &case.expect.rules {
        let mut expected = expected.clone();
        expected.sort();
        expected.dedup();
        if expected != rules {
            differences.push(("rules", list(&expected), list(&rules)));
        }
    }
    if differences.is_empty() {
        return Outcome::Passed;
    }
    let findings = got["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    let mut line = format!(
                        "{} at {} ({})",
                        f["rule"].as_str().unwrap_or("?"),
                        f["location"].as_str().unwrap_or("?"),
                        f["detector"].as_str().unwrap_or("?")
                    );
                    if let Some(term) = f["term"].as_str() {
                        line.push_str(&format!(" term \"{term}\""));
                    }
                    if let Some(because) = f["because"].as_str() {
                        line.push_str(&format!(": {because}"));
                    }
                    line
                })
                .collect()
        })
        .unwrap_or_default();
    Outcome::Failed {
        differences,
        findings,
    }
}

fn list(rules: &[String]) -> String {
    format!("[{}]", rules.join(", "))
}

/// The report lines of one case: `ok`, or `FAIL` with what differs (expected `-`, got `+`).
pub fn report(file: &str, index: usize, case: &Case, outcome: &Outcome) -> String {
    let head = format!("{file} #{} {}", index + 1, case.name);
    match outcome {
        Outcome::Passed => format!("ok    {head}\n"),
        Outcome::Error(e) => format!("ERROR {head}\n      {e}\n"),
        Outcome::Failed {
            differences,
            findings,
        } => {
            let mut out = format!("FAIL  {head}\n");
            for (field, expected, got) in differences {
                out.push_str(&format!(
                    "      - {field}: {expected}\n      + {field}: {got}\n"
                ));
            }
            for finding in findings {
                out.push_str(&format!("        finding: {finding}\n"));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests;
