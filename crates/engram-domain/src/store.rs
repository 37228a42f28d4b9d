//! The storage traits every backend implements, and what each operation is asked.
//!
//! A tool's operation takes the workspace and the tool's own request type (its MCP input,
//! defined with its `check()` in the area module: `crate::nodes`, `crate::graph`, …) as
//! `&Checked<Request>`, which only this crate can make: a store sees a request only after the
//! limits and the secret screening. What no tool asks directly (the indexer's, the export's and
//! import's, the search's candidates) takes one request struct defined below the traits,
//! borrowing what the caller passed.

use async_trait::async_trait;

use crate::checked::Checked;
use crate::error::Result;
use crate::graph::{GetNeighborhood, GetPath};
use crate::history::{GetHistory, HistoryEntry};
use crate::memory_transfer::ImportBatch;
use crate::merge::{AliasesUpdate, MergeEntities, MergedEntities, SetAliases};
use crate::model::*;
use crate::nodes::{
    CreateEntities, DeleteEntities, GetNodesByType, GetRecentlyModified, OpenNodes, SetSummary,
    SetTags,
};
use crate::observations::{AddObservations, DeleteObservations, ReplaceObservation};
use crate::perspectives::Perspective;
use crate::relations::{CreateRelations, DeleteRelations, GetRelationsBetween, RenameRelationType};
use crate::search::results::*;
use crate::search::{CandidateQuery, Gathered, QueryVector};
use crate::split::{SplitEntity, SplitResult};
use crate::transfer::*;
use crate::validity::{EndObservations, EndRelations, EndedObservations, EndedRelations};
use crate::vectors::*;
use crate::workspaces::{DeleteWorkspace, RenameWorkspace};

/// `names` without repeats, first occurrence kept, in order: how a tool's result lists the
/// names it was given (`deleted`/`not_found`, `entities`/`not_found`).
pub fn first_occurrences(names: &[String]) -> impl Iterator<Item = &String> {
    let mut seen = std::collections::HashSet::new();
    names.iter().filter(move |name| seen.insert(name.as_str()))
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

/// Durable storage of workspaces and their graphs.
///
/// One method per tool of the catalog that needs no embeddings, plus workspace management.
/// Each call is atomic: it commits whole or changes nothing. Inputs are validated by
/// [`crate::Memory`] before they reach a store (limits in [`crate::limits`]); stores may rely on
/// that, and back it with database constraints.
///
/// Errors: unknown workspaces and nodes are [`crate::Error::NotFound`] unless the tool reports
/// them in its result (`not_found` lists); an unreachable database is
/// [`crate::Error::Unavailable`].
///
/// Object safe: used as `Arc<dyn MemoryStore>`. It is the union of one trait per capability,
/// each implemented by a backend in the module that holds its SQL; a part of engram that needs
/// one capability takes that trait alone (`Arc<dyn IndexStore>` for the indexer).
pub trait MemoryStore:
    WorkspaceStore
    + NodeStore
    + AliasStore
    + SplitStore
    + ObservationStore
    + RelationStore
    + GraphStore
    + TokenStore
    + TransferStore
    + IndexStore
    + SearchStore
{
}

impl<T> MemoryStore for T where
    T: WorkspaceStore
        + NodeStore
        + AliasStore
        + SplitStore
        + ObservationStore
        + RelationStore
        + GraphStore
        + TokenStore
        + TransferStore
        + IndexStore
        + SearchStore
        + ?Sized
{
}

/// Workspaces: creating, finding, listing, renaming and deleting them, and whether the store
/// can serve.
#[async_trait]
pub trait WorkspaceStore: Send + Sync + 'static {
    /// Whether every migration this build holds is applied; [`crate::Error::Unavailable`]
    /// when the store cannot be reached ([`crate::Memory::health`] turns `false` into an error).
    async fn schema_current(&self) -> Result<bool>;
    /// Creates a workspace. [`crate::Error::AlreadyExists`] when the name is taken.
    async fn create_workspace(&self, name: &str) -> Result<Workspace>;
    /// Looks a workspace up by name. [`crate::Error::NotFound`] when there is none.
    async fn workspace(&self, name: &str) -> Result<Workspace>;
    /// Every workspace with its node count, by name.
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>>;
    /// Renames a workspace; [`crate::Error::AlreadyExists`] when `new_name` is taken.
    async fn rename_workspace(&self, request: &Checked<RenameWorkspace>) -> Result<Workspace>;
    /// Deletes a workspace and everything in it. Without `force`, a workspace that holds
    /// nodes is refused with [`crate::Error::Conflict`].
    async fn delete_workspace(&self, request: &Checked<DeleteWorkspace>) -> Result<()>;
}

