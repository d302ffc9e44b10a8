//! Hot reload of the configuration file: on SIGHUP and on file change.
//!
//! Owns the "build, validate, then swap" rule: the file is loaded and compiled off to the side;
//! only a value that compiled replaces the running one (an [`ArcSwap`] that the request path
//! reads once per message). A failed reload keeps the old value, logs every error once, and is
//! counted. File changes are watched on the file's *directory*, so an editor's or a Kubernetes
//! ConfigMap's rename-replace (`..data` symlink swap) is seen like an in-place write; bursts of
//! events are debounced, and a change that leaves the file's bytes identical is ignored.

use arc_swap::ArcSwap;
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How a reload attempt ended, handed to the caller's observer (metrics, audit, logs).
pub enum Outcome<'a, E> {
    Loaded,
    Unchanged,
    Failed(&'a E),
}

/// What triggered a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Signal,
    FileChange,
}

const DEBOUNCE: Duration = Duration::from_millis(250);

/// Watches `path` and reloads `target` with `load` until `shutdown` fires.
///
/// `observe` is called once per attempt. Returns an error only when neither the signal nor the
/// file watch could be set up.
pub fn spawn<T, E, L, O>(
    path: PathBuf,
    target: Arc<ArcSwap<T>>,
    load: L,
    observe: O,
    mut shutdown: crate::Shutdown,
) -> anyhow::Result<tokio::task::JoinHandle<()>>
where
    T: Send + Sync + 'static,
    E: Send + 'static,
    L: Fn(&Path) -> Result<T, E> + Send + 'static,
    O: Fn(Trigger, Outcome<'_, E>) + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Trigger>(16);
    let watcher = watch_file(&path, tx.clone());
    if let Err(e) = &watcher {
        tracing::warn!(error = %e, path = %path.display(), "Cannot watch the configuration file; reload on SIGHUP only.");
    }
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut last_bytes = std::fs::read(&path).ok();
    Ok(tokio::spawn(async move {
        // Keep the watcher alive as long as the task.
        let _watcher = watcher;
        loop {
            let trigger = tokio::select! {
                _ = hangup.recv() => Trigger::Signal,
                Some(t) = rx.recv() => t,
                () = shutdown.wait() => return,
            };
            if trigger == Trigger::FileChange {
                // Let a burst of events (write, chmod, rename) settle before reading.
                tokio::time::sleep(DEBOUNCE).await;
                while rx.try_recv().is_ok() {}
            }
            let bytes = std::fs::read(&path).ok();
            if trigger == Trigger::FileChange && bytes.is_some() && bytes == last_bytes {
                observe(trigger, Outcome::Unchanged);
                continue;
            }
            match load(&path) {
                Ok(value) => {
                    target.store(Arc::new(value));
                    last_bytes = bytes;
                    observe(trigger, Outcome::Loaded);
                }
                Err(e) => observe(trigger, Outcome::Failed(&e)),
            }
        }
    }))
}

fn watch_file(
    path: &Path,
    tx: mpsc::Sender<Trigger>,
) -> notify::Result<notify::RecommendedWatcher> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = path.file_name().map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        // Our file, or a Kubernetes ConfigMap's `..data` swap (the file is a symlink into it).
        let relevant = event.paths.iter().any(|p| {
            let file = p.file_name();
            file == name.as_deref()
                || file.is_some_and(|f| f.to_string_lossy().starts_with("..data"))
        });
        if relevant {
            let _ = tx.try_send(Trigger::FileChange);
        }
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}
