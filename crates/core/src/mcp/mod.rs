//! MCP wire formats that need no I/O: [`sse`] (event framing), [`message`] (strict JSON and
//! exactly one JSON-RPC shape), [`jsonrpc`] (envelopes, numeric codes and ids, the one
//! JSON-RPC error type) and [`revision`] (protocol revisions and their eras). The gateway's
//! `mcp` module adds the stages that read headers and bodies (`transport`, `decode`).

pub mod jsonrpc;
pub mod message;
pub mod revision;
pub mod sse;
