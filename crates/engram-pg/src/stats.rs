//! The counts of `get_stats` ([`engram_domain::StatsStore`]).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[async_trait]
impl StatsStore for PgStore {
    #[instrument(skip_all)]
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        read!(self, |tx| get_stats(&tx, workspace))
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
