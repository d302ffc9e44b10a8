//! elicitgate: a reverse proxy for MCP servers that enforces policy on elicitation.
//!
//! This file is the module map and nothing else. What is decided lives in the pure core crate
//! `elicitgate_core` (message model, extraction, `inspect`, policy, lexicon, text); this crate
//! does the I/O around it, in layers (docs/architecture.md; `tests/it/layering.rs` keeps them):
//!
//! - [`shutdown`], [`metrics`], [`tls`], [`spans`], [`mcp`] (reading headers and bodies):
//!   leaves.
//! - [`error`]: the one gateway error type; [`audit`]: redacted audit events and their sinks.
//! - [`settings`]: the YAML configuration, loaded through `config`, validated all at once.
//! - [`state`]: what enforcement remembers between messages (memory or Redis), one trait.
//! - [`enforce`]: live enforcement: facts for `inspect`, state between messages, and
//!   carrier-neutral outcomes (refusals, answers to the server) with no wire form;
//!   [`identity`]: who the caller is; [`telemetry`]: OpenTelemetry export.
//! - [`proxy`]: HTTP: route table, per-request stages, streaming relay, upstream clients, and
//!   the HTTP form of every outcome.
//! - [`admin`]: `/metrics`, `/healthz`, `/readyz`; [`live`]: what a reload changes.
//! - [`reload`]: when to reload (SIGHUP, file changes).
//! - [`start`]: builds and runs the whole gateway; `main` and the integration tests call it.
//! - [`stdio`]: the same enforcement for local stdio servers, and the stdio form of every
//!   outcome; [`inspect_cli`], [`report`], [`demo`]: the other commands; [`policy_test`]:
//!   `test`, cases judged as `inspect` judges them.

#![forbid(unsafe_code)]
#![deny(rust_2018_idioms)]

pub mod admin;
pub mod audit;
pub mod demo;
pub mod enforce;
pub mod error;
pub mod identity;
pub mod inspect_cli;
pub mod live;
pub mod mcp;
pub mod metrics;
pub mod policy_test;
pub mod proxy;
pub mod reload;
pub mod report;
pub mod settings;
pub mod shutdown;
pub mod spans;
pub mod start;
pub mod state;
pub mod stdio;
pub mod telemetry;
pub mod tls;
