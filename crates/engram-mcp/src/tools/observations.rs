//! Observations: append, replace and delete a node's ordered facts.

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

/// Parameters of `add_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddObservationsParams {
    /// Per node, the observations to append; at most 1,000 contents per call in all.
    pub observations: Vec<ObservationAdditions>,
}

/// Parameters of `replace_observation`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceObservationParams {
    /// The node.
    pub entity_name: String,
    /// The observation's ordinal (from `open_nodes`); it stays the same.
    pub ordinal: i64,
    /// The replacement text, 1–65,536 bytes.
    pub new_content: String,
}

/// Parameters of `delete_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteObservationsParams {
    /// Per node, the ordinals to delete; at most 1,000 ordinals per call in all.
    pub deletions: Vec<ObservationDeletions>,
}

#[tool_router(router = observation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Append observations (facts) to existing nodes; each gets the node's next ordinal. A node
    /// that does not exist is a row with `not_found: true` and nothing added: check it.
    #[tool(annotations(destructive_hint = false))]
    async fn add_observations(
        &self,
        Parameters(params): Parameters<AddObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<AddObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let results = (self.memory)
            .add_observations(workspace, &params.observations)
            .await?;
        Ok(Json(AddObservationsResult { results }))
    }

    /// Replace one observation's text in place, keeping its ordinal.
    #[tool(annotations(idempotent_hint = true, destructive_hint = true))]
    async fn replace_observation(
        &self,
        Parameters(params): Parameters<ReplaceObservationParams>,
        extensions: Extensions,
    ) -> Result<Json<ReplacedObservation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let replaced = self
            .memory
            .replace_observation(
                workspace,
                &params.entity_name,
                Ordinal(params.ordinal),
                &params.new_content,
            )
            .await?;
        Ok(Json(replaced))
    }

    /// Delete observations by ordinal; the others keep their ordinals.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_observations(
        &self,
        Parameters(params): Parameters<DeleteObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<DeleteObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let results = self
            .memory
            .delete_observations(workspace, &params.deletions)
            .await?;
        Ok(Json(DeleteObservationsResult { results }))
    }
}
