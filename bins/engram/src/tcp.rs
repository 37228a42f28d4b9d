//! `engram serve --tcp ADDR`: MCP as newline-delimited JSON-RPC over TCP, the transport of the
//! reference systems (`shared/reference/003`): one JSON-RPC message per line each way, the same
//! tools, tokens and workspaces as HTTP.
//!
//! A connection binds itself with its first message, `initialize`, whose `params._meta` carries
//! what an HTTP request carries in its headers: `authorization` (`"Bearer TOKEN"`) and
//! `x-memory-workspace` (the workspace's name; the keys in any case). Without
//! `x-memory-workspace` the connection works in its token's workspace, or without a token in
//! `engram serve --workspace`. Tokens are required as on HTTP: when `--require-auth` or OAuth is
//! configured or the address is not loopback, unless `--insecure-no-auth`; only engram's own
//! tokens are taken (an OAuth access token is refused). A refused `initialize` is answered with
//! a JSON-RPC error naming the fix, and the connection is closed. The token is checked again
//! every [`RECHECK`] (a revoked or expired one closes its connection) and taken out of
//! `initialize` before rmcp sees it (rmcp logs what a client sent).
//!
//! At most [`MAX_CONNECTIONS`] connections are served at once (one more is told so and closed).
//! Until it is bound a connection may send one line of at most [`FIRST_LINE_BYTES`], within
//! `--body-read-timeout`; then lines of up to `--max-body-bytes`. A longer line is answered
//! with an error and ends its connection; a line that is no JSON-RPC message is answered with a
//! parse error and the connection goes on (a line that is not UTF-8 ends it). A connection that
//! sends nothing for `--session-idle`, or does not take an answer within `--body-read-timeout`,
//! is closed. Answers wait for the socket with the session's `AnswerBacklog`, as legacy SSE's
//! do: a client that does not read holds its own calls back, not the server's memory.

use std::sync::Arc;
use std::time::Duration;

use engram_domain::{Error, Memory, Workspace};
use engram_mcp::{Access, AnswerBacklog, Author, Binding, EngramServer, ToolSet};
use futures::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

/// Most connections served at once (the reference systems' bound).
pub const MAX_CONNECTIONS: usize = 128;
/// The longest first line, before a connection is bound: an `initialize` is a few hundred
/// bytes.
pub const FIRST_LINE_BYTES: usize = 64 * 1024;
/// How often a connection's token is checked again.
pub const RECHECK: Duration = Duration::from_secs(60);

/// JSON-RPC's code for a line that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request (here: the first one is no
/// `initialize`, or a line is too long).
const INVALID_REQUEST: i64 = -32600;
/// The code of a refused binding: no token, a wrong token, a workspace the token does not
/// grant or that does not exist (JSON-RPC's range for a server's own errors).
const REFUSED: i64 = -32001;
/// Lines queued for a connection's socket.
const QUEUED_LINES: usize = 16;

/// What every TCP connection is served with.
#[derive(Clone)]
pub struct TcpServing {
    /// The memory the tools work on.
    pub memory: Memory,
    /// The tools offered (`--tools`).
    pub tools: ToolSet,
    /// Whether `initialize` must carry a valid token.
    pub require_auth: bool,
    /// The workspace of a connection that names none and has no token (`--workspace`).
    pub workspace: Option<String>,
    /// The longest line read once bound, in bytes (`--max-body-bytes`).
    pub max_line_bytes: usize,
    /// How long the first line and each write may take (`--body-read-timeout`).
    pub patience: Duration,
    /// How long a connection may send nothing (`--session-idle`).
    pub idle: Duration,
}

/// Serves connections accepted on `listener` until `stop` is cancelled; each open connection
/// is closed then too.
pub async fn serve(listener: TcpListener, serving: TcpServing, stop: CancellationToken) {
    let serving = Arc::new(serving);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (mut stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, say: wait a little rather than spin.
                tracing::warn!(%error, "accepting a tcp connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, "refusing a tcp connection: {MAX_CONNECTIONS} are open");
            tokio::spawn(async move {
                let message = format!(
                    "this server holds {MAX_CONNECTIONS} connections already; try again later"
                );
                let refusal = error_line(&Value::Null, REFUSED, &message);
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), stream.write_all(&refusal)).await;
            });
            continue;
        };
        let (serving, stop) = (Arc::clone(&serving), stop.child_token());
        tokio::spawn(async move {
            let _slot = slot;
            tracing::debug!(%peer, "tcp connection opened");
            connection(stream, &serving, stop).await;
            tracing::debug!(%peer, "tcp connection closed");
        });
    }
}

