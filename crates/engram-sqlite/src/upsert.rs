//! `create_entities` with `if_exists: "merge"`: what the call gives for a node that exists is
//! added to it, in the same transaction.

use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};

use crate::error::db;
use crate::nodes::{NewObservation, insert_observations};
use crate::sql::{strings, tags_json};

/// Adds `entity` (the `i`th of the call) to the existing node `node_id`: its observations
/// appended (texts the node holds as current facts skipped and reported in `row`), its tags
/// after the node's own, its summary when given. [`Error::InvalidArgument`] naming
/// `entities[i].tags` when the node would pass 64 tags.
pub(crate) fn merge_into(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    (i, entity): (usize, &NewNode),
    node_id: i64,
    row: &mut CreatedNode,
) -> Result<()> {
    let (rows, skipped) = crate::nodes::place(tx, node_id, &entity.observations)?;
    insert_observations(tx, workspace, &rows)?;
    row.skipped_duplicates.extend(skipped);
    row.added = rows.iter().map(NewObservation::observation).collect();
    let had: Vec<String> = tx
        .query_row(
            "SELECT tags FROM nodes WHERE id = ?1",
            params![node_id],
            |r| strings(r, "tags"),
        )
        .optional()
        .map_err(db)?
        .unwrap_or_default();
    let tags = limits::united_tags(&format!("entities[{i}].tags"), &had, &entity.tags)?;
    if tags.len() > had.len() {
        tx.execute(
            "UPDATE nodes SET tags = ?2 WHERE id = ?1",
            params![node_id, tags_json(&tags)],
        )
        .map_err(db)?;
    }
    if let Some(summary) = &entity.summary {
        tx.execute(
            "UPDATE nodes SET summary = ?2, summary_updated_at = engram_now()
             WHERE id = ?1 AND summary IS NOT ?2",
            params![node_id, summary],
        )
        .map_err(db)?;
    }
    Ok(())
}
