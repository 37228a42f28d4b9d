//! Whole-graph reads and writes: a page of nodes for `read_graph` and `engram export`, and
//! one `engram import` batch.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::transfer::*;
use engram_domain::*;
use serde::Serialize;
use tokio_postgres::types::Json;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[derive(Debug, Serialize)]
struct NodeRow<'a> {
    name: &'a str,
    entity_type: &'a str,
    summary: Option<&'a str>,
    summary_updated_at: Option<Timestamp>,
    tags: &'a [String],
    created_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
}

async fn import_relations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    relations: &[RelationRecord],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let mut seen = HashSet::new();
    let all = relations.len();
    let relations: Vec<&RelationRecord> = relations
        .iter()
        .filter(|r| seen.insert((&r.from, &r.to, &r.relation_type)))
        .collect();
    // A relation repeated within the batch is present once the first is written.
    outcome.relations_existing += (all - relations.len()) as u64;
    if relations.is_empty() {
        return Ok(());
    }
    let from: Vec<&str> = relations.iter().map(|r| r.from.as_str()).collect();
    let to: Vec<&str> = relations.iter().map(|r| r.to.as_str()).collect();
    let types: Vec<&str> = relations.iter().map(|r| r.relation_type.as_str()).collect();
    let created_at: Vec<Option<Timestamp>> = relations.iter().map(|r| r.created_at).collect();
    let valid_from = vec![None; created_at.len()];
    let rows = crate::relations::insert_relations(
        client,
        workspace,
        [&from, &to, &types],
        [&created_at, &valid_from],
    )
    .await?;
    for (relation, row) in relations.iter().zip(&rows) {
        if row.get::<_, bool>("from_missing") || row.get::<_, bool>("to_missing") {
            outcome.relations_missing.push((*relation).clone());
        } else if row.get("created") {
            outcome.relations_created += 1;
        } else {
            outcome.relations_existing += 1;
        }
    }
    Ok(())
}

