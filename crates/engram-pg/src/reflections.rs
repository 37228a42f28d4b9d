//! Reflections ([`engram_domain::ReflectionStore`]): written beside the graph, found by their
//! vectors (an exact scan of the workspace's, ordered by cosine distance: reflections are few
//! beside facts) and by full text (their own `tsvector`, GIN-indexed).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::reflections::{
    REFLECTION_COLUMNS, REFLECTION_JOINS, RELATION_ENDS_SQL, TargetIds, relation_not_found,
};
use engram_domain::*;
use pgvector::Vector;
use tokio_postgres::Row;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::graph::node_id;

/// A reflection read by [`REFLECTION_COLUMNS`], from its first column on.
pub(crate) fn reflection(row: &Row) -> Reflection {
    Reflection {
        id: row.get(0),
        target: ReflectionTarget::from_columns(row.get(1), row.get(2), row.get(3), row.get(4)),
        content: row.get(5),
        author: row.get(6),
        mood: row.get(7),
        created_at: row.get(8),
    }
}

/// The ids `target` names in the workspace; [`Error::NotFound`] for a node it does not have,
/// or, when `current`, a relation that does not hold now (a search's filter and an import
/// name a relation by its ends and type alone: one ended since keeps its reflections).
async fn target_ids(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    target: &ReflectionTarget,
    current: bool,
) -> Result<TargetIds> {
    Ok(match target.target("target")? {
        Target::Node(name) => TargetIds {
            node: Some(node_id(client, workspace, name).await?),
            ends: None,
        },
        Target::Relation(relation) if !current => TargetIds {
            node: None,
            ends: Some((
                node_id(client, workspace, &relation.from).await?,
                node_id(client, workspace, &relation.to).await?,
            )),
        },
        Target::Relation(relation) => {
            let statement = client.prepare_cached(RELATION_ENDS_SQL).await.map_err(db)?;
            let row = client
                .query_opt(
                    &statement,
                    &[
                        &workspace.0,
                        &relation.from,
                        &relation.to,
                        &relation.relation_type,
                    ],
                )
                .await
                .map_err(db)?
                .ok_or_else(|| relation_not_found(relation))?;
            TargetIds {
                node: None,
                ends: Some((row.get(0), row.get(1))),
            }
        }
        Target::Workspace => TargetIds::default(),
    })
}

/// Writes one reflection with `at` (`None`: now); its id.
async fn insert(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    ids: TargetIds,
    relation_type: Option<&str>,
    texts: [Option<&str>; 3],
    at: Option<Timestamp>,
) -> Result<i64> {
    let [content, author, mood] = texts;
    let (from, to) = ids.ends.unzip();
    let row = client
        .query_one(
            "INSERT INTO reflections (workspace_id, node_id, from_node_id, to_node_id,
                                      relation_type, content, author, mood, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, coalesce($9, now()))
             RETURNING id",
            &[
                &workspace.0,
                &ids.node,
                &from,
                &to,
                &relation_type,
                &content,
                &author,
                &mood,
                &at,
            ],
        )
        .await
        .map_err(db)?;
    Ok(row.get(0))
}

/// The reflection `id`, as [`reflection`] reads it.
async fn read_one(client: &impl GenericClient, id: i64) -> Result<Reflection> {
    let sql = format!("SELECT {REFLECTION_COLUMNS} {REFLECTION_JOINS} WHERE r.id = $1");
    let row = client.query_one(&sql, &[&id]).await.map_err(db)?;
    Ok(reflection(&row))
}

#[async_trait]
impl ReflectionStore for PgStore {
    #[instrument(skip_all)]
    async fn add_reflection(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddReflection>,
    ) -> Result<Reflection> {
        write!(self, |tx| async {
            let ids = target_ids(&tx, workspace, &request.target, true).await?;
            let relation_type = request
                .target
                .relation
                .as_ref()
                .map(|r| r.relation_type.as_str());
            let texts = [
                Some(request.content.as_str()),
                request.author.as_deref(),
                request.mood.as_deref(),
            ];
            let id = insert(&tx, workspace, ids, relation_type, texts, None).await?;
            read_one(&tx, id).await
        })
    }

