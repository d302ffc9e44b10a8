//! Starting and stopping the whole gateway: builds the audit sink, the state store and the
//! enforcer from settings, binds the client and admin listeners, and spawns the background
//! tasks (state sweeps, store health checks, identity refresh, audit reopening, reload).
//! [`start`] runs the gateway; `main`, `demo` and the integration tests call it, and
//! [`Running::shutdown`] drains it.
//!
//! Never: serving a request (that is [`crate::proxy`]) or deciding anything about one.

use crate::shutdown::Shutdown;
use crate::{
    admin, audit, enforce, identity, live, metrics, proxy, reload, settings, state, telemetry, tls,
};
use anyhow::Context;
use settings::Settings;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running gateway.
pub struct Running {
    /// Where MCP clients connect.
    pub addr: SocketAddr,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    pub admin_addr: SocketAddr,
    admin: Arc<admin::AdminState>,
    telemetry: Option<Arc<telemetry::Telemetry>>,
    stop: watch::Sender<bool>,
    /// Stops the admin listener, once the client side has drained.
    admin_stop: watch::Sender<bool>,
    server: JoinHandle<()>,
    admin_task: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, drains in-flight requests (bounded by `shutdown_grace`) and returns.
    /// Throughout the drain the admin listener stays up: `/readyz` answers 503 (so an
    /// orchestrator stops sending traffic), `/healthz` 200 and `/metrics` keeps counting;
    /// it closes once the client side has drained.
    pub async fn shutdown(self) {
        self.admin.ready.store(false, Ordering::Release);
        let _ = self.stop.send(true);
        let _ = self.server.await;
        let _ = self.admin_stop.send(true);
        let _ = self.admin_task.await;
        if let Some(telemetry) = self.telemetry {
            // Spans and records still queued are sent (bounded by the exporter timeout).
            let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        }
    }
}

/// How to run the gateway beyond its settings.
#[derive(Default)]
pub struct Options {
    /// The configuration file, watched for hot reload (SIGHUP and file changes).
    pub config_path: Option<std::path::PathBuf>,
    /// Send audit events here instead of the configured sink (tests, demo).
    pub audit_sink: Option<audit::sink::AuditSink>,
    /// Sets the process's log filter when a reload changes `log.level` (absent: a change
    /// is reported as needing a restart).
    pub log_level: Option<live::SetLogLevel>,
}

/// Builds the audit sink the settings ask for.
pub fn audit_sink_for(
    settings: &Settings,
    metrics: &metrics::Metrics,
    telemetry: Option<&Arc<telemetry::Telemetry>>,
) -> anyhow::Result<audit::sink::AuditSink> {
    audit_sink_with(settings, metrics, false, telemetry)
}

