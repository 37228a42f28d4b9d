//! Node-level tools: create, delete, open, list, summary, tags, orphans, pending
//! consolidation, stats and event counts.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use serde::Serialize;
use tokio_postgres::Row;
use tokio_postgres::types::Json;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[derive(Debug, Serialize)]
struct EntityInput<'a> {
    name: &'a str,
    entity_type: &'a str,
    summary: Option<&'a str>,
    tags: &'a [String],
    observations: &'a [NewFact],
}

/// The relations touching the nodes `ids` as `endpoints` says, sorted.
pub(crate) async fn relations_among(
    client: &impl GenericClient,
    ids: &[i64],
    endpoints: Endpoints,
) -> Result<Vec<Relation>> {
    let joined = endpoints.sql_operator();
    // Prepared once per connection: every node read runs it.
    let statement = client
        .prepare_cached(&format!(
            "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
             FROM relations r
             JOIN nodes f ON f.id = r.from_node_id
             JOIN nodes t ON t.id = r.to_node_id
             WHERE r.from_node_id = ANY($1) {joined} r.to_node_id = ANY($1)
             ORDER BY 1, 2, 3"
        ))
        .await
        .map_err(db)?;
    let rows = client.query(&statement, &[&ids]).await.map_err(db)?;
    Ok(rows.iter().map(relation).collect())
}

/// The facts of the nodes `ids` that `time` sees, per node in ordinal order, each with its
/// `valid_from`: those current now (with `valid_to` when they will expire), all of them with
/// their periods, or those that held at a time with their periods and each text as it read
/// then (the earliest version replaced after that time, else today's text).
pub(crate) async fn facts_of(
    client: &impl GenericClient,
    ids: &[i64],
    time: ReadTime,
) -> Result<HashMap<i64, Vec<Observation>>> {
    let rows = match time {
        // Prepared once per connection: every node read runs it.
        ReadTime::Now => {
            let statement = client
                .prepare_cached(
                    "SELECT node_id, ordinal, content, valid_from, valid_to
                         FROM observations
                         WHERE node_id = ANY($1) AND (valid_to IS NULL OR valid_to > now())
                         ORDER BY node_id, ordinal",
                )
                .await
                .map_err(db)?;
            client.query(&statement, &[&ids]).await
        }
        ReadTime::Ever => {
            client
                .query(
                    "SELECT node_id, ordinal, content, valid_from, valid_to FROM observations
                     WHERE node_id = ANY($1) ORDER BY node_id, ordinal",
                    &[&ids],
                )
                .await
        }
        ReadTime::At(at) => {
            client
                .query(
                    "SELECT o.node_id, o.ordinal, o.valid_from, o.valid_to,
                            coalesce((SELECT v.content FROM observation_versions v
                                      WHERE v.observation_id = o.id AND v.replaced_at > $2
                                      ORDER BY v.replaced_at LIMIT 1), o.content) AS content
                     FROM observations o
                     WHERE o.node_id = ANY($1) AND o.valid_from <= $2
                       AND (o.valid_to IS NULL OR o.valid_to > $2)
                     ORDER BY o.node_id, o.ordinal",
                    &[&ids, &at],
                )
                .await
        }
    }
    .map_err(db)?;
    let mut facts: HashMap<i64, Vec<Observation>> = HashMap::new();
    for row in &rows {
        facts
            .entry(row.get("node_id"))
            .or_default()
            .push(Observation {
                ordinal: Ordinal(row.get("ordinal")),
                content: row.get("content"),
                valid_from: row.get("valid_from"),
                valid_to: row.get("valid_to"),
            });
    }
    Ok(facts)
}