/// Serves one connection: binds it with its `initialize`, then hands its messages to an
/// [`EngramServer`] until either side closes, it idles, or `stop`.
async fn connection(stream: TcpStream, serving: &TcpServing, stop: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(FIRST_LINE_BYTES));
    let (out, mut queued) = mpsc::channel::<Vec<u8>>(QUEUED_LINES);
    // The socket's writer: a client that takes no line within `patience` ends the connection.
    let (patience, writer_stop) = (serving.patience, stop.clone());
    let writer = tokio::spawn(async move {
        while let Some(line) = queued.recv().await {
            let written = tokio::time::timeout(patience, write.write_all(&line)).await;
            if !matches!(written, Ok(Ok(()))) {
                return writer_stop.cancel();
            }
        }
        let _ = write.shutdown().await;
    });
    let first_limit = format!("{FIRST_LINE_BYTES} bytes before initialize");
    let first_line = next_message(&mut lines, &out, &first_limit, with_json);
    let first = tokio::select! {
        () = stop.cancelled() => None,
        first = tokio::time::timeout(serving.patience, first_line) => first.ok().flatten(),
    };
    let bound = match first {
        Some((_, raw)) => bind(serving, raw).await,
        None => Err(None),
    };
    let (first, bound, token) = match bound {
        Ok(bound) => bound,
        Err(refusal) => {
            if let Some(line) = refusal {
                let _ = out.send(line).await;
            }
            drop(out);
            let _ = writer.await;
            return;
        }
    };
    *lines.decoder_mut() = LinesCodec::new_with_max_length(serving.max_line_bytes);
    if let Some(token) = token {
        tokio::spawn(recheck(serving.memory.clone(), token, stop.clone()));
    }
    let backlog = AnswerBacklog::default();
    let server = EngramServer::new(serving.memory.clone(), Binding::Fixed(bound.workspace))
        .with_tools(&serving.tools)
        .with_access(bound.access)
        .with_author(bound.author)
        .with_backlog(backlog.clone());
    let (mut to_server, from_client) = futures::channel::mpsc::channel(QUEUED_LINES);
    let (replies, idle, reader_stop) = (out.clone(), serving.idle, stop.clone());
    let limit = format!("{} bytes (--max-body-bytes)", serving.max_line_bytes);
    let reader = tokio::spawn(async move {
        if to_server.send(first).await.is_err() {
            return;
        }
        loop {
            let next = tokio::time::timeout(
                idle,
                next_message(&mut lines, &replies, &limit, |line: &str| {
                    serde_json::from_str(line)
                }),
            )
            .await;
            let Ok(Some(message)) = next else {
                // The end of the connection, a line it ends on, or idle for too long.
                return reader_stop.cancel();
            };
            if to_server.send(message).await.is_err() {
                return;
            }
        }
    });
    let to_client = Box::pin(futures::sink::unfold(
        (out, backlog),
        |(out, backlog), message: ServerJsonRpcMessage| async move {
            let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            line.push(b'\n');
            backlog.taken_message(&message);
            out.send(line)
                .await
                .map_err(|_| std::io::Error::other("the connection is closed"))?;
            Ok::<_, std::io::Error>((out, backlog))
        },
    ));
    match server.serve_with_ct((to_client, from_client), stop).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(error) => tracing::debug!(%error, "a tcp connection ended before initialisation"),
    }
    reader.abort();
    let _ = writer.await;
}

/// Checks `token` every [`RECHECK`] until `stop`; a token no longer valid stops the connection.
async fn recheck(memory: Memory, token: String, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RECHECK) => {}
        }
        if let Ok(None) = memory.authenticate(&token, chrono::Utc::now()).await {
            tracing::info!("closing a tcp connection: its token is revoked or expired");
            return stop.cancel();
        }
    }
}

/// The first message of a connection with its JSON, which [`bind`] reads: the only line read
/// both ways.
fn with_json(line: &str) -> serde_json::Result<(ClientJsonRpcMessage, Value)> {
    let raw: Value = serde_json::from_str(line)?;
    Ok((serde_json::from_value(raw.clone())?, raw))
}

