//! A fast mock MCP upstream for the benchmark harness (`bench/run.sh`). Loopback only.
//!
//! `cargo run --release --example bench_upstream -- --listen 127.0.0.1:3001`
//!
//! Any path is the MCP endpoint. What it answers:
//! - `POST initialize` → a JSON result with an `Mcp-Session-Id` header (`bench-<n>`);
//! - `POST tools/call` by `params.name`:
//!   - `small`: a JSON result of about 1 KiB; `large`: about 1 MiB;
//!   - `sse`: an SSE stream of `arguments.events` events (default 10), `arguments.interval_ms`
//!     apart (default 0); the last is the result. Every event's data carries
//!     `"sent_us":<unix µs>`, taken just before the event is handed to the connection;
//!   - `elicit_legacy`: an SSE stream with a benign legacy `elicitation/create` (form mode)
//!     followed at once by the final result (it does not wait for the answer);
//!   - `elicit_pending`: an SSE stream with the same elicitation and nothing else (the stream
//!     ends; the elicitation stays pending for its answer, `bench/state.sh`'s round trip);
//!   - `elicit_2026`: a 2026-07-28 `input_required` JSON result with one form request;
//!   - `stream_forever`: SSE events of `arguments.event_bytes` (default 16 KiB) until the client
//!     goes away, `arguments.max_bytes` (default unlimited) are sent or `--max-stream-secs` pass;
//! - other requests → an empty result; notifications and JSON-RPC responses → 202;
//! - `GET` → an idle SSE stream: a comment at once, then one every `--idle-comment-secs`,
//!   closed after `--max-stream-secs`; `DELETE` → 200.
//!
//! Texts are plain ASCII with no JSON escapes, so a gateway's byte-level pre-scan sees an
//! ordinary result as one.

use bytes::{BufMut, Bytes, BytesMut};
use clap::Parser;
use futures_util::stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser, Debug)]
#[command(about = "Mock MCP upstream for bench/run.sh (loopback only)")]
struct Args {
    /// Address to listen on; must be a loopback address.
    #[arg(long, default_value = "127.0.0.1:3001")]
    listen: SocketAddr,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seconds between keep-alive comments on idle GET streams.
    #[arg(long, default_value_t = 30)]
    idle_comment_secs: u64,
    /// Longest any stream (idle GET, `stream_forever`) is kept open, in seconds.
    #[arg(long, default_value_t = 3600)]
    max_stream_secs: u64,
    /// Largest request body read, in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_body: usize,
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Precomputed texts and counters shared by all connections.
struct Shared {
    small_text: Bytes,
    large_text: Bytes,
    sessions: AtomicU64,
    elicitations: AtomicU64,
    idle_comment: Duration,
    max_stream: Duration,
    max_body: usize,
}

const RESULT_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const TEXT_HEAD: &[u8] = br#","result":{"content":[{"type":"text","text":""#;
const TEXT_TAIL: &[u8] = br#""}],"isError":false}}"#;

const SCHEMA: &str = r#"{"type":"object","properties":{"display_name":{"type":"string","title":"Display name","description":"How your name appears on the report","maxLength":64}},"required":["display_name"]}"#;
const MESSAGE: &str = "Which display name should the weekly report use?";

/// ASCII filler without characters JSON would escape.
fn filler(len: usize) -> Bytes {
    const WORDS: &[u8] =
        b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ";
    let mut out = BytesMut::with_capacity(len);
    while out.len() < len {
        let take = (len - out.len()).min(WORDS.len());
        out.put_slice(&WORDS[..take]);
    }
    out.freeze()
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default()
}

fn full(status: StatusCode, content_type: Option<&'static str>, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed_unsync());
    *response.status_mut() = status;
    if let Some(ct) = content_type {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Empty::new().boxed_unsync());
    *response.status_mut() = status;
    response
}

fn json(body: Bytes) -> Response<Body> {
    full(StatusCode::OK, Some("application/json"), body)
}

/// `{"jsonrpc":"2.0","id":<id>,"result":{"content":[{"type":"text","text":"<text>"}],...}}`
fn text_result(id: &str, text: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(
        RESULT_HEAD.len() + id.len() + TEXT_HEAD.len() + text.len() + TEXT_TAIL.len(),
    );
    out.put_slice(RESULT_HEAD);
    out.put_slice(id.as_bytes());
    out.put_slice(TEXT_HEAD);
    out.put_slice(text);
    out.put_slice(TEXT_TAIL);
    out.freeze()
}

fn sse_response<S>(events: S) -> Response<Body>
where
    S: futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + 'static,
{
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(events)));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn sse_event(data: &str) -> Frame<Bytes> {
    let mut out = BytesMut::with_capacity(data.len() + 8);
    out.put_slice(b"data: ");
    out.put_slice(data.as_bytes());
    out.put_slice(b"\n\n");
    Frame::data(out.freeze())
}

