//! Prometheus metrics: every family the gateway exports, registered once in one explicit
//! registry with the `elicitgate_` prefix.
//!
//! Owns metric names, help texts, label names and bucket choices. Label values come from
//! closed sets (route names are operator-defined and bounded by the config; methods and
//! reasons are `&'static str` from enums), never from message content.

#[cfg(target_os = "linux")]
mod process;

use prometheus::{
    Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Proxy latency buckets: sub-millisecond to tens of seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// Human answer times: seconds to an hour.
const ANSWER_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

/// Every metric family. Cheap to clone (families are reference-counted inside).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// The standard `process_*` families (CPU, resident memory, descriptors, start time), in
    /// their own unprefixed registry, as every Prometheus client exports them.
    process: Registry,
    /// Family names without the prefix, in registration order.
    names: Vec<String>,
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
    /// Elicitations judged, by route, mode and verdict (allow, deny, audit).
    pub elicitations: IntCounterVec,
    /// Rule matches, by route, rule id and action (deny, audit).
    pub rule_matches: IntCounterVec,
    /// Answers that reached a server, by route, mode and action.
    pub answers: IntCounterVec,
    /// Time from an elicitation reaching the client to its answer.
    pub time_to_answer: HistogramVec,
    /// Elicitations asked again after the user declined or cancelled them.
    pub repeated_prompts: IntCounterVec,
    /// Client answers refused, by route, rule and action.
    pub response_rejections: IntCounterVec,
    /// Completion notifications, by route and result (forwarded, dropped).
    pub completions: IntCounterVec,
    /// The gateway's own answers to servers for blocked elicitations, by result.
    pub gateway_answers: IntCounterVec,
    /// Messages not forwarded because they could not be read as a client reads them, by
    /// route, direction (server, client) and reason.
    pub refused_messages: IntCounterVec,
    /// Legacy elicitations released unanswered (the server was told), by route and reason.
    pub pending_released: IntCounterVec,
    /// Elicitations asked and not yet answered.
    pub pending_elicitations: IntGauge,
    /// Bytes held in whole-body buffers (of `limits.request_buffer_budget`).
    pub buffered_bytes: IntGauge,
    /// Legacy sessions whose declared capabilities are remembered.
    pub sessions: IntGauge,
    /// Requests refused at the identity stage (401), by route and reason.
    pub unauthenticated: IntCounterVec,
    /// 1 while the state store answers, 0 after it failed (until it answers again).
    pub state_store_up: IntGauge,
    /// State store operations that failed (down, slow, unreadable), by operation.
    pub state_store_errors: IntCounterVec,
    /// Configuration reloads by result (success, failure).
    pub policy_reloads: IntCounterVec,
    /// 1 when the last reload succeeded, 0 when it failed.
    pub policy_last_reload_success: IntGauge,
    /// 1 per route: the policy that judges it and its mode (enforce, dry_run, kill_switch).
    pub route_policy: IntGaugeVec,
    /// Unix time of the last successful (re)load.
    pub policy_last_reload_timestamp: Gauge,
    /// Parts of the running configuration a reload changed, by part (routes, policies,
    /// upstream_tls, serving_cert, log_level).
    pub config_changes: IntCounterVec,
    /// 1 while the configuration file holds changes that take effect only after a restart.
    pub config_restart_required: IntGauge,
    /// OTLP exports by signal (traces, logs) and result (ok, failed).
    pub telemetry_exports: IntCounterVec,
    /// Audit events dropped because the writer could not keep up.
    pub audit_events_dropped: IntCounter,
    /// Audit events left out by the per-scope rate limit, by event kind.
    pub audit_events_suppressed: IntCounterVec,
    /// Audit file rotations.
    pub audit_rotations: IntCounter,
    /// Audit lines the writer failed to write (disk full, I/O errors).
    pub audit_write_errors: IntCounter,
    /// Audit events a sink did not deliver, by sink and reason.
    pub audit_delivery_failures: IntCounterVec,
}

/// A registry that remembers the names registered in it.
struct Families {
    registry: Registry,
    names: Vec<String>,
}

impl Families {
    fn register<C: prometheus::core::Collector + Clone + 'static>(
        &mut self,
        name: &str,
        c: C,
    ) -> C {
        self.registry
            .register(Box::new(c.clone()))
            .expect("metric names are unique");
        self.names.push(name.to_owned());
        c
    }

    fn counter(&mut self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        let family =
            IntCounterVec::new(Opts::new(name, help), labels).expect("static metric definition");
        self.register(name, family)
    }

    fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[&str],
        buckets: &[f64],
    ) -> HistogramVec {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        let family = HistogramVec::new(opts, labels).expect("static metric definition");
        self.register(name, family)
    }

    fn gauge(&mut self, name: &str, help: &str) -> IntGauge {
        let gauge = IntGauge::new(name, help).expect("static metric definition");
        self.register(name, gauge)
    }
}

