//! Bearer tokens on the MCP routes (`/mcp`, `/sse` and its messages) when the server requires
//! them: every request carries `Authorization: Bearer engram_…`, checked against the store on
//! every request (so a revocation by any process takes effect at once). A missing, malformed,
//! unknown, revoked or expired token is 401 with the same words for each, so a guesser learns
//! nothing; the token's grant goes on in the request's extensions for the workspace binding
//! (403 for another workspace) and the tools (read-only tokens call read tools only). An
//! address whose tokens fail [`FAILED_CHECKS_PER_WINDOW`] times in a minute gets 429 for the
//! rest of it; failed checks are logged (never the token).

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use engram_domain::Memory;
use engram_domain::auth::TokenInfo;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::oauth::{OAuth, Refused};
use super::refusal::refuse;
use super::sessions::ClientAddress;

/// What the auth middleware knows.
#[derive(Clone)]
pub struct Auth {
    pub memory: Memory,
    pub required: bool,
    /// Failed token checks per client address in the current window.
    pub failures: Arc<Mutex<HashMap<IpAddr, Failures>>>,
    /// OAuth access tokens accepted beside engram's own, when configured.
    pub oauth: Option<OAuth>,
}

/// Failed token checks an address may make in a [`FAILURE_WINDOW`]; past them its requests
/// get 429 until the window ends (a guesser is slowed to this rate).
pub const FAILED_CHECKS_PER_WINDOW: u32 = 20;
/// The window of [`FAILED_CHECKS_PER_WINDOW`].
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; older windows are forgotten first.
const REMEMBERED_ADDRESSES: usize = 10_000;

/// One address's failed checks since `since`.
#[derive(Debug, Clone, Copy)]
pub struct Failures {
    since: Instant,
    count: u32,
}

impl Auth {
    /// How long `address` must wait before its token is checked again, if it must.
    fn throttled(&self, address: IpAddr) -> Option<Duration> {
        let failures = self.failures.lock().expect("auth failures lock");
        let entry = failures.get(&address)?;
        let left = FAILURE_WINDOW.checked_sub(entry.since.elapsed())?;
        (entry.count >= FAILED_CHECKS_PER_WINDOW).then_some(left)
    }

    /// Counts a failed check from `address`, and logs it (once the limit is reached, once).
    fn failed(&self, address: IpAddr) {
        let mut failures = self.failures.lock().expect("auth failures lock");
        if failures.len() >= REMEMBERED_ADDRESSES {
            failures.retain(|_, f| f.since.elapsed() < FAILURE_WINDOW);
        }
        let entry = failures.entry(address).or_insert(Failures {
            since: Instant::now(),
            count: 0,
        });
        if entry.since.elapsed() >= FAILURE_WINDOW {
            *entry = Failures {
                since: Instant::now(),
                count: 0,
            };
        }
        entry.count += 1;
        if entry.count == FAILED_CHECKS_PER_WINDOW {
            tracing::warn!(%address, failed = entry.count, "refusing token checks from this address for the rest of the minute");
        } else if entry.count < FAILED_CHECKS_PER_WINDOW {
            tracing::info!(%address, failed = entry.count, "a token check failed");
        }
    }
}

/// The token a request was authenticated with, in its extensions.
#[derive(Debug, Clone)]
pub struct Grant(pub TokenInfo);

/// Who a grant's calls write as: its label (an OAuth token's is its subject), else `token ID`.
pub(crate) fn author_of(info: &TokenInfo) -> engram_mcp::Author {
    let author = match info.label.as_deref() {
        Some(label) if !label.trim().is_empty() => label.to_owned(),
        _ => format!("token {}", info.id),
    };
    engram_mcp::Author(author.into())
}

