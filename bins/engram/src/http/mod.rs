//! The HTTP server: Streamable HTTP at `/mcp`, the legacy SSE transport at `/sse`, the
//! viewer at `/ui` (and its JSON API), and `/healthz`, behind the Host/Origin guard, the tokens (when required) and the workspace
//! binding.

pub(crate) mod auth;
mod binding;
pub mod forwarded;
mod framing;
mod guard;
mod json_answer;
mod json_shape;
pub mod metrics;
pub mod oauth;
mod refusal;
mod sessions;
mod sse;
mod stopping;
mod ui;
mod unread;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use engram_domain::Memory;
use engram_mcp::{Binding, EngramServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use auth::{FAILED_CHECKS_PER_WINDOW, FAILURE_WINDOW};
pub use binding::WORKSPACE_HEADER;
pub use guard::{Guard, MAX_BODY_BYTES};
pub use sessions::{MAX_SESSIONS, MAX_SESSIONS_PER_ADDRESS, SESSION_IDLE, SessionLimits};
pub use unread::{MAX_UNREAD_BYTES, MAX_UNREAD_BYTES_PER_SESSION, UnreadBudget};

/// The whole HTTP application and its Streamable HTTP sessions. `shutdown` ends open streams
/// and sessions when cancelled; `calls` counts every tool call while it runs.
fn router(
    memory: Memory,
    guard: Guard,
    shutdown: CancellationToken,
    calls: TaskTracker,
) -> (Router, Arc<LocalSessionManager>) {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(guard.sessions.idle);
    // rmcp keeps each answered request's events for a client that reconnects to resume them;
    // 60 s by default holds every large answer a minute after it was sent.
    manager.session_config.completed_cache_ttl = ANSWERS_KEPT_FOR_RESUMING;
    let manager = Arc::new(manager);
    let sessions = manager.clone();
    let counter = sessions::SessionCounter::new(guard.sessions);
    let binder = binding::Binder::new(memory.clone(), counter, manager.clone());
    let factory_memory = memory.clone();
    let factory_tools = guard.tools.clone();
    let factory_calls = calls.clone();
    let trusted_proxies = guard.trusted_proxies.clone();
    let body = binding::BodyLimits::new(guard.max_body_bytes, guard.body_read_timeout);
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(guard.max_body_bytes)
        // Host and Origin are checked once for every route by `guard::check`.
        .disable_allowed_hosts();
    let streamable = StreamableHttpService::new(
        move || {
            Ok(
                EngramServer::new(factory_memory.clone(), Binding::PerRequest)
                    .with_tools(&factory_tools)
                    .with_call_tracker(factory_calls.clone()),
            )
        },
        manager,
        config,
    );
    // One budget of unread answers for both transports.
    let unread_all = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mcp = Router::new()
        .route_service("/mcp", streamable)
        .layer(middleware::from_fn(json_answer::prefer_json))
        .layer(middleware::from_fn_with_state(
            calls.clone(),
            stopping::count_posts,
        ))
        .layer(middleware::from_fn_with_state(
            unread::AnswerLedger::new(guard.unread, unread_all.clone()),
            unread::count_answers,
        ))
        .layer(middleware::from_fn_with_state(
            binder.clone(),
            binding::bind,
        ))
        .layer(middleware::from_fn_with_state(
            binding::JsonCheck::new(body.clone()),
            binding::check_json,
        ));
    let ui_api = ui::api(binder.clone());
    let sse = Router::new()
        .route("/sse", get(sse::connect))
        .route("/sse/messages/", post(sse::post_message))
        .route("/sse/messages", post(sse::post_message))
        .with_state(sse::SseState {
            binder,
            sessions: sse::SseSessions::counting_into(unread_all),
            shutdown,
            calls,
            body,
            tools: guard.tools.clone(),
            unread: guard.unread,
        });
    let oauth = guard.oauth.clone().map(oauth::OAuth::new);
    let auth = auth::Auth {
        memory: memory.clone(),
        required: guard.require_auth || oauth.is_some(),
        oauth: oauth.clone(),
        failures: Arc::default(),
    };
    let app = (mcp.merge(sse).merge(ui_api))
        .layer(middleware::from_fn_with_state(auth, auth::authenticate))
        // The page itself needs no token (it asks for one); its API does. Without tokens the
        // page carries its first view.
        .merge(ui::assets((!guard.require_auth).then(|| memory.clone())))
        // The protected resource's metadata (RFC 9728): no token, as a client without one
        // reads it to learn where to get one.
        .merge(
            Router::new()
                .route(
                    "/.well-known/oauth-protected-resource",
                    get(resource_metadata),
                )
                .route(
                    "/.well-known/oauth-protected-resource/{*path}",
                    get(resource_metadata),
                )
                .with_state(oauth),
        )
        // A health probe needs no token, but passes the Host check like everything else.
        .merge(
            Router::new()
                .route("/healthz", get(healthz))
                .with_state(memory),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            Arc::new(guard),
            guard::check,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::new(trusted_proxies),
            forwarded::resolve,
        ));
    (app, sessions)
}

