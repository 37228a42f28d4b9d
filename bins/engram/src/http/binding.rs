//! Workspace binding: every MCP request names its workspace in `X-Memory-Workspace`
//! (specification, "Workspace Binding"). The header is read on every request, because some
//! clients speak the stateless protocol and never send `initialize`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engram_domain::{Error, Memory, WorkspaceId};
use engram_mcp::BoundWorkspace;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::auth::Grant;
use super::refusal::{refuse, rpc_error};
use super::sessions::{ClientAddress, SessionCounter, Share, publish_open};

/// The header that binds a request to a workspace.
pub const WORKSPACE_HEADER: &str = "x-memory-workspace";
const SESSION_HEADER: &str = "mcp-session-id";

/// State of the binding middleware: the store to resolve names, the open sessions' count,
/// and which workspace each Streamable HTTP session started with.
#[derive(Clone)]
pub struct Binder {
    memory: Memory,
    counter: SessionCounter,
    sessions: Arc<Mutex<HashMap<String, StreamableSession>>>,
    /// rmcp's sessions, closed here when idle for longer than the limit.
    manager: Arc<LocalSessionManager>,
}

struct StreamableSession {
    workspace: WorkspaceId,
    seen: Instant,
    _slot: Share,
}

impl Binder {
    pub fn new(memory: Memory, counter: SessionCounter, manager: Arc<LocalSessionManager>) -> Self {
        Self {
            memory,
            counter,
            sessions: Arc::default(),
            manager,
        }
    }

    /// The memory the bound servers work on.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The open sessions' count, shared with the SSE transport.
    pub fn counter(&self) -> &SessionCounter {
        &self.counter
    }

    /// Closes the Streamable HTTP sessions unused for longer than the idle limit (rmcp's
    /// manager keeps a closed session's handle until told, so this also frees it).
    async fn close_idle(&self) {
        let idle = self.counter.limits().idle;
        let expired: Vec<String> = {
            let mut sessions = self.sessions.lock().expect("session map lock");
            let expired = sessions
                .iter()
                .filter(|(_, session)| session.seen.elapsed() >= idle)
                .map(|(id, _)| id.clone())
                .collect::<Vec<_>>();
            for id in &expired {
                sessions.remove(id);
            }
            publish_open("streamable_http", sessions.len());
            expired
        };
        for id in expired {
            tracing::debug!(session = %id, "closing an idle session");
            if let Err(error) = self.manager.close_session(&id.as_str().into()).await {
                tracing::debug!(%error, "closing an idle session failed");
            }
        }
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
                Err(refuse(StatusCode::SERVICE_UNAVAILABLE, error.for_clients()))
            }
        }
    }

    fn remember(&self, session: &str, workspace: WorkspaceId, slot: Share) {
        let mut sessions = self.sessions.lock().expect("session map lock");
        let session_state = StreamableSession {
            workspace,
            seen: Instant::now(),
            _slot: slot,
        };
        sessions.insert(session.to_owned(), session_state);
        publish_open("streamable_http", sessions.len());
    }

    /// The workspace `session` started with, refreshing its last use.
    fn session_workspace(&self, session: &str) -> Option<WorkspaceId> {
        let mut sessions = self.sessions.lock().expect("session map lock");
        sessions.get_mut(session).map(|session| {
            session.seen = Instant::now();
            session.workspace
        })
    }

    fn forget(&self, session: &str) {
        let mut sessions = self.sessions.lock().expect("session map lock");
        sessions.remove(session);
        publish_open("streamable_http", sessions.len());
    }
}

/// What makes `message` no JSON-RPC 2.0 message MCP accepts, if anything: it must be an
/// object with `"jsonrpc": "2.0"`, a string `method` when it has one, a string or integer `id`
/// (MCP allows no `null`), and `params`, when given, an object (MCP names its parameters).
fn envelope_problem(message: &serde_json::Value) -> Option<String> {
    let Some(object) = message.as_object() else {
        return Some("invalid request: a JSON-RPC message is an object".into());
    };
    if object.get("jsonrpc").and_then(|v| v.as_str()) != Some("2.0") {
        return Some("invalid request: `jsonrpc` must be \"2.0\"".into());
    }
    if object.get("method").is_some_and(|m| !m.is_string()) {
        return Some("invalid request: `method` must be a string".into());
    }
    if let Some(id) = object.get("id")
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return Some("invalid request: `id` must be a string or an integer".into());
    }
    if object.get("params").is_some_and(|p| !p.is_object()) {
        return Some("invalid request: `params` must be an object (named parameters)".into());
    }
    None
}