/// The relations touching the nodes `ids` as `endpoints` says that `time` sees, sorted: those
/// current now ([`relations_among`]), all of them with their periods (ended ones from
/// `ended_relations`), or those that held at a time with their periods.
pub(crate) async fn relations_at(
    client: &impl GenericClient,
    ids: &[i64],
    endpoints: Endpoints,
    time: ReadTime,
) -> Result<Vec<Relation>> {
    let at = match time {
        ReadTime::Now => return relations_among(client, ids, endpoints).await,
        ReadTime::Ever => None,
        ReadTime::At(at) => Some(at),
    };
    let joined = endpoints.sql_operator();
    let rows = client
        .query(
            &format!(
                "SELECT f.name AS from_name, t.name AS to_name, r.relation_type, r.valid_from,
                        r.valid_to
                 FROM (SELECT from_node_id, to_node_id, relation_type, valid_from,
                              NULL::timestamptz AS valid_to
                       FROM relations
                       UNION ALL
                       SELECT from_node_id, to_node_id, relation_type, valid_from, valid_to
                       FROM ended_relations) r
                 JOIN nodes f ON f.id = r.from_node_id
                 JOIN nodes t ON t.id = r.to_node_id
                 WHERE (r.from_node_id = ANY($1) {joined} r.to_node_id = ANY($1))
                   AND ($2::timestamptz IS NULL
                        OR (r.valid_from <= $2 AND (r.valid_to IS NULL OR r.valid_to > $2)))
                 ORDER BY 1, 2, 3, 4"
            ),
            &[&ids, &at],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| Relation {
            valid_from: row.get("valid_from"),
            valid_to: row.get("valid_to"),
            ..relation(row)
        })
        .collect())
}

/// A `{from, to, relation_type}` from a row with `from_name`, `to_name`, `relation_type`.
pub(crate) fn relation(row: &Row) -> Relation {
    Relation::new(
        row.get::<_, String>("from_name"),
        row.get::<_, String>("to_name"),
        row.get::<_, String>("relation_type"),
    )
}

fn brief(row: &Row) -> NodeBrief {
    NodeBrief {
        name: row.get("name"),
        entity_type: row.get("entity_type"),
        summary: row.get("summary"),
        updated_at: row.get("updated_at"),
    }
}

pub(crate) async fn get_stats(
    client: &impl GenericClient,
    workspace: WorkspaceId,
) -> Result<Stats> {
    let row = client
        .query_opt(
            // The kept counts (migration V6): a few delta rows per workspace, folded now and
            // then by `statistics::fold_counts`.
            // The ended and expiring facts from the partial index on `valid_to` (V12).
            "SELECT w.name,
                    coalesce(sum(c.nodes), 0)::bigint AS node_count,
                    coalesce(sum(c.observations), 0)::bigint AS observation_count,
                    coalesce(sum(c.relations), 0)::bigint AS relation_count,
                    e.ended, e.expiring
             FROM workspaces w LEFT JOIN workspace_counts c ON c.workspace_id = w.id
             CROSS JOIN LATERAL (
                 SELECT count(*) FILTER (WHERE o.valid_to <= now()) AS ended,
                        count(*) FILTER (WHERE o.valid_to > now()) AS expiring
                 FROM observations o
                 WHERE o.workspace_id = w.id AND o.valid_to IS NOT NULL
             ) e
             WHERE w.id = $1 GROUP BY w.id, e.ended, e.expiring",
            &[&workspace.0],
        )
        .await
        .map_err(db)?
        .ok_or_else(|| Error::workspace_not_found(format!("#{}", workspace.0)))?;
    Ok(Stats {
        node_count: row.get("node_count"),
        observation_count: row.get("observation_count"),
        relation_count: row.get("relation_count"),
        ended_observations: row.get("ended"),
        expiring_observations: row.get("expiring"),
        // No embedding pipeline writes vectors yet, so none is current.
        embedding_coverage: 0.0,
        rejected_texts: 0,
        embedding_model: None,
        workspace: row.get("name"),
    })
}

