//! Search: nodes and observations by meaning and keywords, similar nodes.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::{CallToolResult, ContentBlock, Extensions, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = search_tools, vis = "pub(super)")]
impl EngramServer {
    /// Find nodes by meaning and keywords, each once with its best observation, best first.
    /// `score` (0–1): how likely it is relevant, from it and the query alone (0.5 as likely
    /// as not; default min_score 0.8); if none passes, `notice` names the best and its
    /// score.
    #[tool(
        annotations(read_only_hint = true),
        output_schema = rmcp::handler::server::tool::schema_for_output::<SearchResults>()
    )]
    async fn search_nodes(
        &self,
        Parameters(request): Parameters<SearchNodes>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let workspace = self.workspace(&context.extensions)?;
        let results = self.memory.search_nodes(workspace, &request).await?;
        // A client of protocol 2025-06-18 or later gets a resource link (`engram://node/{name}`)
        // for each node found, to attach or open it in full.
        let links: Vec<ContentBlock> = match context.protocol_version() {
            Some(version) if version >= ProtocolVersion::V_2025_06_18 => (results.results.iter())
                .map(|hit| ContentBlock::resource_link(crate::resources::node_link(&hit.name)))
                .collect(),
            _ => Vec::new(),
        };
        let structured = serde_json::to_value(results)
            .map_err(|error| ToolError(Error::Internal(format!("serialising results: {error}"))))?;
        let mut result = CallToolResult::structured(structured);
        result.content.extend(links);
        Ok(result)
    }

    /// Search within one node's observations, best match first (modes as in search_nodes).
    #[tool(annotations(read_only_hint = true))]
    async fn query_observations(
        &self,
        Parameters(request): Parameters<QueryObservations>,
        extensions: Extensions,
    ) -> Result<Json<ObservationResults>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self.memory.query_observations(workspace, &request).await?;
        Ok(Json(results))
    }

    /// Find single facts across the workspace, best first, each with its node.
    #[tool(annotations(read_only_hint = true))]
    async fn search_observations(
        &self,
        Parameters(request): Parameters<SearchObservations>,
        extensions: Extensions,
    ) -> Result<Json<FoundObservations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self.memory.search_observations(workspace, &request).await?;
        Ok(Json(results))
    }

    /// Similar nodes that no relation links: candidates to relate or merge.
    #[tool(annotations(read_only_hint = true))]
    async fn find_similar_nodes(
        &self,
        Parameters(request): Parameters<FindSimilarNodes>,
        extensions: Extensions,
    ) -> Result<Json<SimilarNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let pairs = self.memory.find_similar_nodes(workspace, request).await?;
        Ok(Json(SimilarNodesResult { pairs }))
    }
}
