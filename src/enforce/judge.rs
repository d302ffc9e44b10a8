//! What a server message comes to, whatever carried it ([`ServerVerdict`], with the parsed
//! message in [`Judged`]), and the one trait a transport implements so that enforcement can
//! answer a server without doing I/O itself ([`AnswerServer`]).
//!
//! The carriers apply a verdict in their own framing: an SSE stream event by event
//! (`proxy::sse_judge`), a whole JSON body (`proxy::forward`), a stdio line (`stdio`).

pub use super::server::Judged;
use super::Exchange;
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;

/// What to do with one server message.
#[derive(Debug)]
pub enum ServerVerdict {
    Keep,
    /// Remove it (a blocked legacy elicitation, or a completion for an unknown id).
    Drop,
    /// Replace it with this message.
    Replace(Value),
    /// It names an elicitation carrier but cannot be read as a client would read it: not
    /// forwarded; the reason is a bounded label.
    Refuse(&'static str),
}

/// How the gateway answers a server itself (for a blocked legacy elicitation): a POST in the
/// client's session, or a line on the server's stdin. Implemented by the transports, so that
/// enforcement decides and never does I/O itself.
pub trait AnswerServer: Send + Sync {
    /// Sends `body` (a JSON-RPC response) to the server on behalf of `ex`'s client; reports
    /// whether it was taken through `recorder`.
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &super::record::Recorder);
}

/// Refusal reason for a response carrying more than `limits.max_elicitations_per_response`.
pub const TOO_MANY: &str = "elicitations_per_response";

/// The answering side of one exchange.
pub type ServerChannel = Arc<dyn AnswerServer>;
