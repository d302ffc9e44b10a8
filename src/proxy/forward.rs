//! The per-request pipeline, in a fixed order:
//!
//! 1. **route**: find the route by path prefix (unknown path → 404 JSON-RPC error);
//! 2. **read the body** ([`super::read`]), bounded by `limits.max_request_body` (413, before
//!    reading when the declared length is already too large), by `timeouts.request_body_idle`
//!    and `timeouts.request_body` (408) and by the process-wide `limits.request_buffer_budget`
//!    (503): MCP messages are small JSON documents that later stages must see whole;
//! 3. **peek the envelope** (JSON-RPC `id`, `method`, strict shape) for error bodies and
//!    metric labels;
//! 4. **enforce, client side**: the body's transport (a content coding or a charset other than
//!    UTF-8 is refused: a server would decode what the gateway did not read), capability
//!    shaping, answer checks (may refuse here);
//! 5. **send upstream** with hop-by-hop fields stripped, `X-Forwarded-*` added and
//!    `Accept-Encoding: identity`;
//! 6. **relay the response** through the reading pipeline: transport (media type as leniently
//!    as any client, UTF-8 only, content codings undone — refused when they cannot be), then
//!    SSE event by event through the stream judge, or a JSON answer to a request read whole
//!    (bounded) and judged; bodies no client parses are streamed untouched;
//! 7. **record** status and latency (the route's cached metric children); with `log.access`
//!    or traces on, the response body closes the access line and the request's span when it
//!    ends ([`super::observe`]). A traced request's steps 4–6 run inside its span's context
//!    (continued from `params._meta.traceparent` or the `traceparent` header), and the
//!    upstream exchange gets a client span whose `traceparent` goes upstream.
//!
//! Failures and refusals from any step go through [`super::respond`], the one place that
//! turns them into responses.

use super::answer::HttpAnswer;
use super::body::{Relay, ResponseBody, Source};
use super::headers;
use super::oauth;
use super::observe::{AccessLine, Trail};
use super::read;
use super::request_metrics::HttpMethod;
use super::respond;
use super::sse_judge::StreamJudge;
use super::upstream::UpstreamBody;
use super::{Gateway, Route};
use crate::enforce::judge::{Judged, ServerChannel, ServerVerdict};
use crate::enforce::{
    AnsweredSession, Caller, Carrier, ClientVerdict, Enforcer, Exchange, Refusal, RequestFacts,
};
use crate::error::GatewayError;
use crate::identity::Proven;
use crate::mcp::transport::{self, Media};
use crate::settings::RouteProtocol;
use crate::spans;
use bytes::Bytes;
use elicitgate_core::inspect::RuleId;
use elicitgate_core::mcp::jsonrpc::Envelope;
use elicitgate_core::request;
use http::{header, Method, Request, Response};
use http_body::Body as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// Connection facts the pipeline needs.
#[derive(Clone)]
pub struct ClientConn {
    pub peer: SocketAddr,
    /// `http` or `https`, for `X-Forwarded-Proto`.
    pub scheme: &'static str,
    /// The peer address as an `X-Forwarded-For` value.
    pub forwarded_for: http::HeaderValue,
}

impl ClientConn {
    pub fn new(peer: SocketAddr, scheme: &'static str) -> Self {
        Self {
            peer,
            scheme,
            forwarded_for: headers::forwarded_for(peer.ip()),
        }
    }
}

