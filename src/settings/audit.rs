//! `audit:` settings: which sinks receive audit events (one or several), the file sink's
//! rotation, the syslog destination, queueing, rate limit and hashing salt. Validated with
//! the rest of the file, every problem reported at once.

use super::{check_writable, Secret};
use crate::audit::sink::syslog::{facility_code, Transport, FACILITIES};
use bytesize::ByteSize;
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;
use std::time::Duration;

/// One kind of audit sink.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuditSinkKind {
    #[default]
    Stdout,
    File,
    Syslog,
    /// OTLP log records to `telemetry.endpoint`.
    Otlp,
    Off,
}

impl AuditSinkKind {
    /// The name as written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::File => "file",
            Self::Syslog => "syslog",
            Self::Otlp => "otlp",
            Self::Off => "off",
        }
    }

    fn parse(name: &str) -> Result<Self, String> {
        match name.trim() {
            "stdout" => Ok(Self::Stdout),
            "file" => Ok(Self::File),
            "syslog" => Ok(Self::Syslog),
            "otlp" => Ok(Self::Otlp),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "unknown sink `{other}` (expected stdout, file, syslog, otlp or off)"
            )),
        }
    }
}

/// `audit.sink`: one sink (`file`), a list (`[file, syslog]`), or a comma-separated string
/// (`file,syslog`, handy in an environment override). Every event goes to each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSinks(pub Vec<AuditSinkKind>);

impl AuditSinks {
    pub fn contains(&self, kind: AuditSinkKind) -> bool {
        self.0.contains(&kind)
    }
}

impl Default for AuditSinks {
    fn default() -> Self {
        Self(vec![AuditSinkKind::Stdout])
    }
}

impl<'de> Deserialize<'de> for AuditSinks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(String),
            Many(Vec<String>),
        }
        let names = match Raw::deserialize(d)? {
            Raw::One(s) => s.split(',').map(str::to_owned).collect(),
            Raw::Many(v) => v,
        };
        names
            .iter()
            .map(|n| AuditSinkKind::parse(n))
            .collect::<Result<Vec<_>, _>>()
            .map(AuditSinks)
            .map_err(serde::de::Error::custom)
    }
}

/// `audit.syslog`: an RFC 5424 collector.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyslogSettings {
    /// `IP:port` of the collector (no DNS lookups on the audit path).
    pub address: String,
    /// `udp` (default) or `tcp` (octet-counted framing, reconnecting).
    pub transport: Transport,
    /// A facility name (`local0` default, `user`, `auth`, `audit`, …).
    pub facility: String,
    /// APP-NAME of every message.
    pub app_name: String,
    /// HOSTNAME of every message; absent: the system's host name.
    pub hostname: Option<String>,
    /// Longest message; a longer one is dropped and counted (never truncated or split).
    pub max_message: ByteSize,
}

impl Default for SyslogSettings {
    fn default() -> Self {
        Self {
            address: String::new(),
            transport: Transport::Udp,
            facility: "local0".into(),
            app_name: "elicitgate".into(),
            hostname: None,
            max_message: ByteSize::kib(8),
        }
    }
}

/// The smallest message every syslog receiver must accept (RFC 5426 §3.2).
const MIN_MESSAGE: u64 = 480;
/// The largest UDP payload over IPv4.
const MAX_UDP_MESSAGE: u64 = 65_507;
const MAX_TCP_MESSAGE: u64 = 1024 * 1024;

/// Audit event output.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSettings {
    /// `stdout` (default), `file`, `syslog`, `otlp` or `off`; or a list of them.
    pub sink: AuditSinks,
    /// The JSON Lines file, with the `file` sink.
    pub file: Option<PathBuf>,
    /// Rotate the file when it would grow past this size.
    pub max_file_size: ByteSize,
    /// Also rotate the file when a new period of this length begins (`24h`: daily at 00:00
    /// UTC); absent: size only.
    #[serde(with = "humantime_serde")]
    pub rotate_every: Option<Duration>,
    /// Rotated files kept (`audit.jsonl.1` … `.N`).
    pub keep_files: u32,
    /// The syslog collector, with the `syslog` sink.
    pub syslog: Option<SyslogSettings>,
    /// Events queued for each sink's writer; beyond this they are dropped and counted.
    pub queue: usize,
    /// Events written per scope (legacy session, else principal) and minute; past it they
    /// are counted and summarised in one `audit.suppressed` event (0: no limit).
    pub max_events_per_minute: u32,
    /// Secret key for hashing session, principal and elicitation ids; generated at start when
    /// absent (then hashes do not correlate across restarts). Prefer the environment:
    /// `ELICITGATE__AUDIT__SALT`.
    pub salt: Option<Secret>,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            sink: AuditSinks::default(),
            file: None,
            max_file_size: ByteSize::mib(100),
            rotate_every: None,
            keep_files: 5,
            syslog: None,
            queue: 10_000,
            max_events_per_minute: 600,
            salt: None,
        }
    }
}

