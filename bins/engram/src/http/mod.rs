//! The HTTP server: Streamable HTTP at `/mcp`, the legacy SSE transport at `/sse`, the
//! viewer at `/ui` (and its JSON API), and `/healthz`, behind the Host/Origin guard, the tokens (when required) and the workspace
//! binding.

mod auth;
mod binding;
mod guard;
pub mod metrics;
mod sse;
mod ui;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use engram_domain::Memory;
use engram_mcp::{Binding, EngramServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use binding::WORKSPACE_HEADER;
pub use guard::Guard;

/// The largest request body accepted on `/sse/messages/`: a full batch of 1,000 observations
/// of 64 KiB, with room for JSON.
const MAX_BODY_BYTES: usize = 80 * 1024 * 1024;

/// The whole HTTP application. `shutdown` ends open streams and sessions when cancelled.
pub fn router(memory: Memory, guard: Guard, shutdown: CancellationToken) -> Router {
    let binder = binding::Binder::new(memory.clone());
    let factory_memory = memory.clone();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        // Host and Origin are checked once for every route by `guard::check`.
        .disable_allowed_hosts();
    let streamable = StreamableHttpService::new(
        move || {
            Ok(EngramServer::new(
                factory_memory.clone(),
                Binding::PerRequest,
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp =
        Router::new()
            .route_service("/mcp", streamable)
            .layer(middleware::from_fn_with_state(
                binder.clone(),
                binding::bind,
            ));
    let ui_api = ui::api(binder.clone());
    let sse = Router::new()
        .route("/sse", get(sse::connect))
        .route("/sse/messages/", post(sse::post_message))
        .route("/sse/messages", post(sse::post_message))
        .with_state(sse::SseState {
            binder,
            sessions: sse::SseSessions::default(),
            shutdown,
        });
    let auth = auth::Auth {
        memory: memory.clone(),
        required: guard.require_auth,
    };
    let guarded = (mcp.merge(sse).merge(ui_api))
        .layer(middleware::from_fn_with_state(auth, auth::authenticate))
        // The page itself needs no token (it asks for one); its API does.
        .merge(ui::assets())
        .layer(middleware::from_fn_with_state(
            Arc::new(guard),
            guard::check,
        ));
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(memory)
        .merge(guarded)
}

/// `GET /healthz`: 200 when the database answers and its schema is current, else 503.
async fn healthz(State(memory): State<Memory>) -> impl IntoResponse {
    match memory.health().await {
        Ok(()) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({"status": "ok"})),
        ),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({"status": "unavailable", "error": error.to_string()})),
        ),
    }
}

/// Serves [`router`] on `listener` until `shutdown` completes; then stops accepting, ends the
/// open streams and sessions, and lets in-flight requests finish.
pub async fn serve(
    memory: Memory,
    guard: Guard,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = CancellationToken::new();
    let app = router(memory, guard, token.clone());
    // Small JSON answers must not wait for Nagle's algorithm and the client's delayed ACK
    // (measured: 44 ms per call on a kept-alive connection without this).
    let listener = listener.tap_io(|stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            token.cancel();
        })
        .await
}