/// Nodes: the node tools of the catalog, and the counts and events kept per workspace.
#[async_trait]
pub trait NodeStore: Send + Sync + 'static {
    /// `create_entities`: inserts the nodes that do not exist yet with their observations;
    /// existing names are left exactly as they were and reported with `already_existed`.
    /// Rows come back in input order.
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateEntities>,
    ) -> Result<Vec<CreatedNode>>;
    /// `delete_entities`: deletes nodes with their observations, relations (both
    /// directions), embeddings and events.
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteEntities>,
    ) -> Result<DeletedNodes>;
    /// `open_nodes`: nodes with observations in ordinal order, and every relation touching one.
    async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        request: &Checked<OpenNodes>,
    ) -> Result<OpenedNodes>;
    /// `get_nodes_by_type`: nodes of one type, by name.
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNodesByType>,
    ) -> Result<Vec<TypedNode>>;
    /// `get_recently_modified`: nodes written in the last `days` days, newest first.
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRecentlyModified>,
    ) -> Result<Vec<NodeBrief>>;
    /// `set_summary`: sets the summary and moves `summary_updated_at` and `updated_at`.
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetSummary>,
    ) -> Result<SummaryUpdate>;
    /// `set_tags`: replaces the tag set (already de-duplicated).
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetTags>,
    ) -> Result<TagsUpdate>;
    /// `get_orphaned_nodes`: nodes with no relation in either direction, by name.
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>>;
    /// `get_pending_consolidation`: nodes with observations whose summary was never set or
    /// was set before their newest observation was written; oldest summary first.
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>>;
    /// `get_stats`: counts, and the fraction of current embeddings.
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats>;
    /// For each of `request.names`, in order, up to `request.limit` names of the workspace's
    /// nodes that share the most trigrams with it (case ignored; any order; never the name
    /// itself), for [`crate::suggestions`]: an index lookup, not a scan.
    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>>;
    /// Counts of create, update and delete events since `since` (the consolidation report's
    /// `event_summary`).
    async fn event_counts(&self, request: CountEvents) -> Result<EventCounts>;
}

/// Duplicates merged, and the aliases a node answers to.
#[async_trait]
pub trait AliasStore: Send + Sync + 'static {
    /// `merge_entities`, in one transaction: the sources' observations appended to the target
    /// in their order (new ordinals; a current source fact whose exact text the target holds
    /// as a current fact is dropped), their relations re-pointed (those the target has, and
    /// those between a source and the target, dropped), ended relations too, tags united
    /// (the target's first), the sources' names (and their aliases) made the target's
    /// aliases, a `merged:<source>` update event recorded on the target, the sources deleted.
    /// [`crate::Error::NotFound`] for an unknown node; [`crate::Error::InvalidArgument`]
    /// naming `sources` when the tags would pass 64.
    async fn merge_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<MergeEntities>,
    ) -> Result<MergedEntities>;
    /// `set_aliases`: replaces the node's aliases. [`crate::Error::InvalidArgument`] naming
    /// `aliases[i]` (nothing changed) when one is a node's name or another node's alias;
    /// [`crate::Error::NotFound`] for an unknown node.
    async fn set_aliases(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetAliases>,
    ) -> Result<AliasesUpdate>;
    /// The node names the aliases among `names` stand for, by alias; names that are no alias
    /// are absent.
    async fn resolve_aliases(
        &self,
        request: ResolveAliases<'_>,
    ) -> Result<std::collections::HashMap<String, String>>;
}

