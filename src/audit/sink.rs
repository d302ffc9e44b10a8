//! Where audit lines go: stdout or a file with size-based rotation, behind a bounded queue.
//!
//! Owns the guarantee that auditing never blocks the proxy: [`AuditSink::write`] hands the
//! line to a dedicated writer thread through a bounded channel and returns at once; when the
//! queue is full the line is dropped and counted. The writer thread owns the file, rotates it
//! when it would grow past `max_file_bytes` (`audit.jsonl` → `audit.jsonl.1` → … up to
//! `keep_files`), and flushes after every burst.

use prometheus::IntCounter;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

/// Where the writer thread puts lines.
#[derive(Debug, Clone)]
pub enum Target {
    Stdout,
    /// Standard error: for stdio mode, where standard output carries the protocol.
    Stderr,
    File {
        path: PathBuf,
        max_file_bytes: u64,
        keep_files: u32,
    },
    /// Lines are discarded (auditing switched off).
    Discard,
}

/// What the writer thread counts (each optional).
#[derive(Clone, Default)]
pub struct WriterCounters {
    pub rotations: Option<IntCounter>,
    /// Lines (or flushes) that failed: the lines are lost, proxying goes on.
    pub write_errors: Option<IntCounter>,
}

/// The non-blocking front of the writer thread.
#[derive(Clone)]
pub struct AuditSink {
    tx: Option<SyncSender<String>>,
    dropped: IntCounter,
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
        if let Target::Discard = target {
            return Ok(Self { tx: None, dropped });
        }
        let output = Output::open(target)?;
        let (tx, rx) = sync_channel(capacity.max(1));
        std::thread::Builder::new()
            .name("elicitgate-audit".into())
            .spawn(move || write_loop(rx, output, counters))?;
        Ok(Self {
            tx: Some(tx),
            dropped,
        })
    }

    /// A sink that keeps lines in memory (tests and the demo read them back).
    pub fn memory(dropped: IntCounter) -> (Self, Receiver<String>) {
        let (tx, rx) = sync_channel(4096);
        (
            Self {
                tx: Some(tx),
                dropped,
            },
            rx,
        )
    }

    /// False when auditing is off (lines would be discarded).
    pub fn is_enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Queues one line (without its newline). Never blocks.
    pub fn write(&self, line: String) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => self.dropped.inc(),
        }
    }
}

enum Output {
    Stdout(io::Stdout),
    Stderr(io::Stderr),
    File {
        file: io::BufWriter<File>,
        path: PathBuf,
        written: u64,
        max_file_bytes: u64,
        keep_files: u32,
    },
}

impl Output {
    fn open(target: Target) -> io::Result<Self> {
        match target {
            Target::Stdout | Target::Discard => Ok(Output::Stdout(io::stdout())),
            Target::Stderr => Ok(Output::Stderr(io::stderr())),
            Target::File {
                path,
                max_file_bytes,
                keep_files,
            } => {
                let file = open_append(&path)?;
                let written = file.metadata().map(|m| m.len()).unwrap_or(0);
                Ok(Output::File {
                    file: io::BufWriter::new(file),
                    path,
                    written,
                    max_file_bytes: max_file_bytes.max(1024),
                    keep_files,
                })
            }
        }
    }

    fn write_line(&mut self, line: &str, counters: &WriterCounters) -> io::Result<()> {
        match self {
            Output::Stdout(out) => {
                let mut lock = out.lock();
                lock.write_all(line.as_bytes())?;
                lock.write_all(b"\n")
            }
            Output::Stderr(out) => {
                let mut lock = out.lock();
                lock.write_all(line.as_bytes())?;
                lock.write_all(b"\n")
            }
            Output::File {
                file,
                path,
                written,
                max_file_bytes,
                keep_files,
            } => {
                let len = line.len() as u64 + 1;
                if *written > 0 && *written + len > *max_file_bytes {
                    file.flush()?;
                    rotate(path, *keep_files)?;
                    if let Some(c) = &counters.rotations {
                        c.inc();
                    }
                    *file = io::BufWriter::new(open_append(path)?);
                    *written = 0;
                }
                file.write_all(line.as_bytes())?;
                file.write_all(b"\n")?;
                *written += len;
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(out) => out.flush(),
            Output::Stderr(out) => out.flush(),
            Output::File { file, .. } => file.flush(),
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// `path.(n-1)` → `path.n`, …, `path` → `path.1`; the oldest beyond `keep` is removed.
fn rotate(path: &Path, keep: u32) -> io::Result<()> {
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
    if keep == 0 {
        return std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let from = numbered(n);
        if from.exists() {
            std::fs::rename(&from, numbered(n + 1))?;
        }
    }
    std::fs::rename(path, numbered(1))
}

fn write_loop(rx: Receiver<String>, mut output: Output, counters: WriterCounters) {
    let count = |c: &Option<IntCounter>| {
        if let Some(c) = c {
            c.inc();
        }
    };
    while let Ok(line) = rx.recv() {
        let mut result = output.write_line(&line, &counters);
        // Drain what queued up meanwhile, then flush once.
        while let (Ok(()), Ok(line)) = (&result, rx.try_recv()) {
            result = output.write_line(&line, &counters);
        }
        if let Err(e) = result.and_then(|()| output.flush()) {
            // Logged without the line itself; counted (an alert rule watches it).
            count(&counters.write_errors);
            tracing::error!(error = %e, "Audit write failed.");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> IntCounter {
        IntCounter::new("dropped", "dropped").unwrap()
    }

    #[test]
    fn file_sink_rotates_by_size_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let sink = AuditSink::start(
            Target::File {
                path: path.clone(),
                max_file_bytes: 1024,
                keep_files: 2,
            },
            1000,
            counter(),
        )
        .unwrap();
        for i in 0..100 {
            sink.write(format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(50)));
        }
        drop(sink);
        // The writer thread exits once the channel closes; wait for its files.
        let mut lines = 0;
        for _ in 0..200 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            lines = ["", ".1", ".2"]
                .iter()
                .filter_map(|s| std::fs::read_to_string(format!("{}{s}", path.display())).ok())
                .map(|t| t.lines().count())
                .sum::<usize>();
            if path.with_extension("jsonl.2").exists() && lines > 0 {
                break;
            }
        }
        assert!(path.with_extension("jsonl.1").exists());
        assert!(path.with_extension("jsonl.2").exists());
        assert!(!path.with_extension("jsonl.3").exists());
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024);
        assert!(lines < 100, "old lines beyond keep_files were removed");
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_blocking() {
        let dropped = counter();
        let (sink, rx) = AuditSink::memory(dropped.clone());
        for i in 0..5000 {
            sink.write(format!("{i}"));
        }
        assert_eq!(dropped.get(), 5000 - 4096);
        assert_eq!(rx.try_iter().count(), 4096);
    }
}
