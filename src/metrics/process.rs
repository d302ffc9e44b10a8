//! The standard `process_*` families, with CPU time to the microsecond.
//!
//! Owns [`ProcessMetrics`]: the `prometheus` crate's process collector (resident and virtual
//! memory, descriptors, threads, start time) with its `process_cpu_seconds_total` replaced.
//! That crate keeps CPU time in an integer counter of whole seconds, so a gateway using 0.3
//! CPU seconds a minute shows a flat line and `rate()` reads 0 or a jump; here it comes from
//! `getrusage(RUSAGE_SELF)` (user + system, microseconds) as a float counter.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Opts};

const CPU: &str = "process_cpu_seconds_total";

/// The process collector with CPU seconds as a float.
pub struct ProcessMetrics {
    inner: prometheus::process_collector::ProcessCollector,
    cpu: Counter,
    descs: Vec<Desc>,
}

impl ProcessMetrics {
    /// For this process.
    pub fn for_self() -> Self {
        let inner = prometheus::process_collector::ProcessCollector::for_self();
        let cpu = Counter::with_opts(Opts::new(
            CPU,
            "Total user and system CPU time spent in seconds.",
        ))
        .expect("static metric definition");
        let mut descs: Vec<Desc> = inner
            .desc()
            .into_iter()
            .filter(|d| d.fq_name != CPU)
            .cloned()
            .collect();
        descs.extend(cpu.desc().into_iter().cloned());
        ProcessMetrics { inner, cpu, descs }
    }
}

/// User plus system CPU time of this process so far, in seconds.
pub fn cpu_seconds() -> Option<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(seconds(usage.user_time()) + seconds(usage.system_time()))
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families: Vec<MetricFamily> = self
            .inner
            .collect()
            .into_iter()
            .filter(|f| f.name() != CPU)
            .collect();
        if let Some(now) = cpu_seconds() {
            // A counter only rises; concurrent scrapes may both add, never below the truth.
            let past = self.cpu.get();
            if now > past {
                self.cpu.inc_by(now - past);
            }
            families.extend(self.cpu.collect());
        }
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_reported_in_fractions_of_a_second() {
        let metrics = ProcessMetrics::for_self();
        // Burn a little CPU so the value is not zero, then check it is not whole seconds.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let families = metrics.collect();
        let cpu: Vec<_> = families.iter().filter(|f| f.name() == CPU).collect();
        assert_eq!(cpu.len(), 1, "exactly one CPU family");
        let value = cpu[0].get_metric()[0].get_counter().get_value();
        assert!(value > 0.0);
        let again = cpu_seconds().unwrap();
        assert!(again >= value);
        // Whole seconds would make every value an integer; microseconds almost never are.
        assert!(
            value.fract() != 0.0 || again.fract() != 0.0,
            "CPU time {value} looks like whole seconds"
        );
        assert!(families
            .iter()
            .any(|f| f.name() == "process_resident_memory_bytes"));
    }
}
