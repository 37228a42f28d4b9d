//! How the store reaches PostgreSQL: its pools, and what each connection needs before use.
//!
//! Three routes, of which only the first is required:
//! - the **main pool** (`database_url`), every call's transactions. Directly to PostgreSQL it
//!   sets `statement_timeout` as a startup option and keeps each connection's prepared
//!   statements. Through a **transaction pooler** (PgBouncer with `pool_mode = transaction`,
//!   which hands each transaction to whichever server connection is free) it can do neither:
//!   the pooler refuses startup options, and a statement prepared in one transaction does not
//!   exist in the next one's server connection. So, when [`PgOptions::direct_url`] is given,
//!   the main pool is taken to be such a pooler: each transaction sets its own time limit
//!   (`SET LOCAL`), the statements it prepared are closed before it commits, single statements
//!   run in a transaction of their own, and each new connection learns pgvector's types once
//!   (and deallocates the statement that asked), so no later call needs a prepared statement
//!   from an earlier one.
//! - the **direct pool** (`direct_url`, two connections): migrations, HNSW index builds and
//!   the planner's statistics, which hold session state (advisory locks, `SET`, `CREATE INDEX
//!   CONCURRENTLY` outside a transaction). Without a pooler it is the main pool. This is the
//!   split Prisma's `directUrl` makes.
//! - the **read replica** (`read_replica_url`): see [`crate::replica`].

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use engram_domain::{Error, Result};
use tokio_postgres::NoTls;

/// How long opening one connection to the server may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections of the direct pool: a migration and an index build or statistics refresh.
const DIRECT_POOL_SIZE: usize = 2;

/// Where and how [`crate::PgStore::open`] connects.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Connections per pool at most (main and replica). Default [`crate::DEFAULT_POOL_SIZE`].
    pub pool_size: usize,
    /// Each call's time limit: its statements run under `statement_timeout` and it waits at
    /// most this long for a pooled connection. Default [`engram_domain::limits::CALL_TIMEOUT`].
    pub call_timeout: Duration,
    /// A direct connection to the primary (`postgres://…`), for migrations, index builds and
    /// statistics. Given, it marks the main URL as a transaction pooler (module docs).
    pub direct_url: Option<String>,
    /// A streaming replica for reads and searches (module [`crate::replica`]).
    pub read_replica_url: Option<String>,
    /// How long the replica may stay behind the primary before it is left alone for a while
    /// (its reads go to the primary meanwhile). Default 5 s.
    pub replica_max_lag: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            pool_size: crate::DEFAULT_POOL_SIZE,
            call_timeout: engram_domain::limits::CALL_TIMEOUT,
            direct_url: None,
            read_replica_url: None,
            replica_max_lag: Duration::from_secs(5),
        }
    }
}

/// A pool and, for messages, `server HOST:PORT, database NAME`.
pub(crate) struct Built {
    pub pool: Pool,
    pub place: String,
}

/// Builds a pool of at most `size` connections to `url`. `pooled`: `url` is a transaction
/// pooler (no startup options; each connection learns pgvector's types when made).
///
/// Errors: [`Error::InvalidArgument`] naming `field` for a malformed URL.
pub(crate) fn pool(
    field: &str,
    url: &str,
    size: usize,
    call_timeout: Duration,
    pooled: bool,
) -> Result<Built> {
    let mut config =
        tokio_postgres::Config::from_str(url).map_err(|e| Error::invalid(field, e.to_string()))?;
    let options = config.get_options().unwrap_or_default().to_owned();
    if !pooled && !options.contains("statement_timeout") {
        let limit = format!("-c statement_timeout={}", call_timeout.as_millis());
        config.options(format!("{options} {limit}").trim());
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    let place = format!(
        "server {}, database {}",
        crate::servers(&config),
        config.get_dbname().unwrap_or("default")
    );
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let mut builder = Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(call_timeout))
        .create_timeout(Some(CONNECT_TIMEOUT.min(call_timeout)))
        .recycle_timeout(Some(CONNECT_TIMEOUT.min(call_timeout)))
        .runtime(deadpool_postgres::Runtime::Tokio1);
    if pooled {
        builder = builder.post_create(deadpool_postgres::Hook::async_fn(|client, _| {
            Box::pin(async move {
                learn_types(client)
                    .await
                    .map_err(deadpool_postgres::HookError::Backend)
            })
        }));
    }
    let pool = builder
        .build()
        .map_err(|e| Error::Internal(format!("building the connection pool: {e}")))?;
    Ok(Built { pool, place })
}

/// The direct pool for `direct_url`.
pub(crate) fn direct_pool(url: &str, call_timeout: Duration) -> Result<Built> {
    pool("direct_url", url, DIRECT_POOL_SIZE, call_timeout, false)
}

/// Types with no fixed OID that engram's statements send or read. The driver asks the server
/// for each one's description the first time it meets it, with a prepared statement that it
/// keeps for later questions.
const LEARNED_TYPES: &str = "SELECT NULL::vector, NULL::vector[]";

/// Has a new connection through a pooler learn [`LEARNED_TYPES`] in one transaction, then drops
/// the statement the driver asked with, so no server connection keeps a statement of this one
/// (another process's driver may later prepare one of the same name there). Before the
/// migrations have created pgvector there is nothing to learn: [`crate::PgStore::migrate`]
/// renews the pool's connections afterwards.
async fn learn_types(
    client: &mut deadpool_postgres::ClientWrapper,
) -> std::result::Result<(), tokio_postgres::Error> {
    client.batch_execute("BEGIN").await?;
    // The statement is closed (dropped) inside the transaction, on its server connection.
    let learned = client.prepare(LEARNED_TYPES).await.map(drop);
    client.batch_execute("DEALLOCATE ALL").await.ok();
    client.batch_execute("COMMIT").await?;
    match learned {
        Err(error) if error.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_OBJECT) => {
            Ok(())
        }
        other => other,
    }
}
