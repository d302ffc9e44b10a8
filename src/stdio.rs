//! `elicitgate stdio -- COMMAND …`: the same enforcement for a local MCP server spoken to over
//! stdio (the desktop-client case). The client starts elicitgate instead of the server;
//! elicitgate starts the server as its child and relays newline-delimited JSON-RPC both ways,
//! judging every message exactly as on HTTP (one client, one session).
//!
//! Owns the process lifecycle: the child's stderr passes through; a line longer than
//! `limits.max_request_body` (client) or `limits.max_sse_event` (server) is refused without
//! reading it whole (an over-long server line answers every request in flight with the
//! blocked-content error, so no call hangs); client EOF closes the child's stdin and waits for it (bounded by
//! `timeouts.shutdown_grace`, then it is killed); SIGTERM/SIGINT are passed to the child; the
//! child's exit status becomes ours; nothing is left running (the child is killed if we are
//! dropped). Standard output carries only protocol lines: audit events that would go to stdout
//! go to stderr.
//!
//! Memory is bounded both ways: each direction has a queue of [`QUEUE_LINES`] lines, and a
//! full queue stops the reading side (a child writing faster than the client reads waits on
//! its own stdout pipe, as it would without the gateway). The gateway's own answers to the
//! child wait in at most [`MAX_WAITING_ANSWERS`] more. Shutdown never waits longer than
//! `timeouts.shutdown_grace` for a writer the other side stopped reading.

use crate::enforce::judge::{AnswerServer, Judged, ServerChannel, ServerVerdict};
use crate::enforce::record::Recorder;
use crate::enforce::{ClientVerdict, Enforcer, Exchange, Refusal, RequestFacts};
use crate::error::GatewayError;
use crate::settings::Settings;
use anyhow::Context;
use bytes::Bytes;
use elicitgate_core::inspect::RuleId;
use elicitgate_core::mcp::jsonrpc::{canonical_id, canonical_raw_id};
use elicitgate_core::mcp::jsonrpc::{Envelope, Kind};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// What reading one bounded line produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Message(Vec<u8>),
    /// A line longer than the bound; its bytes were skipped up to its newline.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line of at most `max` bytes without ever buffering more.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Message(line),
            });
        }
        let (chunk, found) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i)),
            None => (available, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = found.map_or(available.len(), |i| i + 1);
        reader.consume(consumed);
        if found.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Message(line)
            });
        }
    }
}

/// Lines queued in each direction before the reading side waits.
pub const QUEUE_LINES: usize = 256;
/// The gateway's own answers that may wait for room in the child's queue.
pub const MAX_WAITING_ANSWERS: usize = 1024;

/// The gateway's own answers to the server go to its stdin. Weak, so that the client side
/// alone keeps the child's stdin open (client EOF must reach the child).
struct StdioAnswer {
    to_child: mpsc::WeakSender<Bytes>,
    /// Answers waiting for room in a full queue.
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl AnswerServer for StdioAnswer {
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &Recorder) {
        use std::sync::atomic::Ordering;
        let Some(tx) = self.to_child.upgrade() else {
            recorder.gateway_answer(ex.route_name(), false);
            return;
        };
        let body = match tx.try_send(body) {
            Ok(()) => {
                recorder.gateway_answer(ex.route_name(), true);
                return;
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                recorder.gateway_answer(ex.route_name(), false);
                return;
            }
            Err(mpsc::error::TrySendError::Full(body)) => body,
        };
        // The child is not reading its stdin: wait for room, up to a bound.
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= MAX_WAITING_ANSWERS {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            recorder.gateway_answer(ex.route_name(), false);
            return;
        }
        let (waiting, recorder, route) = (
            self.waiting.clone(),
            recorder.clone(),
            ex.route_name().clone(),
        );
        tokio::spawn(async move {
            let ok = tx.send(body).await.is_ok();
            waiting.fetch_sub(1, Ordering::Relaxed);
            recorder.gateway_answer(&route, ok);
        });
    }
}

/// Client requests awaiting their response, by JSON-RPC id.
type InFlight = Arc<Mutex<HashMap<String, Exchange>>>;