/// Serves one client request.
pub async fn handle(
    gateway: Arc<Gateway>,
    conn: ClientConn,
    request: Request<Incoming>,
) -> Response<ResponseBody> {
    let started = Instant::now();
    let http_method = HttpMethod::of(request.method());
    let path = request.uri().path();
    if request.method() == Method::GET && oauth::publishes(&gateway.settings) {
        // Protected resource metadata: served before any identity check (a client reads it to
        // learn how to authenticate).
        if let Some(route) = oauth::metadata_path(path).and_then(|p| gateway.mcp_route_at(p)) {
            let response = oauth::metadata(&gateway.settings, &route).await;
            let mut trail = trail_for(&gateway, started, request.headers());
            route.request_metrics.record(
                http_method,
                trail.envelope.method_label(),
                response.status(),
                started.elapsed().as_secs_f64(),
            );
            return observed(
                &gateway,
                Some(&route),
                http_method,
                &conn,
                &mut trail,
                response,
            );
        }
    }
    let routed = if request::path_is_plain(path) {
        gateway.route(path).ok_or(GatewayError::NoRoute)
    } else {
        Err(GatewayError::RequestTarget)
    };
    let (route, rest) = match routed {
        Ok(found) => found,
        Err(error) => {
            let response = respond::error(&error, None);
            record_unmatched(&gateway, http_method, &response, started);
            let mut trail = trail_for(&gateway, started, request.headers());
            return observed(&gateway, None, http_method, &conn, &mut trail, response);
        }
    };
    // Where the route's rest of the path starts (the request moves on; no copy of the path).
    let rest_start = path.len() - rest.len();
    let mut trail = trail_for(&gateway, started, request.headers());
    let exchanged = match route.protocol {
        RouteProtocol::Mcp => {
            exchange(&gateway, &route, rest_start, &conn, request, &mut trail).await
        }
        RouteProtocol::Http => plain_exchange(&gateway, &route, rest_start, &conn, request).await,
    };
    let response = match exchanged {
        Ok(response) => response,
        Err(error) => {
            if error.fault() != crate::error::Fault::Client {
                tracing::warn!(route = %route.name, reason = error.reason(), error = %error, "Upstream request failed.");
                gateway
                    .metrics
                    .upstream_errors
                    .with_label_values(&[&route.name, error.reason()])
                    .inc();
            }
            respond::error(&error, trail.envelope.id.as_deref())
        }
    };
    route.request_metrics.record(
        http_method,
        trail.envelope.method_label(),
        response.status(),
        started.elapsed().as_secs_f64(),
    );
    observed(
        &gateway,
        Some(&route),
        http_method,
        &conn,
        &mut trail,
        response,
    )
}

/// The request's trail; a traced one remembers the context its headers carry.
fn trail_for(gateway: &Gateway, started: Instant, headers: &http::HeaderMap) -> Trail {
    let traced = gateway
        .telemetry
        .as_ref()
        .is_some_and(|t| t.tracer().is_some());
    let mut trail = Trail::new(started, traced);
    if traced {
        trail.parent = Some(spans::from_headers(headers));
    }
    trail
}

/// Step 7's access line and span end, attached to the response body (nothing when neither
/// `log.access` nor traces are on).
fn observed(
    gateway: &Gateway,
    route: Option<&Route>,
    http_method: HttpMethod,
    conn: &ClientConn,
    trail: &mut Trail,
    response: Response<ResponseBody>,
) -> Response<ResponseBody> {
    let access = gateway.settings.log.access;
    let tracer = gateway.telemetry.as_ref().and_then(|t| t.tracer());
    if !access && tracer.is_none() {
        return response;
    }
    let status = response.status().as_u16();
    if trail.trace.is_none() {
        // Refused before the body was read (or no route): the span continues the headers'
        // context.
        if let Some(tracer) = tracer {
            let parent = trail.parent.take().unwrap_or_default();
            trail.trace = Some(server_span(tracer, &parent, route, http_method, trail));
        }
    }
    let line = access.then(|| AccessLine {
        request_id: trail.request_id.clone(),
        route: route.map_or_else(|| Arc::from("unmatched"), |r| r.name.clone()),
        http_method,
        mcp_method: trail.envelope.method_label(),
        status,
        upstream: route.map(|r| r.upstream_label.clone()),
        client: conn.peer.ip(),
        request_bytes: trail.request_bytes,
        head_ms: crate::spans::millis(trail.started.elapsed()),
    });
    let (parts, body) = response.into_parts();
    let body = body.observed(trail.started, status, line, trail.trace.take());
    Response::from_parts(parts, body)
}

/// The request's server span, named as OpenTelemetry's MCP conventions name it (`{mcp
/// method} {route}`).
fn server_span(
    tracer: &opentelemetry_sdk::trace::SdkTracer,
    parent: &opentelemetry::Context,
    route: Option<&Route>,
    http_method: HttpMethod,
    trail: &Trail,
) -> opentelemetry::Context {
    use opentelemetry::KeyValue;
    let mcp_method = trail.envelope.method_label();
    let route_name = route.map_or("unmatched", |r| &r.name);
    let mut attributes = vec![
        KeyValue::new("http.request.method", http_method.label()),
        KeyValue::new("elicitgate.route", route_name.to_owned()),
        KeyValue::new("mcp.method.name", mcp_method),
    ];
    if let Some(id) = trail.envelope.id.as_deref() {
        attributes.push(KeyValue::new("jsonrpc.request.id", id.get().to_owned()));
    }
    spans::server_span(
        tracer,
        parent,
        format!("{mcp_method} {route_name}"),
        trail.arrived,
        attributes,
    )
}

