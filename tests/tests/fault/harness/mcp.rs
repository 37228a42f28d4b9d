//! A minimal MCP client over Streamable HTTP: JSON-RPC posted to `/mcp` with the session and
//! workspace headers, answers read from JSON or from the SSE stream of the request. Written
//! by hand so that every failure (an HTTP status, a JSON-RPC error, a cut connection, a
//! timeout) comes back as a value the tests can time and classify.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

const PROTOCOL: &str = "2025-06-18";
/// The stateless protocol: no `initialize`, no session; each request says what it is.
const STATELESS_PROTOCOL: &str = "2026-07-28";
const WORKSPACE_HEADER: &str = "X-Memory-Workspace";
/// The longest a call may take before it counts as unanswered.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One MCP session bound to a workspace.
pub struct Mcp {
    http: reqwest::Client,
    url: String,
    workspace: String,
    session: String,
    /// Speaks [`STATELESS_PROTOCOL`] (no session).
    stateless: bool,
    next_id: AtomicU64,
}

/// How a tool call ended.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A result without `isError`: its structured content.
    Ok(Value),
    /// A tool error (`isError: true`, something the caller can fix): its text.
    ToolError(String),
    /// No result: a JSON-RPC error, an HTTP error status, a broken connection or no answer
    /// within [`CALL_TIMEOUT`].
    Failed(String),
}

impl Reply {
    /// The structured result, or a panic naming `tool` and what came back instead.
    pub fn expect_ok(self, tool: &str) -> Value {
        match self {
            Self::Ok(value) => value,
            other => panic!("{tool}: {other:?}"),
        }
    }
}

impl Mcp {
    /// Opens a session (`initialize`, then `notifications/initialized`) on the server at
    /// `base`, bound to `workspace`.
    pub async fn connect(base: &str, workspace: &str) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        let mut client = Self {
            http,
            url: format!("{base}/mcp"),
            workspace: workspace.to_owned(),
            session: String::new(),
            stateless: false,
            next_id: AtomicU64::new(1),
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "engram-fault-tests", "version": "1"}}});
        let response = client.send(&initialize).await?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("no session id ({})", response.status()))?
            .to_owned();
        read_answer(response, 0).await?;
        client.session = session;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = client.send(&initialized).await?;
        if !response.status().is_success() {
            return Err(format!("notifications/initialized: {}", response.status()));
        }
        Ok(client)
    }

    /// A client of the stateless protocol on the server at `base`, bound to `workspace`: no
    /// `initialize` and no session, so any process behind a balancer may answer each call.
    pub fn stateless(base: &str, workspace: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .expect("an HTTP client"),
            url: format!("{base}/mcp"),
            workspace: workspace.to_owned(),
            session: String::new(),
            stateless: true,
            next_id: AtomicU64::new(1),
        }
    }

    /// Calls `tool` with `arguments`, waiting at most [`CALL_TIMEOUT`].
    pub async fn call(&self, tool: &str, arguments: Value) -> Reply {
        match tokio::time::timeout(CALL_TIMEOUT, self.call_unbounded(tool, arguments)).await {
            Ok(reply) => reply,
            Err(_) => Reply::Failed(format!("no answer within {CALL_TIMEOUT:?}")),
        }
    }

    /// Calls `tool` and panics unless it succeeds; returns its structured result.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments).await.expect_ok(tool)
    }

    async fn call_unbounded(&self, tool: &str, arguments: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        if self.stateless {
            request["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {}});
        }
        let answer = match self.send_call(&request, tool).await {
            Ok(response) => read_answer(response, id).await,
            Err(error) => Err(error),
        };
        let message = match answer {
            Ok(message) => message,
            Err(error) => return Reply::Failed(error),
        };
        if let Some(error) = message.get("error") {
            return Reply::Failed(format!("JSON-RPC error: {error}"));
        }
        let result = &message["result"];
        if result["isError"] == true {
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            return Reply::ToolError(text.to_owned());
        }
        match result.get("structuredContent") {
            Some(content) => Reply::Ok(content.clone()),
            None => Reply::Failed(format!("a result without structured content: {message}")),
        }
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, String> {
        self.send_call(body, "").await
    }

    /// Posts `body`; a stateless client names the method and `tool` in headers too.
    async fn send_call(&self, body: &Value, tool: &str) -> Result<reqwest::Response, String> {
        let protocol = if self.stateless {
            STATELESS_PROTOCOL
        } else {
            PROTOCOL
        };
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", protocol)
            .header(WORKSPACE_HEADER, &self.workspace)
            .json(body);
        if self.stateless {
            let method = body["method"].as_str().unwrap_or_default();
            request = request
                .header("mcp-method", method)
                .header("mcp-name", tool);
        }
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        request.send().await.map_err(|e| error_chain(&e))
    }
}

/// The JSON-RPC message answering `id`: the body itself (JSON) or the first SSE `data:` line
/// carrying it. An HTTP error status is an error with its body.
async fn read_answer(mut response: reqwest::Response, id: u64) -> Result<Value, String> {
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(format!("HTTP {status}: {body}"));
    }
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        let body = response.bytes().await.map_err(|e| error_chain(&e))?;
        return serde_json::from_slice(&body).map_err(|e| format!("a body that is not JSON: {e}"));
    }
    let mut buffer = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| error_chain(&e))?;
        let Some(chunk) = chunk else {
            return Err("the event stream ended without an answer".into());
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let Some(data) = line.trim_end().strip_prefix("data:") else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if message["id"] == id {
                return Ok(message);
            }
        }
    }
}

/// An error and its sources, `: `-separated (reqwest keeps the cause in its sources).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