/// Runs the relay until the child exits; returns the exit code to use.
pub async fn run(
    settings: Settings,
    route: Option<String>,
    command: Vec<String>,
    admin_listen: Option<std::net::SocketAddr>,
) -> anyhow::Result<i32> {
    if let Some(name) = &route {
        // A mistyped route must not run under another route's policy.
        if !settings.routes.iter().any(|r| &r.name == name) {
            let known: Vec<&str> = settings.routes.iter().map(|r| r.name.as_str()).collect();
            anyhow::bail!("no route named `{name}` (routes: {})", known.join(", "));
        }
    }
    let metrics = crate::metrics::Metrics::new();
    let (_stop_admin, stopping) = tokio::sync::watch::channel(false);
    if let Some(addr) = admin_listen {
        let listener = crate::proxy::server::bind(addr).await?;
        tracing::info!(admin_addr = %listener.local_addr()?, "Admin endpoints listening.");
        let state = Arc::new(crate::admin::AdminState {
            metrics: metrics.clone(),
            ready: true.into(),
        });
        tokio::spawn(crate::admin::serve(
            listener,
            state,
            crate::shutdown::Shutdown::new(stopping),
        ));
    }
    // Audit events as OTLP logs (`audit.sink: otlp`); stdio mode exports no request spans.
    let telemetry = crate::telemetry::Telemetry::start(
        &crate::settings::TelemetrySettings {
            traces: false,
            ..settings.telemetry.clone()
        },
        settings
            .audit
            .sink
            .contains(crate::settings::AuditSinkKind::Otlp),
        &metrics.telemetry_exports,
    )?;
    let sink = crate::start::audit_sink_with(&settings, &metrics, true, telemetry.as_ref())?;
    let enforcer = crate::start::enforcer_for(&settings, &metrics, sink)?;
    // Expired elicitations end their server's call here too, and audit summaries get written.
    let (_stop_sweep, sweeping) = tokio::sync::watch::channel(false);
    tokio::spawn(crate::start::sweep_state(
        enforcer.clone(),
        crate::shutdown::Shutdown::new(sweeping),
    ));
    let route_name: Arc<str> = Arc::from(
        route
            .or_else(|| settings.routes.first().map(|r| r.name.clone()))
            .unwrap_or_else(|| "stdio".to_owned()),
    );
    let (program, args) = command.split_first().context("no server command given")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting `{program}`"))?;
    let child_stdin = child.stdin.take().context("child stdin")?;
    let child_stdout = child.stdout.take().context("child stdout")?;
    let limits = &settings.limits;
    let max_client_line = usize::try_from(limits.max_request_body.as_u64()).unwrap_or(usize::MAX);
    let max_server_line = usize::try_from(limits.max_sse_event.as_u64()).unwrap_or(usize::MAX);

    let (to_child, to_child_rx) = mpsc::channel::<Bytes>(QUEUE_LINES);
    let (to_client, to_client_rx) = mpsc::channel::<Bytes>(QUEUE_LINES);
    let in_flight: InFlight = Arc::new(Mutex::new(HashMap::new()));
    let child_writer = tokio::spawn(write_lines(to_child_rx, child_stdin));
    let client_writer = tokio::spawn(write_lines(to_client_rx, tokio::io::stdout()));

    let mut client_side = tokio::spawn(pump_client(
        enforcer.clone(),
        route_name.clone(),
        in_flight.clone(),
        max_client_line,
        to_child.clone(),
        to_client.clone(),
    ));
    let server_side = tokio::spawn(pump_server(
        enforcer,
        route_name,
        in_flight,
        BufReader::new(child_stdout),
        max_server_line,
        Arc::new(StdioAnswer {
            to_child: to_child.downgrade(),
            waiting: Arc::default(),
        }) as ServerChannel,
        to_client,
    ));
    drop(to_child);

    let (status, client_finished) = tokio::select! {
        status = child.wait() => (status?, false),
        () = crate::shutdown::wait_for_signal() => {
            tracing::info!("Signal received; stopping the server.");
            (terminate(&mut child, settings.timeouts.shutdown_grace).await?, false)
        }
        _ = &mut client_side => {
            // Client EOF: the child's stdin is closed once queued lines are written; give it
            // the grace period to finish on its own.
            let status = match tokio::time::timeout(settings.timeouts.shutdown_grace, child.wait()).await {
                Ok(status) => status?,
                Err(_) => terminate(&mut child, std::time::Duration::ZERO).await?,
            };
            (status, true)
        }
    };
    // No more client input is relayed; everything the child wrote before exiting reaches the
    // client, then standard output is flushed and closed.
    if !client_finished {
        client_side.abort();
        let _ = client_side.await;
    }
    // A client that stopped reading must not keep us from exiting: the rest of the child's
    // output gets the grace period, then is dropped.
    let grace = settings.timeouts.shutdown_grace;
    let drained = tokio::time::timeout(grace, async {
        let _ = server_side.await;
        let _ = client_writer.await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!("The client did not read the server's last output in time; exiting.");
    }
    child_writer.abort();
    if let Some(telemetry) = telemetry {
        // Audit records still queued for the collector are sent before exiting.
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
    Ok(exit_code(status))
}

/// SIGTERM, then SIGKILL after `grace`.
async fn terminate(
    child: &mut tokio::process::Child,
    grace: std::time::Duration,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            child.start_kill()?;
            child.wait().await
        }
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

async fn write_lines<W: tokio::io::AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Bytes>, mut out: W) {
    while let Some(line) = rx.recv().await {
        let ok = out.write_all(&line).await.is_ok() && out.write_all(b"\n").await.is_ok();
        // Flush after a burst, not after every line.
        if !ok || (rx.is_empty() && out.flush().await.is_err()) {
            break;
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
}

/// Client → server: every line judged before it reaches the child.
async fn pump_client(
    enforcer: Arc<Enforcer>,
    route: Arc<str>,
    in_flight: InFlight,
    max_line: usize,
    to_child: mpsc::Sender<Bytes>,
    to_client: mpsc::Sender<Bytes>,
) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    loop {
        let line = match read_line(&mut stdin, max_line).await {
            Ok(Line::Message(line)) => Bytes::from(line),
            Ok(Line::TooLong) => {
                tracing::warn!(
                    limit = max_line,
                    "Refused an over-long line from the client."
                );
                let limit = u64::try_from(max_line).unwrap_or(u64::MAX);
                let error = GatewayError::BodyTooLarge { limit }
                    .error_object()
                    .response(None::<&RawValue>);
                if to_client.send(error).await.is_err() {
                    return;
                }
                continue;
            }
            Ok(Line::Eof) | Err(_) => return,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let envelope = Envelope::peek(&line);
        let mut ex = enforcer.begin(RequestFacts::stdio(route.clone(), &envelope));
        let forward = match enforcer.on_client_message(&mut ex, line).await {
            ClientVerdict::Forward(body) => body,
            ClientVerdict::Refuse(refusal) => {
                if refusal.tell_server {
                    // The child waits for what was refused: it gets the same error.
                    let _ = to_child.send(refusal_line(&refusal)).await;
                }
                let _ = to_client.send(refusal_line(&refusal)).await;
                continue;
            }
        };
        if ex.kind() == Kind::Request {
            if let Some(id) = ex.request_id() {
                let key = canonical_raw_id(id);
                if let Ok(mut map) = in_flight.lock() {
                    // Bounded: a client cannot grow this past the pending limit.
                    if map.len() < 100_000 {
                        map.insert(key, ex);
                    }
                }
            }
        }
        if to_child.send(forward).await.is_err() {
            return;
        }
    }
}

/// Server → client: every line judged before it reaches the client.
#[allow(clippy::too_many_arguments)]
async fn pump_server<R: AsyncBufRead + Unpin>(
    enforcer: Arc<Enforcer>,
    route: Arc<str>,
    in_flight: InFlight,
    mut reader: R,
    max_line: usize,
    channel: ServerChannel,
    to_client: mpsc::Sender<Bytes>,
) {
    loop {
        let line = match read_line(&mut reader, max_line).await {
            Ok(Line::Message(line)) => Bytes::from(line),
            Ok(Line::TooLong) => {
                refuse_over_long_line(&enforcer, &route, &in_flight, &to_client, max_line).await;
                continue;
            }
            Ok(Line::Eof) | Err(_) => return,
        };
        let envelope = Envelope::peek(&line);
        // A response ends its request; it is judged with that request's facts.
        let request = match (&envelope.kind, &envelope.id) {
            (Kind::Response, Some(id)) => in_flight
                .lock()
                .ok()
                .and_then(|mut m| m.remove(&canonical_raw_id(id))),
            _ => None,
        };
        let ex = request.unwrap_or_else(|| {
            // A server request or notification: tied to the session, and associated only when
            // a client request is in flight (SEP-2260).
            let busy = in_flight.lock().map(|m| !m.is_empty()).unwrap_or(false);
            enforcer
                .begin(RequestFacts::stdio(route.clone(), &envelope))
                .unsolicited(busy)
        });
        match enforcer.judge_server_text(&ex, &line, &channel).await {
            Judged::Plain | Judged::Read(_, ServerVerdict::Keep) => {
                if to_client.send(line).await.is_err() {
                    return;
                }
            }
            Judged::Read(_, ServerVerdict::Drop) => {}
            Judged::Read(_, ServerVerdict::Replace(v)) => {
                let _ = to_client.send(Bytes::from(v.to_string())).await;
            }
            Judged::Read(message, ServerVerdict::Refuse(reason)) => {
                // A response to an in-flight request (to some reader) the client would
                // otherwise wait for forever: the blocked-content error for its id instead.
                // The ids it names: its own, or each batch member's.
                let named: Vec<&serde_json::Value> = match &message {
                    serde_json::Value::Array(members) => {
                        members.iter().filter_map(|m| m.get("id")).collect()
                    }
                    one => one.get("id").into_iter().collect(),
                };
                let in_flight_ids: Vec<Box<serde_json::value::RawValue>> =
                    match (envelope.kind, ex.request_id()) {
                        (Kind::Response, Some(id)) => vec![id.to_owned()],
                        _ => in_flight.lock().map_or_else(
                            |_| Vec::new(),
                            |mut map| {
                                named
                                    .iter()
                                    .filter_map(|id| {
                                        map.remove(&canonical_id(id))?
                                            .request_id()
                                            .map(ToOwned::to_owned)
                                    })
                                    .collect()
                            },
                        ),
                    };
                for id in &in_flight_ids {
                    let refusal = Refusal::server_content(
                        Some(&**id),
                        &[RuleId::RequestMalformed],
                        Some(reason),
                    );
                    let _ = to_client.send(refusal_line(&refusal)).await;
                }
                if in_flight_ids.is_empty() && message.is_null() {
                    // Unreadable (a client's laxer parser may still read it as the response
                    // to one of its calls): which call it ends is unknowable, so every call
                    // in flight ends with the blocked-content error rather than hang.
                    end_calls_in_flight(&in_flight, &to_client, reason).await;
                }
            }
        }
    }
}

/// An over-long server line is never forwarded (the gateway could not read it), and the client
/// must not wait forever for the response it may have been: every call in flight ends.
async fn refuse_over_long_line(
    enforcer: &Enforcer,
    route: &Arc<str>,
    in_flight: &InFlight,
    to_client: &mpsc::Sender<Bytes>,
    max_line: usize,
) {
    tracing::warn!(
        limit = max_line,
        "Refused an over-long line from the server."
    );
    let unnamed = enforcer.begin(RequestFacts::stdio(route.clone(), &Envelope::peek(b"")));
    enforcer
        .recorder
        .refused(&unnamed, "server", "body_too_large");
    end_calls_in_flight(in_flight, to_client, "body_too_large").await;
}

/// Ends every client request in flight with the blocked-content error (`reason`), for a server
/// line the gateway refused (and recorded) without knowing which request it answered. Only this
/// server's own calls are affected.
async fn end_calls_in_flight(
    in_flight: &InFlight,
    to_client: &mpsc::Sender<Bytes>,
    reason: &'static str,
) {
    let waiting: Vec<Exchange> = in_flight
        .lock()
        .map(|mut m| m.drain().map(|(_, ex)| ex).collect())
        .unwrap_or_default();
    for id in waiting.iter().filter_map(|ex| ex.request_id()) {
        let refusal = Refusal::server_content(Some(id), &[RuleId::RequestMalformed], Some(reason));
        let _ = to_client.send(refusal_line(&refusal)).await;
    }
}

/// A refusal on the stdio carrier: its JSON-RPC response as one line (the writer ends it with
/// a newline). Every kind is written the same way: stdio has no status, only the message.
pub fn refusal_line(refusal: &Refusal) -> Bytes {
    refusal.message()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_over_long_ones_skipped_whole() {
        let input: &[u8] = b"short\nthis line is far too long\nok\nlast-without-newline";
        let mut r = BufReader::with_capacity(4, input);
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Line::Message(b"short".to_vec())
        );
        assert_eq!(read_line(&mut r, 10).await.unwrap(), Line::TooLong);
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Line::Message(b"ok".to_vec())
        );
        assert_eq!(
            read_line(&mut r, 100).await.unwrap(),
            Line::Message(b"last-without-newline".to_vec())
        );
        assert_eq!(read_line(&mut r, 100).await.unwrap(), Line::Eof);
    }
}