/// Overgrown nodes split.
#[async_trait]
pub trait SplitStore: Send + Sync + 'static {
    /// `split_entity`, in one transaction: each part created (type: its own or the
    /// original's) with the original's current facts it names (new ordinals 1, 2, … in the
    /// original's order; versions, periods and vectors move with them), related to the
    /// original by `relation_type`, and a `split:<part>` update event recorded on the
    /// original. [`crate::Error::NotFound`] for an unknown node;
    /// [`crate::Error::InvalidArgument`] naming `parts[i].name` when a node or alias has that
    /// name, `parts[i].ordinals[j]` when it is no current fact of the original.
    async fn split_entity(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SplitEntity>,
    ) -> Result<SplitResult>;
    /// The node's current facts in ordinal order (the newest `newest` of them, when given),
    /// each with its stored vector of `model` in `perspective` when there is one. [`crate::Error::NotFound`] for an unknown node.
    async fn fact_vectors(&self, request: FactVectors<'_>) -> Result<NodeFacts>;
}

/// Observations: appending, replacing and deleting a node's ordered facts.
#[async_trait]
pub trait ObservationStore: Send + Sync + 'static {
    /// `add_observations`: appends in order; ordinals come from a per-node counter, so
    /// concurrent writers never collide and deleted ordinals are never reused.
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddObservations>,
    ) -> Result<Vec<AddedObservations>>;
    /// `replace_observation`: replaces the text in place, keeping the ordinal.
    /// [`crate::Error::NotFound`] for an unknown node or ordinal.
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ReplaceObservation>,
    ) -> Result<ReplacedObservation>;
    /// `delete_observations`: deletes by ordinal; the others keep theirs.
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteObservations>,
    ) -> Result<Vec<DeletedObservations>>;
    /// `end_observations`: the current facts at the ordinals stop holding at `ended_at` (the
    /// store's now when absent), kept for history. [`crate::Error::InvalidArgument`] naming
    /// `ended_at` (nothing changed) when it is before a fact's `valid_from`.
    async fn end_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndObservations>,
    ) -> Result<Vec<EndedObservations>>;
    /// Deletes for good, in every workspace, the facts whose `expires_at` has passed (they
    /// left every read when it did); at most `limit` per call. Returns how many.
    async fn purge_expired(&self, limit: u32) -> Result<u64>;
}

/// Relations: creating, deleting, renaming and reading typed relations.
#[async_trait]
pub trait RelationStore: Send + Sync + 'static {
    /// `create_relations`: creates the relations whose endpoints exist and that do not exist.
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateRelations>,
    ) -> Result<CreatedRelations>;
    /// `delete_relations`: deletes the given relations where they exist.
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteRelations>,
    ) -> Result<DeletedRelations>;
    /// `end_relations`: the current relations stop holding at `ended_at` (the store's now when
    /// absent) and are kept with their period; creating one again starts a new period.
    /// [`crate::Error::InvalidArgument`] naming `ended_at` (nothing changed) when it is before
    /// a relation's `valid_from`.
    async fn end_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndRelations>,
    ) -> Result<EndedRelations>;
    /// `rename_relation_type`: changes one relation's type. [`crate::Error::NotFound`] when
    /// the relation does not exist, [`crate::Error::Conflict`] when the renamed relation
    /// already exists (nothing is changed then).
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<RenameRelationType>,
    ) -> Result<RelationSpec>;
    /// `get_relations_between`: relations linking the two nodes, in both directions.
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelationsBetween>,
    ) -> Result<Vec<Relation>>;
}

/// Walking the graph: neighbourhoods, paths and mentions without relations.
#[async_trait]
pub trait GraphStore: Send + Sync + 'static {
    /// `get_neighborhood`: the node and everything within `depth` hops, relations followed in
    /// either direction. [`crate::Error::NotFound`] for an unknown node.
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNeighborhood>,
    ) -> Result<Neighborhood>;
    /// `get_history`: the node's entries before `before`, newest first: `limit` of them, and
    /// any more at the instant of the last (so that no entry falls between pages).
    /// [`crate::Error::NotFound`] for an unknown node.
    async fn get_history(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetHistory>,
    ) -> Result<Vec<HistoryEntry>>;
    /// `get_path`: a shortest path (in hops, relations in either direction) of at most
    /// [`crate::limits::MAX_PATH_HOPS`]. [`crate::Error::NotFound`] for an unknown endpoint.
    async fn get_path(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetPath>,
    ) -> Result<GraphPath>;
    /// `find_unlinked_references`: pairs where a node's observations mention another node's
    /// whole name (case-insensitive, at word boundaries) but no relation links the two.
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>>;
}

