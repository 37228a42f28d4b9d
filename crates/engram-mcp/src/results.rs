//! Result objects for the tools whose catalog result is a list.
//!
//! MCP clients before protocol 2026-07-28 accept only objects as `structuredContent` and
//! `outputSchema`, so a list travels inside an object under a descriptive key.

use engram_domain::*;
use schemars::JsonSchema;
use serde::Serialize;

/// `create_entities`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateEntitiesResult {
    /// One row per requested entity, in request order.
    pub entities: Vec<CreatedNode>,
}

/// `get_nodes_by_type`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TypedNodesResult {
    /// The nodes of the type, by name.
    pub nodes: Vec<TypedNode>,
}

/// `get_recently_modified`'s and `get_orphaned_nodes`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NodeBriefsResult {
    /// The nodes.
    pub nodes: Vec<NodeBrief>,
}

/// `add_observations`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AddObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<AddedObservations>,
}

/// `delete_observations`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<DeletedObservations>,
}

/// `end_observations`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EndObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<EndedObservations>,
}

/// `get_relations_between`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RelationsResult {
    /// The relations linking the two nodes, both directions, sorted.
    pub relations: Vec<Relation>,
}

/// `find_unlinked_references`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UnlinkedReferencesResult {
    /// Mentions without a relation, by node then referenced name.
    pub references: Vec<UnlinkedReference>,
}

/// `get_pending_consolidation`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingConsolidationResult {
    /// Nodes whose summary is missing or older than their newest observation.
    pub nodes: Vec<PendingConsolidation>,
}

/// `rename_relation_type`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RenamedRelation {
    /// Source node name.
    pub from_entity: String,
    /// Target node name.
    pub to_entity: String,
    /// The type before.
    pub old_type: String,
    /// The type now.
    pub new_type: String,
}

/// `find_similar_nodes`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SimilarNodesResult {
    /// Unrelated pairs of similar nodes, most similar first.
    pub pairs: Vec<SimilarPair>,
}