/// How large a request body may be, how long it may take to arrive, and how many bytes of
/// bodies all requests together may hold at once.
#[derive(Debug, Clone)]
pub struct BodyLimits {
    /// The largest body, in bytes.
    pub max_bytes: usize,
    /// The longest it may take to arrive (waiting for room included).
    pub timeout: std::time::Duration,
    /// Bytes of small bodies (at most [`SMALL_BODY_BYTES`]) and of bodies of unknown length
    /// being read or handled, across requests: a permit per byte.
    small: Arc<tokio::sync::Semaphore>,
    /// Bytes of larger bodies of known length: room for one of the largest. They wait in a
    /// line of their own, so a large body waiting never holds up a small one.
    large: Arc<tokio::sync::Semaphore>,
}

/// A body of known length up to this takes its room from the small bodies' pool.
pub const SMALL_BODY_BYTES: usize = 1024 * 1024;
/// Room for small bodies and bodies of unknown length together.
const SMALL_BODIES_BYTES: usize = 16 * 1024 * 1024;

impl BodyLimits {
    /// Bodies of at most `max_bytes`, arriving within `timeout`; all requests together hold
    /// one of the largest bodies and 16 MiB of smaller ones at once (16 parallel bodies of
    /// 79 MB held 1 GB before).
    pub fn new(max_bytes: usize, timeout: std::time::Duration) -> Self {
        let permits = |bytes: usize| bytes.min(tokio::sync::Semaphore::MAX_PERMITS);
        Self {
            max_bytes,
            timeout,
            small: Arc::new(tokio::sync::Semaphore::new(permits(SMALL_BODIES_BYTES))),
            large: Arc::new(tokio::sync::Semaphore::new(permits(max_bytes))),
        }
    }
}

/// A body's share of the room bodies may take, held until its answer starts.
pub(super) type BodyPermit = tokio::sync::OwnedSemaphorePermit;

/// Takes room for a body as it arrives: all of a body whose length is known before it is
/// read, waiting in the line of its size (small or large) and holding nothing meanwhile; a
/// body of unknown length piece by piece from the small bodies' room, without waiting (no
/// two bodies can each hold part of the room while waiting for the rest). Fails when there is
/// no room for a piece of a body of unknown length.
async fn read_counted(
    body: axum::body::Body,
    limits: &BodyLimits,
) -> Result<(axum::body::Bytes, BodyPermit), ReadFailure> {
    use http_body::Body as _;
    use http_body_util::BodyExt;
    let limit = limits.max_bytes;
    let permits = |bytes: u64| u32::try_from(bytes).unwrap_or(u32::MAX);
    if let Some(length) = body.size_hint().exact() {
        if length > limit as u64 {
            return Err(ReadFailure::TooLarge);
        }
        let pool = if length <= SMALL_BODY_BYTES as u64 {
            &limits.small
        } else {
            &limits.large
        };
        let permit = (pool.clone().acquire_many_owned(permits(length)).await)
            .expect("the body budget is never closed");
        let bytes = axum::body::to_bytes(body, limit).await?;
        return Ok((bytes, permit));
    }
    let mut permit =
        (limits.small.clone().try_acquire_many_owned(0)).expect("the body budget is never closed");
    let mut read = Vec::new();
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        if read.len() + data.len() > limit {
            return Err(ReadFailure::TooLarge);
        }
        let more = (limits.small.clone()).try_acquire_many_owned(permits(data.len() as u64));
        permit.merge(more.map_err(|_| ReadFailure::Busy)?);
        read.extend_from_slice(&data);
    }
    Ok((read.into(), permit))
}

/// A response body that holds what its request took until the answer starts (`room`: the
/// body's share of the room bodies may take, given back at the first frame of data) and until
/// it is done (`until_done`); its size and end are its inner body's, so an answer keeps its
/// `Content-Length`.
struct Holding<T> {
    inner: axum::body::Body,
    room: Option<BodyPermit>,
    _until_done: T,
}

