//! Access tokens ([`engram_domain::auth`]): create, list, look up, revoke.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::auth::{Access, NewToken, TokenInfo};
use engram_domain::*;
use engram_domain::{Error, Result, WorkspaceId};
use tokio_postgres::Row;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

const COLUMNS: &str = "t.id, w.name AS workspace, t.workspace_id, t.read_only, t.label, \
                       t.created_at, t.expires_at, t.revoked_at, t.secret_hash";

fn info(row: &Row) -> TokenInfo {
    TokenInfo {
        id: row.get("id"),
        workspace: row.get("workspace"),
        workspace_id: WorkspaceId(row.get("workspace_id")),
        access: if row.get("read_only") {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        },
        label: row.get("label"),
        created_at: row.get("created_at"),
        expires_at: row.get("expires_at"),
        revoked_at: row.get("revoked_at"),
    }
}

pub(crate) async fn lookup(
    client: &impl GenericClient,
    id: &str,
) -> Result<Option<(TokenInfo, Vec<u8>)>> {
    let row = client
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM tokens t JOIN workspaces w ON w.id = t.workspace_id
                 WHERE t.id = $1"
            ),
            &[&id],
        )
        .await
        .map_err(db)?;
    Ok(row.map(|row| (info(&row), row.get("secret_hash"))))
}

#[async_trait]
impl TokenStore for PgStore {
    #[instrument(skip_all)]
    async fn create_token(&self, token: &NewToken) -> Result<TokenInfo> {
        write!(self, |tx| async {
            tx.execute(
                "INSERT INTO tokens (id, workspace_id, secret_hash, read_only, label, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &token.id,
                    &token.workspace.0,
                    &token.secret_hash,
                    &(token.access == Access::ReadOnly),
                    &token.label,
                    &token.expires_at,
                ],
            )
            .await
            .map_err(db)?;
            Ok(lookup(&tx, &token.id).await?.expect("inserted above").0)
        })
    }

    #[instrument(skip_all)]
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<TokenInfo>> {
        read!(self, |tx| async {
            let rows = tx
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM tokens t JOIN workspaces w ON w.id = t.workspace_id
                         WHERE $1::bigint IS NULL OR t.workspace_id = $1
                         ORDER BY w.name, t.created_at, t.id"
                    ),
                    &[&workspace.map(|w| w.0)],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(info).collect())
        })
    }

    #[instrument(skip_all)]
    async fn token(&self, id: &str) -> Result<Option<(TokenInfo, Vec<u8>)>> {
        // Not `read!`: one statement on a pooled connection, no transaction round trips.
        single!(self, |client| lookup(&client, id))
    }

    #[instrument(skip_all)]
    async fn revoke_token(&self, id: &str) -> Result<()> {
        write!(self, |tx| async {
            // Kept, marked: `token list` shows it as revoked. Revoked already counts as not
            // found.
            let revoked = tx
                .execute(
                    "UPDATE tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL",
                    &[&id],
                )
                .await
                .map_err(db)?;
            if revoked == 0 {
                return Err(Error::token_not_found(id));
            }
            Ok(())
        })
    }
}
