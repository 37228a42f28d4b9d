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

use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use engram_domain::WorkspaceId;
use engram_mcp::{Access, AnswerBacklog, Binding, EngramServer};
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::auth::Grant;
use super::binding::Binder;
use super::refusal::{refuse, rpc_error};
use super::sessions::{ClientAddress, Share, publish_open};
use super::unread::{Tally, UnreadBudget};

/// Bytes of answers a session's client has not read yet ([`Tally`]), and whether an answer
/// did not fit.
#[derive(Clone)]
struct Unread {
    tally: Tally,
    /// Set when an answer did not fit: the session is being closed for it.
    overflowed: Arc<std::sync::atomic::AtomicBool>,
}

/// One `message` event as the connection receives it: pieces of at most [`PIECE_BYTES`], each
/// its own allocation, so a connection that holds a piece it cannot write (its client does not
/// read) pins that piece, not the whole answer.
#[derive(Default)]
struct Event {
    pieces: std::collections::VecDeque<Bytes>,
    /// The piece being written.
    open: Vec<u8>,
}

impl Event {
    /// `message` serialised as an SSE `message` event (serialised JSON holds no line break:
    /// one `data:` line), written straight into pieces: no copy of the whole answer is made.
    fn message(message: &ServerJsonRpcMessage) -> std::io::Result<Self> {
        use std::io::Write;
        let mut event = Self::default();
        event.write_all(b"event: message\ndata: ")?;
        serde_json::to_writer(&mut event, message)?;
        event.write_all(b"\n\n")?;
        event.seal();
        Ok(event)
    }

    /// The open piece joins the others, holding no more memory than its bytes (a short
    /// answer's one piece would otherwise keep the 64 KiB reserved for it, counted as its few
    /// hundred bytes).
    fn seal(&mut self) {
        if !self.open.is_empty() {
            let mut piece = std::mem::take(&mut self.open);
            piece.shrink_to_fit();
            self.pieces.push_back(Bytes::from(piece));
        }
    }

    /// Bytes of the pieces left.
    fn len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }
}