/// Access tokens for the HTTP transports ([`crate::auth`]).
#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    /// Stores a new access token ([`crate::auth`]); its id must be new.
    async fn create_token(&self, token: &crate::auth::NewToken) -> Result<crate::auth::TokenInfo>;
    /// Every access token (of `workspace` when given), by workspace name then age.
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<crate::auth::TokenInfo>>;
    /// The access token with public id `id` and the SHA-256 of its secret, if it exists.
    async fn token(&self, id: &str) -> Result<Option<(crate::auth::TokenInfo, Vec<u8>)>>;
    /// Revokes an access token (it is kept, with `revoked_at`, and grants nothing since);
    /// [`crate::Error::NotFound`] (kind `token`) when there is none or it is revoked already.
    async fn revoke_token(&self, id: &str) -> Result<()>;
}

/// Whole-graph pages and import batches (`read_graph`, `engram export`, `engram import`).
#[async_trait]
pub trait TransferStore: Send + Sync + 'static {
    /// `read_graph` and `engram export`: one page of the workspace's graph in one snapshot,
    /// nodes in byte-wise name order after `query.after` (at most `query.limit`,
    /// of `query.entity_type` when given) with their observation counts, their observations
    /// when `query.observations`, and the relations leaving them.
    async fn graph_page(&self, workspace: WorkspaceId, query: &GraphPageQuery)
    -> Result<GraphPage>;
    /// `engram import`: one batch in one transaction. Nodes that do not exist are created as
    /// recorded (given ordinals, timestamps and ordinal counter kept); nodes that exist keep
    /// their type, summary and tags. Either way, observations whose text the node already
    /// holds are skipped and the others placed by [`crate::transfer::place_observations`].
    /// Relations whose endpoints both exist (after this batch's nodes) are created unless
    /// present; the others come back in `relations_missing`.
    async fn import(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ImportBatch>,
    ) -> Result<ImportOutcome>;
}