/// `GET /.well-known/oauth-protected-resource[/…]`: the metadata when OAuth is configured,
/// else 404.
async fn resource_metadata(State(oauth): State<Option<oauth::OAuth>>) -> axum::response::Response {
    match oauth {
        Some(oauth) => axum::Json(oauth.metadata()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "this server accepts no OAuth access tokens (start it with --oauth-issuer)\n",
        )
            .into_response(),
    }
}

/// Any other path: 404 saying where engram serves what (a client configured with
/// `/mcp/` or `/sse/` learns the path it meant).
async fn not_found(uri: axum::http::Uri) -> impl IntoResponse {
    let path = uri.path();
    let meant = match path.trim_end_matches('/') {
        "/mcp" => " (without the trailing slash)",
        "/sse" => " (without the trailing slash)",
        _ => "",
    };
    (
        StatusCode::NOT_FOUND,
        format!(
            "no such path: {path}{meant}. engram serves MCP at /mcp (Streamable HTTP) and /sse \
             (legacy SSE), the viewer at /ui, health at /healthz\n"
        ),
    )
}

/// `GET /healthz`: 200 when the database answers and its schema is current, else 503. The
/// reason is logged, not answered: a probe learns nothing about the database.
async fn healthz(State(memory): State<Memory>) -> impl IntoResponse {
    match memory.health().await {
        Ok(()) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({"status": "ok"})),
        ),
        Err(error) => {
            tracing::warn!(%error, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({"status": "unavailable"})),
            )
        }
    }
}

/// Connections served at once; more wait in the listen backlog until one closes.
pub const MAX_CONNECTIONS: usize = 512;
/// The default of [`Guard::max_connections_per_address`]: connections served at once from one
/// client address, so one client cannot take them all.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;
/// How long a Streamable HTTP session keeps an answered request's events for a client that
/// reconnects with `Last-Event-ID` to resume them.
pub const ANSWERS_KEPT_FOR_RESUMING: Duration = Duration::from_secs(10);

