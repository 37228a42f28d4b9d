//! Access tokens ([`engram_domain::auth`]): create, list, look up, revoke.

use async_trait::async_trait;
use engram_domain::auth::{Access, NewToken, TokenInfo};
use engram_domain::*;
use engram_domain::{Error, Result, WorkspaceId};
use rusqlite::{OptionalExtension, Row, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::query;
use crate::{micros, timestamp};

const COLUMNS: &str = "t.id, w.name AS workspace, t.workspace_id, t.read_only, t.label, \
                       t.created_at, t.expires_at, t.revoked_at, t.secret_hash";

fn info(row: &Row<'_>) -> rusqlite::Result<TokenInfo> {
    Ok(TokenInfo {
        id: row.get("id")?,
        workspace: row.get("workspace")?,
        workspace_id: WorkspaceId(row.get("workspace_id")?),
        access: if row.get("read_only")? {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        },
        label: row.get("label")?,
        created_at: timestamp(row.get("created_at")?),
        expires_at: row.get::<_, Option<i64>>("expires_at")?.map(timestamp),
        revoked_at: row.get::<_, Option<i64>>("revoked_at")?.map(timestamp),
    })
}

pub(crate) fn lookup(tx: &Transaction<'_>, id: &str) -> Result<Option<(TokenInfo, Vec<u8>)>> {
    tx.query_row(
        &format!(
            "SELECT {COLUMNS} FROM tokens t JOIN workspaces w ON w.id = t.workspace_id
             WHERE t.id = ?1"
        ),
        [id],
        |row| Ok((info(row)?, row.get("secret_hash")?)),
    )
    .optional()
    .map_err(db)
}

#[async_trait]
impl TokenStore for SqliteStore {
    #[instrument(skip_all)]
    async fn create_token(&self, token: &NewToken) -> Result<TokenInfo> {
        let token = token.clone();
        self.pool
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO tokens (id, workspace_id, secret_hash, read_only, label, created_at,
                                         expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, engram_now(), ?6)",
                    params![
                        token.id,
                        token.workspace.0,
                        token.secret_hash,
                        token.access == Access::ReadOnly,
                        token.label,
                        token.expires_at.map(micros),
                    ],
                )
                .map_err(db)?;
                Ok(lookup(tx, &token.id)?.expect("inserted above").0)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<TokenInfo>> {
        self.pool
            .read(move |tx| {
                query(
                    tx,
                    &format!(
                        "SELECT {COLUMNS} FROM tokens t JOIN workspaces w ON w.id = t.workspace_id
                         WHERE ?1 IS NULL OR t.workspace_id = ?1
                         ORDER BY w.name, t.created_at, t.id"
                    ),
                    [workspace.map(|w| w.0)],
                    info,
                )
            })
            .await
    }

    #[instrument(skip_all)]
    async fn token(&self, id: &str) -> Result<Option<(TokenInfo, Vec<u8>)>> {
        let id = id.to_owned();
        self.pool.read(move |tx| lookup(tx, &id)).await
    }

    #[instrument(skip_all)]
    async fn revoke_token(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        self.pool
            .write(move |tx| {
                // Kept, marked: `token list` shows it as revoked. Revoked already counts as not
                // found.
                let revoked = tx
                    .execute(
                        "UPDATE tokens SET revoked_at = engram_now() WHERE id = ?1 AND revoked_at IS NULL",
                        [&id],
                    )
                    .map_err(db)?;
                if revoked == 0 {
                    return Err(Error::token_not_found(id));
                }
                Ok(())
            })
            .await
    }
}