impl std::io::Write for Event {
    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<usize> {
        let written = bytes.len();
        while !bytes.is_empty() {
            if self.open.capacity() == 0 {
                self.open.reserve_exact(PIECE_BYTES);
            }
            let room = PIECE_BYTES - self.open.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.open.extend_from_slice(now);
            bytes = rest;
            if self.open.len() == PIECE_BYTES {
                self.seal();
            }
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The server's side of a session's stream: serialises each message into an [`Event`],
/// counts its bytes as unread until the stream hands them to the connection, and ends the
/// session when its client leaves too much unread.
struct ToClient {
    sender: mpsc::UnboundedSender<Event>,
    unread: Unread,
    stop: CancellationToken,
    /// Told of each answer once it is serialised, so the session builds the next.
    backlog: AnswerBacklog,
}

impl futures::Sink<ServerJsonRpcMessage> for ToClient {
    type Error = std::io::Error;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, message: ServerJsonRpcMessage) -> Result<(), Self::Error> {
        self.backlog.taken_message(&message);
        if self.stop.is_cancelled() {
            // Closed (its client did not read): nothing more is serialised for it.
            return Err(std::io::Error::other("the session is closed"));
        }
        let event = Event::message(&message)?;
        drop(message);
        let bytes = event.len();
        if !self.unread.tally.add(bytes) {
            self.unread.overflowed.store(true, Ordering::Release);
            tracing::warn!(
                bytes,
                "closing an sse session whose client leaves more unread than its budget"
            );
            self.stop.cancel();
            return Err(std::io::Error::other(
                "the session's client does not read its stream",
            ));
        }
        self.sender.unbounded_send(event).map_err(|_| {
            self.unread.tally.take(bytes);
            std::io::Error::other("the session's stream is closed")
        })
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.sender.close_channel();
        Poll::Ready(Ok(()))
    }
}

/// Open legacy SSE sessions: where to deliver each session's incoming messages, and the
/// bytes their clients have not read yet, all together.
#[derive(Clone, Default)]
pub struct SseSessions {
    inner: Arc<Mutex<HashMap<String, SseSession>>>,
    unread: Arc<AtomicUsize>,
    /// The last sessions closed because their clients did not read, so that their next
    /// message is told why (at most [`DROPPED_REMEMBERED`]).
    dropped: Arc<Mutex<std::collections::VecDeque<String>>>,
}

impl SseSessions {
    /// No sessions yet; their unread bytes are counted into `all` (the server's total).
    pub fn counting_into(all: Arc<AtomicUsize>) -> Self {
        Self {
            unread: all,
            ..Self::default()
        }
    }

    /// Remembers that session `id` was closed because its client did not read.
    fn remember_dropped(&self, id: &str) {
        let mut dropped = self.dropped.lock().expect("sse dropped lock");
        if dropped.iter().any(|d| d == id) {
            return;
        }
        if dropped.len() == DROPPED_REMEMBERED {
            dropped.pop_front();
        }
        dropped.push_back(id.to_owned());
    }
}

/// How many sessions closed for not reading are remembered.
const DROPPED_REMEMBERED: usize = 256;

/// The answer to a message for a session closed because its client did not read.
fn not_read() -> Response {
    refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        "this session's event stream is not being read; the session is closed".into(),
    )
}

struct SseSession {
    workspace: WorkspaceId,
    /// The id of the token the stream was opened with, when tokens are required: every
    /// message must come with the same token.
    token: Option<String>,
    to_server: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    /// Bytes sent to the stream that the connection has not taken yet.
    unread: Unread,
    /// Ends the session (its stream and its server).
    stop: CancellationToken,
}

/// What the SSE routes need.
#[derive(Clone)]
pub struct SseState {
    pub binder: Binder,
    pub sessions: SseSessions,
    pub shutdown: CancellationToken,
    /// Every tool call while it runs: a stopping server waits for them.
    pub calls: tokio_util::task::TaskTracker,
    /// How large a message body may be and how long it may take to arrive.
    pub body: super::binding::BodyLimits,
    /// The tools sessions are offered.
    pub tools: engram_mcp::ToolSet,
    /// How many bytes may wait for clients to read them.
    pub unread: UnreadBudget,
}

/// Removes the session and stops its server when the event stream is dropped.
struct SessionGuard {
    id: String,
    sessions: SseSessions,
    stop: CancellationToken,
    unread: Unread,
    _slot: Share,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.stop.cancel();
        // What was never read goes with the stream.
        self.unread.tally.take_all();
        // Remembered before the session goes, so its next message is told why.
        if self.unread.overflowed.load(Ordering::Acquire) {
            self.sessions.remember_dropped(&self.id);
        }
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
    let author = request.extensions().get::<engram_mcp::Author>().cloned();
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
    let (to_client, from_server) = mpsc::unbounded::<Event>();
    let unread = Unread {
        tally: Tally::new(Arc::default(), state.sessions.unread.clone(), state.unread),
        overflowed: Arc::default(),
    };
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
    let backlog = AnswerBacklog::default();
    let server = EngramServer::new(state.binder.memory().clone(), Binding::Fixed(bound.0))
        .with_tools(&state.tools)
        .with_access(access)
        .with_author(author)
        .with_backlog(backlog.clone())
        .with_call_tracker(state.calls.clone());
    let server_stop = stop.clone();
    let unread_by_server = unread.clone();
    tokio::spawn(async move {
        let sink = ToClient {
            sender: to_client,
            unread: unread_by_server,
            stop: server_stop.clone(),
            backlog,
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
    let endpoint = format!("/sse/messages/?session_id={id}");
    let guard = SessionGuard {
        id,
        sessions: state.sessions.clone(),
        stop: stop.clone(),
        unread: unread.clone(),
        _slot: slot,
    };
    let stream = events(endpoint, from_server, unread, guard, stop);
    Response::builder()
        .header(axum::http::header::CONTENT_TYPE, "text/event-stream")
        .header(axum::http::header::CACHE_CONTROL, "no-cache")
        .body(axum::body::Body::from_stream(stream))
        .expect("a valid response")
}

/// The bytes of one event stream piece handed to the connection at a time: a client that
/// does not read leaves at most this much of an answer with the connection; the rest waits,
/// counted, in the session.
const PIECE_BYTES: usize = 64 * 1024;
/// How often an idle stream sends a comment, so proxies and clients keep it open.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// The event stream: the `endpoint` event, then every message's [`Event`] a piece at a time
/// (each piece leaves the unread count as the connection takes it), and a keep-alive comment
/// after [`KEEP_ALIVE`] of silence; ends with `stop`, dropping what was not handed out.
fn events(
    endpoint: String,
    from_server: mpsc::UnboundedReceiver<Event>,
    unread: Unread,
    guard: SessionGuard,
    stop: CancellationToken,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    struct State {
        from_server: mpsc::UnboundedReceiver<Event>,
        unread: Unread,
        stop: CancellationToken,
        _guard: SessionGuard,
        /// What is left of the event being sent.
        sending: Event,
    }
    let first = Bytes::from(format!("event: endpoint\ndata: {endpoint}\n\n"));
    let state = State {
        from_server,
        unread,
        stop,
        _guard: guard,
        sending: Event::default(),
    };
    let rest = futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.stop.is_cancelled() {
                return None;
            }
            if let Some(piece) = state.sending.pieces.pop_front() {
                state.unread.tally.take(piece.len());
                return Some((Ok(piece), state));
            }
            tokio::select! {
                event = state.from_server.next() => state.sending = event?,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    return Some((Ok(Bytes::from_static(b":\n\n")), state));
                }
                () = state.stop.cancelled() => return None,
            }
        }
    });
    futures::stream::once(async move { Ok(first) }).chain(rest)
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
    // The body's bytes are counted until its message is handed to the session.
    let (body, _permit) = match super::binding::read_body(request.into_body(), &state.body).await {
        Ok(read) => read,
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
            // An answer did not fit its budget (said in the log as it happened): the session
            // is closing; its client is told why.
            Some(session) if session.unread.overflowed.load(Ordering::Acquire) => {
                session.stop.cancel();
                let id = query.session_id.clone();
                drop(sessions);
                state.sessions.remember_dropped(&id);
                state
                    .sessions
                    .inner
                    .lock()
                    .expect("sse session lock")
                    .remove(&id);
                return not_read();
            }
            Some(session) => Some(session.to_server.clone()),
        }
    };
    let Some(sender) = sender else {
        let dropped = state.sessions.dropped.lock().expect("sse dropped lock");
        if dropped.contains(&query.session_id) {
            return not_read();
        }
        return (StatusCode::NOT_FOUND, "unknown or closed session").into_response();
    };
    if sender.unbounded_send(message).is_err() {
        return (StatusCode::NOT_FOUND, "session closed").into_response();
    }
    StatusCode::ACCEPTED.into_response()
}
