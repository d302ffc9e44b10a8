//! A scripted MCP client (Streamable HTTP, 2025-11-25) for `demo`: it initializes a session
//! with chosen elicitation capabilities, calls a tool, answers the elicitation that arrives on
//! the call's SSE stream, and returns the tool result. Every wait is bounded.

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use elicitgate_core::mcp::sse::{SseDecoder, SseFields};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// One MCP session through `url`.
pub struct DemoClient {
    http: Client<HttpConnector, Full<Bytes>>,
    url: String,
    session: String,
    next_id: u64,
}

/// What a tool call produced.
#[derive(Debug)]
pub struct CallOutcome {
    /// Elicitations that reached the client.
    pub elicitations: Vec<Value>,
    /// The tool result (`result`) or the JSON-RPC error (`error`).
    pub response: Value,
}

impl DemoClient {
    /// Initializes a session declaring `capabilities`.
    pub async fn connect(url: &str, capabilities: Value) -> anyhow::Result<Self> {
        let http = Client::builder(TokioExecutor::new()).build_http();
        let mut client = Self {
            http,
            url: url.to_owned(),
            session: String::new(),
            next_id: 1,
        };
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "clientInfo":{"name":"elicitgate-demo-client","version":env!("CARGO_PKG_VERSION")}}});
        let response = client.post(&init).await?;
        client.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .context("no Mcp-Session-Id in the initialize response")?
            .to_owned();
        let _ = response.into_body().collect().await;
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let _ = client.post(&note).await?.into_body().collect().await;
        Ok(client)
    }

    async fn post(&self, message: &Value) -> anyhow::Result<http::Response<hyper::body::Incoming>> {
        let mut req = Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if !self.session.is_empty() {
            req = req.header("mcp-session-id", &self.session);
        }
        let req = req.body(Full::new(Bytes::from(message.to_string())))?;
        Ok(tokio::time::timeout(WAIT, self.http.request(req)).await??)
    }

    /// Calls `tool`, answering an elicitation with `answer`.
    pub async fn call(&mut self, tool: &str, answer: Value) -> anyhow::Result<CallOutcome> {
        let id = self.next_id;
        self.next_id += 1;
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}});
        let response = self.post(&call).await?;
        if !response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"))
        {
            let body = response.into_body().collect().await?.to_bytes();
            return Ok(CallOutcome {
                elicitations: Vec::new(),
                response: serde_json::from_slice(&body)?,
            });
        }
        let mut body = response.into_body();
        let mut decoder = SseDecoder::new(1 << 20);
        let mut elicitations = Vec::new();
        loop {
            let frame = tokio::time::timeout(WAIT, body.frame())
                .await
                .map_err(|_| anyhow!("timed out waiting for the tool result"))?;
            let Some(frame) = frame else {
                bail!("stream ended without a result");
            };
            let Ok(data) = frame?.into_data() else {
                continue;
            };
            decoder.push(&data);
            while let Some(event) = decoder.next_event()? {
                let fields = SseFields::parse(&event);
                let Some(data) = fields.data.filter(|d| !d.is_empty()) else {
                    continue;
                };
                let message: Value = serde_json::from_slice(&data)?;
                if message["method"] == "elicitation/create" {
                    elicitations.push(message["params"].clone());
                    let reply = json!({"jsonrpc":"2.0","id":message["id"],"result":answer});
                    let _ = self.post(&reply).await?.into_body().collect().await;
                } else if message.get("id") == Some(&json!(id)) {
                    return Ok(CallOutcome {
                        elicitations,
                        response: message,
                    });
                }
            }
        }
    }
}