/// [`audit_sink_for`]; with `protocol_on_stdout`, a `stdout` sink writes to stderr instead
/// (stdio mode, where standard output carries the MCP protocol).
pub fn audit_sink_with(
    settings: &Settings,
    metrics: &metrics::Metrics,
    protocol_on_stdout: bool,
    telemetry: Option<&Arc<telemetry::Telemetry>>,
) -> anyhow::Result<audit::sink::AuditSink> {
    use audit::sink::{syslog, AuditSink, Target};
    use settings::AuditSinkKind;
    let a = &settings.audit;
    let mut targets = Vec::new();
    for kind in &a.sink.0 {
        targets.push(match kind {
            AuditSinkKind::Off => Target::Discard,
            AuditSinkKind::Stdout if protocol_on_stdout => Target::Stderr,
            AuditSinkKind::Stdout => Target::Stdout,
            AuditSinkKind::File => Target::File {
                path: a
                    .file
                    .clone()
                    .context("audit.file is required with the file sink")?,
                max_file_bytes: a.max_file_size.as_u64(),
                keep_files: a.keep_files,
                rotate_every: a.rotate_every,
            },
            AuditSinkKind::Otlp => Target::Records(
                telemetry
                    .context("the otlp audit sink needs telemetry.endpoint")?
                    .clone(),
            ),
            AuditSinkKind::Syslog => {
                let s = a
                    .syslog
                    .as_ref()
                    .context("audit.syslog is required with the syslog sink")?;
                Target::Syslog(syslog::SyslogConfig {
                    address: s.address.parse().context("audit.syslog.address")?,
                    transport: s.transport,
                    facility: syslog::facility_code(&s.facility)
                        .context("audit.syslog.facility")?,
                    app_name: syslog::header_field(&s.app_name, 48),
                    hostname: s
                        .hostname
                        .as_deref()
                        .map_or_else(syslog::system_hostname, |h| syslog::header_field(h, 255)),
                    max_message: usize::try_from(s.max_message.as_u64()).unwrap_or(usize::MAX),
                })
            }
        });
    }
    let counters = audit::sink::WriterCounters {
        rotations: Some(metrics.audit_rotations.clone()),
        write_errors: Some(metrics.audit_write_errors.clone()),
        failures: Some(metrics.audit_delivery_failures.clone()),
    };
    AuditSink::start_all(
        targets,
        a.queue,
        metrics.audit_events_dropped.clone(),
        counters,
    )
    .context("starting the audit writers")
}

/// Builds the enforcement engine for `settings`, writing audit events to `sink`.
pub fn enforcer_for(
    settings: &Settings,
    metrics: &metrics::Metrics,
    sink: audit::sink::AuditSink,
) -> anyhow::Result<Arc<enforce::Enforcer>> {
    let salt = match &settings.audit.salt {
        Some(s) => s.expose().as_bytes().to_vec(),
        None => audit::random_salt(),
    };
    let auditor = Arc::new(
        audit::Auditor::limited(
            sink,
            salt,
            settings.audit.max_events_per_minute,
            Some(metrics.audit_events_suppressed.clone()),
        )
        .context("compiling the audit scrubber")?,
    );
    let recorder = enforce::record::Recorder {
        metrics: metrics.clone(),
        auditor,
    };
    let policies = Arc::new(arc_swap::ArcSwap::from(settings.policies.clone()));
    let limits = enforce::EnforcerLimits {
        max_sessions: settings.limits.max_sessions,
        max_pending: settings.limits.max_pending,
        max_elicitations_per_response: settings.limits.max_elicitations_per_response,
        session_ttl: settings.timeouts.session_idle,
    };
    let store = state::store_for(settings)?;
    recorder.store_health(true, None);
    Ok(Arc::new(enforce::Enforcer::new(
        policies, store, limits, recorder,
    )))
}

/// Binds the listeners, starts serving and returns once both accept connections.
pub async fn start(settings: Settings) -> anyhow::Result<Running> {
    start_with(settings, Options::default()).await
}

