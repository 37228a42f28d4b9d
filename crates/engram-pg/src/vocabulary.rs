//! The graph vocabulary ([`engram_domain::VocabularyStore`]): types with counts, a node's
//! degree and neighbours, subgraphs, filtered relations; each on an index of its own.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::vocabulary::{NEIGHBOURS_SQL, TYPE_COUNTS_SQL};
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::graph::{graph_nodes, node_id};
use crate::nodes::{relation, relations_among};
use crate::observations::node_ids;

/// Up to `limit` (plus one) types of `sql` ([`TYPE_COUNTS_SQL`]) with their counts.
async fn type_counts(
    client: &impl GenericClient,
    sql: &str,
    workspace: WorkspaceId,
    limit: u32,
) -> Result<Vec<TypeCount>> {
    let statement = client.prepare_cached(sql).await.map_err(db)?;
    let rows = (client.query(&statement, &[&workspace.0, &(i64::from(limit) + 1)]))
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| TypeCount {
            name: row.get(0),
            count: row.get(1),
        })
        .collect())
}

#[async_trait]
impl VocabularyStore for PgStore {
    #[instrument(skip_all)]
    async fn graph_vocabulary(
        &self,
        workspace: WorkspaceId,
        limit: u32,
    ) -> Result<GraphVocabulary> {
        read!(self, |tx| async {
            let [entity_types, relation_types] = TYPE_COUNTS_SQL;
            let entity_types = type_counts(&tx, entity_types, workspace, limit).await?;
            let relation_types = type_counts(&tx, relation_types, workspace, limit).await?;
            Ok(GraphVocabulary::cut(entity_types, relation_types, limit))
        })
    }

    #[instrument(skip_all)]
    async fn describe_node(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DescribeNode>,
    ) -> Result<NodeDescription> {
        read!(self, |tx| async {
            // The node found by name in the statement that describes it.
            let statement = tx
                .prepare_cached(include_str!("sql/describe_node.sql"))
                .await
                .map_err(db)?;
            let row = (tx
                .query_opt(&statement, &[&workspace.0, &request.name])
                .await)
                .map_err(db)?
                .ok_or_else(|| Error::node_not_found(&request.name))?;
            let node: i64 = row.get("id");
            let (outgoing, incoming): (i64, i64) = (row.get("outgoing"), row.get("incoming"));
            let statement = tx.prepare_cached(NEIGHBOURS_SQL).await.map_err(db)?;
            let limit = i64::from(request.limit) + 1;
            let neighbours = (tx.query(&statement, &[&node, &limit]).await.map_err(db)?)
                .iter()
                .map(|row| NodeNeighbour {
                    name: row.get("name"),
                    entity_type: row.get("entity_type"),
                    relation_type: row.get("relation_type"),
                    direction: row.get("direction"),
                })
                .collect();
            let description = NodeDescription {
                name: row.get("name"),
                entity_type: row.get("entity_type"),
                summary: row.get("summary"),
                observation_count: row.get("observation_count"),
                degree: Degree::new(outgoing, incoming),
                neighbours,
                notice: None,
            };
            Ok(description.cut_neighbours(request.limit))
        })
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn get_subgraph(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetSubgraph>,
    ) -> Result<Neighborhood> {
        read!(self, |tx| async {
            let ids = node_ids(&tx, workspace, request.names.iter()).await?;
            if let Some(missing) = request.names.iter().find(|name| !ids.contains_key(*name)) {
                return Err(Error::node_not_found(missing));
            }
            let seeds: Vec<i64> = ids.into_values().collect();
            let depth = request.depth as i32;
            let (ids, nodes) = graph_nodes(&tx, &seeds, depth).await?;
            let relations = relations_among(&tx, &ids, Endpoints::Both).await?;
            Ok(Neighborhood { nodes, relations })
        })
    }

    #[instrument(skip_all)]
    async fn get_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelations>,
    ) -> Result<FilteredRelations> {
        read!(self, |tx| async {
            // Each end given is read as its node's id, so each filter is an index's equality.
            let mut filters = vec!["r.workspace_id = $1".to_owned()];
            let mut ids: Vec<i64> = Vec::new();
            for (column, name) in [
                ("r.from_node_id", &request.from_entity),
                ("r.to_node_id", &request.to_entity),
            ] {
                if let Some(name) = name {
                    ids.push(node_id(&tx, workspace, name).await?);
                    filters.push(format!("{column} = ${}", ids.len() + 1));
                }
            }
            let limit = i64::from(request.limit) + 1;
            let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&workspace.0];
            params.extend(
                ids.iter()
                    .map(|id| id as &(dyn tokio_postgres::types::ToSql + Sync)),
            );
            if let Some(relation_type) = &request.relation_type {
                params.push(relation_type);
                filters.push(format!("r.relation_type = ${}", params.len()));
            }
            params.push(&limit);
            let sql = format!(
                "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
                 FROM relations r JOIN nodes f ON f.id = r.from_node_id
                 JOIN nodes t ON t.id = r.to_node_id
                 WHERE {}
                 ORDER BY f.name, r.relation_type, t.name LIMIT ${}",
                filters.join(" AND "),
                params.len()
            );
            let statement = tx.prepare_cached(&sql).await.map_err(db)?;
            let rows = tx.query(&statement, &params).await.map_err(db)?;
            let relations = rows.iter().map(relation).collect();
            Ok(FilteredRelations::cut(relations, request.limit))
        })
    }
}
