//! Perspectives, the indexer's queue, stored vectors and node aggregates, coverage.
//!
//! Vectors are stored in `embeddings.embedding` and indexed for nearest-neighbour queries in
//! sqlite-vec `vec0` tables, one per dimension (`vec_obs_384`), since a `vec0` column has a
//! fixed dimension. Each is partitioned by workspace and perspective (a perspective belongs to
//! one workspace, and every search names one, so a KNN query scans exactly that perspective's
//! vectors: twice as fast at 10,000 observations as a workspace partition filtered on the
//! perspective) and carries the model as a metadata column, which the scan filters on. Chunks
//! hold 128 vectors, not sqlite-vec's 1,024: a partition's first chunk is allocated whole, and a
//! small workspace would otherwise take 8 MB at 384 dimensions. A row's rowid is its
//! `embeddings` row's id. A table is created the first time vectors of its dimension are stored,
//! with a trigger that deletes a vector together with its `embeddings` row (and so with its
//! observation, node, perspective or workspace). The `vec0` tables are an index, as pgvector's
//! HNSW indexes are: aggregates and scoring within one node read the `embeddings` column, and
//! the tables could be rebuilt from it. Searches are in `search.rs`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use engram_domain::perspectives::{DEFAULT_PERSPECTIVES, ObservationContext, Perspective};
use engram_domain::reflections::{PENDING_REFLECTIONS_SQL, PENDING_SKIP_SQLITE};
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::{from_blob, id_list, query, strings, to_blob};
use crate::vector_lists::Filing;
use crate::{micros, timestamp};

pub(crate) fn seed_perspectives(tx: &Transaction<'_>, workspace: WorkspaceId) -> Result<()> {
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO perspectives (workspace_id, name, document_template, query_template,
                                       enabled, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, engram_now())
             ON CONFLICT (workspace_id, name) DO NOTHING",
        )
        .map_err(db)?;
    for p in DEFAULT_PERSPECTIVES {
        insert
            .execute(params![
                workspace.0,
                p.name,
                p.document_template,
                p.query_template,
                p.enabled
            ])
            .map_err(db)?;
    }
    Ok(())
}

pub(crate) fn perspectives(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
) -> Result<Vec<Perspective>> {
    query(
        tx,
        "SELECT id, name, document_template, query_template, enabled
         FROM perspectives WHERE workspace_id = ?1 ORDER BY name",
        [workspace.0],
        |row| {
            Ok(Perspective {
                id: PerspectiveId(row.get("id")?),
                name: row.get("name")?,
                document_template: row.get("document_template")?,
                query_template: row.get("query_template")?,
                enabled: row.get("enabled")?,
            })
        },
    )
}

/// Up to `limit` pending pairs of one workspace whose observation id lies in `(from, to]`.
fn pending_in(
    tx: &Transaction<'_>,
    model: &str,
    limit: i64,
    workspace: i64,
    (from, to): (i64, i64),
) -> Result<Vec<EmbeddingTask>> {
    query(
        tx,
        include_str!("sql/pending_embeddings.sql"),
        params![model, limit, workspace, from, to],
        |row| {
            let mut relations = strings(row, "outgoing")?;
            relations.extend(strings(row, "incoming")?);
            Ok(EmbeddingTask {
                observation_id: row.get("observation_id")?,
                workspace: WorkspaceId(row.get("workspace_id")?),
                perspective_id: PerspectiveId(row.get("perspective_id")?),
                perspective_name: row.get("perspective_name")?,
                document_template: row.get("document_template")?,
                context: ObservationContext {
                    content: row.get("content")?,
                    ordinal: Ordinal(row.get("ordinal")?),
                    created_at: timestamp(row.get("created_at")?),
                    name: row.get("name")?,
                    entity_type: row.get("entity_type")?,
                    tags: strings(row, "tags")?,
                    summary: row.get("summary")?,
                    relations,
                },
                source_updated_at: timestamp(row.get("source_updated_at")?),
                stored_hash: row.get("text_hash")?,
            })
        },
    )
}

/// The `vec0` table holding observation vectors of `dims` dimensions.
pub(crate) fn vec_table(dims: i64) -> String {
    format!("vec_obs_{dims}")
}

