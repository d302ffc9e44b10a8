//! Audit events: one JSON line per decision, redacted by construction.
//!
//! Owns the event schema (versioned by `v`), keyed hashing of identifiers (session, principal,
//! elicitation id: HMAC-SHA256 with a secret salt, so equal ids correlate within a deployment
//! but cannot be reversed or guessed), URL redaction, and the final scrub of server-chosen
//! names. An event is built from names, rule ids and enums; form content, defaults, messages,
//! full URLs and headers are never copied in (the message only when a policy opts in, and
//! then scrubbed).

pub mod limit;
pub mod scrub;
pub mod sink;

use hmac::{Hmac, Mac};
use scrub::{Scrubber, REDACTED};
use serde::Serialize;
use sha2::Sha256;
use sink::AuditSink;
use std::time::SystemTime;

/// Version of the event schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// What happened.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub enum EventKind {
    #[serde(rename = "elicitation.allowed")]
    Allowed,
    #[serde(rename = "elicitation.blocked")]
    Blocked,
    /// Allowed, but rules in `audit` mode (or dry run) matched.
    #[serde(rename = "elicitation.audited")]
    Audited,
    #[serde(rename = "elicitation.answered")]
    Answered,
    #[serde(rename = "answer.rejected")]
    AnswerRejected,
    #[serde(rename = "elicitation.completed")]
    Completed,
    #[serde(rename = "completion.dropped")]
    CompletionDropped,
    /// A legacy elicitation was released unanswered (expired, evicted, client gone, lost by
    /// the state store): the gateway ended its server's call with an error.
    #[serde(rename = "elicitation.released")]
    Released,
    #[serde(rename = "policy.loaded")]
    PolicyLoaded,
    #[serde(rename = "policy.reload_failed")]
    PolicyReloadFailed,
    /// A message the gateway could not read as a client would (coding, charset, JSON, shape,
    /// event type) and therefore did not forward.
    #[serde(rename = "message.refused")]
    Refused,
    /// Events of one scope past `audit.max_events_per_minute`, counted instead of written.
    #[serde(rename = "audit.suppressed")]
    Suppressed,
}

/// The `event` name of an audit line written by this module (`"audit"` when it has none).
pub fn event_name_of(line: &str) -> &'static str {
    const KINDS: [EventKind; 12] = [
        EventKind::Allowed,
        EventKind::Blocked,
        EventKind::Audited,
        EventKind::Answered,
        EventKind::AnswerRejected,
        EventKind::Completed,
        EventKind::CompletionDropped,
        EventKind::Released,
        EventKind::PolicyLoaded,
        EventKind::PolicyReloadFailed,
        EventKind::Refused,
        EventKind::Suppressed,
    ];
    let Some(at) = line.find("\"event\":\"") else {
        return "audit";
    };
    let rest = &line[at + 9..];
    let name = rest.split('"').next().unwrap_or_default();
    KINDS
        .iter()
        .map(|k| k.name())
        .find(|n| *n == name)
        .unwrap_or("audit")
}

impl EventKind {
    /// The event's name, as written (a bounded label).
    pub fn name(self) -> &'static str {
        match self {
            Self::Allowed => "elicitation.allowed",
            Self::Blocked => "elicitation.blocked",
            Self::Audited => "elicitation.audited",
            Self::Answered => "elicitation.answered",
            Self::AnswerRejected => "answer.rejected",
            Self::Completed => "elicitation.completed",
            Self::CompletionDropped => "completion.dropped",
            Self::Released => "elicitation.released",
            Self::PolicyLoaded => "policy.loaded",
            Self::PolicyReloadFailed => "policy.reload_failed",
            Self::Refused => "message.refused",
            Self::Suppressed => "audit.suppressed",
        }
    }
}

/// A schema property as audited: its name (scrubbed) and type, never its values.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PropertyShape {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// A URL reduced to what an incident responder needs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RedactedUrl {
    pub scheme: String,
    pub host: String,
    pub path: String,
    /// Query parameter names with every value replaced by the redaction marker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// A rule match as audited.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AuditFinding {
    pub rule: String,
    pub location: String,
    pub detector: String,
}

