//! A node's history ([`engram_domain::HistoryStore`]), read from what the store keeps.

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::params;
use tracing::instrument;

use crate::SqliteStore;
use crate::nodes::node_id;
use crate::sql::query;

#[async_trait]
impl HistoryStore for SqliteStore {
    #[instrument(skip_all)]
    async fn get_history(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetHistory>,
    ) -> Result<Vec<HistoryEntry>> {
        let (name, before, limit) = (request.name.clone(), request.before, request.limit);
        self.pool
            .read(move |tx| {
                let node = node_id(tx, workspace, &name)?;
                query(
                    tx,
                    include_str!("sql/history.sql"),
                    params![node, before.map(crate::micros), limit],
                    history_entry,
                )
            })
            .await
    }
}

/// A row of `sql/history.sql` as an entry.
fn history_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryEntry> {
    let relation = match row.get::<_, Option<String>>("from_name")? {
        Some(from) => Some(Relation {
            valid_from: row
                .get::<_, Option<i64>>("valid_from")?
                .map(crate::timestamp),
            valid_to: row.get::<_, Option<i64>>("valid_to")?.map(crate::timestamp),
            ..Relation::new(
                from,
                row.get::<_, String>("to_name")?,
                row.get::<_, String>("relation_type")?,
            )
        }),
        None => None,
    };
    Ok(HistoryEntry {
        at: crate::timestamp(row.get("at")?),
        operation: HistoryOperation::from_name(&row.get::<_, String>("operation")?),
        ordinal: row.get::<_, Option<i64>>("ordinal")?.map(Ordinal),
        content: row.get("content")?,
        old_content: row.get("old_content")?,
        relation,
        author: row.get("author")?,
    })
}
