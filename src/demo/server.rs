//! A small MCP server (Streamable HTTP, revision 2025-11-25) whose tools elicit, for `demo` and
//! for benchmarks: it answers `initialize` with a session, lists its tools, and runs each tool
//! call on an SSE stream that sends one `elicitation/create` request, waits for the client's
//! answer (POSTed back on the same session), then sends the tool result.
//!
//! Deliberately simple and strict about nothing but what the demo needs; it is an upstream for
//! the gateway to judge, not a reference server.

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

type Body = BoxBody<Bytes, Infallible>;
type Waiters = HashMap<String, oneshot::Sender<Value>>;

/// The tools and the elicitation each one sends.
pub fn tool_elicitation(name: &str) -> Option<Value> {
    Some(match name {
        "deploy" => json!({
            "mode": "form",
            "message": "Choose the deployment target",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "env": {"type": "string", "title": "Environment",
                            "oneOf": [{"const": "staging", "title": "Staging"},
                                      {"const": "production", "title": "Production"}]},
                    "confirm": {"type": "boolean", "title": "Confirm", "default": false}
                },
                "required": ["env"]
            }
        }),
        "login" => json!({
            "mode": "form",
            "message": "Enter your password to continue",
            "requestedSchema": {
                "type": "object",
                "properties": {"password": {"type": "string", "title": "Password"}},
                "required": ["password"]
            }
        }),
        "connect_http" => json!({
            "mode": "url",
            "elicitationId": "demo-connect-http",
            "url": "http://auth.example.com/connect",
            "message": "Connect your account"
        }),
        "connect_pii" => json!({
            "mode": "url",
            "elicitationId": "demo-connect-pii",
            "url": "https://auth.example.com/connect?email=alice%40example.com",
            "message": "Connect your account"
        }),
        "connect" => json!({
            "mode": "url",
            "elicitationId": "demo-connect",
            "url": "https://auth.example.com/connect?flow=demo",
            "message": "Connect your account"
        }),
        _ => return None,
    })
}

const TOOLS: &[&str] = &["deploy", "login", "connect_http", "connect_pii", "connect"];

struct State {
    sessions: Mutex<HashMap<String, Waiters>>,
    next_id: AtomicU64,
}

/// Starts the demo server on `addr`; returns its bound address.
pub async fn start(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let state = Arc::new(State {
        sessions: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let state = state.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(state, req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(local)
}

fn respond(status: StatusCode, body: Option<Value>) -> Response<Body> {
    let mut r = Response::new(match &body {
        Some(v) => Full::new(Bytes::from(v.to_string())).boxed(),
        None => Full::new(Bytes::new()).boxed(),
    });
    *r.status_mut() = status;
    if body.is_some() {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
    }
    r
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *req.method() {
        Method::POST => {}
        Method::DELETE => {
            if let Some(s) = session {
                state.sessions.lock().map(|mut m| m.remove(&s)).ok();
            }
            return respond(StatusCode::OK, None);
        }
        _ => return respond(StatusCode::METHOD_NOT_ALLOWED, None),
    }
    let Ok(body) = req.into_body().collect().await.map(|c| c.to_bytes()) else {
        return respond(StatusCode::BAD_REQUEST, None);
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return respond(StatusCode::BAD_REQUEST, None);
    };
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    match msg.get("method").and_then(Value::as_str) {
        Some("initialize") => {
            let sid = format!(
                "demo-{:016x}",
                state.next_id.fetch_add(1, Ordering::Relaxed) * 0x9e37_79b9
            );
            state
                .sessions
                .lock()
                .map(|mut m| m.insert(sid.clone(), HashMap::new()))
                .ok();
            let mut r = respond(
                StatusCode::OK,
                Some(result(
                    &id,
                    json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "elicitgate-demo-server", "version": env!("CARGO_PKG_VERSION")}
                    }),
                )),
            );
            if let Ok(v) = sid.parse() {
                r.headers_mut().insert("mcp-session-id", v);
            }
            r
        }
        Some("tools/list") => {
            let tools: Vec<Value> = TOOLS
                .iter()
                .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
                .collect();
            respond(StatusCode::OK, Some(result(&id, json!({"tools": tools}))))
        }
        Some("tools/call") => {
            let name = msg["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let Some(session) = session else {
                return respond(StatusCode::BAD_REQUEST, None);
            };
            tool_call(state, session, id, &name)
        }
        Some(_) if msg.get("id").is_none() => respond(StatusCode::ACCEPTED, None),
        Some(_) => respond(
            StatusCode::OK,
            Some(
                json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"Method not found"}}),
            ),
        ),
        // A response to one of our elicitations.
        None => {
            let key = id.to_string();
            let waiter = session.and_then(|s| {
                state
                    .sessions
                    .lock()
                    .ok()
                    .and_then(|mut m| m.get_mut(&s).and_then(|w| w.remove(&key)))
            });
            match waiter {
                Some(tx) => {
                    let _ = tx.send(msg);
                    respond(StatusCode::ACCEPTED, None)
                }
                None => respond(StatusCode::NOT_FOUND, None),
            }
        }
    }
}

fn tool_call(state: Arc<State>, session: String, id: Value, name: &str) -> Response<Body> {
    let Some(params) = tool_elicitation(name) else {
        return respond(
            StatusCode::OK,
            Some(json!({"jsonrpc":"2.0","id":id,"error":{"code":-32602,"message":"Unknown tool"}})),
        );
    };
    let (events, rx) = mpsc::channel::<Bytes>(8);
    let elicit_id = json!(format!(
        "elicit-{}",
        state.next_id.fetch_add(1, Ordering::Relaxed)
    ));
    let (answer_tx, answer_rx) = oneshot::channel();
    if let Ok(mut sessions) = state.sessions.lock() {
        sessions
            .entry(session)
            .or_default()
            .insert(elicit_id.to_string(), answer_tx);
    }
    tokio::spawn(async move {
        let request =
            json!({"jsonrpc":"2.0","id":elicit_id,"method":"elicitation/create","params":params});
        let _ = events
            .send(Bytes::from(format!("event: message\ndata: {request}\n\n")))
            .await;
        let outcome = match tokio::time::timeout(Duration::from_secs(60), answer_rx).await {
            Ok(Ok(answer)) => match (answer.get("result"), answer.get("error")) {
                (Some(r), _) => json!({"answer": r}),
                (None, Some(e)) => json!({"elicitation_error": e}),
                (None, None) => json!({"elicitation_error": "empty answer"}),
            },
            _ => json!({"elicitation_error": "no answer"}),
        };
        let text = outcome.to_string();
        let response =
            json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}});
        let _ = events
            .send(Bytes::from(format!("event: message\ndata: {response}\n\n")))
            .await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let mut r = Response::new(StreamBody::new(stream).boxed());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    r
}
