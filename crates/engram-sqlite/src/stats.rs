//! The counts of `get_stats` ([`engram_domain::StatsStore`]).

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;

#[async_trait]
impl StatsStore for SqliteStore {
    #[instrument(skip_all)]
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        self.pool.read(move |tx| get_stats(tx, workspace)).await
    }
}

pub(crate) fn get_stats(tx: &Transaction<'_>, workspace: WorkspaceId) -> Result<Stats> {
    tx.query_row(
        // The kept counts (migration V7), moved by triggers on every insert and delete; the
        // facts that have an end (ended, expired, or expiring) through the partial index on
        // `valid_to` (V10).
        "SELECT w.name, c.nodes AS node_count, c.observations AS observation_count,
                c.relations AS relation_count,
                coalesce(e.ended, 0) AS ended, coalesce(e.expiring, 0) AS expiring
         FROM workspaces w JOIN workspace_counts c ON c.workspace_id = w.id
         CROSS JOIN (SELECT sum(o.valid_to <= engram_now()) AS ended,
                            sum(o.valid_to > engram_now()) AS expiring
                     FROM observations o
                     WHERE o.workspace_id = ?1 AND o.valid_to IS NOT NULL) e
         WHERE w.id = ?1",
        [workspace.0],
        |row| {
            Ok(Stats {
                node_count: row.get("node_count")?,
                observation_count: row.get("observation_count")?,
                ended_observations: row.get("ended")?,
                expiring_observations: row.get("expiring")?,
                relation_count: row.get("relation_count")?,
                // The `get_stats` tool fills this in for its embedder's model.
                embedding_coverage: 0.0,
                rejected_texts: 0,
                embedding_model: None,
                workspace: row.get("name")?,
            })
        },
    )
    .optional()
    .map_err(db)?
    .ok_or_else(|| Error::workspace_not_found(format!("#{}", workspace.0)))
}
