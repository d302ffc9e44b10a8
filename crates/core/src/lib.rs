//! elicitgate-core: everything elicitgate decides, with no I/O.
//!
//! Owns: the MCP message model ([`mcp`]: JSON-RPC envelopes, strict message reading, protocol
//! revisions, SSE framing), one view of an elicitation whatever carried it ([`elicitation`]),
//! the policy model and its compiler ([`policy`]), the rule ids ([`rules`]), the pure decision
//! ([`inspect`]), the multilingual secret lexicon ([`lexicon`]), text folding ([`text`]) and what a request says
//! about itself ([`request`]: its session, its client behind trusted proxies).
//!
//! Never: I/O, clocks, logging or metrics. The crate has no tokio, hyper, http, tracing, redis
//! or prometheus dependency, so a call to one is a compile error; the gateway crate
//! (`elicitgate`) does all of that around this core.

#![forbid(unsafe_code)]
#![deny(rust_2018_idioms)]

pub mod elicitation;
pub mod inspect;
pub mod lexicon;
pub mod mcp;
pub mod policy;
pub mod request;
pub mod rules;
pub mod text;
