//! One route's `requests_total` and `request_duration_seconds` children, resolved once per
//! label combination and then reused, so the per-request path hashes no label values.
//!
//! Routes belong to one worker, so the small cache behind each route is only ever locked by
//! that worker's thread (uncontended). Label sets are closed (HTTP method, MCP method label,
//! status), and the cache is bounded anyway: past [`MAX_CACHED`] combinations a request
//! resolves its counter the ordinary way.

use crate::metrics::Metrics;
use http::{Method, StatusCode};
use prometheus::{Histogram, IntCounter};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// HTTP method labels; anything else is `other`.
const HTTP_METHODS: [&str; 7] = ["GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "other"];
/// Counter children kept per route.
const MAX_CACHED: usize = 64;

/// The HTTP method of a request, as a bounded label.
#[derive(Clone, Copy)]
pub struct HttpMethod(usize);

impl HttpMethod {
    pub fn of(method: &Method) -> Self {
        Self(match *method {
            Method::GET => 0,
            Method::POST => 1,
            Method::DELETE => 2,
            Method::HEAD => 3,
            Method::OPTIONS => 4,
            Method::PUT => 5,
            _ => 6,
        })
    }

    pub fn label(self) -> &'static str {
        HTTP_METHODS[self.0]
    }
}

struct Counted {
    http_method: usize,
    mcp_method: &'static str,
    status: StatusCode,
    counter: IntCounter,
}

/// A route's request metrics (see the module header).
pub struct RequestMetrics {
    route: Arc<str>,
    metrics: Metrics,
    durations: [OnceLock<Histogram>; HTTP_METHODS.len()],
    counters: Mutex<Vec<Counted>>,
}

impl RequestMetrics {
    pub fn new(route: Arc<str>, metrics: &Metrics) -> Self {
        Self {
            route,
            metrics: metrics.clone(),
            durations: Default::default(),
            counters: Mutex::new(Vec::new()),
        }
    }

    /// Counts one answered request and observes its latency (seconds).
    pub fn record(
        &self,
        http_method: HttpMethod,
        mcp_method: &'static str,
        status: StatusCode,
        seconds: f64,
    ) {
        self.durations[http_method.0]
            .get_or_init(|| {
                self.metrics
                    .request_duration
                    .with_label_values(&[&self.route, http_method.label()])
            })
            .observe(seconds);
        self.counter(http_method, mcp_method, status).inc();
    }

    fn counter(
        &self,
        http_method: HttpMethod,
        mcp_method: &'static str,
        status: StatusCode,
    ) -> IntCounter {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let found = counters.iter().find(|c| {
            c.status == status && c.http_method == http_method.0 && c.mcp_method == mcp_method
        });
        if let Some(c) = found {
            return c.counter.clone();
        }
        let counter = self.metrics.requests.with_label_values(&[
            &self.route,
            http_method.label(),
            mcp_method,
            status.as_str(),
        ]);
        if counters.len() < MAX_CACHED {
            counters.push(Counted {
                http_method: http_method.0,
                mcp_method,
                status,
                counter: counter.clone(),
            });
        }
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(metrics: &Metrics, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let text = String::from_utf8(metrics.render()).unwrap();
        let want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        text.lines()
            .filter(|l| l.starts_with(&format!("elicitgate_{name}{{")))
            .find(|l| want.iter().all(|w| l.contains(w.as_str())))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    #[test]
    fn cached_and_uncached_children_count_the_same_series() {
        let metrics = Metrics::new();
        let m = RequestMetrics::new(Arc::from("r"), &metrics);
        let post = HttpMethod::of(&Method::POST);
        for _ in 0..3 {
            m.record(post, "tools/call", StatusCode::OK, 0.001);
        }
        m.record(post, "tools/call", StatusCode::BAD_GATEWAY, 0.002);
        // Fill the cache past its bound: later combinations are still counted.
        for code in 300..300 + MAX_CACHED as u16 + 5 {
            let status = StatusCode::from_u16(code).unwrap();
            m.record(HttpMethod::of(&Method::GET), "none", status, 0.0);
            m.record(HttpMethod::of(&Method::GET), "none", status, 0.0);
        }
        let labels = |status| {
            [
                ("route", "r"),
                ("http_method", "POST"),
                ("mcp_method", "tools/call"),
                ("status", status),
            ]
        };
        assert_eq!(
            sample(&metrics, "requests_total", &labels("200")),
            Some(3.0)
        );
        assert_eq!(
            sample(&metrics, "requests_total", &labels("502")),
            Some(1.0)
        );
        let last = (300 + MAX_CACHED as u16 + 4).to_string();
        let get = [("http_method", "GET"), ("status", last.as_str())];
        assert_eq!(sample(&metrics, "requests_total", &get), Some(2.0));
        let post_count = [("route", "r"), ("http_method", "POST")];
        assert_eq!(
            sample(&metrics, "request_duration_seconds_count", &post_count),
            Some(4.0)
        );
    }
}
