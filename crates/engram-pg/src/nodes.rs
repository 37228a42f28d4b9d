//! Node-level tools: create, delete, open, list, summary, tags, orphans, pending
//! consolidation, stats and event counts.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::reflections::{NODE_REFLECTIONS, REFLECTION_PREVIEW_CHARS};
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
                        return Ok(CreatedNode::new(
                            name,
                            row.get("entity_type"),
                            created_at,
                            false,
                        ));
                    }
                    // Skipped as taken, then deleted by another writer before the lookup.
                    let (name, entity_type, created_at) =
                        existing_rows.remove(&name).ok_or_else(|| {
                            Error::Conflict(format!("node {name} was deleted concurrently"))
                        })?;
                    Ok(CreatedNode::new(name, entity_type, created_at, true))
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
                                  ORDER BY alias) AS aliases,
                            (SELECT json_agg(json_build_object(
                                        'content', left(x.content, $4), 'author', x.author,
                                        'mood', x.mood, 'created_at', x.created_at)
                                    ORDER BY x.created_at DESC, x.id DESC)
                             FROM (SELECT * FROM reflections r WHERE r.node_id = nodes.id
                                   ORDER BY r.created_at DESC, r.id DESC LIMIT $3) x)
                                AS reflections,
                            (SELECT count(*) FROM reflections r WHERE r.node_id = nodes.id)
                                AS reflection_count
                     FROM nodes WHERE workspace_id = $1 AND name = ANY($2)",
                )
                .await
                .map_err(db)?;
            let shown = NODE_REFLECTIONS as i64;
            // One character past the preview, so that the cut shows (`with_reflections`).
            let preview = REFLECTION_PREVIEW_CHARS as i32 + 1;
            let node_rows = (tx.query(&statement, &[&workspace.0, &names, &shown, &preview]))
                .await
                .map_err(db)?;
            let ids: Vec<i64> = node_rows.iter().map(|row| row.get("id")).collect();
            let time = request.read_time();
            let mut observations = facts_of(&tx, &ids, time).await?;
            let mut by_name: HashMap<String, NodeDetail> = node_rows
                .iter()
                .map(|row| -> Result<(String, NodeDetail)> {
                    let detail = NodeDetail {
                        name: row.get("name"),
                        entity_type: row.get("entity_type"),
                        summary: row.get("summary"),
                        tags: row.get("tags"),
                        observations: observations.remove(&row.get("id")).unwrap_or_default(),
                        aliases: row.get("aliases"),
                        created_at: row.get("created_at"),
                        updated_at: row.get("updated_at"),
                        reflections: Vec::new(),
                        more_reflections: None,
                    };
                    let listed: Option<serde_json::Value> = row.get("reflections");
                    let listed = match listed {
                        Some(listed) => serde_json::from_value(listed).map_err(|error| {
                            Error::Internal(format!("reading a node's reflections: {error}"))
                        })?,
                        None => Vec::new(),
                    };
                    let detail = detail.with_reflections(listed, row.get("reflection_count"));
                    Ok((detail.name.clone(), detail))
                })
                .collect::<Result<_>>()?;
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
}
