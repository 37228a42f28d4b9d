//! Node-level tools: create, delete, open, list, summary, tags, orphans, pending
//! consolidation, stats and event counts.

use std::collections::HashMap;

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Row, Transaction, params};
use tracing::instrument;

use crate::error::db;
use crate::sql::{id_list, query, strings, tags_json};
use crate::{SqliteStore, validity};
use crate::{micros, timestamp};

/// The relations touching the nodes `ids` as `endpoints` says, sorted, as `time` sees them:
/// the current ones now; in a read of the past, those that held then (or ever), each with its
/// period ([`validity::relations_seen`]).
pub(crate) fn relations_among(
    tx: &Transaction<'_>,
    ids: &[i64],
    endpoints: Endpoints,
    time: ReadTime,
) -> Result<Vec<Relation>> {
    let joined = endpoints.sql_operator();
    let touching = format!(
        "r.from_node_id IN (SELECT value FROM json_each(?1))
         {joined} r.to_node_id IN (SELECT value FROM json_each(?1))"
    );
    match validity::past(time) {
        None => query(
            tx,
            &format!(
                "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
                 FROM relations r
                 JOIN nodes f ON f.id = r.from_node_id
                 JOIN nodes t ON t.id = r.to_node_id
                 WHERE {touching}
                 ORDER BY 1, 2, 3"
            ),
            [id_list(ids)],
            relation,
        ),
        Some(at) => query(
            tx,
            &format!(
                "SELECT f.name AS from_name, t.name AS to_name, r.relation_type, r.valid_from,
                        r.valid_to
                 FROM {} r
                 JOIN nodes f ON f.id = r.from_node_id
                 JOIN nodes t ON t.id = r.to_node_id
                 ORDER BY 1, 2, 3, 4, 5",
                validity::relations_seen(&touching, 2)
            ),
            params![id_list(ids), at],
            validity::dated_relation,
        ),
    }
}

/// A `{from, to, relation_type}` from a row with `from_name`, `to_name`, `relation_type`.
pub(crate) fn relation(row: &Row<'_>) -> rusqlite::Result<Relation> {
    Ok(Relation::new(
        row.get::<_, String>("from_name")?,
        row.get::<_, String>("to_name")?,
        row.get::<_, String>("relation_type")?,
    ))
}

fn brief(row: &Row<'_>) -> rusqlite::Result<NodeBrief> {
    Ok(NodeBrief {
        name: row.get("name")?,
        entity_type: row.get("entity_type")?,
        summary: row.get("summary")?,
        updated_at: timestamp(row.get("updated_at")?),
    })
}

/// Observations in the whole file, from the kept counts (migration V7).
pub(crate) fn observations_in_file(tx: &Transaction<'_>) -> Result<i64> {
    tx.prepare_cached("SELECT coalesce(sum(observations), 0) FROM workspace_counts")
        .and_then(|mut s| s.query_row([], |row| row.get(0)))
        .map_err(db)
}

/// One observation to write: its node, ordinal and text, when it holds, and for an import its
/// times (microseconds; absent ones are now).
pub(crate) struct NewObservation<'a> {
    pub node_id: i64,
    pub ordinal: i64,
    pub content: &'a str,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    /// Since when the fact holds; absent, now.
    pub valid_from: Option<i64>,
    /// When it stops being current, if it expires.
    pub valid_to: Option<i64>,
    /// When the purge deletes it, if it expires.
    pub expires_at: Option<i64>,
}

impl<'a> NewObservation<'a> {
    /// The fact `fact` written now, holding from its `valid_from` (else now) until it
    /// expires, if it does.
    /// The observation as a result shows it.
    pub(crate) fn observation(&self) -> Observation {
        Observation::new(Ordinal(self.ordinal), self.content)
    }

    pub(crate) fn now(node_id: i64, ordinal: i64, fact: &'a NewFact) -> Self {
        let expires_at = fact.expires_at.map(micros);
        Self {
            node_id,
            ordinal,
            content: &fact.content,
            created_at: None,
            updated_at: None,
            valid_from: fact.valid_from.map(micros),
            valid_to: expires_at,
            expires_at,
        }
    }
}

/// The JSON text of one statement of [`insert_observations`] is cut after this many bytes
/// (SQLite refuses a string over 1e9 bytes, and an import batch may hold 10,000 texts of 64 KiB
/// whose escapes make them up to six times longer).
const STATEMENT_JSON_BYTES: usize = 8 << 20;

