//! The enforcement core with a fake for its one piece of I/O (answering the server): every
//! server text goes through `judge_server_text`, every client message through
//! `on_client_message`; what the gateway would send the server is captured, not sent.

use super::judge::{AnswerServer, Judged, ServerChannel, ServerVerdict};
use super::record::Recorder;
use super::*;
use crate::state::{self, Declared, SessionRecord};
use std::sync::Mutex;

/// Runs a future of the enforcement core to its end: with the memory store (and the failing
/// fake) nothing in it waits.
fn now<T>(f: impl std::future::Future<Output = T>) -> T {
    futures_util::FutureExt::now_or_never(f).expect("ready at once")
}

/// Captures the gateway's own answers to the server.
#[derive(Default)]
struct FakeServer(Mutex<Vec<Value>>);

impl AnswerServer for FakeServer {
    fn answer(&self, _ex: &Exchange, body: Bytes, _recorder: &Recorder) {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::from_slice(&body).unwrap());
    }
}

fn enforcer(policy: &str) -> Arc<Enforcer> {
    let yaml = format!(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n{policy}\nroutes:\n  - name: demo\n    path: /mcp\n    upstream: \"http://127.0.0.1:9/mcp\"\n"
    );
    let settings = crate::settings::Settings::from_yaml(&yaml, std::path::Path::new(".")).unwrap();
    let metrics = crate::metrics::Metrics::new();
    let (sink, _rx) = crate::audit::sink::AuditSink::memory(metrics.audit_events_dropped.clone());
    crate::start::enforcer_for(&settings, &metrics, sink).unwrap()
}

/// A stdio-style exchange (one session) whose client declared `caps` in `initialize`.
fn session(enforcer: &Enforcer, caps: &str) -> Exchange {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let mut ex = enforcer.begin(RequestFacts::stdio(
        Arc::from("demo"),
        &Envelope::peek(init.as_bytes()),
    ));
    assert!(matches!(
        now(enforcer.on_client_message(&mut ex, Bytes::from(init))),
        ClientVerdict::Forward(_)
    ));
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
    enforcer.begin(RequestFacts::stdio(
        Arc::from("demo"),
        &Envelope::peek(call),
    ))
}

fn judge(enforcer: &Enforcer, ex: &Exchange, channel: &ServerChannel, text: &str) -> ServerVerdict {
    match now(enforcer.judge_server_text(ex, text.as_bytes(), channel)) {
        Judged::Plain => ServerVerdict::Keep,
        Judged::Read(_, verdict) => verdict,
    }
}

const PASSWORD: &str = r#"{"jsonrpc":"2.0","id":"e-1","method":"elicitation/create","params":{"message":"Enter your password","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}"#;
const COLOUR: &str = r#"{"jsonrpc":"2.0","id":"e-2","method":"elicitation/create","params":{"message":"Pick a colour","requestedSchema":{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}}}"#;

#[test]
fn a_blocked_form_is_dropped_and_the_server_answered_through_the_trait() {
    let enforcer = enforcer("");
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let fake = Arc::new(FakeServer::default());
    let channel: ServerChannel = fake.clone();
    assert!(matches!(
        judge(&enforcer, &ex, &channel, PASSWORD),
        ServerVerdict::Drop
    ));
    let answers = fake.0.lock().unwrap();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["id"], "e-1");
    assert_eq!(
        answers[0]["error"]["code"],
        elicitgate_core::mcp::jsonrpc::codes::INVALID_PARAMS
    );
    assert_eq!(
        answers[0]["error"]["data"]["rules"],
        serde_json::json!(["form.secret"])
    );
}

#[test]
fn on_block_decline_answers_decline() {
    let enforcer = enforcer("policies:\n  default:\n    on_block: decline\n");
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let fake = Arc::new(FakeServer::default());
    let channel: ServerChannel = fake.clone();
    judge(&enforcer, &ex, &channel, PASSWORD);
    assert_eq!(fake.0.lock().unwrap()[0]["result"]["action"], "decline");
}