/// What the indexer reads and writes: perspectives, pending (observation, perspective) pairs,
/// vectors and their coverage.
#[async_trait]
pub trait IndexStore: Send + Sync + 'static {
    /// The workspace's perspectives, by name. A workspace starts with
    /// [`crate::perspectives::DEFAULT_PERSPECTIVES`].
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>>;
    /// Creates or changes the workspace's perspective `perspective.name` (its id is ignored)
    /// and returns it as stored. Vectors of changed perspectives become stale and are
    /// re-embedded by the indexer.
    async fn set_perspective(&self, request: SetPerspective<'_>) -> Result<Perspective>;
    /// Up to `limit` (observation, enabled perspective) pairs whose `model` vector is missing
    /// or whose node changed since it was rendered, workspaces in turn: those of the first
    /// workspace after `cursor.served_first` (by id, wrapping around; the first workspace for
    /// `None`) first, then the next workspaces' until `limit` is reached. Within a workspace,
    /// pairs come in observation order from `cursor.after` on, then from its first observation
    /// up to there. The indexer passes the cursor of its last pass ([`PendingCursor`]), so no
    /// workspace waits behind another's backlog for more than a batch, and a pass reads about
    /// its batch's rows, not every observation before them.
    async fn pending_embeddings(
        &self,
        request: PendingEmbeddings<'_>,
    ) -> Result<Vec<EmbeddingTask>>;
    /// Stores the indexer's results for `model` and brings the affected nodes' aggregate
    /// vectors (`node_embeddings`) up to date.
    async fn save_embeddings(&self, request: SaveEmbeddings<'_>) -> Result<()>;
    /// Every node of the workspace that has an aggregate `model` vector in `perspective`
    /// (the mean of its observation vectors), with its type, ordered by name. The
    /// consolidation report clusters these.
    async fn node_vectors(&self, request: GetNodeVectors<'_>) -> Result<Vec<NodeVector>>;
    /// The fraction (0.0–1.0) of the workspace's (observation, enabled perspective) pairs whose
    /// `model` vector is current; 1.0 for a workspace without observations.
    async fn embedding_coverage(&self, request: ModelEmbeddings<'_>) -> Result<f64>;
    /// A number that changes whenever anything is written in any workspace (the newest
    /// event's id), so an idle indexer can tell cheaply whether to look for work.
    async fn change_marker(&self) -> Result<i64>;
    /// Deletes the workspace's `model` vectors (observation and node level), so the indexer
    /// embeds everything again; returns how many observation vectors were dropped.
    async fn clear_embeddings(&self, request: ModelEmbeddings<'_>) -> Result<u64>;
    /// How many (observation, enabled perspective) pairs the workspace has.
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64>;
}

/// Gathering one search's candidates, and the pairs of related nodes similarity searches
/// leave out.
#[async_trait]
pub trait SearchStore: Send + Sync + 'static {
    /// Gathers the candidates of one search in one snapshot ([`crate::search`]): the
    /// `query.depth` nearest observations per query vector (cosine similarity, only stored
    /// vectors of `query.model`), the `query.text_depth` best matches of `query.text` by full
    /// text (any of its words, stemmed, stop words dropped; higher scores are better), all
    /// within `query.within` and `query.entity_types` when given; then, for every candidate,
    /// its stored vector per query vector's perspective and its full-text score
    /// ([`crate::search::CandidateSet::set_vectors`], `set_text_scores`); and, when
    /// `query.perspectives`, the workspace's perspectives. Candidates come back in any order.
    async fn search(&self, query: &CandidateQuery) -> Result<Gathered>;
    /// The `request.k` observations of the workspace (or of the node `within`) whose `model`
    /// vector in `perspective` is closest to `vector`, with cosine similarity, best first (ties by node
    /// name, then ordinal): [`SearchStore::search`] with that one vector and no text.
    async fn vector_search(&self, request: VectorSearch<'_>) -> Result<Vec<ObservationHit>> {
        let VectorSearch {
            workspace,
            model,
            perspective,
            vector,
            k,
            within,
        } = request;
        let request = CandidateQuery {
            workspace,
            perspectives: false,
            alias_runs: Vec::new(),
            text: None,
            model: model.to_owned(),
            vectors: vec![QueryVector {
                perspective,
                perspective_name: String::new(),
                vector: vector.to_vec(),
                token_signs: None,
            }],
            depth: k,
            text_depth: 0,
            within: within.map(str::to_owned),
            entity_types: Vec::new(),
            as_of: None,
        };
        let gathered = self.search(&request).await?;
        let mut hits: Vec<ObservationHit> = (gathered.candidates.into_iter())
            .filter_map(|c| {
                let score = c.signals.similarities[0]?;
                let row = c.row;
                Some(ObservationHit {
                    name: row.name,
                    entity_type: row.entity_type,
                    summary: row.summary,
                    ordinal: row.ordinal,
                    content: row.content,
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            (b.score.total_cmp(&a.score))
                .then_with(|| a.name.cmp(&b.name))
                .then(a.ordinal.cmp(&b.ordinal))
        });
        Ok(hits)
    }
    /// The `(from, to)` node names of every relation of the workspace (a pair once however
    /// many types link it), for telling related nodes from unrelated ones.
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>>;
}

/// The create, update and delete events of a workspace since a time
/// ([`NodeStore::event_counts`]).
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

/// The observations nearest to one vector ([`SearchStore::vector_search`]).
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

/// A node's facts with their vectors ([`SplitStore::fact_vectors`]).
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

/// A node's current facts ([`SplitStore::fact_vectors`]).
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

/// Names that may be aliases ([`AliasStore::resolve_aliases`]).
#[derive(Debug, Clone, Copy)]
pub struct ResolveAliases<'a> {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The names that were not found as node names.
    pub names: &'a [String],
}

/// Names close to names that were not found ([`NodeStore::similar_names`]).
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