/// A request to an `http` route: read (bounded), sent upstream with the hop-by-hop rules,
/// and its response relayed untouched. Nothing of it is read as MCP: no identity, no
/// enforcement (an authorization server's endpoints, other non-MCP paths of the origin).
async fn plain_exchange(
    gateway: &Gateway,
    route: &Route,
    rest_start: usize,
    conn: &ClientConn,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, GatewayError> {
    let (mut parts, body) = request.into_parts();
    let (body, _held) = read_request(body, gateway).await?;
    let uri = route
        .upstream_target(&parts.uri.path()[rest_start..], parts.uri.query())
        .map_err(|e: http::uri::InvalidUri| GatewayError::BadUpstreamRequest(e.into()))?;
    headers::to_upstream(&mut parts.headers, &conn.forwarded_for, conn.scheme);
    let mut upstream_request = Request::builder()
        .method(parts.method)
        .uri(uri)
        .body(Full::new(body))
        .map_err(GatewayError::BadUpstreamRequest)?;
    *upstream_request.headers_mut() = parts.headers;
    let response = route.upstream.send(upstream_request).await?;
    let (mut parts, body) = response.into_parts();
    headers::to_client(&mut parts.headers, false);
    let idle = gateway.settings.timeouts.stream_idle;
    let relay = Relay::new(Source::Plain(body), idle, None, route.relay_metrics.clone());
    Ok(Response::from_parts(
        parts,
        ResponseBody::Relay(Box::new(relay)),
    ))
}

/// Steps 2–3 for a routed request, then the rest ([`forward`]) inside its trace context.
async fn exchange(
    gateway: &Gateway,
    route: &Route,
    rest_start: usize,
    conn: &ClientConn,
    request: Request<Incoming>,
    trail: &mut Trail,
) -> Result<Response<ResponseBody>, GatewayError> {
    let (parts, body) = request.into_parts();
    let (body, _held) = read_request(body, gateway).await?;
    trail.request_bytes = body.len();
    if parts.method == Method::POST {
        trail.envelope = Envelope::peek(&body);
    }
    let tracer = gateway.telemetry.as_ref().and_then(|t| t.tracer());
    let cx = tracer.map(|tracer| {
        let parent = spans::from_meta(&body)
            .or_else(|| trail.parent.take())
            .unwrap_or_default();
        let method = HttpMethod::of(&parts.method);
        let cx = server_span(tracer, &parent, Some(route), method, trail);
        trail.trace = Some(cx.clone());
        cx
    });
    let rest = forward(
        gateway,
        route,
        rest_start,
        conn,
        parts,
        body,
        &trail.envelope,
        trail.request_id.clone(),
        tracer,
    );
    match cx {
        Some(cx) => opentelemetry::context::FutureExt::with_context(rest, cx).await,
        None => rest.await,
    }
}

/// Steps 4–6: enforcement, the upstream exchange (its own client span when traced), relay.
#[allow(clippy::too_many_arguments)]
async fn forward(
    gateway: &Gateway,
    route: &Route,
    rest_start: usize,
    conn: &ClientConn,
    mut parts: http::request::Parts,
    body: Bytes,
    envelope: &Envelope,
    request_id: Arc<str>,
    tracer: Option<&opentelemetry_sdk::trace::SdkTracer>,
) -> Result<Response<ResponseBody>, GatewayError> {
    let uri = route
        .upstream_target(&parts.uri.path()[rest_start..], parts.uri.query())
        .map_err(|e: http::uri::InvalidUri| GatewayError::BadUpstreamRequest(e.into()))?;

    // Enforcement, client side: capability shaping and answer checks, before anything is
    // forwarded.
    let enforcer = &gateway.enforcer;
    // Identity: who is calling, verified when `identity.mode` says so (401 otherwise).
    let identity = &gateway.identity;
    let address = identity.client_address(conn.peer.ip(), &parts.headers);
    let caller = match identity.authenticate(&parts.headers, conn.peer.ip()) {
        Ok(Proven::Anonymous) => {
            Caller::anonymous(parts.headers.get(header::AUTHORIZATION).cloned(), address)
        }
        Ok(Proven::Principal(principal)) => Caller::verified(principal, address),
        Err(refused) => {
            gateway
                .metrics
                .unauthenticated
                .with_label_values(&[&route.name, refused.reason])
                .inc();
            return Ok(respond::unauthenticated(&refused, envelope.id.as_deref()));
        }
    };
    let mut exchange = enforcer.begin(RequestFacts {
        route_name: route.name.clone(),
        upstream_label: route.upstream_label.clone(),
        carrier: carrier_of(&parts),
        headers: Some(&parts.headers),
        envelope,
        caller,
        query: parts.uri.query(),
        trace_ref: Some(request_id),
    });
    let answer = HttpAnswer::new(route, uri.clone(), &parts.headers);
    if !body.is_empty() {
        if let Err(refused) = request_transport(&parts.headers) {
            let refusal = enforcer.refuse_client(&exchange, refused.reason());
            return Ok(respond::refusal(&refusal));
        }
    }
    let (body, substitute_response) = match enforcer.on_client_message(&mut exchange, body).await {
        ClientVerdict::Forward(body) => (body, None),
        // The server waits for what was refused: it gets the same error for its own request.
        ClientVerdict::Refuse(refusal) if refusal.tell_server => {
            (refusal.message(), Some(respond::refusal(&refusal)))
        }
        ClientVerdict::Refuse(refusal) => return Ok(respond::refusal(&refusal)),
    };

    headers::to_upstream(&mut parts.headers, &conn.forwarded_for, conn.scheme);
    let upstream_trace = tracer.map(|tracer| {
        spans::upstream_span(
            tracer,
            &opentelemetry::Context::current(),
            parts.method.as_str(),
            &route.upstream_label,
            &mut parts.headers,
        )
    });
    let mut upstream_request = Request::builder()
        .method(parts.method)
        .uri(uri)
        .body(Full::new(body))
        .map_err(GatewayError::BadUpstreamRequest)?;
    *upstream_request.headers_mut() = parts.headers;

    let sent = route.upstream.send(upstream_request).await;
    if let Some(cx) = &upstream_trace {
        match &sent {
            Ok(response) => spans::end_with_status(cx, response.status().as_u16()),
            Err(e) => spans::end_failed(cx, e.reason()),
        }
    }
    let mut response = match sent {
        Ok(response) => response,
        Err(e) => {
            // An answer that never reached the server is pending again.
            enforcer.undelivered(&exchange).await;
            return Err(e);
        }
    };
    if response.status() == http::StatusCode::UNAUTHORIZED {
        if let Some(public_url) = &gateway.settings.public_url {
            // The client must ask the gateway for the metadata: its document names the
            // gateway as the resource, the URL the client connects to.
            oauth::rewrite_challenges(response.headers_mut(), public_url, route);
        }
    }
    if let Some(substitute) = substitute_response {
        // The server got the gateway's error instead of the client's answer; the client
        // learns why its answer was refused at once. The server's reply is read on the side
        // (bounded in bytes and time) so its connection can be kept.
        tokio::spawn(response.into_body().discard());
        return Ok(substitute);
    }
    let session = answered_session(response.headers());
    if let Some(refusal) = enforcer
        .on_server_answer(&exchange, response.status().is_success(), session)
        .await
    {
        // Nothing of the answer reaches the client; its body is read on the side so the
        // connection can be kept.
        tokio::spawn(response.into_body().discard());
        return Ok(respond::refusal(&refusal));
    }
    relay_response(gateway, route, response, exchange, answer).await
}

/// The session a response names in `Mcp-Session-Id`: read once, refused when repeated.
fn answered_session(headers: &http::HeaderMap) -> AnsweredSession<'_> {
    let mut values = headers.get_all("mcp-session-id").iter();
    match (values.next(), values.next()) {
        (None, _) => AnsweredSession::None,
        (Some(one), None) => one
            .to_str()
            .map_or(AnsweredSession::Repeated, AnsweredSession::One),
        (Some(_), Some(_)) => AnsweredSession::Repeated,
    }
}