#[test]
fn an_allowed_form_is_pending_and_its_answer_checked_by_canonical_id() {
    let enforcer = enforcer("");
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let channel: ServerChannel = Arc::new(FakeServer::default());
    assert!(matches!(
        judge(&enforcer, &ex, &channel, COLOUR),
        ServerVerdict::Keep
    ));
    let answer = |text: &str| {
        let mut ex = enforcer.begin(RequestFacts::stdio(
            Arc::from("demo"),
            &Envelope::peek(text.as_bytes()),
        ));
        now(enforcer.on_client_message(&mut ex, Bytes::from(text.to_owned())))
    };
    // An extra field: the server gets the gateway's error instead, the client a 400.
    let verdict = answer(
        r#"{"jsonrpc":"2.0","id":"e-2","result":{"action":"accept","content":{"colour":"red","password":"x"}}}"#,
    );
    let ClientVerdict::Refuse(refusal) = verdict else {
        panic!("expected a refusal");
    };
    assert!(refusal.tell_server, "the waiting server is not told");
    assert!(matches!(refusal.kind, RefusalKind::Answer { .. }));
    let to_server: Value = serde_json::from_slice(&refusal.message()).unwrap();
    assert_eq!(
        to_server["error"]["data"]["rules"],
        serde_json::json!(["response.invalid"])
    );
    // Answered once: a second answer is a replay.
    let verdict = answer(
        r#"{"jsonrpc":"2.0","id":"e-2","result":{"action":"accept","content":{"colour":"red"}}}"#,
    );
    assert!(matches!(&verdict, ClientVerdict::Refuse(r) if !r.tell_server));
}