fn arg_u64(args: Option<&Value>, name: &str, default: u64) -> u64 {
    args.and_then(|a| a.get(name))
        .and_then(Value::as_u64)
        .unwrap_or(default)
}

/// `tools/call` `sse`: N events, the last being the result, each with its send time.
fn sse_tool(id: String, args: Option<&Value>) -> Response<Body> {
    let events = arg_u64(args, "events", 10).clamp(1, 1_000_000);
    let interval = Duration::from_millis(arg_u64(args, "interval_ms", 0).min(60_000));
    let stream = stream::unfold(0u64, move |seq| {
        let id = id.clone();
        async move {
            if seq >= events {
                return None;
            }
            if seq > 0 && !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            let data = if seq + 1 == events {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"done"}}],"isError":false,"_meta":{{"seq":{seq},"sent_us":{}}}}}}}"#,
                    now_us()
                )
            } else {
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"bench","data":{{"seq":{seq},"sent_us":{}}}}}}}"#,
                    now_us()
                )
            };
            Some((Ok(sse_event(&data)), seq + 1))
        }
    });
    sse_response(stream)
}

/// `tools/call` `elicit_legacy`: a legacy form elicitation, then the result at once.
fn elicit_legacy(shared: &Shared, id: &str) -> Response<Body> {
    let n = shared.elicitations.fetch_add(1, Ordering::Relaxed);
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":"el-{n}","method":"elicitation/create","params":{{"mode":"form","message":"{MESSAGE}","requestedSchema":{SCHEMA}}}}}"#
    );
    let result = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"report queued"}}],"isError":false}}}}"#
    );
    let frames: Vec<Result<Frame<Bytes>, Infallible>> =
        vec![Ok(sse_event(&ask)), Ok(sse_event(&result))];
    sse_response(stream::iter(frames))
}

/// `tools/call` `elicit_pending`: a legacy form elicitation and nothing else.
fn elicit_pending(shared: &Shared) -> Response<Body> {
    let n = shared.elicitations.fetch_add(1, Ordering::Relaxed);
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":"el-{n}","method":"elicitation/create","params":{{"mode":"form","message":"{MESSAGE}","requestedSchema":{SCHEMA}}}}}"#
    );
    let frames: Vec<Result<Frame<Bytes>, Infallible>> = vec![Ok(sse_event(&ask))];
    sse_response(stream::iter(frames))
}

/// `tools/call` `elicit_2026`: an `input_required` result (2026-07-28).
fn elicit_2026(shared: &Shared, id: &str) -> Response<Body> {
    let n = shared.elicitations.fetch_add(1, Ordering::Relaxed);
    json(Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"input_required","inputRequests":{{"display_name":{{"method":"elicitation/create","params":{{"mode":"form","message":"{MESSAGE}","requestedSchema":{SCHEMA}}}}}}},"requestState":"bench-state-{n}"}}}}"#
    )))
}

/// `tools/call` `stream_forever`: same-sized events until the client leaves or a bound is hit.
fn stream_forever(shared: &Shared, args: Option<&Value>) -> Response<Body> {
    let event_bytes = arg_u64(args, "event_bytes", 16 << 10).clamp(128, 4 << 20) as usize;
    let max_bytes = match arg_u64(args, "max_bytes", 0) {
        0 => u64::MAX,
        n => n,
    };
    const HEAD: &str = r#"data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
    const TAIL: &str = "\"}}\n\n";
    let mut event = BytesMut::with_capacity(event_bytes);
    event.put_slice(HEAD.as_bytes());
    event.put_slice(&filler(event_bytes - HEAD.len() - TAIL.len()));
    event.put_slice(TAIL.as_bytes());
    let event = event.freeze();
    let deadline = Instant::now() + shared.max_stream;
    let stream = stream::unfold(0u64, move |sent| {
        let event = event.clone();
        async move {
            if sent >= max_bytes || Instant::now() > deadline {
                return None;
            }
            let len = event.len() as u64;
            Some((Ok(Frame::data(event)), sent + len))
        }
    });
    sse_response(stream)
}