/// A registry holding the process collector (Linux; elsewhere empty).
fn process_registry() -> Registry {
    let registry = Registry::new();
    #[cfg(target_os = "linux")]
    {
        let collector = process::ProcessMetrics::for_self();
        if let Err(e) = registry.register(Box::new(collector)) {
            tracing::warn!(error = %e, "Process metrics unavailable.");
        }
    }
    registry
}

impl Metrics {
    /// Builds every family in a fresh registry (so each test gets its own). Definitions are
    /// static; the `expect`s can only fire on a programming error, at startup.
    pub fn new() -> Self {
        let registry =
            Registry::new_custom(Some("elicitgate".into()), None).expect("static prefix is valid");
        let mut f = Families {
            registry,
            names: Vec::new(),
        };
        let sse_streams_open = f.register(
            "sse_streams_open",
            IntGaugeVec::new(
                Opts::new(
                    "sse_streams_open",
                    "SSE responses currently relayed to clients.",
                ),
                &["route"],
            )
            .expect("static metric definition"),
        );
        let build_info = f.register(
            "build_info",
            GaugeVec::new(
                Opts::new("build_info", "Build information; the value is always 1."),
                &["version"],
            )
            .expect("static metric definition"),
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1.0);
        let policy_last_reload_timestamp = f.register(
            "policy_last_reload_timestamp_seconds",
            Gauge::new(
                "policy_last_reload_timestamp_seconds",
                "Unix time of the last successful configuration (re)load.",
            )
            .expect("static metric definition"),
        );
        let audit_events_dropped = f.register(
            "audit_events_dropped_total",
            IntCounter::new(
                "audit_events_dropped_total",
                "Audit events dropped because an audit sink's writer could not keep up (once per sink; by sink: elicitgate_audit_delivery_failures_total{reason=\"queue_full\"}).",
            )
            .expect("static metric definition"),
        );
        let audit_rotations = f.register(
            "audit_rotations_total",
            IntCounter::new(
                "audit_rotations_total",
                "Audit file rotations (by size or by audit.rotate_every).",
            )
            .expect("static metric definition"),
        );
        let audit_write_errors = f.register(
            "audit_write_errors_total",
            IntCounter::new(
                "audit_write_errors_total",
                "Audit lines the writer failed to write (disk full, I/O errors); proxying continues.",
            )
            .expect("static metric definition"),
        );
        Self {
            audit_events_suppressed: f.counter(
                "audit_events_suppressed_total",
                "Audit events left out by the per-scope rate limit (audit.max_events_per_minute), by event kind; each scope's minute ends with an audit.suppressed summary.",
                &["event"],
            ),
            audit_rotations,
            audit_write_errors,
            audit_delivery_failures: f.counter(
                "audit_delivery_failures_total",
                "Audit events a sink did not deliver, by sink (stdout, file, syslog) and reason (queue_full, write_error, disconnected, too_large); proxying continues.",
                &["sink", "reason"],
            ),
            requests: f.counter(
                "requests_total",
                "Client requests answered, by route, HTTP method, MCP method and HTTP status.",
                &["route", "http_method", "mcp_method", "status"],
            ),
            request_duration: f.histogram(
                "request_duration_seconds",
                "Time from a client request's arrival to its response head.",
                &["route", "http_method"],
                LATENCY_BUCKETS,
            ),
            upstream_errors: f.counter(
                "upstream_errors_total",
                "Upstream failures by route and reason.",
                &["route", "reason"],
            ),
            sse_streams_open,
            sse_events: f.counter(
                "sse_events_total",
                "SSE events relayed to clients.",
                &["route"],
            ),
            elicitations: f.counter(
                "elicitations_total",
                "Elicitations judged, by route, mode and verdict (allow, deny, audit).",
                &["route", "mode", "verdict"],
            ),
            rule_matches: f.counter(
                "rule_matches_total",
                "Policy rule matches, by route, rule id and action (deny, audit).",
                &["route", "rule", "action"],
            ),
            answers: f.counter(
                "answers_total",
                "Elicitation answers passed to servers, by route, mode and action (accept, decline, cancel, error).",
                &["route", "mode", "action"],
            ),
            time_to_answer: f.histogram(
                "time_to_answer_seconds",
                "Time from an elicitation reaching the client to the client's answer.",
                &["route", "mode"],
                ANSWER_BUCKETS,
            ),
            repeated_prompts: f.counter(
                "repeated_prompts_total",
                "Elicitations asked again within the repeat window after a decline or cancel.",
                &["route"],
            ),
            response_rejections: f.counter(
                "response_rejections_total",
                "Client answers refused, by route, rule and action (deny, audit).",
                &["route", "rule", "action"],
            ),
            completions: f.counter(
                "completions_total",
                "URL-mode completion notifications, by route and result (forwarded, dropped).",
                &["route", "result"],
            ),
            refused_messages: f.counter(
                "refused_messages_total",
                "Messages not forwarded because the gateway could not read them as a client would (content coding, charset, JSON, JSON-RPC shape, SSE event type), by route, direction and reason.",
                &["route", "direction", "reason"],
            ),
            gateway_answers: f.counter(
                "gateway_answers_total",
                "Answers the gateway sent to servers for blocked elicitations, by route and result (ok, failed).",
                &["route", "result"],
            ),
            pending_released: f.counter(
                "pending_released_total",
                "Legacy elicitations the gateway stopped tracking without an answer and answered to the server itself, by route and reason (expired, evicted, client_gone).",
                &["route", "reason"],
            ),
            pending_elicitations: f.gauge(
                "pending_elicitations",
                "Elicitations forwarded to clients and not yet answered.",
            ),
            buffered_bytes: f.gauge(
                "buffered_bytes",
                "Bytes held in whole-body buffers (request bodies, JSON answers read for judgment), out of limits.request_buffer_budget.",
            ),
            sessions: f.gauge(
                "sessions",
                "Legacy sessions whose declared client capabilities are remembered.",
            ),
            unauthenticated: f.counter(
                "unauthenticated_total",
                "Requests refused with 401 because they did not prove the identity identity.mode requires, by route and reason (token_missing, invalid, unknown_key, untrusted_peer, header_missing, ...).",
                &["route", "reason"],
            ),
            state_store_up: f.gauge(
                "state_store_up",
                "1 while the enforcement state store (memory or redis) answers, 0 after an operation or health check failed, until one succeeds.",
            ),
            state_store_errors: f.counter(
                "state_store_errors_total",
                "Enforcement state store operations that failed (unreachable, timed out, unreadable record), by operation; what needed the state failed closed (state.unavailable).",
                &["operation"],
            ),
            policy_reloads: f.counter(
                "policy_reloads_total",
                "Configuration reloads by result (success, failure).",
                &["result"],
            ),
            policy_last_reload_success: f.gauge(
                "policy_last_reload_success",
                "1 when the last configuration reload succeeded, 0 when it failed.",
            ),
            route_policy: f.register(
                "route_policy",
                IntGaugeVec::new(
                    Opts::new(
                        "route_policy",
                        "1 for each route, labelled with the policy that judges it and its mode: enforce, dry_run (nothing is blocked, denials are only audited) or kill_switch (every elicitation is denied).",
                    ),
                    &["route", "policy", "mode"],
                )
                .expect("static metric definition"),
            ),
            policy_last_reload_timestamp,
            config_changes: f.counter(
                "config_changes_total",
                "Parts of the running configuration a successful reload changed, by part (routes, policies, upstream_tls, serving_cert, log_level).",
                &["part"],
            ),
            config_restart_required: f.gauge(
                "config_restart_required",
                "1 while the configuration file holds changes (listen, workers, limits, ...) that take effect only after a restart; the reload log and policy.loaded audit event name them.",
            ),
            telemetry_exports: f.counter(
                "telemetry_exports_total",
                "OTLP export batches by signal (traces, logs) and result (ok, failed); a failed batch is dropped, never retried into memory.",
                &["signal", "result"],
            ),
            audit_events_dropped,
            registry: f.registry,
            process: process_registry(),
            names: f.names,
        }
    }

