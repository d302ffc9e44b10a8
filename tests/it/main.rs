//! The one integration-test binary: every scenario test starts the real gateway (in process on
//! `127.0.0.1:0`, or its binary) against real peers, and shares the helpers in [`common`],
//! compiled once. One module per area; run one area with `cargo nextest run --test it <area>::`
//! (or `cargo test --test it <area>::`).

mod common;

mod audit_sinks;
mod bounds;
mod bounds_table;
mod cli;
mod correlation;
mod costly_input;
mod deadlines;
mod detector_leaks;
mod differential;
mod docs;
mod enforcement;
mod hot_reload;
mod identity;
mod image_runtime;
mod integrity;
mod layering;
mod never_panics;
mod no_leaks;
mod oauth;
mod passthrough;
mod prometheus;
mod promises;
mod refusals;
mod reload_everything;
mod replicas;
mod sdk_2026;
mod sdk_legacy;
mod sessions_and_headers;
mod shared_state;
mod state_conformance;
mod stdio_and_sse;
mod telemetry;
mod tls;
mod upstream_reuse;
