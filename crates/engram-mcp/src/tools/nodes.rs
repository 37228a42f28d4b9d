//! Nodes: create, delete, open and browse them, their summaries, tags and the counts.

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

/// Parameters of `create_entities`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEntitiesParams {
    /// Nodes to create, 1–1,000 per call (and at most 1,000 observations in all). A name that
    /// already exists is left exactly as it is and reported with `already_existed: true`.
    pub entities: Vec<NewNode>,
}

/// Parameters of `delete_entities`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteEntitiesParams {
    /// Names of the nodes to delete with their observations and relations, 1–1,000.
    #[serde(alias = "entityNames")]
    pub entity_names: Vec<String>,
}

/// Parameters of `open_nodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenNodesParams {
    /// Names of the nodes to read in full, 1–1,000.
    pub names: Vec<String>,
}

/// Parameters of `get_nodes_by_type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodesByTypeParams {
    /// The exact type, e.g. "person".
    pub entity_type: String,
}

fn default_days() -> u32 {
    7
}

fn default_recent_limit() -> u32 {
    20
}

/// Parameters of `get_recently_modified`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentlyModifiedParams {
    /// How far back to look, in days, 1–36,500. Default 7.
    #[serde(default = "default_days")]
    #[schemars(range(min = 1, max = 36_500))]
    pub days: u32,
    /// At most this many nodes, 1–1,000. Default 20.
    #[serde(default = "default_recent_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
}

/// Parameters of `set_summary`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSummaryParams {
    /// The node.
    pub name: String,
    /// The new summary, 1–65,536 bytes; replaces the old one.
    pub summary: String,
}

/// Parameters of `set_tags`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTagsParams {
    /// The node.
    pub name: String,
    /// The complete new tag set, at most 64 tags of 1–128 bytes; `[]` clears it.
    pub tags: Vec<String>,
}

#[tool_router(router = node_tools, vis = "pub(super)")]
impl EngramServer {
    /// Create nodes (entities) with a type and optional observations, summary and tags.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_entities(
        &self,
        Parameters(params): Parameters<CreateEntitiesParams>,
        extensions: Extensions,
    ) -> Result<Json<CreateEntitiesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let entities = (self.memory)
            .create_entities(workspace, params.entities)
            .await?;
        Ok(Json(CreateEntitiesResult { entities }))
    }

    /// Delete nodes with all their observations, relations (both directions) and history.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_entities(
        &self,
        Parameters(params): Parameters<DeleteEntitiesParams>,
        extensions: Extensions,
    ) -> Result<Json<DeletedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let deleted = self
            .memory
            .delete_entities(workspace, &params.entity_names)
            .await?;
        Ok(Json(deleted))
    }

    /// Read nodes in full: type, summary, tags, observations in ordinal order, and every
    /// relation touching them.
    #[tool(annotations(read_only_hint = true))]
    async fn open_nodes(
        &self,
        Parameters(params): Parameters<OpenNodesParams>,
        extensions: Extensions,
    ) -> Result<Json<OpenedNodes>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory.open_nodes(workspace, &params.names).await?,
        ))
    }

    /// List every node of one type.
    #[tool(annotations(read_only_hint = true))]
    async fn get_nodes_by_type(
        &self,
        Parameters(params): Parameters<NodesByTypeParams>,
        extensions: Extensions,
    ) -> Result<Json<TypedNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self
            .memory
            .get_nodes_by_type(workspace, &params.entity_type)
            .await?;
        Ok(Json(TypedNodesResult { nodes }))
    }

    /// Nodes changed (themselves or their observations, relations, tags or summary) in the last
    /// `days` days, newest first.
    #[tool(annotations(read_only_hint = true))]
    async fn get_recently_modified(
        &self,
        Parameters(params): Parameters<RecentlyModifiedParams>,
        extensions: Extensions,
    ) -> Result<Json<NodeBriefsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let nodes = self
            .memory
            .get_recently_modified(workspace, params.days, params.limit)
            .await?;
        Ok(Json(NodeBriefsResult { nodes }))
    }

    /// Set or replace a node's summary.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_summary(
        &self,
        Parameters(params): Parameters<SetSummaryParams>,
        extensions: Extensions,
    ) -> Result<Json<SummaryUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self
            .memory
            .set_summary(workspace, &params.name, &params.summary)
            .await?;
        Ok(Json(update))
    }

    /// Replace a node's whole tag set.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn set_tags(
        &self,
        Parameters(params): Parameters<SetTagsParams>,
        extensions: Extensions,
    ) -> Result<Json<TagsUpdate>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let update = self
            .memory
            .set_tags(workspace, &params.name, &params.tags)
            .await?;
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

    /// Counts of nodes, observations and relations, embedding coverage, and texts the
    /// embedder refused (found by full text meanwhile).
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