    /// Every family's full name (with the `elicitgate_` prefix), including families that have
    /// no samples yet and so do not appear in [`Metrics::render`].
    pub fn family_names(&self) -> Vec<String> {
        self.names
            .iter()
            .map(|n| format!("elicitgate_{n}"))
            .collect()
    }

    /// Renders the registry in the Prometheus text format.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * 1024);
        // Encoding into a Vec cannot fail on I/O; a failure would be a bug in a family.
        let mut families = self.registry.gather();
        families.extend(self.process.gather());
        if let Err(e) = TextEncoder::new().encode(&families, &mut out) {
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

/// Sets [`Metrics::route_policy`] to what `routes` run now (the previous set is cleared).
pub fn show_route_policies<'a>(
    gauge: &IntGaugeVec,
    routes: impl IntoIterator<Item = &'a str>,
    policies: &elicitgate_core::policy::PolicySet,
) {
    use elicitgate_core::policy::KillSwitch;
    use elicitgate_core::rules::Enforcement;
    gauge.reset();
    for route in routes {
        let policy = policies.for_route(route);
        let mode = match (policy.kill_switch(), policy.enforcement()) {
            (KillSwitch::On, _) => "kill_switch",
            (KillSwitch::Off, Enforcement::DryRun) => "dry_run",
            (KillSwitch::Off, Enforcement::Enforce) => "enforce",
        };
        gauge
            .with_label_values(&[route, policy.name(), mode])
            .set(1);
    }
}
