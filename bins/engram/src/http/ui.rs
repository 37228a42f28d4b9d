//! `/ui`: a small read-only page to look at a workspace (an overview first, search, a node's
//! observations and neighbourhood drawn as a graph, the consolidation report, the indexer's
//! state), and the JSON API under `/ui/api` it reads. The page and its graph library (cytoscape.js, vendored
//! from npm) are compiled into the binary: no CDN. The API binds to `X-Memory-Workspace` and
//! checks tokens exactly as the MCP routes do; the static files need neither, so the page can
//! load and ask for a token.

use axum::Router;
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::collections::{HashMap, HashSet};

use engram_domain::GetStats;
use engram_domain::transfer::{GraphPageQuery, RelationRecord};
use engram_domain::{
    Error, GetConsolidationReport, GetHistory, GetNeighborhood, GetRecentlyModified, Memory,
    OpenNodes, SearchNodes, WorkspaceId,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Grant;
use super::binding::Binder;

const INDEX: &str = include_str!("../../ui/index.html");
const APP: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/style.css");
/// cytoscape.js 3.34.4 (MIT, The Cytoscape Consortium), `dist/cytoscape.min.js` of the npm
/// package, its licence in its first lines.
const CYTOSCAPE: &str = include_str!("../../ui/vendor/cytoscape.min.js");
/// The page's icon, also at `/favicon.ico`, where browsers look for one.
const ICON: &str = include_str!("../../ui/icon.svg");

/// The viewer's Content-Security-Policy: its own scripts only (no inline script, no eval),
/// inline styles for the graph library's canvas, requests to its own API only, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers of every file of the viewer, of content type `kind`: only the page's own script
/// and styles run, nothing frames it, and nothing is sniffed as another type.
fn headers(kind: &'static str) -> [(header::HeaderName, &'static str); 6] {
    [
        (header::CONTENT_TYPE, kind),
        (header::CACHE_CONTROL, "no-cache"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ]
}

/// `GET /`: a browser is sent to the viewer; an MCP client opening its event stream here
/// (`Accept: text/event-stream`) learns where MCP is ([`mcp_is_elsewhere`]).
async fn root(request_headers: axum::http::HeaderMap) -> Response {
    let stream = (request_headers.get_all(header::ACCEPT).iter())
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("text/event-stream"));
    match stream {
        true => mcp_is_elsewhere().await,
        false => axum::response::Redirect::to("/ui").into_response(),
    }
}

/// A request to `/` that only `/mcp` or `/sse` answers (an MCP client whose URL lacks the
/// path: `POST /`, or its event stream): 405, allowing `GET`, with a plain body naming both.
async fn mcp_is_elsewhere() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "GET")],
        "engram serves MCP at /mcp (Streamable HTTP) and /sse (legacy SSE), not at /: add /mcp \
         to the server's URL, e.g. http://127.0.0.1:8765/mcp\n",
    )
        .into_response()
}

/// The page and its assets (no token needed to load them). With `first_view` (a server that
/// requires no token), `/ui?workspace=NAME`, or `/ui` when there is one workspace, carries that
/// workspace's overview in the page (a JSON data block the page shows at once, and the counts
/// in the status line), so the first screen waits for no request; with tokens required the
/// page carries no data.
pub fn assets(first_view: Option<Memory>) -> Router {
    let file =
        |body: &'static str, kind: &'static str| get(move || async move { (headers(kind), body) });
    Router::<()>::new()
        // Whoever opens the server's address in a browser lands on the viewer; an MCP client
        // that left `/mcp` out of the URL is told where MCP is.
        .route("/", get(root).fallback(mcp_is_elsewhere))
        .route("/ui", get(page).with_state(first_view.clone()))
        .route("/ui/", get(page).with_state(first_view))
        .route("/ui/app.js", file(APP, "text/javascript; charset=utf-8"))
        .route("/ui/style.css", file(STYLE, "text/css; charset=utf-8"))
        .route(
            "/ui/vendor/cytoscape.min.js",
            file(CYTOSCAPE, "text/javascript; charset=utf-8"),
        )
        .route("/ui/icon.svg", file(ICON, "image/svg+xml"))
        .route("/favicon.ico", file(ICON, "image/svg+xml"))
}

