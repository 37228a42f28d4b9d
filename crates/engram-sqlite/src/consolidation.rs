//! What the consolidation report reads besides the graph ([`engram_domain::ConsolidationStore`]).

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::params;
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::query;
use crate::{micros, timestamp};

#[async_trait]
impl ConsolidationStore for SqliteStore {
    #[instrument(skip_all)]
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    "SELECT n.name, n.entity_type, count(*) AS observation_count,
                            max(o.updated_at) AS last_observation_at, n.summary_updated_at
                     FROM nodes n JOIN observations o ON o.node_id = n.id
                     WHERE n.workspace_id = ?1
                       AND (o.valid_to IS NULL OR o.valid_to > engram_now())
                     GROUP BY n.id
                     HAVING n.summary_updated_at IS NULL OR n.summary_updated_at < max(o.updated_at)
                     ORDER BY n.summary_updated_at NULLS FIRST, last_observation_at, n.name",
                    [workspace.0],
                    |row| {
                        Ok(PendingConsolidation {
                            name: row.get("name")?,
                            entity_type: row.get("entity_type")?,
                            observation_count: row.get("observation_count")?,
                            last_observation_at: timestamp(row.get("last_observation_at")?),
                            summary_updated_at: row
                                .get::<_, Option<i64>>("summary_updated_at")?
                                .map(timestamp),
                        })
                    },
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn event_counts(&self, request: CountEvents) -> Result<EventCounts> {
        let CountEvents { workspace, since } = request;
        self.pool
            .read(move |tx| {
                tx.query_row(
                    "SELECT coalesce(sum(count) FILTER (WHERE operation = 'create'), 0),
                            coalesce(sum(count) FILTER (WHERE operation = 'update'), 0),
                            coalesce(sum(count) FILTER (WHERE operation = 'delete'), 0)
                     FROM events WHERE workspace_id = ?1 AND at >= ?2",
                    params![workspace.0, micros(since)],
                    |row| {
                        Ok(EventCounts {
                            since,
                            creates: row.get(0)?,
                            updates: row.get(1)?,
                            deletes: row.get(2)?,
                        })
                    },
                )
                .map_err(db)
            })
            .await
    }
}
