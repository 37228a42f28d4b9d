//! Perspectives, the indexer's queue, the vectors and relations the consolidation report pairs
//! nodes with (in the domain), coverage. The HNSW indexes are [`crate::hnsw`]'s.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::perspectives::{DEFAULT_PERSPECTIVES, ObservationContext, Perspective};
use engram_domain::reflections::PENDING_REFLECTIONS_SQL;
use engram_domain::*;
use pgvector::Vector;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

pub(crate) async fn seed_perspectives(client: &impl GenericClient, workspace: i64) -> Result<()> {
    let names: Vec<&str> = DEFAULT_PERSPECTIVES.iter().map(|p| p.name).collect();
    let documents: Vec<&str> = DEFAULT_PERSPECTIVES
        .iter()
        .map(|p| p.document_template)
        .collect();
    let queries: Vec<&str> = DEFAULT_PERSPECTIVES
        .iter()
        .map(|p| p.query_template)
        .collect();
    let enabled: Vec<bool> = DEFAULT_PERSPECTIVES.iter().map(|p| p.enabled).collect();
    client
        .execute(
            "INSERT INTO perspectives (workspace_id, name, document_template, query_template,
                                       enabled)
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::bool[])
             ON CONFLICT (workspace_id, name) DO NOTHING",
            &[&workspace, &names, &documents, &queries, &enabled],
        )
        .await
        .map_err(db)?;
    Ok(())
}

pub(crate) async fn perspectives(
    client: &impl GenericClient,
    workspace: WorkspaceId,
) -> Result<Vec<Perspective>> {
    let rows = client
        .query(
            "SELECT id, name, document_template, query_template, enabled
             FROM perspectives WHERE workspace_id = $1 ORDER BY name",
            &[&workspace.0],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| Perspective {
            id: PerspectiveId(row.get("id")),
            name: row.get("name"),
            document_template: row.get("document_template"),
            query_template: row.get("query_template"),
            enabled: row.get("enabled"),
        })
        .collect())
}

/// A pending pair as `sql/pending_embeddings.sql` reads it.
fn task(row: &tokio_postgres::Row) -> EmbeddingTask {
    {
        EmbeddingTask {
            observation_id: row.get("observation_id"),
            workspace: WorkspaceId(row.get("workspace_id")),
            perspective_id: PerspectiveId(row.get("perspective_id")),
            perspective_name: row.get("perspective_name"),
            document_template: row.get("document_template"),
            context: ObservationContext {
                content: row.get("content"),
                ordinal: Ordinal(row.get("ordinal")),
                created_at: row.get("created_at"),
                name: row.get("name"),
                entity_type: row.get("entity_type"),
                tags: row.get("tags"),
                summary: row.get("summary"),
                relations: row.get("relations"),
            },
            source_updated_at: row.get("source_updated_at"),
            stored_hash: row.get("text_hash"),
        }
    }
}