#[async_trait]
impl TransferStore for PgStore {
    #[instrument(skip_all, fields(limit = query.limit))]
    async fn graph_page(
        &self,
        workspace: WorkspaceId,
        query: &GraphPageQuery,
    ) -> Result<GraphPage> {
        read!(self, |tx| async {
            let node_rows = tx
                .query(
                    r#"SELECT n.id, n.name, n.entity_type, n.summary, n.summary_updated_at, n.tags,
                              n.next_ordinal, n.created_at, n.updated_at,
                              (SELECT count(*) FROM observations o
                               WHERE o.node_id = n.id
                                 AND (o.valid_to IS NULL OR o.valid_to > now()))
                                  AS observations
                       FROM nodes n
                       WHERE n.workspace_id = $1
                         AND ($2::text IS NULL OR n.name COLLATE "C" > $2::text COLLATE "C")
                         AND ($3::text IS NULL OR n.entity_type = $3)
                       ORDER BY n.name COLLATE "C"
                       LIMIT $4"#,
                    &[
                        &workspace.0,
                        &query.after,
                        &query.entity_type,
                        &i64::from(query.limit),
                    ],
                )
                .await
                .map_err(db)?;
            let ids: Vec<i64> = node_rows.iter().map(|row| row.get("id")).collect();
            let mut observations: HashMap<i64, Vec<ObservationRecord>> = HashMap::new();
            if query.observations {
                for row in tx
                    .query(
                        "SELECT node_id, ordinal, content, created_at, updated_at FROM observations o
                         WHERE node_id = ANY($1) AND (o.valid_to IS NULL OR o.valid_to > now())
                         ORDER BY node_id, ordinal",
                        &[&ids],
                    )
                    .await
                    .map_err(db)?
                {
                    observations
                        .entry(row.get("node_id"))
                        .or_default()
                        .push(ObservationRecord {
                            ordinal: Some(Ordinal(row.get("ordinal"))),
                            content: row.get("content"),
                            created_at: Some(row.get("created_at")),
                            updated_at: Some(row.get("updated_at")),
                        });
                }
            }
            let nodes = node_rows
                .iter()
                .map(|row| {
                    let node = NodeRecord {
                        name: row.get("name"),
                        entity_type: row.get("entity_type"),
                        summary: row.get("summary"),
                        summary_updated_at: row.get("summary_updated_at"),
                        tags: row.get("tags"),
                        next_ordinal: Some(row.get("next_ordinal")),
                        created_at: Some(row.get("created_at")),
                        updated_at: Some(row.get("updated_at")),
                        observations: observations.remove(&row.get("id")).unwrap_or_default(),
                    };
                    (node, row.get::<_, i64>("observations") as u64)
                })
                .collect();
            let mut relations: Vec<RelationRecord> = tx
                .query(
                    "SELECT f.name AS from_name, t.name AS to_name, r.relation_type, r.created_at
                     FROM relations r
                     JOIN nodes f ON f.id = r.from_node_id
                     JOIN nodes t ON t.id = r.to_node_id
                     WHERE r.from_node_id = ANY($1)",
                    &[&ids],
                )
                .await
                .map_err(db)?
                .iter()
                .map(|row| RelationRecord {
                    from: row.get("from_name"),
                    to: row.get("to_name"),
                    relation_type: row.get("relation_type"),
                    created_at: Some(row.get("created_at")),
                })
                .collect();
            relations.sort();
            let (mut total_nodes, mut total_relations) = (None, None);
            if query.totals {
                // The whole workspace's totals are the counts get_stats keeps, so a page costs
                // the same however large the store; one type's are counted.
                let (nodes, relations) = match &query.entity_type {
                    None => {
                        let stats = crate::nodes::get_stats(&tx, workspace).await?;
                        (stats.node_count, stats.relation_count)
                    }
                    Some(entity_type) => {
                        let row = tx
                            .query_one(
                                "SELECT (SELECT count(*) FROM nodes
                                         WHERE workspace_id = $1 AND entity_type = $2),
                                        (SELECT count(*) FROM relations r
                                         JOIN nodes f ON f.id = r.from_node_id
                                         WHERE r.workspace_id = $1 AND f.entity_type = $2)",
                                &[&workspace.0, entity_type],
                            )
                            .await
                            .map_err(db)?;
                        (row.get(0), row.get(1))
                    }
                };
                total_nodes = Some(nodes as u64);
                total_relations = Some(relations as u64);
            }
            Ok(GraphPage {
                nodes,
                relations,
                total_nodes,
                total_relations,
            })
        })
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
        let (nodes, relations) = (&request.nodes[..], &request.relations[..]);
        write!(self, |tx| async {
            let rows: Vec<NodeRow<'_>> = nodes
                .iter()
                .map(|n| NodeRow {
                    name: &n.name,
                    entity_type: &n.entity_type,
                    summary: n.summary.as_deref(),
                    summary_updated_at: n.summary_updated_at,
                    tags: &n.tags,
                    created_at: n.created_at,
                    updated_at: n.updated_at,
                })
                .collect();
            let created: HashSet<String> = tx
                .query(
                    "INSERT INTO nodes (workspace_id, name, entity_type, summary,
                                        summary_updated_at, tags, created_at, updated_at)
                     SELECT $1, r.name, r.entity_type, r.summary,
                            CASE WHEN r.summary IS NOT NULL
                                 THEN coalesce(r.summary_updated_at, now()) END,
                            coalesce(r.tags, '{}'), coalesce(r.created_at, now()),
                            coalesce(r.updated_at, now())
                     FROM jsonb_to_recordset($2::jsonb) AS r (name text, entity_type text,
                          summary text, summary_updated_at timestamptz, tags text[],
                          created_at timestamptz, updated_at timestamptz)
                     ORDER BY r.name
                     ON CONFLICT (workspace_id, name) DO NOTHING
                     RETURNING name",
                    &[&workspace.0, &Json(&rows)],
                )
                .await
                .map_err(db)?
                .iter()
                .map(|row| row.get(0))
                .collect();
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            // Locked in id order, as add_observations does, so concurrent writers queue, not
            // deadlock.
            let mut ids: HashMap<String, (i64, i64)> = HashMap::new();
            for row in tx
                .query(
                    "SELECT id, name, next_ordinal FROM nodes
                     WHERE workspace_id = $1 AND name = ANY($2)
                     ORDER BY id FOR UPDATE",
                    &[&workspace.0, &names],
                )
                .await
                .map_err(db)?
            {
                ids.insert(row.get("name"), (row.get("id"), row.get("next_ordinal")));
            }
            // Only nodes that existed can already hold some of these texts.
            let id_list: Vec<i64> = (ids.iter())
                .filter(|(name, _)| !created.contains(*name))
                .map(|(_, (id, _))| *id)
                .collect();
            let mut present: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
            for row in tx
                .query(
                    "SELECT node_id, ordinal, content FROM observations WHERE node_id = ANY($1)",
                    &[&id_list],
                )
                .await
                .map_err(db)?
            {
                present
                    .entry(row.get("node_id"))
                    .or_default()
                    .push((row.get("ordinal"), row.get("content")));
            }
            let mut outcome = ImportOutcome::default();
            let (mut node_ids, mut ordinals, mut contents, mut created_ats, mut updated_ats) =
                (vec![], vec![], vec![], vec![], vec![]);
            // Per node, the ordinal counter to set and the recorded time to restore.
            let mut finish: HashMap<i64, (Option<i64>, Option<Timestamp>)> = HashMap::new();
            for node in nodes {
                let Some(&(id, next)) = ids.get(&node.name) else {
                    return Err(Error::Conflict(format!(
                        "node {} was deleted during the import",
                        node.name
                    )));
                };
                if created.contains(&node.name) {
                    outcome.nodes_created += 1;
                } else {
                    outcome.nodes_existing += 1;
                }
                let present = present.remove(&id).unwrap_or_default();
                let (placed, new_next) = place_observations(node, &present, next);
                outcome.observations_added += placed.len() as u64;
                outcome.observations_existing += (node.observations.len() - placed.len()) as u64;
                for (i, ordinal) in placed {
                    let observation = &node.observations[i];
                    node_ids.push(id);
                    ordinals.push(ordinal);
                    contents.push(observation.content.as_str());
                    created_ats.push(observation.created_at);
                    updated_ats.push(observation.updated_at.or(observation.created_at));
                }
                let counter = (new_next != next).then_some(new_next);
                let restore = node.updated_at.filter(|_| created.contains(&node.name));
                if counter.is_some() || restore.is_some() {
                    finish.insert(id, (counter, restore));
                }
            }
            if !node_ids.is_empty() {
                tx.execute(
                    "INSERT INTO observations (node_id, workspace_id, ordinal, content, created_at,
                                               updated_at, valid_from)
                     SELECT node_id, $1, ordinal, content, coalesce(created_at, now()),
                            coalesce(updated_at, now()), coalesce(created_at, now())
                     FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[],
                                 $6::timestamptz[])
                          AS t (node_id, ordinal, content, created_at, updated_at)",
                    &[
                        &workspace.0,
                        &node_ids,
                        &ordinals,
                        &contents,
                        &created_ats,
                        &updated_ats,
                    ],
                )
                .await
                .map_err(db)?;
            }
            import_relations(&tx, workspace, relations, &mut outcome).await?;
            // After the relations (their triggers move `updated_at`): the counters, and a created
            // node's recorded `updated_at` (an explicit value the touch trigger keeps; the others
            // move to now, as any write does).
            if !finish.is_empty() {
                let ids: Vec<i64> = finish.keys().copied().collect();
                let counters: Vec<Option<i64>> = ids.iter().map(|id| finish[id].0).collect();
                let times: Vec<Option<Timestamp>> = ids.iter().map(|id| finish[id].1).collect();
                tx.execute(
                    "UPDATE nodes n SET next_ordinal = coalesce(t.next_ordinal, n.next_ordinal),
                                        updated_at = coalesce(t.updated_at, n.updated_at)
                     FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[])
                          AS t (id, next_ordinal, updated_at)
                     WHERE n.id = t.id",
                    &[&ids, &counters, &times],
                )
                .await
                .map_err(db)?;
            }
            crate::statistics::refresh(&tx).await?;
            Ok(outcome)
        })
    }
}
