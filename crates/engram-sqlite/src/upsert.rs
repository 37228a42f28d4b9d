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
    let mut held = tx
        .prepare_cached(
            "SELECT min(ordinal) FROM observations
             WHERE node_id = ?1 AND content = ?2
               AND (valid_to IS NULL OR valid_to > engram_now())",
        )
        .map_err(db)?;
    let mut fresh = Vec::new();
    for fact in &entity.observations {
        let ordinal: Option<i64> = held
            .query_row(params![node_id, fact.content], |r| r.get(0))
            .map_err(db)?;
        match ordinal {
            Some(ordinal) => (row.skipped_duplicates)
                .push(Observation::new(Ordinal(ordinal), fact.content.clone())),
            None => fresh.push(fact),
        }
    }
    let first: i64 = tx
        .query_row(
            "UPDATE nodes SET next_ordinal = next_ordinal + ?2 WHERE id = ?1
             RETURNING next_ordinal - ?2",
            params![node_id, fresh.len() as i64],
            |r| r.get(0),
        )
        .map_err(db)?;
    let rows: Vec<NewObservation<'_>> = (first..)
        .zip(&fresh)
        .map(|(ordinal, fact)| NewObservation::now(node_id, ordinal, fact))
        .collect();
    insert_observations(tx, workspace, &rows)?;
    row.added = (first..)
        .zip(&fresh)
        .map(|(ordinal, fact)| Observation::new(Ordinal(ordinal), fact.content.clone()))
        .collect();
    let mut tags: Vec<String> = tx
        .query_row(
            "SELECT tags FROM nodes WHERE id = ?1",
            params![node_id],
            |r| strings(r, "tags"),
        )
        .optional()
        .map_err(db)?
        .unwrap_or_default();
    let had = tags.len();
    for tag in &entity.tags {
        if !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    if tags.len() > limits::MAX_TAGS {
        return Err(Error::invalid(
            format!("entities[{i}].tags"),
            format!("the node would have more than {} tags", limits::MAX_TAGS),
        ));
    }
    if tags.len() > had {
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
