//! What a configuration reload changes in a running gateway, and what it cannot.
//!
//! Owns "prepare everything, then swap everything": a new file is read and validated
//! ([`Settings::load`]), every part that can change live is built off to the side (each
//! worker's route table with its upstream clients and trust roots, the serving certificate,
//! the log filter), and only when all of them built is any installed. Live: routes, policies,
//! upstream TLS roots, the serving certificate and key, `log.level`. Everything else (listen
//! addresses, workers, TLS on or off, limits, timeouts, audit, state, identity, log format) is
//! compared with what the process started with (so are telemetry and `log.access`), and named in the report as needing a restart,
//! never ignored silently.

use crate::proxy::{Gateway, RouteTable};
use crate::settings::{ConfigErrors, Settings};
use crate::tls::ServingCert;
use arc_swap::ArcSwap;
use elicitgate_core::policy::PolicySet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Sets the process's log filter (`log.level`); an error names what is wrong with it.
pub type SetLogLevel = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// What one reload did.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Parts now running with the new values: `routes`, `policies`, `upstream_tls`,
    /// `serving_cert`, `log_level`.
    pub changed: Vec<&'static str>,
    /// Settings whose new values differ from the running ones and take effect only after a
    /// restart (`listen`, `workers`, `limits`, …).
    pub restart_required: Vec<&'static str>,
    /// The new file's warnings (a policy in `dry_run`, a kill switch on, …).
    pub warnings: Vec<String>,
    /// The routes now running, and their policies (`None` only in an empty report).
    pub routes: Vec<String>,
    pub policies: Option<Arc<PolicySet>>,
}

impl Report {
    /// One line for the audit event and the log: `changed: …; restart required: …`.
    pub fn summary(&self) -> String {
        let list = |v: &[&str]| {
            if v.is_empty() {
                "none".to_owned()
            } else {
                v.join(", ")
            }
        };
        let mut line = format!("changed: {}", list(&self.changed));
        if !self.restart_required.is_empty() {
            line.push_str(&format!(
                "; restart required: {}",
                list(&self.restart_required)
            ));
        }
        line
    }
}

/// Every part of a running gateway a reload can reach.
pub struct Live {
    policies: Arc<ArcSwap<PolicySet>>,
    /// Each worker's gateway (its own route table and upstream connections).
    gateways: Mutex<Vec<Arc<Gateway>>>,
    cert: Option<Arc<ServingCert>>,
    log_level: Option<SetLogLevel>,
    /// The settings the process started with; live parts updated as reloads apply them.
    running: Mutex<Settings>,
}

impl Live {
    pub fn new(
        started: Settings,
        policies: Arc<ArcSwap<PolicySet>>,
        cert: Option<Arc<ServingCert>>,
        log_level: Option<SetLogLevel>,
    ) -> Self {
        Self {
            policies,
            gateways: Mutex::new(Vec::new()),
            cert,
            log_level,
            running: Mutex::new(started),
        }
    }

    /// Adds a worker's gateway (as workers start).
    pub fn register(&self, gateway: Arc<Gateway>) {
        self.gateways
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(gateway);
    }

