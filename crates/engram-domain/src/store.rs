//! What the storage operations no tool asks directly are asked (the indexer's, the export's and
//! import's, the search's candidates): one request struct each, borrowing what the caller
//! passed. The storage traits are declared in their area modules ([`crate::NodeStore`] in
//! `nodes.rs`, …) and joined in [`crate::MemoryStore`] (`tool.rs`); a tool's operation takes
//! the workspace and the tool's own request type (its MCP input, defined with its `check()` in
//! the area module) as `&Checked<Request>`, which only this crate can make: a store sees a
//! request only after the limits and the secret screening.

use crate::model::*;
use crate::perspectives::Perspective;
use crate::vectors::*;

/// `names` without repeats, first occurrence kept, in order: how a tool's result lists the
/// names it was given (`deleted`/`not_found`, `entities`/`not_found`).
pub fn first_occurrences(names: &[String]) -> impl Iterator<Item = &String> {
    let mut seen = std::collections::HashSet::new();
    names.iter().filter(move |name| seen.insert(name.as_str()))
}

/// `relations` without repeats, in first-occurrence order. A repeat is the same relation by
/// its names and type, whatever `valid_from` it gives.
pub fn each_relation_once(relations: &[RelationSpec]) -> Vec<&RelationSpec> {
    let mut seen = std::collections::HashSet::new();
    (relations.iter())
        .filter(|r| seen.insert((&r.from_entity, &r.to_entity, &r.relation_type)))
        .collect()
}

/// Which relations of a set of nodes a store reads: the ones touching the set (`open_nodes`)
/// or the ones inside it (a neighbourhood's induced subgraph).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoints {
    /// Relations with at least one endpoint in the set.
    Either,
    /// Relations with both endpoints in the set.
    Both,
}

impl Endpoints {
    /// The SQL operator joining a query's two endpoint conditions (`from IN set OP to IN
    /// set`): `OR` for [`Endpoints::Either`], `AND` for [`Endpoints::Both`].
    pub fn sql_operator(self) -> &'static str {
        match self {
            Endpoints::Either => "OR",
            Endpoints::Both => "AND",
        }
    }
}

/// The create, update and delete events of a workspace since a time
/// ([`crate::ConsolidationStore::event_counts`]).
#[derive(Debug, Clone, Copy)]
pub struct CountEvents {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Events from this time on.
    pub since: Timestamp,
}

/// The indexer's vectors to store ([`IndexStore::save_embeddings`]).
#[derive(Debug, Clone, Copy)]
pub struct SaveEmbeddings<'a> {
    /// The model that made them.
    pub model: &'a str,
    /// One record per (observation, perspective), each vector checked
    /// ([`crate::vector_defect`]).
    pub records: &'a [EmbeddingRecord],
}

/// One model's vectors of a workspace: their coverage ([`IndexStore::embedding_coverage`]) or
/// their deletion ([`IndexStore::clear_embeddings`]).
#[derive(Debug, Clone, Copy)]
pub struct ModelEmbeddings<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The model.
    pub model: &'a str,
}

/// The observations nearest to one vector ([`crate::SearchStore::vector_search`]).
#[derive(Debug, Clone, Copy)]
pub struct VectorSearch<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Only stored vectors of this model are compared.
    pub model: &'a str,
    /// The perspective whose vectors are compared.
    pub perspective: PerspectiveId,
    /// The query vector.
    pub vector: &'a [f32],
    /// At most this many observations.
    pub k: usize,
    /// Only the observations of this node.
    pub within: Option<&'a str>,
}

/// A node's facts with their vectors ([`crate::SplitStore::fact_vectors`]).
#[derive(Debug, Clone, Copy)]
pub struct FactVectors<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The node.
    pub name: &'a str,
    /// The embedding model whose vectors to read; `None`: none.
    pub model: Option<&'a str>,
    /// The perspective whose vectors to read; `None`: none.
    pub perspective: Option<PerspectiveId>,
    /// Only the newest this many current facts (by ordinal); `None`: all of them.
    pub newest: Option<u32>,
}

/// A node's current facts ([`crate::SplitStore::fact_vectors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    /// The node's name.
    pub name: String,
    /// Its current facts in ordinal order.
    pub facts: Vec<FactVector>,
}

/// One fact with its vector, if stored.
#[derive(Debug, Clone, PartialEq)]
pub struct FactVector {
    /// Its ordinal.
    pub ordinal: Ordinal,
    /// Its text.
    pub content: String,
    /// Its vector in the asked model and perspective; `None` when not (yet) embedded.
    pub vector: Option<Vec<f32>>,
}

/// Names that may be aliases ([`crate::AliasStore::resolve_aliases`]).
#[derive(Debug, Clone, Copy)]
pub struct ResolveAliases<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The names that were not found as node names.
    pub names: &'a [String],
}

/// Names close to names that were not found ([`crate::SuggestionStore::similar_names`]).
#[derive(Debug, Clone, Copy)]
pub struct SimilarNames<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The names that were not found.
    pub names: &'a [String],
    /// At most this many candidates per name.
    pub limit: usize,
}

/// Creating or changing one of a workspace's perspectives.
#[derive(Debug, Clone, Copy)]
pub struct SetPerspective<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The perspective.
    pub perspective: &'a Perspective,
}

/// The indexer's next pass: at most `limit` pending pairs of `model`, from `cursor` on.
#[derive(Debug, Clone, Copy)]
pub struct PendingEmbeddings<'a> {
    /// The embedding model.
    pub model: &'a str,
    /// At most this many.
    pub limit: usize,
    /// Where the last pass stopped.
    pub cursor: &'a PendingCursor,
}

/// The nodes' aggregate vectors of one model in one perspective.
#[derive(Debug, Clone, Copy)]
pub struct GetNodeVectors<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The embedding model.
    pub model: &'a str,
    /// The perspective's id.
    pub perspective: PerspectiveId,
}
