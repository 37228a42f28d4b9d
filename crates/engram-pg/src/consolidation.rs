//! What the consolidation report reads besides the graph ([`engram_domain::ConsolidationStore`]).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[async_trait]
impl ConsolidationStore for PgStore {
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
