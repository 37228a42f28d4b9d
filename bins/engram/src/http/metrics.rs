//! Prometheus metrics on a listener of their own (`engram serve --metrics-bind ADDR`, off by
//! default, so they are never exposed by accident): `GET /metrics`.
//!
//! Counted where they happen: tool calls by tool, workspace and outcome, and their latency
//! (`engram-mcp`); active sessions by transport (the HTTP layer); vectors written and failed
//! passes (the indexer). Read from the store at each scrape: embedding coverage and indexer
//! backlog per workspace, and PostgreSQL's connection pool.
//!
//! What a scrape shows: every label value comes from a closed set (tool names as served,
//! `other` for a name a client makes up; workspaces that exist), so the series stay bounded.
//! A workspace's series leave the page when it is deleted or renamed. When the server
//! requires tokens a scrape needs one: a workspace's token sees only that workspace's series;
//! the operator's `--metrics-token` sees every workspace. Counters are on the page at 0 from
//! the start (per workspace, from the first scrape that shows it).

use std::collections::HashSet;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use engram_domain::{Memory, WorkspaceId};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::auth::{Auth, Grant, authenticate, bearer};

/// The outcome whose tool-call counters are registered at 0 for every tool of a workspace,
/// so that `rate()` sees a tool's first calls. The others (`tool_error`, `error`) appear with
/// their first count: three series per tool and workspace, mostly zeros, made the page
/// several hundred lines for a few workspaces.
const ZEROED_OUTCOME: &str = "ok";
/// The transports sessions are counted under.
const TRANSPORTS: [&str; 2] = ["streamable_http", "sse"];
/// Workspaces whose tool-call counters one scrape registers at 0 at most (each workspace
/// once; the rest at the next scrapes), so a scrape's work stays bounded however many
/// workspaces there are.
const ZEROED_WORKSPACES: usize = 64;

/// Reads the PostgreSQL pool's state and the read replica's, when the store has them.
pub type PoolProbe = Arc<
    dyn Fn() -> Option<(engram_pg::PoolStatus, Option<engram_pg::ReplicaStatus>)> + Send + Sync,
>;

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
        "engram_indexer_rejected_texts",
        "A workspace's pairs the embedder refused: set aside, tried again after a back-off"
    );
    metrics::describe_gauge!(
        "engram_db_pool_connections",
        "PostgreSQL pool connections by state (open, idle, max)"
    );
    metrics::describe_counter!(
        "engram_replica_reads_total",
        "Read-only calls by where they ran: replica, primary_behind (the replica had not \
         replayed every acknowledged write), primary_skipped (the replica failed or rests)"
    );
    metrics::describe_gauge!(
        "engram_replica_resting",
        "1 while the read replica is left alone after failing or lagging"
    );
    // Present at 0 before their first event, so a rate over them starts at the start.
    metrics::counter!("engram_indexer_embedded_total").absolute(0);
    metrics::counter!("engram_indexer_failures_total").absolute(0);
    for transport in TRANSPORTS {
        metrics::gauge!("engram_sessions_active", "transport" => transport).set(0.0);
    }
    Ok(handle)
}

#[derive(Clone)]
struct Scrape {
    handle: PrometheusHandle,
    memory: Memory,
    pool: PoolProbe,
    /// Workspaces whose tool-call counters are registered at 0 already.
    zeroed: Arc<std::sync::Mutex<HashSet<String>>>,
}

/// Who may scrape, and what they see.
#[derive(Clone)]
struct Access {
    auth: Auth,
    /// The operator's token (`--metrics-token`), which sees every workspace.
    operator_token: Option<Arc<str>>,
}

/// In a scrape's extensions: made with the operator's token.
#[derive(Clone, Copy)]
struct Operator;

/// The metrics listener's application. `operator_token` (`--metrics-token`) sees every
/// workspace when tokens are required; a workspace's token sees that workspace.
pub fn router(
    handle: PrometheusHandle,
    memory: Memory,
    pool: PoolProbe,
    require_auth: bool,
    operator_token: Option<String>,
) -> Router {
    let access = Access {
        auth: Auth {
            memory: memory.clone(),
            required: require_auth,
            failures: Arc::default(),
            oauth: None,
        },
        operator_token: operator_token.map(Arc::from),
    };
    Router::new()
        .route("/metrics", get(scrape))
        .layer(middleware::from_fn_with_state(access, operator_or_token))
        .with_state(Scrape {
            handle,
            memory,
            pool,
            zeroed: Arc::default(),
        })
}

