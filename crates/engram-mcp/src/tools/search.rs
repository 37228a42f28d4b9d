//! Search: nodes and observations by meaning and keywords, similar nodes.

use engram_domain::*;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::{CallToolResult, ContentBlock, Extensions, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::EngramServer;
use crate::arguments::Parameters;
use crate::error::ToolError;
use crate::results::*;

fn default_search_limit() -> u32 {
    10
}

/// Parameters of `search_nodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNodesParams {
    /// What to look for, in your own words (1–4,096 bytes), e.g. "where does Alice live now".
    pub query: String,
    /// At most this many nodes, 1–1,000. Default 10.
    #[serde(default = "default_search_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// "hybrid" (default): meaning and keywords fused, the best on our benchmarks.
    /// "embedding": by meaning alone, across every enabled perspective. "text": full-text
    /// keyword match alone, for exact terms.
    #[serde(default)]
    pub mode: SearchMode,
    /// Leave out results scoring below this (0–1). Scores are calibrated probabilities of
    /// relevance, comparable across queries; by default results unlikely to be relevant are
    /// left out, and a search that keeps nothing says so in `notice`. 0 keeps everything.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
}

/// Parameters of `search_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchObservationsParams {
    /// What to look for, in your own words (1–4,096 bytes).
    pub query: String,
    /// At most this many observations, 1–1,000. Default 10.
    #[serde(default = "default_search_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// "hybrid" (default), "embedding" or "text", as in `search_nodes`.
    #[serde(default)]
    pub mode: SearchMode,
    /// Only observations of nodes of these types (at most 100); all types when omitted.
    #[serde(default)]
    pub entity_types: Vec<String>,
    /// Leave out results scoring below this, 0–1, as in `search_nodes`; 0 keeps everything.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
}

/// Parameters of `query_observations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryObservationsParams {
    /// The node whose observations to search.
    pub entity_name: String,
    /// What to look for, 1–4,096 bytes.
    pub query: String,
    /// "hybrid" (default), "embedding" or "text", as in `search_nodes`.
    #[serde(default)]
    pub mode: SearchMode,
    /// Leave out results scoring below this, 0–1, as in `search_nodes`; 0 keeps everything.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
}

pub(super) fn default_similar_limit() -> u32 {
    20
}

/// Parameters of `find_similar_nodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindSimilarNodesParams {
    /// At most this many pairs, 1–1,000. Default 20.
    #[serde(default = "default_similar_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// Cosine similarity threshold, -1.0–1.0. Default 0.75.
    #[serde(default = "super::consolidation::default_min_score")]
    pub min_score: f64,
}

#[tool_router(router = search_tools, vis = "pub(super)")]
impl EngramServer {
    /// Find nodes by meaning and keywords, each once with its best-matching observation.
    /// `score` is the probability (0–1) that a result is relevant, comparable across
    /// queries; when nothing relevant is in memory, `results` is empty and `notice` says so.
    #[tool(
        annotations(read_only_hint = true),
        output_schema = rmcp::handler::server::tool::schema_for_output::<SearchResults>()
    )]
    async fn search_nodes(
        &self,
        Parameters(params): Parameters<SearchNodesParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let workspace = self.workspace(&context.extensions)?;
        let results = self
            .memory
            .search_nodes(
                workspace,
                &params.query,
                params.limit,
                params.mode,
                params.min_score,
            )
            .await?;
        let names: Vec<String> = (results.results.iter())
            .map(|hit| hit.name.clone())
            .collect();
        let structured = serde_json::to_value(results)
            .map_err(|error| ToolError(Error::Internal(format!("serialising results: {error}"))))?;
        let mut result = CallToolResult::structured(structured);
        // A client of protocol 2025-06-18 or later gets a resource link (`engram://node/{name}`)
        // for each node found, to attach or open it in full.
        if (context.protocol_version())
            .is_some_and(|version| version >= ProtocolVersion::V_2025_06_18)
        {
            (result.content).extend(
                (names.iter())
                    .map(|name| ContentBlock::resource_link(crate::resources::node_link(name))),
            );
        }
        Ok(result)
    }

    /// Search within one node's observations, best match first (modes as in search_nodes).
    #[tool(annotations(read_only_hint = true))]
    async fn query_observations(
        &self,
        Parameters(params): Parameters<QueryObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<ObservationResults>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self
            .memory
            .query_observations(
                workspace,
                &params.entity_name,
                &params.query,
                params.mode,
                params.min_score,
            )
            .await?;
        Ok(Json(results))
    }

    /// Find single facts (observations) across the workspace, best first, each with its node;
    /// unlike search_nodes, every matching observation of a node is listed.
    #[tool(annotations(read_only_hint = true))]
    async fn search_observations(
        &self,
        Parameters(params): Parameters<SearchObservationsParams>,
        extensions: Extensions,
    ) -> Result<Json<FoundObservations>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let results = self
            .memory
            .search_observations(
                workspace,
                &params.query,
                params.limit,
                params.mode,
                &params.entity_types,
                params.min_score,
            )
            .await?;
        Ok(Json(results))
    }

    /// Pairs of nodes whose content is similar but that no relation links: candidates to
    /// relate, merge or group during consolidation.
    #[tool(annotations(read_only_hint = true))]
    async fn find_similar_nodes(
        &self,
        Parameters(params): Parameters<FindSimilarNodesParams>,
        extensions: Extensions,
    ) -> Result<Json<SimilarNodesResult>, ToolError> {
        let workspace = self.workspace(&extensions)?;
        let pairs = self
            .memory
            .find_similar_nodes(workspace, params.limit, params.min_score)
            .await?;
        Ok(Json(SimilarNodesResult { pairs }))
    }
}
