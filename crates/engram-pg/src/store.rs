//! [`MemoryStore`] for [`PgStore`]: each call is one transaction around the module's query.

use async_trait::async_trait;
use engram_domain::*;
use tokio_postgres::IsolationLevel;
use tracing::instrument;

use crate::error::db;
use crate::{
    PgStore, graph, nodes, observations, relations, search, tokens, transfer, vectors, workspaces,
};
use engram_domain::auth;
use engram_domain::fusion::{Candidate, CandidateQuery};
use engram_domain::perspectives::Perspective;
use engram_domain::transfer::*;

/// Runs `$body` (an expression using the transaction `$tx`) in a read-write transaction and
/// commits it; on error the transaction rolls back when dropped. A deadlock or serialization
/// failure (which canonical lock order should make rare) is retried, at most
/// [`crate::error::WRITE_ATTEMPTS`] times in all, each retry logged.
macro_rules! write {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let mut attempt = 1;
        loop {
            let outcome = async {
                let mut client = $store.client().await?;
                let $tx = client.transaction().await.map_err(db)?;
                let value = $body.await?;
                $tx.commit().await.map_err(db)?;
                Ok(value)
            }
            .await;
            match outcome {
                Err(error) if attempt < crate::error::WRITE_ATTEMPTS && crate::error::is_transient(&error) => {
                    tracing::warn!(%error, attempt, "retrying a write after a transient conflict");
                    attempt += 1;
                }
                outcome => break outcome,
            }
        }
    }};
}

/// Runs `$body` in a read-only transaction on one snapshot, so multi-statement reads agree.
macro_rules! read {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let mut client = $store.client().await?;
        let $tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(db)?;
        let value = $body.await?;
        $tx.commit().await.map_err(db)?;
        Ok(value)
    }};
}

#[async_trait]
impl MemoryStore for PgStore {
    async fn health(&self) -> Result<()> {
        if self.is_migrated().await? {
            Ok(())
        } else {
            Err(Error::schema_not_current())
        }
    }

