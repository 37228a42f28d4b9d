//! The tools, one module per area, each holding its tools' parameter structs beside the
//! tools: each tool parses its parameters, resolves the bound workspace, calls `Memory`, and
//! returns the catalog's result as structured JSON. Field docs become the JSON Schema
//! descriptions a model reads; unknown fields are rejected; limits are checked by
//! `engram_domain::Memory`.
//!
//! Input also accepts the field names of Anthropic's reference memory server
//! (`@modelcontextprotocol/server-memory`: `entityType`, `entityNames`, `entityName`, `from`,
//! `to`, `relationType`, and `observations` texts in `delete_observations`), so an agent
//! prompted for that server works unchanged. They are serde aliases that the published
//! schemas do not show: `tools/list` advertises the catalog's names only.

mod consolidation;
mod graph;
mod nodes;
mod observations;
mod relations;
mod search;

use rmcp::handler::server::router::tool::ToolRouter;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::EngramServer;

/// Parameters of the tools that take none: any argument is refused as unknown, so a typo or
/// a misplaced argument is not silently ignored.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Every tool engram has, each area's router merged.
pub(crate) fn router() -> ToolRouter<EngramServer> {
    EngramServer::node_tools()
        + EngramServer::observation_tools()
        + EngramServer::relation_tools()
        + EngramServer::graph_tools()
        + EngramServer::search_tools()
        + EngramServer::consolidation_tools()
}
