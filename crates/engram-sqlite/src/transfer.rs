//! Whole-graph reads and writes: a page of nodes for `read_graph` and `engram export`, and
//! one `engram import` batch.

use async_trait::async_trait;
use engram_domain::transfer::*;
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::nodes::{NewObservation, insert_observations};
use crate::sql::{query, strings, tags_json};
use crate::{micros, timestamp};

fn import_relations(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    relations: &[RelationRecord],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let mut node = tx
        .prepare_cached("SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2")
        .map_err(db)?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type,
                                    created_at, valid_from)
             VALUES (?1, ?2, ?3, ?4, coalesce(?5, engram_now()), coalesce(?6, engram_now()))
             ON CONFLICT (workspace_id, from_node_id, to_node_id, relation_type) DO NOTHING",
        )
        .map_err(db)?;
    // An ended relation is present when the node has it ended at the same time; its end was
    // recorded, as far as anyone can tell, when it took effect.
    let mut insert_ended = tx
        .prepare_cached(
            "INSERT INTO ended_relations (workspace_id, from_node_id, to_node_id, relation_type,
                                          created_at, valid_from, valid_to, recorded_at)
             SELECT ?1, ?2, ?3, ?4, coalesce(?5, ?6), ?6, ?7, ?7
             WHERE NOT EXISTS (SELECT 1 FROM ended_relations
                               WHERE from_node_id = ?2 AND to_node_id = ?3
                                 AND relation_type = ?4 AND valid_to = ?7)",
        )
        .map_err(db)?;
    for relation in distinct_relations(relations, outcome) {
        let mut id = |name: &str| -> Result<Option<i64>> {
            node.query_row(params![workspace.0, name], |row| row.get(0))
                .optional()
                .map_err(db)
        };
        let (Some(from), Some(to)) = (id(&relation.from)?, id(&relation.to)?) else {
            outcome.count_relation(relation, RelationImported::Missing);
            continue;
        };
        let (created_at, valid_from) = (
            relation.created_at.map(micros),
            relation.held_from().map(micros),
        );
        let written = match relation.valid_to {
            None => insert.execute(params![
                workspace.0,
                from,
                to,
                relation.relation_type,
                created_at,
                valid_from,
            ]),
            Some(valid_to) => insert_ended.execute(params![
                workspace.0,
                from,
                to,
                relation.relation_type,
                created_at,
                valid_from,
                micros(valid_to),
            ]),
        }
        .map_err(db)?;
        let how = match written {
            0 => RelationImported::Existing,
            _ => RelationImported::Created,
        };
        outcome.count_relation(relation, how);
    }
    Ok(())
}

/// Sets the batch's aliases ([`place_aliases`]) once its nodes are written.
fn import_aliases(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    nodes: &[NodeRecord],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let aliases = nodes.iter().flat_map(|node| &node.aliases);
    let holders = crate::merge::alias_holders(tx, workspace, aliases)?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO node_aliases (workspace_id, alias, node_id)
             SELECT ?1, ?2, id FROM nodes WHERE workspace_id = ?1 AND name = ?3",
        )
        .map_err(db)?;
    for (node, alias) in place_aliases(nodes, &holders, outcome) {
        insert
            .execute(params![workspace.0, alias, node])
            .map_err(db)?;
    }
    Ok(())
}

/// Records who wrote the imported facts that say so: an event of no count (the import's own
/// events count the writes) at each fact's recorded time, where `get_history` finds its author.
fn import_authors(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    authors: &[(i64, i64, &str)],
) -> Result<()> {
    if authors.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(authors).map_err(|e| Error::Internal(e.to_string()))?;
    tx.execute(
        "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at, count,
                             author)
         SELECT ?1, n.id, n.name, 'observation', 'create', j.value ->> 1, 0, j.value ->> 2
         FROM json_each(?2) j JOIN nodes n ON n.id = j.value ->> 0 ORDER BY j.key",
        params![workspace.0, json],
    )
    .map_err(db)?;
    // The trigger that sets the writer's author on each event (migration V12) overrode theirs.
    tx.execute(
        "UPDATE events SET author = j.value ->> 2
         FROM json_each(?1) j
         WHERE events.node_id = j.value ->> 0 AND events.at = j.value ->> 1
           AND events.count = 0 AND events.subject = 'observation'",
        [json],
    )
    .map_err(db)?;
    Ok(())
}

