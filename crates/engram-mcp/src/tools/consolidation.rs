//! Consolidation: the report and the nodes whose summary is due.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::NoParams;
use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

fn default_min_score() -> f64 {
    search::requests::DEFAULT_SIMILAR_MIN_SCORE
}

fn default_similar_limit() -> u32 {
    search::requests::DEFAULT_SIMILAR_LIMIT
}

/// Parameters of `get_consolidation_report`; every one is optional.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationReportParams {
    /// Start of `event_summary`'s window, an RFC 3339 date-time such as
    /// "2026-11-01T00:00:00Z". Default: 7 days ago.
    #[serde(default)]
    pub since: Option<Timestamp>,
    /// At most this many entries in each list, 1–1,000. Default 20.
    #[serde(default = "default_similar_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// Least cosine similarity of a relation candidate, -1.0–1.0. Default 0.75.
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// Least cosine similarity of two neighbouring nodes in one cluster, -1.0–1.0. Default 0.6.
    #[serde(default = "default_cluster_min_score")]
    pub cluster_min_score: f64,
}

fn default_cluster_min_score() -> f64 {
    0.6
}

#[tool_router(router = consolidation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Where the graph needs attention: stale summaries (with drafts for set_summary),
    /// unrelated similar pairs (relate or merge them?), orphaned nodes, clusters of similar
    /// nodes, and counts of writes since `since`. It proposes; you decide.
    #[tool(annotations(read_only_hint = true))]
    async fn get_consolidation_report(
        &self,
        Parameters(params): Parameters<ConsolidationReportParams>,
        extensions: Extensions,
    ) -> Result<Json<ConsolidationReport>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let options = ReportOptions {
            since: params.since,
            limit: params.limit,
            min_score: params.min_score,
            cluster_min_score: params.cluster_min_score,
        };
        Ok(Json(
            self.memory
                .get_consolidation_report(workspace, options)
                .await?,
        ))
    }

    /// Nodes never summarised, or whose summary is older than their newest observation.
    #[tool(annotations(read_only_hint = true))]
    async fn get_pending_consolidation(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<PendingConsolidationResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self.memory.get_pending_consolidation(workspace).await?;
        Ok(Json(PendingConsolidationResult { nodes }))
    }
}
