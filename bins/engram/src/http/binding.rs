//! Workspace binding: every MCP request names its workspace in `X-Memory-Workspace`
//! (specification, "Workspace Binding"). The header is read on every request, because some
//! clients speak the stateless protocol and never send `initialize`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engram_domain::{Error, Memory, WorkspaceId};
use engram_mcp::BoundWorkspace;

use super::auth::Grant;

/// The header that binds a request to a workspace.
pub const WORKSPACE_HEADER: &str = "x-memory-workspace";
const SESSION_HEADER: &str = "mcp-session-id";
/// Streamable HTTP sessions unseen for this long are forgotten.
const SESSION_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// State of the binding middleware: the store to resolve names, and which workspace each
/// Streamable HTTP session started with.
#[derive(Clone)]
pub struct Binder {
    memory: Memory,
    sessions: Arc<Mutex<HashMap<String, (WorkspaceId, Instant)>>>,
}

impl Binder {
    pub fn new(memory: Memory) -> Self {
        Self {
            memory,
            sessions: Arc::default(),
        }
    }

    /// The memory the bound servers work on.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Resolves the header to an existing workspace, or the refusal to send: 403 when the
    /// request's token grants another workspace (said before the name is looked up, so a
    /// token learns nothing about other workspaces).
    pub async fn resolve(
        &self,
        headers: &HeaderMap,
        grant: Option<&Grant>,
    ) -> Result<BoundWorkspace, Response> {
        let Some(value) = headers.get(WORKSPACE_HEADER) else {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "missing X-Memory-Workspace header: every MCP request must name an existing \
                 workspace (create one with `engram workspace create NAME`, then send \
                 `X-Memory-Workspace: NAME`)"
                    .into(),
            ));
        };
        let name = value.to_str().unwrap_or_default();
        if let Some(Grant(token)) = grant
            && token.workspace != name
        {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "this token does not grant that workspace".into(),
            ));
        }
        match self.memory.workspace(name).await {
            Ok(workspace) => Ok(BoundWorkspace(workspace)),
            Err(Error::InvalidArgument { reason, .. }) => Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("malformed X-Memory-Workspace header {name:?}: workspace names {reason}"),
            )),
            Err(Error::NotFound { .. }) => Err(refuse(
                StatusCode::BAD_REQUEST,
                format!(
                    "unknown workspace {name:?} in X-Memory-Workspace: create it with \
                     `engram workspace create {name}`"
                ),
            )),
            Err(error) => {
                tracing::error!(%error, "resolving the workspace failed");
                Err(refuse(StatusCode::SERVICE_UNAVAILABLE, error.to_string()))
            }
        }
    }

    fn remember(&self, session: &str, workspace: WorkspaceId) {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().expect("session map lock");
        sessions.retain(|_, (_, seen)| now.duration_since(*seen) < SESSION_IDLE);
        sessions.insert(session.to_owned(), (workspace, now));
        metrics::gauge!("engram_sessions_active", "transport" => "streamable_http")
            .set(sessions.len() as f64);
    }

    /// The workspace `session` started with, refreshing its last use.
    fn session_workspace(&self, session: &str) -> Option<WorkspaceId> {
        let mut sessions = self.sessions.lock().expect("session map lock");
        sessions.get_mut(session).map(|(workspace, seen)| {
            *seen = Instant::now();
            *workspace
        })
    }

    fn forget(&self, session: &str) {
        let mut sessions = self.sessions.lock().expect("session map lock");
        sessions.remove(session);
        metrics::gauge!("engram_sessions_active", "transport" => "streamable_http")
            .set(sessions.len() as f64);
    }
}

/// A JSON-RPC error body with an HTTP status, so MCP clients show the message: code -32603
/// (internal error) for a server-side status such as an unreachable database, -32600
/// (invalid request) for the others.
pub fn refuse(status: StatusCode, message: String) -> Response {
    let code = if status.is_server_error() {
        -32603
    } else {
        -32600
    };
    rpc_error(status, code, message)
}

fn rpc_error(status: StatusCode, code: i32, message: String) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}

/// Middleware for `POST /mcp`: a body that is not JSON is refused with 400 and -32700 (parse
/// error), a JSON-RPC batch (an array, which MCP dropped in protocol 2025-06-18) with 400 and
/// -32600, before the transport sees them (it answered both with 415).
pub async fn check_json(State(limit): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let message = format!("request body over {limit} bytes: {error}");
            return rpc_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, message);
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(error) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                format!("parse error: {error}"),
            );
        }
        Ok(serde_json::Value::Array(_)) => {
            let message = "JSON-RPC batches are not supported (MCP 2025-06-18): send one message \
                           per request"
                .to_owned();
            return rpc_error(StatusCode::BAD_REQUEST, -32600, message);
        }
        Ok(_) => {}
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Middleware for `/mcp`: binds the request to its workspace (a [`BoundWorkspace`] in the
/// request's extensions) and refuses a session's request that names another workspace.
pub async fn bind(State(binder): State<Binder>, mut request: Request, next: Next) -> Response {
    let grant = request.extensions().get::<Grant>();
    let bound = match binder.resolve(request.headers(), grant).await {
        Ok(bound) => bound,
        Err(refusal) => return refusal,
    };
    let workspace = bound.0.id;
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && let Some(started_with) = binder.session_workspace(session)
        && started_with != workspace
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "this session is bound to another workspace than {:?}; a session keeps the \
                 workspace it started with (open a new session to switch)",
                bound.0.name
            ),
        );
    }
    let closing = request.method() == Method::DELETE;
    request.extensions_mut().insert(bound);
    let mut response = next.run(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        // The official Python SDK expects 200 or 204 from a session DELETE.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    match (&session, response.headers().get(SESSION_HEADER)) {
        (Some(session), _) if closing => binder.forget(session),
        (None, Some(created)) => {
            if let Ok(created) = created.to_str() {
                binder.remember(created, workspace);
            }
        }
        _ => {}
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outages_are_internal_errors_and_refusals_invalid_requests() {
        for (status, code) in [
            (StatusCode::SERVICE_UNAVAILABLE, -32603),
            (StatusCode::BAD_REQUEST, -32600),
            (StatusCode::FORBIDDEN, -32600),
        ] {
            let response = refuse(status, "x".into());
            assert_eq!(response.status(), status);
            let body = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["error"]["code"], code, "{status}");
        }
    }
}
