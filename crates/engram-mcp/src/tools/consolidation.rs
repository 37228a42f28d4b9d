//! Consolidation: the report and the nodes whose summary is due.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use super::NoParams;
use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = consolidation_tools, vis = "pub(super)")]
impl EngramServer {
    /// What needs attention: stale summaries (with drafts), similar unrelated pairs, orphans,
    /// clusters, recent writes. It proposes; you decide.
    #[tool(annotations(read_only_hint = true))]
    async fn get_consolidation_report(
        &self,
        Parameters(request): Parameters<GetConsolidationReport>,
        extensions: Extensions,
    ) -> Result<Json<ConsolidationReport>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory
                .get_consolidation_report(workspace, request)
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
