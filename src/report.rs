//! `elicitgate report`: an operator's one-minute summary of audit events (JSON Lines, from a
//! file or stdin) over a time window — decisions by verdict, rule, route and mode, the
//! detectors that blocked most, answer actions and time-to-answer percentiles, refusals and
//! suppressed events — as text, or as JSON for machines.
//!
//! Owns: reading events leniently (a line that is not an audit event is counted and skipped,
//! never fatal: rotated or truncated files happen), the window, the counting, both renderings.
//! Never: needs anything of the running gateway; reads only what the audit sink wrote (which
//! holds no raw user values).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

/// The time window events must fall in (inclusive; open ends unbounded).
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub since: Option<SystemTime>,
    pub until: Option<SystemTime>,
}

impl Window {
    /// Parses `--since` / `--until`: an RFC 3339 time (`2026-12-01T10:00:00Z`) or a duration
    /// back from `now` (`90m`, `24h`, `7d`).
    pub fn parse(
        since: Option<&str>,
        until: Option<&str>,
        now: SystemTime,
    ) -> Result<Window, String> {
        let at = |s: &str| -> Result<SystemTime, String> {
            if let Ok(t) = humantime::parse_rfc3339_weak(s) {
                return Ok(t);
            }
            humantime::parse_duration(s)
                .map(|d| now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH))
                .map_err(|_| format!("`{s}`: expected an RFC 3339 time or a duration (24h)"))
        };
        Ok(Window {
            since: since.map(at).transpose()?,
            until: until.map(at).transpose()?,
        })
    }

    fn contains(&self, t: SystemTime) -> bool {
        self.since.is_none_or(|s| t >= s) && self.until.is_none_or(|u| t <= u)
    }
}

/// Time to answer over the window, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

/// The summary (its JSON form is `--format json`).
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub events: u64,
    /// Lines that were not audit events, or had no readable `ts`.
    pub unreadable_lines: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub by_event: BTreeMap<String, u64>,
    /// Elicitation decisions: `allow`, `deny`, `audit`.
    pub by_verdict: BTreeMap<String, u64>,
    /// Rules of blocked and audited elicitations.
    pub by_rule: BTreeMap<String, u64>,
    pub by_route: BTreeMap<String, u64>,
    pub by_mode: BTreeMap<String, u64>,
    /// Detectors behind blocks, most frequent first (top 10).
    pub top_blocking_detectors: Vec<(String, u64)>,
    /// Answers by action (`accept`, `decline`, `cancel`).
    pub answers: BTreeMap<String, u64>,
    /// Answered / allowed elicitations.
    pub answer_rate: Option<f64>,
    /// Time to answer, ms: p50, p90, p99, max.
    pub time_to_answer_ms: Option<Latency>,
    pub refused_by_reason: BTreeMap<String, u64>,
    pub suppressed_events: u64,
    #[serde(skip)]
    detectors: BTreeMap<String, u64>,
    #[serde(skip)]
    answer_times: Vec<u64>,
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    *map.entry(key.to_owned()).or_default() += 1;
}

