//! Relations: create, delete, rename and read typed relations.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

/// Parameters of `create_relations` and `delete_relations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationsParams {
    /// The relations, 1–1,000 per call.
    pub relations: Vec<RelationSpec>,
}

/// Parameters of `rename_relation_type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameRelationTypeParams {
    /// Source node name.
    pub from_entity: String,
    /// Target node name.
    pub to_entity: String,
    /// The relation's current type.
    pub old_type: String,
    /// The new type; refused if that relation already exists.
    pub new_type: String,
}

/// Parameters of `get_relations_between`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationsBetweenParams {
    /// One node.
    pub entity_a: String,
    /// The other node.
    pub entity_b: String,
}

#[tool_router(router = relation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Create directed typed relations between existing nodes.
    #[tool(annotations(idempotent_hint = true, destructive_hint = false))]
    async fn create_relations(
        &self,
        Parameters(params): Parameters<RelationsParams>,
        extensions: Extensions,
    ) -> Result<Json<CreatedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory
                .create_relations(workspace, &params.relations)
                .await?,
        ))
    }

    /// Delete specific relations.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_relations(
        &self,
        Parameters(params): Parameters<RelationsParams>,
        extensions: Extensions,
    ) -> Result<Json<DeletedRelations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        Ok(Json(
            self.memory
                .delete_relations(workspace, &params.relations)
                .await?,
        ))
    }

    /// Change the type of one existing relation.
    #[tool(annotations(idempotent_hint = false, destructive_hint = false))]
    async fn rename_relation_type(
        &self,
        Parameters(params): Parameters<RenameRelationTypeParams>,
        extensions: Extensions,
    ) -> Result<Json<RenamedRelation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relation = RelationSpec {
            from_entity: params.from_entity,
            to_entity: params.to_entity,
            relation_type: params.old_type,
        };
        self.memory
            .rename_relation_type(workspace, &relation, &params.new_type)
            .await?;
        Ok(Json(RenamedRelation {
            from_entity: relation.from_entity,
            to_entity: relation.to_entity,
            old_type: relation.relation_type,
            new_type: params.new_type,
        }))
    }

    /// Every relation between two nodes, in both directions.
    #[tool(annotations(read_only_hint = true))]
    async fn get_relations_between(
        &self,
        Parameters(params): Parameters<RelationsBetweenParams>,
        extensions: Extensions,
    ) -> Result<Json<RelationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let relations = self
            .memory
            .get_relations_between(workspace, &params.entity_a, &params.entity_b)
            .await?;
        Ok(Json(RelationsResult { relations }))
    }
}