    #[instrument(skip_all)]
    async fn reflection_candidates(
        &self,
        workspace: WorkspaceId,
        query: &ReflectionQuery<'_>,
    ) -> Result<Vec<ReflectionCandidate>> {
        let vector = query.vector.map(|v| Vector::from(v.to_vec()));
        let dims = query
            .vector
            .map(|v| i32::try_from(v.len()).unwrap_or(i32::MAX));
        let depth = i64::try_from(query.depth).unwrap_or(i64::MAX);
        read!(self, |tx| async {
            let ids = match query.target {
                Some(target) => target_ids(&tx, workspace, target, false).await?,
                None => TargetIds::default(),
            };
            let only_workspace = query.target.is_some_and(|t| t.workspace);
            let (from, to) = ids.ends.unzip();
            let relation_type = (query.target)
                .and_then(|t| t.relation.as_ref())
                .map(|r| r.relation_type.as_str());
            let statement = tx
                .prepare_cached(&format!(
                    "WITH scope AS (
                         SELECT r.id FROM reflections r
                         WHERE r.workspace_id = $1
                           AND ($2::bigint IS NULL OR r.node_id = $2)
                           AND ($3::bigint IS NULL OR (r.from_node_id = $3 AND r.to_node_id = $4
                                                       AND r.relation_type = $5))
                           AND (NOT $6 OR (r.node_id IS NULL AND r.from_node_id IS NULL))
                           AND ($7::text IS NULL OR r.author = $7)
                           AND ($8::text IS NULL OR r.mood = $8)
                     ), nearest AS (
                         SELECT e.reflection_id AS id
                         FROM reflection_embeddings e JOIN scope s ON s.id = e.reflection_id
                         WHERE e.model = $10 AND e.dims = $11
                         ORDER BY e.embedding <=> $9::vector LIMIT $12
                     ), matched AS (
                         SELECT r.id, ts_rank_cd(r.content_tsv, q.query) AS score
                         FROM reflections r JOIN scope s ON s.id = r.id,
                              (SELECT replace(plainto_tsquery('english', engram_with_cjk($13))::text,
                                              ' & ', ' | ')::tsquery AS query) q
                         WHERE r.content_tsv @@ q.query
                         ORDER BY score DESC, r.id LIMIT $12
                     )
                     SELECT {REFLECTION_COLUMNS},
                            (1 - (e.embedding <=> $9::vector))::float8 AS similarity,
                            r.id IN (SELECT id FROM nearest) AS nearest,
                            e.token_signs, m.score::float8 AS text_score
                     {REFLECTION_JOINS}
                     LEFT JOIN reflection_embeddings e
                            ON e.reflection_id = r.id AND e.model = $10 AND e.dims = $11
                     LEFT JOIN matched m ON m.id = r.id
                     WHERE r.id IN (SELECT id FROM nearest) OR m.id IS NOT NULL"
                ))
                .await
                .map_err(db)?;
            let rows = tx
                .query(
                    &statement,
                    &[
                        &workspace.0,
                        &ids.node,
                        &from,
                        &to,
                        &relation_type,
                        &only_workspace,
                        &query.author,
                        &query.mood,
                        &vector,
                        &query.model,
                        &dims,
                        &depth,
                        &query.text,
                    ],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| ReflectionCandidate {
                    reflection: reflection(row),
                    similarity: row.get(9),
                    nearest: row.get(10),
                    token_signs: row.get(11),
                    text_score: row.get(12),
                })
                .collect())
        })
    }

    #[instrument(skip_all)]
    async fn reflections_page(
        &self,
        workspace: WorkspaceId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<Reflection>> {
        read!(self, |tx| async {
            let sql = format!(
                "SELECT {REFLECTION_COLUMNS} {REFLECTION_JOINS}
                 WHERE r.workspace_id = $1 AND r.id > $2 ORDER BY r.id LIMIT $3"
            );
            let rows = (tx.query(&sql, &[&workspace.0, &after, &i64::from(limit)]))
                .await
                .map_err(db)?;
            Ok(rows.iter().map(reflection).collect())
        })
    }

    #[instrument(skip_all, fields(count = records.len()))]
    async fn import_reflections(
        &self,
        workspace: WorkspaceId,
        records: &[Checked<ReflectionRecord>],
    ) -> Result<ReflectionsImported> {
        write!(self, |tx| async {
            let mut outcome = ReflectionsImported::default();
            for (index, record) in records.iter().enumerate() {
                let ids = match target_ids(&tx, workspace, &record.target, false).await {
                    Ok(ids) => ids,
                    Err(Error::NotFound { .. }) => {
                        outcome.missing.push(index);
                        continue;
                    }
                    Err(error) => return Err(error),
                };
                let (from, to) = ids.ends.unzip();
                let relation_type = record.target.relation.as_ref().map(|r| &r.relation_type);
                let there = tx
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM reflections WHERE workspace_id = $1
                           AND node_id IS NOT DISTINCT FROM $2
                           AND from_node_id IS NOT DISTINCT FROM $3
                           AND to_node_id IS NOT DISTINCT FROM $4
                           AND relation_type IS NOT DISTINCT FROM $5 AND content = $6)",
                        &[
                            &workspace.0,
                            &ids.node,
                            &from,
                            &to,
                            &relation_type,
                            &record.content,
                        ],
                    )
                    .await
                    .map_err(db)?;
                if there.get::<_, bool>(0) {
                    outcome.existing += 1;
                    continue;
                }
                let texts = [
                    Some(record.content.as_str()),
                    record.author.as_deref(),
                    record.mood.as_deref(),
                ];
                let relation_type = relation_type.map(String::as_str);
                let at = Some(record.created_at);
                insert(&tx, workspace, ids, relation_type, texts, at).await?;
                outcome.created += 1;
            }
            Ok(outcome)
        })
    }
}
