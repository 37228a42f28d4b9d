//! Observations: append, replace and delete a node's ordered facts.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

#[tool_router(router = observation_tools, vis = "pub(super)")]
impl EngramServer {
    /// Append facts to existing nodes. A node that does not exist is a row with `not_found:
    /// true`: check it.
    #[tool(annotations(destructive_hint = false))]
    async fn add_observations(
        &self,
        Parameters(request): Parameters<AddObservations>,
        extensions: Extensions,
    ) -> Result<Json<AddObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let results = (self.memory).add_observations(workspace, request).await?;
        Ok(Json(AddObservationsResult { results }))
    }

    /// Replace one observation's text in place, keeping its ordinal.
    #[tool(annotations(idempotent_hint = true, destructive_hint = true))]
    async fn replace_observation(
        &self,
        Parameters(request): Parameters<ReplaceObservation>,
        extensions: Extensions,
    ) -> Result<Json<ReplacedObservation>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let replaced = self.memory.replace_observation(workspace, request).await?;
        Ok(Json(replaced))
    }

    /// Delete observations by ordinal; the others keep their ordinals.
    #[tool(annotations(destructive_hint = true, idempotent_hint = true))]
    async fn delete_observations(
        &self,
        Parameters(request): Parameters<DeleteObservations>,
        extensions: Extensions,
    ) -> Result<Json<DeleteObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;

        let results = self.memory.delete_observations(workspace, request).await?;
        Ok(Json(DeleteObservationsResult { results }))
    }

    /// End facts that stopped being true; kept for include_ended, as_of and history.
    #[tool(annotations(destructive_hint = false, idempotent_hint = true))]
    async fn end_observations(
        &self,
        Parameters(request): Parameters<EndObservations>,
        extensions: Extensions,
    ) -> Result<Json<EndObservationsResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self.memory.end_observations(workspace, request).await?;
        Ok(Json(EndObservationsResult { results }))
    }
}