#[async_trait]
impl TransferStore for SqliteStore {
    #[instrument(skip_all, fields(limit = wanted.limit))]
    async fn graph_page(
        &self,
        workspace: WorkspaceId,
        wanted: &GraphPageQuery,
    ) -> Result<GraphPage> {
        let page = wanted.clone();
        self.pool
            .read(move |tx| {
                let mut nodes = query(
                    tx,
                    "SELECT n.id, n.name, n.entity_type, n.summary, n.summary_updated_at, n.tags,
                            n.next_ordinal, n.created_at, n.updated_at,
                            (SELECT count(*) FROM observations o
                             WHERE o.node_id = n.id
                               AND (o.valid_to IS NULL OR o.valid_to > engram_now())) AS observations
                     FROM nodes n
                     WHERE n.workspace_id = ?1 AND n.name > ?2
                       AND (?3 IS NULL OR n.entity_type = ?3)
                     ORDER BY n.name
                     LIMIT ?4",
                    // Every name is longer than the empty one, which starts the first page: a
                    // plain range (`?2 IS NULL OR name > ?2` made SQLite scan the names before
                    // the cursor, 18 ms for the last page at 250,000 nodes).
                    params![
                        workspace.0,
                        page.after.as_deref().unwrap_or(""),
                        page.entity_type,
                        page.limit
                    ],
                    |row| {
                        let node = NodeRecord {
                            name: row.get("name")?,
                            entity_type: row.get("entity_type")?,
                            summary: row.get("summary")?,
                            summary_updated_at: row
                                .get::<_, Option<i64>>("summary_updated_at")?
                                .map(timestamp),
                            tags: strings(row, "tags")?,
                            aliases: Vec::new(),
                            next_ordinal: Some(row.get("next_ordinal")?),
                            created_at: Some(timestamp(row.get("created_at")?)),
                            updated_at: Some(timestamp(row.get("updated_at")?)),
                            observations: Vec::new(),
                        };
                        Ok((
                            row.get::<_, i64>("id")?,
                            node,
                            row.get::<_, i64>("observations")? as u64,
                        ))
                    },
                )?;
                let mut relations = Vec::new();
                let over_time = page.over_time;
                for (id, node, _) in &mut nodes {
                    if page.observations {
                        node.observations = query(
                            tx,
                            // The current facts (the graph now), or over time every one, with
                            // the author of the event its write recorded (`get_history`'s).
                            "SELECT o.ordinal, o.content, o.created_at, o.updated_at, o.valid_from,
                                    o.valid_to, o.expires_at,
                                    CASE WHEN ?2 THEN
                                        (SELECT e.author FROM events e
                                         WHERE e.workspace_id = o.workspace_id
                                           AND e.at = o.created_at AND e.author IS NOT NULL
                                         LIMIT 1)
                                    END AS author
                             FROM observations o
                             WHERE o.node_id = ?1
                               AND (?2 OR o.valid_to IS NULL OR o.valid_to > engram_now())
                             ORDER BY o.ordinal",
                            params![*id, over_time],
                            |row| {
                                Ok(ObservationRecord {
                                    ordinal: Some(Ordinal(row.get("ordinal")?)),
                                    content: row.get("content")?,
                                    created_at: Some(timestamp(row.get("created_at")?)),
                                    updated_at: Some(timestamp(row.get("updated_at")?)),
                                    valid_from: Some(timestamp(row.get("valid_from")?)),
                                    valid_to: row.get::<_, Option<i64>>("valid_to")?.map(timestamp),
                                    expires_at: (row.get::<_, Option<i64>>("expires_at")?)
                                        .map(timestamp),
                                    author: row.get("author")?,
                                })
                            },
                        )?;
                    }
                    if over_time {
                        node.aliases = query(
                            tx,
                            "SELECT alias FROM node_aliases WHERE node_id = ?1 ORDER BY alias",
                            [*id],
                            |row| row.get(0),
                        )?;
                    }
                    relations.extend(query(
                        tx,
                        "SELECT t.name, r.relation_type, r.created_at, r.valid_from,
                                NULL AS valid_to
                         FROM relations r
                         JOIN nodes t ON t.id = r.to_node_id WHERE r.from_node_id = ?1
                         UNION ALL
                         SELECT t.name, r.relation_type, r.created_at, r.valid_from, r.valid_to
                         FROM ended_relations r
                         JOIN nodes t ON t.id = r.to_node_id WHERE ?2 AND r.from_node_id = ?1",
                        params![*id, over_time],
                        |row| {
                            Ok(RelationRecord {
                                from: node.name.clone(),
                                to: row.get(0)?,
                                relation_type: row.get(1)?,
                                created_at: Some(timestamp(row.get(2)?)),
                                valid_from: Some(timestamp(row.get(3)?)),
                                valid_to: row.get::<_, Option<i64>>(4)?.map(timestamp),
                            })
                        },
                    )?);
                }
                relations.sort();
                let totals: Option<(i64, i64)> = match (page.totals, &page.entity_type) {
                    (false, _) => None,
                    // The whole workspace's totals are the counts get_stats keeps (migration V7).
                    (true, None) => {
                        let stats = crate::stats::get_stats(tx, workspace)?;
                        Some((stats.node_count, stats.relation_count))
                    }
                    (true, Some(entity_type)) => Some(
                        tx.query_row(
                            "SELECT (SELECT count(*) FROM nodes WHERE workspace_id = ?1 AND entity_type = ?2),
                                    (SELECT count(*) FROM relations r JOIN nodes f ON f.id = r.from_node_id
                                     WHERE r.workspace_id = ?1 AND f.entity_type = ?2)",
                            params![workspace.0, entity_type],
                            |row| Ok((row.get(0)?, row.get(1)?)),
                        )
                        .map_err(db)?,
                    ),
                };
                Ok(GraphPage {
                    nodes: nodes
                        .into_iter()
                        .map(|(_, node, count)| (node, count))
                        .collect(),
                    relations,
                    total_nodes: totals.map(|(nodes, _)| nodes as u64),
                    total_relations: totals.map(|(_, relations)| relations as u64),
                })
            })
            .await
    }