/// Middleware: the operator's token passes as [`Operator`]; anything else goes through the
/// same token check as the MCP routes.
async fn operator_or_token(
    State(access): State<Access>,
    mut request: Request,
    next: Next,
) -> Response {
    if let (Some(presented), Some(expected)) = (bearer(request.headers()), &access.operator_token)
        && same_secret(presented.as_bytes(), expected.as_bytes())
    {
        request.extensions_mut().insert(Operator);
        return next.run(request).await;
    }
    authenticate(State(access.auth), request, next).await
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

async fn scrape(State(scrape): State<Scrape>, request: Request) -> Response {
    let grant = request.extensions().get::<Grant>();
    let operator = request.extensions().get::<Operator>().is_some();
    // The workspaces this scrape shows: the token's, or every one (read once).
    let shown: Vec<(WorkspaceId, String)> = match grant {
        Some(Grant(token)) if !operator => vec![(token.workspace_id, token.workspace.clone())],
        _ => match scrape.memory.list_workspaces().await {
            Ok(list) => (list.into_iter())
                .map(|info| (info.workspace.id, info.workspace.name))
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "reading the store for metrics failed");
                return (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    error.to_string(),
                )
                    .into_response();
            }
        },
    };
    if let Err(error) = refresh(&scrape, &shown).await {
        tracing::warn!(%error, "reading the store for metrics failed");
    }
    let visible: HashSet<String> = shown.into_iter().map(|(_, name)| name).collect();
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        only_workspaces(&scrape.handle.render(), &visible),
    )
        .into_response()
}

/// The exposition without the samples of workspaces not in `visible` (deleted, renamed, or
/// not the token's); samples without a workspace label and the `# HELP`/`# TYPE` lines stay.
fn only_workspaces(exposition: &str, visible: &HashSet<String>) -> String {
    let mut kept = String::with_capacity(exposition.len());
    for line in exposition.lines() {
        let keep = line.starts_with('#')
            || workspace_label(line).is_none_or(|workspace| visible.contains(&workspace));
        if keep {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The value of a sample line's `workspace` label, unescaped (`\\`, `\"`, `\n`), if it has
/// one.
fn workspace_label(line: &str) -> Option<String> {
    let labels = &line[line.find('{')? + 1..];
    let mut rest = labels;
    loop {
        let (name, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (at, '"') => break at,
                (_, c) => value.push(c),
            }
        };
        if name.trim_start_matches(',') == "workspace" {
            return Some(value);
        }
        rest = after[end + 1..].strip_prefix(',')?;
    }
}

/// The gauges of the `shown` workspaces, read from the store at each scrape, and the
/// tool-call counters at 0 of those not yet registered.
async fn refresh(scrape: &Scrape, shown: &[(WorkspaceId, String)]) -> engram_domain::Result<()> {
    {
        let mut zeroed = scrape.zeroed.lock().expect("metrics zeroed lock");
        let tools = engram_mcp::EngramServer::tool_names();
        let new: Vec<&String> = (shown.iter().map(|(_, name)| name))
            .filter(|name| !zeroed.contains(*name))
            .take(ZEROED_WORKSPACES)
            .collect();
        for workspace in new {
            zeroed.insert(workspace.clone());
            for tool in tools.iter().map(String::as_str).chain(["other"]) {
                metrics::counter!("engram_tool_calls_total", "tool" => tool.to_owned(),
                    "workspace" => workspace.clone(), "outcome" => ZEROED_OUTCOME)
                .increment(0);
            }
        }
    }
    if let Some((status, replica)) = (scrape.pool)() {
        if let Some(replica) = replica {
            for (route, reads) in [
                ("replica", replica.reads_on_replica),
                ("primary_behind", replica.reads_behind),
                ("primary_skipped", replica.reads_skipped),
            ] {
                metrics::counter!("engram_replica_reads_total", "route" => route).absolute(reads);
            }
            metrics::gauge!("engram_replica_resting").set(f64::from(u8::from(replica.resting)));
        }
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
    for (id, name) in shown {
        let progress = (scrape.memory)
            .embedding_progress(*id, embedder.model_id())
            .await?;
        metrics::gauge!("engram_embedding_coverage", "workspace" => name.clone())
            .set(progress.coverage);
        metrics::gauge!("engram_indexer_backlog", "workspace" => name.clone())
            .set(progress.backlog() as f64);
        let rejected = scrape.memory.rejected_texts(*id).len();
        metrics::gauge!("engram_indexer_rejected_texts", "workspace" => name.clone())
            .set(rejected as f64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_of_hidden_workspaces_leave_the_page() {
        let page = "# TYPE engram_tool_calls_total counter\n\
            engram_tool_calls_total{tool=\"open_nodes\",workspace=\"a\",outcome=\"ok\"} 2\n\
            engram_tool_calls_total{tool=\"open_nodes\",workspace=\"b\\\"q\",outcome=\"ok\"} 1\n\
            engram_indexer_backlog{workspace=\"gone\"} 4012\n\
            engram_indexer_failures_total 0\n";
        let visible = HashSet::from(["a".to_owned(), "b\"q".to_owned()]);
        let kept = only_workspaces(page, &visible);
        assert!(kept.contains("workspace=\"a\""), "{kept}");
        assert!(kept.contains(r#"workspace="b\"q""#), "{kept}");
        assert!(!kept.contains("gone"), "{kept}");
        assert!(kept.contains("# TYPE") && kept.contains("engram_indexer_failures_total 0"));
        let only_a = only_workspaces(page, &HashSet::from(["a".to_owned()]));
        assert!(!only_a.contains(r#"b\"q"#), "{only_a}");
        assert_eq!(
            workspace_label("x{tool=\"w\",workspace=\"a\\\\b\"} 1"),
            Some("a\\b".into())
        );
        assert_eq!(workspace_label("x{tool=\"workspace=\\\"z\"} 1"), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
