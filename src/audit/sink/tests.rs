//! Unit tests of the sink front and writer threads.

use super::*;

fn counter() -> IntCounter {
    IntCounter::new("dropped", "dropped").unwrap()
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

/// An output that blocks until released: a stalled sink.
struct Stalled(std::sync::Arc<std::sync::Mutex<()>>);
impl Output for Stalled {
    fn write_line(&mut self, _: &str) -> Result<(), Failure> {
        drop(self.0.lock());
        Ok(())
    }
    fn flush(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

#[test]
fn a_stalled_sink_drops_its_own_events_and_never_stalls_another() {
    let failures =
        IntCounterVec::new(prometheus::Opts::new("f", "f"), &["sink", "reason"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let dropped = counter();
    let counters = WriterCounters {
        failures: Some(failures.clone()),
        ..WriterCounters::default()
    };
    let mut sink = AuditSink::start_all(
        vec![Target::File {
            path: path.clone(),
            max_file_bytes: 1 << 20,
            keep_files: 1,
            rotate_every: None,
        }],
        100,
        dropped.clone(),
        counters,
    )
    .unwrap();
    // A second lane whose writer never gets past the first line.
    let gate = std::sync::Arc::new(std::sync::Mutex::new(()));
    let held = gate.lock().unwrap();
    let (tx, rx) = sync_channel(10);
    let worker = Worker {
        label: "syslog",
        reopen: Arc::new(AtomicBool::new(false)),
        counters: WriterCounters {
            failures: Some(failures.clone()),
            ..WriterCounters::default()
        },
    };
    let stalled = Box::new(Stalled(gate.clone()));
    let handle = std::thread::spawn(move || worker.run(rx, stalled));
    let mut lanes = sink.lanes.to_vec();
    lanes.push(Lane {
        label: "syslog",
        queue: Queue::Writer {
            tx,
            reopen: Arc::new(AtomicBool::new(false)),
        },
    });
    sink.lanes = lanes.into();
    for i in 0..50 {
        sink.write(format!("{{\"n\":{i}}}"));
    }
    // The file has every line while the other sink is stuck.
    let mut lines = 0;
    for _ in 0..200 {
        lines = std::fs::read_to_string(&path)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines == 50 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(lines, 50);
    let stuck = failures
        .with_label_values(&["syslog", reason::QUEUE_FULL])
        .get();
    assert!(
        stuck >= 50 - 11,
        "the stalled sink's overflow is counted: {stuck}"
    );
    assert_eq!(
        failures
            .with_label_values(&["file", reason::QUEUE_FULL])
            .get(),
        0
    );
    assert_eq!(dropped.get(), stuck);
    drop(held);
    drop(sink);
    handle.join().unwrap();
}