    #[instrument(skip_all)]
    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        write!(self, |tx| workspaces::create(&tx, name))
    }

    #[instrument(skip_all)]
    async fn workspace(&self, name: &str) -> Result<Workspace> {
        let client = self.client().await?;
        workspaces::get(&client, name).await
    }

    #[instrument(skip_all)]
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        read!(self, |tx| workspaces::list(&tx))
    }

    #[instrument(skip_all)]
    async fn rename_workspace(&self, name: &str, new_name: &str) -> Result<Workspace> {
        write!(self, |tx| workspaces::rename(&tx, name, new_name))
    }

    #[instrument(skip_all)]
    async fn delete_workspace(&self, name: &str, force: bool) -> Result<()> {
        write!(self, |tx| workspaces::delete(&tx, name, force))
    }

    #[instrument(skip_all, fields(count = entities.len()))]
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        entities: &[NewNode],
    ) -> Result<Vec<CreatedNode>> {
        let created = write!(self, |tx| nodes::create_entities(&tx, workspace, entities))?;
        let rows = entities.len() + entities.iter().map(|e| e.observations.len()).sum::<usize>();
        self.written.wrote(rows, &self.pool);
        Ok(created)
    }

    #[instrument(skip_all, fields(count = names.len()))]
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        names: &[String],
    ) -> Result<DeletedNodes> {
        let deleted = write!(self, |tx| nodes::delete_entities(&tx, workspace, names))?;
        self.written.wrote(names.len(), &self.pool);
        Ok(deleted)
    }

    #[instrument(skip_all, fields(count = names.len()))]
    async fn open_nodes(&self, workspace: WorkspaceId, names: &[String]) -> Result<OpenedNodes> {
        read!(self, |tx| nodes::open_nodes(&tx, workspace, names))
    }

    #[instrument(skip_all)]
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        entity_type: &str,
    ) -> Result<Vec<TypedNode>> {
        read!(self, |tx| nodes::get_nodes_by_type(
            &tx,
            workspace,
            entity_type
        ))
    }

    #[instrument(skip_all)]
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        days: u32,
        limit: u32,
    ) -> Result<Vec<NodeBrief>> {
        read!(self, |tx| nodes::get_recently_modified(
            &tx, workspace, days, limit
        ))
    }

    #[instrument(skip_all)]
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        name: &str,
        summary: &str,
    ) -> Result<SummaryUpdate> {
        write!(self, |tx| nodes::set_summary(&tx, workspace, name, summary))
    }

    #[instrument(skip_all)]
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        name: &str,
        tags: &[String],
    ) -> Result<TagsUpdate> {
        write!(self, |tx| nodes::set_tags(&tx, workspace, name, tags))
    }

    #[instrument(skip_all, fields(count = additions.len()))]
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        additions: &[ObservationAdditions],
    ) -> Result<Vec<AddedObservations>> {
        let added = write!(self, |tx| observations::add_observations(
            &tx, workspace, additions
        ))?;
        let rows = additions.iter().map(|a| a.contents.len()).sum();
        self.written.wrote(rows, &self.pool);
        Ok(added)
    }

    #[instrument(skip_all)]
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        entity_name: &str,
        ordinal: Ordinal,
        new_content: &str,
    ) -> Result<ReplacedObservation> {
        write!(self, |tx| observations::replace_observation(
            &tx,
            workspace,
            entity_name,
            ordinal.0,
            new_content
        ))
    }

    #[instrument(skip_all, fields(count = deletions.len()))]
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        deletions: &[ObservationDeletions],
    ) -> Result<Vec<DeletedObservations>> {
        let deleted = write!(self, |tx| observations::delete_observations(
            &tx, workspace, deletions
        ))?;
        self.written.wrote(deletions.len(), &self.pool);
        Ok(deleted)
    }

    #[instrument(skip_all, fields(count = relations.len()))]
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<CreatedRelations> {
        let created = write!(self, |tx| relations::create_relations(
            &tx, workspace, relations
        ))?;
        self.written.wrote(relations.len(), &self.pool);
        Ok(created)
    }

    #[instrument(skip_all, fields(count = relations.len()))]
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        relations: &[RelationSpec],
    ) -> Result<DeletedRelations> {
        let deleted = write!(self, |tx| relations::delete_relations(
            &tx, workspace, relations
        ))?;
        self.written.wrote(relations.len(), &self.pool);
        Ok(deleted)
    }

    #[instrument(skip_all)]
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        relation: &RelationSpec,
        new_type: &str,
    ) -> Result<RelationSpec> {
        write!(self, |tx| relations::rename_relation_type(
            &tx, workspace, relation, new_type
        ))
    }

    #[instrument(skip_all)]
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        entity_a: &str,
        entity_b: &str,
    ) -> Result<Vec<Relation>> {
        read!(self, |tx| relations::get_relations_between(
            &tx, workspace, entity_a, entity_b
        ))
    }

    #[instrument(skip_all)]
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        name: &str,
        depth: u32,
    ) -> Result<Neighborhood> {
        read!(self, |tx| graph::get_neighborhood(
            &tx, workspace, name, depth
        ))
    }

    #[instrument(skip_all)]
    async fn get_path(&self, workspace: WorkspaceId, from: &str, to: &str) -> Result<GraphPath> {
        read!(self, |tx| graph::get_path(&tx, workspace, from, to))
    }

    #[instrument(skip_all)]
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        read!(self, |tx| nodes::get_orphaned_nodes(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        read!(self, |tx| graph::find_unlinked_references(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        read!(self, |tx| nodes::get_pending_consolidation(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        read!(self, |tx| nodes::get_stats(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn event_counts(&self, workspace: WorkspaceId, since: Timestamp) -> Result<EventCounts> {
        read!(self, |tx| nodes::event_counts(&tx, workspace, since))
    }

    #[instrument(skip_all)]
    async fn create_token(&self, token: &auth::NewToken) -> Result<auth::TokenInfo> {
        write!(self, |tx| tokens::create(&tx, token))
    }

    #[instrument(skip_all)]
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<auth::TokenInfo>> {
        read!(self, |tx| tokens::list(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn token(&self, id: &str) -> Result<Option<(auth::TokenInfo, Vec<u8>)>> {
        let client = self.client().await?;
        tokens::lookup(&client, id).await
    }

    #[instrument(skip_all)]
    async fn revoke_token(&self, id: &str) -> Result<()> {
        write!(self, |tx| tokens::revoke(&tx, id))
    }

    #[instrument(skip_all, fields(limit = query.limit))]
    async fn graph_page(
        &self,
        workspace: WorkspaceId,
        query: &GraphPageQuery,
    ) -> Result<GraphPage> {
        read!(self, |tx| transfer::graph_page(&tx, workspace, query))
    }

    #[instrument(skip_all, fields(nodes = nodes.len(), relations = relations.len()))]
    async fn import(
        &self,
        workspace: WorkspaceId,
        nodes: &[NodeRecord],
        relations: &[RelationRecord],
    ) -> Result<ImportOutcome> {
        write!(self, |tx| transfer::import(
            &tx, workspace, nodes, relations
        ))
    }

    #[instrument(skip_all)]
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>> {
        read!(self, |tx| vectors::perspectives(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn pending_embeddings(
        &self,
        model: &str,
        limit: usize,
        cursor: &PendingCursor,
    ) -> Result<Vec<EmbeddingTask>> {
        read!(self, |tx| vectors::pending_embeddings(
            &tx, model, limit, cursor
        ))
    }

    #[instrument(skip_all, fields(count = records.len()))]
    async fn save_embeddings(&self, model: &str, records: &[EmbeddingRecord]) -> Result<()> {
        let dims: Vec<i32> = write!(self, |tx| vectors::save_embeddings(&tx, model, records))?;
        for d in dims {
            let fresh = self.hnsw_ready.lock().expect("index cache lock").insert(d);
            if fresh {
                let client = self.client().await?;
                if let Err(error) = vectors::ensure_hnsw_indexes(&client, d).await {
                    self.hnsw_ready.lock().expect("index cache lock").remove(&d);
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    #[instrument(skip_all)]
    async fn search(
        &self,
        workspace: WorkspaceId,
        request: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        read!(self, |tx| search::search(
            &tx,
            workspace,
            request,
            &self.lexeme_shares
        ))
    }

    #[instrument(skip_all)]
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>> {
        read!(self, |tx| vectors::related_pairs(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn node_vectors(
        &self,
        workspace: WorkspaceId,
        model: &str,
        perspective: PerspectiveId,
    ) -> Result<Vec<NodeVector>> {
        read!(self, |tx| vectors::node_vectors(
            &tx,
            workspace,
            model,
            perspective
        ))
    }

    #[instrument(skip_all)]
    async fn embedding_coverage(&self, workspace: WorkspaceId, model: &str) -> Result<f64> {
        read!(self, |tx| vectors::embedding_coverage(
            &tx, workspace, model
        ))
    }

    async fn change_marker(&self) -> Result<i64> {
        let client = self.client().await?;
        let row = client
            .query_one("SELECT coalesce(max(id), 0) FROM events", &[])
            .await
            .map_err(db)?;
        Ok(row.get(0))
    }

    #[instrument(skip_all)]
    async fn clear_embeddings(&self, workspace: WorkspaceId, model: &str) -> Result<u64> {
        write!(self, |tx| vectors::clear_embeddings(&tx, workspace, model))
    }

    #[instrument(skip_all)]
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        read!(self, |tx| vectors::embedding_pairs(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn set_perspective(
        &self,
        workspace: WorkspaceId,
        perspective: &Perspective,
    ) -> Result<Perspective> {
        write!(self, |tx| vectors::set_perspective(
            &tx,
            workspace,
            perspective
        ))
    }
}
