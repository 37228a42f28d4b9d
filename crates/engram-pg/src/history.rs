//! A node's history ([`engram_domain::HistoryStore`]), read from what the store keeps.

use async_trait::async_trait;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::graph::node_id;

#[async_trait]
impl HistoryStore for PgStore {
    #[instrument(skip_all)]
    async fn get_history(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetHistory>,
    ) -> Result<Vec<HistoryEntry>> {
        read!(self, |tx| async {
            let node = node_id(&tx, workspace, &request.name).await?;
            let statement = tx
                .prepare_cached(include_str!("sql/history.sql"))
                .await
                .map_err(db)?;
            let rows = tx
                .query(
                    &statement,
                    &[&node, &request.before, &i64::from(request.limit)],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(history_entry).collect())
        })
    }
}

/// A row of `sql/history.sql` as an entry.
fn history_entry(row: &tokio_postgres::Row) -> HistoryEntry {
    let relation = (row.get::<_, Option<String>>("from_name")).map(|from| Relation {
        valid_from: row.get("valid_from"),
        valid_to: row.get("valid_to"),
        ..Relation::new(
            from,
            row.get::<_, String>("to_name"),
            row.get::<_, String>("relation_type"),
        )
    });
    HistoryEntry {
        at: row.get("at"),
        operation: HistoryOperation::from_name(row.get("operation")),
        ordinal: row.get::<_, Option<i64>>("ordinal").map(Ordinal),
        content: row.get("content"),
        old_content: row.get("old_content"),
        relation,
        author: row.get("author"),
    }
}
