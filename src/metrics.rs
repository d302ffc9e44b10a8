//! Prometheus metrics: every family the gateway exports, registered once in one explicit
//! registry with the `elicitgate_` prefix.
//!
//! Owns metric names, help texts, label names and bucket choices. Label values come from
//! closed sets (route names are operator-defined and bounded by the config; methods and
//! reasons are `&'static str` from enums), never from message content.

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Proxy latency buckets: sub-millisecond to tens of seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// Every metric family. Cheap to clone (families are reference-counted inside).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// Requests answered, by route, HTTP method, MCP method and status.
    pub requests: IntCounterVec,
    /// Time from request arrival to response head.
    pub request_duration: HistogramVec,
    /// Upstream failures by reason.
    pub upstream_errors: IntCounterVec,
    /// SSE responses currently being relayed.
    pub sse_streams_open: IntGaugeVec,
    /// SSE events relayed.
    pub sse_events: IntCounterVec,
}

impl Metrics {
    pub fn new() -> Self {
        let registry =
            Registry::new_custom(Some("elicitgate".into()), None).expect("static prefix is valid");
        let requests = IntCounterVec::new(
            Opts::new(
                "requests_total",
                "Client requests answered, by route, HTTP method, MCP method and HTTP status.",
            ),
            &["route", "http_method", "mcp_method", "status"],
        )
        .expect("static metric definition");
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "request_duration_seconds",
                "Time from a client request's arrival to its response head (streams excluded).",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["route", "http_method"],
        )
        .expect("static metric definition");
        let upstream_errors = IntCounterVec::new(
            Opts::new(
                "upstream_errors_total",
                "Upstream failures by route and reason.",
            ),
            &["route", "reason"],
        )
        .expect("static metric definition");
        let sse_streams_open = IntGaugeVec::new(
            Opts::new(
                "sse_streams_open",
                "SSE responses currently relayed to clients.",
            ),
            &["route"],
        )
        .expect("static metric definition");
        let sse_events = IntCounterVec::new(
            Opts::new("sse_events_total", "SSE events relayed to clients."),
            &["route"],
        )
        .expect("static metric definition");
        let build_info = GaugeVec::new(
            Opts::new("build_info", "Build information; the value is always 1."),
            &["version"],
        )
        .expect("static metric definition");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1.0);

        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(request_duration.clone()),
            Box::new(upstream_errors.clone()),
            Box::new(sse_streams_open.clone()),
            Box::new(sse_events.clone()),
            Box::new(build_info),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Self {
            registry,
            requests,
            request_duration,
            upstream_errors,
            sse_streams_open,
            sse_events,
        }
    }

    /// Renders the registry in the Prometheus text format.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * 1024);
        // Encoding into a Vec cannot fail on I/O; a failure would be a bug in a family.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "Failed to encode metrics.");
        }
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