#[async_trait]
impl NodeStore for PgStore {
    #[instrument(skip_all, fields(count = request.entities.len()))]
    async fn create_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateEntities>,
    ) -> Result<Vec<CreatedNode>> {
        let created = write!(self, |tx| async {
            let names: Vec<&str> = request.entities.iter().map(|e| e.name.as_str()).collect();
            crate::name_locks::lock_names(&tx, workspace, &names).await?;
            let input: Vec<EntityInput<'_>> = request
                .entities
                .iter()
                .map(|e| EntityInput {
                    name: &e.name,
                    entity_type: &e.entity_type,
                    summary: e.summary.as_deref(),
                    tags: &e.tags,
                    observations: &e.observations,
                })
                .collect();
            let statement = tx
                .prepare_cached(include_str!("sql/create_entities.sql"))
                .await
                .map_err(db)?;
            let rows = tx
                .query(&statement, &[&workspace.0, &Json(&input)])
                .await
                .map_err(db)?;
            let existing: Vec<&str> = rows
                .iter()
                .filter(|row| row.get::<_, Option<Timestamp>>("created_at").is_none())
                .map(|row| row.get("name"))
                .collect();
            // By the name asked: the node's own name (another for an alias), type and creation.
            let mut existing_rows: HashMap<String, (String, String, Timestamp)> = HashMap::new();
            if !existing.is_empty() {
                for row in tx
                    .query(
                        "SELECT name AS asked, name, entity_type, created_at FROM nodes
                         WHERE workspace_id = $1 AND name = ANY($2)
                         UNION ALL
                         SELECT a.alias, n.name, n.entity_type, n.created_at
                         FROM node_aliases a JOIN nodes n ON n.id = a.node_id
                         WHERE a.workspace_id = $1 AND a.alias = ANY($2)",
                        &[&workspace.0, &existing],
                    )
                    .await
                    .map_err(db)?
                {
                    existing_rows.insert(
                        row.get("asked"),
                        (
                            row.get("name"),
                            row.get("entity_type"),
                            row.get("created_at"),
                        ),
                    );
                }
            }
            let mut created = rows
                .iter()
                .map(|row| {
                    let name: String = row.get("name");
                    if let Some(created_at) = row.get::<_, Option<Timestamp>>("created_at") {
                        return Ok(CreatedNode {
                            entity_type: row.get("entity_type"),
                            name,
                            created_at,
                            already_existed: false,
                            skipped_duplicates: Vec::new(),
                            added: Vec::new(),
                        });
                    }
                    // Skipped as taken, then deleted by another writer before the lookup.
                    let (name, entity_type, created_at) =
                        existing_rows.remove(&name).ok_or_else(|| {
                            Error::Conflict(format!("node {name} was deleted concurrently"))
                        })?;
                    Ok(CreatedNode {
                        name,
                        entity_type,
                        created_at,
                        already_existed: true,
                        skipped_duplicates: Vec::new(),
                        added: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            if request.if_exists == IfExists::Merge {
                crate::upsert::merge_into_existing(&tx, workspace, &request.entities, &mut created)
                    .await?;
            }
            Ok(created)
        })?;
        let rows = request.entities.len()
            + request
                .entities
                .iter()
                .map(|e| e.observations.len())
                .sum::<usize>();
        self.written.wrote(rows, &self.direct);
        Ok(created)
    }

    #[instrument(skip_all, fields(count = request.entity_names.len()))]
    async fn delete_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteEntities>,
    ) -> Result<DeletedNodes> {
        let names = &request.entity_names;
        let deleted = write!(self, |tx| async {
            let rows = tx
                .query(
                    "DELETE FROM nodes WHERE workspace_id = $1 AND name = ANY($2) RETURNING name",
                    &[&workspace.0, &names],
                )
                .await
                .map_err(db)?;
            let deleted: HashSet<String> = rows.iter().map(|row| row.get(0)).collect();
            let mut result = DeletedNodes::default();
            for name in first_occurrences(names) {
                if deleted.contains(name) {
                    result.deleted.push(name.clone());
                } else {
                    result.not_found.push(name.clone());
                }
            }
            Ok(result)
        })?;
        self.written.wrote(request.entity_names.len(), &self.direct);
        Ok(deleted)
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn open_nodes(
        &self,
        workspace: WorkspaceId,
        request: &Checked<OpenNodes>,
    ) -> Result<OpenedNodes> {
        let names = &request.names;
        read!(self, |tx| async {
            let statement = tx
                .prepare_cached(
                    "SELECT id, name, entity_type, summary, tags, created_at, updated_at,
                            ARRAY(SELECT alias FROM node_aliases a WHERE a.node_id = nodes.id
                                  ORDER BY alias) AS aliases
                     FROM nodes WHERE workspace_id = $1 AND name = ANY($2)",
                )
                .await
                .map_err(db)?;
            let node_rows = (tx.query(&statement, &[&workspace.0, &names]).await).map_err(db)?;
            let ids: Vec<i64> = node_rows.iter().map(|row| row.get("id")).collect();
            let time = request.read_time();
            let mut observations = facts_of(&tx, &ids, time).await?;
            let mut by_name: HashMap<String, NodeDetail> = node_rows
                .iter()
                .map(|row| {
                    let detail = NodeDetail {
                        name: row.get("name"),
                        entity_type: row.get("entity_type"),
                        summary: row.get("summary"),
                        tags: row.get("tags"),
                        observations: observations.remove(&row.get("id")).unwrap_or_default(),
                        aliases: row.get("aliases"),
                        created_at: row.get("created_at"),
                        updated_at: row.get("updated_at"),
                    };
                    (detail.name.clone(), detail)
                })
                .collect();
            let mut result = OpenedNodes {
                relations: relations_at(&tx, &ids, Endpoints::Either, time).await?,
                ..OpenedNodes::default()
            };
            for name in first_occurrences(names) {
                match by_name.remove(name) {
                    Some(detail) => result.entities.push(detail),
                    None => result.not_found.push(name.clone()),
                }
            }
            Ok(result)
        })
    }

    #[instrument(skip_all)]
    async fn get_nodes_by_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNodesByType>,
    ) -> Result<Vec<TypedNode>> {
        let entity_type = &request.entity_type;
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT name, entity_type, summary, tags, updated_at FROM nodes
                     WHERE workspace_id = $1 AND entity_type = $2 ORDER BY name",
                    &[&workspace.0, &entity_type],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| TypedNode {
                    name: row.get("name"),
                    entity_type: row.get("entity_type"),
                    summary: row.get("summary"),
                    tags: row.get("tags"),
                    updated_at: row.get("updated_at"),
                })
                .collect())
        })
    }

    #[instrument(skip_all)]
    async fn get_recently_modified(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRecentlyModified>,
    ) -> Result<Vec<NodeBrief>> {
        let GetRecentlyModified { days, limit } = **request;
        read!(self, |tx| async {
            let days = i32::try_from(days).map_err(|_| Error::invalid("days", "too large"))?;
            let rows = tx
                .query(
                    "SELECT name, entity_type, summary, updated_at FROM nodes
                     WHERE workspace_id = $1 AND updated_at >= now() - make_interval(days => $2)
                     ORDER BY updated_at DESC, name LIMIT $3",
                    &[&workspace.0, &days, &i64::from(limit)],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(brief).collect())
        })
    }

    #[instrument(skip_all)]
    async fn set_summary(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetSummary>,
    ) -> Result<SummaryUpdate> {
        let (name, summary) = (&request.name, &request.summary);
        write!(self, |tx| async {
            let row = tx
                .query_opt(
                    "UPDATE nodes SET summary = $3, summary_updated_at = now()
                     WHERE workspace_id = $1 AND name = $2
                     RETURNING name, summary, updated_at",
                    &[&workspace.0, &name, &summary],
                )
                .await
                .map_err(db)?
                .ok_or_else(|| Error::node_not_found(name))?;
            Ok(SummaryUpdate {
                name: row.get("name"),
                summary: row.get("summary"),
                updated_at: row.get("updated_at"),
            })
        })
    }

    #[instrument(skip_all)]
    async fn set_tags(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetTags>,
    ) -> Result<TagsUpdate> {
        let (name, tags) = (&request.name, &request.tags);
        write!(self, |tx| async {
            let row = tx
                .query_opt(
                    "UPDATE nodes SET tags = $3 WHERE workspace_id = $1 AND name = $2
                     RETURNING name, tags",
                    &[&workspace.0, &name, &tags],
                )
                .await
                .map_err(db)?
                .ok_or_else(|| Error::node_not_found(name))?;
            Ok(TagsUpdate {
                name: row.get("name"),
                tags: row.get("tags"),
            })
        })
    }

    #[instrument(skip_all)]
    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT n.name, n.entity_type, n.summary, n.updated_at FROM nodes n
                     WHERE n.workspace_id = $1
                       AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.from_node_id = n.id)
                       AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.to_node_id = n.id)
                     ORDER BY n.name",
                    &[&workspace.0],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(brief).collect())
        })
    }

    #[instrument(skip_all)]
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT n.name, n.entity_type, o.observation_count, o.last_observation_at,
                            n.summary_updated_at
                     FROM nodes n
                     CROSS JOIN LATERAL (
                         SELECT count(*) AS observation_count,
                                max(updated_at) AS last_observation_at
                         FROM observations
                         WHERE node_id = n.id AND (valid_to IS NULL OR valid_to > now())
                     ) o
                     WHERE n.workspace_id = $1 AND o.observation_count > 0
                       AND (n.summary_updated_at IS NULL
                            OR n.summary_updated_at < o.last_observation_at)
                     ORDER BY n.summary_updated_at NULLS FIRST, o.last_observation_at, n.name",
                    &[&workspace.0],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| PendingConsolidation {
                    name: row.get("name"),
                    entity_type: row.get("entity_type"),
                    observation_count: row.get("observation_count"),
                    last_observation_at: row.get("last_observation_at"),
                    summary_updated_at: row.get("summary_updated_at"),
                })
                .collect())
        })
    }

    #[instrument(skip_all)]
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        read!(self, |tx| get_stats(&tx, workspace))
    }

    #[instrument(skip_all)]
    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>> {
        let SimilarNames {
            workspace,
            names,
            limit,
        } = request;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read!(self, |tx| async {
            let statement = tx
                .prepare_cached(
                    "WITH hits AS (
                         SELECT w.node_id FROM unnest($2::text[]) AS s (start)
                         CROSS JOIN LATERAL (
                             SELECT node_id FROM node_name_words
                             WHERE workspace_id = $1 AND word >= s.start COLLATE \"C\"
                               AND word < (s.start || chr(1114111)) COLLATE \"C\"
                             ORDER BY word LIMIT 64) w
                         UNION ALL
                         SELECT w.node_id FROM unnest($3::text[]) AS p (whole)
                         CROSS JOIN LATERAL (
                             SELECT node_id FROM node_name_words
                             WHERE workspace_id = $1 AND word = p.whole COLLATE \"C\"
                             LIMIT 64) w
                     )
                     SELECT n.name FROM (
                         SELECT node_id, count(*) AS hits FROM hits GROUP BY node_id
                     ) c JOIN nodes n ON n.id = c.node_id
                     WHERE n.name <> $4
                     ORDER BY c.hits DESC, length(n.name), n.name LIMIT $5",
                )
                .await
                .map_err(db)?;
            let mut similar = Vec::with_capacity(names.len());
            for name in names {
                // Per probe, the first words in order of the index: a few range scans.
                let probe = suggestions::probe(name);
                let rows = tx
                    .query(
                        &statement,
                        &[&workspace.0, &probe.starts, &probe.wholes, name, &limit],
                    )
                    .await
                    .map_err(db)?;
                similar.push(rows.iter().map(|row| row.get("name")).collect());
            }
            Ok(similar)
        })
    }

    #[instrument(skip_all)]
    async fn event_counts(&self, request: CountEvents) -> Result<EventCounts> {
        let CountEvents { workspace, since } = request;
        read!(self, |tx| async {
            let row = tx
                .query_one(
                    "SELECT coalesce(sum(count) FILTER (WHERE operation = 'create'), 0) AS creates,
                            coalesce(sum(count) FILTER (WHERE operation = 'update'), 0) AS updates,
                            coalesce(sum(count) FILTER (WHERE operation = 'delete'), 0) AS deletes
                     FROM events WHERE workspace_id = $1 AND at >= $2",
                    &[&workspace.0, &since],
                )
                .await
                .map_err(db)?;
            Ok(EventCounts {
                since,
                creates: row.get("creates"),
                updates: row.get("updates"),
                deletes: row.get("deletes"),
            })
        })
    }
}
