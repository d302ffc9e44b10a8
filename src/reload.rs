//! When to reload: on SIGHUP and when a watched file changes.
//!
//! Owns the triggers, never what a reload does: the caller's `apply` reads, validates and
//! installs (see [`crate::live`]), and its `observe` reports. Watched files are the
//! configuration file and the files it names that a reload re-reads (serving certificate and
//! key, upstream CA bundles). Each is watched through its *directory*, so an editor's or a
//! Kubernetes ConfigMap's or Secret's rename-replace (`..data` symlink swap) is seen like an
//! in-place write; bursts of events are debounced, and a file event that leaves every watched
//! file's bytes as they were at the last attempt is ignored (so restoring the running file
//! after a refused edit is applied: a rollback). SIGHUP always applies, even when nothing changed (a
//! certificate renewed outside the watched directories, new trust roots on the system).
//! Once the watcher is installed, one attempt runs at once (`start`): an edit that landed
//! between the first load and the watch is applied, not lost until the next edit.

use notify::{RecursiveMode, Watcher};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// How a reload attempt ended, handed to the caller's observer (metrics, audit, logs).
pub enum Outcome<'a, R, E> {
    Applied(&'a R),
    /// A file event left every watched file as it was: nothing was done.
    Unchanged,
    Failed(&'a E),
}

/// What triggered a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The catch-up attempt right after the watcher is installed.
    Start,
    Signal,
    FileChange,
}

impl Trigger {
    /// The log's word for it: `start`, `sighup` or `file_change`.
    pub fn label(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::Signal => "sighup",
            Trigger::FileChange => "file_change",
        }
    }
}

const DEBOUNCE: Duration = Duration::from_millis(250);

/// Watches `files` (the configuration file first) and calls `apply` with the configuration
/// file on SIGHUP and on changes, until `shutdown` fires.
///
/// The first attempt (`Trigger::Start`) runs as soon as the watcher is installed; its
/// `apply` finds nothing to change unless the files changed since they were first read.
/// `observe` is called once per attempt. Returns an error only when the signal handler could
/// not be installed (a file that cannot be watched is logged; SIGHUP still works).
pub fn spawn<R, E, A, O>(
    files: Vec<PathBuf>,
    apply: A,
    observe: O,
    mut shutdown: crate::shutdown::Shutdown,
) -> anyhow::Result<tokio::task::JoinHandle<()>>
where
    R: Send + 'static,
    E: Send + 'static,
    A: Fn(&Path) -> Result<R, E> + Send + 'static,
    O: Fn(Trigger, Outcome<'_, R, E>) + Send + 'static,
{
    let config = files
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no configuration file to watch"))?;
    let (tx, mut rx) = mpsc::channel::<Trigger>(16);
    let watcher = watch(&files, tx);
    if let Err(e) = &watcher {
        tracing::warn!(error = %e, path = %config.display(), "Cannot watch the configuration files; reload on SIGHUP only.");
    }
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut last = fingerprint(&files);
    Ok(tokio::spawn(async move {
        // Keep the watcher alive as long as the task.
        let _watcher = watcher;
        let mut catch_up = Some(Trigger::Start);
        loop {
            let trigger = match catch_up.take() {
                Some(t) => t,
                None => tokio::select! {
                    _ = hangup.recv() => Trigger::Signal,
                    Some(t) = rx.recv() => t,
                    () = shutdown.wait() => return,
                },
            };
            if trigger == Trigger::FileChange {
                // Let a burst of events (write, chmod, rename) settle before reading.
                tokio::time::sleep(DEBOUNCE).await;
                while rx.try_recv().is_ok() {}
            }
            let now = fingerprint(&files);
            if trigger == Trigger::FileChange && now == last {
                observe(trigger, Outcome::Unchanged);
                continue;
            }
            // The files as last *tried*, not as last applied: restoring the running file
            // after a refused edit is a change, applied like any other (a rollback).
            last = now;
            match apply(&config) {
                Ok(report) => observe(trigger, Outcome::Applied(&report)),
                Err(e) => observe(trigger, Outcome::Failed(&e)),
            }
        }
    }))
}

/// A digest of every watched file's bytes (a missing file counts as its own state).
fn fingerprint(files: &[PathBuf]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for file in files {
        match std::fs::read(file) {
            Ok(bytes) => {
                hash.update([1]);
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(&bytes);
            }
            Err(_) => hash.update([0]),
        }
    }
    hash.finalize().into()
}

fn watch(
    files: &[PathBuf],
    tx: mpsc::Sender<Trigger>,
) -> notify::Result<notify::RecommendedWatcher> {
    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .map(|p| {
            p.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf()
        })
        .collect();
    let names: BTreeSet<OsString> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_os_string()))
        .collect();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        // A watched file, or a Kubernetes ConfigMap's or Secret's `..data` swap (the files
        // are symlinks into it).
        let relevant = event.paths.iter().any(|p| {
            p.file_name()
                .is_some_and(|f| names.contains(f) || f.to_string_lossy().starts_with("..data"))
        });
        if relevant {
            let _ = tx.try_send(Trigger::FileChange);
        }
    })?;
    for dir in &dirs {
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// An edit made after the first load but before the watcher existed is not lost: the
    /// first attempt runs at once, and a later edit is still seen as a file change.
    #[tokio::test]
    async fn the_first_attempt_runs_when_the_watcher_is_installed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("elicitgate.yaml");
        std::fs::write(&file, "a").unwrap();
        let seen: Arc<Mutex<Vec<(Trigger, String)>>> = Arc::default();
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let record = seen.clone();
        let task = spawn(
            vec![file.clone()],
            |p: &Path| std::fs::read_to_string(p).map_err(|e| e.to_string()),
            move |trigger, outcome: Outcome<'_, String, String>| {
                if let Outcome::Applied(text) = outcome {
                    record.lock().unwrap().push((trigger, text.clone()));
                }
            },
            crate::shutdown::Shutdown::new(stopping),
        )
        .unwrap();
        let attempts = |n: usize| {
            let seen = seen.clone();
            async move {
                for _ in 0..400 {
                    if seen.lock().unwrap().len() >= n {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        };
        attempts(1).await;
        std::fs::write(&file, "b").unwrap();
        attempts(2).await;
        let _ = stop.send(true);
        task.await.unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], (Trigger::Start, "a".to_owned()));
        assert_eq!(seen.get(1), Some(&(Trigger::FileChange, "b".to_owned())));
    }
}
