//! Access ([`engram_domain::AccessStore`]): the access log's batches added to each node's
//! reads and each pair's count in one transaction, the report's stale nodes, and a search's
//! use of its candidates (`node_use`, for [`engram_domain::SearchStore`]).

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{Transaction, params};
use tracing::instrument;

use crate::error::db;
use crate::sql::query;
use crate::{SqliteStore, micros, timestamp};

/// How the nodes `names` were used, with how often each came with `first`.
pub(crate) fn node_use(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    names: &[String],
    first: &str,
) -> Result<Vec<NodeUse>> {
    let names = serde_json::to_string(names).map_err(|e| Error::Internal(e.to_string()))?;
    query(
        tx,
        "SELECT n.name, a.reads, a.last_read_at, coalesce(c.together, 0)
         FROM nodes n
         JOIN node_access a ON a.node_id = n.id
         LEFT JOIN nodes f ON f.workspace_id = ?1 AND f.name = ?3
         LEFT JOIN node_cooccurrence c
                ON c.node_a = min(n.id, f.id) AND c.node_b = max(n.id, f.id)
         WHERE n.workspace_id = ?1 AND n.name IN (SELECT value FROM json_each(?2))",
        params![workspace.0, names, first],
        |row| {
            Ok(NodeUse {
                name: row.get(0)?,
                reads: row.get(1)?,
                last_read_at: timestamp(row.get(2)?),
                together: row.get(3)?,
            })
        },
    )
}

#[async_trait]
impl AccessStore for SqliteStore {
    #[instrument(skip_all, fields(workspaces = batch.workspaces.len()))]
    async fn record_access(&self, batch: &AccessBatch) -> Result<()> {
        let batch = batch.clone();
        self.pool
            .write(move |tx| {
                let at = micros(batch.at);
                let mut read = tx
                    .prepare_cached(
                        "INSERT INTO node_access (node_id, workspace_id, reads, last_read_at)
                         SELECT id, workspace_id, ?3, ?4 FROM nodes
                         WHERE workspace_id = ?1 AND name = ?2
                         ON CONFLICT (node_id) DO UPDATE
                         SET reads = reads + excluded.reads,
                             last_read_at = max(last_read_at, excluded.last_read_at)",
                    )
                    .map_err(db)?;
                let mut paired = tx
                    .prepare_cached(
                        "INSERT INTO node_cooccurrence (node_a, node_b, workspace_id, together, last_at)
                         SELECT min(a.id, b.id), max(a.id, b.id), ?1, ?4, ?5
                         FROM nodes a JOIN nodes b ON b.workspace_id = ?1 AND b.name = ?3
                         WHERE a.workspace_id = ?1 AND a.name = ?2 AND a.id <> b.id
                         ON CONFLICT (node_a, node_b) DO UPDATE
                         SET together = together + excluded.together,
                             last_at = max(last_at, excluded.last_at)",
                    )
                    .map_err(db)?;
                for (workspace, access) in &batch.workspaces {
                    for (name, reads) in &access.reads {
                        let reads = i64::try_from(*reads).unwrap_or(i64::MAX);
                        read.execute(params![workspace.0, name, reads, at]).map_err(db)?;
                    }
                    for ((a, b), together) in &access.together {
                        let together = i64::try_from(*together).unwrap_or(i64::MAX);
                        (paired.execute(params![workspace.0, a, b, together, at])).map_err(db)?;
                    }
                }
                Ok(())
            })
            .await
    }

    #[instrument(skip_all)]
    async fn stale_nodes(
        &self,
        workspace: WorkspaceId,
        before: Timestamp,
        limit: u32,
    ) -> Result<Vec<StaleNode>> {
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    "SELECT n.name, n.entity_type, n.updated_at, coalesce(a.reads, 0),
                            a.last_read_at
                     FROM nodes n LEFT JOIN node_access a ON a.node_id = n.id
                     WHERE n.workspace_id = ?1 AND n.updated_at < ?2
                       AND (a.node_id IS NULL OR a.last_read_at < ?2 OR a.reads <= ?3)
                     ORDER BY n.updated_at, n.name LIMIT ?4",
                    params![
                        workspace.0,
                        micros(before),
                        STALE_READS,
                        i64::from(limit) + 1
                    ],
                    |row| {
                        Ok(StaleNode {
                            name: row.get(0)?,
                            entity_type: row.get(1)?,
                            updated_at: timestamp(row.get(2)?),
                            reads: row.get(3)?,
                            last_read_at: row.get::<_, Option<i64>>(4)?.map(timestamp),
                        })
                    },
                )
            })
            .await
    }
}
