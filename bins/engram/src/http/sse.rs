//! The legacy HTTP+SSE transport (MCP protocol 2024-11-05), which rmcp no longer ships:
//! `GET /sse` opens an event stream whose first event, `endpoint`, names
//! `/sse/messages/?session_id=…`; the client POSTs JSON-RPC messages there and reads the
//! answers from the stream. The session ends when the stream is dropped.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use engram_domain::WorkspaceId;
use engram_mcp::{Access, Binding, EngramServer};
use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::auth::Grant;
use super::binding::{Binder, refuse};

/// Open legacy SSE sessions: where to deliver each session's incoming messages.
#[derive(Clone, Default)]
pub struct SseSessions {
    inner: Arc<Mutex<HashMap<String, SseSession>>>,
}

struct SseSession {
    workspace: WorkspaceId,
    /// The id of the token the stream was opened with, when tokens are required: every
    /// message must come with the same token.
    token: Option<String>,
    to_server: mpsc::UnboundedSender<ClientJsonRpcMessage>,
}

/// What the SSE routes need.
#[derive(Clone)]
pub struct SseState {
    pub binder: Binder,
    pub sessions: SseSessions,
    pub shutdown: CancellationToken,
}

/// Removes the session and stops its server when the event stream is dropped.
struct SessionGuard {
    id: String,
    sessions: SseSessions,
    stop: CancellationToken,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.stop.cancel();
        let mut sessions = self.sessions.inner.lock().expect("sse session lock");
        sessions.remove(&self.id);
        metrics::gauge!("engram_sessions_active", "transport" => "sse").set(sessions.len() as f64);
        drop(sessions);
        tracing::debug!(session = %self.id, "sse session closed");
    }
}

/// `GET /sse`: binds a new session to the request's workspace and streams its messages.
pub async fn connect(State(state): State<SseState>, request: Request) -> Response {
    let grant = request.extensions().get::<Grant>();
    let access = grant.map_or(Access::ReadWrite, |g| g.0.access);
    let bound = match state.binder.resolve(request.headers(), grant).await {
        Ok(bound) => bound,
        Err(refusal) => return refusal,
    };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = mpsc::unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = mpsc::unbounded::<ServerJsonRpcMessage>();
    {
        let mut sessions = state.sessions.inner.lock().expect("sse session lock");
        sessions.insert(
            id.clone(),
            SseSession {
                workspace: bound.0.id,
                token: grant.map(|g| g.0.id.clone()),
                to_server,
            },
        );
        metrics::gauge!("engram_sessions_active", "transport" => "sse").set(sessions.len() as f64);
    }
    let stop = state.shutdown.child_token();
    let server = EngramServer::new(state.binder.memory().clone(), Binding::Fixed(bound.0))
        .with_access(access);
    let server_stop = stop.clone();
    tokio::spawn(async move {
        let transport = (to_client.sink_map_err(std::io::Error::other), from_client);
        match server.serve_with_ct(transport, server_stop).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(error) => tracing::debug!(%error, "sse session ended before initialisation"),
        }
    });
    tracing::debug!(session = %id, "sse session opened");
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/sse/messages/?session_id={id}"));
    let guard = SessionGuard {
        id,
        sessions: state.sessions.clone(),
        stop: stop.clone(),
    };
    Sse::new(events(endpoint, from_server, guard, stop))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn events(
    endpoint: Event,
    from_server: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    guard: SessionGuard,
    stop: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let messages = from_server.map(|message| {
        Event::default()
            .event("message")
            .json_data(&message)
            .unwrap_or_else(|_| Event::default().event("message").data("{}"))
    });
    futures::stream::once(async { endpoint })
        .chain(messages)
        .take_until(stop.cancelled_owned())
        .map(move |event| {
            let _session = &guard;
            Ok(event)
        })
}

/// The query of `POST /sse/messages/`.
#[derive(Debug, Deserialize)]
pub struct MessageQuery {
    session_id: String,
}

/// `POST /sse/messages/?session_id=…`: hands a client message to its session (202), after
/// checking the workspace header names the session's workspace.
pub async fn post_message(
    State(state): State<SseState>,
    Query(query): Query<MessageQuery>,
    request: Request,
) -> Response {
    let grant = request.extensions().get::<Grant>().cloned();
    let bound = match state
        .binder
        .resolve(request.headers(), grant.as_ref())
        .await
    {
        Ok(bound) => bound,
        Err(refusal) => return refusal,
    };
    let body = match axum::body::to_bytes(request.into_body(), super::MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(error) => return refuse(StatusCode::PAYLOAD_TOO_LARGE, error.to_string()),
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => {
            let body = serde_json::json!({
                "jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": format!("parse error: {error}")},
            });
            return (StatusCode::BAD_REQUEST, Json(body)).into_response();
        }
    };
    let sender = {
        let sessions = state.sessions.inner.lock().expect("sse session lock");
        match sessions.get(&query.session_id) {
            None => None,
            Some(session) if session.workspace != bound.0.id => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "this session is bound to another workspace than {:?}",
                        bound.0.name
                    ),
                );
            }
            Some(session) if session.token != grant.as_ref().map(|g| g.0.id.clone()) => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "this session was opened with another token".into(),
                );
            }
            Some(session) => Some(session.to_server.clone()),
        }
    };
    let Some(sender) = sender else {
        return (StatusCode::NOT_FOUND, "unknown or closed session").into_response();
    };
    if sender.unbounded_send(message).is_err() {
        return (StatusCode::NOT_FOUND, "session closed").into_response();
    }
    StatusCode::ACCEPTED.into_response()
}
