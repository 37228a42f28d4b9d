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

/// Observations to append to one node.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationInput {
    /// The node to append to.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Facts appended in order, each getting the node's next ordinal; each 1–65,536 bytes.
    pub contents: Vec<String>,
}

/// Parameters of `add_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddObservationsParams {
    /// Per node, the observations to append; at most 1,000 contents per call in all.
    pub observations: Vec<ObservationInput>,
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

/// Ordinals to delete from one node.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = ordinals_required)]
pub struct DeletionInput {
    /// The node.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Ordinals to delete; the remaining observations keep theirs.
    #[serde(default)]
    pub ordinals: Vec<i64>,
    /// The reference server's way: texts to delete by exact content (not advertised).
    #[serde(default)]
    #[schemars(skip)]
    pub observations: Vec<String>,
}

/// The catalog's schema of [`DeletionInput`]: `ordinals` required. Serde defaults it only
/// so that the reference server's `observations` (texts) can stand in its place.
fn ordinals_required(schema: &mut schemars::Schema) {
    if let Some(ordinals) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("ordinals"))
        .and_then(|o| o.as_object_mut())
    {
        ordinals.remove("default");
    }
    if let Some(required) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        required.push("ordinals".into());
    }
}

/// Parameters of `delete_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteObservationsParams {
    /// Per node, the ordinals to delete; at most 1,000 ordinals per call in all.
    pub deletions: Vec<DeletionInput>,
}

#[tool_router(router = observation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Append observations (facts) to existing nodes; each gets the node's next ordinal.
    #[tool(annotations(destructive_hint = false))]
    async fn add_observations(
        &self,
        Parameters(params): Parameters<AddObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<AddObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let additions: Vec<ObservationAdditions> = params
            .observations
            .into_iter()
            .map(|o| ObservationAdditions {
                entity_name: o.entity_name,
                contents: o.contents,
            })
            .collect();
        let results = self.memory.add_observations(workspace, &additions).await?;
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
        let deletions: Vec<ObservationDeletions> = params
            .deletions
            .into_iter()
            .map(|d| ObservationDeletions {
                entity_name: d.entity_name,
                ordinals: d.ordinals.into_iter().map(Ordinal).collect(),
                contents: d.observations,
            })
            .collect();
        let results = self
            .memory
            .delete_observations(workspace, &deletions)
            .await?;
        Ok(Json(DeleteObservationsResult { results }))
    }
}