    #[instrument(
        skip_all,
        fields(nodes = request.nodes.len(), relations = request.relations.len())
    )]
    async fn import(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ImportBatch>,
    ) -> Result<ImportOutcome> {
        let ImportBatch { nodes, relations } = (**request).clone();
        self.pool
            .write(move |tx| {
                let mut insert_node = tx
                    .prepare_cached(
                        "INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at,
                                            tags, next_ordinal, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 IS NOT NULL THEN coalesce(?5, engram_now()) END,
                                 ?6, 1, coalesce(?7, engram_now()), coalesce(?8, engram_now()))
                         ON CONFLICT (workspace_id, name) DO NOTHING
                         RETURNING id",
                    )
                    .map_err(db)?;
                let mut existing = tx
                    .prepare_cached(
                        "SELECT id, next_ordinal FROM nodes WHERE workspace_id = ?1 AND name = ?2",
                    )
                    .map_err(db)?;
                let mut outcome = ImportOutcome::default();
                let now = timestamp(
                    tx.query_row("SELECT engram_now()", [], |row| row.get(0))
                        .map_err(db)?,
                );
                let mut restore = Vec::new();
                // `(node id, recorded time, author)` of each imported fact that names its author.
                let mut authors: Vec<(i64, i64, &str)> = Vec::new();
                // Written together (see `insert_observations`), before a node that existed is
                // read.
                let mut rows: Vec<NewObservation<'_>> = Vec::new();
                for node in &nodes {
                    let inserted: Option<i64> = insert_node
                        .query_row(
                            params![
                                workspace.0,
                                node.name,
                                node.entity_type,
                                node.summary,
                                node.summary_updated_at.map(micros),
                                tags_json(&node.tags),
                                node.created_at.map(micros),
                                node.updated_at.map(micros),
                            ],
                            |row| row.get(0),
                        )
                        .optional()
                        .map_err(db)?;
                    let (id, next) = match inserted {
                        Some(id) => {
                            if let Some(updated_at) = node.updated_at {
                                restore.push((id, micros(updated_at)));
                            }
                            (id, 1)
                        }
                        None => {
                            insert_observations(tx, workspace, &std::mem::take(&mut rows))?;
                            existing
                                .query_row(params![workspace.0, node.name], |row| {
                                    Ok((row.get(0)?, row.get(1)?))
                                })
                                .map_err(db)?
                        }
                    };
                    // Only a node that existed can already hold some of these facts.
                    let present = match inserted {
                        Some(_) => Vec::new(),
                        None => query(
                            tx,
                            "SELECT ordinal, content, valid_to FROM observations WHERE node_id = ?1",
                            [id],
                            |row| {
                                let end: Option<i64> = row.get(2)?;
                                Ok((row.get(0)?, row.get(1)?, end.map(timestamp)))
                            },
                        )?,
                    };
                    let (placed, new_next) = place_observations(node, &present, next, now);
                    let facts = node.observations.len();
                    outcome.count_node(inserted.is_some(), facts, placed.len());
                    rows.extend(placed.into_iter().map(|(i, ordinal)| {
                        let observation = &node.observations[i];
                        if let (Some(at), Some(author)) =
                            (observation.created_at, &observation.author)
                        {
                            authors.push((id, micros(at), author));
                        }
                        NewObservation {
                            node_id: id,
                            ordinal,
                            content: &observation.content,
                            created_at: observation.created_at.map(micros),
                            updated_at: observation.updated_at.map(micros),
                            valid_from: observation.held_from().map(micros),
                            valid_to: observation.ends().map(micros),
                            expires_at: observation.expires_at.map(micros),
                        }
                    }));
                    if new_next != next {
                        tx.execute(
                            "UPDATE nodes SET next_ordinal = ?2 WHERE id = ?1",
                            params![id, new_next],
                        )
                        .map_err(db)?;
                    }
                }
                insert_observations(tx, workspace, &rows)?;
                authors.sort_unstable();
                authors.dedup();
                import_authors(tx, workspace, &authors)?;
                import_aliases(tx, workspace, &nodes, &mut outcome)?;
                import_relations(tx, workspace, &relations, &mut outcome)?;
                // Writing observations and relations moved `updated_at`; a created node gets its
                // own.
                for (id, updated_at) in restore {
                    tx.execute(
                        "UPDATE nodes SET updated_at = ?2 WHERE id = ?1",
                        params![id, updated_at],
                    )
                    .map_err(db)?;
                }
                Ok(outcome)
            })
            .await
    }
}