/// One audit line. Optional fields are omitted when they do not apply.
#[derive(Debug, Clone, Serialize, Default)]
pub struct AuditEvent {
    /// The `event_id` to write, when the caller already handed it out (a block's id travels in
    /// the error the client gets and the answer the server gets); else a fresh one.
    #[serde(skip)]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EventKind>,
    /// The id of the HTTP request it happened in, as its access-log line names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The tool being called (`tools/call` `params.name`), scrubbed and bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The policy that judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carrier: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<AuditFinding>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schema: Vec<PropertyShape>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<RedactedUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_to_answer_ms: Option<u64>,
    /// Only when the policy sets `audit.include_message`, and then scrubbed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Which side sent a refused message (`server`, `client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<&'static str>,
    /// Why a message was refused: a bounded label (`json.number`, `transport.coding`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// Free-form reason for policy events (error counts, never file contents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `audit.suppressed`: events left out in the scope's last minute, by rule (or reason, or
    /// event kind), and their total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<std::collections::BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed_total: Option<u64>,
}

#[derive(Serialize)]
struct Envelope<'a> {
    v: u32,
    ts: String,
    event_id: String,
    #[serde(flatten)]
    event: &'a AuditEvent,
}

/// Builds, redacts, rate-limits and writes audit events.
pub struct Auditor {
    sink: AuditSink,
    salt: Vec<u8>,
    scrubber: Scrubber,
    limiter: std::sync::Mutex<limit::Limiter>,
    /// Events suppressed by the limiter, by event kind.
    suppressed: Option<prometheus::IntCounterVec>,
}

impl Auditor {
    /// An auditor without a rate limit.
    pub fn new(sink: AuditSink, salt: Vec<u8>) -> Result<Self, regex::Error> {
        Self::limited(sink, salt, 0, None)
    }

    /// An auditor writing at most `per_minute` events per scope and minute (0: no limit);
    /// `suppressed` counts the rest by event kind.
    pub fn limited(
        sink: AuditSink,
        salt: Vec<u8>,
        per_minute: u32,
        suppressed: Option<prometheus::IntCounterVec>,
    ) -> Result<Self, regex::Error> {
        Ok(Self {
            sink,
            salt,
            scrubber: Scrubber::new()?,
            limiter: std::sync::Mutex::new(limit::Limiter::new(per_minute)),
            suppressed,
        })
    }

    /// Writes one `audit.suppressed` summary per scope whose minute ended with events left
    /// out (every scope when `all`, at shutdown). Called periodically.
    pub fn flush_suppressed(&self, all: bool) {
        let ended = self
            .limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ended(std::time::Instant::now(), all);
        for summary in ended {
            let (field, value) = summary
                .scope
                .split_once(':')
                .unwrap_or(("scope", summary.scope.as_str()));
            let mut event = AuditEvent {
                event: Some(EventKind::Suppressed),
                suppressed: Some(summary.counts),
                suppressed_total: Some(summary.total),
                ..AuditEvent::default()
            };
            match field {
                "session" => event.session = Some(value.to_owned()),
                "principal" => event.principal = Some(value.to_owned()),
                _ => event.detail = Some(value.to_owned()),
            }
            self.write(&event);
        }
    }

    /// False when events would be discarded: callers skip building them.
    pub fn enabled(&self) -> bool {
        self.sink.is_enabled()
    }

    /// A keyed hash of an identifier: `kind` separates namespaces (a session id and a
    /// principal with the same text hash differently).
    pub fn hash(&self, kind: &str, value: &str) -> String {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.salt) else {
            return REDACTED.to_owned();
        };
        mac.update(kind.as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        let digest = mac.finalize().into_bytes();
        digest[..12].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Scrubs a server-chosen name or text.
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub(text).into_owned()
    }

    /// Scheme, host and path of `raw`, with query values and PII replaced; `None` when `raw`
    /// is not a URL (then nothing of it is kept).
    /// The URL's parts an audit event may hold: query values and path-parameter values
    /// (`;jsessionid=…`) replaced, the rest scrubbed.
    pub fn redact_url(&self, raw: &str) -> Option<RedactedUrl> {
        let url = url::Url::parse(raw).ok()?;
        let query = url.query().map(|_| {
            url.query_pairs()
                .map(|(k, _)| format!("{}={REDACTED}", self.scrubber.scrub(&k)))
                .collect::<Vec<_>>()
                .join("&")
        });
        Some(RedactedUrl {
            scheme: url.scheme().to_owned(),
            host: self.scrub(url.host_str().unwrap_or("")),
            path: self.scrub(&redact_path_params(url.path())),
            query,
        })
    }

