//! Names held while a transaction decides who owns them. Node names and aliases share one
//! namespace per workspace (an alias never equals a node's name), but they live in two
//! tables, so no constraint of the schema keeps them apart: two transactions that each found
//! a name free (`set_aliases` making it an alias, `create_entities` making it a node) could
//! both commit. Every write that makes a name taken first locks it here, so such checks run
//! one after the other.

use deadpool_postgres::GenericClient;
use engram_domain::{Result, WorkspaceId};

use crate::error::db;

/// Locks each of `names` in `workspace` until the transaction ends (a transaction-level
/// advisory lock keyed by a 64-bit hash of workspace and name, taken in key order so that two
/// callers never wait for each other in a circle).
pub(crate) async fn lock_names(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    names: &[&str],
) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    client
        .execute(
            "SELECT pg_advisory_xact_lock(k)
             FROM (SELECT DISTINCT hashtextextended(n, $1) AS k
                   FROM unnest($2::text[]) AS n ORDER BY 1) AS keys",
            &[&workspace.0, &names],
        )
        .await
        .map_err(db)?;
    Ok(())
}