impl AuditSettings {
    /// Every problem with the audit settings.
    pub(super) fn validate(&self, errors: &mut Vec<String>) {
        let sinks = &self.sink.0;
        if sinks.is_empty() {
            errors.push("audit.sink: empty; use `off` to switch auditing off".into());
        }
        for (i, kind) in sinks.iter().enumerate() {
            if sinks[..i].contains(kind) {
                errors.push(format!("audit.sink: `{}` listed twice", kind.name()));
            }
        }
        if sinks.len() > 1 && self.sink.contains(AuditSinkKind::Off) {
            errors.push("audit.sink: `off` cannot be combined with other sinks".into());
        }
        if self.sink.contains(AuditSinkKind::File) {
            match &self.file {
                None => errors.push("audit.file: required with the `file` sink".into()),
                Some(file) => check_writable(file, "audit.file", errors),
            }
        }
        if self
            .rotate_every
            .is_some_and(|d| d < Duration::from_secs(1))
        {
            errors.push("audit.rotate_every: must be at least 1s when set".into());
        }
        if self.queue == 0 {
            errors.push("audit.queue: must be at least 1".into());
        }
        if self.max_file_size.as_u64() < MIN_FILE_SIZE {
            errors.push(format!(
                "audit.max_file_size: at least {MIN_FILE_SIZE} bytes (one event fits)"
            ));
        }
        if self.keep_files > MAX_KEEP_FILES {
            errors.push(format!("audit.keep_files: at most {MAX_KEEP_FILES}"));
        }
        // The salt keys the hashes of sessions and principals in every event: a short one
        // can be guessed, and then every hash reversed by trying the likely values.
        if let Some(salt) = &self.salt {
            if salt.expose().len() < MIN_SALT_BYTES {
                errors.push(format!(
                    "audit.salt: at least {MIN_SALT_BYTES} bytes (e.g. `openssl rand -hex 16`), or leave it out for a random salt per process"
                ));
            }
        }
        match (&self.syslog, self.sink.contains(AuditSinkKind::Syslog)) {
            (None, true) => errors
                .push("audit.syslog: required with the `syslog` sink (at least `address`)".into()),
            (Some(s), _) => s.validate(errors),
            (None, false) => {}
        }
    }

    /// Settings that have no effect as configured.
    pub(super) fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.syslog.is_some() && !self.sink.contains(AuditSinkKind::Syslog) {
            out.push("audit.syslog: set, but `syslog` is not in audit.sink".into());
        }
        if self.rotate_every.is_some() && !self.sink.contains(AuditSinkKind::File) {
            out.push("audit.rotate_every: set, but `file` is not in audit.sink".into());
        }
        out
    }
}

/// Shortest `audit.salt` accepted.
pub const MIN_SALT_BYTES: usize = 16;

/// A rotated file smaller than one audit event would rotate on every event.
const MIN_FILE_SIZE: u64 = 64 * 1024;

/// Rotated files are renamed one by one on every rotation: more than this is a retention
/// policy for logrotate or the SIEM, not for the gateway.
const MAX_KEEP_FILES: u32 = 1000;

impl SyslogSettings {
    fn validate(&self, errors: &mut Vec<String>) {
        if self.address.is_empty() {
            errors.push("audit.syslog.address: required (`IP:port`)".into());
        } else if let Err(e) = self.address.parse::<std::net::SocketAddr>() {
            errors.push(format!(
                "audit.syslog.address: `{}` is not an `IP:port` address: {e}",
                self.address
            ));
        }
        if facility_code(&self.facility).is_none() {
            let names: Vec<&str> = FACILITIES.iter().map(|(n, _)| *n).collect();
            errors.push(format!(
                "audit.syslog.facility: unknown `{}` (one of {})",
                self.facility,
                names.join(", ")
            ));
        }
        field("audit.syslog.app_name", &self.app_name, 48, errors);
        if let Some(host) = &self.hostname {
            field("audit.syslog.hostname", host, 255, errors);
        }
        let max = match self.transport {
            Transport::Udp => MAX_UDP_MESSAGE,
            Transport::Tcp => MAX_TCP_MESSAGE,
        };
        let size = self.max_message.as_u64();
        if !(MIN_MESSAGE..=max).contains(&size) {
            let transport = match self.transport {
                Transport::Udp => "udp",
                Transport::Tcp => "tcp",
            };
            errors.push(format!(
                "audit.syslog.max_message: must be between {MIN_MESSAGE} and {max} bytes over {transport}"
            ));
        }
    }
}

/// An RFC 5424 header field: 1 to `max` printable US-ASCII characters, no spaces.
fn field(what: &str, value: &str, max: usize, errors: &mut Vec<String>) {
    if value.is_empty() || value.len() > max || !value.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(format!(
            "{what}: `{value}` must be 1-{max} printable ASCII characters without spaces"
        ));
    }
}
