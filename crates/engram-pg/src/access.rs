//! Access ([`engram_domain::AccessStore`]): the access log's batches added to each node's
//! reads and each pair's count in one transaction, the report's stale nodes, and a search's
//! use of its candidates (`node_use`, for [`engram_domain::SearchStore`]).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

/// How the nodes `names` were used, with how often each came with `first`.
pub(crate) async fn node_use(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    names: &[String],
    first: &str,
) -> Result<Vec<NodeUse>> {
    let statement = client
        .prepare_cached(
            "SELECT n.name, a.reads, a.last_read_at, coalesce(c.together, 0)
             FROM nodes n
             JOIN node_access a ON a.node_id = n.id
             LEFT JOIN nodes f ON f.workspace_id = $1 AND f.name = $3
             LEFT JOIN node_cooccurrence c
                    ON c.node_a = least(n.id, f.id) AND c.node_b = greatest(n.id, f.id)
             WHERE n.workspace_id = $1 AND n.name = ANY($2)",
        )
        .await
        .map_err(db)?;
    let rows = (client.query(&statement, &[&workspace.0, &names, &first]))
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| NodeUse {
            name: row.get(0),
            reads: row.get(1),
            last_read_at: row.get(2),
            together: row.get(3),
        })
        .collect())
}

#[async_trait]
impl AccessStore for PgStore {
    #[instrument(skip_all, fields(workspaces = batch.workspaces.len()))]
    async fn record_access(&self, batch: &AccessBatch) -> Result<()> {
        write!(self, |tx| async {
            for (workspace, access) in &batch.workspaces {
                let (names, reads): (Vec<&str>, Vec<i64>) = (access.reads.iter())
                    .map(|(name, reads)| (name.as_str(), i64::try_from(*reads).unwrap_or(i64::MAX)))
                    .unzip();
                tx.execute(
                    "INSERT INTO node_access (node_id, workspace_id, reads, last_read_at)
                     SELECT n.id, n.workspace_id, r.reads, $4
                     FROM unnest($2::text[], $3::bigint[]) AS r (name, reads)
                     JOIN nodes n ON n.workspace_id = $1 AND n.name = r.name
                     ON CONFLICT (node_id) DO UPDATE
                     SET reads = node_access.reads + excluded.reads,
                         last_read_at = greatest(node_access.last_read_at, excluded.last_read_at)",
                    &[&workspace.0, &names, &reads, &batch.at],
                )
                .await
                .map_err(db)?;
                let mut pairs = (Vec::new(), Vec::new(), Vec::new());
                for ((a, b), together) in &access.together {
                    pairs.0.push(a.as_str());
                    pairs.1.push(b.as_str());
                    pairs.2.push(i64::try_from(*together).unwrap_or(i64::MAX));
                }
                tx.execute(
                    "INSERT INTO node_cooccurrence (node_a, node_b, workspace_id, together, last_at)
                     SELECT least(a.id, b.id), greatest(a.id, b.id), $1, p.together, $5
                     FROM unnest($2::text[], $3::text[], $4::bigint[]) AS p (a, b, together)
                     JOIN nodes a ON a.workspace_id = $1 AND a.name = p.a
                     JOIN nodes b ON b.workspace_id = $1 AND b.name = p.b
                     WHERE a.id <> b.id
                     ON CONFLICT (node_a, node_b) DO UPDATE
                     SET together = node_cooccurrence.together + excluded.together,
                         last_at = greatest(node_cooccurrence.last_at, excluded.last_at)",
                    &[&workspace.0, &pairs.0, &pairs.1, &pairs.2, &batch.at],
                )
                .await
                .map_err(db)?;
            }
            Ok(())
        })
    }

    #[instrument(skip_all)]
    async fn stale_nodes(
        &self,
        workspace: WorkspaceId,
        before: Timestamp,
        limit: u32,
    ) -> Result<Vec<StaleNode>> {
        read!(self, |tx| async {
            let statement = tx
                .prepare_cached(
                    "SELECT n.name, n.entity_type, n.updated_at, coalesce(a.reads, 0),
                            a.last_read_at
                     FROM nodes n LEFT JOIN node_access a ON a.node_id = n.id
                     WHERE n.workspace_id = $1 AND n.updated_at < $2
                       AND (a.node_id IS NULL OR a.last_read_at < $2 OR a.reads <= $3)
                     ORDER BY n.updated_at, n.name LIMIT $4",
                )
                .await
                .map_err(db)?;
            let limit = i64::from(limit) + 1;
            let rows = (tx.query(&statement, &[&workspace.0, &before, &STALE_READS, &limit]))
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| StaleNode {
                    name: row.get(0),
                    entity_type: row.get(1),
                    updated_at: row.get(2),
                    reads: row.get(3),
                    last_read_at: row.get(4),
                })
                .collect())
        })
    }
}