/// The default of [`Guard::body_read_timeout`].
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a request's headers before the connection is closed
/// (a half-sent request holds a connection no longer than this).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves [`router`] on `listener` until `shutdown` completes; then stops accepting, ends the
/// open streams and sessions, and lets in-flight requests finish.
///
/// At most [`MAX_CONNECTIONS`] connections at once and [`Guard::max_connections_per_address`]
/// from one address (over it, a connection is closed at once), each allowed
/// [`HEADER_READ_TIMEOUT`] to send its headers.
pub async fn serve(
    memory: Memory,
    guard: Guard,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto;

    let token = CancellationToken::new();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::spawn(give_memory_back(token.clone()));
    let (per_address_cap, trusted, drain) = (
        guard.max_connections_per_address,
        guard.trusted_proxies.clone(),
        guard.drain,
    );
    let draining = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let calls = TaskTracker::new();
    let (app, sessions) = router(memory, guard, token.clone(), calls.clone());
    let app = app.layer(middleware::from_fn_with_state(
        draining.clone(),
        refuse_while_draining,
    ));
    // Completes when the server should stop accepting: `shutdown`, then `drain` more while
    // everything new is refused.
    let shutdown = {
        let draining = draining.clone();
        async move {
            shutdown.await;
            if !drain.is_zero() {
                draining.store(true, std::sync::atomic::Ordering::Release);
                tracing::info!(
                    seconds = drain.as_secs_f64(),
                    "draining: new requests get 503"
                );
                tokio::time::sleep(drain).await;
            }
        }
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let per_address = sessions::AddressCounts::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // The total is the semaphore's: over it a connection waits in the backlog. A trusted
        // proxy carries many clients: its connections are not capped per address.
        let cap = if trusted.contains(&peer.ip()) {
            usize::MAX
        } else {
            per_address_cap
        };
        let Ok(held) = per_address.take(Some(peer.ip()), cap, usize::MAX) else {
            tracing::warn!(address = %peer.ip(), "refusing a connection: too many from one address");
            continue;
        };
        // Small JSON answers must not wait for Nagle's algorithm and the client's delayed
        // ACK (measured: 44 ms per call on a kept-alive connection without this).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let framing = framing::Framing::new();
        let app = app
            .clone()
            .layer(middleware::from_fn(framing::refuse_both_framings))
            .layer(axum::Extension(framing.clone()))
            .layer(axum::Extension(forwarded::Peer(peer.ip())));
        let service = hyper_util::service::TowerToHyperService::new(app);
        let stream = framing::Watched::new(stream, framing);
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop((slot, held));
        });
    }
    // The calls in flight finish and are answered (new requests get 503 meanwhile); then
    // streams and sessions end, and rmcp's session workers close their transports: returning
    // before they have would cancel them halfway (an error in the log for each).
    draining.store(true, std::sync::atomic::Ordering::Release);
    calls.close();
    if tokio::time::timeout(CALLS_FINISH, calls.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            calls = calls.len(),
            "stopping with tool calls still running after {CALLS_FINISH:?}: they are cut off"
        );
    }
    token.cancel();
    graceful.shutdown().await;
    let closed = async {
        while !sessions.sessions.read().await.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(SESSIONS_CLOSE, closed).await;
    Ok(())
}

/// How long a stopping server waits for the tool calls in flight: the longest a call may
/// take ([`engram_domain::limits::CALL_TIMEOUT`]).
const CALLS_FINISH: Duration = engram_domain::limits::CALL_TIMEOUT;
/// How long a stopping server waits for its sessions to close once they were told to.
const SESSIONS_CLOSE: Duration = Duration::from_secs(2);

/// Middleware (outermost): while the server drains, every request (`/healthz` too) is
/// refused with 503, `Connection: close` and `Retry-After: 1`, so a balancer stops sending
/// here and its clients go elsewhere.
async fn refuse_while_draining(
    State(draining): State<Arc<std::sync::atomic::AtomicBool>>,
    request: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    if !draining.load(std::sync::atomic::Ordering::Acquire) {
        return next.run(request).await;
    }
    let message = "draining: this engram process is stopping; send the request again";
    let mut response = refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, message.to_owned());
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    headers.insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    response
}

/// How often freed memory is handed back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_EVERY: Duration = Duration::from_secs(10);

/// Hands memory the server freed back to the system every [`TRIM_EVERY`] until `stop`:
/// glibc keeps freed chunks in its arenas, so after a burst of large answers (a client asking
/// for 4 MB answers it never reads) the resident size would stay at its peak.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
async fn give_memory_back(stop: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(TRIM_EVERY) => {}
            () = stop.cancelled() => return,
        }
        // SAFETY: `malloc_trim` only returns free memory of glibc's arenas to the system; it
        // takes the arenas' locks itself and may run beside any other thread.
        let _ = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
    }
}
