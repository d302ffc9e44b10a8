//! Where audit lines go: one or several sinks (stdout, a rotating file, syslog, a record
//! exporter such as OTLP logs), each behind its own bounded queue and writer thread.
//!
//! Owns the guarantee that auditing never blocks the proxy: [`AuditSink::write`] hands the
//! line to every sink's writer thread through a bounded channel and returns at once; when a
//! sink's queue is full the line is dropped *for that sink* and counted, so a slow sink never
//! stalls another. Each writer thread owns one [`Output`] (adding a sink kind is a new
//! `Output` and a new [`Target`] variant), writes bursts and flushes after each, and on
//! [`AuditSink::reopen`] (SIGHUP) lets its output close and re-open what it writes to.
//!
//! Failures are counted per sink in `audit_delivery_failures_total{sink,reason}`; the reasons
//! are a closed set ([`reason`]). Error logs never contain the audit line itself.

pub mod file;
pub mod syslog;

use prometheus::{IntCounter, IntCounterVec};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

/// Why a sink did not deliver an event: the `reason` label of
/// `audit_delivery_failures_total`.
pub mod reason {
    /// The sink's queue was full (its writer could not keep up).
    pub const QUEUE_FULL: &str = "queue_full";
    /// Writing failed (disk full, I/O error, a send the network refused).
    pub const WRITE_ERROR: &str = "write_error";
    /// A network sink had no connection (collector down, reconnecting with backoff).
    pub const DISCONNECTED: &str = "disconnected";
    /// The framed message was longer than the sink accepts (`audit.syslog.max_message`).
    pub const TOO_LARGE: &str = "too_large";
}

/// Where one writer thread puts lines.
#[derive(Debug, Clone)]
pub enum Target {
    Stdout,
    /// Standard error: for stdio mode, where standard output carries the protocol.
    Stderr,
    File {
        path: PathBuf,
        max_file_bytes: u64,
        keep_files: u32,
        /// Also rotate when the wall clock enters a new period of this length (aligned to
        /// the Unix epoch, so `24h` rotates at 00:00 UTC).
        rotate_every: Option<Duration>,
    },
    Syslog(syslog::SyslogConfig),
    /// An exporter of structured records (OTLP logs), given each line and its event name.
    Records(Arc<dyn RecordSink>),
    /// Lines are discarded (auditing switched off).
    Discard,
}

/// Takes audit lines as records (the OTLP log exporter); implemented outside this layer.
pub trait RecordSink: Send + Sync + std::fmt::Debug {
    /// Queues `line` (an audit event named `event`); false when it could not be queued.
    fn record(&self, event: &'static str, line: String) -> bool;
    /// The `sink` label of its metrics.
    fn label(&self) -> &'static str;
}

impl Target {
    /// The sink's name: the bounded `sink` label of its metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Target::Stdout | Target::Stderr => "stdout",
            Target::File { .. } => "file",
            Target::Syslog(_) => "syslog",
            Target::Records(sink) => sink.label(),
            Target::Discard => "off",
        }
    }
}

/// What the writer threads count (each optional).
#[derive(Clone, Default)]
pub struct WriterCounters {
    pub rotations: Option<IntCounter>,
    /// Lines (or flushes) of the stdout or file sink that failed: the lines are lost,
    /// proxying goes on.
    pub write_errors: Option<IntCounter>,
    /// Events a sink did not deliver, by `sink` and `reason`.
    pub failures: Option<IntCounterVec>,
}

/// A sink's failure to deliver `events` events, for `reason`; `error` is logged (never the
/// line) when present. Outputs that log their own state changes (a lost connection) leave it
/// out, so a down collector does not log once per event.
#[derive(Debug)]
pub struct Failure {
    pub reason: &'static str,
    pub events: u64,
    pub error: Option<io::Error>,
}

impl Failure {
    pub fn io(error: io::Error) -> Self {
        Self {
            reason: reason::WRITE_ERROR,
            events: 1,
            error: Some(error),
        }
    }

    pub fn quiet(reason: &'static str, events: u64) -> Self {
        Self {
            reason,
            events,
            error: None,
        }
    }
}