impl Summary {
    /// Reads every line of `input` and summarises the events inside `window`.
    pub fn read(input: impl BufRead, window: Window) -> std::io::Result<Summary> {
        let mut s = Summary::default();
        for line in input.lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            s.add_line(&line, window);
        }
        s.finish();
        Ok(s)
    }

    fn add_line(&mut self, line: &str, window: Window) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            self.unreadable_lines += 1;
            return;
        };
        let str_of = |k: &str| event.get(k).and_then(Value::as_str);
        let (Some(kind), Some(ts)) = (str_of("event"), str_of("ts")) else {
            self.unreadable_lines += 1;
            return;
        };
        let Ok(at) = humantime::parse_rfc3339_weak(ts) else {
            self.unreadable_lines += 1;
            return;
        };
        if !window.contains(at) {
            return;
        }
        self.events += 1;
        if self.first.as_deref().is_none_or(|f| ts < f) {
            self.first = Some(ts.to_owned());
        }
        if self.last.as_deref().is_none_or(|l| ts > l) {
            self.last = Some(ts.to_owned());
        }
        bump(&mut self.by_event, kind);
        match kind {
            "elicitation.allowed" | "elicitation.blocked" | "elicitation.audited" => {
                let verdict = str_of("verdict").unwrap_or(match kind {
                    "elicitation.blocked" => "deny",
                    "elicitation.audited" => "audit",
                    _ => "allow",
                });
                bump(&mut self.by_verdict, verdict);
                bump(&mut self.by_route, str_of("route").unwrap_or("-"));
                bump(&mut self.by_mode, str_of("mode").unwrap_or("-"));
                for rule in event
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(r) = rule.as_str() {
                        bump(&mut self.by_rule, r);
                    }
                }
                if kind == "elicitation.blocked" {
                    let findings = event.get("findings").and_then(Value::as_array);
                    for f in findings.into_iter().flatten() {
                        if let Some(d) = f.get("detector").and_then(Value::as_str) {
                            bump(&mut self.detectors, d);
                        }
                    }
                }
            }
            "elicitation.answered" => {
                bump(&mut self.answers, str_of("action").unwrap_or("-"));
                if let Some(ms) = event.get("time_to_answer_ms").and_then(Value::as_u64) {
                    self.answer_times.push(ms);
                }
            }
            "message.refused" => bump(&mut self.refused_by_reason, str_of("reason").unwrap_or("-")),
            "audit.suppressed" => {
                self.suppressed_events += event
                    .get("suppressed_total")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        let mut top: Vec<(String, u64)> = self
            .detectors
            .iter()
            .map(|(d, n)| (d.clone(), *n))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top.truncate(10);
        self.top_blocking_detectors = top;
        // Forwarded to the user: allowed, audited, or only audited because of `dry_run`.
        let allowed: u64 = ["allow", "audit", "would_deny"]
            .iter()
            .filter_map(|v| self.by_verdict.get(*v))
            .sum();
        let answered: u64 = self.answers.values().sum();
        self.answer_rate = (allowed > 0).then(|| answered as f64 / allowed as f64);
        self.answer_times.sort_unstable();
        let t = &self.answer_times;
        self.time_to_answer_ms = (!t.is_empty()).then(|| {
            let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
            Latency {
                p50: at(0.5),
                p90: at(0.9),
                p99: at(0.99),
                max: t[t.len() - 1],
            }
        });
    }

    /// The text an operator reads.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let window = match (&self.first, &self.last) {
            (Some(f), Some(l)) => format!("{f} … {l}"),
            _ => "no events".to_owned(),
        };
        out.push_str(&format!(
            "elicitgate audit report: {} events ({window})\n",
            self.events
        ));
        if self.unreadable_lines > 0 {
            out.push_str(&format!(
                "  {} lines skipped (not audit events)\n",
                self.unreadable_lines
            ));
        }
        let section = |out: &mut String, title: &str, map: &BTreeMap<String, u64>| {
            if map.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title}\n"));
            let mut rows: Vec<_> = map.iter().collect();
            rows.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            for (k, n) in rows {
                out.push_str(&format!("  {n:>8}  {k}\n"));
            }
        };
        section(&mut out, "Decisions", &self.by_verdict);
        if self.by_verdict.contains_key("would_deny") {
            out.push_str("  (would_deny: forwarded because the policy is in dry run; blocked once it is not)\n");
        }
        section(&mut out, "Rules (blocked and audited)", &self.by_rule);
        section(&mut out, "Routes", &self.by_route);
        section(&mut out, "Modes", &self.by_mode);
        if !self.top_blocking_detectors.is_empty() {
            out.push_str("\nTop blocking detectors\n");
            for (d, n) in &self.top_blocking_detectors {
                out.push_str(&format!("  {n:>8}  {d}\n"));
            }
        }
        section(&mut out, "Answers", &self.answers);
        if let Some(rate) = self.answer_rate {
            out.push_str(&format!(
                "  answer rate {:.1} % of allowed elicitations\n",
                rate * 100.0
            ));
        }
        if let Some(Latency { p50, p90, p99, max }) = self.time_to_answer_ms {
            out.push_str(&format!(
                "  time to answer: p50 {} · p90 {} · p99 {} · max {}\n",
                ms(p50),
                ms(p90),
                ms(p99),
                ms(max)
            ));
        }
        section(&mut out, "Refused messages", &self.refused_by_reason);
        let count = |kind: &str| self.by_event.get(kind).copied().unwrap_or(0);
        let (loaded, refused) = (count("policy.loaded"), count("policy.reload_failed"));
        if loaded + refused > 0 {
            out.push_str(&format!(
                "\nConfiguration\n  {loaded:>8}  loaded (start and reloads)\n  {refused:>8}  reloads refused (the running configuration kept)\n"
            ));
        }
        if self.suppressed_events > 0 {
            out.push_str(&format!(
                "\n{} events suppressed by audit.max_events_per_minute\n",
                self.suppressed_events
            ));
        }
        out
    }
}

/// One event's story: the audit event with `event_id`, and every event of the same request
/// (the `request` its access-log line names), in file order. Empty when no event has that id.
pub fn story(input: impl BufRead, event_id: &str) -> std::io::Result<Vec<String>> {
    let mut lines: Vec<(Option<String>, bool, String)> = Vec::new();
    let mut request = None;
    for line in input.lines() {
        let line = line?;
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let is_it = event["event_id"] == event_id;
        let of = event["request"].as_str().map(str::to_owned);
        if is_it {
            request = of.clone();
        }
        // Only what could belong to the story is kept.
        if is_it || of.is_some() {
            lines.push((of, is_it, line));
        }
    }
    let found = lines.iter().any(|(_, is_it, _)| *is_it);
    Ok(lines
        .into_iter()
        .filter(|(of, is_it, _)| found && (*is_it || (request.is_some() && *of == request)))
        .map(|(_, _, line)| line)
        .collect())
}

