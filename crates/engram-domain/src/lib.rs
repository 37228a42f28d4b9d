//! engram's domain: the knowledge-graph model, its validation, and the storage trait.
//!
//! A workspace holds nodes (unique names, a type, a summary, tags and ordered
//! observations) and typed directed relations between them. [`Memory`] is the catalog's tools
//! over any [`MemoryStore`]; it validates every argument against [`limits`] before the store
//! sees it. This crate does no I/O and knows no SQL, HTTP or MCP.

pub mod access;
pub mod all_paths;
pub mod auth;
pub mod authorship;
mod brief;
mod checked;
pub mod compact;
mod consolidation;
mod embed;
mod embedding_coverage;
mod error;
mod generate;
mod graph;
mod grouping;
mod history;
mod indexer;
pub mod limits;
mod memory;
mod merge;
mod model;
mod naming;
mod nodes;
mod observations;
pub mod path;
pub mod perspectives;
pub mod reflections;
mod relations;
mod retry;
pub mod search;
pub mod secrets;
mod split;
mod stats;
mod store;
pub mod suggestions;
#[cfg(feature = "testsuite")]
pub mod testsuite;
pub mod tool;
pub mod transactions;
pub mod transfer;
mod validity;
mod vectors;
pub mod vocabulary;
mod workspaces;

pub use access::{
    AccessBatch, AccessLog, AccessRanking, AccessStore, NodeUse, STALE_READS, StaleNode,
};
pub use auth::TokenStore;
pub use brief::{BRIEF_NODES, Brief, ConnectedNode};
pub use checked::Checked;
pub use consolidation::{
    CLUSTER_NEIGHBOURS, Cluster, ConsolidationReport, ConsolidationStore, EventCounts, FactPair,
    FactPairCosines, GetConsolidationReport, GetPendingConsolidation, GroupBrief,
    MAX_CLUSTER_NAMES, MergeCandidate, PendingConsolidation, PendingConsolidationResult,
    RelationCandidate, SAME_THING, SPLIT_MIN_FACTS, SplitCandidate, StaleSummary, TextSource,
};
pub use embed::{Embedder, Embedding};
pub use embedding_coverage::EmbeddingProgress;
pub use error::{Error, Result};
pub use generate::{GenerationBudget, TextGenerator};
pub use graph::{
    AllPaths, FindAllPaths, FindUnlinkedReferences, GetNeighborhood, GetPath, GraphPath,
    GraphStore, UnlinkedReference, UnlinkedReferencesResult,
};
pub use history::{
    DEFAULT_HISTORY_LIMIT, GetHistory, History, HistoryEntry, HistoryOperation, HistoryStore,
};
pub use indexer::Indexer;
pub use limits::MAX_ALIASES;
pub use memory::Memory;
pub use merge::{
    AliasStore, AliasesUpdate, FactMoves, MAX_MERGE_SOURCES, MergeEntities, MergedEntities,
    MovedObservation, SetAliases, SourceFact, plan_merge_facts, refuse_held_aliases,
};
pub use model::*;
pub use naming::aliases::Aliased;
pub use nodes::{
    CreateEntities, CreateEntitiesResult, CreatedNode, DeleteEntities, DeletedNodes,
    GetNodesByType, GetOrphanedNodes, GetRecentlyModified, IfExists, NodeBriefsResult, NodeStore,
    OpenNodes, OpenedNodes, SetSummary, SetTags, SummaryUpdate, TagsUpdate, TypedNode,
    TypedNodesResult,
};
pub use observations::{
    AddObservations, AddObservationsResult, AddedObservations, DeleteObservations,
    DeleteObservationsResult, DeletedObservations, ObservationAdditions, ObservationDeletions,
    ObservationStore, ReplaceObservation, ReplacedObservation, SimilarFact, SimilarKind,
};
pub use reflections::{
    AddReflection, NodeReflection, Reflection, ReflectionCandidate, ReflectionHit, ReflectionQuery,
    ReflectionRecord, ReflectionResults, ReflectionStore, ReflectionTarget, ReflectionsImported,
    RelationTarget, SearchReflections, Target,
};
pub use relations::{
    CreateRelations, CreatedRelations, DeleteRelations, DeletedRelations, GetRelationsBetween,
    RelationStore, RelationsResult, RenameRelationType, RenamedRelation,
};
pub use retry::Failure;
pub use search::SearchStore;
pub use search::requests::{
    FindSimilarNodes, QueryObservations, SearchNodes, SearchObservations, SimilarNodesResult,
};
pub use search::results::*;
pub use secrets::SecretPolicy;
pub use split::{
    CreatedPart, DEFAULT_SPLIT_PARTS, GROUPED_FACTS, MAX_PARTS, ProposeSplit, SplitEntity,
    SplitGroup, SplitMove, SplitPart, SplitProposal, SplitResult, SplitStore, plan_split,
};
pub use stats::{GetStats, Stats, StatsStore};
pub use store::*;
pub use suggestions::SuggestionStore;
pub use tool::{Effect, MemoryStore, Tool, ToolContext, ToolVisitor};
pub use transfer::ImportBatch;
pub use transfer::operations::{IMPORT_BATCH_OBSERVATIONS, READ_GRAPH_LIMIT, ReadGraph};
pub use transfer::store::TransferStore;
pub use validity::{
    EndObservations, EndObservationsResult, EndRelations, EndedObservations, EndedRelations,
    ObservationEndings, ReadTime, ValidityStore, ended_before_it_began,
};
pub use vectors::*;
pub use vocabulary::{
    Degree, DescribeNode, FilteredRelations, GetGraphVocabulary, GetRelations, GetSubgraph,
    GraphVocabulary, NodeDescription, NodeNeighbour, TypeCount, VocabularyStore,
};
pub use workspaces::{DeleteWorkspace, RenameWorkspace, WorkspaceStore};

/// Hands every tool engram has to `visitor`, area by area; each area module lists its own
/// (its `tools()`), so a protocol layer publishes them all without naming any.
pub fn each_tool(visitor: &mut impl ToolVisitor) {
    nodes::tools(visitor);
    observations::tools(visitor);
    validity::tools(visitor);
    relations::tools(visitor);
    graph::tools(visitor);
    vocabulary::tools(visitor);
    history::tools(visitor);
    merge::tools(visitor);
    split::tools(visitor);
    transfer::operations::tools(visitor);
    stats::tools(visitor);
    search::requests::tools(visitor);
    reflections::tools(visitor);
    consolidation::tools(visitor);
}