/// Writes `rows` into `workspace` in their order, in one statement per 8 MiB of their JSON,
/// then records one `observation create` event per node with its count (migration V4), for
/// runs of `rows` of one node.
///
/// One statement for a call's observations because FTS5 writes out the terms it holds in
/// memory whenever a statement opens a savepoint, which every statement with triggers does:
/// with a statement per observation it wrote, then merged, a segment per observation, 55 % of
/// `create_entities`' time.
pub(crate) fn insert_observations(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    rows: &[NewObservation<'_>],
) -> Result<()> {
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO observations (node_id, workspace_id, ordinal, content, created_at,
                                       updated_at, valid_from, valid_to, expires_at)
             SELECT j.value ->> 0, ?2, j.value ->> 1, j.value ->> 2,
                    coalesce(j.value ->> 3, engram_now()),
                    coalesce(j.value ->> 4, j.value ->> 3, engram_now()),
                    coalesce(j.value ->> 5, engram_now()), j.value ->> 6, j.value ->> 7
             FROM json_each(?1) j ORDER BY j.key",
        )
        .map_err(db)?;
    let mut json = String::new();
    for (i, row) in rows.iter().enumerate() {
        json.push(if json.is_empty() { '[' } else { ',' });
        let tuple = (
            row.node_id,
            row.ordinal,
            row.content,
            row.created_at,
            row.updated_at,
            row.valid_from,
            row.valid_to,
            row.expires_at,
        );
        json.push_str(&serde_json::to_string(&tuple).map_err(|e| Error::Internal(e.to_string()))?);
        if json.len() >= STATEMENT_JSON_BYTES || i + 1 == rows.len() {
            json.push(']');
            insert.execute(params![json, workspace.0]).map_err(db)?;
            json.clear();
        }
    }
    let mut counts: Vec<(i64, i64)> = Vec::new();
    for row in rows {
        match counts.last_mut() {
            Some((node, count)) if *node == row.node_id => *count += 1,
            _ => counts.push((row.node_id, 1)),
        }
    }
    if counts.is_empty() {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at, count)
         SELECT n.workspace_id, n.id, n.name, 'observation', 'create', engram_now(),
                j.value ->> 1
         FROM json_each(?1) j JOIN nodes n ON n.id = j.value ->> 0 ORDER BY j.key",
    )
    .and_then(|mut insert| insert.execute([serde_json::json!(counts).to_string()]))
    .map_err(db)?;
    Ok(())
}

/// The ids of the named nodes that exist.
pub(crate) fn node_ids<'a>(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, i64>> {
    let mut statement = tx
        .prepare_cached("SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2")
        .map_err(db)?;
    let mut ids = HashMap::new();
    for name in names {
        let id: Option<i64> = statement
            .query_row(params![workspace.0, name], |row| row.get(0))
            .optional()
            .map_err(db)?;
        if let Some(id) = id {
            ids.insert(name.to_owned(), id);
        }
    }
    Ok(ids)
}

/// The id of the node `name`; [`Error::NotFound`] when there is none.
pub(crate) fn node_id(tx: &Transaction<'_>, workspace: WorkspaceId, name: &str) -> Result<i64> {
    node_ids(tx, workspace, [name])?
        .remove(name)
        .ok_or_else(|| Error::node_not_found(name))
}

/// The ids of two named nodes; [`Error::NotFound`] naming the first that does not exist.
pub(crate) fn node_pair(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    a: &str,
    b: &str,
) -> Result<(i64, i64)> {
    let first = node_id(tx, workspace, a)?;
    Ok((first, node_id(tx, workspace, b)?))
}

