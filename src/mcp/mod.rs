//! MCP wire formats and the reading stages of the message pipeline, in pipeline order:
//! [`transport`] (media type, charset, content codings, from headers), [`decode`] (undoing
//! content codings, streaming and bounded), [`sse`] (event framing), [`message`] (strict JSON
//! and exactly one JSON-RPC shape), and [`jsonrpc`] (envelopes, numeric codes and ids, the one
//! error type).

pub mod decode;
pub mod jsonrpc;
pub mod message;
pub mod revision;
pub mod sse;
pub mod transport;
