//! Workspace management: create, look up, list, rename, delete.

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Row, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::{db, taken_or_db};
use crate::sql::query;
use crate::timestamp;

const NAME_TAKEN: &str = "workspaces.name";

fn workspace(row: &Row<'_>) -> rusqlite::Result<Workspace> {
    Ok(Workspace {
        id: WorkspaceId(row.get("id")?),
        name: row.get("name")?,
        created_at: timestamp(row.get("created_at")?),
    })
}

#[async_trait]
impl WorkspaceStore for SqliteStore {
    async fn schema_current(&self) -> Result<bool> {
        self.is_migrated().await
    }

    #[instrument(skip_all)]
    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        let name = name.to_owned();
        self.pool
            .write(move |tx| {
                let workspace = tx
                    .query_row(
                        "INSERT INTO workspaces (name, created_at) VALUES (?1, engram_now())
                         RETURNING id, name, created_at",
                        [&name],
                        workspace,
                    )
                    .map_err(|e| taken_or_db(e, NAME_TAKEN, || Error::workspace_taken(name)))?;
                crate::vectors::seed_perspectives(tx, workspace.id)?;
                Ok(workspace)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn workspace(&self, name: &str) -> Result<Workspace> {
        let name = name.to_owned();
        self.pool
            .read(move |tx| {
                tx.query_row(
                    "SELECT id, name, created_at FROM workspaces WHERE name = ?1",
                    [&name],
                    workspace,
                )
                .optional()
                .map_err(db)?
                .ok_or_else(|| Error::workspace_not_found(name))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        self.pool
            .read(|tx| {
                query(
                    tx,
                    // The kept counts (migration V7).
                    "SELECT w.id, w.name, w.created_at, c.nodes AS node_count
                     FROM workspaces w JOIN workspace_counts c ON c.workspace_id = w.id
                     ORDER BY w.name",
                    [],
                    |row| {
                        Ok(WorkspaceInfo {
                            workspace: workspace(row)?,
                            node_count: row.get("node_count")?,
                        })
                    },
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn rename_workspace(&self, request: &Checked<RenameWorkspace>) -> Result<Workspace> {
        let RenameWorkspace { name, new_name } = (**request).clone();
        self.pool
            .write(move |tx| {
                tx.query_row(
                    "UPDATE workspaces SET name = ?2 WHERE name = ?1 RETURNING id, name, created_at",
                    params![name, new_name],
                    workspace,
                )
                .optional()
                .map_err(|e| taken_or_db(e, NAME_TAKEN, || Error::workspace_taken(new_name)))?
                .ok_or_else(|| Error::workspace_not_found(name))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn delete_workspace(&self, request: &Checked<DeleteWorkspace>) -> Result<()> {
        let DeleteWorkspace { name, force } = (**request).clone();
        self.pool
            .write(move |tx| {
                let (id, node_count): (i64, i64) = tx
                    .query_row(
                        "SELECT w.id, c.nodes
                         FROM workspaces w JOIN workspace_counts c ON c.workspace_id = w.id
                         WHERE w.name = ?1",
                        [&name],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(db)?
                    .ok_or_else(|| Error::workspace_not_found(&name))?;
                if node_count > 0 && !force {
                    return Err(Error::workspace_not_empty(&name, node_count));
                }
                tx.execute("DELETE FROM workspaces WHERE id = ?1", [id])
                    .map_err(db)?;
                Ok(())
            })
            .await
    }
}
