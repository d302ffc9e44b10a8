//! Audit rate limiting per scope (a session, else a principal): evidence must not be erasable
//! by the party it records. A hostile server (or client) that makes the gateway judge, audit
//! and drop thousands of messages a second would otherwise rotate the audit history away.
//! Past `audit.max_events_per_minute` in one scope's minute, further events of that scope are
//! counted instead of written, by rule (or reason, or event kind), and one `audit.suppressed`
//! summary per scope and minute says what was left out.
//!
//! Owns the windows and counts only; time is passed in, so it is deterministic and testable.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_secs(60);
/// Scopes tracked at once; past it, new scopes share one window (still bounded, still counted).
const MAX_SCOPES: usize = 100_000;
const OVERFLOW: &str = "(overflow)";

struct Window {
    started: Instant,
    written: u32,
    suppressed: BTreeMap<String, u64>,
}

/// One scope's suppressed events in a window that ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub scope: String,
    pub counts: BTreeMap<String, u64>,
    pub total: u64,
}

/// Fixed one-minute windows of audit events per scope.
pub struct Limiter {
    per_minute: u32,
    windows: HashMap<String, Window>,
}

impl Limiter {
    /// `per_minute` = 0: no limit.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            windows: HashMap::new(),
        }
    }

    /// True when an event of `scope` may be written now; otherwise it is counted under each
    /// of `labels` and the caller drops it.
    pub fn admit<'l>(
        &mut self,
        scope: &str,
        labels: impl IntoIterator<Item = &'l str>,
        now: Instant,
    ) -> bool {
        if self.per_minute == 0 {
            return true;
        }
        let key = if self.windows.contains_key(scope) || self.windows.len() < MAX_SCOPES {
            scope
        } else {
            OVERFLOW
        };
        let window = self.windows.entry(key.to_owned()).or_insert(Window {
            started: now,
            written: 0,
            suppressed: BTreeMap::new(),
        });
        if window.written < self.per_minute {
            window.written += 1;
            return true;
        }
        for label in labels {
            *window.suppressed.entry(label.to_owned()).or_default() += 1;
        }
        false
    }

    /// Summaries of the windows that ended by `now` (all of them when `all`), which are
    /// forgotten; windows without suppressed events end silently.
    pub fn ended(&mut self, now: Instant, all: bool) -> Vec<Summary> {
        let mut out = Vec::new();
        self.windows.retain(|scope, w| {
            if !all && now.duration_since(w.started) < MINUTE {
                return true;
            }
            if !w.suppressed.is_empty() {
                let counts = std::mem::take(&mut w.suppressed);
                out.push(Summary {
                    scope: scope.clone(),
                    total: 0,
                    counts,
                });
            }
            false
        });
        for s in &mut out {
            s.total = s.counts.values().sum();
        }
        out.sort_by(|a, b| a.scope.cmp(&b.scope));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_limit_events_are_counted_by_label_and_summarised_once_the_minute_ends() {
        let t0 = Instant::now();
        let mut l = Limiter::new(3);
        for _ in 0..3 {
            assert!(l.admit("s", ["form.secret"], t0));
        }
        assert!(!l.admit("s", ["form.secret"], t0));
        assert!(!l.admit("s", ["url.pii", "url.scheme"], t0));
        // Another scope is not affected.
        assert!(l.admit("t", ["form.secret"], t0));
        assert!(l.ended(t0 + Duration::from_secs(30), false).is_empty());
        let ended = l.ended(t0 + MINUTE, false);
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].scope, "s");
        assert_eq!(ended[0].total, 3);
        assert_eq!(ended[0].counts["form.secret"], 1);
        // A new minute starts afresh.
        assert!(l.admit("s", ["form.secret"], t0 + MINUTE));
    }

    #[test]
    fn zero_means_unlimited_and_all_flushes_everything() {
        let t0 = Instant::now();
        let mut l = Limiter::new(0);
        for _ in 0..10_000 {
            assert!(l.admit("s", ["x"], t0));
        }
        let mut l = Limiter::new(1);
        l.admit("s", ["x"], t0);
        l.admit("s", ["x"], t0);
        assert_eq!(l.ended(t0, true).len(), 1);
    }
}