/// [`start`], with options.
pub async fn start_with(settings: Settings, options: Options) -> anyhow::Result<Running> {
    let metrics = metrics::Metrics::new();
    let serving_cert = match &settings.tls {
        Some(t) => Some(
            tls::ServingCert::load(&t.cert_file, &t.key_file).context("loading TLS certificate")?,
        ),
        None => None,
    };
    let tls = match &serving_cert {
        Some(cert) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
            tls::server_config(cert.clone())?,
        ))),
        None => None,
    };
    for warning in &settings.warnings {
        tracing::warn!(warning = %warning, "Configuration warning.");
    }
    let telemetry = telemetry::Telemetry::start(
        &settings.telemetry,
        settings.audit.sink.contains(settings::AuditSinkKind::Otlp),
        &metrics.telemetry_exports,
    )
    .context("starting OpenTelemetry export")?;
    let sink = match options.audit_sink {
        Some(sink) => sink,
        None => audit_sink_for(&settings, &metrics, telemetry.as_ref())?,
    };
    let enforcer = enforcer_for(&settings, &metrics, sink.clone())?;
    let listeners = proxy::server::bind_workers(settings.listen, settings.workers)?;
    let admin_listener = proxy::server::bind(settings.admin_listen).await?;
    let addr = listeners[0].local_addr()?;
    let admin_addr = admin_listener.local_addr()?;

    let (stop, stopping) = watch::channel(false);
    let loaded_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    metrics.policy_last_reload_success.set(1);
    metrics.policy_last_reload_timestamp.set(loaded_at);
    metrics::show_route_policies(
        &metrics.route_policy,
        settings.routes.iter().map(|r| r.name.as_str()),
        &settings.policies,
    );
    enforcer.recorder.policy(true, None);
    let live = Arc::new(live::Live::new(
        settings.clone(),
        enforcer.policies().clone(),
        serving_cert,
        options.log_level,
    ));
    spawn_audit_reopener(sink, Shutdown::new(stopping.clone()))?;
    tokio::spawn(sweep_state(
        enforcer.clone(),
        Shutdown::new(stopping.clone()),
    ));
    if enforcer.store().backend() != "memory" {
        tokio::spawn(check_store(
            enforcer.clone(),
            Shutdown::new(stopping.clone()),
        ));
    }

    let admin = Arc::new(admin::AdminState {
        metrics: metrics.clone(),
        ready: false.into(),
    });
    let identity =
        Arc::new(identity::Identity::new(&settings.identity).context("configuring identity")?);
    if let Some(every) = identity.refresh_every() {
        if let Err(e) = identity.refresh().await {
            // Fail closed: until keys arrive, every token is refused (401).
            tracing::error!(error = %e, "Could not load the JWKS; tokens are refused until it loads.");
        }
        tokio::spawn(refresh_identity(
            identity.clone(),
            every,
            Shutdown::new(stopping.clone()),
        ));
    }
    let gateway_for = {
        let (metrics, enforcer, identity) = (metrics.clone(), enforcer.clone(), identity.clone());
        let (live, telemetry) = (live.clone(), telemetry.clone());
        let budget = proxy::read::BufferBudget::with_gauge(
            settings.limits.request_buffer_budget.as_u64(),
            Some(metrics.buffered_bytes.clone()),
        );
        move || {
            let gateway = proxy::Gateway::new(
                settings.clone(),
                metrics.clone(),
                enforcer.clone(),
                budget.clone(),
                identity.clone(),
                telemetry.clone(),
            )?;
            live.register(gateway.clone());
            Ok(gateway)
        }
    };
    let workers = proxy::server::spawn_workers(
        listeners,
        tls,
        gateway_for,
        &Shutdown::new(stopping.clone()),
    )?;
    if let Some(path) = options.config_path {
        spawn_reloader(
            path,
            live,
            enforcer.recorder.clone(),
            Shutdown::new(stopping.clone()),
        )?;
    }
    let server = tokio::spawn(async move {
        for worker in workers {
            let _ = worker.await;
        }
    });
    drop(stopping);
    let (admin_stop, admin_stopping) = watch::channel(false);
    let admin_task = tokio::spawn(admin::serve(
        admin_listener,
        admin.clone(),
        Shutdown::new(admin_stopping),
    ));
    admin.ready.store(true, Ordering::Release);
    tracing::info!(%addr, %admin_addr, "elicitgate listening.");
    Ok(Running {
        addr,
        admin_addr,
        admin,
        telemetry,
        stop,
        admin_stop,
        server,
        admin_task,
    })
}

/// Sweeps enforcement state every few seconds until `shutdown`: expired entries dropped (their
/// servers told), audit suppression summaries written.
pub async fn sweep_state(enforcer: Arc<enforce::Enforcer>, mut shutdown: Shutdown) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = tick.tick() => enforcer.sweep().await,
            () = shutdown.wait() => return,
        }
    }
}