/// What carried the request, as enforcement sees it.
fn carrier_of(parts: &http::request::Parts) -> Carrier {
    match parts.method {
        Method::POST => Carrier::Post,
        Method::GET if parts.headers.contains_key("last-event-id") => Carrier::Resume,
        Method::GET => Carrier::Get,
        Method::DELETE => Carrier::Delete,
        _ => Carrier::OtherHttp,
    }
}

/// A client body is read as the server will read it: no content coding (servers that decode
/// one would act on bytes the gateway never read) and UTF-8.
fn request_transport(headers: &http::HeaderMap) -> Result<(), transport::TransportRefusal> {
    if !transport::codings(headers)?.is_empty() {
        return Err(transport::TransportRefusal::Coding);
    }
    transport::charset(headers)
}

/// Reads a request body whole, bounded in size, time and the process-wide buffer budget
/// ([`read::whole`]); the returned share of the budget is held until the exchange ends.
async fn read_request(
    body: Incoming,
    gateway: &Gateway,
) -> Result<(Bytes, Option<read::Held>), GatewayError> {
    let limit = gateway.settings.limits.max_request_body.as_u64();
    let timeouts = &gateway.settings.timeouts;
    let bounds = read::Bounds {
        limit,
        idle: timeouts.request_body_idle,
        total: timeouts.request_body,
        budget: &gateway.budget,
    };
    read::whole(body, &bounds).await.map_err(|e| match e {
        read::ReadError::TooLarge => GatewayError::BodyTooLarge { limit },
        read::ReadError::Idle => GatewayError::BodyTimeout {
            stage: "body_idle_timeout",
        },
        read::ReadError::Total => GatewayError::BodyTimeout {
            stage: "body_timeout",
        },
        read::ReadError::Budget => GatewayError::Overloaded,
        read::ReadError::Body(e) => GatewayError::ClientBody(Box::new(e)),
    })
}

