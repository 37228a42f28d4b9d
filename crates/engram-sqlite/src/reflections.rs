//! Reflections ([`engram_domain::ReflectionStore`]): written beside the graph, found by their
//! vectors (an exact scan of the workspace's with `vec_distance_cosine`: reflections are few
//! beside facts) and by full text (`reflections_fts`, bm25).

use std::collections::HashSet;

use async_trait::async_trait;
use engram_domain::reflections::REFLECTION_PREVIEW_CHARS;
use engram_domain::reflections::{
    self, REFLECTION_COLUMNS, REFLECTION_JOINS, RELATION_ENDS_SQL, TargetIds, relation_not_found,
};
use engram_domain::search::{similarity, words};
use engram_domain::*;
use rusqlite::{OptionalExtension, Row, ToSql, Transaction, params, params_from_iter};
use tracing::instrument;

use crate::error::db;
use crate::nodes::node_id;
use crate::sql::{from_blob, query, to_blob};
use crate::{SqliteStore, micros, timestamp};

/// A reflection read by [`REFLECTION_COLUMNS`], from its first column on.
fn reflection(row: &Row<'_>) -> rusqlite::Result<Reflection> {
    Ok(Reflection {
        id: row.get(0)?,
        target: ReflectionTarget::from_columns(row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?),
        content: row.get(5)?,
        author: row.get(6)?,
        mood: row.get(7)?,
        created_at: timestamp(row.get(8)?),
    })
}

/// The ids `target` names in the workspace; [`Error::NotFound`] for a node it does not have,
/// or, when `current`, a relation that does not hold now (a search's filter and an import
/// name a relation by its ends and type alone: one ended since keeps its reflections).
fn target_ids(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    target: &ReflectionTarget,
    current: bool,
) -> Result<TargetIds> {
    Ok(match target.target("target")? {
        Target::Node(name) => TargetIds {
            node: Some(node_id(tx, workspace, name)?),
            ends: None,
        },
        Target::Relation(relation) if !current => TargetIds {
            node: None,
            ends: Some(crate::nodes::node_pair(
                tx,
                workspace,
                &relation.from,
                &relation.to,
            )?),
        },
        Target::Relation(relation) => {
            let mut statement = tx.prepare_cached(RELATION_ENDS_SQL).map_err(db)?;
            let ends = statement
                .query_row(
                    params![
                        workspace.0,
                        relation.from,
                        relation.to,
                        relation.relation_type
                    ],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(db)?
                .ok_or_else(|| relation_not_found(relation))?;
            TargetIds {
                node: None,
                ends: Some(ends),
            }
        }
        Target::Workspace => TargetIds::default(),
    })
}

/// The filter on `r` a search's target puts, with its parameters from `?first` on.
struct Scope {
    node: Option<i64>,
    from: Option<i64>,
    to: Option<i64>,
    relation_type: Option<String>,
    only_workspace: bool,
    author: Option<String>,
    mood: Option<String>,
}

/// Writes one reflection with `at` (`None`: now); its id.
fn insert(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    ids: TargetIds,
    target: &ReflectionTarget,
    texts: [Option<&str>; 3],
    at: Option<Timestamp>,
) -> Result<i64> {
    let [content, author, mood] = texts;
    let (from, to) = ids.ends.unzip();
    let relation_type = target.relation.as_ref().map(|r| r.relation_type.as_str());
    tx.query_row(
        "INSERT INTO reflections (workspace_id, node_id, from_node_id, to_node_id, relation_type,
                                  content, author, mood, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, coalesce(?9, engram_now()))
         RETURNING id",
        params![
            workspace.0,
            ids.node,
            from,
            to,
            relation_type,
            content,
            author,
            mood,
            at.map(micros)
        ],
        |row| row.get(0),
    )
    .map_err(db)
}

/// The reflections `ids`, as [`reflection`] reads them, in id order.
fn read_many(tx: &Transaction<'_>, ids: &[i64]) -> Result<Vec<Reflection>> {
    let sql = format!(
        "SELECT {REFLECTION_COLUMNS} {REFLECTION_JOINS}
         WHERE r.id IN (SELECT value FROM json_each(?1)) ORDER BY r.id"
    );
    query(tx, &sql, params![crate::sql::id_list(ids)], reflection)
}

