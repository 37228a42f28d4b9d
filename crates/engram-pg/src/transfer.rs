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

/// The batch's relations, each once (a repeat is present once the first is written): current
/// ones into `relations`, ended ones into `ended_relations`. Those with a missing endpoint come
/// back in `relations_missing` in input order.
async fn import_relations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    relations: &[RelationRecord],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let relations = distinct_relations(relations, outcome);
    // By position in `relations`: current ones, then ended ones.
    let (ended, current): (Vec<usize>, Vec<usize>) =
        (0..relations.len()).partition(|&i| relations[i].valid_to.is_some());
    let names = |at: &[usize], name: fn(&RelationRecord) -> &str| -> Vec<&str> {
        at.iter().map(|&i| name(relations[i])).collect()
    };
    let times = |at: &[usize], time: fn(&RelationRecord) -> Option<Timestamp>| {
        at.iter().map(|&i| time(relations[i])).collect::<Vec<_>>()
    };
    let [from, to, types]: [fn(&RelationRecord) -> &str; 3] = [
        |r| r.from.as_str(),
        |r| r.to.as_str(),
        |r| r.relation_type.as_str(),
    ];
    let mut rows = Vec::with_capacity(relations.len());
    if !current.is_empty() {
        let found = crate::relations::insert_relations(
            client,
            workspace,
            [
                &names(&current, from),
                &names(&current, to),
                &names(&current, types),
            ],
            [
                &times(&current, |r| r.created_at),
                &times(&current, RelationRecord::held_from),
            ],
        )
        .await?;
        rows.extend(current.iter().copied().zip(found));
    }
    if !ended.is_empty() {
        let statement = client
            .prepare_cached(include_str!("sql/import_ended_relations.sql"))
            .await
            .map_err(db)?;
        let found = client
            .query(
                &statement,
                &[
                    &workspace.0,
                    &names(&ended, from),
                    &names(&ended, to),
                    &names(&ended, types),
                    &times(&ended, |r| r.created_at),
                    &times(&ended, RelationRecord::held_from),
                    &times(&ended, |r| r.valid_to),
                ],
            )
            .await
            .map_err(db)?;
        rows.extend(ended.iter().copied().zip(found));
    }
    // In input order, as the missing ones are reported.
    rows.sort_unstable_by_key(|(i, _)| *i);
    for (i, row) in rows {
        let how = match (
            row.get::<_, bool>("from_missing") || row.get("to_missing"),
            row.get("created"),
        ) {
            (true, _) => RelationImported::Missing,
            (false, true) => RelationImported::Created,
            (false, false) => RelationImported::Existing,
        };
        outcome.count_relation(relations[i], how);
    }
    Ok(())
}