#[async_trait]
impl NodeStore for SqliteStore {
    #[instrument(skip_all, fields(count = request.entities.len()))]
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateEntities>,
    ) -> Result<Vec<CreatedNode>> {
        let (entities, if_exists) = (request.entities.clone(), request.if_exists);
        self.pool
            .write(move |tx| {
                let mut insert_node = tx
                    .prepare_cached(
                        "INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at,
                                            tags, next_ordinal, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 IS NOT NULL THEN engram_now() END, ?5, ?6,
                                 engram_now(), engram_now())
                         ON CONFLICT (workspace_id, name) DO NOTHING
                         RETURNING id, created_at",
                    )
                    .map_err(db)?;
                // A node by its name or an alias: its id, own name, type and creation.
                let mut existing = tx
                    .prepare_cached(
                        "SELECT id, name, entity_type, created_at FROM nodes
                         WHERE workspace_id = ?1 AND name = ?2
                         UNION ALL
                         SELECT n.id, n.name, n.entity_type, n.created_at
                         FROM node_aliases a JOIN nodes n ON n.id = a.node_id
                         WHERE a.workspace_id = ?1 AND a.alias = ?2",
                    )
                    .map_err(db)?;
                let mut is_alias = tx
                    .prepare_cached(
                        "SELECT 1 FROM node_aliases WHERE workspace_id = ?1 AND alias = ?2",
                    )
                    .map_err(db)?;
                let mut created = Vec::with_capacity(entities.len());
                let mut merges = Vec::new();
                // Written together after the nodes (see `insert_observations`).
                let mut observations = Vec::new();
                for (i, entity) in entities.iter().enumerate() {
                    let next_ordinal = entity.observations.len() as i64 + 1;
                    // A node's alias answers for the node: it is not created again.
                    let aliased = is_alias
                        .exists(params![workspace.0, entity.name])
                        .map_err(db)?;
                    let inserted: Option<(i64, i64)> = if aliased {
                        None
                    } else {
                        insert_node
                        .query_row(
                            params![
                                workspace.0,
                                entity.name,
                                entity.entity_type,
                                entity.summary,
                                tags_json(&entity.tags),
                                next_ordinal
                            ],
                            |row| Ok((row.get(0)?, row.get(1)?)),
                        )
                        .optional()
                        .map_err(db)?
                    };
                    let Some((id, created_at)) = inserted else {
                        let (id, name, entity_type, created_at): (i64, String, String, i64) =
                            existing
                                .query_row(params![workspace.0, entity.name], |row| {
                                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                                })
                                .map_err(db)?;
                        merges.push((i, id, created.len()));
                        created.push(CreatedNode::new(name, entity_type, timestamp(created_at), true));
                        continue;
                    };
                    observations.extend(
                        (1..)
                            .zip(&entity.observations)
                            .map(|(ordinal, fact)| NewObservation::now(id, ordinal, fact)),
                    );
                    let (name, entity_type) = (entity.name.clone(), entity.entity_type.clone());
                    created.push(CreatedNode::new(name, entity_type, timestamp(created_at), false));
                }
                insert_observations(tx, workspace, &observations)?;
                if if_exists == IfExists::Merge {
                    for (i, id, at) in merges {
                        crate::upsert::merge_into(tx, workspace, (i, &entities[i]), id, &mut created[at])?;
                    }
                }
                Ok(created)
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.entity_names.len()))]
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteEntities>,
    ) -> Result<DeletedNodes> {
        let names = request.entity_names.clone();
        self.pool
            .write(move |tx| {
                let mut delete = tx
                    .prepare_cached("DELETE FROM nodes WHERE workspace_id = ?1 AND name = ?2")
                    .map_err(db)?;
                let mut result = DeletedNodes::default();
                for name in first_occurrences(&names) {
                    if delete.execute(params![workspace.0, name]).map_err(db)? > 0 {
                        result.deleted.push(name.clone());
                    } else {
                        result.not_found.push(name.clone());
                    }
                }
                Ok(result)
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        request: &Checked<OpenNodes>,
    ) -> Result<OpenedNodes> {
        let (names, time) = (request.names.clone(), request.read_time());
        self.pool
            .read(move |tx| {
                let mut node = tx
                    .prepare_cached(
                        "SELECT id, name, entity_type, summary, tags, created_at, updated_at,
                                (SELECT json_group_array(alias) FROM
                                    (SELECT alias FROM node_aliases a
                                     WHERE a.node_id = nodes.id ORDER BY alias)) AS aliases
                         FROM nodes WHERE workspace_id = ?1 AND name = ?2",
                    )
                    .map_err(db)?;
                let mut result = OpenedNodes::default();
                let mut ids = Vec::new();
                for name in first_occurrences(&names) {
                    let found = node
                        .query_row(params![workspace.0, name], |row| {
                            let id: i64 = row.get("id")?;
                            let detail = NodeDetail {
                                name: row.get("name")?,
                                entity_type: row.get("entity_type")?,
                                summary: row.get("summary")?,
                                tags: strings(row, "tags")?,
                                observations: Vec::new(),
                                aliases: strings(row, "aliases")?,
                                created_at: timestamp(row.get("created_at")?),
                                updated_at: timestamp(row.get("updated_at")?),
                                reflections: Vec::new(),
                                more_reflections: None,
                            };
                            Ok((id, detail))
                        })
                        .optional()
                        .map_err(db)?;
                    match found {
                        Some((id, mut detail)) => {
                            detail.observations = validity::facts(tx, id, time)?;
                            let (listed, count) = crate::reflections::of_node(tx, id)?;
                            detail = detail.with_reflections(listed, count);
                            ids.push(id);
                            result.entities.push(detail);
                        }
                        None => result.not_found.push(name.clone()),
                    }
                }
                result.relations = relations_among(tx, &ids, Endpoints::Either, time)?;
                Ok(result)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNodesByType>,
    ) -> Result<Vec<TypedNode>> {
        let entity_type = request.entity_type.clone();
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    "SELECT name, entity_type, summary, tags, updated_at FROM nodes
                     WHERE workspace_id = ?1 AND entity_type = ?2 ORDER BY name",
                    params![workspace.0, entity_type],
                    |row| {
                        Ok(TypedNode {
                            name: row.get("name")?,
                            entity_type: row.get("entity_type")?,
                            summary: row.get("summary")?,
                            tags: strings(row, "tags")?,
                            updated_at: timestamp(row.get("updated_at")?),
                        })
                    },
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRecentlyModified>,
    ) -> Result<Vec<NodeBrief>> {
        let GetRecentlyModified { days, limit } = **request;
        self.pool
            .read(move |tx| {
                let window = i64::from(days) * 86_400 * 1_000_000;
                query(
                    tx,
                    "SELECT name, entity_type, summary, updated_at FROM nodes
                     WHERE workspace_id = ?1 AND updated_at >= engram_now() - ?2
                     ORDER BY updated_at DESC, name LIMIT ?3",
                    params![workspace.0, window, limit],
                    brief,
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetSummary>,
    ) -> Result<SummaryUpdate> {
        let SetSummary { name, summary } = (**request).clone();
        self.pool
            .write(move |tx| {
                tx.query_row(
                    "UPDATE nodes SET summary = ?3, summary_updated_at = engram_now(),
                                      updated_at = engram_now()
                     WHERE workspace_id = ?1 AND name = ?2
                     RETURNING name, summary, updated_at",
                    params![workspace.0, name, summary],
                    |row| {
                        Ok(SummaryUpdate {
                            name: row.get("name")?,
                            summary: row.get("summary")?,
                            updated_at: timestamp(row.get("updated_at")?),
                        })
                    },
                )
                .optional()
                .map_err(db)?
                .ok_or_else(|| Error::node_not_found(name))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetTags>,
    ) -> Result<TagsUpdate> {
        let SetTags { name, tags } = (**request).clone();
        self.pool
            .write(move |tx| {
                tx.query_row(
                    "UPDATE nodes SET tags = ?3 WHERE workspace_id = ?1 AND name = ?2
                     RETURNING name, tags",
                    params![workspace.0, name, tags_json(&tags)],
                    |row| {
                        Ok(TagsUpdate {
                            name: row.get("name")?,
                            tags: strings(row, "tags")?,
                        })
                    },
                )
                .optional()
                .map_err(db)?
                .ok_or_else(|| Error::node_not_found(name))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    "SELECT n.name, n.entity_type, n.summary, n.updated_at FROM nodes n
                     WHERE n.workspace_id = ?1
                       AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.from_node_id = n.id)
                       AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.to_node_id = n.id)
                     ORDER BY n.name",
                    [workspace.0],
                    brief,
                )
            })
            .await
    }
}

/// `facts` as node `node_id` takes them, in order: each text it does not hold as a current
/// fact with the next ordinal of its counter (to be written with `insert_observations`), and
/// those it holds, with the ordinal that holds them. An ended text may be added again: it is a
/// new fact. The caller's transaction holds SQLite's write lock, so no other writer takes the
/// same ordinals or adds the same texts meanwhile.
pub(crate) fn place<'a>(
    tx: &Transaction<'_>,
    node_id: i64,
    facts: &'a [NewFact],
) -> Result<(Vec<NewObservation<'a>>, Vec<Observation>)> {
    let mut held = tx
        .prepare_cached(
            "SELECT min(ordinal) FROM observations
             WHERE node_id = ?1 AND content = ?2
               AND (valid_to IS NULL OR valid_to > engram_now())",
        )
        .map_err(db)?;
    let mut fresh = Vec::with_capacity(facts.len());
    let mut skipped = Vec::new();
    for fact in facts {
        let ordinal: Option<i64> = held
            .query_row(params![node_id, fact.content], |row| row.get(0))
            .map_err(db)?;
        match ordinal {
            Some(ordinal) => skipped.push(Observation::new(Ordinal(ordinal), &fact.content)),
            None => fresh.push(fact),
        }
    }
    let first: i64 = tx
        .prepare_cached(
            "UPDATE nodes SET next_ordinal = next_ordinal + ?2 WHERE id = ?1
             RETURNING next_ordinal - ?2",
        )
        .map_err(db)?
        .query_row(params![node_id, fresh.len() as i64], |row| row.get(0))
        .map_err(db)?;
    let placed = (first..)
        .zip(fresh)
        .map(|(ordinal, fact)| NewObservation::now(node_id, ordinal, fact))
        .collect();
    Ok((placed, skipped))
}
