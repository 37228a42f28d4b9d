//! Observation tools: add, replace, delete, end, and the purge of expired facts.

use std::collections::BTreeSet;

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::nodes::{insert_observations, node_ids, place};

#[async_trait]
impl ObservationStore for SqliteStore {
    #[instrument(skip_all, fields(count = request.observations.len()))]
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddObservations>,
    ) -> Result<Vec<AddedObservations>> {
        let additions = request.observations.clone();
        self.pool
            .write(move |tx| {
                let ids = node_ids(
                    tx,
                    workspace,
                    additions.iter().map(|a| a.entity_name.as_str()),
                )?;
                let mut result = Vec::with_capacity(additions.len());
                // Written together at the end (see `insert_observations`).
                let mut rows = Vec::new();
                for addition in &additions {
                    let Some(&node_id) = ids.get(&addition.entity_name) else {
                        result.push(AddedObservations::missing(&addition.entity_name));
                        continue;
                    };
                    let (placed, skipped_duplicates) = place(tx, node_id, &addition.contents)?;
                    let added = placed.iter().map(|row| row.observation()).collect();
                    rows.extend(placed);
                    let row =
                        AddedObservations::stored(&addition.entity_name, added, skipped_duplicates);
                    result.push(row);
                }
                insert_observations(tx, workspace, &rows)?;
                Ok(result)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ReplaceObservation>,
    ) -> Result<ReplacedObservation> {
        let ReplaceObservation {
            entity_name,
            ordinal,
            new_content,
        } = (**request).clone();
        self.pool
            .write(move |tx| {
                // Only a current fact can be replaced; an ended one is history.
                let found: Option<(i64, String)> = tx
                    .query_row(
                        "SELECT o.id, o.content FROM observations o
                         JOIN nodes n ON n.id = o.node_id
                         WHERE n.workspace_id = ?1 AND n.name = ?2 AND o.ordinal = ?3
                           AND (o.valid_to IS NULL OR o.valid_to > engram_now())",
                        params![workspace.0, entity_name, ordinal],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(db)?;
                let Some((id, old_content)) = found else {
                    let node_exists = !node_ids(tx, workspace, [entity_name.as_str()])?.is_empty();
                    return Err(Error::observation_not_found(
                        &entity_name,
                        ordinal,
                        node_exists,
                    ));
                };
                // The text it replaces stays readable as of the times before now.
                tx.execute(
                    "INSERT INTO observation_versions (observation_id, content, replaced_at)
                     VALUES (?1, ?2, engram_now())",
                    params![id, old_content],
                )
                .map_err(db)?;
                tx.execute(
                    "UPDATE observations SET content = ?2, updated_at = engram_now() WHERE id = ?1",
                    params![id, new_content],
                )
                .map_err(db)?;
                Ok(ReplacedObservation {
                    entity_name,
                    ordinal: Ordinal(ordinal),
                    old_content,
                    new_content,
                })
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.deletions.len()))]
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteObservations>,
    ) -> Result<Vec<DeletedObservations>> {
        let deletions = request.deletions.clone();
        self.pool
            .write(move |tx| {
                let mut delete = tx
                    .prepare_cached(
                        "DELETE FROM observations
                         WHERE node_id = (SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2)
                           AND ordinal = ?3",
                    )
                    .map_err(db)?;
                let mut by_content = tx
                    .prepare_cached(
                        "DELETE FROM observations
                         WHERE node_id = (SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2)
                           AND content = ?3
                         RETURNING ordinal",
                    )
                    .map_err(db)?;
                let mut forget_aggregate = tx
                    .prepare_cached(
                        "DELETE FROM node_embeddings
                         WHERE node_id = (SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2)
                           AND NOT EXISTS (SELECT 1 FROM observations o
                                           WHERE o.node_id = node_embeddings.node_id
                                             AND (o.valid_to IS NULL OR o.valid_to > engram_now()))",
                    )
                    .map_err(db)?;
                let mut result = Vec::with_capacity(deletions.len());
                for deletion in &deletions {
                    let mut requested: BTreeSet<i64> =
                        deletion.ordinals.iter().map(|o| o.0).collect();
                    let mut deleted_ordinals = Vec::new();
                    for content in &deletion.contents {
                        let ordinals = by_content
                            .query_map(params![workspace.0, deletion.entity_name, content], |row| {
                                row.get::<_, i64>(0)
                            })
                            .map_err(db)?
                            .collect::<rusqlite::Result<Vec<_>>>()
                            .map_err(db)?;
                        for ordinal in ordinals {
                            requested.remove(&ordinal);
                            deleted_ordinals.push(ordinal);
                        }
                    }
                    let mut not_found_ordinals = Vec::new();
                    for ordinal in requested {
                        let deleted = delete
                            .execute(params![workspace.0, deletion.entity_name, ordinal])
                            .map_err(db)?;
                        if deleted > 0 {
                            deleted_ordinals.push(ordinal);
                        } else {
                            not_found_ordinals.push(ordinal);
                        }
                    }
                    // A node that lost its last current fact keeps no aggregate vector (the
                    // indexer refreshes the others' when it embeds their changed context).
                    forget_aggregate
                        .execute(params![workspace.0, deletion.entity_name])
                        .map_err(db)?;
                    deleted_ordinals.sort_unstable();
                    result.push(DeletedObservations {
                        entity_name: deletion.entity_name.clone(),
                        deleted_ordinals: deleted_ordinals.into_iter().map(Ordinal).collect(),
                        not_found_ordinals: not_found_ordinals.into_iter().map(Ordinal).collect(),
                    });
                }
                Ok(result)
            })
            .await
    }
}