/// The next JSON-RPC message of `lines`, as `parse` reads a line; a line that is none is
/// answered with a parse error on `out` and skipped, blank lines are skipped. `None` at the end
/// of the connection, or after a line over the `limit` (as the answer says it) or not UTF-8
/// (answered first: the rest of such a line cannot be told from the next).
async fn next_message<M>(
    lines: &mut FramedRead<OwnedReadHalf, LinesCodec>,
    out: &mpsc::Sender<Vec<u8>>,
    limit: &str,
    parse: impl Fn(&str) -> serde_json::Result<M>,
) -> Option<M> {
    loop {
        let line = match lines.next().await? {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                let message = format!("a line is over {limit}; the connection is closed");
                let _ = out
                    .send(error_line(&Value::Null, INVALID_REQUEST, &message))
                    .await;
                return None;
            }
            Err(LinesCodecError::Io(error)) => {
                if error.kind() == std::io::ErrorKind::InvalidData {
                    let message = "a line is not UTF-8; the connection is closed";
                    let _ = out
                        .send(error_line(&Value::Null, PARSE_ERROR, message))
                        .await;
                }
                return None;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse(&line) {
            Ok(parsed) => return Some(parsed),
            Err(error) => {
                let message = format!("not a JSON-RPC message: {error}");
                let _ = out
                    .send(error_line(&Value::Null, PARSE_ERROR, &message))
                    .await;
            }
        }
    }
}

/// What a connection's `initialize` bound it to.
struct Bound {
    workspace: Workspace,
    access: Access,
    author: Option<Author>,
}

/// What a bound connection starts with: its `initialize` without the token, the binding, and
/// the token to check again.
type Bind = (ClientJsonRpcMessage, Bound, Option<String>);

/// The binding the first message `raw` asks for, or the error line refusing it.
async fn bind(serving: &TcpServing, mut raw: Value) -> Result<Bind, Option<Vec<u8>>> {
    let id = raw.get("id").cloned().unwrap_or(Value::Null);
    let refuse = |code, message: &str| Some(error_line(&id, code, message));
    if raw.get("method").and_then(Value::as_str) != Some("initialize") {
        return Err(refuse(
            INVALID_REQUEST,
            "the first message of a connection is `initialize`; its params._meta may carry \
             `authorization` (\"Bearer TOKEN\") and `x-memory-workspace`",
        ));
    }
    // The token leaves `_meta` here: what rmcp is handed of `initialize`, it logs.
    let meta = match raw.pointer_mut("/params/_meta") {
        Some(Value::Object(meta)) => std::mem::take(meta),
        _ => serde_json::Map::new(),
    };
    let field = |name: &str| {
        (meta.iter())
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .and_then(|(_, value)| value.as_str())
    };
    let token = field("authorization").map(|value| {
        let value = value.trim();
        (value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer ")))
        .unwrap_or(value)
        .trim()
        .to_owned()
    });
    let grant = match (serving.require_auth, token.as_deref()) {
        (false, _) => None,
        (true, None) => {
            return Err(refuse(
                REFUSED,
                "this server requires a token: send params._meta.authorization = \"Bearer \
                 TOKEN\" in initialize (create one with `engram token create --workspace NAME`)",
            ));
        }
        (true, Some(token)) => match serving.memory.authenticate(token, chrono::Utc::now()).await {
            Ok(Some(info)) => Some(info),
            Ok(None) => return Err(refuse(REFUSED, "the token is unknown, revoked or expired")),
            Err(error) => return Err(refuse(REFUSED, &error.for_clients())),
        },
    };
    let name = (field("x-memory-workspace").map(str::to_owned))
        .or_else(|| grant.as_ref().map(|g| g.workspace.clone()))
        .or_else(|| serving.workspace.clone());
    let Some(name) = name else {
        return Err(refuse(
            REFUSED,
            "no workspace: send params._meta[\"x-memory-workspace\"] = NAME in initialize (or \
             start the server with --workspace NAME)",
        ));
    };
    if let Some(grant) = &grant
        && grant.workspace != name
    {
        return Err(refuse(REFUSED, "this token does not grant that workspace"));
    }
    let workspace = match serving.memory.workspace(&name).await {
        Ok(workspace) => workspace,
        Err(Error::NotFound { .. }) => {
            let message = format!(
                "workspace {name:?} does not exist: create it with `engram workspace create \
                 {name}`"
            );
            return Err(refuse(REFUSED, &message));
        }
        Err(error) => return Err(refuse(REFUSED, &error.for_clients())),
    };
    let first = serde_json::from_value(raw).map_err(|e| refuse(PARSE_ERROR, &e.to_string()))?;
    let bound = Bound {
        workspace,
        access: grant.as_ref().map_or(Access::ReadWrite, |g| g.access),
        author: grant.as_ref().map(crate::http::auth::author_of),
    };
    Ok((first, bound, token.filter(|_| grant.is_some())))
}

/// A JSON-RPC error answering `id`, as one line.
fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut line = serde_json::to_vec(&error).expect("a JSON value serialises");
    line.push(b'\n');
    line
}
