//! [`Memory`]: the tools' semantics over a [`MemoryStore`]: validation first, then the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::checked::Checked;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::generate::{GenerationBudget, TextGenerator};
use crate::limits;
use crate::model::*;
use crate::search::QUERY_EMBEDDING_BUDGET;
use crate::search::results::*;
use crate::search::tools::Searcher;
use crate::store::MemoryStore;
use crate::store::*;

/// The graph tools of the catalog, validated, over any store.
///
/// Every method checks its arguments against [`crate::limits`] before anything is written,
/// so a rejected call ([`Error::InvalidArgument`], naming the field and the limit) changes
/// nothing. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    pub(crate) store: Arc<dyn MemoryStore>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) generator: Option<Arc<dyn TextGenerator>>,
    pub(crate) generation_budget: GenerationBudget,
    /// The search tools, with the query vectors' cache and the time a search waits for the
    /// embedder.
    search: Searcher,
    /// The indexer filling this store's vectors, for the texts it set aside.
    pub(crate) indexer: Option<crate::Indexer>,
    /// The last counted embedding coverage per workspace while the indexer works, with when
    /// it was counted and the store's change marker then ([`COVERAGE_REUSE`]).
    pub(crate) counted_coverage: Arc<Mutex<HashMap<WorkspaceId, CountedCoverage>>>,
    /// What a write does with a text holding a credential.
    pub(crate) secrets: crate::SecretPolicy,
}

/// How long `get_stats` reuses a counted embedding coverage while the indexer works and
/// nothing was written: counting the current vectors is a join over all of them (122–135 ms
/// at 100,000 observations on PostgreSQL), and the figure moves with every batch anyway.
pub const COVERAGE_REUSE: Duration = Duration::from_secs(5);

/// A counted embedding coverage: when, at which change marker, and the figure.
#[derive(Clone, Copy)]
pub(crate) struct CountedCoverage {
    at: Instant,
    marker: i64,
    coverage: f64,
}

