//! The graph vocabulary ([`engram_domain::VocabularyStore`]): types with counts, a node's
//! degree and neighbours, subgraphs, filtered relations; each on an index of its own.

use async_trait::async_trait;
use engram_domain::vocabulary::{NEIGHBOURS_SQL, TYPE_COUNTS_SQL};
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::graph::graph_nodes;
use crate::nodes::{node_id, node_ids, relation, relations_among};
use crate::sql::query;

/// Up to `limit` (plus one) types of `sql` ([`TYPE_COUNTS_SQL`]) with their counts.
fn type_counts(
    tx: &Transaction<'_>,
    sql: &str,
    workspace: WorkspaceId,
    limit: u32,
) -> Result<Vec<TypeCount>> {
    query(tx, sql, params![workspace.0, i64::from(limit) + 1], |row| {
        Ok(TypeCount {
            name: row.get(0)?,
            count: row.get(1)?,
        })
    })
}

#[async_trait]
impl VocabularyStore for SqliteStore {
    #[instrument(skip_all)]
    async fn graph_vocabulary(
        &self,
        workspace: WorkspaceId,
        limit: u32,
    ) -> Result<GraphVocabulary> {
        self.pool
            .read(move |tx| {
                let [entity_types, relation_types] = TYPE_COUNTS_SQL;
                let entity_types = type_counts(tx, entity_types, workspace, limit)?;
                let relation_types = type_counts(tx, relation_types, workspace, limit)?;
                Ok(GraphVocabulary::cut(entity_types, relation_types, limit))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn describe_node(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DescribeNode>,
    ) -> Result<NodeDescription> {
        let (name, limit) = (request.name.clone(), request.limit);
        self.pool
            .read(move |tx| {
                // The node found by name in the statement that describes it.
                let mut statement = tx
                    .prepare_cached(include_str!("sql/describe_node.sql"))
                    .map_err(db)?;
                let described = statement
                    .query_row(params![workspace.0, name], |row| {
                        let (outgoing, incoming): (i64, i64) =
                            (row.get("outgoing")?, row.get("incoming")?);
                        let description = NodeDescription {
                            name: row.get("name")?,
                            entity_type: row.get("entity_type")?,
                            summary: row.get("summary")?,
                            observation_count: row.get("observation_count")?,
                            degree: Degree::new(outgoing, incoming),
                            neighbours: Vec::new(),
                            notice: None,
                        };
                        Ok((row.get::<_, i64>("id")?, description))
                    })
                    .optional()
                    .map_err(db)?;
                let (node, mut description) =
                    described.ok_or_else(|| Error::node_not_found(&name))?;
                let sql = NEIGHBOURS_SQL;
                description.neighbours =
                    query(tx, sql, params![node, i64::from(limit) + 1], |row| {
                        Ok(NodeNeighbour {
                            name: row.get("name")?,
                            entity_type: row.get("entity_type")?,
                            relation_type: row.get("relation_type")?,
                            direction: row.get("direction")?,
                        })
                    })?;
                Ok(description.cut_neighbours(limit))
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn get_subgraph(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetSubgraph>,
    ) -> Result<Neighborhood> {
        let (names, depth) = (request.names.clone(), request.depth);
        self.pool
            .read(move |tx| {
                let ids = node_ids(tx, workspace, names.iter().map(String::as_str))?;
                if let Some(missing) = names.iter().find(|name| !ids.contains_key(*name)) {
                    return Err(Error::node_not_found(missing));
                }
                let seeds: Vec<i64> = ids.into_values().collect();
                let (ids, nodes) = graph_nodes(tx, &seeds, depth)?;
                let relations = relations_among(tx, &ids, Endpoints::Both, ReadTime::Now)?;
                Ok(Neighborhood { nodes, relations })
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelations>,
    ) -> Result<FilteredRelations> {
        let request = (**request).clone();
        self.pool
            .read(move |tx| {
                // Each end given is read as its node's id, so each filter is an index's
                // equality; only the filters given are in the statement. An end's id names the
                // workspace already: without one the workspace is the filter (SQLite, without
                // statistics, would otherwise walk a node's workspace for its relations).
                let end = |name: &Option<String>| match name {
                    Some(name) => node_id(tx, workspace, name).map(Some),
                    None => Ok(None),
                };
                let mut filters = Vec::new();
                let mut values: Vec<rusqlite::types::Value> = Vec::new();
                for (column, id) in [
                    ("r.from_node_id", end(&request.from_entity)?),
                    ("r.to_node_id", end(&request.to_entity)?),
                ] {
                    if let Some(id) = id {
                        filters.push(format!("{column} = ?"));
                        values.push(id.into());
                    }
                }
                if filters.is_empty() {
                    filters.push("r.workspace_id = ?".to_owned());
                    values.push(workspace.0.into());
                }
                if let Some(relation_type) = &request.relation_type {
                    filters.push("r.relation_type = ?".to_owned());
                    values.push(relation_type.clone().into());
                }
                values.push((i64::from(request.limit) + 1).into());
                let sql = format!(
                    "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
                     FROM relations r JOIN nodes f ON f.id = r.from_node_id
                     JOIN nodes t ON t.id = r.to_node_id
                     WHERE {}
                     ORDER BY f.name, r.relation_type, t.name LIMIT ?",
                    filters.join(" AND ")
                );
                let values = rusqlite::params_from_iter(values);
                let relations = query(tx, &sql, values, relation)?;
                Ok(FilteredRelations::cut(relations, request.limit))
            })
            .await
    }
}
