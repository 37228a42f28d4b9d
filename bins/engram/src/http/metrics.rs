//! Prometheus metrics on a listener of their own (`engram serve --metrics-bind ADDR`, off by
//! default, so they are never exposed by accident): `GET /metrics`.
//!
//! Counted where they happen: tool calls by tool, workspace and outcome, and their latency
//! (`engram-mcp`); active sessions by transport (the HTTP layer); vectors written and failed
//! passes (the indexer). Read from the store at each scrape: embedding coverage and indexer
//! backlog per workspace, and PostgreSQL's connection pool. When the server requires tokens,
//! a scrape needs one too (any workspace's).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use engram_domain::Memory;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::auth::{Auth, authenticate};

/// Reads the PostgreSQL pool's state, when the store has one.
pub type PoolProbe = Arc<dyn Fn() -> Option<engram_pg::PoolStatus> + Send + Sync>;

/// Installs the process's metrics recorder and describes engram's metrics; call once, before
/// anything is counted. Errors when a recorder is installed already.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&[
            0.000_5, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
        ])?
        .install_recorder()?;
    metrics::describe_counter!(
        "engram_tool_calls_total",
        "MCP tool calls by tool, workspace and outcome (ok, tool_error, error)"
    );
    metrics::describe_histogram!(
        "engram_tool_call_duration_seconds",
        metrics::Unit::Seconds,
        "MCP tool call latency by tool"
    );
    metrics::describe_gauge!("engram_sessions_active", "Open MCP sessions by transport");
    metrics::describe_counter!(
        "engram_indexer_embedded_total",
        "(observation, perspective) pairs the indexer embedded"
    );
    metrics::describe_counter!(
        "engram_indexer_failures_total",
        "Indexer passes that failed (embedder or database down)"
    );
    metrics::describe_gauge!(
        "engram_embedding_coverage",
        "Fraction of a workspace's pairs with a current vector"
    );
    metrics::describe_gauge!(
        "engram_indexer_backlog",
        "A workspace's pairs waiting for a current vector"
    );
    metrics::describe_gauge!(
        "engram_db_pool_connections",
        "PostgreSQL pool connections by state (open, idle, max)"
    );
    Ok(handle)
}

#[derive(Clone)]
struct Scrape {
    handle: PrometheusHandle,
    memory: Memory,
    pool: PoolProbe,
}

/// The metrics listener's application.
pub fn router(
    handle: PrometheusHandle,
    memory: Memory,
    pool: PoolProbe,
    require_auth: bool,
) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        // The same token check as the MCP routes (any workspace's token will do).
        .layer(middleware::from_fn_with_state(
            Auth {
                memory: memory.clone(),
                required: require_auth,
                failures: Arc::default(),
            },
            authenticate,
        ))
        .with_state(Scrape {
            handle,
            memory,
            pool,
        })
}

async fn scrape(State(scrape): State<Scrape>) -> Response {
    if let Err(error) = refresh(&scrape).await {
        tracing::warn!(%error, "reading the store for metrics failed");
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        scrape.handle.render(),
    )
        .into_response()
}

/// The gauges read from the store at each scrape.
async fn refresh(scrape: &Scrape) -> engram_domain::Result<()> {
    if let Some(status) = (scrape.pool)() {
        for (state, value) in [
            ("open", status.size),
            ("idle", status.available),
            ("max", status.max_size),
        ] {
            metrics::gauge!("engram_db_pool_connections", "state" => state).set(value as f64);
        }
    }
    let Some(embedder) = scrape.memory.embedder() else {
        return Ok(());
    };
    let store = scrape.memory.store();
    for info in scrape.memory.list_workspaces().await? {
        let workspace = info.workspace;
        let coverage = store
            .embedding_coverage(workspace.id, embedder.model_id())
            .await?;
        let pairs = store.embedding_pairs(workspace.id).await?;
        let backlog = pairs as f64 - (coverage * pairs as f64).round();
        metrics::gauge!("engram_embedding_coverage", "workspace" => workspace.name.clone())
            .set(coverage);
        metrics::gauge!("engram_indexer_backlog", "workspace" => workspace.name).set(backlog);
    }
    Ok(())
}
