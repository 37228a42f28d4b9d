//! `/ui`: a small read-only page to look at a workspace (search, a node's observations and
//! neighbourhood drawn as a graph, the consolidation report, the indexer's state), and the
//! JSON API under `/ui/api` it reads. The page and its graph library (cytoscape.js, vendored
//! from npm) are compiled into the binary: no CDN. The API binds to `X-Memory-Workspace` and
//! checks tokens exactly as the MCP routes do; the static files need neither, so the page can
//! load and ask for a token.

use axum::Router;
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use engram_domain::{Error, ReportOptions, SearchMode};
use serde::Deserialize;
use serde_json::json;

use super::auth::Grant;
use super::binding::Binder;

const INDEX: &str = include_str!("../../ui/index.html");
const APP: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/style.css");
/// cytoscape.js 3.34.4 (MIT, The Cytoscape Consortium), `dist/cytoscape.min.js` of the npm
/// package, its licence in its first lines.
const CYTOSCAPE: &str = include_str!("../../ui/vendor/cytoscape.min.js");

/// The viewer's Content-Security-Policy: its own scripts only (no inline script, no eval),
/// inline styles for the graph library's canvas, requests to its own API only, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page and its assets (no token needed to load them).
pub fn assets() -> Router {
    let file = |body: &'static str, kind: &'static str| {
        get(move || async move {
            (
                [
                    (header::CONTENT_TYPE, kind),
                    (header::CACHE_CONTROL, "no-cache"),
                    // Only the page's own script and styles run, nothing frames it, and
                    // nothing is sniffed as another type.
                    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
                    (header::X_FRAME_OPTIONS, "DENY"),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                    (header::REFERRER_POLICY, "no-referrer"),
                ],
                body,
            )
        })
    };
    Router::new()
        // Whoever opens the server's address in a browser lands on the viewer.
        .route("/", get(|| async { axum::response::Redirect::to("/ui") }))
        .route("/ui", file(INDEX, "text/html; charset=utf-8"))
        .route("/ui/", file(INDEX, "text/html; charset=utf-8"))
        .route("/ui/app.js", file(APP, "text/javascript; charset=utf-8"))
        .route("/ui/style.css", file(STYLE, "text/css; charset=utf-8"))
        .route(
            "/ui/vendor/cytoscape.min.js",
            file(CYTOSCAPE, "text/javascript; charset=utf-8"),
        )
}

/// The JSON API the page reads, behind the same token and workspace checks as `/mcp`.
pub fn api(binder: Binder) -> Router {
    Router::new()
        .route("/ui/api/workspaces", get(workspaces))
        .route("/ui/api/search", get(search))
        .route("/ui/api/node", get(node))
        .route("/ui/api/report", get(report))
        .route("/ui/api/indexer", get(indexer))
        .with_state(binder)
}

/// A domain error as the API's answer: the status that fits and `{"error": message}`.
fn failure(error: &Error) -> Response {
    let status = match error {
        Error::NotFound { .. } => StatusCode::NOT_FOUND,
        Error::InvalidArgument { .. } => StatusCode::BAD_REQUEST,
        Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ if error.is_caller_error() => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, axum::Json(json!({"error": error.to_string()}))).into_response()
}

/// The workspace the request names in `X-Memory-Workspace`, checked against its token (the
/// same refusals as `/mcp`).
struct Viewed(engram_domain::Workspace);

impl FromRequestParts<Binder> for Viewed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, binder: &Binder) -> Result<Self, Response> {
        let grant = parts.extensions.get::<Grant>();
        let bound = binder.resolve(&parts.headers, grant).await?;
        Ok(Self(bound.0))
    }
}

/// Every workspace the request may look at: the token's, or all without tokens.
async fn workspaces(State(binder): State<Binder>, request: Request) -> Response {
    if let Some(Grant(token)) = request.extensions().get::<Grant>() {
        return axum::Json(json!({"workspaces": [{"name": token.workspace}]})).into_response();
    }
    match binder.memory().list_workspaces().await {
        Ok(list) => {
            let names: Vec<_> = list
                .iter()
                .map(|w| json!({"name": w.workspace.name, "node_count": w.node_count}))
                .collect();
            axum::Json(json!({"workspaces": names})).into_response()
        }
        Err(error) => failure(&error),
    }
}

#[derive(Deserialize)]
struct SearchQuery {
    q: String,
    #[serde(default = "default_limit")]
    limit: u32,
    /// As `search_nodes`' (the default leaves out what is unlikely to be relevant).
    min_score: Option<f64>,
}

fn default_limit() -> u32 {
    20
}

async fn search(
    State(binder): State<Binder>,
    Viewed(workspace): Viewed,
    Query(query): Query<SearchQuery>,
) -> Response {
    let memory = binder.memory();
    let (q, limit, min_score) = (&query.q, query.limit, query.min_score);
    match (memory.search_nodes(workspace.id, q, limit, SearchMode::Hybrid, min_score)).await {
        Ok(found) => axum::Json(found).into_response(),
        Err(error) => failure(&error),
    }
}

#[derive(Deserialize)]
struct NodeQuery {
    name: String,
}

/// A node in full and its neighbourhood one hop out.
async fn node(
    State(binder): State<Binder>,
    Viewed(workspace): Viewed,
    Query(query): Query<NodeQuery>,
) -> Response {
    let memory = binder.memory();
    let opened = match memory
        .open_nodes(workspace.id, std::slice::from_ref(&query.name))
        .await
    {
        Ok(opened) => opened,
        Err(error) => return failure(&error),
    };
    let Some(node) = opened.entities.into_iter().next() else {
        return failure(&Error::node_not_found(query.name));
    };
    match memory.get_neighborhood(workspace.id, &node.name, 1).await {
        Ok(neighborhood) => {
            axum::Json(json!({"node": node, "neighborhood": neighborhood})).into_response()
        }
        Err(error) => failure(&error),
    }
}

async fn report(State(binder): State<Binder>, Viewed(workspace): Viewed) -> Response {
    match (binder.memory())
        .get_consolidation_report(workspace.id, ReportOptions::default())
        .await
    {
        Ok(report) => axum::Json(report).into_response(),
        Err(error) => failure(&error),
    }
}

/// The indexer's state for the workspace: coverage and what remains.
async fn indexer(State(binder): State<Binder>, Viewed(workspace): Viewed) -> Response {
    let memory = binder.memory();
    let (stats, pairs) = match tokio::try_join!(
        memory.get_stats(workspace.id),
        memory.store().embedding_pairs(workspace.id),
    ) {
        Ok(both) => both,
        Err(error) => return failure(&error),
    };
    let rejected = memory.rejected_texts(workspace.id);
    let embedded = (stats.embedding_coverage * pairs as f64).round() as u64;
    axum::Json(json!({
        "model": memory.embedder().map(|e| e.model_id()),
        "embedding_coverage": stats.embedding_coverage,
        "pairs": pairs,
        "pairs_embedded": embedded,
        "backlog": pairs.saturating_sub(embedded),
        "nodes": stats.node_count,
        "observations": stats.observation_count,
        "relations": stats.relation_count,
        "failed_texts": rejected,
    }))
    .into_response()
}