/// Refreshes the JWKS every `every`, and early when a token names an unknown key, until
/// `shutdown`. A failed refresh keeps the keys it had.
async fn refresh_identity(
    identity: Arc<identity::Identity>,
    every: std::time::Duration,
    mut shutdown: Shutdown,
) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = identity.early_refresh_wanted() => {}
            () = shutdown.wait() => return,
        }
        if let Err(e) = identity.refresh().await {
            tracing::warn!(error = %e, "JWKS refresh failed; keeping the keys loaded before.");
        }
    }
}

/// Checks a shared state store every two seconds until `shutdown`, so its health gauge tells
/// the truth while no elicitation needs it (and turns healthy again by itself).
pub async fn check_store(enforcer: Arc<enforce::Enforcer>, mut shutdown: Shutdown) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let ok = enforcer.store().ping().await.is_ok();
                enforcer.recorder.store_health(ok, (!ok).then_some("ping"));
            }
            () = shutdown.wait() => return,
        }
    }
}

/// Re-opens the audit sinks on SIGHUP until `shutdown` (the file sink opens its path again:
/// logrotate's `postrotate kill -HUP`). The configuration reloader listens to SIGHUP too.
fn spawn_audit_reopener(
    sink: audit::sink::AuditSink,
    mut shutdown: Shutdown,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    if !sink.is_enabled() {
        return Ok(());
    }
    let mut hup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                got = hup.recv() => match got {
                    Some(()) => sink.reopen(),
                    None => return,
                },
                () = shutdown.wait() => return,
            }
        }
    });
    Ok(())
}

/// Reloads the configuration from `path` on SIGHUP and when it, or a file it names, changes.
fn spawn_reloader(
    path: std::path::PathBuf,
    live: Arc<live::Live>,
    recorder: enforce::record::Recorder,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let mut files = vec![path];
    files.extend(live.watched_files());
    reload::spawn(
        files,
        move |p: &std::path::Path| live.reload(p),
        move |trigger, outcome| {
            let m = &recorder.metrics;
            match outcome {
                reload::Outcome::Unchanged => {}
                // The catch-up attempt at start found the files as they were loaded.
                reload::Outcome::Applied(report)
                    if trigger == reload::Trigger::Start
                        && report.changed.is_empty()
                        && report.restart_required.is_empty() => {}
                reload::Outcome::Applied(report) => {
                    tracing::info!(trigger = trigger.label(), changed = %report.changed.join(", "), "Configuration reloaded.");
                    // The same warnings as at start: a reload that turns on `dry_run` or the
                    // kill switch says so.
                    for warning in &report.warnings {
                        tracing::warn!(warning = %warning, "Configuration warning.");
                    }
                    if let Some(policies) = &report.policies {
                        metrics::show_route_policies(
                            &m.route_policy,
                            report.routes.iter().map(String::as_str),
                            policies,
                        );
                    }
                    if !report.restart_required.is_empty() {
                        tracing::warn!(
                            settings = %report.restart_required.join(", "),
                            "These settings changed in the file but take effect only after a restart."
                        );
                    }
                    m.policy_reloads.with_label_values(&["success"]).inc();
                    m.policy_last_reload_success.set(1);
                    for part in &report.changed {
                        m.config_changes.with_label_values(&[part]).inc();
                    }
                    m.config_restart_required
                        .set(i64::from(!report.restart_required.is_empty()));
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs_f64())
                        .unwrap_or_default();
                    m.policy_last_reload_timestamp.set(now);
                    recorder.policy(true, Some(report.summary()));
                }
                reload::Outcome::Failed(errors) => {
                    for e in &errors.0 {
                        tracing::error!(error = %e, "Configuration reload failed; keeping the running configuration.");
                    }
                    m.policy_reloads.with_label_values(&["failure"]).inc();
                    m.policy_last_reload_success.set(0);
                    recorder.policy(false, Some(format!("{} error(s)", errors.0.len())));
                }
            }
        },
        shutdown,
    )?;
    Ok(())
}