#[test]
fn numeric_ids_match_in_any_spelling() {
    let enforcer = enforcer("");
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let channel: ServerChannel = Arc::new(FakeServer::default());
    let form = COLOUR.replace(r#""id":"e-2""#, r#""id":7"#);
    assert!(matches!(
        judge(&enforcer, &ex, &channel, &form),
        ServerVerdict::Keep
    ));
    let text =
        r#"{"jsonrpc":"2.0","id":7.0,"result":{"action":"accept","content":{"colour":"red"}}}"#;
    let mut ex = enforcer.begin(RequestFacts::stdio(
        Arc::from("demo"),
        &Envelope::peek(text.as_bytes()),
    ));
    assert!(matches!(
        now(enforcer.on_client_message(&mut ex, Bytes::from(text))),
        ClientVerdict::Forward(_)
    ));
}

#[test]
fn unreadable_texts_are_refused_with_their_reason_and_plain_ones_not_parsed() {
    let enforcer = enforcer("");
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let channel: ServerChannel = Arc::new(FakeServer::default());
    let nan = PASSWORD.replacen('{', r#"{"x":NaN,"#, 1);
    let ambiguous = PASSWORD.replacen('{', r#"{"result":{},"#, 1);
    let batch = format!("[{PASSWORD}]");
    for (text, reason) in [
        (nan.as_str(), "json.number"),
        (ambiguous.as_str(), "jsonrpc.shape"),
        (batch.as_str(), "jsonrpc.batch"),
        (
            r#"{"jsonrpc":"2.0","method":"elicitation/create""#,
            "json.syntax",
        ),
    ] {
        match judge(&enforcer, &ex, &channel, text) {
            ServerVerdict::Refuse(r) => assert_eq!(r, reason, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    // No carrier named: forwarded without a parse, whatever it holds.
    assert!(matches!(
        now(enforcer.judge_server_text(&ex, br#"{"x":NaN}"#, &channel)),
        Judged::Plain
    ));
}

#[test]
fn a_url_required_error_in_any_number_spelling_is_judged() {
    let enforcer = enforcer("");
    let ex = session(&enforcer, r#"{"elicitation":{"form":{}}}"#);
    let channel: ServerChannel = Arc::new(FakeServer::default());
    for code in ["-32042", "-32042.0", "-3.2042e4", r#""-32042""#] {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"m","data":{{"elicitations":[{{"mode":"url","message":"Connect","elicitationId":"u","url":"https://example.com/c"}}]}}}}}}"#
        );
        match judge(&enforcer, &ex, &channel, &text) {
            ServerVerdict::Replace(v) => {
                assert_eq!(
                    v["error"]["data"]["rules"],
                    serde_json::json!(["mode.undeclared"]),
                    "{code}"
                )
            }
            other => panic!("{code}: {other:?}"),
        }
    }
}

#[test]
fn client_bodies_serde_cannot_read_are_rejected_not_forwarded() {
    let enforcer = enforcer("");
    for text in [
        r#"{"jsonrpc":"2.0","id":"e-1","result":{"action":"accept","content":{"n":1e400}}}"#,
        r#"{"jsonrpc":"2.0","id":"e-1","method":"x","result":{"action":"accept"}}"#,
    ] {
        let mut ex = enforcer.begin(RequestFacts::stdio(
            Arc::from("demo"),
            &Envelope::peek(text.as_bytes()),
        ));
        match now(enforcer.on_client_message(&mut ex, Bytes::from(text))) {
            ClientVerdict::Refuse(r) => {
                assert!(matches!(r.kind, RefusalKind::Unreadable { .. }), "{r:?}")
            }
            _ => panic!("{text} was not rejected"),
        }
    }
}

/// A store that counts every operation and can be switched to fail (as a Redis that is down
/// does), over the memory store.
struct FakeStore {
    inner: crate::state::memory::MemoryStore,
    calls: std::sync::atomic::AtomicUsize,
    down: std::sync::atomic::AtomicBool,
}

impl FakeStore {
    fn new() -> Self {
        Self {
            inner: crate::state::memory::MemoryStore::new(&crate::state::memory::MemoryLimits {
                max_sessions: 100,
                max_pending: 100,
                max_pending_bytes: usize::MAX,
            }),
            calls: Default::default(),
            down: Default::default(),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    fn pass<'a, T: Send + 'a>(&self, f: state::StoreFuture<'a, T>) -> state::StoreFuture<'a, T> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Box::pin(std::future::ready(Err(state::Unavailable)))
        } else {
            f
        }
    }
}

impl state::StateStore for FakeStore {
    fn backend(&self) -> &'static str {
        "fake"
    }
    fn facts<'a>(&'a self, q: &'a state::FactsQuery) -> state::StoreFuture<'a, state::Facts> {
        self.pass(self.inner.facts(q))
    }
    fn put_session<'a>(
        &'a self,
        k: &'a SessionKey,
        r: SessionRecord,
        t: Duration,
        n: bool,
    ) -> state::StoreFuture<'a, bool> {
        self.pass(self.inner.put_session(k, r, t, n))
    }
    fn declare_announced<'a>(
        &'a self,
        k: &'a SessionKey,
        r: SessionRecord,
        t: Duration,
    ) -> state::StoreFuture<'a, Declared> {
        self.pass(self.inner.declare_announced(k, r, t))
    }
    fn session<'a>(&'a self, k: &'a SessionKey) -> state::StoreFuture<'a, Option<SessionRecord>> {
        self.pass(self.inner.session(k))
    }
    fn touch_session<'a>(&'a self, k: &'a SessionKey, t: Duration) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.touch_session(k, t))
    }
    fn end_session<'a>(&'a self, k: &'a SessionKey) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.end_session(k))
    }
    fn put_pending<'a>(
        &'a self,
        k: &'a PendingKey,
        r: &'a state::PendingRecord,
        t: Duration,
        u: Option<&'a state::UrlKey>,
    ) -> state::StoreFuture<'a, Vec<PendingKey>> {
        self.pass(self.inner.put_pending(k, r, t, u))
    }
    fn take_pending<'a>(
        &'a self,
        k: &'a PendingKey,
        p: Take,
        t: Duration,
    ) -> state::StoreFuture<'a, Taken> {
        self.pass(self.inner.take_pending(k, p, t))
    }
    fn forget_pending<'a>(&'a self, k: &'a [PendingKey]) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.forget_pending(k))
    }
    fn put_url_ids<'a>(
        &'a self,
        k: &'a [state::UrlKey],
        t: Duration,
    ) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.put_url_ids(k, t))
    }
    fn complete_url<'a>(
        &'a self,
        k: &'a state::UrlKey,
    ) -> state::StoreFuture<'a, state::Completion> {
        self.pass(self.inner.complete_url(k))
    }
    fn put_asked<'a>(
        &'a self,
        k: &'a state::AskedKey,
        r: &'a state::AskedRecord,
        t: Duration,
    ) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.put_asked(k, r, t))
    }
    fn take_asked<'a>(
        &'a self,
        k: &'a state::AskedKey,
    ) -> state::StoreFuture<'a, Option<state::AskedRecord>> {
        self.pass(self.inner.take_asked(k))
    }
    fn remember_decline<'a>(
        &'a self,
        k: &'a state::DeclineKey,
        w: Duration,
    ) -> state::StoreFuture<'a, ()> {
        self.pass(self.inner.remember_decline(k, w))
    }
}