/// Whether the `vec0` table for `dims` exists.
pub(crate) fn has_vec_table(tx: &Transaction<'_>, dims: i64) -> Result<bool> {
    tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [vec_table(dims)],
        |row| row.get(0),
    )
    .map_err(db)
}

/// Creates the `vec0` table for `dims` and its delete trigger when they are missing.
fn ensure_vec_table(tx: &Transaction<'_>, dims: i64) -> Result<()> {
    let table = vec_table(dims);
    tx.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0 (
             workspace_id INTEGER PARTITION KEY,
             perspective_id INTEGER PARTITION KEY,
             model TEXT,
             embedding float[{dims}] distance_metric=cosine,
             chunk_size = 128
         );
         CREATE TRIGGER IF NOT EXISTS embeddings_delete_{table} AFTER DELETE ON embeddings
         WHEN OLD.dims = {dims}
         BEGIN
             DELETE FROM {table} WHERE rowid = OLD.id;
         END;"
    ))
    .map_err(db)
}

/// Recomputes the aggregate vector (the mean of the vectors of the node's current facts) per
/// perspective for every node the observations belong to; a node keeps none in a perspective
/// where no current fact of it has a vector (it lost every fact, or they ended or expired).
fn refresh_node_embeddings(tx: &Transaction<'_>, model: &str, observations: &[i64]) -> Result<()> {
    let nodes: Vec<(i64, i64, i64)> = query(
        tx,
        "SELECT DISTINCT n.id, n.workspace_id, n.updated_at
         FROM observations o JOIN nodes n ON n.id = o.node_id
         WHERE o.id IN (SELECT value FROM json_each(?1))",
        [id_list(observations)],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    let mut upsert = tx
        .prepare_cached(
            "INSERT INTO node_embeddings (node_id, perspective_id, workspace_id, model, dims,
                                          embedding, observation_count, source_updated_at,
                                          updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, engram_now())
             ON CONFLICT (node_id, perspective_id, model) DO UPDATE
             SET dims = excluded.dims, embedding = excluded.embedding,
                 observation_count = excluded.observation_count,
                 source_updated_at = excluded.source_updated_at, updated_at = engram_now()",
        )
        .map_err(db)?;
    let mut forget = tx
        .prepare_cached(
            "DELETE FROM node_embeddings
             WHERE node_id = ?1 AND model = ?2
               AND perspective_id NOT IN (SELECT value FROM json_each(?3))",
        )
        .map_err(db)?;
    for (node, workspace, updated_at) in nodes {
        let stored: Vec<(i64, i64, Vec<u8>)> = query(
            tx,
            // CROSS JOIN: from the node's few observations to their vectors, never the
            // other way round through every vector of the model. The indexer may embed facts
            // that ended; the aggregate is of what holds now.
            "SELECT e.perspective_id, e.dims, e.embedding
             FROM observations o CROSS JOIN embeddings e ON e.observation_id = o.id
             WHERE o.node_id = ?1 AND e.model = ?2
               AND (o.valid_to IS NULL OR o.valid_to > engram_now())",
            params![node, model],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        // Per (perspective, dimension): the sum of the vectors and their count.
        let mut sums: BTreeMap<(i64, i64), (Vec<f64>, i64)> = BTreeMap::new();
        for (perspective, dims, vector) in stored {
            let (sum, count) = sums
                .entry((perspective, dims))
                .or_insert_with(|| (vec![0.0; usize::try_from(dims).unwrap_or(0)], 0));
            for (total, x) in sum.iter_mut().zip(from_blob(&vector)) {
                *total += f64::from(x);
            }
            *count += 1;
        }
        let kept: Vec<i64> = sums.keys().map(|(perspective, _)| *perspective).collect();
        forget
            .execute(params![node, model, id_list(&kept)])
            .map_err(db)?;
        for ((perspective, dims), (sum, count)) in sums {
            let mean: Vec<f32> = sum
                .iter()
                .map(|total| (total / count as f64) as f32)
                .collect();
            upsert
                .execute(params![
                    node,
                    perspective,
                    workspace,
                    model,
                    dims,
                    to_blob(&mean),
                    count,
                    updated_at
                ])
                .map_err(db)?;
        }
    }
    Ok(())
}

#[async_trait]
impl IndexStore for SqliteStore {
    #[instrument(skip_all)]
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>> {
        self.pool.read(move |tx| perspectives(tx, workspace)).await
    }

    #[instrument(skip_all)]
    async fn set_perspective(&self, request: SetPerspective<'_>) -> Result<Perspective> {
        let SetPerspective {
            workspace,
            perspective,
        } = request;
        let perspective = perspective.clone();
        self.pool
            .write(move |tx| {
                let old_template: Option<String> = tx
                    .query_row(
                        "SELECT document_template FROM perspectives WHERE workspace_id = ?1 AND name = ?2",
                        params![workspace.0, perspective.name],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(db)?;
                let id: i64 = tx
                    .query_row(
                        "INSERT INTO perspectives (workspace_id, name, document_template, query_template,
                                                   enabled, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, engram_now())
                         ON CONFLICT (workspace_id, name) DO UPDATE
                         SET document_template = excluded.document_template,
                             query_template = excluded.query_template, enabled = excluded.enabled
                         RETURNING id",
                        params![
                            workspace.0,
                            perspective.name,
                            perspective.document_template,
                            perspective.query_template,
                            perspective.enabled
                        ],
                        |row| row.get(0),
                    )
                    .map_err(db)?;
                // A changed document template makes every vector of the perspective stale: drop
                // them so the indexer embeds them again (node timestamps did not move, so it
                // would not notice).
                if old_template.is_some_and(|old| old != perspective.document_template) {
                    for table in ["embeddings", "node_embeddings"] {
                        tx.execute(
                            &format!("DELETE FROM {table} WHERE perspective_id = ?1"),
                            [id],
                        )
                        .map_err(db)?;
                    }
                }
                Ok(Perspective {
                    id: PerspectiveId(id),
                    ..perspective
                })
            })
            .await
    }

    #[instrument(skip_all)]
    async fn pending_embeddings(
        &self,
        request: PendingEmbeddings<'_>,
    ) -> Result<Vec<EmbeddingTask>> {
        // Up to `limit` pending pairs, workspaces in turn and each from its cursor.
        let PendingEmbeddings {
            model,
            limit,
            cursor,
        } = request;
        let (model, cursor) = (model.to_owned(), cursor.clone());
        self.pool
            .read(move |tx| {
                let workspaces: Vec<WorkspaceId> =
                    query(tx, "SELECT id FROM workspaces ORDER BY id", [], |row| {
                        Ok(WorkspaceId(row.get(0)?))
                    })?;
                let (mut tasks, mut pass) = (Vec::new(), cursor.pass(&workspaces, limit));
                while let Some(read) = pass.next_read() {
                    let range = (read.after, read.up_to);
                    let found = pending_in(tx, &model, read.most, read.workspace.0, range)?;
                    pass.took(found.len());
                    tasks.extend(found);
                }
                Ok(tasks)
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.records.len()))]
    async fn save_embeddings(&self, request: SaveEmbeddings<'_>) -> Result<()> {
        let SaveEmbeddings { model, records } = request;
        // Stores new vectors, marks unchanged ones current, and refreshes the touched nodes'
        // aggregates. Records whose observation or perspective is gone are skipped.
        let (model, records) = (model.to_owned(), records.to_vec());
        let lists = self.lists.clone();
        self.pool
            .write(move |tx| {
                let mut filing = Filing::new(&lists);
                let mut target = tx
                    .prepare_cached(
                        "SELECT o.workspace_id FROM observations o
                         JOIN perspectives p ON p.id = ?2 AND p.workspace_id = o.workspace_id
                         WHERE o.id = ?1",
                    )
                    .map_err(db)?;
                let mut existing = tx
                    .prepare_cached(
                        "SELECT id, dims FROM embeddings
                         WHERE observation_id = ?1 AND perspective_id = ?2 AND model = ?3",
                    )
                    .map_err(db)?;
                let mut update = tx
                    .prepare_cached(
                        "UPDATE embeddings SET dims = ?2, text_hash = ?3, embedding = ?4,
                                               source_updated_at = ?5, token_signs = ?6,
                                               embedded_at = engram_now()
                         WHERE id = ?1",
                    )
                    .map_err(db)?;
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO embeddings (observation_id, perspective_id, workspace_id, model, dims,
                                                 text_hash, embedding, source_updated_at, token_signs,
                                                 embedded_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, engram_now())
                         RETURNING id",
                    )
                    .map_err(db)?;
                let mut mark_current = tx
                    .prepare_cached(
                        "UPDATE embeddings SET source_updated_at = ?4
                         WHERE observation_id = ?1 AND perspective_id = ?2 AND model = ?3",
                    )
                    .map_err(db)?;
                let mut ready: Vec<i64> = Vec::new();
                for record in &records {
                    let source = micros(record.source_updated_at);
                    let (observation, perspective) =
                        (record.observation_id, record.perspective_id.0);
                    let Some(vector) = &record.vector else {
                        mark_current
                            .execute(params![observation, perspective, model, source])
                            .map_err(db)?;
                        continue;
                    };
                    let Some(workspace): Option<i64> = target
                        .query_row(params![observation, perspective], |row| row.get(0))
                        .optional()
                        .map_err(db)?
                    else {
                        continue;
                    };
                    let dims = i64::try_from(vector.len()).unwrap_or(i64::MAX);
                    let blob = to_blob(vector);
                    if !ready.contains(&dims) {
                        ensure_vec_table(tx, dims)?;
                        ready.push(dims);
                    }
                    let found: Option<(i64, i64)> = existing
                        .query_row(params![observation, perspective, model], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })
                        .optional()
                        .map_err(db)?;
                    let replaced = found.is_some();
                    let id = match found {
                        Some((id, old_dims)) => {
                            if has_vec_table(tx, old_dims)? {
                                tx.execute(
                                    &format!(
                                        "DELETE FROM {} WHERE rowid = ?1",
                                        vec_table(old_dims)
                                    ),
                                    [id],
                                )
                                .map_err(db)?;
                            }
                            update
                                .execute(params![
                                    id,
                                    dims,
                                    record.text_hash,
                                    blob,
                                    source,
                                    record.token_signs
                                ])
                                .map_err(db)?;
                            id
                        }
                        None => insert
                            .query_row(
                                params![
                                    observation,
                                    perspective,
                                    workspace,
                                    model,
                                    dims,
                                    record.text_hash,
                                    blob,
                                    source,
                                    record.token_signs
                                ],
                                |row| row.get(0),
                            )
                            .map_err(db)?,
                    };
                    tx.prepare_cached(&format!(
                        "INSERT INTO {} (rowid, workspace_id, model, perspective_id, embedding)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        vec_table(dims)
                    ))
                    .map_err(db)?
                    .execute(params![id, workspace, model, perspective, blob])
                    .map_err(db)?;
                    filing.file(tx, id, replaced, perspective, &model, vector)?;
                }
                let observations: Vec<i64> = records.iter().map(|r| r.observation_id).collect();
                refresh_node_embeddings(tx, &model, &observations)
            })
            .await?;
        self.lists.build_when_due(&self.pool);
        Ok(())
    }

    #[instrument(skip_all)]
    async fn node_vectors(&self, request: GetNodeVectors<'_>) -> Result<Vec<NodeVector>> {
        let GetNodeVectors {
            workspace,
            model,
            perspective,
        } = request;
        let model = model.to_owned();
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    "SELECT n.name, n.entity_type, x.embedding
                     FROM node_embeddings x JOIN nodes n ON n.id = x.node_id
                     WHERE x.workspace_id = ?1 AND x.model = ?2 AND x.perspective_id = ?3
                     ORDER BY n.name",
                    params![workspace.0, model, perspective.0],
                    |row| {
                        Ok(NodeVector {
                            name: row.get(0)?,
                            entity_type: row.get(1)?,
                            vector: from_blob(&row.get::<_, Vec<u8>>(2)?),
                        })
                    },
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn embedding_coverage(&self, request: ModelEmbeddings<'_>) -> Result<f64> {
        let ModelEmbeddings { workspace, model } = request;
        let model = model.to_owned();
        self.pool
            .read(move |tx| {
                let (total, current): (i64, i64) = tx
                    .query_row(
                        "SELECT
                             (SELECT count(*) FROM observations o
                              JOIN perspectives p ON p.workspace_id = o.workspace_id AND p.enabled
                              WHERE o.workspace_id = ?1),
                             (SELECT count(*) FROM embeddings e
                              JOIN observations o ON o.id = e.observation_id
                              JOIN nodes n ON n.id = o.node_id
                              JOIN perspectives p ON p.id = e.perspective_id AND p.enabled
                              WHERE e.workspace_id = ?1 AND e.model = ?2
                                AND e.source_updated_at = n.updated_at)",
                        params![workspace.0, model],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .map_err(db)?;
                Ok(if total == 0 {
                    1.0
                } else {
                    current as f64 / total as f64
                })
            })
            .await
    }

    async fn change_marker(&self) -> Result<i64> {
        self.pool
            .read(move |tx| {
                tx.query_row(
                    "SELECT (SELECT coalesce(max(id), 0) FROM events) * 1000003
                            + (SELECT coalesce(max(id), 0) FROM reflections)",
                    [],
                    |row| row.get(0),
                )
                .map_err(db)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn clear_embeddings(&self, request: ModelEmbeddings<'_>) -> Result<u64> {
        let ModelEmbeddings { workspace, model } = request;
        let model = model.to_owned();
        self.pool
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM node_embeddings WHERE workspace_id = ?1 AND model = ?2",
                    params![workspace.0, model],
                )
                .map_err(db)?;
                tx.execute(
                    "DELETE FROM vector_list_sets WHERE model = ?2
                     AND perspective_id IN (SELECT id FROM perspectives WHERE workspace_id = ?1)",
                    params![workspace.0, model],
                )
                .map_err(db)?;
                tx.execute(
                    "DELETE FROM reflection_embeddings WHERE model = ?2
                     AND reflection_id IN (SELECT id FROM reflections WHERE workspace_id = ?1)",
                    params![workspace.0, model],
                )
                .map_err(db)?;
                let deleted = tx
                    .execute(
                        "DELETE FROM embeddings WHERE workspace_id = ?1 AND model = ?2",
                        params![workspace.0, model],
                    )
                    .map_err(db)?;
                Ok(deleted as u64)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        self.pool
            .read(move |tx| {
                let pairs: i64 = tx
                    .query_row(
                        "SELECT count(*) FROM observations o
                         JOIN perspectives p ON p.workspace_id = o.workspace_id AND p.enabled
                         WHERE o.workspace_id = ?1",
                        [workspace.0],
                        |row| row.get(0),
                    )
                    .map_err(db)?;
                Ok(u64::try_from(pairs).unwrap_or(0))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn pending_reflections(
        &self,
        model: &str,
        skip: &[i64],
        limit: usize,
    ) -> Result<Vec<PendingReflection>> {
        let (model, skip) = (model.to_owned(), id_list(skip));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    &PENDING_REFLECTIONS_SQL.replace("r.id <> ALL($2)", PENDING_SKIP_SQLITE),
                    params![model, skip, limit],
                    |row| {
                        Ok(PendingReflection {
                            id: row.get(0)?,
                            label: row.get(1)?,
                            content: row.get(2)?,
                        })
                    },
                )
            })
            .await
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
        let model = model.to_owned();
        let vectors = vectors.to_vec();
        self.pool
            .write(move |tx| {
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO reflection_embeddings
                             (reflection_id, model, dims, embedding, token_signs, embedded_at)
                         SELECT ?1, ?2, ?3, ?4, ?5, engram_now()
                         WHERE EXISTS (SELECT 1 FROM reflections WHERE id = ?1)
                         ON CONFLICT (reflection_id, model) DO UPDATE
                         SET dims = excluded.dims, embedding = excluded.embedding,
                             token_signs = excluded.token_signs,
                             embedded_at = excluded.embedded_at",
                    )
                    .map_err(db)?;
                for v in &vectors {
                    let vector = &v.vector;
                    insert
                        .execute(params![
                            v.reflection_id,
                            model,
                            vector.len() as i64,
                            to_blob(vector),
                            v.token_signs
                        ])
                        .map_err(db)?;
                }
                Ok(())
            })
            .await
    }
}
