//! [`Memory`]: the tools' semantics over a [`MemoryStore`]: validation first, then the store.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{CreateToken, TokenInfo};
use crate::embed::Embedder;
use crate::error::Result;
use crate::generate::{GenerationBudget, TextGenerator};
use crate::graph::{GetNeighborhood, GetPath};
use crate::history::{GetHistory, History};
use crate::memory_stats::CountedCoverages;
use crate::memory_transfer::{ImportBatch, ReadGraph};
use crate::merge::{AliasesUpdate, MergeEntities, MergedEntities, SetAliases};
use crate::model::*;
use crate::nodes::{
    CreateEntities, DeleteEntities, GetNodesByType, GetRecentlyModified, OpenNodes, SetSummary,
    SetTags,
};
use crate::observations::{AddObservations, DeleteObservations, ReplaceObservation};
use crate::relations::{CreateRelations, DeleteRelations, GetRelationsBetween, RenameRelationType};
use crate::search::QUERY_EMBEDDING_BUDGET;
use crate::search::requests::*;
use crate::search::results::*;
use crate::search::tools::Searcher;
use crate::split::{ProposeSplit, SplitEntity, SplitProposal, SplitResult};
use crate::store::MemoryStore;
use crate::store::*;
use crate::transfer::*;
use crate::validity::{EndObservations, EndRelations, EndedObservations, EndedRelations};
use crate::workspaces::{DeleteWorkspace, RenameWorkspace};
use crate::{Brief, EmbeddingProgress, SecretPolicy};

/// The graph tools of the catalog, validated, over any store.
///
/// Every method checks its arguments against [`crate::limits`] before anything is written,
/// so a rejected call ([`Error::InvalidArgument`], naming the field and the limit) changes
/// nothing. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    generator: Option<Arc<dyn TextGenerator>>,
    generation_budget: GenerationBudget,
    /// The search tools, with the embedder, the indexer (for the texts it set aside), the
    /// query vectors' cache and the time a search waits for the embedder.
    search: Searcher,
    /// `get_stats`' last counted embedding coverages (`memory_stats.rs`).
    counted_coverage: CountedCoverages,
    /// What a write does with a text holding a credential.
    secrets: SecretPolicy,
}

