//! The legacy HTTP+SSE transport (MCP protocol 2024-11-05), which rmcp no longer ships:
//! `GET /sse` opens an event stream whose first event, `endpoint`, names
//! `/sse/messages/?session_id=…`; the client POSTs JSON-RPC messages there and reads the
//! answers from the stream. The session ends when the stream is dropped.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use engram_domain::WorkspaceId;
use engram_mcp::{Access, Binding, EngramServer};
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::auth::Grant;
use super::binding::{Binder, refuse, rpc_error};
use super::sessions::{ClientAddress, Share, publish_open};

/// Answers a session may have waiting for its client to read them. A client that stops
/// reading its stream lets them pile up; once this many wait, its next message closes the
/// session (503): a client that does not read is dropped, not buffered without limit.
const UNREAD_LIMIT: usize = 64;

/// The server's side of a session's stream: delivers each message to the event stream and
/// counts it as unread until the stream hands it to the connection.
struct ToClient {
    sender: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    unread: Arc<AtomicUsize>,
}

impl futures::Sink<ServerJsonRpcMessage> for ToClient {
    type Error = std::io::Error;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, message: ServerJsonRpcMessage) -> Result<(), Self::Error> {
        self.unread.fetch_add(1, Ordering::Relaxed);
        self.sender
            .unbounded_send(message)
            .map_err(|_| std::io::Error::other("the session's stream is closed"))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.sender.close_channel();
        Poll::Ready(Ok(()))
    }
}

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
    /// Answers sent to the stream that the connection has not taken yet.
    unread: Arc<AtomicUsize>,
    /// Ends the session (its stream and its server).
    stop: CancellationToken,
}

/// What the SSE routes need.
#[derive(Clone)]
pub struct SseState {
    pub binder: Binder,
    pub sessions: SseSessions,
    pub shutdown: CancellationToken,
    /// How large a message body may be and how long it may take to arrive.
    pub body: super::binding::BodyLimits,
    /// The tools sessions are offered.
    pub tools: engram_mcp::ToolSet,
}

/// Removes the session and stops its server when the event stream is dropped.
struct SessionGuard {
    id: String,
    sessions: SseSessions,
    stop: CancellationToken,
    _slot: Share,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.stop.cancel();
        let mut sessions = self.sessions.inner.lock().expect("sse session lock");
        sessions.remove(&self.id);
        publish_open("sse", sessions.len());
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
    let address = request.extensions().get::<ClientAddress>().map(|a| a.0);
    let slot = match state.binder.counter().admit(address) {
        Ok(slot) => slot,
        Err(refusal) => return refusal.into_response(),
    };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = mpsc::unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = mpsc::unbounded::<ServerJsonRpcMessage>();
    let unread = Arc::new(AtomicUsize::new(0));
    let stop = state.shutdown.child_token();
    {
        let mut sessions = state.sessions.inner.lock().expect("sse session lock");
        sessions.insert(
            id.clone(),
            SseSession {
                workspace: bound.0.id,
                token: grant.map(|g| g.0.id.clone()),
                to_server,
                unread: unread.clone(),
                stop: stop.clone(),
            },
        );
        publish_open("sse", sessions.len());
    }
    let server = EngramServer::new(state.binder.memory().clone(), Binding::Fixed(bound.0))
        .with_tools(&state.tools)
        .with_access(access);
    let server_stop = stop.clone();
    let unread_by_server = unread.clone();
    tokio::spawn(async move {
        let sink = ToClient {
            sender: to_client,
            unread: unread_by_server,
        };
        let transport = (sink, from_client);
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
        _slot: slot,
    };
    Sse::new(events(endpoint, from_server, unread, guard, stop))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn events(
    endpoint: Event,
    from_server: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    unread: Arc<AtomicUsize>,
    guard: SessionGuard,
    stop: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let messages = from_server.map(move |message| {
        unread.fetch_sub(1, Ordering::Relaxed);
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
    let body = match super::binding::read_body(request.into_body(), state.body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => {
            let message = format!("parse error: {error}");
            return rpc_error(StatusCode::BAD_REQUEST, -32700, message);
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
            Some(session) if session.unread.load(Ordering::Relaxed) >= UNREAD_LIMIT => {
                tracing::warn!(session = %query.session_id, "closing an sse session whose client does not read its stream");
                session.stop.cancel();
                let id = query.session_id.clone();
                drop(sessions);
                state
                    .sessions
                    .inner
                    .lock()
                    .expect("sse session lock")
                    .remove(&id);
                return refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "this session's event stream is not being read; the session is closed".into(),
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