impl Memory {
    /// Wraps a store; without an embedder, embedding-mode searches answer from full text.
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        Self {
            search: Searcher::new(store.clone(), QUERY_EMBEDDING_BUDGET),
            store,
            embedder: None,
            generator: None,
            generation_budget: GenerationBudget::default(),
            indexer: None,
            counted_coverage: Arc::default(),
            secrets: crate::SecretPolicy::default(),
        }
    }

    /// Knows `indexer` (a clone shares its state), so [`Memory::rejected_texts`] can say
    /// which texts its embedder rejected.
    #[must_use]
    pub fn with_indexer(mut self, indexer: crate::Indexer) -> Self {
        self.search = self.search.with_indexer(indexer.clone());
        self.indexer = Some(indexer);
        self
    }

    /// The workspace's texts the indexer set aside because the embedder rejected them (tried
    /// again after a back-off), by node name and ordinal; empty without an indexer. The
    /// indexer remembers where each one is, so this reads nothing from the store.
    pub fn rejected_texts(&self, workspace: WorkspaceId) -> Vec<RejectedText> {
        (self.indexer.as_ref()).map_or_else(Vec::new, |i| i.rejected_in(workspace))
    }

    /// How long a search may wait for the embedder (default 3 s). Past it, or when the
    /// embedder fails, the search answers from full text and says so, and searches skip the
    /// embedder for 30 s (`search/query_embedding.rs`). Starts with an empty query cache.
    #[must_use]
    pub fn with_query_embedding_budget(mut self, budget: Duration) -> Self {
        self.search = self.search.with_budget(budget);
        self
    }

    /// Uses `embedder` for semantic search (the same one the indexer fills vectors with).
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.search = self.search.with_embedder(embedder.clone());
        self.embedder = Some(embedder);
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
        self.embedder.as_ref()
    }

    /// Whether the store is reachable and its schema current.
    pub async fn health(&self) -> Result<()> {
        if self.store.schema_current().await? {
            Ok(())
        } else {
            Err(Error::schema_not_current())
        }
    }

    /// Creates a workspace named 1–64 characters of `A–Z a–z 0–9 . _ -`.
    pub async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        limits::workspace_name("workspace", name)?;
        self.store.create_workspace(name).await
    }

    /// Looks up the workspace a connection binds to.
    pub async fn workspace(&self, name: &str) -> Result<Workspace> {
        limits::workspace_name("workspace", name)?;
        self.store.workspace(name).await
    }

    /// Every workspace with its node count.
    pub async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        self.store.list_workspaces().await
    }

    /// Renames a workspace.
    pub async fn rename_workspace(&self, name: &str, new_name: &str) -> Result<Workspace> {
        limits::workspace_name("workspace", name)?;
        limits::workspace_name("new_name", new_name)?;
        self.store.rename_workspace(name, new_name).await
    }

    /// Deletes a workspace; one that holds nodes needs `force`.
    pub async fn delete_workspace(&self, name: &str, force: bool) -> Result<()> {
        limits::workspace_name("workspace", name)?;
        self.store.delete_workspace(name, force).await
    }

    /// The workspace's perspectives.
    pub async fn perspectives(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<crate::perspectives::Perspective>> {
        self.store.perspectives(workspace).await
    }

    /// Creates or changes a perspective: a name of 1–64 characters of `a–z 0–9 _ -`, a
    /// document template (1–4,096 bytes, no NUL) that uses `{observation}`, and a query
    /// template (1–4,096 bytes, no NUL) that uses `{query}`.
    pub async fn set_perspective(
        &self,
        workspace: WorkspaceId,
        perspective: &crate::perspectives::Perspective,
    ) -> Result<crate::perspectives::Perspective> {
        crate::perspectives::validate(perspective)?;
        let stored = (self.store)
            .set_perspective(SetPerspective {
                workspace,
                perspective,
            })
            .await?;
        // This process's searches read them again (other processes' see the change in their
        // search's snapshot).
        self.search.forget_perspectives(workspace);
        Ok(stored)
    }

    /// `create_entities`. Names must be unique within the batch; at most 1,000 entities and
    /// 1,000 observations per call.
    pub async fn create_entities(
        &self,
        workspace: WorkspaceId,
        mut entities: Vec<NewNode>,
    ) -> Result<Vec<CreatedNode>> {
        limits::batch("entities", &entities)?;
        let mut observation_total = 0;
        for (i, entity) in entities.iter_mut().enumerate() {
            let field = format!("entities[{i}]");
            limits::name(&format!("{field}.name"), &entity.name)?;
            limits::name(&format!("{field}.entity_type"), &entity.entity_type)?;
            if let Some(summary) = &entity.summary {
                limits::content(&format!("{field}.summary"), summary)?;
            }
            entity.tags = limits::tags(&format!("{field}.tags"), &entity.tags)?;
            for (j, observation) in entity.observations.iter().enumerate() {
                limits::content(&format!("{field}.observations[{j}]"), observation)?;
            }
            observation_total += entity.observations.len();
        }
        batch_total("entities[].observations", observation_total)?;
        self.secrets.screen_nodes(&mut entities)?;
        if let Some((first, second)) = first_duplicate(entities.iter().map(|e| &e.name)) {
            return Err(Error::invalid(
                format!("entities[{second}].name"),
                format!("repeats entities[{first}].name within one call"),
            ));
        }
        // A text given twice for one node is stored once, at its first place.
        let repeated: Vec<Vec<Observation>> = (entities.iter_mut())
            .map(|entity| {
                let (kept, repeated) = once_each(std::mem::take(&mut entity.observations));
                entity.observations = kept;
                repeated
                    .into_iter()
                    .map(|(kept_at, content)| Observation {
                        ordinal: Ordinal(kept_at as i64 + 1),
                        content,
                    })
                    .collect()
            })
            .collect();
        let mut created = self
            .store
            .create_entities(CreateEntities {
                workspace,
                entities: Checked::new(&entities),
            })
            .await?;
        for (row, repeated) in created.iter_mut().zip(repeated) {
            if !row.already_existed {
                row.skipped_duplicates = repeated;
            }
        }
        Ok(created)
    }

    /// `delete_entities`.
    pub async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        names: &[String],
    ) -> Result<DeletedNodes> {
        names_batch("entity_names", names)?;
        (self.store)
            .delete_entities(DeleteEntities { workspace, names })
            .await
    }

    /// `open_nodes`.
    pub async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        names: &[String],
    ) -> Result<OpenedNodes> {
        names_batch("names", names)?;
        self.store.open_nodes(OpenNodes { workspace, names }).await
    }

    /// `get_nodes_by_type`.
    pub async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        entity_type: &str,
    ) -> Result<Vec<TypedNode>> {
        limits::name("entity_type", entity_type)?;
        (self.store)
            .get_nodes_by_type(GetNodesByType {
                workspace,
                entity_type,
            })
            .await
    }

    /// `get_recently_modified`: `days` 1–36,500, `limit` 1–1,000.
    pub async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        days: u32,
        limit: u32,
    ) -> Result<Vec<NodeBrief>> {
        limits::within("days", days, limits::DAYS)?;
        limits::within("limit", limit, limits::LIMIT)?;
        self.store
            .get_recently_modified(GetRecentlyModified {
                workspace,
                days,
                limit,
            })
            .await
    }

    /// `set_summary`: 1–65,536 bytes.
    pub async fn set_summary(
        &self,
        workspace: WorkspaceId,
        name: &str,
        summary: &str,
    ) -> Result<SummaryUpdate> {
        limits::name("name", name)?;
        limits::content("summary", summary)?;
        let summary = self.secrets.screen("summary", summary)?;
        self.store
            .set_summary(SetSummary {
                workspace,
                name,
                summary: Checked::new(&summary),
            })
            .await
    }

    /// `set_tags`: at most 64 tags of 1–128 bytes; an empty list clears them.
    pub async fn set_tags(
        &self,
        workspace: WorkspaceId,
        name: &str,
        tags: &[String],
    ) -> Result<TagsUpdate> {
        limits::name("name", name)?;
        let mut tags = limits::tags("tags", tags)?;
        self.secrets.screen_tags("tags", &mut tags)?;
        self.store
            .set_tags(SetTags {
                workspace,
                name,
                tags: Checked::new(&tags),
            })
            .await
    }

    /// `add_observations`: at most 1,000 contents per call, each 1–65,536 bytes.
    pub async fn add_observations(
        &self,
        workspace: WorkspaceId,
        additions: &[ObservationAdditions],
    ) -> Result<Vec<AddedObservations>> {
        limits::batch("observations", additions)?;
        let mut total = 0;
        for (i, addition) in additions.iter().enumerate() {
            limits::name(
                &format!("observations[{i}].entity_name"),
                &addition.entity_name,
            )?;
            limits::batch(&format!("observations[{i}].contents"), &addition.contents)?;
            for (j, content) in addition.contents.iter().enumerate() {
                limits::content(&format!("observations[{i}].contents[{j}]"), content)?;
            }
            total += addition.contents.len();
        }
        batch_total("observations[].contents", total)?;
        let screened = self.secrets.screen_additions(additions)?;
        let additions = screened.as_deref().unwrap_or(additions);
        // A text given twice for one node (in one entry or two) is stored once; the store
        // skips the texts the node already holds. Repeats are rare: the call is copied
        // without them only when it has some.
        let mut given: HashMap<&str, HashSet<&str>> = HashMap::new();
        let kept: Vec<Vec<bool>> = (additions.iter())
            .map(|addition| {
                let seen = given.entry(addition.entity_name.as_str()).or_default();
                (addition.contents.iter())
                    .map(|content| seen.insert(content.as_str()))
                    .collect()
            })
            .collect();
        if kept.iter().flatten().all(|first| *first) {
            return self
                .store
                .add_observations(AddObservations {
                    workspace,
                    additions: Checked::new(additions),
                })
                .await;
        }
        let once: Vec<ObservationAdditions> = (additions.iter().zip(&kept))
            .map(|(addition, kept)| ObservationAdditions {
                entity_name: addition.entity_name.clone(),
                contents: (addition.contents.iter().zip(kept))
                    .filter(|(_, kept)| **kept)
                    .map(|(content, _)| content.clone())
                    .collect(),
            })
            .collect();
        let mut results = self
            .store
            .add_observations(AddObservations {
                workspace,
                additions: Checked::new(&once),
            })
            .await?;
        // Every skipped text in request order, with the ordinal that holds it.
        let placed: HashMap<(String, String), Ordinal> = (results.iter())
            .flat_map(|r| {
                (r.added.iter().chain(&r.skipped_duplicates))
                    .map(|o| ((r.entity_name.clone(), o.content.clone()), o.ordinal))
            })
            .collect();
        let mut stored: HashSet<(&str, &str)> = HashSet::new();
        for (result, addition) in results.iter_mut().zip(additions) {
            if result.not_found {
                continue;
            }
            let name = addition.entity_name.as_str();
            let added: HashSet<&str> = result.added.iter().map(|o| o.content.as_str()).collect();
            let mut skipped = Vec::new();
            for content in &addition.contents {
                if added.contains(content.as_str()) && stored.insert((name, content)) {
                    continue;
                }
                if let Some(&ordinal) = placed.get(&(name.to_owned(), content.clone())) {
                    skipped.push(Observation {
                        ordinal,
                        content: content.clone(),
                    });
                }
            }
            result.skipped_duplicates = skipped;
        }
        Ok(results)
    }

    /// `replace_observation`.
    pub async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        entity_name: &str,
        ordinal: Ordinal,
        new_content: &str,
    ) -> Result<ReplacedObservation> {
        limits::name("entity_name", entity_name)?;
        limits::ordinal("ordinal", ordinal)?;
        limits::content("new_content", new_content)?;
        let new_content = self.secrets.screen("new_content", new_content)?;
        self.store
            .replace_observation(ReplaceObservation {
                workspace,
                entity_name,
                ordinal,
                new_content: Checked::new(&new_content),
            })
            .await
    }

    /// `delete_observations`: at most 1,000 ordinals and texts per call, at least one per
    /// node.
    pub async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        deletions: &[ObservationDeletions],
    ) -> Result<Vec<DeletedObservations>> {
        limits::batch("deletions", deletions)?;
        let mut total = 0;
        for (i, deletion) in deletions.iter().enumerate() {
            limits::name(
                &format!("deletions[{i}].entity_name"),
                &deletion.entity_name,
            )?;
            if deletion.contents.is_empty() {
                limits::batch(&format!("deletions[{i}].ordinals"), &deletion.ordinals)?;
            }
            for (j, ordinal) in deletion.ordinals.iter().enumerate() {
                limits::ordinal(&format!("deletions[{i}].ordinals[{j}]"), *ordinal)?;
            }
            for (j, content) in deletion.contents.iter().enumerate() {
                limits::content(&format!("deletions[{i}].observations[{j}]"), content)?;
            }
            total += deletion.ordinals.len() + deletion.contents.len();
        }
        batch_total("deletions[].ordinals", total)?;
        (self.store)
            .delete_observations(DeleteObservations {
                workspace,
                deletions,
            })
            .await
    }

    /// `create_relations`.
    pub async fn create_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<CreatedRelations> {
        relations_batch(relations)?;
        self.secrets.screen_relations(relations)?;
        self.store
            .create_relations(CreateRelations {
                workspace,
                relations: Checked::new(relations),
            })
            .await
    }

    /// `delete_relations`.
    pub async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<DeletedRelations> {
        relations_batch(relations)?;
        (self.store)
            .delete_relations(DeleteRelations {
                workspace,
                relations,
            })
            .await
    }

    /// `rename_relation_type`.
    pub async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        relation: &RelationSpec,
        new_type: &str,
    ) -> Result<RelationSpec> {
        limits::name("from_entity", &relation.from_entity)?;
        limits::name("to_entity", &relation.to_entity)?;
        limits::name("old_type", &relation.relation_type)?;
        limits::name("new_type", new_type)?;
        self.secrets.screen_relation_type(new_type)?;
        self.store
            .rename_relation_type(RenameRelationType {
                workspace,
                relation,
                new_type: Checked::new(new_type),
            })
            .await
    }

    /// `get_relations_between`.
    pub async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        entity_a: &str,
        entity_b: &str,
    ) -> Result<Vec<Relation>> {
        limits::name("entity_a", entity_a)?;
        limits::name("entity_b", entity_b)?;
        self.store
            .get_relations_between(GetRelationsBetween {
                workspace,
                entity_a,
                entity_b,
            })
            .await
    }

    /// `get_neighborhood`: `depth` 0–6.
    pub async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        name: &str,
        depth: u32,
    ) -> Result<Neighborhood> {
        limits::name("name", name)?;
        limits::within("depth", depth, limits::DEPTH)?;
        (self.store)
            .get_neighborhood(GetNeighborhood {
                workspace,
                name,
                depth,
            })
            .await
    }

    /// `get_path`.
    pub async fn get_path(
        &self,
        workspace: WorkspaceId,
        from: &str,
        to: &str,
    ) -> Result<GraphPath> {
        limits::name("from_entity", from)?;
        limits::name("to_entity", to)?;
        self.store
            .get_path(GetPath {
                workspace,
                from,
                to,
            })
            .await
    }

    /// `get_orphaned_nodes`.
    pub async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        self.store.get_orphaned_nodes(workspace).await
    }

    /// `find_unlinked_references`.
    pub async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        self.store.find_unlinked_references(workspace).await
    }

    /// `get_pending_consolidation`.
    pub async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        self.store.get_pending_consolidation(workspace).await
    }

    /// `get_stats`, with `embedding_coverage` for the configured embedder (0.0 without one)
    /// and the texts its embedder refused ([`Memory::rejected_texts`]).
    pub async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        let mut stats = self.store.get_stats(workspace).await?;
        stats.rejected_texts = self.rejected_texts(workspace).len() as u64;
        stats.embedding_model = (self.embedder.as_ref()).map(|e| e.model_id().to_owned());
        stats.embedding_coverage = match &self.embedder {
            Some(embedder) => {
                self.coverage(workspace, &stats, embedder.model_id())
                    .await?
            }
            None => 0.0,
        };
        Ok(stats)
    }

    /// The embedding coverage. Counting the current vectors is a join over all of them (122–135
    /// ms at 100,000 observations on PostgreSQL), so with an indexer, whose passes are all that
    /// changes the figure between writes, the store's change marker is read once and:
    /// - when the indexer's last pass found nothing pending but the texts it set aside, at
    ///   this marker ([`crate::Indexer::idle_at`]), every (observation, enabled perspective)
    ///   pair but those is current, nothing counted;
    /// - otherwise the last count is reused while under [`COVERAGE_REUSE`] old and taken at
    ///   this marker;
    /// - otherwise it is counted.
    async fn coverage(&self, workspace: WorkspaceId, stats: &Stats, model: &str) -> Result<f64> {
        let Some(indexer) = &self.indexer else {
            return self.store.embedding_coverage(workspace, model).await;
        };
        let marker = self.store.change_marker().await?;
        if indexer.idle_at() == Some(marker) {
            let enabled = (self.store.perspectives(workspace).await?.iter())
                .filter(|p| p.enabled)
                .count() as i64;
            let pairs = stats.observation_count.saturating_mul(enabled);
            let rejected = i64::try_from(stats.rejected_texts).unwrap_or(i64::MAX);
            return Ok(if pairs <= 0 {
                1.0
            } else {
                pairs.saturating_sub(rejected).max(0) as f64 / pairs as f64
            });
        }
        let reusable = |c: &CountedCoverage| c.marker == marker && c.at.elapsed() < COVERAGE_REUSE;
        let counted = self.lock_counted_coverage().get(&workspace).copied();
        if let Some(counted) = counted.filter(reusable) {
            return Ok(counted.coverage);
        }
        let at = Instant::now();
        let coverage = self.store.embedding_coverage(workspace, model).await?;
        (self.lock_counted_coverage()).insert(
            workspace,
            CountedCoverage {
                at,
                marker,
                coverage,
            },
        );
        Ok(coverage)
    }

    fn lock_counted_coverage(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<WorkspaceId, CountedCoverage>> {
        (self.counted_coverage.lock()).unwrap_or_else(|poisoned| poisoned.into_inner())
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
        query: &str,
        limit: u32,
        mode: SearchMode,
        min_score: Option<f64>,
    ) -> Result<SearchResults> {
        (self.search)
            .search_nodes(workspace, query, limit, mode, min_score)
            .await
    }

    /// `search_observations` (an extension beyond the catalog): the `limit` (1–1,000)
    /// observations of the whole workspace best matching `query`, each with its node, so a
    /// node with many observations shows every one that matches. `entity_types` (at most 100
    /// names) narrows the search to nodes of those types. Modes as in
    /// [`Memory::search_nodes`].
    pub async fn search_observations(
        &self,
        workspace: WorkspaceId,
        query: &str,
        limit: u32,
        mode: SearchMode,
        entity_types: &[String],
        min_score: Option<f64>,
    ) -> Result<FoundObservations> {
        (self.search)
            .search_observations(workspace, query, limit, mode, entity_types, min_score)
            .await
    }

    /// `query_observations`: the observations of one node best matching `query`, best first.
    /// Modes and fallback as in [`Memory::search_nodes`].
    ///
    /// Errors: [`Error::NotFound`] for an unknown node.
    pub async fn query_observations(
        &self,
        workspace: WorkspaceId,
        entity_name: &str,
        query: &str,
        mode: SearchMode,
        min_score: Option<f64>,
    ) -> Result<ObservationResults> {
        (self.search)
            .query_observations(workspace, entity_name, query, mode, min_score)
            .await
    }

    /// `find_similar_nodes`: unrelated pairs whose aggregate vectors (in the `general`
    /// perspective, or the first enabled one) have cosine similarity ≥ `min_score`
    /// (−1.0–1.0), best first, at most `limit` (1–1,000).
    ///
    /// Errors: [`Error::Unavailable`] without an embedder.
    pub async fn find_similar_nodes(
        &self,
        workspace: WorkspaceId,
        limit: u32,
        min_score: f64,
    ) -> Result<Vec<SimilarPair>> {
        (self.search)
            .find_similar_nodes(workspace, limit, min_score)
            .await
    }

    /// The perspective whose aggregate vectors stand for a node: `general`, or the first
    /// enabled one. [`Error::Conflict`] when every perspective is disabled.
    pub(crate) async fn node_perspective(
        &self,
        workspace: WorkspaceId,
    ) -> Result<crate::perspectives::Perspective> {
        self.search.node_perspective(workspace).await
    }
}