fn ms(v: u64) -> String {
    humantime::format_duration(Duration::from_millis(v)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: &str = r#"{"v":1,"ts":"2026-12-01T10:00:00.000Z","event":"elicitation.blocked","route":"mcp","mode":"form","verdict":"deny","rules":["form.secret"],"findings":[{"rule":"form.secret","location":"properties.p","detector":"secret.term:password@pl"}]}
{"v":1,"ts":"2026-12-01T10:01:00.000Z","event":"elicitation.allowed","route":"mcp","mode":"form","verdict":"allow","rules":[]}
{"v":1,"ts":"2026-12-01T10:02:00.000Z","event":"elicitation.answered","action":"accept","time_to_answer_ms":1500}
not json
{"v":1,"ts":"2026-12-01T12:00:00.000Z","event":"elicitation.allowed","route":"other","mode":"url","verdict":"allow"}
"#;

    #[test]
    fn counts_decisions_answers_and_skips_what_is_not_an_event() {
        let s = Summary::read(LINES.as_bytes(), Window::default()).unwrap();
        assert_eq!(s.events, 4);
        assert_eq!(s.unreadable_lines, 1);
        assert_eq!(s.by_verdict["deny"], 1);
        assert_eq!(s.by_verdict["allow"], 2);
        assert_eq!(s.by_rule["form.secret"], 1);
        assert_eq!(s.top_blocking_detectors[0].0, "secret.term:password@pl");
        assert_eq!(s.answers["accept"], 1);
        assert_eq!(s.answer_rate, Some(0.5));
        assert_eq!(
            s.time_to_answer_ms,
            Some(Latency {
                p50: 1500,
                p90: 1500,
                p99: 1500,
                max: 1500
            })
        );
        let text = s.render_text();
        assert!(
            text.contains("form.secret") && text.contains("p50 1s 500ms"),
            "{text}"
        );
    }

    #[test]
    fn dry_run_would_blocks_are_told_apart_and_count_as_forwarded() {
        let lines = r#"{"v":1,"ts":"2026-12-01T10:00:00.000Z","event":"elicitation.audited","route":"mcp","mode":"form","verdict":"would_deny","rules":["form.secret"]}
{"v":1,"ts":"2026-12-01T10:00:01.000Z","event":"elicitation.audited","route":"mcp","mode":"form","verdict":"audit","rules":["form.sensitive"]}
{"v":1,"ts":"2026-12-01T10:00:02.000Z","event":"elicitation.answered","action":"decline","time_to_answer_ms":10}
"#;
        let lines = format!(
            "{lines}{}\n{}\n",
            r#"{"v":1,"ts":"2026-12-01T10:00:03.000Z","event":"policy.reload_failed","detail":"1 error"}"#,
            r#"{"v":1,"ts":"2026-12-01T10:00:04.000Z","event":"message.refused","direction":"server","reason":"json.number"}"#
        );
        let s = Summary::read(lines.as_bytes(), Window::default()).unwrap();
        let text = s.render_text();
        assert!(
            text.contains("reloads refused") && text.contains("json.number"),
            "{text}"
        );
        assert_eq!(s.by_verdict["would_deny"], 1);
        assert_eq!(s.by_verdict["audit"], 1);
        assert_eq!(s.answer_rate, Some(0.5));
        assert!(s.render_text().contains("dry run"), "{}", s.render_text());
    }

    #[test]
    fn an_events_story_is_every_event_of_its_request() {
        let lines = r#"{"event_id":"a","event":"elicitation.allowed","request":"r1"}
{"event_id":"b","event":"elicitation.blocked","request":"r2"}
{"event_id":"c","event":"answer.rejected","request":"r2"}
{"event_id":"d","event":"policy.loaded"}
"#;
        let story = story(lines.as_bytes(), "b").unwrap();
        assert_eq!(story.len(), 2, "{story:?}");
        assert!(story[0].contains("\"b\"") && story[1].contains("\"c\""));
        assert_eq!(super::story(lines.as_bytes(), "d").unwrap().len(), 1);
        assert!(super::story(lines.as_bytes(), "zz").unwrap().is_empty());
    }

    #[test]
    fn the_window_selects_events() {
        let now = humantime::parse_rfc3339("2026-12-01T12:30:00Z").unwrap();
        let w = Window::parse(Some("2026-12-01T10:00:30Z"), Some("1h"), now).unwrap();
        let s = Summary::read(LINES.as_bytes(), w).unwrap();
        assert_eq!(s.events, 2, "{s:?}");
        assert!(Window::parse(Some("yesterday-ish"), None, now).is_err());
    }
}
