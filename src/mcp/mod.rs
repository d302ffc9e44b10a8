//! MCP wire formats: JSON-RPC envelopes ([`jsonrpc`]) and Server-Sent Events framing ([`sse`]).

pub mod jsonrpc;
pub mod sse;