/// Sets the batch's aliases ([`place_aliases`]) once its nodes are written (the aliases were
/// locked first, as `set_aliases` locks them).
async fn import_aliases(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    nodes: &[NodeRecord],
    outcome: &mut ImportOutcome,
) -> Result<()> {
    let aliases: Vec<&str> = (nodes.iter())
        .flat_map(|node| node.aliases.iter().map(String::as_str))
        .collect();
    if aliases.is_empty() {
        return Ok(());
    }
    let holders = crate::merge::alias_holders(client, workspace, &aliases).await?;
    let (names, aliases): (Vec<&str>, Vec<&str>) =
        place_aliases(nodes, &holders, outcome).into_iter().unzip();
    client
        .execute(
            "INSERT INTO node_aliases (workspace_id, alias, node_id)
             SELECT $1, t.alias, n.id
             FROM unnest($2::text[], $3::text[]) AS t (name, alias)
             JOIN nodes n ON n.workspace_id = $1 AND n.name = t.name",
            &[&workspace.0, &names, &aliases],
        )
        .await
        .map_err(db)?;
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
                // The current facts (the graph now), or over time every one, with the author of
                // the event its write recorded (`get_history`'s).
                for row in tx
                    .query(
                        "SELECT o.node_id, o.ordinal, o.content, o.created_at, o.updated_at,
                                o.valid_from, o.valid_to, o.expires_at,
                                CASE WHEN $2 THEN
                                    (SELECT e.author FROM events e
                                     WHERE e.workspace_id = o.workspace_id
                                       AND e.at = o.created_at AND e.author IS NOT NULL
                                     LIMIT 1)
                                END AS author
                         FROM observations o
                         WHERE o.node_id = ANY($1)
                           AND ($2 OR o.valid_to IS NULL OR o.valid_to > now())
                         ORDER BY o.node_id, o.ordinal",
                        &[&ids, &query.over_time],
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
                            valid_from: Some(row.get("valid_from")),
                            valid_to: row.get("valid_to"),
                            expires_at: row.get("expires_at"),
                            author: row.get("author"),
                        });
                }
            }
            let mut aliases: HashMap<i64, Vec<String>> = HashMap::new();
            if query.over_time {
                for row in tx
                    .query(
                        "SELECT node_id, alias FROM node_aliases WHERE node_id = ANY($1)
                         ORDER BY alias COLLATE \"C\"",
                        &[&ids],
                    )
                    .await
                    .map_err(db)?
                {
                    aliases
                        .entry(row.get("node_id"))
                        .or_default()
                        .push(row.get("alias"));
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
                        aliases: aliases.remove(&row.get("id")).unwrap_or_default(),
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
                    "SELECT f.name AS from_name, t.name AS to_name, r.relation_type, r.created_at,
                            r.valid_from, NULL::timestamptz AS valid_to
                     FROM relations r
                     JOIN nodes f ON f.id = r.from_node_id
                     JOIN nodes t ON t.id = r.to_node_id
                     WHERE r.from_node_id = ANY($1)
                     UNION ALL
                     SELECT f.name, t.name, r.relation_type, r.created_at, r.valid_from,
                            r.valid_to
                     FROM ended_relations r
                     JOIN nodes f ON f.id = r.from_node_id
                     JOIN nodes t ON t.id = r.to_node_id
                     WHERE $2 AND r.from_node_id = ANY($1)",
                    &[&ids, &query.over_time],
                )
                .await
                .map_err(db)?
                .iter()
                .map(|row| RelationRecord {
                    from: row.get("from_name"),
                    to: row.get("to_name"),
                    relation_type: row.get("relation_type"),
                    created_at: Some(row.get("created_at")),
                    valid_from: Some(row.get("valid_from")),
                    valid_to: row.get("valid_to"),
                })
                .collect();
            relations.sort();
            let (mut total_nodes, mut total_relations) = (None, None);
            if query.totals {
                // The whole workspace's totals are the counts get_stats keeps, so a page costs
                // the same however large the store; one type's are counted.
                let (nodes, relations) = match &query.entity_type {
                    None => {
                        let stats = crate::stats::get_stats(&tx, workspace).await?;
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
            let aliases: Vec<&str> = (nodes.iter())
                .flat_map(|node| node.aliases.iter().map(String::as_str))
                .collect();
            crate::name_locks::lock_names(&tx, workspace, &aliases).await?;
            let now: Timestamp = (tx.query_one("SELECT now()", &[]).await)
                .map_err(db)?
                .get(0);
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
            type Fact = (i64, String, Option<Timestamp>);
            let mut present: HashMap<i64, Vec<Fact>> = HashMap::new();
            for row in tx
                .query(
                    "SELECT node_id, ordinal, content, valid_to FROM observations
                     WHERE node_id = ANY($1)",
                    &[&id_list],
                )
                .await
                .map_err(db)?
            {
                present.entry(row.get("node_id")).or_default().push((
                    row.get("ordinal"),
                    row.get("content"),
                    row.get("valid_to"),
                ));
            }
            let mut outcome = ImportOutcome::default();
            let (mut node_ids, mut ordinals, mut contents, mut created_ats, mut updated_ats) =
                (vec![], vec![], vec![], vec![], vec![]);
            let (mut valid_froms, mut valid_tos, mut expiries) = (vec![], vec![], vec![]);
            // `(node id, recorded time, author)` of each imported fact that names its author.
            let mut authors: Vec<(i64, Timestamp, &str)> = Vec::new();
            // Per node, the ordinal counter to set and the recorded time to restore.
            let mut finish: HashMap<i64, (Option<i64>, Option<Timestamp>)> = HashMap::new();
            for node in nodes {
                let Some(&(id, next)) = ids.get(&node.name) else {
                    return Err(Error::Conflict(format!(
                        "node {} was deleted during the import",
                        node.name
                    )));
                };
                let present = present.remove(&id).unwrap_or_default();
                let (placed, new_next) = place_observations(node, &present, next, now);
                let facts = node.observations.len();
                outcome.count_node(created.contains(&node.name), facts, placed.len());
                for (i, ordinal) in placed {
                    let observation = &node.observations[i];
                    node_ids.push(id);
                    ordinals.push(ordinal);
                    contents.push(observation.content.as_str());
                    created_ats.push(observation.created_at);
                    updated_ats.push(observation.updated_at.or(observation.created_at));
                    valid_froms.push(observation.held_from());
                    valid_tos.push(observation.ends());
                    expiries.push(observation.expires_at);
                    if let (Some(at), Some(author)) = (observation.created_at, &observation.author)
                    {
                        authors.push((id, at, author));
                    }
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
                                               updated_at, valid_from, valid_to, expires_at)
                     SELECT node_id, $1, ordinal, content, coalesce(created_at, now()),
                            coalesce(updated_at, now()), coalesce(valid_from, now()), valid_to,
                            expires_at
                     FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[],
                                 $6::timestamptz[], $7::timestamptz[], $8::timestamptz[],
                                 $9::timestamptz[])
                          AS t (node_id, ordinal, content, created_at, updated_at, valid_from,
                                valid_to, expires_at)",
                    &[
                        &workspace.0,
                        &node_ids,
                        &ordinals,
                        &contents,
                        &created_ats,
                        &updated_ats,
                        &valid_froms,
                        &valid_tos,
                        &expiries,
                    ],
                )
                .await
                .map_err(db)?;
            }
            if !authors.is_empty() {
                // Who wrote the facts that say so: an event of no count (the import's own events
                // count the writes) at each fact's recorded time, where `get_history` finds it.
                authors.sort_unstable();
                authors.dedup();
                let ids: Vec<i64> = authors.iter().map(|(id, _, _)| *id).collect();
                let times: Vec<Timestamp> = authors.iter().map(|(_, at, _)| *at).collect();
                let names: Vec<&str> = authors.iter().map(|(_, _, author)| *author).collect();
                tx.execute(
                    "INSERT INTO events (workspace_id, node_id, node_name, subject, operation,
                                         at, count, author)
                     SELECT $1, n.id, n.name, 'observation', 'create', t.at, 0, t.author
                     FROM unnest($2::bigint[], $3::timestamptz[], $4::text[])
                          AS t (node_id, at, author)
                     JOIN nodes n ON n.id = t.node_id",
                    &[&workspace.0, &ids, &times, &names],
                )
                .await
                .map_err(db)?;
            }
            import_aliases(&tx, workspace, nodes, &mut outcome).await?;
            import_relations(&tx, workspace, relations, &mut outcome).await?;
            // After the relations (their triggers move `updated_at`): the counters, then a created
            // node's recorded `updated_at` where it differs (an explicit value the touch trigger
            // keeps, which the same value again is not: a node no write touched keeps its own).
            if !finish.is_empty() {
                let ids: Vec<i64> = finish.keys().copied().collect();
                let counters: Vec<Option<i64>> = ids.iter().map(|id| finish[id].0).collect();
                let times: Vec<Option<Timestamp>> = ids.iter().map(|id| finish[id].1).collect();
                tx.execute(
                    "UPDATE nodes n SET next_ordinal = t.next_ordinal
                     FROM unnest($1::bigint[], $2::bigint[]) AS t (id, next_ordinal)
                     WHERE n.id = t.id AND t.next_ordinal IS NOT NULL",
                    &[&ids, &counters],
                )
                .await
                .map_err(db)?;
                tx.execute(
                    "UPDATE nodes n SET updated_at = t.updated_at
                     FROM unnest($1::bigint[], $2::timestamptz[]) AS t (id, updated_at)
                     WHERE n.id = t.id AND t.updated_at IS NOT NULL
                       AND n.updated_at IS DISTINCT FROM t.updated_at",
                    &[&ids, &times],
                )
                .await
                .map_err(db)?;
            }
            crate::statistics::refresh(&tx).await?;
            Ok(outcome)
        })
    }
}
