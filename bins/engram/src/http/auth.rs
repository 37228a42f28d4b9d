//! Bearer tokens on the MCP routes (`/mcp`, `/sse` and its messages) when the server requires
//! them: every request carries `Authorization: Bearer engram_…`, checked against the store on
//! every request (so a revocation by any process takes effect at once). A missing, malformed,
//! unknown, revoked or expired token is 401 with the same words for each, so a guesser learns
//! nothing; the token's grant goes on in the request's extensions for the workspace binding
//! (403 for another workspace) and the tools (read-only tokens call read tools only).

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use engram_domain::Memory;
use engram_domain::auth::TokenInfo;

use super::binding::refuse;

/// What the auth middleware knows.
#[derive(Clone)]
pub struct Auth {
    pub memory: Memory,
    pub required: bool,
}

/// The token a request was authenticated with, in its extensions.
#[derive(Debug, Clone)]
pub struct Grant(pub TokenInfo);

/// Middleware: authenticates the request when tokens are required, or passes it on.
pub async fn authenticate(State(auth): State<Auth>, mut request: Request, next: Next) -> Response {
    if !auth.required {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let now = chrono::Utc::now();
    let granted = match presented {
        Some(token) => auth.memory.authenticate(token, now).await,
        None => Ok(None),
    };
    match granted {
        Ok(Some(info)) => {
            request.extensions_mut().insert(info.access);
            request.extensions_mut().insert(Grant(info));
            next.run(request).await
        }
        Ok(None) => unauthorized(),
        Err(error) => {
            tracing::error!(%error, "checking a token failed");
            refuse(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
        }
    }
}

fn unauthorized() -> Response {
    let mut response = refuse(
        StatusCode::UNAUTHORIZED,
        "this server requires a valid token: send `Authorization: Bearer <token>` (tokens come \
         from `engram token create --workspace NAME`)"
            .into(),
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"engram\""),
    );
    response
}