/// The token of an `Authorization: Bearer …` header, if the request has one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    (headers.get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// Middleware: authenticates the request when tokens are required, or passes it on.
pub async fn authenticate(State(auth): State<Auth>, mut request: Request, next: Next) -> Response {
    if !auth.required {
        return next.run(request).await;
    }
    let presented = bearer(request.headers());
    let address = request.extensions().get::<ClientAddress>().map(|a| a.0);
    if let Some(wait) = address.and_then(|a| auth.throttled(a)) {
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too many failed token checks from this address; wait and retry".into(),
        );
        let seconds = wait.as_secs().max(1).to_string();
        if let Ok(value) = HeaderValue::from_str(&seconds) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let now = chrono::Utc::now();
    if let (Some(oauth), Some(token)) = (&auth.oauth, presented)
        && !token.starts_with(engram_domain::auth::TOKEN_PREFIX)
    {
        let token = token.to_owned();
        return with_oauth(&auth, oauth, &token, address, request, next).await;
    }
    let granted = match presented {
        Some(token) => auth.memory.authenticate(token, now).await,
        None => Ok(None),
    };
    if let (Ok(None), Some(_), Some(address)) = (&granted, presented, address) {
        auth.failed(address);
    }
    match granted {
        Ok(Some(info)) => {
            request.extensions_mut().insert(info.access);
            request.extensions_mut().insert(author_of(&info));
            request.extensions_mut().insert(Grant(info));
            next.run(request).await
        }
        Ok(None) => unauthorized(auth.oauth.as_ref(), None),
        Err(error) => {
            tracing::error!(%error, "checking a token failed");
            refuse(StatusCode::SERVICE_UNAVAILABLE, error.for_clients())
        }
    }
}

/// A request with an OAuth access token: its grant in the workspace the request names, or
/// the refusal (401 `invalid_token`, 403 `insufficient_scope`, 503 without the issuer's keys).
async fn with_oauth(
    auth: &Auth,
    oauth: &OAuth,
    token: &str,
    address: Option<IpAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let workspace = (request.headers().get(super::binding::WORKSPACE_HEADER))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    match oauth.check(token, &workspace).await {
        Ok(grant) => {
            let info = TokenInfo {
                id: "oauth".into(),
                workspace,
                // The routes OAuth tokens reach read the workspace's name (the binding
                // resolves it); only the metrics listener reads the id, and it takes
                // engram's own tokens.
                workspace_id: engram_domain::WorkspaceId(0),
                access: grant.access,
                label: Some(grant.subject),
                created_at: chrono::Utc::now(),
                expires_at: grant.expires_at,
                revoked_at: None,
            };
            request.extensions_mut().insert(info.access);
            request.extensions_mut().insert(author_of(&info));
            request.extensions_mut().insert(Grant(info));
            next.run(request).await
        }
        Err(Refused::Invalid(reason)) => {
            tracing::info!(%reason, "an OAuth access token was refused");
            if let Some(address) = address {
                auth.failed(address);
            }
            unauthorized(Some(oauth), Some("error=\"invalid_token\""))
        }
        Err(Refused::Scope) => {
            let response = refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "the token's scopes do not grant workspace {workspace:?}: it needs \
                     `engram:{workspace}` (or `engram:{workspace}:read` to read)"
                ),
            );
            let error = format!("error=\"insufficient_scope\", scope=\"engram:{workspace}\"");
            challenged(response, Some(oauth), Some(&error))
        }
        Err(Refused::KeysUnavailable(reason)) => refuse(StatusCode::SERVICE_UNAVAILABLE, reason),
    }
}

/// 401, with the challenge naming the resource's metadata when OAuth is configured.
fn unauthorized(oauth: Option<&OAuth>, error: Option<&str>) -> Response {
    let response = refuse(
        StatusCode::UNAUTHORIZED,
        "this server requires a valid token: send `Authorization: Bearer <token>` (tokens come \
         from `engram token create --workspace NAME`, or from the authorization server its \
         /.well-known/oauth-protected-resource names)"
            .into(),
    );
    challenged(response, oauth, error)
}

/// `response` with `WWW-Authenticate: Bearer realm="engram"`, then `error` (its RFC 6750
/// parameters) and the resource's metadata when OAuth is configured.
fn challenged(mut response: Response, oauth: Option<&OAuth>, error: Option<&str>) -> Response {
    let mut challenge = "Bearer realm=\"engram\"".to_owned();
    if let Some(error) = error {
        challenge.push_str(", ");
        challenge.push_str(error);
    }
    if let Some(oauth) = oauth {
        challenge.push_str(&format!(", resource_metadata=\"{}\"", oauth.metadata_url()));
    }
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