impl Memory {
    /// Wraps a store; without an embedder, embedding-mode searches answer from full text.
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        Self {
            search: Searcher::new(store.clone(), QUERY_EMBEDDING_BUDGET),
            store,
            generator: None,
            generation_budget: GenerationBudget::default(),
            counted_coverage: CountedCoverages::default(),
            secrets: SecretPolicy::default(),
        }
    }

    /// Knows `indexer` (a clone shares its state), so [`Memory::rejected_texts`] can say
    /// which texts its embedder rejected.
    #[must_use]
    pub fn with_indexer(mut self, indexer: crate::Indexer) -> Self {
        self.search = self.search.with_indexer(indexer);
        self
    }

    /// The workspace's texts the indexer set aside because the embedder rejected them (tried
    /// again after a back-off), by node name and ordinal; empty without an indexer. The
    /// indexer remembers where each one is, so this reads nothing from the store.
    pub fn rejected_texts(&self, workspace: WorkspaceId) -> Vec<RejectedText> {
        self.search.rejected_texts(workspace)
    }

    /// How long a search may wait for the embedder (default 3 s). Past it, or when the
    /// embedder fails, the search answers from full text and says so, and searches skip the
    /// embedder for 30 s (`search/query_embedding.rs`). Starts with an empty query cache.
    #[must_use]
    pub fn with_query_embedding_budget(mut self, budget: Duration) -> Self {
        self.search = self.search.with_budget(budget);
        self
    }

    /// Screens every written text for credentials by `policy` (default
    /// [`SecretPolicy::Refuse`]).
    #[must_use]
    pub fn with_secret_policy(mut self, policy: SecretPolicy) -> Self {
        self.secrets = policy;
        self
    }

    /// The store itself, for the conformance suite's checks below the tools.
    #[cfg(feature = "testsuite")]
    pub(crate) fn store(&self) -> &dyn MemoryStore {
        &*self.store
    }

    /// Uses `embedder` for semantic search (the same one the indexer fills vectors with).
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.search = self.search.with_embedder(embedder);
        self
    }

    /// Uses `generator` for the consolidation report's drafts, rationales and labels, spending
    /// at most `budget` on each report (without one they are extractive).
    #[must_use]
    pub fn with_generator(
        mut self,
        generator: Arc<dyn TextGenerator>,
        budget: GenerationBudget,
    ) -> Self {
        self.generator = Some(generator);
        self.generation_budget = budget;
        self
    }

    /// The text generator, if one is configured.
    pub fn generator(&self) -> Option<&Arc<dyn TextGenerator>> {
        self.generator.as_ref()
    }

    /// The embedder, if one is configured.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.search.embedder()
    }

    // Workspaces (`workspaces.rs`).

    /// Whether the store is reachable and its schema current.
    pub async fn health(&self) -> Result<()> {
        crate::workspaces::health(&*self.store).await
    }

    /// Creates a workspace named 1–64 characters of `A–Z a–z 0–9 . _ -`.
    pub async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        crate::workspaces::create_workspace(&*self.store, self.secrets, name).await
    }

    /// Looks up the workspace a connection binds to.
    pub async fn workspace(&self, name: &str) -> Result<Workspace> {
        crate::workspaces::workspace(&*self.store, name).await
    }

    /// Every workspace with its node count.
    pub async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        self.store.list_workspaces().await
    }

    /// Renames a workspace.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a bad name, [`crate::Error::NotFound`] for an
    /// unknown workspace, [`crate::Error::AlreadyExists`] when the new name is taken.
    pub async fn rename_workspace(&self, request: RenameWorkspace) -> Result<Workspace> {
        crate::workspaces::rename_workspace(&*self.store, self.secrets, request).await
    }

    /// Deletes a workspace; one that holds nodes needs `force`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a bad name, [`crate::Error::NotFound`] for an
    /// unknown workspace, [`crate::Error::Conflict`] for one that holds nodes without `force`.
    pub async fn delete_workspace(&self, request: DeleteWorkspace) -> Result<()> {
        crate::workspaces::delete_workspace(&*self.store, request).await
    }

    /// The workspace's perspectives.
    pub async fn perspectives(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<crate::perspectives::Perspective>> {
        self.store.perspectives(workspace).await
    }

    // Nodes (`nodes.rs`).

    /// `create_entities`. Names must be unique within the batch; at most 1,000 entities and
    /// 1,000 observations per call.
    pub async fn create_entities(
        &self,
        workspace: WorkspaceId,
        request: CreateEntities,
    ) -> Result<Vec<CreatedNode>> {
        crate::nodes::create_entities(&*self.store, self.secrets, workspace, request).await
    }

    /// `delete_entities`.
    pub async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        request: DeleteEntities,
    ) -> Result<DeletedNodes> {
        crate::nodes::delete_entities(&*self.store, workspace, request).await
    }

    /// `open_nodes`.
    pub async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        request: OpenNodes,
    ) -> Result<OpenedNodes> {
        crate::nodes::open_nodes(&*self.store, workspace, request).await
    }

    /// `get_nodes_by_type`.
    pub async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        request: GetNodesByType,
    ) -> Result<Vec<TypedNode>> {
        crate::nodes::get_nodes_by_type(&*self.store, workspace, request).await
    }

    /// `get_recently_modified`: `days` 1–36,500, `limit` 1–1,000.
    pub async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        request: GetRecentlyModified,
    ) -> Result<Vec<NodeBrief>> {
        crate::nodes::get_recently_modified(&*self.store, workspace, request).await
    }

    /// `set_summary`: 1–65,536 bytes.
    pub async fn set_summary(
        &self,
        workspace: WorkspaceId,
        request: SetSummary,
    ) -> Result<SummaryUpdate> {
        crate::nodes::set_summary(&*self.store, self.secrets, workspace, request).await
    }

    /// `set_tags`: at most 64 tags of 1–128 bytes; an empty list clears them.
    pub async fn set_tags(&self, workspace: WorkspaceId, request: SetTags) -> Result<TagsUpdate> {
        crate::nodes::set_tags(&*self.store, self.secrets, workspace, request).await
    }

    /// `get_orphaned_nodes`.
    pub async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        self.store.get_orphaned_nodes(workspace).await
    }

    /// `get_pending_consolidation`.
    pub async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        self.store.get_pending_consolidation(workspace).await
    }

    // Observations (`observations.rs`).

    /// `add_observations`: at most 1,000 contents per call, each 1–65,536 bytes.
    pub async fn add_observations(
        &self,
        workspace: WorkspaceId,
        request: AddObservations,
    ) -> Result<Vec<AddedObservations>> {
        crate::observations::add_observations(&*self.store, self.secrets, workspace, request).await
    }

    /// `replace_observation`.
    pub async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        request: ReplaceObservation,
    ) -> Result<ReplacedObservation> {
        crate::observations::replace_observation(&*self.store, self.secrets, workspace, request)
            .await
    }

    /// `delete_observations`: at most 1,000 ordinals and texts per call, at least one per
    /// node.
    pub async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        request: DeleteObservations,
    ) -> Result<Vec<DeletedObservations>> {
        crate::observations::delete_observations(&*self.store, workspace, request).await
    }

    /// `merge_entities`: the sources folded into the target, in one transaction; their names
    /// become its aliases.
    pub async fn merge_entities(
        &self,
        workspace: WorkspaceId,
        request: MergeEntities,
    ) -> Result<MergedEntities> {
        crate::merge::merge_entities(&*self.store, workspace, request).await
    }

    /// `propose_split`: how a node's current facts fall into groups, each labelled.
    pub async fn propose_split(
        &self,
        workspace: WorkspaceId,
        request: ProposeSplit,
    ) -> Result<SplitProposal> {
        let model = self.embedder().map(|e| e.model_id());
        let reads = (&*self.store, &self.search);
        crate::split::propose_split(reads, model, workspace, request).await
    }

    /// `split_entity`: facts moved to new nodes related to the original, in one transaction.
    pub async fn split_entity(
        &self,
        workspace: WorkspaceId,
        request: SplitEntity,
    ) -> Result<SplitResult> {
        crate::split::split_entity(&*self.store, self.secrets, workspace, request).await
    }

    /// `set_aliases`: the other names a node answers to.
    pub async fn set_aliases(
        &self,
        workspace: WorkspaceId,
        request: SetAliases,
    ) -> Result<AliasesUpdate> {
        crate::merge::set_aliases(&*self.store, workspace, request).await
    }

    /// `get_history`: the node's timeline, newest first, paged by `before`.
    pub async fn get_history(
        &self,
        workspace: WorkspaceId,
        request: GetHistory,
    ) -> Result<History> {
        crate::history::get_history(&*self.store, workspace, request).await
    }

    /// `end_observations`: at most 1,000 ordinals per call; the facts are kept, ended.
    pub async fn end_observations(
        &self,
        workspace: WorkspaceId,
        request: EndObservations,
    ) -> Result<Vec<EndedObservations>> {
        crate::validity::end_observations(&*self.store, workspace, request).await
    }

    /// Deletes for good the facts whose expiry has passed, at most `limit` (the background
    /// purge); how many.
    pub async fn purge_expired(&self, limit: u32) -> Result<u64> {
        self.store.purge_expired(limit).await
    }

    // Relations (`relations.rs`).

    /// `create_relations`.
    pub async fn create_relations(
        &self,
        workspace: WorkspaceId,
        request: CreateRelations,
    ) -> Result<CreatedRelations> {
        crate::relations::create_relations(&*self.store, self.secrets, workspace, request).await
    }

    /// `delete_relations`.
    pub async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        request: DeleteRelations,
    ) -> Result<DeletedRelations> {
        crate::relations::delete_relations(&*self.store, workspace, request).await
    }

    /// `end_relations`: at most 1,000 per call; the relations are kept, ended.
    pub async fn end_relations(
        &self,
        workspace: WorkspaceId,
        request: EndRelations,
    ) -> Result<EndedRelations> {
        crate::validity::end_relations(&*self.store, workspace, request).await
    }

    /// `rename_relation_type`: the relation as renamed.
    pub async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        request: RenameRelationType,
    ) -> Result<RelationSpec> {
        crate::relations::rename_relation_type(&*self.store, self.secrets, workspace, request).await
    }

    /// `get_relations_between`.
    pub async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        request: GetRelationsBetween,
    ) -> Result<Vec<Relation>> {
        crate::relations::get_relations_between(&*self.store, workspace, request).await
    }

    // Graph (`graph.rs`).

    /// `get_neighborhood`: `depth` 0–6.
    pub async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        request: GetNeighborhood,
    ) -> Result<Neighborhood> {
        crate::graph::get_neighborhood(&*self.store, workspace, request).await
    }

    /// `get_path`.
    pub async fn get_path(&self, workspace: WorkspaceId, request: GetPath) -> Result<GraphPath> {
        crate::graph::get_path(&*self.store, workspace, request).await
    }

    /// `find_unlinked_references`.
    pub async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        self.store.find_unlinked_references(workspace).await
    }

    /// Creates or changes a perspective: a name of 1–64 characters of `a–z 0–9 _ -`, a
    /// document template (1–4,096 bytes, no NUL) that uses `{observation}`, and a query
    /// template (1–4,096 bytes, no NUL) that uses `{query}`.
    pub async fn set_perspective(
        &self,
        workspace: WorkspaceId,
        perspective: &crate::perspectives::Perspective,
    ) -> Result<crate::perspectives::Perspective> {
        let (store, search) = (&*self.store, &self.search);
        crate::workspaces::set_perspective(store, self.secrets, search, workspace, perspective)
            .await
    }

    /// `get_stats`, with `embedding_coverage` for the configured embedder (0.0 without one)
    /// and the texts its embedder refused ([`Memory::rejected_texts`]).
    pub async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        let (store, counted) = (&*self.store, &self.counted_coverage);
        crate::memory_stats::get_stats(store, &self.search, counted, workspace).await
    }

    // Search (`search/tools.rs`).

    /// `search_nodes`: the `limit` (1–1,000) nodes best matching `query` (1–4,096 bytes), each
    /// once with its best-matching observation.
    ///
    /// `mode` ([`SearchMode`]): hybrid (default) fuses embedding similarity across every
    /// enabled perspective with full-text rank ([`crate::search`]); embedding and text use one
    /// signal. When the model is unavailable or no current vector matches, hybrid and
    /// embedding answer from full text and say so in `notice`.
    pub async fn search_nodes(
        &self,
        workspace: WorkspaceId,
        request: &SearchNodes,
    ) -> Result<SearchResults> {
        self.search.search_nodes(workspace, request).await
    }

    /// `search_observations` (an extension beyond the catalog): the `limit` (1–1,000)
    /// observations of the whole workspace best matching `query`, each with its node, so a
    /// node with many observations shows every one that matches. `entity_types` (at most 100
    /// names) narrows the search to nodes of those types. Modes as in
    /// [`Memory::search_nodes`].
    pub async fn search_observations(
        &self,
        workspace: WorkspaceId,
        request: &SearchObservations,
    ) -> Result<FoundObservations> {
        self.search.search_observations(workspace, request).await
    }

    /// `query_observations`: the observations of one node best matching `query`, best first.
    /// Modes and fallback as in [`Memory::search_nodes`].
    ///
    /// Errors: [`Error::NotFound`] for an unknown node.
    pub async fn query_observations(
        &self,
        workspace: WorkspaceId,
        request: &QueryObservations,
    ) -> Result<ObservationResults> {
        self.search.query_observations(workspace, request).await
    }

    /// `find_similar_nodes`: unrelated pairs whose aggregate vectors (in the `general`
    /// perspective, or the first enabled one) have cosine similarity ≥ `min_score`
    /// (−1.0–1.0), best first, at most `limit` (1–1,000).
    ///
    /// Errors: [`Error::Unavailable`] without an embedder.
    pub async fn find_similar_nodes(
        &self,
        workspace: WorkspaceId,
        request: FindSimilarNodes,
    ) -> Result<Vec<SimilarPair>> {
        self.search.find_similar_nodes(workspace, request).await
    }

    // `memory_brief.rs`.

    /// The workspace at a glance: its counts, the `nodes` (1–[`BRIEF_NODES`], clamped) most
    /// connected nodes and the `nodes` most recently changed others, each with its type and
    /// summary. Reads every relation's endpoints once (the degree of each node), so it costs
    /// about what the consolidation report's relation list does.
    ///
    /// # Errors
    /// What the store reports.
    pub async fn brief(&self, workspace: WorkspaceId, nodes: usize) -> Result<Brief> {
        crate::memory_brief::brief(&*self.store, workspace, nodes).await
    }

    // `memory_indexing.rs`.

    /// The workspace's (observation, enabled perspective) pairs: what the indexer embeds.
    ///
    /// # Errors
    /// What the store reports.
    pub async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        self.store.embedding_pairs(workspace).await
    }

    /// How far `model`'s vectors are with the workspace, counted now (not the reused figure
    /// of `get_stats`).
    ///
    /// # Errors
    /// What the store reports.
    pub async fn embedding_progress(
        &self,
        workspace: WorkspaceId,
        model: &str,
    ) -> Result<EmbeddingProgress> {
        crate::memory_indexing::embedding_progress(&*self.store, workspace, model).await
    }

    /// Drops the workspace's `model` vectors so that the indexer embeds every text again;
    /// returns how many observation vectors went.
    ///
    /// # Errors
    /// What the store reports.
    pub async fn clear_embeddings(&self, workspace: WorkspaceId, model: &str) -> Result<u64> {
        self.store
            .clear_embeddings(ModelEmbeddings { workspace, model })
            .await
    }

    // `memory_transfer.rs`.

    /// `read_graph`: the page of nodes after `cursor` (a previous page's `next_cursor`), at
    /// most `limit` (1–1,000), of `entity_type` when given, at `detail`, with the relations
    /// leaving them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad `limit`, `entity_type` or `cursor`.
    pub async fn read_graph(
        &self,
        workspace: WorkspaceId,
        request: ReadGraph,
    ) -> Result<GraphPageResult> {
        crate::memory_transfer::read_graph(&*self.store, workspace, request).await
    }

    /// One page of the lossless export: `query.limit` 1–1,000 nodes with everything they
    /// hold when `query.observations`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad `limit`, `after` or `entity_type`.
    pub async fn graph_page(
        &self,
        workspace: WorkspaceId,
        query: &GraphPageQuery,
    ) -> Result<GraphPage> {
        crate::memory_transfer::graph_page(&*self.store, workspace, query).await
    }

    /// Imports one batch in one transaction (see [`crate::TransferStore::import`]): at most
    /// 1,000 nodes of distinct names holding at most [`IMPORT_BATCH_OBSERVATIONS`]
    /// observations, and at most 1,000 relations, each checked as [`validate_node`] and
    /// [`validate_relation`] do; a batch with any invalid record writes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the record (`nodes[3].observations[0].content`).
    pub async fn import(
        &self,
        workspace: WorkspaceId,
        request: ImportBatch,
    ) -> Result<ImportOutcome> {
        crate::memory_transfer::import(&*self.store, self.secrets, workspace, request).await
    }

    // `auth.rs`.

    /// Creates the token `request` describes, made from `random` (40 bytes from the operating
    /// system's generator). Returns
    /// its record and the token itself, which is not stored and cannot be shown again.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown workspace, [`crate::Error::InvalidArgument`]
    /// for a bad name, a `label` over 256 bytes or an `expires_at` outside the years 1–9999.
    pub async fn create_token(
        &self,
        request: CreateToken,
        random: &[u8; 40],
    ) -> Result<(TokenInfo, String)> {
        crate::auth::create_token(&*self.store, self.secrets, request, random).await
    }

    /// Every token (of `workspace` when given), without secrets.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown workspace.
    pub async fn tokens(&self, workspace: Option<&str>) -> Result<Vec<TokenInfo>> {
        crate::auth::tokens(&*self.store, workspace).await
    }

    /// Revokes a token, given by its id or as the whole token; it stops working at once
    /// for every engram process on this store.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] (kind `token`) when there is none,
    /// [`crate::Error::InvalidArgument`] for something that is neither.
    pub async fn revoke_token(&self, id_or_token: &str) -> Result<()> {
        crate::auth::revoke_token(&*self.store, id_or_token).await
    }

    /// What a presented bearer token grants at `now`: `None` when it is malformed, unknown,
    /// revoked, expired or its secret is wrong (deliberately indistinguishable).
    ///
    /// # Errors
    /// [`crate::Error::Unavailable`] when the store cannot be asked.
    pub async fn authenticate(&self, presented: &str, now: Timestamp) -> Result<Option<TokenInfo>> {
        crate::auth::authenticate(&*self.store, presented, now).await
    }

    // `consolidation/`.

    /// `get_consolidation_report`: stale summaries with drafts, unrelated similar pairs with
    /// rationales, orphans, clusters with labels, and event counts.
    ///
    /// Each list holds at most `options.limit` entries. Pairs and clusters need an embedding
    /// model and current node vectors; without them those lists are empty and `notices` says
    /// why. Drafts, rationales and labels come from the text generator when one is configured
    /// and answers within the report's [`crate::GenerationBudget`]; otherwise they are
    /// extractive. Nothing here fails because of the generator.
    ///
    /// Errors: [`Error::InvalidArgument`] for a limit or score out of range, or a `since`
    /// outside the years 1–9999.
    pub async fn get_consolidation_report(
        &self,
        workspace: WorkspaceId,
        options: crate::GetConsolidationReport,
    ) -> Result<crate::ConsolidationReport> {
        let reporter = crate::consolidation::Reporter {
            store: &*self.store,
            embedder: self.embedder(),
            generator: self.generator.as_ref(),
            budget: self.generation_budget,
            search: &self.search,
        };
        reporter.report(workspace, options).await
    }
}