/// What a writer thread drives. Implementations own their file or socket; they are called
/// from one thread only and may block (bounded by their own timeouts), never the proxy.
pub trait Output: Send + 'static {
    /// Writes (or buffers) one line, without its newline.
    fn write_line(&mut self, line: &str) -> Result<(), Failure>;
    /// Ends a burst: pushes out what was buffered.
    fn flush(&mut self) -> Result<(), Failure>;
    /// Closes and re-opens the destination (SIGHUP; logrotate moved the file away).
    fn reopen(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Msg {
    Line(Arc<str>),
    /// Wakes the writer to look at its reopen flag.
    Wake,
}

#[derive(Clone)]
enum Queue {
    Writer {
        tx: SyncSender<Msg>,
        reopen: Arc<AtomicBool>,
    },
    /// Tests and the demo read lines back.
    Memory(SyncSender<String>),
}

#[derive(Clone)]
struct Lane {
    label: &'static str,
    queue: Queue,
}

/// The non-blocking front of the writer threads.
#[derive(Clone)]
pub struct AuditSink {
    lanes: Arc<[Lane]>,
    dropped: IntCounter,
    failures: Option<IntCounterVec>,
}

impl AuditSink {
    /// Starts the writer thread for `target` with a queue of `capacity` lines.
    pub fn start(target: Target, capacity: usize, dropped: IntCounter) -> io::Result<Self> {
        Self::start_counted(target, capacity, dropped, WriterCounters::default())
    }

    /// [`AuditSink::start`], counting rotations and failed writes in `counters`.
    pub fn start_counted(
        target: Target,
        capacity: usize,
        dropped: IntCounter,
        counters: WriterCounters,
    ) -> io::Result<Self> {
        Self::start_all(vec![target], capacity, dropped, counters)
    }

    /// One writer thread, with its own queue of `capacity` lines, per target; every line goes
    /// to each. `dropped` counts lines any queue could not take (once per sink).
    pub fn start_all(
        targets: Vec<Target>,
        capacity: usize,
        dropped: IntCounter,
        counters: WriterCounters,
    ) -> io::Result<Self> {
        let mut lanes = Vec::new();
        for target in targets {
            if let Target::Discard = target {
                continue;
            }
            let label = target.label();
            let output = open(target, &counters)?;
            let (tx, rx) = sync_channel(capacity.max(1));
            let reopen = Arc::new(AtomicBool::new(false));
            let mut worker_counters = counters.clone();
            if label == "syslog" {
                // `audit_write_errors_total` is about the local file and stdout.
                worker_counters.write_errors = None;
            }
            let worker = Worker {
                label,
                reopen: reopen.clone(),
                counters: worker_counters,
            };
            std::thread::Builder::new()
                .name(format!("elicitgate-audit-{label}"))
                .spawn(move || worker.run(rx, output))?;
            lanes.push(Lane {
                label,
                queue: Queue::Writer { tx, reopen },
            });
        }
        Ok(Self {
            lanes: lanes.into(),
            dropped,
            failures: counters.failures,
        })
    }

    /// A sink that keeps lines in memory (tests and the demo read them back).
    pub fn memory(dropped: IntCounter) -> (Self, Receiver<String>) {
        let (tx, rx) = sync_channel(4096);
        let lane = Lane {
            label: "memory",
            queue: Queue::Memory(tx),
        };
        (
            Self {
                lanes: vec![lane].into(),
                dropped,
                failures: None,
            },
            rx,
        )
    }

    /// False when auditing is off (lines would be discarded).
    pub fn is_enabled(&self) -> bool {
        !self.lanes.is_empty()
    }

    /// Queues one line (without its newline) for every sink. Never blocks.
    pub fn write(&self, line: String) {
        let mut shared: Option<Arc<str>> = None;
        for lane in self.lanes.iter() {
            let sent = match &lane.queue {
                Queue::Writer { tx, .. } => {
                    let line = shared.get_or_insert_with(|| Arc::from(line.as_str()));
                    tx.try_send(Msg::Line(line.clone())).is_ok()
                }
                Queue::Memory(tx) => tx.try_send(line.clone()).is_ok(),
            };
            if !sent {
                self.dropped.inc();
                if let Some(f) = &self.failures {
                    f.with_label_values(&[lane.label, reason::QUEUE_FULL]).inc();
                }
            }
        }
    }

    /// Asks every sink to close and re-open its destination (the file sink re-opens its path:
    /// after logrotate renamed the file, new lines go to a new file at the original path).
    /// Returns at once; lines queued before are written to the old file.
    pub fn reopen(&self) {
        for lane in self.lanes.iter() {
            if let Queue::Writer { tx, reopen } = &lane.queue {
                reopen.store(true, Ordering::Release);
                // A full queue means the writer is awake and will see the flag.
                let _ = tx.try_send(Msg::Wake);
            }
        }
    }
}

fn open(target: Target, counters: &WriterCounters) -> io::Result<Box<dyn Output>> {
    Ok(match target {
        Target::Stdout | Target::Discard => Box::new(StdStream(Box::new(io::stdout()))),
        Target::Stderr => Box::new(StdStream(Box::new(io::stderr()))),
        Target::File {
            path,
            max_file_bytes,
            keep_files,
            rotate_every,
        } => Box::new(file::FileOutput::open(
            file::Rotation {
                path,
                max_file_bytes,
                keep_files,
                rotate_every,
            },
            counters.rotations.clone(),
            Box::new(std::time::SystemTime::now),
        )?),
        Target::Syslog(config) => Box::new(syslog::SyslogOutput::new(config)),
        Target::Records(sink) => Box::new(Records(sink)),
    })
}

/// Lines handed to a [`RecordSink`].
struct Records(Arc<dyn RecordSink>);

impl Output for Records {
    fn write_line(&mut self, line: &str) -> Result<(), Failure> {
        if self
            .0
            .record(crate::audit::event_name_of(line), line.to_owned())
        {
            Ok(())
        } else {
            Err(Failure::quiet(reason::WRITE_ERROR, 1))
        }
    }

    fn flush(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

/// Standard output or error.
struct StdStream(Box<dyn Write + Send>);

impl Output for StdStream {
    fn write_line(&mut self, line: &str) -> Result<(), Failure> {
        self.0
            .write_all(line.as_bytes())
            .and_then(|()| self.0.write_all(b"\n"))
            .map_err(Failure::io)
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.0.flush().map_err(Failure::io)
    }
}

struct Worker {
    label: &'static str,
    reopen: Arc<AtomicBool>,
    counters: WriterCounters,
}

impl Worker {
    fn run(self, rx: Receiver<Msg>, mut output: Box<dyn Output>) {
        while let Ok(msg) = rx.recv() {
            self.reopen_if_asked(&mut *output);
            let mut next = Some(msg);
            // Write what queued up meanwhile, then flush once.
            while let Some(msg) = next.take() {
                if let Msg::Line(line) = msg {
                    if let Err(f) = output.write_line(&line) {
                        self.count(f);
                    }
                }
                next = rx.try_recv().ok();
            }
            if let Err(f) = output.flush() {
                self.count(f);
            }
        }
        let _ = output.flush();
    }

    fn reopen_if_asked(&self, output: &mut dyn Output) {
        if self.reopen.swap(false, Ordering::AcqRel) {
            match output.reopen() {
                Ok(()) => tracing::info!(sink = self.label, "Audit sink re-opened."),
                Err(e) => {
                    tracing::error!(sink = self.label, error = %e, "Audit sink could not re-open.")
                }
            }
        }
    }

    fn count(&self, failure: Failure) {
        if let Some(f) = &self.counters.failures {
            f.with_label_values(&[self.label, failure.reason])
                .inc_by(failure.events);
        }
        if let Some(e) = failure.error {
            if failure.reason == reason::WRITE_ERROR {
                if let Some(c) = &self.counters.write_errors {
                    c.inc();
                }
            }
            // Logged without the line itself; counted (an alert rule watches it).
            tracing::error!(sink = self.label, reason = failure.reason, error = %e, "Audit write failed.");
        }
    }
}

#[cfg(test)]
mod tests;
