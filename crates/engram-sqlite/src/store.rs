//! [`MemoryStore`] for [`SqliteStore`]: each call is one transaction around the module's
//! query, run on a blocking thread with owned copies of its arguments.

use async_trait::async_trait;
use engram_domain::fusion::{Candidate, CandidateQuery};
use engram_domain::perspectives::Perspective;
use engram_domain::*;
use tracing::instrument;

use crate::error::db;
use crate::{
    SqliteStore, graph, nodes, observations, relations, search, tokens, transfer, vectors,
    workspaces,
};
use engram_domain::auth;
use engram_domain::transfer::*;

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn health(&self) -> Result<()> {
        if self.is_migrated().await? {
            Ok(())
        } else {
            Err(Error::schema_not_current())
        }
    }

    #[instrument(skip_all)]
    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        let name = name.to_owned();
        self.pool
            .write(move |tx| workspaces::create(tx, &name))
            .await
    }

    #[instrument(skip_all)]
    async fn workspace(&self, name: &str) -> Result<Workspace> {
        let name = name.to_owned();
        self.pool.read(move |tx| workspaces::get(tx, &name)).await
    }

    #[instrument(skip_all)]
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        self.pool.read(workspaces::list).await
    }

    #[instrument(skip_all)]
    async fn rename_workspace(&self, name: &str, new_name: &str) -> Result<Workspace> {
        let (name, new_name) = (name.to_owned(), new_name.to_owned());
        self.pool
            .write(move |tx| workspaces::rename(tx, &name, &new_name))
            .await
    }

    #[instrument(skip_all)]
    async fn delete_workspace(&self, name: &str, force: bool) -> Result<()> {
        let name = name.to_owned();
        self.pool
            .write(move |tx| workspaces::delete(tx, &name, force))
            .await
    }

    #[instrument(skip_all, fields(count = entities.len()))]
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        entities: &[NewNode],
    ) -> Result<Vec<CreatedNode>> {
        let entities = entities.to_vec();
        self.pool
            .write(move |tx| nodes::create_entities(tx, workspace, &entities))
            .await
    }

    #[instrument(skip_all, fields(count = names.len()))]
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        names: &[String],
    ) -> Result<DeletedNodes> {
        let names = names.to_vec();
        self.pool
            .write(move |tx| nodes::delete_entities(tx, workspace, &names))
            .await
    }

    #[instrument(skip_all, fields(count = names.len()))]
    async fn open_nodes(&self, workspace: WorkspaceId, names: &[String]) -> Result<OpenedNodes> {
        let names = names.to_vec();
        self.pool
            .read(move |tx| nodes::open_nodes(tx, workspace, &names))
            .await
    }

    #[instrument(skip_all)]
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        entity_type: &str,
    ) -> Result<Vec<TypedNode>> {
        let entity_type = entity_type.to_owned();
        self.pool
            .read(move |tx| nodes::get_nodes_by_type(tx, workspace, &entity_type))
            .await
    }

    #[instrument(skip_all)]
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        days: u32,
        limit: u32,
    ) -> Result<Vec<NodeBrief>> {
        self.pool
            .read(move |tx| nodes::get_recently_modified(tx, workspace, days, limit))
            .await
    }

    #[instrument(skip_all)]
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        name: &str,
        summary: &str,
    ) -> Result<SummaryUpdate> {
        let (name, summary) = (name.to_owned(), summary.to_owned());
        self.pool
            .write(move |tx| nodes::set_summary(tx, workspace, &name, &summary))
            .await
    }

    #[instrument(skip_all)]
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        name: &str,
        tags: &[String],
    ) -> Result<TagsUpdate> {
        let (name, tags) = (name.to_owned(), tags.to_vec());
        self.pool
            .write(move |tx| nodes::set_tags(tx, workspace, &name, &tags))
            .await
    }

    #[instrument(skip_all, fields(count = additions.len()))]
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        additions: &[ObservationAdditions],
    ) -> Result<Vec<AddedObservations>> {
        let additions = additions.to_vec();
        self.pool
            .write(move |tx| observations::add_observations(tx, workspace, &additions))
            .await
    }

    #[instrument(skip_all)]
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        entity_name: &str,
        ordinal: Ordinal,
        new_content: &str,
    ) -> Result<ReplacedObservation> {
        let (name, content) = (entity_name.to_owned(), new_content.to_owned());
        self.pool
            .write(move |tx| {
                observations::replace_observation(tx, workspace, &name, ordinal.0, &content)
            })
            .await
    }

    #[instrument(skip_all, fields(count = deletions.len()))]
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        deletions: &[ObservationDeletions],
    ) -> Result<Vec<DeletedObservations>> {
        let deletions = deletions.to_vec();
        self.pool
            .write(move |tx| observations::delete_observations(tx, workspace, &deletions))
            .await
    }

    #[instrument(skip_all, fields(count = relations.len()))]
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<CreatedRelations> {
        let relations = relations.to_vec();
        self.pool
            .write(move |tx| relations::create_relations(tx, workspace, &relations))
            .await
    }

    #[instrument(skip_all, fields(count = relations.len()))]
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<DeletedRelations> {
        let relations = relations.to_vec();
        self.pool
            .write(move |tx| relations::delete_relations(tx, workspace, &relations))
            .await
    }

    #[instrument(skip_all)]
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        relation: &RelationSpec,
        new_type: &str,
    ) -> Result<RelationSpec> {
        let (relation, new_type) = (relation.clone(), new_type.to_owned());
        self.pool
            .write(move |tx| relations::rename_relation_type(tx, workspace, &relation, &new_type))
            .await
    }

    #[instrument(skip_all)]
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        entity_a: &str,
        entity_b: &str,
    ) -> Result<Vec<Relation>> {
        let (a, b) = (entity_a.to_owned(), entity_b.to_owned());
        self.pool
            .read(move |tx| relations::get_relations_between(tx, workspace, &a, &b))
            .await
    }

    #[instrument(skip_all)]
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        name: &str,
        depth: u32,
    ) -> Result<Neighborhood> {
        let name = name.to_owned();
        self.pool
            .read(move |tx| graph::get_neighborhood(tx, workspace, &name, depth))
            .await
    }

    #[instrument(skip_all)]
    async fn get_path(&self, workspace: WorkspaceId, from: &str, to: &str) -> Result<GraphPath> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.pool
            .read(move |tx| graph::get_path(tx, workspace, &from, &to))
            .await
    }

    #[instrument(skip_all)]
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        self.pool
            .read(move |tx| nodes::get_orphaned_nodes(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        self.pool
            .read(move |tx| graph::find_unlinked_references(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        self.pool
            .read(move |tx| nodes::get_pending_consolidation(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        self.pool
            .read(move |tx| nodes::get_stats(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn event_counts(&self, workspace: WorkspaceId, since: Timestamp) -> Result<EventCounts> {
        self.pool
            .read(move |tx| nodes::event_counts(tx, workspace, since))
            .await
    }

    #[instrument(skip_all)]
    async fn create_token(&self, token: &auth::NewToken) -> Result<auth::TokenInfo> {
        let token = token.clone();
        self.pool.write(move |tx| tokens::create(tx, &token)).await
    }

    #[instrument(skip_all)]
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<auth::TokenInfo>> {
        self.pool.read(move |tx| tokens::list(tx, workspace)).await
    }

    #[instrument(skip_all)]
    async fn token(&self, id: &str) -> Result<Option<(auth::TokenInfo, Vec<u8>)>> {
        let id = id.to_owned();
        self.pool.read(move |tx| tokens::lookup(tx, &id)).await
    }

    #[instrument(skip_all)]
    async fn revoke_token(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        self.pool.write(move |tx| tokens::revoke(tx, &id)).await
    }

    #[instrument(skip_all, fields(limit = query.limit))]
    async fn graph_page(
        &self,
        workspace: WorkspaceId,
        query: &GraphPageQuery,
    ) -> Result<GraphPage> {
        let query = query.clone();
        self.pool
            .read(move |tx| transfer::graph_page(tx, workspace, &query))
            .await
    }

    #[instrument(skip_all, fields(nodes = nodes.len(), relations = relations.len()))]
    async fn import(
        &self,
        workspace: WorkspaceId,
        nodes: &[NodeRecord],
        relations: &[RelationRecord],
    ) -> Result<ImportOutcome> {
        let (nodes, relations) = (nodes.to_vec(), relations.to_vec());
        self.pool
            .write(move |tx| transfer::import(tx, workspace, &nodes, &relations))
            .await
    }

    #[instrument(skip_all)]
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>> {
        self.pool
            .read(move |tx| vectors::perspectives(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn pending_embeddings(
        &self,
        model: &str,
        limit: usize,
        cursor: &PendingCursor,
    ) -> Result<Vec<EmbeddingTask>> {
        let (model, cursor) = (model.to_owned(), cursor.clone());
        self.pool
            .read(move |tx| vectors::pending_embeddings(tx, &model, limit, &cursor))
            .await
    }

    #[instrument(skip_all, fields(count = records.len()))]
    async fn save_embeddings(&self, model: &str, records: &[EmbeddingRecord]) -> Result<()> {
        let (model, records) = (model.to_owned(), records.to_vec());
        let lists = self.lists.clone();
        self.pool
            .write(move |tx| vectors::save_embeddings(tx, &model, &records, &lists))
            .await?;
        self.lists.build_when_due(&self.pool);
        Ok(())
    }

    #[instrument(skip_all)]
    async fn search(
        &self,
        workspace: WorkspaceId,
        request: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        let (request, lists) = (request.clone(), self.lists.clone());
        let found = self
            .pool
            .read(move |tx| search::search(tx, workspace, &request, &lists))
            .await?;
        self.lists.build_when_due_at_first_search(&self.pool);
        Ok(found)
    }

    #[instrument(skip_all)]
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>> {
        self.pool
            .read(move |tx| search::related_pairs(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn node_vectors(
        &self,
        workspace: WorkspaceId,
        model: &str,
        perspective: PerspectiveId,
    ) -> Result<Vec<NodeVector>> {
        let model = model.to_owned();
        self.pool
            .read(move |tx| vectors::node_vectors(tx, workspace, &model, perspective))
            .await
    }

    #[instrument(skip_all)]
    async fn embedding_coverage(&self, workspace: WorkspaceId, model: &str) -> Result<f64> {
        let model = model.to_owned();
        self.pool
            .read(move |tx| vectors::embedding_coverage(tx, workspace, &model))
            .await
    }

    async fn change_marker(&self) -> Result<i64> {
        self.pool
            .read(move |tx| {
                tx.query_row("SELECT coalesce(max(id), 0) FROM events", [], |row| {
                    row.get(0)
                })
                .map_err(db)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn clear_embeddings(&self, workspace: WorkspaceId, model: &str) -> Result<u64> {
        let model = model.to_owned();
        self.pool
            .write(move |tx| vectors::clear_embeddings(tx, workspace, &model))
            .await
    }

    #[instrument(skip_all)]
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        self.pool
            .read(move |tx| vectors::embedding_pairs(tx, workspace))
            .await
    }

    #[instrument(skip_all)]
    async fn set_perspective(
        &self,
        workspace: WorkspaceId,
        perspective: &Perspective,
    ) -> Result<Perspective> {
        let perspective = perspective.clone();
        self.pool
            .write(move |tx| vectors::set_perspective(tx, workspace, &perspective))
            .await
    }
}
