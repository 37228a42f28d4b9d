//! Relations: create, delete, rename and read typed relations.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = relation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Create directed typed relations between existing nodes.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_relations(
        &self,
        Parameters(request): Parameters<CreateRelations>,
        extensions: Extensions,
    ) -> Result<Json<CreatedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory.create_relations(workspace, request).await?,
        ))
    }

    /// Delete specific relations.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_relations(
        &self,
        Parameters(request): Parameters<DeleteRelations>,
        extensions: Extensions,
    ) -> Result<Json<DeletedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory.delete_relations(workspace, request).await?,
        ))
    }

    /// End relations that stopped holding; kept for include_ended, as_of and history.
    #[tool(annotations(destructive_hint = false, idempotent_hint = true))]
    async fn end_relations(
        &self,
        Parameters(request): Parameters<EndRelations>,
        extensions: Extensions,
    ) -> Result<Json<EndedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(self.memory.end_relations(workspace, request).await?))
    }

    /// Change the type of one existing relation.
    #[tool(annotations(idempotent_hint = false, destructive_hint = false))]
    async fn rename_relation_type(
        &self,
        Parameters(request): Parameters<RenameRelationType>,
        extensions: Extensions,
    ) -> Result<Json<RenamedRelation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let old_type = request.old_type.clone();
        let renamed = self.memory.rename_relation_type(workspace, request).await?;
        Ok(Json(RenamedRelation {
            from_entity: renamed.from_entity,
            to_entity: renamed.to_entity,
            old_type,
            new_type: renamed.relation_type,
        }))
    }

    /// Every relation between two nodes, in both directions.
    #[tool(annotations(read_only_hint = true))]
    async fn get_relations_between(
        &self,
        Parameters(request): Parameters<GetRelationsBetween>,
        extensions: Extensions,
    ) -> Result<Json<RelationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relations = self
            .memory
            .get_relations_between(workspace, request)
            .await?;
        Ok(Json(RelationsResult { relations }))
    }
}