pub(crate) fn names_batch(field: &str, names: &[String]) -> Result<()> {
    limits::batch(field, names)?;
    for (i, name) in names.iter().enumerate() {
        limits::name(&format!("{field}[{i}]"), name)?;
    }
    Ok(())
}

fn relations_batch(relations: &[RelationSpec]) -> Result<()> {
    limits::batch("relations", relations)?;
    for (i, relation) in relations.iter().enumerate() {
        limits::name(
            &format!("relations[{i}].from_entity"),
            &relation.from_entity,
        )?;
        limits::name(&format!("relations[{i}].to_entity"), &relation.to_entity)?;
        limits::name(
            &format!("relations[{i}].relation_type"),
            &relation.relation_type,
        )?;
    }
    Ok(())
}

fn batch_total(field: &str, total: usize) -> Result<()> {
    if total > limits::MAX_BATCH {
        return Err(Error::invalid(
            field,
            format!("at most {} items per call, got {total}", limits::MAX_BATCH),
        ));
    }
    Ok(())
}

/// The indices of the first value that occurs twice: `(first, repeat)`.
pub(crate) fn first_duplicate<'a>(
    values: impl Iterator<Item = &'a String>,
) -> Option<(usize, usize)> {
    let mut seen = HashMap::new();
    for (i, value) in values.enumerate() {
        if let Some(first) = seen.insert(value, i) {
            return Some((first, i));
        }
    }
    None
}

/// `texts` with each text once, at its first place, and the repeats left out: each with the
/// index its first occurrence keeps.
fn once_each(texts: Vec<String>) -> (Vec<String>, Vec<(usize, String)>) {
    use std::collections::hash_map::Entry;
    // Per text, `None` when it is kept, else the kept index of its first occurrence.
    let mut first: HashMap<&str, usize> = HashMap::new();
    let places: Vec<Option<usize>> = (texts.iter())
        .map(|text| {
            let next = first.len();
            match first.entry(text.as_str()) {
                Entry::Occupied(at) => Some(*at.get()),
                Entry::Vacant(slot) => {
                    slot.insert(next);
                    None
                }
            }
        })
        .collect();
    let (mut kept, mut repeated) = (Vec::with_capacity(texts.len()), Vec::new());
    for (text, place) in texts.into_iter().zip(places) {
        match place {
            Some(at) => repeated.push((at, text)),
            None => kept.push(text),
        }
    }
    (kept, repeated)
}
