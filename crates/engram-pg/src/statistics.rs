//! Keeping the planner's statistics current after bulk writes. A burst of writes leaves them
//! describing a far smaller table until autovacuum comes round (a minute or more), and searches
//! planned on them scan every row (measured: 33 ms instead of 3 ms for a one-word search right
//! after loading 30,000 observations). So the store counts the rows it writes and, every
//! [`CHECK_EVERY_ROWS`], looks in the background whether a table changed by more than a fifth
//! since its last analysis, and analyzes it then. The same look folds the workspaces' kept
//! counts ([`fold_counts`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use deadpool_postgres::{GenericClient, Pool};
use engram_domain::Result;

use crate::error::db;

/// Rows written or deleted by this process between two looks at the statistics.
pub(crate) const CHECK_EVERY_ROWS: u64 = 2_000;

/// Rows written since the last look, and whether a look is under way.
#[derive(Default)]
pub(crate) struct WriteCounter {
    rows: AtomicU64,
    checking: AtomicBool,
}

impl WriteCounter {
    /// Counts `rows` written; every [`CHECK_EVERY_ROWS`] starts one background look (and
    /// analysis when due) on a pooled connection. Never delays the write that triggers it.
    pub(crate) fn wrote(self: &Arc<Self>, rows: usize, pool: &Pool) {
        let rows = rows as u64;
        let before = self.rows.fetch_add(rows, Ordering::Relaxed);
        if (before + rows) / CHECK_EVERY_ROWS == before / CHECK_EVERY_ROWS {
            return;
        }
        if self.checking.swap(true, Ordering::AcqRel) {
            return;
        }
        let (counter, pool) = (self.clone(), pool.clone());
        tokio::spawn(async move {
            let outcome = async {
                let client = pool.get().await.map_err(crate::error::pool)?;
                fold_counts(&client).await?;
                refresh(&client).await
            }
            .await;
            if let Err(error) = outcome {
                tracing::debug!(%error, "refreshing the planner's statistics failed");
            }
            counter.checking.store(false, Ordering::Release);
        });
    }
}

/// Folds each workspace's kept counts (table `workspace_counts`, one delta row per write
/// statement, migration V6) into one row, so that `get_stats` sums a handful of rows however
/// much was written. Deletes and inserts in one statement: a concurrent fold skips the rows
/// this one deleted, and readers see the rows before or after, never both. Returns how many
/// workspaces' counts it folded.
pub(crate) async fn fold_counts(client: &impl GenericClient) -> Result<u64> {
    client
        .execute(
            "WITH folded AS (DELETE FROM workspace_counts
                             RETURNING workspace_id, nodes, observations, relations)
             INSERT INTO workspace_counts (workspace_id, nodes, observations, relations)
             SELECT workspace_id, sum(nodes), sum(observations), sum(relations)
             FROM folded GROUP BY workspace_id",
            &[],
        )
        .await
        .map_err(db)
}

/// Analyzes the graph's tables (`nodes`, `observations`, `relations`) when `nodes` or
/// `observations` changed by more than a fifth (and at least 1,000 rows) since the last
/// analysis or `observations` holds rows but was never analyzed (a first import: until then
/// full-text ranking weighs every word alike, see `text_query`, and plans assume an empty
/// table), and `embeddings` on the same terms (without it a search after a bulk load walks the
/// `(workspace, model, perspective)` index and sorts every vector instead of the HNSW index);
/// `reltuples` and the tables themselves tell a first load at once, where the statistics views
/// lag behind the writes. Returns whether it analyzed any.
pub(crate) async fn refresh(client: &impl GenericClient) -> Result<bool> {
    // One row: whether the graph's tables are due (analyzed together, as before the vectors
    // counted), and whether the vectors are. "Never analyzed but holds rows" is asked of the
    // tables themselves: the statistics views lag behind the writes.
    let row = client
        .query_one(
            "SELECT
               (SELECT coalesce(bool_or(n_mod_since_analyze > greatest(1000, 0.2 * n_live_tup)),
                                false)
                FROM pg_stat_user_tables WHERE relname IN ('nodes', 'observations'))
               OR ((SELECT reltuples < 0 FROM pg_class WHERE oid = 'observations'::regclass)
                   AND EXISTS (SELECT 1 FROM observations)),
               (SELECT coalesce(bool_or(n_mod_since_analyze > greatest(1000, 0.2 * n_live_tup)),
                                false)
                FROM pg_stat_user_tables WHERE relname = 'embeddings')
               OR ((SELECT reltuples < 0 FROM pg_class WHERE oid = 'embeddings'::regclass)
                   AND EXISTS (SELECT 1 FROM embeddings))",
            &[],
        )
        .await
        .map_err(db)?;
    let mut stale: Vec<String> = Vec::new();
    if row.get::<_, bool>(0) {
        stale.extend(["nodes", "observations", "relations"].map(String::from));
    }
    if row.get::<_, bool>(1) {
        stale.push("embeddings".to_owned());
    }
    if !stale.is_empty() {
        analyze(client, &stale).await?;
    }
    Ok(!stale.is_empty())
}

/// `ANALYZE` of `tables` (names of engram's own tables).
pub(crate) async fn analyze(client: &impl GenericClient, tables: &[String]) -> Result<()> {
    client
        .batch_execute(&format!("ANALYZE {}", tables.join(", ")))
        .await
        .map_err(db)
}