/// Passes the upstream response on, through the reading pipeline: the transport stage
/// (media type, charset, codings), then SSE relayed event by event through the stream judge,
/// or a JSON answer to a request read whole and judged; anything no client parses streamed
/// untouched.
async fn relay_response(
    gateway: &Gateway,
    route: &Route,
    response: Response<UpstreamBody>,
    exchange: Exchange,
    answer: HttpAnswer,
) -> Result<Response<ResponseBody>, GatewayError> {
    let (mut parts, body) = response.into_parts();
    let shape = match transport::classify(&parts.headers) {
        Ok(shape) => shape,
        Err(refusal) => {
            // Not readable as a client would read it: nothing of it is forwarded.
            drop(body);
            let refused = gateway.enforcer.refuse_server(&exchange, refusal.reason());
            return Ok(respond::refusal(&refused));
        }
    };
    let event_stream = shape.media == Media::EventStream;
    headers::to_client(&mut parts.headers, event_stream);
    // The TypeScript client reads any successful GET body as an event stream whatever its
    // type, so a GET body of another type is judged as one too (a well-formed JSON or HTML
    // body carries no `data:` field and passes as it came).
    let judge_as_stream =
        event_stream || (exchange.carrier().is_get() && parts.status.is_success());
    if judge_as_stream {
        // The judge may drop or replace events: the upstream's length no longer holds.
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    let limits = &gateway.settings.limits;
    let idle = gateway.settings.timeouts.stream_idle;
    let source = if shape.is_identity() {
        Source::Plain(body)
    } else {
        // The client gets the decoded bytes the gateway judged, so no coding header and no
        // length (the decoded length is not known in advance).
        parts.headers.remove(header::CONTENT_ENCODING);
        parts.headers.remove(header::CONTENT_LENGTH);
        Source::Decoded(crate::mcp::decode::decode(
            http_body_util::BodyDataStream::new(body),
            shape.codings.clone(),
        ))
    };

    if shape.media == Media::Json && exchange.judges_json_response() {
        let limit = limits.max_response_body.as_u64();
        let bytes = read_response(source, limit, idle, &gateway.budget).await?;
        let channel: ServerChannel = Arc::new(answer);
        let judged = judge_json(&gateway.enforcer, &exchange, bytes, &channel).await;
        parts.headers.remove(header::CONTENT_LENGTH);
        return Ok(Response::from_parts(parts, ResponseBody::full(judged)));
    }

    let metrics = route.relay_metrics.clone();
    // A body the upstream declared empty needs no relay (and no idle timer).
    let body = if matches!(&source, Source::Plain(b) if b.is_end_stream()) {
        // Nothing to read; polled once, the body gives its connection back.
        if let Source::Plain(mut body) = source {
            let _ = futures_util::FutureExt::now_or_never(body.frame());
        }
        ResponseBody::empty()
    } else if judge_as_stream {
        let max_event = usize::try_from(limits.max_sse_event.as_u64()).unwrap_or(usize::MAX);
        // `endpoint` events announce the 2024-11-05 POST URL, on that era's GET stream only.
        let endpoints = exchange.carrier().is_get().then(|| route.endpoint_map());
        let judge = StreamJudge::new(gateway.enforcer.clone(), exchange, answer, endpoints);
        let mut relay = Box::new(Relay::new(source, idle, Some((max_event, judge)), metrics));
        relay.prime().await;
        ResponseBody::Relay(relay)
    } else {
        ResponseBody::Relay(Box::new(Relay::new(source, idle, None, metrics)))
    };
    Ok(Response::from_parts(parts, body))
}

/// Reads an upstream body whole (decoded when it had a coding), bounded in size, by the idle
/// timeout (between frames and for the whole read) and by the process-wide buffer budget.
async fn read_response(
    source: Source,
    limit: u64,
    idle: std::time::Duration,
    budget: &read::BufferBudget,
) -> Result<Bytes, GatewayError> {
    let bounds = read::Bounds {
        limit,
        idle,
        total: idle,
        budget,
    };
    let read = match source {
        Source::Plain(body) => read::whole(body, &bounds)
            .await
            .map_err(|e| e.map_body(drop)),
        Source::Gone => Ok((Bytes::new(), None)),
        Source::Decoded(stream) => {
            use futures_util::TryStreamExt;
            let body = http_body_util::StreamBody::new(stream.map_ok(http_body::Frame::data));
            read::whole(body, &bounds)
                .await
                .map_err(|e| e.map_body(drop))
        }
    };
    match read {
        Ok((bytes, _held)) => Ok(bytes),
        Err(read::ReadError::Idle | read::ReadError::Total) => Err(GatewayError::UpstreamTimeout {
            stage: "body_timeout",
        }),
        Err(read::ReadError::TooLarge) => Err(GatewayError::ResponseTooLarge { limit }),
        Err(read::ReadError::Budget) => Err(GatewayError::Overloaded),
        Err(read::ReadError::Body(())) => Err(GatewayError::UpstreamBody),
    }
}

/// Judges a whole JSON response body to the client's request; returns the body to send.
/// What is refused or dropped becomes the blocked-content error for the client's own request
/// id (nothing of the server's message is echoed).
async fn judge_json(
    enforcer: &Enforcer,
    ex: &Exchange,
    body: Bytes,
    channel: &ServerChannel,
) -> Bytes {
    match enforcer.judge_server_text(ex, &body, channel).await {
        Judged::Plain | Judged::Read(_, ServerVerdict::Keep) => body,
        Judged::Read(_, ServerVerdict::Replace(v)) => Bytes::from(v.to_string()),
        Judged::Read(_, ServerVerdict::Drop) => {
            Refusal::server_content(ex.request_id(), &[RuleId::RequestMalformed], None).message()
        }
        Judged::Read(_, ServerVerdict::Refuse(reason)) => {
            Refusal::server_content(ex.request_id(), &[RuleId::RequestMalformed], Some(reason))
                .message()
        }
    }
}

/// Records a request no route matched (routed ones go through their route's
/// [`super::request_metrics::RequestMetrics`]).
fn record_unmatched(
    gateway: &Gateway,
    http_method: HttpMethod,
    response: &Response<ResponseBody>,
    started: Instant,
) {
    let m = &gateway.metrics;
    let method = http_method.label();
    m.requests
        .with_label_values(&["unmatched", method, "none", response.status().as_str()])
        .inc();
    m.request_duration
        .with_label_values(&["unmatched", method])
        .observe(started.elapsed().as_secs_f64());
}