#[async_trait]
impl IndexStore for PgStore {
    #[instrument(skip_all)]
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>> {
        read!(self, |tx| perspectives(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn set_perspective(&self, request: SetPerspective<'_>) -> Result<Perspective> {
        let (workspace, perspective) = (request.workspace, request.perspective);
        write!(self, |tx| async {
            let row = tx
                .query_one(
                    "WITH old AS (
                         SELECT document_template FROM perspectives
                         WHERE workspace_id = $1 AND name = $2
                     )
                     INSERT INTO perspectives (workspace_id, name, document_template,
                                               query_template, enabled)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (workspace_id, name) DO UPDATE
                     SET document_template = EXCLUDED.document_template,
                         query_template = EXCLUDED.query_template, enabled = EXCLUDED.enabled
                     RETURNING id, (SELECT document_template FROM old) AS old_template",
                    &[
                        &workspace.0,
                        &perspective.name,
                        &perspective.document_template,
                        &perspective.query_template,
                        &perspective.enabled,
                    ],
                )
                .await
                .map_err(db)?;
            let id: i64 = row.get("id");
            let old_template: Option<String> = row.get("old_template");
            // A changed document template makes every vector of the perspective stale: drop them
            // so the indexer embeds them again (node timestamps did not move, so it would not
            // notice).
            if old_template.is_some_and(|old| old != perspective.document_template) {
                for table in ["embeddings", "node_embeddings"] {
                    tx.execute(
                        &format!("DELETE FROM {table} WHERE perspective_id = $1"),
                        &[&id],
                    )
                    .await
                    .map_err(db)?;
                }
            }
            Ok(Perspective {
                id: PerspectiveId(id),
                ..perspective.clone()
            })
        })
    }

    /// Up to `limit` pending pairs, workspaces in turn and each from its cursor
    /// ([`MemoryStore::pending_embeddings`](engram_domain::MemoryStore::pending_embeddings)).
    #[instrument(skip_all)]
    async fn pending_embeddings(
        &self,
        request: PendingEmbeddings<'_>,
    ) -> Result<Vec<EmbeddingTask>> {
        let (model, limit, cursor) = (request.model, request.limit, request.cursor);
        let tasks = read!(self, |tx| async {
            let workspaces: Vec<WorkspaceId> = tx
                .query("SELECT id FROM workspaces ORDER BY id", &[])
                .await
                .map_err(db)?
                .iter()
                .map(|row| WorkspaceId(row.get(0)))
                .collect();
            let statement = tx
                .prepare_cached(include_str!("sql/pending_embeddings.sql"))
                .await
                .map_err(db)?;
            let (mut tasks, mut pass) = (Vec::new(), cursor.pass(&workspaces, limit));
            while let Some(read) = pass.next_read() {
                let range = [&read.workspace.0, &read.after, &read.up_to];
                let rows = (tx.query(
                    &statement,
                    &[&model, &read.most, range[0], range[1], range[2]],
                ))
                .await
                .map_err(db)?;
                pass.took(rows.len());
                tasks.extend(rows.iter().map(task));
            }
            Ok(tasks)
        })?;
        if self.hnsw.start(tasks.len(), request.limit) {
            // In the background: the indexer goes on embedding meanwhile (`CREATE INDEX
            // CONCURRENTLY` takes in the rows written during the build).
            let (store, model) = (self.clone(), request.model.to_owned());
            tokio::spawn(async move {
                let built = async {
                    let client = store.direct_client().await?;
                    store.hnsw.build_missing(&client, &model).await
                };
                if let Err(error) = built.await {
                    let next = "tried again at the indexer's next empty queue";
                    tracing::warn!(%error, "building an HNSW index failed; {next}");
                }
                store.hnsw.finished();
            });
        }
        Ok(tasks)
    }

    /// Stores new vectors, marks unchanged ones current, and refreshes the touched nodes'
    /// aggregates. Returns the dimensions of the vectors written (for index creation).
    #[instrument(skip_all, fields(count = request.records.len()))]
    async fn save_embeddings(&self, request: SaveEmbeddings<'_>) -> Result<()> {
        let SaveEmbeddings { model, records } = request;
        let dims: Vec<i32> = write!(self, |tx| async {
            let (embedded, unchanged): (Vec<&EmbeddingRecord>, Vec<&EmbeddingRecord>) =
                records.iter().partition(|r| r.vector.is_some());
            let mut dims: Vec<i32> = Vec::new();
            if !embedded.is_empty() {
                let observation_ids: Vec<i64> = embedded.iter().map(|r| r.observation_id).collect();
                let perspective_ids: Vec<i64> =
                    embedded.iter().map(|r| r.perspective_id.0).collect();
                let hashes: Vec<&[u8]> = embedded.iter().map(|r| r.text_hash.as_slice()).collect();
                let sources: Vec<Timestamp> =
                    embedded.iter().map(|r| r.source_updated_at).collect();
                let vectors: Vec<Vector> = embedded
                    .iter()
                    .filter_map(|r| r.vector.clone())
                    .map(Vector::from)
                    .collect();
                let token_signs: Vec<Option<&[u8]>> =
                    embedded.iter().map(|r| r.token_signs.as_deref()).collect();
                for vector in &vectors {
                    let d = i32::try_from(vector.as_slice().len()).unwrap_or(i32::MAX);
                    if !dims.contains(&d) {
                        dims.push(d);
                    }
                }
                let statement = tx
                    .prepare_cached(include_str!("sql/save_embeddings.sql"))
                    .await
                    .map_err(db)?;
                tx.execute(
                    &statement,
                    &[
                        &model,
                        &observation_ids,
                        &perspective_ids,
                        &hashes,
                        &sources,
                        &vectors,
                        &token_signs,
                    ],
                )
                .await
                .map_err(db)?;
            }
            if !unchanged.is_empty() {
                let observation_ids: Vec<i64> =
                    unchanged.iter().map(|r| r.observation_id).collect();
                let perspective_ids: Vec<i64> =
                    unchanged.iter().map(|r| r.perspective_id.0).collect();
                let sources: Vec<Timestamp> =
                    unchanged.iter().map(|r| r.source_updated_at).collect();
                tx.execute(
                    "UPDATE embeddings e SET source_updated_at = r.source_updated_at
                     FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[])
                          AS r (observation_id, perspective_id, source_updated_at)
                     WHERE e.observation_id = r.observation_id
                       AND e.perspective_id = r.perspective_id AND e.model = $1",
                    &[&model, &observation_ids, &perspective_ids, &sources],
                )
                .await
                .map_err(db)?;
            }
            let all_ids: Vec<i64> = records.iter().map(|r| r.observation_id).collect();
            let statement = tx
                .prepare_cached(include_str!("sql/refresh_node_embeddings.sql"))
                .await
                .map_err(db)?;
            tx.execute(&statement, &[&model, &all_ids])
                .await
                .map_err(db)?;
            Ok(dims)
        })?;
        self.written.wrote(records.len(), &self.direct);
        self.hnsw.saved(&dims);
        Ok(())
    }

    #[instrument(skip_all)]
    async fn node_vectors(&self, request: GetNodeVectors<'_>) -> Result<Vec<NodeVector>> {
        let (workspace, model, perspective) =
            (request.workspace, request.model, request.perspective);
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT n.name, n.entity_type, x.embedding
                     FROM node_embeddings x JOIN nodes n ON n.id = x.node_id
                     WHERE x.workspace_id = $1 AND x.model = $2 AND x.perspective_id = $3
                     ORDER BY n.name",
                    &[&workspace.0, &model, &perspective.0],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| NodeVector {
                    name: row.get(0),
                    entity_type: row.get(1),
                    vector: row.get::<_, Vector>(2).to_vec(),
                })
                .collect())
        })
    }

    #[instrument(skip_all)]
    async fn embedding_coverage(&self, request: ModelEmbeddings<'_>) -> Result<f64> {
        let ModelEmbeddings { workspace, model } = request;
        read!(self, |tx| async {
            let row = tx
                .query_one(
                    "SELECT
                         (SELECT count(*) FROM observations o
                          JOIN perspectives p ON p.workspace_id = o.workspace_id AND p.enabled
                          WHERE o.workspace_id = $1
                            AND (o.valid_to IS NULL OR o.valid_to > now())) AS total,
                         (SELECT count(*) FROM embeddings e
                          JOIN observations o ON o.id = e.observation_id
                          JOIN nodes n ON n.id = o.node_id
                          JOIN perspectives p ON p.id = e.perspective_id AND p.enabled
                          WHERE e.workspace_id = $1 AND e.model = $2
                            AND e.source_updated_at = n.updated_at
                            AND (o.valid_to IS NULL OR o.valid_to > now())) AS current",
                    &[&workspace.0, &model],
                )
                .await
                .map_err(db)?;
            let total: i64 = row.get("total");
            let current: i64 = row.get("current");
            Ok(if total == 0 {
                1.0
            } else {
                current as f64 / total as f64
            })
        })
    }

    async fn change_marker(&self) -> Result<i64> {
        // Not `read!`: one statement, read on every indexer pass; no transaction round trips.
        single!(self, |client| async {
            let row = client
                .query_one(
                    "SELECT (SELECT coalesce(max(id), 0) FROM events) * 1000003
                            + (SELECT coalesce(max(id), 0) FROM reflections)",
                    &[],
                )
                .await
                .map_err(db)?;
            Ok::<i64, Error>(row.get(0))
        })
    }

    #[instrument(skip_all)]
    async fn clear_embeddings(&self, request: ModelEmbeddings<'_>) -> Result<u64> {
        let ModelEmbeddings { workspace, model } = request;
        write!(self, |tx| async {
            tx.execute(
                "DELETE FROM node_embeddings WHERE workspace_id = $1 AND model = $2",
                &[&workspace.0, &model],
            )
            .await
            .map_err(db)?;
            tx.execute(
                "DELETE FROM reflection_embeddings e USING reflections r
                 WHERE r.id = e.reflection_id AND r.workspace_id = $1 AND e.model = $2",
                &[&workspace.0, &model],
            )
            .await
            .map_err(db)?;
            tx.execute(
                "DELETE FROM embeddings WHERE workspace_id = $1 AND model = $2",
                &[&workspace.0, &model],
            )
            .await
            .map_err(db)
        })
    }

    #[instrument(skip_all)]
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        read!(self, |tx| async {
            let row = tx
                .query_one(
                    "SELECT count(*) FROM observations o
                     JOIN perspectives p ON p.workspace_id = o.workspace_id AND p.enabled
                     WHERE o.workspace_id = $1 AND (o.valid_to IS NULL OR o.valid_to > now())",
                    &[&workspace.0],
                )
                .await
                .map_err(db)?;
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    #[instrument(skip_all)]
    async fn pending_reflections(
        &self,
        model: &str,
        skip: &[i64],
        limit: usize,
    ) -> Result<Vec<PendingReflection>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read!(self, |tx| async {
            let rows = tx
                .query(PENDING_REFLECTIONS_SQL, &[&model, &skip, &limit])
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| PendingReflection {
                    id: row.get(0),
                    label: row.get(1),
                    content: row.get(2),
                })
                .collect())
        })
    }

    #[instrument(skip_all, fields(count = vectors.len()))]
    async fn save_reflection_embeddings(
        &self,
        model: &str,
        vectors: &[ReflectionVector],
    ) -> Result<()> {
        if vectors.is_empty() {
            return Ok(());
        }
        let ids: Vec<i64> = vectors.iter().map(|v| v.reflection_id).collect();
        let embeddings: Vec<Vector> = (vectors.iter())
            .map(|v| Vector::from(v.vector.clone()))
            .collect();
        let signs: Vec<Option<&[u8]>> =
            (vectors.iter()).map(|v| v.token_signs.as_deref()).collect();
        write!(self, |tx| async {
            tx.execute(
                "INSERT INTO reflection_embeddings (reflection_id, model, dims, embedding, token_signs)
                 SELECT v.id, $1, vector_dims(v.embedding), v.embedding, v.signs
                 FROM unnest($2::bigint[], $3::vector[], $4::bytea[]) AS v (id, embedding, signs)
                 WHERE EXISTS (SELECT 1 FROM reflections r WHERE r.id = v.id)
                 ON CONFLICT (reflection_id, model) DO UPDATE
                 SET dims = excluded.dims, embedding = excluded.embedding,
                     token_signs = excluded.token_signs, embedded_at = now()",
                &[&model, &ids, &embeddings, &signs],
            )
            .await
            .map_err(db)?;
            Ok(())
        })
    }
}