/// The FTS5 query of `text`: any of its words (stop words left out, CJK pairs added), each
/// quoted; `None` without a word.
fn any_word(text: &str) -> Option<String> {
    let mut seen = HashSet::new();
    let terms: Vec<String> = words::words(&words::with_cjk_bigrams(text))
        .filter(|w| !words::is_stop_word(w) && seen.insert(w.clone()))
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// The node's newest reflections (at most [`reflections::NODE_REFLECTIONS`], newest first)
/// and how many it has, for `open_nodes`.
pub(crate) fn of_node(tx: &Transaction<'_>, node: i64) -> Result<(Vec<NodeReflection>, i64)> {
    let listed = query(
        tx,
        "SELECT substr(content, 1, ?3), author, mood, created_at, count(*) OVER () FROM reflections
         WHERE node_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
        // One character past the preview, so that the cut shows (`NodeDetail::with_reflections`).
        params![
            node,
            reflections::NODE_REFLECTIONS as i64,
            REFLECTION_PREVIEW_CHARS as i64 + 1
        ],
        |row| {
            let reflection = NodeReflection {
                content: row.get(0)?,
                author: row.get(1)?,
                mood: row.get(2)?,
                created_at: timestamp(row.get(3)?),
            };
            Ok((reflection, row.get::<_, i64>(4)?))
        },
    )?;
    let count = listed.first().map_or(0, |(_, count)| *count);
    Ok((listed.into_iter().map(|(r, _)| r).collect(), count))
}

#[async_trait]
impl ReflectionStore for SqliteStore {
    #[instrument(skip_all)]
    async fn add_reflection(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddReflection>,
    ) -> Result<Reflection> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| {
                let ids = target_ids(tx, workspace, &request.target, true)?;
                let texts = [
                    Some(request.content.as_str()),
                    request.author.as_deref(),
                    request.mood.as_deref(),
                ];
                let id = insert(tx, workspace, ids, &request.target, texts, None)?;
                read_many(tx, &[id])?
                    .pop()
                    .ok_or_else(|| Error::Internal("a reflection written was not read".into()))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn reflection_candidates(
        &self,
        workspace: WorkspaceId,
        request: &ReflectionQuery<'_>,
    ) -> Result<Vec<ReflectionCandidate>> {
        let target = request.target.cloned();
        let vector = request.vector.map(to_blob);
        let query_vector = request.vector.map(<[f32]>::to_vec);
        let dims = request.vector.map(|v| v.len() as i64);
        let model = request.model.to_owned();
        let text = any_word(request.text);
        let depth = i64::try_from(request.depth).unwrap_or(i64::MAX);
        let author = request.author.map(str::to_owned);
        let mood = request.mood.map(str::to_owned);
        self.pool
            .read(move |tx| {
                let ids = match &target {
                    Some(target) => target_ids(tx, workspace, target, false)?,
                    None => TargetIds::default(),
                };
                let (from, to) = ids.ends.unzip();
                let scope = Scope {
                    node: ids.node,
                    from,
                    to,
                    relation_type: (target.as_ref())
                        .and_then(|t| t.relation.as_ref())
                        .map(|r| r.relation_type.clone()),
                    only_workspace: target.as_ref().is_some_and(|t| t.workspace),
                    author,
                    mood,
                };
                // ?1 workspace, ?2–?8 the scope, then each statement's own.
                let filter = "r.workspace_id = ?1 AND (?2 IS NULL OR r.node_id = ?2)
                    AND (?3 IS NULL OR (r.from_node_id = ?3 AND r.to_node_id = ?4
                                        AND r.relation_type = ?5))
                    AND (NOT ?6 OR (r.node_id IS NULL AND r.from_node_id IS NULL))
                    AND (?7 IS NULL OR r.author = ?7) AND (?8 IS NULL OR r.mood = ?8)";
                let scoped: [&dyn ToSql; 8] = [
                    &workspace.0,
                    &scope.node,
                    &scope.from,
                    &scope.to,
                    &scope.relation_type,
                    &scope.only_workspace,
                    &scope.author,
                    &scope.mood,
                ];
                let nearest: Vec<i64> = match (&vector, dims) {
                    (Some(vector), Some(dims)) => query(
                        tx,
                        &format!(
                            "SELECT e.reflection_id FROM reflection_embeddings e
                             JOIN reflections r ON r.id = e.reflection_id
                             WHERE {filter} AND e.model = ?9 AND e.dims = ?10
                             ORDER BY vec_distance_cosine(e.embedding, ?11), e.reflection_id
                             LIMIT ?12"
                        ),
                        params_from_iter([&scoped[..], &[&model, &dims, vector, &depth]].concat()),
                        |row| row.get::<_, i64>(0),
                    )?,
                    _ => Vec::new(),
                };
                let matched: Vec<(i64, f64)> = match &text {
                    Some(text) => query(
                        tx,
                        &format!(
                            "SELECT r.id, -bm25(reflections_fts) AS score FROM reflections_fts
                             JOIN reflections r ON r.id = reflections_fts.rowid
                             WHERE reflections_fts MATCH ?9 AND {filter}
                             ORDER BY score DESC, r.id LIMIT ?10"
                        ),
                        params_from_iter([&scoped[..], &[text, &depth]].concat()),
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )?,
                    None => Vec::new(),
                };
                let mut ids: Vec<i64> = nearest.clone();
                ids.extend(matched.iter().map(|(id, _)| *id));
                ids.sort_unstable();
                ids.dedup();
                // Each candidate with its vector of the query's model, in one read.
                let sql = format!(
                    "SELECT {REFLECTION_COLUMNS}, e.embedding, e.token_signs {REFLECTION_JOINS}
                     LEFT JOIN reflection_embeddings e
                            ON e.reflection_id = r.id AND e.model = ?2 AND e.dims = ?3
                     WHERE r.id IN (SELECT value FROM json_each(?1)) ORDER BY r.id"
                );
                let rows = query(
                    tx,
                    &sql,
                    params![crate::sql::id_list(&ids), model, dims],
                    |row| {
                        let embedding: Option<Vec<u8>> = row.get(9)?;
                        Ok((reflection(row)?, embedding, row.get(10)?))
                    },
                )?;
                Ok((rows.into_iter())
                    .map(|(reflection, embedding, token_signs)| {
                        let id = reflection.id;
                        let similarity = (query_vector.as_deref())
                            .zip(embedding)
                            .map(|(q, e)| f64::from(similarity::cosine(q, &from_blob(&e))));
                        ReflectionCandidate {
                            reflection,
                            similarity,
                            nearest: nearest.contains(&id),
                            token_signs,
                            text_score: matched.iter().find(|(m, _)| *m == id).map(|m| m.1),
                        }
                    })
                    .collect())
            })
            .await
    }

    #[instrument(skip_all)]
    async fn reflections_page(
        &self,
        workspace: WorkspaceId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<Reflection>> {
        self.pool
            .read(move |tx| {
                let sql = format!(
                    "SELECT {REFLECTION_COLUMNS} {REFLECTION_JOINS}
                     WHERE r.workspace_id = ?1 AND r.id > ?2 ORDER BY r.id LIMIT ?3"
                );
                query(tx, &sql, params![workspace.0, after, limit], reflection)
            })
            .await
    }

    #[instrument(skip_all, fields(count = records.len()))]
    async fn import_reflections(
        &self,
        workspace: WorkspaceId,
        records: &[Checked<ReflectionRecord>],
    ) -> Result<ReflectionsImported> {
        let records: Vec<ReflectionRecord> = records.iter().map(|r| (**r).clone()).collect();
        self.pool
            .write(move |tx| {
                let mut outcome = ReflectionsImported::default();
                for (index, record) in records.iter().enumerate() {
                    let ids = match target_ids(tx, workspace, &record.target, false) {
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
                        .query_row(
                            "SELECT 1 FROM reflections WHERE workspace_id = ?1
                               AND node_id IS ?2 AND from_node_id IS ?3 AND to_node_id IS ?4
                               AND relation_type IS ?5 AND content = ?6",
                            params![
                                workspace.0,
                                ids.node,
                                from,
                                to,
                                relation_type,
                                record.content
                            ],
                            |_| Ok(()),
                        )
                        .optional()
                        .map_err(db)?;
                    if there.is_some() {
                        outcome.existing += 1;
                        continue;
                    }
                    let texts = [
                        Some(record.content.as_str()),
                        record.author.as_deref(),
                        record.mood.as_deref(),
                    ];
                    let at = Some(record.created_at);
                    insert(tx, workspace, ids, &record.target, texts, at)?;
                    outcome.created += 1;
                }
                Ok(outcome)
            })
            .await
    }
}