    /// Files a reload re-reads besides the configuration file: watched for changes.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(tls) = &running.tls {
            files.push(tls.cert_file.clone());
            files.push(tls.key_file.clone());
        }
        files.extend(running.routes.iter().filter_map(|r| r.ca_file.clone()));
        files
    }

    /// Loads `path` and applies it: all of it or nothing.
    pub fn reload(&self, path: &Path) -> Result<Report, ConfigErrors> {
        let new = Settings::load(path)?;
        self.apply(new)
    }

    /// Applies validated settings: all live parts or none.
    pub fn apply(&self, new: Settings) -> Result<Report, ConfigErrors> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let mut report = Report {
            restart_required: restart_required(&running, &new),
            ..Report::default()
        };
        let mut errors = Vec::new();
        if new.routes.is_empty() {
            errors.push("routes: a running gateway needs at least one route".to_owned());
        }

        // Prepare: nothing below changes what is served.
        let gateways = self
            .gateways
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut tables: Vec<RouteTable> = Vec::with_capacity(gateways.len());
        for gateway in &gateways {
            match gateway.prepare_routes(&new.routes) {
                Ok((table, changes)) => {
                    if changes.routes {
                        push_once(&mut report.changed, "routes");
                    }
                    if changes.upstream_tls {
                        push_once(&mut report.changed, "upstream_tls");
                    }
                    tables.push(table);
                }
                Err(e) => {
                    errors.push(format!("routes: {e:#}"));
                    break;
                }
            }
        }
        let cert = match (&self.cert, &new.tls) {
            (Some(_), Some(tls)) => {
                match crate::tls::certified_key(&tls.cert_file, &tls.key_file) {
                    Ok(key) => Some(key),
                    Err(e) => {
                        errors.push(format!("tls: {e:#}"));
                        None
                    }
                }
            }
            _ => None,
        };
        let level_changed = new.log.level != running.log.level;
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }

        // Install.
        if new.policy_source != running.policy_source {
            report.changed.push("policies");
        }
        self.policies.store(new.policies.clone());
        for (gateway, table) in gateways.iter().zip(tables) {
            gateway.install_routes(table);
        }
        if let (Some(serving), Some(key)) = (&self.cert, cert) {
            if serving.replace(key) {
                report.changed.push("serving_cert");
            }
        }
        if level_changed {
            match &self.log_level {
                Some(set) => match set(&new.log.level) {
                    Ok(()) => report.changed.push("log_level"),
                    Err(e) => tracing::warn!(error = %e, "log.level was not applied."),
                },
                None => push_once(&mut report.restart_required, "log.level"),
            }
        }
        report.warnings = new.warnings.clone();
        report.routes = new.routes.iter().map(|r| r.name.clone()).collect();
        report.policies = Some(new.policies.clone());
        running.routes = new.routes;
        running.policies = new.policies;
        running.policy_source = new.policy_source;
        if let (Some(now), Some(tls)) = (&mut running.tls, new.tls) {
            *now = tls;
        }
        if report.changed.contains(&"log_level") {
            running.log.level = new.log.level;
        }
        Ok(report)
    }
}

fn push_once(list: &mut Vec<&'static str>, part: &'static str) {
    if !list.contains(&part) {
        list.push(part);
    }
}

/// The settings that differ and cannot change without a restart.
fn restart_required(running: &Settings, new: &Settings) -> Vec<&'static str> {
    let mut parts = Vec::new();
    let mut check = |differs: bool, name: &'static str| {
        if differs {
            parts.push(name);
        }
    };
    check(running.listen != new.listen, "listen");
    check(running.admin_listen != new.admin_listen, "admin_listen");
    check(running.workers != new.workers, "workers");
    check(running.tls.is_some() != new.tls.is_some(), "tls");
    check(running.limits != new.limits, "limits");
    check(running.timeouts != new.timeouts, "timeouts");
    check(running.log.format != new.log.format, "log.format");
    check(running.audit != new.audit, "audit");
    check(running.state != new.state, "state");
    check(running.identity != new.identity, "identity");
    check(running.telemetry != new.telemetry, "telemetry");
    check(running.log.access != new.log.access, "log.access");
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(yaml: &str) -> Settings {
        Settings::from_yaml(yaml, Path::new(".")).unwrap()
    }

    const BASE: &str = "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n";

    #[test]
    fn settings_that_need_a_restart_are_named() {
        let a = settings(&format!(
            "{BASE}routes: [{{name: a, path: /a, upstream: 'http://127.0.0.1:1/'}}]"
        ));
        let b = settings(
            "listen: 127.0.0.1:1\nadmin_listen: 127.0.0.1:0\nworkers: 2\nlimits: {max_connections: 5}\n\
             timeouts: {stream_idle: 1s}\nlog: {format: json}\nstate: {backend: memory}\n\
             routes: [{name: b, path: /b, upstream: 'http://127.0.0.1:1/'}]",
        );
        assert_eq!(
            restart_required(&a, &b),
            vec!["listen", "workers", "limits", "timeouts", "log.format"]
        );
        assert!(restart_required(&a, &a.clone()).is_empty());
    }

    #[test]
    fn summary_names_both_lists() {
        let r = Report {
            changed: vec!["routes", "policies"],
            restart_required: vec!["listen"],
            ..Report::default()
        };
        assert_eq!(
            r.summary(),
            "changed: routes, policies; restart required: listen"
        );
        assert_eq!(Report::default().summary(), "changed: none");
    }
}