impl<T: Send + Unpin + 'static> http_body::Body for Holding<T> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(context);
        if polled.is_ready() {
            this.room = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Why a body was not read.
enum ReadFailure {
    TooLarge,
    /// Bodies of other requests hold the budget (a body of unknown length does not wait).
    Busy,
    Broken(axum::Error),
}

impl From<axum::Error> for ReadFailure {
    fn from(error: axum::Error) -> Self {
        if is_over_limit(&error) {
            Self::TooLarge
        } else {
            Self::Broken(error)
        }
    }
}

/// A request body within `limits`, with its share of the bytes all bodies may hold (keep it
/// until the request is answered); else the refusal to send: 408 when it came too slowly
/// (waiting for room among other bodies included), 413 when it is too large, 503 when other
/// bodies hold the room a body of unknown length needs, 400 when it could not be read (a
/// malformed chunk) or holds an array or object of more than
/// [`super::json_shape::MAX_ITEMS`] items (found before anything is built from it).
pub(super) async fn read_body(
    body: axum::body::Body,
    limits: &BodyLimits,
) -> Result<(axum::body::Bytes, BodyPermit), Response> {
    let limit = limits.max_bytes;
    let read = tokio::time::timeout(limits.timeout, read_counted(body, limits));
    match read.await {
        Ok(Ok((bytes, permit))) => {
            match super::json_shape::problem(&bytes, super::json_shape::MAX_ITEMS) {
                None => Ok((bytes, permit)),
                Some(problem) => Err(rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    format!("invalid request: {problem}"),
                )),
            }
        }
        Err(_) => Err(rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            -32600,
            format!(
                "the request body did not arrive within {} s",
                limits.timeout.as_secs_f64()
            ),
        )),
        Ok(Err(ReadFailure::TooLarge)) => Err(rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            format!("request body over {limit} bytes"),
        )),
        Ok(Err(ReadFailure::Busy)) => Err(rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32600,
            "the server is reading other large request bodies: send again shortly, or with a \
             Content-Length to wait in line"
                .to_owned(),
        )),
        Ok(Err(ReadFailure::Broken(error))) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            format!("the request body could not be read: {error}"),
        )),
    }
}

/// Whether reading a body failed on its size limit.
fn is_over_limit(error: &axum::Error) -> bool {
    let error: &(dyn std::error::Error + 'static) = error;
    std::iter::successors(Some(error), |error| error.source())
        .any(|error| error.is::<http_body_util::LengthLimitError>())
}

/// State of [`check_json`]: the largest body, and the requests in flight in each session.
#[derive(Clone)]
pub struct JsonCheck {
    body: BodyLimits,
    /// `(session id, request id)` of every request whose answer has not been sent yet.
    in_flight: Arc<Mutex<HashSet<(String, String)>>>,
}

impl JsonCheck {
    pub fn new(body: BodyLimits) -> Self {
        Self {
            body,
            in_flight: Arc::default(),
        }
    }
}

/// Takes a request id out of the in-flight set when its answer's body is done or dropped.
struct InFlight {
    set: Arc<Mutex<HashSet<(String, String)>>>,
    key: (String, String),
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.set.lock().expect("in-flight lock").remove(&self.key);
    }
}

/// Middleware for `POST /mcp`: a body that is not JSON is refused with 400 and -32700 (parse
/// error), a JSON-RPC batch (an array, which MCP dropped in protocol 2025-06-18) with 400 and
/// -32600, before the transport sees them (it answered both with 415). A request whose id is
/// already in flight in the same session gets 409 and -32600 at once (the transport routes
/// answers by id, so the first of the two would never get its answer).
pub async fn check_json(State(check): State<JsonCheck>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let (bytes, permit) = match read_body(body, &check.body).await {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    let message = match serde_json::from_slice::<serde_json::Value>(&bytes) {
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
        Ok(message) => match envelope_problem(&message) {
            Some(problem) => return rpc_error(StatusCode::BAD_REQUEST, -32600, problem),
            None => message,
        },
    };
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    let in_flight = match (session, message.get("method"), message.get("id")) {
        (Some(session), Some(_), Some(id)) => {
            let key = (session.to_owned(), id.to_string());
            if !check
                .in_flight
                .lock()
                .expect("in-flight lock")
                .insert(key.clone())
            {
                let message = format!(
                    "request id {id} is already in flight in this session: give every \
                     request its own id"
                );
                return rpc_error(StatusCode::CONFLICT, -32600, message);
            }
            Some(InFlight {
                set: check.in_flight.clone(),
                key,
            })
        }
        _ => None,
    };
    let response = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    // The answer is streamed: the body's room is given back when its answer starts (a
    // client that never reads its answer holds none), the id stays taken until it is done.
    response.map(|inner| {
        axum::body::Body::new(Holding {
            inner,
            room: Some(permit),
            _until_done: in_flight,
        })
    })
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
    // A POST without a session opens one (it is an `initialize`): count it first.
    let slot = if request.method() == Method::POST && session.is_none() {
        binder.close_idle().await;
        let address = request.extensions().get::<ClientAddress>().map(|a| a.0);
        match binder.counter.admit(address) {
            Ok(slot) => Some(slot),
            Err(refusal) => return refusal.into_response(),
        }
    } else {
        None
    };
    request.extensions_mut().insert(bound);
    let mut response = next.run(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        // The official Python SDK expects 200 or 204 from a session DELETE.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    match (&session, response.headers().get(SESSION_HEADER)) {
        (Some(session), _) if closing => binder.forget(session),
        (None, Some(created)) => {
            if let (Ok(created), Some(slot)) = (created.to_str(), slot) {
                binder.remember(created, workspace, slot);
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
