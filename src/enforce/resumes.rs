//! Which streams a client may resume as a request's stream: the SSE event ids this process
//! forwarded on request streams, per session, bounded in sessions, ids per session and id
//! length.
//!
//! A GET with `Last-Event-ID` replays what followed that event. When the event was one of a
//! request's stream, what follows still answers that request (its elicitations are
//! associated); when it was the standalone stream's — or an id the gateway never forwarded —
//! nothing ties the replay to a request, and an elicitation on it is `request.unassociated`.
//! A server cannot turn its standalone stream into a request stream by giving its events ids.
//!
//! Per process: a resumption that reaches another replica is judged as unassociated (fail
//! closed), which costs a legitimate replayed elicitation, never lets an unassociated one by.

use crate::state::table::TtlTable;
use crate::state::SessionKey;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Event ids remembered per session (a client resumes after the last one it received).
const IDS_PER_SESSION: usize = 32;
/// Longer ids are not remembered: resuming after one is unassociated.
const MAX_ID_BYTES: usize = 256;

pub struct Resumes {
    table: Mutex<TtlTable<SessionKey, VecDeque<Box<str>>>>,
    ttl: Duration,
}

impl Resumes {
    pub fn new(max_sessions: usize, ttl: Duration) -> Self {
        Self {
            table: Mutex::new(TtlTable::new(max_sessions.max(1))),
            ttl,
        }
    }

    fn key(route: &Arc<str>, session: &Arc<str>) -> SessionKey {
        SessionKey {
            route: route.clone(),
            session: session.clone(),
        }
    }

    /// A request stream of `session` carried an event with `id`.
    pub fn remember(&self, route: &Arc<str>, session: &Arc<str>, id: &str) {
        if id.is_empty() || id.len() > MAX_ID_BYTES {
            return;
        }
        let key = Self::key(route, session);
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ids) = table.get_mut(&key, now) {
            if ids.iter().any(|known| &**known == id) {
                return;
            }
            if ids.len() == IDS_PER_SESSION {
                ids.pop_front();
            }
            ids.push_back(Box::from(id));
            table.touch(&key, now, self.ttl);
        } else {
            table.insert(key, VecDeque::from([Box::from(id)]), now, self.ttl);
        }
    }

    /// Whether resuming `session` after `id` resumes a request's stream.
    pub fn resumes_request(&self, route: &Arc<str>, session: &Arc<str>, id: &str) -> bool {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table
            .get(&Self::key(route, session), Instant::now())
            .is_some_and(|ids| ids.iter().any(|known| &**known == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_of_request_streams_in_the_same_session_resume_a_request() {
        let resumes = Resumes::new(2, Duration::from_secs(60));
        let (route, a, b) = (Arc::from("r"), Arc::from("a"), Arc::from("b"));
        resumes.remember(&route, &a, "s1_1");
        assert!(resumes.resumes_request(&route, &a, "s1_1"));
        assert!(
            !resumes.resumes_request(&route, &b, "s1_1"),
            "another session"
        );
        assert!(
            !resumes.resumes_request(&route, &a, "s0_1"),
            "never forwarded"
        );
        assert!(!resumes.resumes_request(&Arc::from("other"), &a, "s1_1"));
        // Bounded per session: the oldest ids go first.
        for n in 0..IDS_PER_SESSION {
            resumes.remember(&route, &a, &format!("n{n}"));
        }
        assert!(!resumes.resumes_request(&route, &a, "s1_1"));
        assert!(resumes.resumes_request(&route, &a, &format!("n{}", IDS_PER_SESSION - 1)));
        // Over-long ids are never remembered.
        let long = "x".repeat(MAX_ID_BYTES + 1);
        resumes.remember(&route, &b, &long);
        assert!(!resumes.resumes_request(&route, &b, &long));
    }
}