/// `GET`: an idle server-to-client stream with a comment now and then.
fn idle_stream(shared: &Shared) -> Response<Body> {
    let every = shared.idle_comment;
    let deadline = tokio::time::Instant::now() + shared.max_stream;
    let stream = stream::unfold(true, move |first| async move {
        if !first {
            let next = tokio::time::Instant::now() + every;
            if next > deadline {
                tokio::time::sleep_until(deadline).await;
                return None;
            }
            tokio::time::sleep_until(next).await;
        }
        let comment = if first {
            ": open\n\n"
        } else {
            ": keep-alive\n\n"
        };
        Some((
            Ok(Frame::data(Bytes::from_static(comment.as_bytes()))),
            false,
        ))
    });
    sse_response(stream)
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    match *request.method() {
        Method::GET => return Ok(idle_stream(&shared)),
        Method::DELETE => return Ok(empty(StatusCode::OK)),
        Method::POST => {}
        _ => return Ok(empty(StatusCode::METHOD_NOT_ALLOWED)),
    }
    let body = match Limited::new(request.into_body(), shared.max_body)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(empty(StatusCode::PAYLOAD_TOO_LARGE)),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return Ok(empty(StatusCode::BAD_REQUEST));
    };
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").map(Value::to_string);
    let (Some(method), Some(id)) = (method, id) else {
        // A notification, or a JSON-RPC response (an answer to an elicitation).
        return Ok(empty(StatusCode::ACCEPTED));
    };
    let params = message.get("params");
    Ok(match method {
        "initialize" => {
            let version = params
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .unwrap_or("2025-11-25");
            let n = shared.sessions.fetch_add(1, Ordering::Relaxed);
            let mut response = json(Bytes::from(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"{version}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"bench-upstream","version":"0.1.0"}}}}}}"#
            )));
            response.headers_mut().insert(
                "mcp-session-id",
                HeaderValue::from_str(&format!("bench-{n}")).expect("ascii"),
            );
            response
        }
        "tools/call" => {
            let args = params.and_then(|p| p.get("arguments"));
            match params.and_then(|p| p.get("name")).and_then(Value::as_str) {
                Some("small") => json(text_result(&id, &shared.small_text)),
                Some("large") => json(text_result(&id, &shared.large_text)),
                Some("sse") => sse_tool(id, args),
                Some("elicit_legacy") => elicit_legacy(&shared, &id),
                Some("elicit_2026") => elicit_2026(&shared, &id),
                Some("elicit_pending") => elicit_pending(&shared),
                Some("stream_forever") => stream_forever(&shared, args),
                _ => json(Bytes::from(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"unknown tool"}}}}"#
                ))),
            }
        }
        _ => json(Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#
        ))),
    })
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if !args.listen.ip().is_loopback() {
        eprintln!("bench_upstream: refusing to listen on a non-loopback address");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> std::io::Result<()> {
    // About 1 KiB and 1 MiB in total, envelope included.
    let overhead = RESULT_HEAD.len() + TEXT_HEAD.len() + TEXT_TAIL.len() + 4;
    let shared = Arc::new(Shared {
        small_text: filler(1024 - overhead),
        large_text: filler((1 << 20) - overhead),
        sessions: AtomicU64::new(0),
        elicitations: AtomicU64::new(0),
        idle_comment: Duration::from_secs(args.idle_comment_secs.max(1)),
        max_stream: Duration::from_secs(args.max_stream_secs.max(1)),
        max_body: args.max_body,
    });
    let socket = if args.listen.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(args.listen)?;
    let listener = socket.listen(4096)?;
    eprintln!("bench_upstream listening on {}", listener.local_addr()?);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                eprintln!("bench_upstream: accept: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(shared.clone(), request));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