fn with_store(store: Arc<FakeStore>) -> Arc<Enforcer> {
    let base = enforcer("");
    Arc::new(Enforcer::new(
        base.policies().clone(),
        store,
        EnforcerLimits {
            max_pending: 100,
            max_sessions: 100,
            max_elicitations_per_response: 64,
            session_ttl: Duration::from_secs(600),
        },
        base.recorder.clone(),
    ))
}

#[test]
fn ordinary_traffic_never_touches_the_store() {
    let store = Arc::new(FakeStore::new());
    let enforcer = with_store(store.clone());
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let after_initialize = store.calls();
    assert_eq!(after_initialize, 1, "initialize records the session");
    let channel: ServerChannel = Arc::new(FakeServer::default());
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"no"}}"#,
    ] {
        assert!(matches!(
            judge(&enforcer, &ex, &channel, text),
            ServerVerdict::Keep
        ));
    }
    for text in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ] {
        let mut ex = enforcer.begin(RequestFacts::stdio(
            Arc::from("demo"),
            &Envelope::peek(text.as_bytes()),
        ));
        assert!(matches!(
            now(enforcer.on_client_message(&mut ex, Bytes::from(text))),
            ClientVerdict::Forward(_)
        ));
    }
    assert_eq!(
        store.calls(),
        after_initialize,
        "plain messages made no store call"
    );
    // An elicitation costs one read (facts) and one write (the pending record).
    judge(&enforcer, &ex, &channel, COLOUR);
    assert_eq!(store.calls(), after_initialize + 2);
}

#[test]
fn a_store_that_cannot_answer_fails_closed_and_nothing_hangs() {
    let store = Arc::new(FakeStore::new());
    let enforcer = with_store(store.clone());
    let ex = session(&enforcer, r#"{"elicitation":{}}"#);
    let fake = Arc::new(FakeServer::default());
    let channel: ServerChannel = fake.clone();
    // Asked while the store works; answered while it is down.
    assert!(matches!(
        judge(&enforcer, &ex, &channel, COLOUR),
        ServerVerdict::Keep
    ));
    store.set_down(true);
    let text =
        r#"{"jsonrpc":"2.0","id":"e-2","result":{"action":"accept","content":{"colour":"red"}}}"#;
    let mut answering = enforcer.begin(RequestFacts::stdio(
        Arc::from("demo"),
        &Envelope::peek(text.as_bytes()),
    ));
    let ClientVerdict::Refuse(refusal) =
        now(enforcer.on_client_message(&mut answering, Bytes::from(text)))
    else {
        panic!("an answer that cannot be checked is not forwarded");
    };
    assert!(refusal.tell_server);
    let to_server: Value = serde_json::from_slice(&refusal.message()).unwrap();
    assert_eq!(
        to_server["error"]["data"]["rules"],
        serde_json::json!(["state.unavailable"])
    );
    // A new elicitation is blocked, and its server answered.
    let again = COLOUR.replace("e-2", "e-3");
    assert!(matches!(
        judge(&enforcer, &ex, &channel, &again),
        ServerVerdict::Drop
    ));
    let answers = fake.0.lock().unwrap();
    let rules = &answers.last().unwrap()["error"]["data"]["rules"];
    assert!(
        rules
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("state.unavailable")),
        "{rules}"
    );
    // A 2026-07-28 result carrying a form is replaced by the blocked-content error.
    let mut modern = enforcer.begin(RequestFacts::stdio(Arc::from("demo"), &Envelope::peek(b"")));
    modern.era = Era::Stateless2026;
    modern.request_caps = Some(ClientCaps::from_capabilities(
        &serde_json::json!({"elicitation":{"form":{}}}),
    ));
    let result = r#"{"jsonrpc":"2.0","id":9,"result":{"resultType":"input_required","requestState":"rs","inputRequests":{"k":{"method":"elicitation/create","params":{"mode":"form","message":"Pick a colour","requestedSchema":{"type":"object","properties":{"colour":{"type":"string"}}}}}}}}"#;
    let ServerVerdict::Replace(v) = judge(&enforcer, &modern, &channel, result) else {
        panic!("not replaced");
    };
    assert_eq!(
        v["error"]["data"]["rules"],
        serde_json::json!(["state.unavailable"])
    );
}
