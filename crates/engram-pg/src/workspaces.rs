//! Workspace management: create, look up, list, rename, delete.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use engram_domain::{Error, Result, Workspace, WorkspaceId, WorkspaceInfo};
use tokio_postgres::Row;
use tracing::instrument;

use crate::PgStore;
use crate::error::{db, taken_or_db};

const NAME_TAKEN: &str = "workspaces_name_key";

fn workspace(row: &Row) -> Workspace {
    Workspace {
        id: WorkspaceId(row.get("id")),
        name: row.get("name"),
        created_at: row.get("created_at"),
    }
}

#[async_trait]
impl WorkspaceStore for PgStore {
    async fn schema_current(&self) -> Result<bool> {
        // Not `read!`: a store never migrated has no history table, and the failed query
        // would abort the transaction `is_migrated` (also public) does not expect.
        opened!();
        self.is_migrated().await
    }

    #[instrument(skip_all)]
    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        write!(self, |tx| async {
            let row = tx
                .query_one(
                    "INSERT INTO workspaces (name) VALUES ($1) RETURNING id, name, created_at",
                    &[&name],
                )
                .await
                .map_err(|e| taken_or_db(e, NAME_TAKEN, || Error::workspace_taken(name)))?;
            let workspace = workspace(&row);
            crate::vectors::seed_perspectives(&tx, workspace.id.0).await?;
            Ok(workspace)
        })
    }

    #[instrument(skip_all)]
    async fn workspace(&self, name: &str) -> Result<Workspace> {
        // Not `read!`: every tool call resolves its workspace, one statement needs no
        // transaction round trips.
        single!(self, |client| async {
            // Prepared once per connection, not per call (directly to PostgreSQL).
            let statement = client
                .prepare_cached("SELECT id, name, created_at FROM workspaces WHERE name = $1")
                .await
                .map_err(db)?;
            let row = client.query_opt(&statement, &[&name]).await.map_err(db)?;
            row.map(|row| workspace(&row))
                .ok_or_else(|| Error::workspace_not_found(name))
        })
    }

    #[instrument(skip_all)]
    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT w.id, w.name, w.created_at,
                            (SELECT count(*) FROM nodes n WHERE n.workspace_id = w.id) AS node_count
                     FROM workspaces w ORDER BY w.name",
                    &[],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|row| WorkspaceInfo {
                    workspace: workspace(row),
                    node_count: row.get("node_count"),
                })
                .collect())
        })
    }

    #[instrument(skip_all)]
    async fn rename_workspace(&self, request: &Checked<RenameWorkspace>) -> Result<Workspace> {
        let (name, new_name) = (request.name.as_str(), request.new_name.as_str());
        write!(self, |tx| async {
            let row = tx
                .query_opt(
                    "UPDATE workspaces SET name = $2 WHERE name = $1
                     RETURNING id, name, created_at",
                    &[&name, &new_name],
                )
                .await
                .map_err(|e| taken_or_db(e, NAME_TAKEN, || Error::workspace_taken(new_name)))?;
            row.map(|row| workspace(&row))
                .ok_or_else(|| Error::workspace_not_found(name))
        })
    }

    #[instrument(skip_all)]
    async fn delete_workspace(&self, request: &Checked<DeleteWorkspace>) -> Result<()> {
        let (name, force) = (request.name.as_str(), request.force);
        write!(self, |tx| async {
            let row = tx
                .query_opt(
                    "SELECT w.id,
                            (SELECT count(*) FROM nodes n WHERE n.workspace_id = w.id) AS node_count
                     FROM workspaces w WHERE w.name = $1 FOR UPDATE",
                    &[&name],
                )
                .await
                .map_err(db)?
                .ok_or_else(|| Error::workspace_not_found(name))?;
            let node_count: i64 = row.get("node_count");
            if node_count > 0 && !force {
                return Err(Error::workspace_not_empty(name, node_count));
            }
            let id: i64 = row.get("id");
            tx.execute("DELETE FROM workspaces WHERE id = $1", &[&id])
                .await
                .map_err(db)?;
            Ok(())
        })
    }
}