/// The JSON API the page reads, behind the same token and workspace checks as `/mcp`.
pub fn api(binder: Binder) -> Router {
    Router::new()
        .route("/ui/api/workspaces", get(workspaces))
        .route("/ui/api/overview", get(overview))
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
        Error::Unavailable(_) | Error::Contended(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ if error.is_caller_error() => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    if !error.is_caller_error() {
        tracing::error!(%error, "a viewer request failed");
    }
    (status, axum::Json(json!({"error": error.for_clients()}))).into_response()
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

/// How many nodes each of the overview's lists holds.
const OVERVIEW_LIST: usize = 8;
/// How many of the most connected nodes the overview's graph draws.
const OVERVIEW_GRAPH: usize = 16;
/// The overview ranks at most this many nodes (the first by name, read 1,000 a page); past
/// that its rankings are of those and it says so (`complete: false`).
const OVERVIEW_SCAN: usize = 20_000;
/// Nodes changed within this many days (the most `get_recently_modified` takes) count as recent.
const ALL_DAYS: u32 = 36_500;

/// The first screen: counts, embedding coverage, the nodes changed last, the largest nodes
/// (most observations) and the most connected ones with the relations among them.
async fn overview(State(binder): State<Binder>, Viewed(workspace): Viewed) -> Response {
    match overview_of(binder.memory(), &workspace).await {
        Ok(overview) => axum::Json(overview).into_response(),
        Err(error) => failure(&error),
    }
}

/// The `page` query: which workspace's overview the page carries.
#[derive(Deserialize)]
struct PageQuery {
    workspace: Option<String>,
}

/// `/ui`: the page, with the first view in it when `first_view` allows (see [`assets`]).
async fn page(
    State(first_view): State<Option<Memory>>,
    Query(query): Query<PageQuery>,
) -> Response {
    let mut body = INDEX.to_owned();
    if let Some(memory) = first_view
        && let Some(overview) = first_overview(&memory, query.workspace).await
    {
        // A data block, never run (the CSP allows only the page's own script files); `<`
        // escaped so that no text of the store can close it.
        let data = overview.to_string().replace('<', "\\u003c");
        let block = format!(r#"<script type="application/json" id="first-view">{data}</script>"#);
        body = body.replace("<!-- first view -->", &block);
    }
    (headers("text/html; charset=utf-8"), body).into_response()
}

/// The overview of the workspace `named`, or of the only workspace when none is named;
/// `None` when there is no such workspace or reading fails (the page then asks the API).
async fn first_overview(memory: &Memory, named: Option<String>) -> Option<Value> {
    let name = match named {
        Some(name) => name,
        None => {
            let mut all = memory.list_workspaces().await.ok()?;
            if all.len() != 1 {
                return None;
            }
            all.remove(0).workspace.name
        }
    };
    let workspace = memory.workspace(&name).await.ok()?;
    overview_of(memory, &workspace).await.ok()
}

/// The overview of `workspace` as the API answers it.
async fn overview_of(
    memory: &Memory,
    workspace: &engram_domain::Workspace,
) -> Result<Value, Error> {
    let (stats, recent, scan) = tokio::try_join!(
        memory.call(workspace.id, GetStats {}),
        memory.call(
            workspace.id,
            GetRecentlyModified::new(ALL_DAYS, OVERVIEW_LIST as u32)
        ),
        Scan::read(memory, workspace.id),
    )?;
    let (connected, connected_relations) = scan.most_connected();
    Ok(json!({
        "workspace": workspace.name,
        "nodes": stats.node_count,
        "observations": stats.observation_count,
        "relations": stats.relation_count,
        "embedding_coverage": stats.embedding_coverage,
        "embedding_model": stats.embedding_model,
        "recent": recent.nodes,
        "largest": scan.largest(),
        "connected": connected,
        "connected_relations": connected_relations,
        "complete": scan.complete,
    }))
}

/// The nodes and relations the overview ranks, read page by page.
#[derive(Default)]
struct Scan {
    /// Each node read: name, type and how many observations it holds.
    nodes: Vec<(String, String, u64)>,
    /// The relations leaving them.
    relations: Vec<RelationRecord>,
    /// Whether every node of the workspace was read.
    complete: bool,
}

impl Scan {
    /// Reads the workspace's nodes (without their observations), at most [`OVERVIEW_SCAN`].
    async fn read(memory: &Memory, workspace: WorkspaceId) -> Result<Self, Error> {
        let mut scan = Self::default();
        let mut query = GraphPageQuery {
            limit: 1_000,
            ..GraphPageQuery::default()
        };
        while scan.nodes.len() < OVERVIEW_SCAN {
            let page = memory.graph_page(workspace, &query).await?;
            let last_page = page.nodes.len() < query.limit as usize;
            query.after = page.nodes.last().map(|(node, _)| node.name.clone());
            let nodes = page.nodes.into_iter();
            (scan.nodes).extend(nodes.map(|(node, count)| (node.name, node.entity_type, count)));
            scan.relations.extend(page.relations);
            if last_page {
                scan.complete = true;
                break;
            }
        }
        Ok(scan)
    }

    /// The nodes holding the most observations, most first (then by name).
    fn largest(&self) -> Vec<Value> {
        let mut nodes: Vec<_> = self.nodes.iter().filter(|n| n.2 > 0).collect();
        nodes.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        (nodes.iter().take(OVERVIEW_LIST))
            .map(|(name, kind, count)| {
                json!({"name": name, "entity_type": kind, "observations": count})
            })
            .collect()
    }

    /// The nodes with the most relations (either way), most first (then by name), and the
    /// relations among them.
    fn most_connected(&self) -> (Vec<Value>, Vec<Value>) {
        let mut degree: HashMap<&str, u64> = HashMap::new();
        for relation in &self.relations {
            *degree.entry(&relation.from).or_default() += 1;
            if relation.to != relation.from {
                *degree.entry(&relation.to).or_default() += 1;
            }
        }
        let mut nodes: Vec<_> = (self.nodes.iter())
            .filter_map(|(name, kind, _)| Some((name, kind, *degree.get(name.as_str())?)))
            .collect();
        nodes.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        nodes.truncate(OVERVIEW_GRAPH);
        let chosen: HashSet<&str> = nodes.iter().map(|n| n.0.as_str()).collect();
        let relations = (self.relations.iter())
            .filter(|r| chosen.contains(r.from.as_str()) && chosen.contains(r.to.as_str()))
            .map(|r| json!({"from": r.from, "to": r.to, "relation_type": r.relation_type}))
            .collect();
        let nodes = (nodes.into_iter())
            .map(|(name, kind, count)| json!({"name": name, "entity_type": kind, "relations": count}))
            .collect();
        (nodes, relations)
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
    match (memory.call(
        workspace.id,
        SearchNodes::new(q).limit(limit).min_score(min_score),
    ))
    .await
    {
        Ok(found) => axum::Json(found).into_response(),
        Err(error) => failure(&error),
    }
}

#[derive(Deserialize)]
struct NodeQuery {
    name: String,
}

/// History entries the node view shows, newest first.
const HISTORY_SHOWN: u32 = 20;

/// A node in full (its ended facts too), its neighbourhood one hop out, and its newest history entries with who
/// wrote each.
async fn node(
    State(binder): State<Binder>,
    Viewed(workspace): Viewed,
    Query(query): Query<NodeQuery>,
) -> Response {
    let memory = binder.memory();
    let opened = match memory
        .call(
            workspace.id,
            // Ended facts too: the page shows them struck through, with their dates.
            OpenNodes {
                include_ended: true,
                ..OpenNodes::new(std::slice::from_ref(&query.name))
            },
        )
        .await
    {
        Ok(opened) => opened,
        Err(error) => return failure(&error),
    };
    let Some(node) = opened.entities.into_iter().next() else {
        return failure(&Error::node_not_found(query.name));
    };
    let neighborhood = memory
        .call(workspace.id, GetNeighborhood::new(&node.name, 1))
        .await;
    let history = GetHistory {
        limit: HISTORY_SHOWN,
        ..GetHistory::new(&node.name)
    };
    let history = memory.call(workspace.id, history).await;
    match (neighborhood, history) {
        (Ok(neighborhood), Ok(history)) => axum::Json(
            json!({"node": node, "neighborhood": neighborhood, "history": history.events}),
        )
        .into_response(),
        (Err(error), _) | (_, Err(error)) => failure(&error),
    }
}

async fn report(State(binder): State<Binder>, Viewed(workspace): Viewed) -> Response {
    match (binder.memory())
        .call(workspace.id, GetConsolidationReport::default())
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
        memory.call(workspace.id, GetStats {}),
        memory.embedding_pairs(workspace.id),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn relation(from: &str, to: &str) -> RelationRecord {
        RelationRecord {
            from: from.into(),
            to: to.into(),
            relation_type: "knows".into(),
            ..RelationRecord::default()
        }
    }

    #[test]
    fn the_overview_ranks_by_observations_and_by_relations() {
        let node = |name: &str, count| (name.to_owned(), "person".to_owned(), count);
        let scan = Scan {
            nodes: vec![node("a", 1), node("b", 3), node("c", 0), node("d", 3)],
            relations: vec![relation("a", "b"), relation("c", "b"), relation("a", "a")],
            complete: true,
        };
        let names = |values: &[Value]| -> Vec<String> {
            values
                .iter()
                .map(|v| v["name"].as_str().unwrap().to_owned())
                .collect()
        };
        // Most observations first, ties by name; a node without any is not "large".
        assert_eq!(names(&scan.largest()), ["b", "d", "a"]);
        let (connected, relations) = scan.most_connected();
        assert_eq!(names(&connected), ["a", "b", "c"]);
        assert_eq!(connected[0]["relations"], 2, "a loop counts once");
        assert_eq!(relations.len(), 3);
        assert!(Scan::default().most_connected().0.is_empty());
    }
}
