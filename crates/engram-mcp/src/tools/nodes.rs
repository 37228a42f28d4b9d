//! Nodes: create, delete, open and browse them, their summaries, tags and the counts.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use super::NoParams;
use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = node_tools, vis = "pub(super)")]
impl EngramServer {
    /// Create nodes (entities) with a type and optional observations, summary and tags.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_entities(
        &self,
        Parameters(request): Parameters<CreateEntities>,
        extensions: Extensions,
    ) -> Result<Json<CreateEntitiesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let entities = (self.memory).create_entities(workspace, request).await?;
        Ok(Json(CreateEntitiesResult { entities }))
    }

    /// Delete nodes with their facts, relations and history.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_entities(
        &self,
        Parameters(request): Parameters<DeleteEntities>,
        extensions: Extensions,
    ) -> Result<Json<DeletedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let deleted = self.memory.delete_entities(workspace, request).await?;
        Ok(Json(deleted))
    }

    /// Read nodes in full: facts in order, summary, tags, relations.
    #[tool(annotations(read_only_hint = true))]
    async fn open_nodes(
        &self,
        Parameters(request): Parameters<OpenNodes>,
        extensions: Extensions,
    ) -> Result<Json<OpenedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.open_nodes(workspace, request).await?))
    }

    /// A node's changes, newest first.
    #[tool(annotations(read_only_hint = true))]
    async fn get_history(
        &self,
        Parameters(request): Parameters<GetHistory>,
        extensions: Extensions,
    ) -> Result<Json<History>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.get_history(workspace, request).await?))
    }

    /// Merge duplicates into target (facts, relations, tags); their names become its aliases.
    #[tool(annotations(destructive_hint = true, idempotent_hint = false))]
    async fn merge_entities(
        &self,
        Parameters(request): Parameters<MergeEntities>,
        extensions: Extensions,
    ) -> Result<Json<MergedEntities>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.merge_entities(workspace, request).await?))
    }

    /// Group a node's facts by topic, for split_entity.
    #[tool(annotations(read_only_hint = true))]
    async fn propose_split(
        &self,
        Parameters(request): Parameters<ProposeSplit>,
        extensions: Extensions,
    ) -> Result<Json<SplitProposal>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.propose_split(workspace, request).await?))
    }

    /// Move a node's facts to new nodes related to it.
    #[tool(annotations(destructive_hint = false, idempotent_hint = false))]
    async fn split_entity(
        &self,
        Parameters(request): Parameters<SplitEntity>,
        extensions: Extensions,
    ) -> Result<Json<SplitResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.split_entity(workspace, request).await?))
    }

    /// Set the other names a node answers to.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn set_aliases(
        &self,
        Parameters(request): Parameters<SetAliases>,
        extensions: Extensions,
    ) -> Result<Json<AliasesUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.set_aliases(workspace, request).await?))
    }

    /// List every node of one type.
    #[tool(annotations(read_only_hint = true))]
    async fn get_nodes_by_type(
        &self,
        Parameters(request): Parameters<GetNodesByType>,
        extensions: Extensions,
    ) -> Result<Json<TypedNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self.memory.get_nodes_by_type(workspace, request).await?;
        Ok(Json(TypedNodesResult { nodes }))
    }

    /// Nodes changed in the last `days` days, newest first.
    #[tool(annotations(read_only_hint = true))]
    async fn get_recently_modified(
        &self,
        Parameters(request): Parameters<GetRecentlyModified>,
        extensions: Extensions,
    ) -> Result<Json<NodeBriefsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self
            .memory
            .get_recently_modified(workspace, request)
            .await?;
        Ok(Json(NodeBriefsResult { nodes }))
    }

    /// Set or replace a node's summary.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_summary(
        &self,
        Parameters(request): Parameters<SetSummary>,
        extensions: Extensions,
    ) -> Result<Json<SummaryUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self.memory.set_summary(workspace, request).await?;
        Ok(Json(update))
    }

    /// Replace a node's whole tag set.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_tags(
        &self,
        Parameters(request): Parameters<SetTags>,
        extensions: Extensions,
    ) -> Result<Json<TagsUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self.memory.set_tags(workspace, request).await?;
        Ok(Json(update))
    }

    /// Nodes with no relation at all: candidates to link or to remove.
    #[tool(annotations(read_only_hint = true))]
    async fn get_orphaned_nodes(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<NodeBriefsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self.memory.get_orphaned_nodes(workspace).await?;
        Ok(Json(NodeBriefsResult { nodes }))
    }

    /// Counts, embedding coverage, and texts the embedder refused.
    #[tool(annotations(read_only_hint = true))]
    async fn get_stats(
        &self,
        Parameters(NoParams {}): Parameters<NoParams>,
        extensions: Extensions,
    ) -> Result<Json<Stats>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.get_stats(workspace).await?))
    }
}
