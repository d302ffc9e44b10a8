//! The reading stages of the message pipeline that touch HTTP and streams, in pipeline order:
//! [`transport`] (media type, charset, content codings, from headers) and [`decode`] (undoing
//! content codings, streaming and bounded). The stages after them — SSE framing, strict
//! message reading, JSON-RPC envelopes — are pure and live in `elicitgate_core::mcp`.

pub mod decode;
pub mod transport;
