//! One parameter struct per tool. Field docs become the JSON Schema descriptions a model reads;
//! unknown fields are rejected. Limits are checked by `engram_domain::Memory`.
//!
//! Input also accepts the field names of Anthropic's reference memory server
//! (`@modelcontextprotocol/server-memory`: `entityType`, `entityNames`, `entityName`, `from`,
//! `to`, `relationType`, and `observations` texts in `delete_observations`), so an agent
//! prompted for that server works unchanged. They are serde aliases that the published
//! schemas do not show: `tools/list` advertises the catalog's names only.

use schemars::JsonSchema;
use serde::Deserialize;

/// A node to create.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityInput {
    /// Unique name within the workspace, 1–256 bytes, e.g. "Alice" or "engram/storage".
    pub name: String,
    /// The node's type, 1–256 bytes, e.g. "person", "project", "decision".
    #[serde(alias = "entityType")]
    pub entity_type: String,
    /// Initial observations (facts), appended in order as ordinals 1, 2, …; each 1–65,536 bytes.
    #[serde(default)]
    pub observations: Vec<String>,
    /// Optional summary of the node, 1–65,536 bytes.
    #[serde(default)]
    pub summary: Option<String>,
    /// Optional tags, at most 64 of 1–128 bytes each; repeats are dropped.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Parameters of `create_entities`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEntitiesParams {
    /// Nodes to create, 1–1,000 per call (and at most 1,000 observations in all). A name that
    /// already exists is left exactly as it is and reported with `already_existed: true`.
    pub entities: Vec<EntityInput>,
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

/// A directed typed relation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationInput {
    /// Source node name.
    #[serde(alias = "from")]
    pub from_entity: String,
    /// Target node name.
    #[serde(alias = "to")]
    pub to_entity: String,
    /// The relation's type in active voice, e.g. "works_on", 1–256 bytes.
    #[serde(alias = "relationType")]
    pub relation_type: String,
}

/// Parameters of `create_relations` and `delete_relations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationsParams {
    /// The relations, 1–1,000 per call.
    pub relations: Vec<RelationInput>,
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

fn default_depth() -> u32 {
    1
}

/// Parameters of `get_neighborhood`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeighborhoodParams {
    /// The node at the centre.
    pub name: String,
    /// Hops to follow, relations in either direction, 0–6. Default 1.
    #[serde(default = "default_depth")]
    #[schemars(range(min = 0, max = 6))]
    pub depth: u32,
}

/// Parameters of `get_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathParams {
    /// Where the path starts.
    pub from_entity: String,
    /// Where it ends.
    pub to_entity: String,
}

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
    pub mode: engram_domain::SearchMode,
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
    pub mode: engram_domain::SearchMode,
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
    pub mode: engram_domain::SearchMode,
    /// Leave out results scoring below this, 0–1, as in `search_nodes`; 0 keeps everything.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
}

fn default_similar_limit() -> u32 {
    20
}

fn default_min_score() -> f64 {
    0.75
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
    #[serde(default = "default_min_score")]
    pub min_score: f64,
}

/// Parameters of `get_consolidation_report`; every one is optional.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationReportParams {
    /// Start of `event_summary`'s window, an RFC 3339 date-time such as
    /// "2026-11-01T00:00:00Z". Default: 7 days ago.
    #[serde(default)]
    pub since: Option<engram_domain::Timestamp>,
    /// At most this many entries in each list, 1–1,000. Default 20.
    #[serde(default = "default_similar_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// Least cosine similarity of a relation candidate, -1.0–1.0. Default 0.75.
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// Least cosine similarity of two neighbouring nodes in one cluster, -1.0–1.0. Default 0.6.
    #[serde(default = "default_cluster_min_score")]
    pub cluster_min_score: f64,
}

fn default_cluster_min_score() -> f64 {
    0.6
}

/// Parameters of the tools that take none: any argument is refused as unknown, so a typo or
/// a misplaced argument is not silently ignored.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

fn default_read_graph_limit() -> u32 {
    engram_domain::READ_GRAPH_LIMIT
}

/// Parameters of `read_graph`; every one is optional.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadGraphParams {
    /// Continue after the previous page: pass its `next_cursor`. From the first node when
    /// omitted.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Nodes per page, 1–1,000. Default 50.
    #[serde(default = "default_read_graph_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// Only nodes of this type (and the relations leaving them).
    #[serde(default)]
    pub entity_type: Option<String>,
    /// "names": name and type; "summary" (default): also summary, tags and observation
    /// count; "full": also every observation.
    #[serde(default)]
    pub detail: engram_domain::transfer::GraphDetail,
}
