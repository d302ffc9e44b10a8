//! The HTTP side of "answer the server": when enforcement blocks a legacy elicitation, the
//! gateway POSTs its own JSON-RPC answer to the upstream in the client's session (same
//! session, protocol version and credentials headers), in the background.

use super::upstream::{self, Upstream};
use crate::enforce::judge::AnswerServer;
use crate::enforce::record::Recorder;
use crate::enforce::Exchange;
use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};

/// Answers through a route's upstream client.
pub struct HttpAnswer(pub Upstream);

impl AnswerServer for HttpAnswer {
    fn answer(&self, ex: &Exchange, body: Bytes, recorder: &Recorder) {
        let upstream = self.0.clone();
        let uri = ex.upstream_uri.clone();
        let headers: HeaderMap = ex.answer_headers.to_map();
        let recorder = recorder.clone();
        let route = ex.route_name.clone();
        tokio::spawn(async move {
            let mut request = match Request::post(uri).body(Full::new(body)) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "Could not build the gateway's answer.");
                    return;
                }
            };
            *request.headers_mut() = headers;
            let ok = match upstream.send(request).await {
                Ok((response, lease)) => {
                    let status = response.status();
                    if response.into_body().collect().await.is_ok() {
                        upstream::release(lease);
                    }
                    status.is_success()
                }
                Err(e) => {
                    tracing::warn!(route = %route, error = %e, "The server did not take the gateway's answer.");
                    false
                }
            };
            recorder.gateway_answer(&route, ok);
        });
    }
}

impl crate::enforce::judge::EndpointRewrite for super::EndpointMap {
    fn map(&self, announced: &str) -> Option<(String, String)> {
        super::EndpointMap::map(self, announced)
    }
}
