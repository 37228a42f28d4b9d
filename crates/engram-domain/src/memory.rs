//! [`Memory`]: the front every caller goes through: [`Memory::call`] runs a tool (its
//! semantics live in its area module, see [`crate::tool`]); the rest is what the CLI and the
//! server need besides.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{CreateToken, TokenInfo};
use crate::embed::Embedder;
use crate::embedding_coverage::CountedCoverages;
use crate::error::Result;
use crate::generate::{GenerationBudget, TextGenerator};
use crate::model::*;
use crate::search::QUERY_EMBEDDING_BUDGET;
use crate::search::tools::Searcher;
use crate::store::*;
use crate::tool::MemoryStore;
use crate::tool::{Tool, ToolContext};
use crate::transfer::*;
use crate::workspaces::{DeleteWorkspace, RenameWorkspace};
use crate::{Brief, EmbeddingProgress, SecretPolicy};

/// The graph tools of the catalog ([`Memory::call`]), validated, over any store, and what the
/// CLI and the server do besides (workspaces, tokens, export and import, the brief).
///
/// Every operation checks its arguments against [`crate::limits`] before anything is written,
/// so a rejected call ([`crate::Error::InvalidArgument`], naming the field and the limit) changes
/// nothing. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    generator: Option<Arc<dyn TextGenerator>>,
    generation_budget: GenerationBudget,
    /// The search tools, with the embedder, the indexer (for the texts it set aside), the
    /// query vectors' cache and the time a search waits for the embedder.
    search: Searcher,
    /// `get_stats`' last counted embedding coverages (`stats.rs`).
    counted_coverage: CountedCoverages,
    /// What a write does with a text holding a credential.
    secrets: SecretPolicy,
    /// Where reads and searches note the nodes they returned, when the server keeps one.
    access: Option<crate::AccessLog>,
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
            access: None,
        }
    }

    /// Notes in `log` the nodes every read and search returns ([`crate::access`]); the caller
    /// writes what it gathers ([`Memory::record_access`]).
    #[must_use]
    pub fn with_access_log(mut self, log: crate::AccessLog) -> Self {
        self.access = Some(log);
        self
    }

    /// Ranks search results by use too ([`crate::AccessRanking`]; off by default).
    #[must_use]
    pub fn with_access_ranking(mut self, ranking: crate::AccessRanking) -> Self {
        self.search = self.search.with_access_ranking(ranking);
        self
    }

    /// Writes what an access log gathered ([`crate::AccessStore::record_access`]).
    ///
    /// # Errors
    /// What the store reports; the caller may keep the batch for the next write.
    pub async fn record_access(&self, batch: &crate::AccessBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.store.record_access(batch).await
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

    /// Runs the tool `request` is the request of, in `workspace`: its checks first (a
    /// refused request changes nothing), then its semantics in its area module (see
    /// [`Tool`] and [`crate::each_tool`]); a node named by an alias is answered as that node,
    /// and names not found get suggestions (`naming`). `memory.call(workspace, OpenNodes::new(&names))`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the field and the limit, [`crate::Error::NotFound`] and
    /// the other errors the tool's description gives, or what the store reports.
    pub async fn call<T: Tool>(&self, workspace: WorkspaceId, mut request: T) -> Result<T::Output> {
        let context = ToolContext {
            store: &*self.store,
            secrets: self.secrets,
            search: &self.search,
            generator: self.generator.as_ref(),
            generation_budget: self.generation_budget,
            counted_coverage: &self.counted_coverage,
        };
        let output = match request.node_names().is_empty() {
            true => request.run(context, workspace).await,
            false => crate::naming::answer(context, workspace, request).await,
        }?;
        if let Some(log) = &self.access {
            log.note(workspace, &T::accessed(&output));
        }
        Ok(output)
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

    /// Deletes for good the facts whose expiry has passed, at most `limit` (the background
    /// purge); how many.
    pub async fn purge_expired(&self, limit: u32) -> Result<u64> {
        self.store.purge_expired(limit).await
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

    // `brief.rs`.

    /// The workspace at a glance: its counts, the `nodes` (1–[`crate::BRIEF_NODES`], clamped) most
    /// connected nodes and the `nodes` most recently changed others, each with its type and
    /// summary. Reads every relation's endpoints once (the degree of each node), so it costs
    /// about what the consolidation report's relation list does.
    ///
    /// # Errors
    /// What the store reports.
    pub async fn brief(&self, workspace: WorkspaceId, nodes: usize) -> Result<Brief> {
        crate::brief::brief(&*self.store, workspace, nodes).await
    }

    // `embedding_coverage.rs`.

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
        crate::embedding_coverage::embedding_progress(&*self.store, workspace, model).await
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

    // `transfer/operations.rs`.

    /// One page of the lossless export: `query.limit` 1–1,000 nodes with everything they
    /// hold when `query.observations`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a bad `limit`, `after` or `entity_type`.
    pub async fn graph_page(
        &self,
        workspace: WorkspaceId,
        query: &GraphPageQuery,
    ) -> Result<GraphPage> {
        operations::graph_page(&*self.store, workspace, query).await
    }

    /// Imports one batch in one transaction (see [`crate::TransferStore::import`]): at most
    /// 1,000 nodes of distinct names holding at most [`crate::IMPORT_BATCH_OBSERVATIONS`]
    /// observations, and at most 1,000 relations, each checked as [`validate_node`] and
    /// [`validate_relation`] do; a batch with any invalid record writes nothing.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the record (`nodes[3].observations[0].content`).
    pub async fn import(
        &self,
        workspace: WorkspaceId,
        request: ImportBatch,
    ) -> Result<ImportOutcome> {
        operations::import(&*self.store, self.secrets, workspace, request).await
    }

    // `reflections.rs`.

    /// Up to `limit` (1–1,000) of the workspace's reflections with ids after `after`, in id
    /// order (`engram export`).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a bad `limit`.
    pub async fn reflections_page(
        &self,
        workspace: WorkspaceId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<crate::Reflection>> {
        crate::reflections::page(&*self.store, workspace, after, limit).await
    }

    /// Imports at most 1,000 reflections in one transaction (see
    /// [`crate::ReflectionStore::import_reflections`]): each is checked as `add_reflection`
    /// checks its arguments, and a batch with an invalid record writes nothing.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the record (`reflections[2].content`).
    pub async fn import_reflections(
        &self,
        workspace: WorkspaceId,
        records: Vec<crate::ReflectionRecord>,
    ) -> Result<crate::ReflectionsImported> {
        crate::reflections::import(&*self.store, self.secrets, workspace, records).await
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
}
