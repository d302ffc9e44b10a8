//! The file sink: JSON Lines appended to one path, rotated by size and (optionally) by time,
//! and re-opened on request.
//!
//! Owns rotation (`audit.jsonl` → `audit.jsonl.1` → … up to `keep_files`, the oldest removed)
//! when the file would grow past `max_file_bytes`, or when the wall clock has entered a new
//! period of `rotate_every` (periods are aligned to the Unix epoch, so `24h` rotates at 00:00
//! UTC and each rotated file holds one period's lines; a period without events writes no
//! file). Re-opening (SIGHUP) closes the file and opens the path again, which is what
//! logrotate's `postrotate kill -HUP` expects after it renamed the file. The clock is passed
//! in, so time-based rotation is testable.

use super::{Failure, Output};
use prometheus::IntCounter;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wall clock (tests pass a controllable one).
pub type Clock = Box<dyn Fn() -> SystemTime + Send>;

/// Where the file is and when it rotates.
#[derive(Debug, Clone)]
pub struct Rotation {
    pub path: PathBuf,
    pub max_file_bytes: u64,
    pub keep_files: u32,
    pub rotate_every: Option<Duration>,
}

/// The open audit file.
pub struct FileOutput {
    file: BufWriter<File>,
    rotation: Rotation,
    written: u64,
    /// The time period of the lines in the current file (when it has any).
    period: Option<u64>,
    clock: Clock,
    rotations: Option<IntCounter>,
}

impl FileOutput {
    /// Opens (creates) `rotation.path` for appending.
    pub fn open(
        mut rotation: Rotation,
        rotations: Option<IntCounter>,
        clock: Clock,
    ) -> io::Result<Self> {
        rotation.max_file_bytes = rotation.max_file_bytes.max(1024);
        let (file, written, modified) = open_append(&rotation.path)?;
        let mut out = Self {
            file,
            rotation,
            written,
            period: None,
            clock,
            rotations,
        };
        out.period = (written > 0).then(|| out.period_of(modified)).flatten();
        Ok(out)
    }

    /// The period `t` falls in; `None` without time-based rotation.
    fn period_of(&self, t: SystemTime) -> Option<u64> {
        let every = self.rotation.rotate_every?.as_millis().max(1);
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
        Some(u64::try_from(since / every).unwrap_or(u64::MAX))
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        rotate(&self.rotation.path, self.rotation.keep_files)?;
        if let Some(c) = &self.rotations {
            c.inc();
        }
        let (file, written, _) = open_append(&self.rotation.path)?;
        self.file = file;
        self.written = written;
        self.period = None;
        Ok(())
    }

    fn write(&mut self, line: &str) -> io::Result<()> {
        let len = line.len() as u64 + 1;
        let now = self.period_of((self.clock)());
        let new_period = now.is_some() && self.period.is_some() && self.period != now;
        if self.written > 0 && (new_period || self.written + len > self.rotation.max_file_bytes) {
            self.rotate()?;
        }
        self.file.write_all(line.as_bytes())?;
        self.file.write_all(b"\n")?;
        self.written += len;
        if self.period.is_none() {
            self.period = now;
        }
        Ok(())
    }
}

impl Output for FileOutput {
    fn write_line(&mut self, line: &str) -> Result<(), Failure> {
        self.write(line).map_err(Failure::io)
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.file.flush().map_err(Failure::io)
    }

    fn reopen(&mut self) -> io::Result<()> {
        // Lines buffered for the old file go to it (wherever it was moved).
        let flushed = self.file.flush();
        let (file, written, modified) = open_append(&self.rotation.path)?;
        self.file = file;
        self.written = written;
        self.period = (written > 0).then(|| self.period_of(modified)).flatten();
        flushed
    }
}

