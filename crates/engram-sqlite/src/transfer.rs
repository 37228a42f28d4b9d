//! Whole-graph reads and writes: a page of nodes for `read_graph` and `engram export`, and
//! one `engram import` batch.

use std::collections::HashSet;

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
             VALUES (?1, ?2, ?3, ?4, coalesce(?5, engram_now()), coalesce(?5, engram_now()))
             ON CONFLICT (workspace_id, from_node_id, to_node_id, relation_type) DO NOTHING",
        )
        .map_err(db)?;
    let mut seen = HashSet::new();
    for relation in relations {
        if !seen.insert((&relation.from, &relation.to, &relation.relation_type)) {
            // Present once the first of the batch is written.
            outcome.relations_existing += 1;
            continue;
        }
        let mut id = |name: &str| -> Result<Option<i64>> {
            node.query_row(params![workspace.0, name], |row| row.get(0))
                .optional()
                .map_err(db)
        };
        let (Some(from), Some(to)) = (id(&relation.from)?, id(&relation.to)?) else {
            outcome.relations_missing.push(relation.clone());
            continue;
        };
        let written = insert
            .execute(params![
                workspace.0,
                from,
                to,
                relation.relation_type,
                relation.created_at.map(micros),
            ])
            .map_err(db)?;
        if written > 0 {
            outcome.relations_created += 1;
        } else {
            outcome.relations_existing += 1;
        }
    }
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
                for (id, node, _) in &mut nodes {
                    if page.observations {
                        node.observations = query(
                            tx,
                            // The current facts: a page (and an export) is the graph now.
                            "SELECT ordinal, content, created_at, updated_at FROM observations
                             WHERE node_id = ?1 AND (valid_to IS NULL OR valid_to > engram_now())
                             ORDER BY ordinal",
                            [*id],
                            |row| {
                                Ok(ObservationRecord {
                                    ordinal: Some(Ordinal(row.get(0)?)),
                                    content: row.get(1)?,
                                    created_at: Some(timestamp(row.get(2)?)),
                                    updated_at: Some(timestamp(row.get(3)?)),
                                })
                            },
                        )?;
                    }
                    relations.extend(query(
                        tx,
                        "SELECT t.name, r.relation_type, r.created_at FROM relations r
                         JOIN nodes t ON t.id = r.to_node_id WHERE r.from_node_id = ?1",
                        [*id],
                        |row| {
                            Ok(RelationRecord {
                                from: node.name.clone(),
                                to: row.get(0)?,
                                relation_type: row.get(1)?,
                                created_at: Some(timestamp(row.get(2)?)),
                            })
                        },
                    )?);
                }
                relations.sort();
                let totals: Option<(i64, i64)> = match (page.totals, &page.entity_type) {
                    (false, _) => None,
                    // The whole workspace's totals are the counts get_stats keeps (migration V7).
                    (true, None) => {
                        let stats = crate::nodes::get_stats(tx, workspace)?;
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
                let mut restore = Vec::new();
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
                            outcome.nodes_created += 1;
                            if let Some(updated_at) = node.updated_at {
                                restore.push((id, micros(updated_at)));
                            }
                            (id, 1)
                        }
                        None => {
                            outcome.nodes_existing += 1;
                            insert_observations(tx, workspace, &std::mem::take(&mut rows))?;
                            existing
                                .query_row(params![workspace.0, node.name], |row| {
                                    Ok((row.get(0)?, row.get(1)?))
                                })
                                .map_err(db)?
                        }
                    };
                    // Only a node that existed can already hold some of these texts. As with
                    // `add_observations`, a text is held while it is a current fact; an ended
                    // fact keeps its ordinal taken under the empty text, which no fact has.
                    let present = match inserted {
                        Some(_) => Vec::new(),
                        None => query(
                            tx,
                            "SELECT ordinal,
                                    CASE WHEN valid_to IS NULL OR valid_to > engram_now()
                                         THEN content ELSE '' END
                             FROM observations WHERE node_id = ?1",
                            [id],
                            |row| Ok((row.get(0)?, row.get(1)?)),
                        )?,
                    };
                    let (placed, new_next) = place_observations(node, &present, next);
                    outcome.observations_added += placed.len() as u64;
                    outcome.observations_existing +=
                        (node.observations.len() - placed.len()) as u64;
                    rows.extend(placed.into_iter().map(|(i, ordinal)| {
                        let observation = &node.observations[i];
                        // A recorded fact has held since it was written.
                        let created_at = observation.created_at.map(micros);
                        NewObservation {
                            node_id: id,
                            ordinal,
                            content: &observation.content,
                            created_at,
                            updated_at: observation.updated_at.map(micros),
                            valid_from: created_at,
                            valid_to: None,
                            expires_at: None,
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
