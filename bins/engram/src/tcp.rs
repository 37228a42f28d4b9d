//! `engram serve --tcp ADDR`: MCP as newline-delimited JSON-RPC over TCP, the transport of the
//! reference systems (`shared/reference/003`): one JSON-RPC message per line each way, the same
//! tools, tokens and workspaces as HTTP.
//!
//! A connection binds itself with its first message, `initialize`, whose `params._meta` carries
//! what an HTTP request carries in its headers: `authorization` (`"Bearer TOKEN"`) and
//! `x-memory-workspace` (the workspace's name). Without `x-memory-workspace` the connection
//! works in its token's workspace, or without a token in `engram serve --workspace`. Tokens are
//! required as on HTTP: when `--require-auth` is given or the address is not loopback, unless
//! `--insecure-no-auth`. A refused `initialize` is answered with a JSON-RPC error naming the
//! fix, and the connection is closed.
//!
//! At most [`MAX_CONNECTIONS`] connections are served at once (one more is told so and closed);
//! a line longer than `--max-body-bytes` is answered with an error and ends its connection; a
//! line that is no JSON-RPC message is answered with a parse error and the connection goes on.

use std::sync::Arc;

use engram_domain::{Error, Memory, Workspace};
use engram_mcp::{Access, Author, Binding, EngramServer, ToolSet};
use futures::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

/// Most connections served at once (the reference systems' bound).
pub const MAX_CONNECTIONS: usize = 128;

/// JSON-RPC's code for a line that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request (here: the first one is no
/// `initialize`, or a line is too long).
const INVALID_REQUEST: i64 = -32600;
/// The code of a refused binding: no token, a wrong token, a workspace the token does not
/// grant or that does not exist (JSON-RPC's range for a server's own errors).
const REFUSED: i64 = -32001;
/// Lines queued for a connection's socket; a client that does not read holds the server back
/// (TCP's own backpressure), not its memory.
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
    /// The longest line read, in bytes (`--max-body-bytes`).
    pub max_line_bytes: usize,
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
                tracing::warn!(%error, "accepting a tcp connection failed");
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, "refusing a tcp connection: {MAX_CONNECTIONS} are open");
            tokio::spawn(async move {
                let message = format!(
                    "this server holds {MAX_CONNECTIONS} connections already; try again later"
                );
                let _ = stream
                    .write_all(&error_line(&Value::Null, REFUSED, &message))
                    .await;
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
/// [`EngramServer`] until either side closes.
async fn connection(stream: TcpStream, serving: &TcpServing, stop: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let (read, mut write) = stream.into_split();
    let mut lines = FramedRead::new(
        read,
        LinesCodec::new_with_max_length(serving.max_line_bytes),
    );
    let (out, mut queued) = tokio::sync::mpsc::channel::<Vec<u8>>(QUEUED_LINES);
    let writer = tokio::spawn(async move {
        while let Some(line) = queued.recv().await {
            if write.write_all(&line).await.is_err() {
                return;
            }
        }
        let _ = write.shutdown().await;
    });
    let bound = match next_message(&mut lines, &out, serving.max_line_bytes).await {
        Some((first, raw)) => bind(serving, &raw).await.map(|bound| (first, bound)),
        None => Err(None),
    };
    let (first, bound) = match bound {
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
    let server = EngramServer::new(serving.memory.clone(), Binding::Fixed(bound.workspace))
        .with_tools(&serving.tools)
        .with_access(bound.access)
        .with_author(bound.author);
    let (mut to_server, from_client) = futures::channel::mpsc::channel(QUEUED_LINES);
    let max_line_bytes = serving.max_line_bytes;
    let replies = out.clone();
    let reader = tokio::spawn(async move {
        if to_server.send(first).await.is_err() {
            return;
        }
        while let Some((message, _)) = next_message(&mut lines, &replies, max_line_bytes).await {
            if to_server.send(message).await.is_err() {
                return;
            }
        }
    });
    let to_client = Box::pin(futures::sink::unfold(
        out,
        |out, message: ServerJsonRpcMessage| async move {
            let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            line.push(b'\n');
            out.send(line)
                .await
                .map_err(|_| std::io::Error::other("the connection is closed"))?;
            Ok::<_, std::io::Error>(out)
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

/// The next JSON-RPC message of `lines` with its JSON; a line that is none is answered with a
/// parse error on `out` and skipped, blank lines are skipped. `None` at the end of the
/// connection, or after a line over `max_line_bytes` (answered first: the rest of that line
/// cannot be told from the next).
async fn next_message(
    lines: &mut FramedRead<tokio::net::tcp::OwnedReadHalf, LinesCodec>,
    out: &tokio::sync::mpsc::Sender<Vec<u8>>,
    max_line_bytes: usize,
) -> Option<(ClientJsonRpcMessage, Value)> {
    loop {
        let line = match lines.next().await? {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                let message = format!(
                    "a line is over {max_line_bytes} bytes (--max-body-bytes); the connection \
                     is closed"
                );
                let _ = out
                    .send(error_line(&Value::Null, INVALID_REQUEST, &message))
                    .await;
                return None;
            }
            Err(LinesCodecError::Io(_)) => return None,
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<Value>(&line).and_then(|raw| {
            let message = serde_json::from_value::<ClientJsonRpcMessage>(raw.clone())?;
            Ok((message, raw))
        });
        match parsed {
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

/// The binding the first message `raw` asks for, or the error line refusing it.
async fn bind(serving: &TcpServing, raw: &Value) -> Result<Bound, Option<Vec<u8>>> {
    let id = raw.get("id").cloned().unwrap_or(Value::Null);
    let refuse = |code, message: &str| Some(error_line(&id, code, message));
    if raw.get("method").and_then(Value::as_str) != Some("initialize") {
        return Err(refuse(
            INVALID_REQUEST,
            "the first message of a connection is `initialize`; its params._meta may carry \
             `authorization` (\"Bearer TOKEN\") and `x-memory-workspace`",
        ));
    }
    let meta = raw.pointer("/params/_meta");
    let field = |name: &str| meta.and_then(|m| m.get(name)).and_then(Value::as_str);
    let token = field("authorization").map(|value| {
        let value = value.trim();
        (value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer ")))
        .unwrap_or(value)
        .trim()
    });
    let grant = match (serving.require_auth, token) {
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
    Ok(Bound {
        workspace,
        access: grant.as_ref().map_or(Access::ReadWrite, |g| g.access),
        author: grant.as_ref().map(crate::http::auth::author_of),
    })
}

/// A JSON-RPC error answering `id`, as one line.
fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut line = serde_json::to_vec(&error).expect("a JSON value serialises");
    line.push(b'\n');
    line
}
