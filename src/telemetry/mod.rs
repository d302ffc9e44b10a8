//! OpenTelemetry export: a span per client request ([`crate::spans`]) and, with `audit.sink: otlp`,
//! audit events as OTLP log records, both sent by the official OTLP/HTTP (protobuf) exporter
//! through batch processors on their own threads.
//!
//! Owns the providers' lifecycle (built at start, flushed at shutdown) and counting what the
//! exporter could not deliver. Export never blocks the proxy: spans and records wait in
//! bounded queues (`telemetry.queue`) and are dropped when they are full; a failed export is
//! counted (`elicitgate_telemetry_exports_total{result="failed"}`), never retried into memory.
//! No provider is installed globally: several gateways can run in one process (tests).

pub mod http;

use crate::settings::TelemetrySettings;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use prometheus::IntCounterVec;
use std::sync::Arc;
use std::time::Duration;

/// The running exporters.
pub struct Telemetry {
    tracer: Option<SdkTracer>,
    traces: Option<SdkTracerProvider>,
    logs: Option<SdkLoggerProvider>,
    audit: Option<SdkLogger>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.traces.is_some())
            .field("logs", &self.logs.is_some())
            .finish()
    }
}

impl Telemetry {
    /// Starts what `settings` ask for (traces when `telemetry.traces`, audit logs when
    /// `audit_logs`); `None` without an endpoint. Call inside the gateway's tokio runtime.
    /// `exports` counts export results by `signal` and `result`.
    pub fn start(
        settings: &TelemetrySettings,
        audit_logs: bool,
        exports: &IntCounterVec,
    ) -> anyhow::Result<Option<Arc<Self>>> {
        let Some(endpoint) = &settings.endpoint else {
            return Ok(None);
        };
        let base = endpoint.trim_end_matches('/');
        let client = http::ExportClient::new(settings.timeout)?;
        let headers: std::collections::HashMap<String, String> = settings
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_owned()))
            .collect();
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let (tracer, traces) = if settings.traces {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client.clone())
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{base}/v1/traces"))
                .with_timeout(settings.timeout)
                .with_headers(headers.clone())
                .build()?;
            let exporter = Counted::new(exporter, exports, "traces");
            let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
                .with_batch_config(
                    opentelemetry_sdk::trace::BatchConfigBuilder::default()
                        .with_max_queue_size(settings.queue)
                        .with_scheduled_delay(settings.export_interval)
                        .build(),
                )
                .build();
            let provider = SdkTracerProvider::builder()
                .with_span_processor(batch)
                .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                    settings.sample_ratio,
                ))))
                .with_resource(resource.clone())
                .build();
            (Some(provider.tracer("elicitgate")), Some(provider))
        } else {
            (None, None)
        };
        let (audit, logs) = if audit_logs {
            let exporter = opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{base}/v1/logs"))
                .with_timeout(settings.timeout)
                .with_headers(headers)
                .build()?;
            let exporter = Counted::new(exporter, exports, "logs");
            let batch = opentelemetry_sdk::logs::BatchLogProcessor::builder(exporter)
                .with_batch_config(
                    opentelemetry_sdk::logs::BatchConfigBuilder::default()
                        .with_max_queue_size(settings.queue)
                        .with_scheduled_delay(settings.export_interval)
                        .build(),
                )
                .build();
            let provider = SdkLoggerProvider::builder()
                .with_log_processor(batch)
                .with_resource(resource)
                .build();
            (Some(provider.logger("elicitgate.audit")), Some(provider))
        } else {
            (None, None)
        };
        Ok(Some(Arc::new(Self {
            tracer,
            traces,
            logs,
            audit,
        })))
    }

    /// The request tracer, when traces are exported.
    pub fn tracer(&self) -> Option<&SdkTracer> {
        self.tracer.as_ref()
    }

    /// Queues one audit event (its JSON line, already redacted) as an OTLP log record: the
    /// line is the body, the event name the record's event name, blocked and refused events
    /// are WARN and the rest INFO. Never blocks; a full queue drops it (counted by the SDK).
    pub fn audit_record(&self, event: &'static str, line: String) -> bool {
        let Some(logger) = &self.audit else {
            return false;
        };
        let mut record = logger.create_log_record();
        record.set_event_name(event);
        let (number, text) = match event {
            "elicitation.blocked"
            | "message.refused"
            | "answer.rejected"
            | "policy.reload_failed"
            | "audit.suppressed" => (Severity::Warn, "WARN"),
            _ => (Severity::Info, "INFO"),
        };
        record.set_severity_number(number);
        record.set_severity_text(text);
        record.set_body(AnyValue::String(line.into()));
        logger.emit(record);
        true
    }

    /// Flushes and stops the exporters (blocking, bounded by the exporter timeout): what was
    /// queued is sent before the process exits.
    pub fn shutdown(&self) {
        if let Some(p) = &self.traces {
            let _ = p.shutdown_with_timeout(Duration::from_secs(5));
        }
        if let Some(p) = &self.logs {
            let _ = p.shutdown_with_timeout(Duration::from_secs(5));
        }
    }
}

impl crate::audit::sink::RecordSink for Telemetry {
    fn record(&self, event: &'static str, line: String) -> bool {
        self.audit_record(event, line)
    }

    fn label(&self) -> &'static str {
        "otlp"
    }
}

/// An exporter whose every export result is counted.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    ok: prometheus::IntCounter,
    failed: prometheus::IntCounter,
}

impl<E> Counted<E> {
    fn new(inner: E, exports: &IntCounterVec, signal: &str) -> Self {
        Self {
            inner,
            ok: exports.with_label_values(&[signal, "ok"]),
            failed: exports.with_label_values(&[signal, "failed"]),
        }
    }

    fn count(&self, result: OTelSdkResult) -> OTelSdkResult {
        match &result {
            Ok(()) => self.ok.inc(),
            Err(e) => {
                self.failed.inc();
                tracing::warn!(error = %e, "OpenTelemetry export failed; the batch is dropped.");
            }
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.count(result)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: LogExporter> LogExporter for Counted<E> {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.count(result)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