/// The file at `path` opened for appending (created when absent), its length and when it
/// was last written.
fn open_append(path: &Path) -> io::Result<(BufWriter<File>, u64, SystemTime)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let meta = file.metadata()?;
    let modified = meta.modified().unwrap_or_else(|_| SystemTime::now());
    Ok((BufWriter::new(file), meta.len(), modified))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    fn rotation(path: &Path, max: u64, keep: u32, every: Option<Duration>) -> Rotation {
        Rotation {
            path: path.to_owned(),
            max_file_bytes: max,
            keep_files: keep,
            rotate_every: every,
        }
    }

    /// A clock at `secs` seconds after the epoch, moved by the test.
    fn fake_clock(secs: &Arc<AtomicU64>) -> Clock {
        let secs = secs.clone();
        Box::new(move || UNIX_EPOCH + Duration::from_secs(secs.load(Ordering::SeqCst)))
    }

    fn read(path: &Path, suffix: &str) -> String {
        std::fs::read_to_string(format!("{}{suffix}", path.display())).unwrap_or_default()
    }

    #[test]
    fn rotates_by_size_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let rotations = IntCounter::new("r", "r").unwrap();
        let mut out = FileOutput::open(
            rotation(&path, 1024, 2, None),
            Some(rotations.clone()),
            Box::new(SystemTime::now),
        )
        .unwrap();
        for i in 0..100 {
            out.write_line(&format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(50)))
                .unwrap();
        }
        out.flush().unwrap();
        assert!(path.with_extension("jsonl.1").exists());
        assert!(path.with_extension("jsonl.2").exists());
        assert!(!path.with_extension("jsonl.3").exists());
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024);
        let lines: usize = ["", ".1", ".2"]
            .iter()
            .map(|s| read(&path, s).lines().count())
            .sum();
        assert!(lines < 100, "old lines beyond keep_files were removed");
        assert!(rotations.get() >= 3);
    }

    #[test]
    fn rotates_when_the_clock_enters_a_new_period_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let day = 86_400;
        let now = Arc::new(AtomicU64::new(100 * day + 3600));
        let mut out = FileOutput::open(
            rotation(&path, 1 << 20, 3, Some(Duration::from_secs(day))),
            None,
            fake_clock(&now),
        )
        .unwrap();
        out.write_line("{\"n\":1}").unwrap();
        now.store(100 * day + 23 * 3600, Ordering::SeqCst);
        out.write_line("{\"n\":2}").unwrap();
        out.flush().unwrap();
        assert!(
            !path.with_extension("jsonl.1").exists(),
            "same day: no rotation"
        );
        // Midnight UTC passed; a quiet day produces no empty file.
        now.store(102 * day + 60, Ordering::SeqCst);
        out.write_line("{\"n\":3}").unwrap();
        out.flush().unwrap();
        assert_eq!(read(&path, ".1"), "{\"n\":1}\n{\"n\":2}\n");
        assert_eq!(read(&path, ""), "{\"n\":3}\n");
        assert!(!path.with_extension("jsonl.2").exists());
        now.store(103 * day, Ordering::SeqCst);
        out.write_line("{\"n\":4}").unwrap();
        out.flush().unwrap();
        assert_eq!(read(&path, ".2"), "{\"n\":1}\n{\"n\":2}\n");
        assert_eq!(read(&path, ".1"), "{\"n\":3}\n");
        assert_eq!(read(&path, ""), "{\"n\":4}\n");
    }

    #[test]
    fn an_existing_file_from_an_earlier_period_is_rotated_on_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"old\":true}\n").unwrap();
        // The file was last written "now" by the real clock; the fake clock is a day later.
        let later = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 86_400;
        let now = Arc::new(AtomicU64::new(later));
        let mut out = FileOutput::open(
            rotation(&path, 1 << 20, 1, Some(Duration::from_secs(3600))),
            None,
            fake_clock(&now),
        )
        .unwrap();
        out.write_line("{\"new\":true}").unwrap();
        out.flush().unwrap();
        assert_eq!(read(&path, ".1"), "{\"old\":true}\n");
        assert_eq!(read(&path, ""), "{\"new\":true}\n");
    }

    #[test]
    fn reopen_after_a_rename_writes_a_new_file_at_the_original_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let moved = dir.path().join("audit.jsonl-20250101");
        let mut out = FileOutput::open(
            rotation(&path, 1 << 20, 1, None),
            None,
            Box::new(SystemTime::now),
        )
        .unwrap();
        out.write_line("{\"n\":1}").unwrap();
        out.flush().unwrap();
        std::fs::rename(&path, &moved).unwrap();
        // Before the reopen, lines still follow the renamed file (as logrotate expects).
        out.write_line("{\"n\":2}").unwrap();
        out.reopen().unwrap();
        out.write_line("{\"n\":3}").unwrap();
        out.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&moved).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":3}\n");
    }
}