    /// Writes one event, unless its scope (session, else principal) is past its rate limit;
    /// then it is counted for the scope's `audit.suppressed` summary. Policy events have no
    /// scope and are never suppressed. Never blocks; drops are counted by the sink.
    pub fn emit(&self, event: &AuditEvent) {
        let scope = match (&event.session, &event.principal) {
            (Some(s), _) => Some(format!("session:{s}")),
            (None, Some(p)) => Some(format!("principal:{p}")),
            (None, None) => None,
        };
        if let Some(scope) = scope {
            let kind = event.event.map_or("event", EventKind::name);
            let labels: Vec<&str> = if !event.rules.is_empty() {
                event.rules.iter().map(String::as_str).collect()
            } else if let Some(reason) = event.reason {
                vec![reason]
            } else {
                vec![kind]
            };
            let admitted = self
                .limiter
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .admit(&scope, labels, std::time::Instant::now());
            if !admitted {
                if let Some(c) = &self.suppressed {
                    c.with_label_values(&[kind]).inc();
                }
                return;
            }
        }
        self.write(event);
    }

    fn write(&self, event: &AuditEvent) {
        let envelope = Envelope {
            v: SCHEMA_VERSION,
            ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event_id: event.id.clone().unwrap_or_else(new_event_id),
            event,
        };
        match serde_json::to_string(&envelope) {
            Ok(line) => self.sink.write(line),
            Err(e) => tracing::error!(error = %e, "Audit event not serialisable."),
        }
    }
}

/// A fresh audit event id (32 hex digits).
pub fn new_event_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A random salt for keyed hashes when the configuration gives none.
pub fn random_salt() -> Vec<u8> {
    let mut salt = uuid::Uuid::new_v4().as_bytes().to_vec();
    salt.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    salt
}

/// A path with the value of every matrix parameter (`/a;jsessionid=X/b` → `/a;jsessionid=
/// [redacted]/b`) replaced: servers read them like query parameters, and session ids travel
/// there.
fn redact_path_params(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains(';') {
        return std::borrow::Cow::Borrowed(path);
    }
    let segments: Vec<String> = path
        .split('/')
        .map(|segment| {
            let mut parts = segment.split(';');
            let head = parts.next().unwrap_or_default().to_owned();
            parts.fold(head, |acc, p| match p.split_once('=') {
                Some((name, _)) => format!("{acc};{name}={REDACTED}"),
                None => format!("{acc};{p}"),
            })
        })
        .collect();
    std::borrow::Cow::Owned(segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_parameter_values_are_redacted() {
        assert_eq!(
            redact_path_params("/app;jsessionid=ABC123/next;v=2;flag"),
            format!("/app;jsessionid={REDACTED}/next;v={REDACTED};flag")
        );
        assert_eq!(redact_path_params("/plain/path"), "/plain/path");
    }

    fn auditor() -> (Auditor, std::sync::mpsc::Receiver<String>) {
        let (sink, rx) = AuditSink::memory(prometheus::IntCounter::new("d", "d").unwrap());
        (Auditor::new(sink, b"salt".to_vec()).unwrap(), rx)
    }

    #[test]
    fn hashes_are_keyed_stable_and_namespaced() {
        let (a, _) = auditor();
        assert_eq!(a.hash("session", "abc"), a.hash("session", "abc"));
        assert_ne!(a.hash("session", "abc"), a.hash("principal", "abc"));
        let (sink, _) = AuditSink::memory(prometheus::IntCounter::new("d", "d").unwrap());
        let other = Auditor::new(sink, b"other".to_vec()).unwrap();
        assert_ne!(a.hash("session", "abc"), other.hash("session", "abc"));
        assert!(!a.hash("session", "abc").contains("abc"));
    }

    #[test]
    fn urls_keep_scheme_host_path_and_parameter_names_only() {
        let (a, _) = auditor();
        let u = a
            .redact_url(
                "https://auth.example.com/u/bob@example.com/connect?token=s3cr3t&flow=x#frag",
            )
            .unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "auth.example.com");
        assert!(!u.path.contains("bob@example.com"));
        assert_eq!(u.query.as_deref(), Some("token=[redacted]&flow=[redacted]"));
        assert!(a.redact_url("not a url").is_none());
    }

    #[test]
    fn emitted_lines_carry_version_time_and_id() {
        let (a, rx) = auditor();
        a.emit(&AuditEvent {
            event: Some(EventKind::Blocked),
            route: Some("demo".into()),
            rules: vec!["form.secret".into()],
            ..AuditEvent::default()
        });
        let line: serde_json::Value = serde_json::from_str(&rx.recv().unwrap()).unwrap();
        assert_eq!(line["v"], 1);
        assert_eq!(line["event"], "elicitation.blocked");
        assert_eq!(line["rules"][0], "form.secret");
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(line["event_id"].as_str().unwrap().len(), 32);
        assert!(line.get("message").is_none());
    }
}
