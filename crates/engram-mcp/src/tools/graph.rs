//! Walking and paging the graph: neighbourhoods, paths, mentions without relations, read_graph.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use super::NoParams;
use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = graph_tools, vis = "pub(super)")]
impl EngramServer {
    /// A node and every node within `depth` hops, with the relations among them.
    #[tool(annotations(read_only_hint = true))]
    async fn get_neighborhood(
        &self,
        Parameters(request): Parameters<GetNeighborhood>,
        extensions: Extensions,
    ) -> Result<Json<Neighborhood>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let neighborhood = self.memory.get_neighborhood(workspace, request).await?;
        Ok(Json(neighborhood))
    }

    /// The shortest chain of relations (followed in either direction) between two nodes.
    #[tool(annotations(read_only_hint = true))]
    async fn get_path(
        &self,
        Parameters(request): Parameters<GetPath>,
        extensions: Extensions,
    ) -> Result<Json<GraphPath>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let path = self.memory.get_path(workspace, request).await?;
        Ok(Json(path))
    }

    /// Nodes whose facts mention another node with no relation between the two (a heuristic).
    #[tool(annotations(read_only_hint = true))]
    async fn find_unlinked_references(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<UnlinkedReferencesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let references = self.memory.find_unlinked_references(workspace).await?;
        Ok(Json(UnlinkedReferencesResult { references }))
    }

    /// The whole graph a page at a time, in name order; pass `next_cursor` back for more.
    #[tool(annotations(read_only_hint = true))]
    async fn read_graph(
        &self,
        Parameters(request): Parameters<ReadGraph>,
        extensions: Extensions,
    ) -> Result<Json<transfer::GraphPageResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let page = self.memory.read_graph(workspace, request).await?;
        Ok(Json(page))
    }
}
