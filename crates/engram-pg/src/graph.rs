//! Graph walks and graph-wide checks: neighbourhood, shortest path, unlinked references.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::all_paths::Neighbour;
use engram_domain::path::{PathSearch, STEP_SQL};
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::nodes::{relation, relations_at};
use crate::observations::node_pair;

pub(crate) async fn node_id(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    name: &str,
) -> Result<i64> {
    let row = client
        .query_opt(
            "SELECT id FROM nodes WHERE workspace_id = $1 AND name = $2",
            &[&workspace.0, &name],
        )
        .await
        .map_err(db)?
        .ok_or_else(|| Error::node_not_found(name))?;
    Ok(row.get(0))
}

/// The nodes within `depth` hops of any of `seeds` over the current relations, nearest first,
/// then by name (`neighborhood.sql`), with their ids.
pub(crate) async fn graph_nodes(
    client: &impl GenericClient,
    seeds: &[i64],
    depth: i32,
) -> Result<(Vec<i64>, Vec<GraphNode>)> {
    let statement = client
        .prepare_cached(include_str!("sql/neighborhood.sql"))
        .await
        .map_err(db)?;
    let rows = client
        .query(&statement, &[&seeds, &depth])
        .await
        .map_err(db)?;
    let ids = rows.iter().map(|row| row.get("id")).collect();
    Ok((ids, rows.iter().map(graph_node).collect()))
}

fn graph_node(row: &tokio_postgres::Row) -> GraphNode {
    GraphNode {
        name: row.get("name"),
        entity_type: row.get("entity_type"),
        summary: row.get("summary"),
        tags: row.get("tags"),
    }
}

#[async_trait]
impl GraphStore for PgStore {
    #[instrument(skip_all)]
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNeighborhood>,
    ) -> Result<Neighborhood> {
        let (name, depth, time) = (&request.name, request.depth, request.read_time());
        read!(self, |tx| async {
            let start = node_id(&tx, workspace, name).await?;
            let depth = i32::try_from(depth).map_err(|_| Error::invalid("depth", "too large"))?;
            let rows = match time {
                ReadTime::Now => {
                    let (ids, nodes) = graph_nodes(&tx, &[start], depth).await?;
                    let relations = relations_at(&tx, &ids, Endpoints::Both, time).await?;
                    return Ok(Neighborhood { nodes, relations });
                }
                ReadTime::Ever | ReadTime::At(_) => {
                    let at = match time {
                        ReadTime::At(at) => Some(at),
                        _ => None,
                    };
                    let statement = tx
                        .prepare_cached(include_str!("sql/neighborhood_at.sql"))
                        .await
                        .map_err(db)?;
                    tx.query(&statement, &[&start, &depth, &at]).await
                }
            }
            .map_err(db)?;
            let ids: Vec<i64> = rows.iter().map(|row| row.get("id")).collect();
            let relations = relations_at(&tx, &ids, Endpoints::Both, time).await?;
            let nodes = rows.iter().map(graph_node).collect();
            Ok(Neighborhood { nodes, relations })
        })
    }

    /// The shortest path from `from` to `to`, relations followed in either direction:
    /// [`engram_domain::path`]'s search from both ends, one query per level it asks for, then
    /// its walk back from the target over each node's neighbours by name and relation id (so
    /// the answer is deterministic, and engram-sqlite's).
    #[instrument(skip_all)]
    async fn get_path(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetPath>,
    ) -> Result<GraphPath> {
        let GetPath {
            from_entity: from,
            to_entity: to,
        } = &**request;
        read!(self, |tx| async {
            let (source, target) = node_pair(&tx, workspace, from, to).await?;
            let level_query = tx
                .prepare_cached(include_str!("sql/path_level.sql"))
                .await
                .map_err(db)?;
            let mut search = PathSearch::new(source, target);
            while let Some(frontier) = search.frontier() {
                let rows = tx.query(&level_query, &[&frontier]).await.map_err(db)?;
                search.expand(rows.iter().map(|row| (row.get(0), row.get(1))));
            }
            let Some(mut walk) = search.walk() else {
                return Ok(GraphPath::default());
            };
            let step_query = tx.prepare_cached(STEP_SQL).await.map_err(db)?;
            let mut path = vec![to.to_owned()];
            let mut relations = Vec::new();
            while let Some(current) = walk.at() {
                let rows = tx.query(&step_query, &[&current]).await.map_err(db)?;
                let chosen = walk.step(rows.iter().map(|row| row.get::<_, i64>("neighbour_id")))?;
                path.push(rows[chosen].get("neighbour"));
                relations.push(relation(&rows[chosen]));
            }
            Ok(GraphPath::walked_back(path, relations))
        })
    }

    /// Every simple path, shortest first: [`engram_domain::all_paths`]'s search, one query
    /// per node whose neighbours it reads (`STEP_SQL`, as `get_path`'s walk).
    #[instrument(skip_all)]
    async fn find_all_paths(
        &self,
        workspace: WorkspaceId,
        request: &Checked<FindAllPaths>,
    ) -> Result<AllPaths> {
        let (from, to) = (&request.from_entity, &request.to_entity);
        read!(self, |tx| async {
            let (source, target) = node_pair(&tx, workspace, from, to).await?;
            let step_query = tx.prepare_cached(STEP_SQL).await.map_err(db)?;
            let mut search = request.search(source, target);
            while let Some(node) = search.wants() {
                let rows = tx.query(&step_query, &[&node]).await.map_err(db)?;
                let neighbours = (rows.iter())
                    .map(|row| Neighbour {
                        id: row.get("neighbour_id"),
                        name: row.get("neighbour"),
                        relation: relation(row),
                    })
                    .collect();
                search.give(node, neighbours);
            }
            Ok(AllPaths::of(search))
        })
    }

    #[instrument(skip_all)]
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        read!(self, |tx| async {
            let statement = tx
                .prepare_cached(include_str!("sql/unlinked_references.sql"))
                .await
                .map_err(db)?;
            let rows = tx.query(&statement, &[&workspace.0]).await.map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| UnlinkedReference {
                    node: row.get("node"),
                    referenced_name: row.get("referenced_name"),
                    reference_count: row.get("reference_count"),
                })
                .collect())
        })
    }
}
