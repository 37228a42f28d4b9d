//! engram's [`MemoryStore`](engram_domain::MemoryStore) on PostgreSQL with pgvector.
//!
//! [`PgStore::connect`] opens a connection pool from a `postgres://` URL and
//! [`PgStore::migrate`] brings the schema (in `migrations/postgres/`) up to date. Every tool call
//! is one transaction; batches travel as one JSON or array parameter, not one statement per
//! item; graph walks are recursive CTEs.
//!
//! ```no_run
//! # async fn demo() -> engram_domain::Result<()> {
//! use std::sync::Arc;
//! let store = engram_pg::PgStore::connect("postgres://postgres@127.0.0.1/engram").await?;
//! store.migrate().await?;
//! let memory = engram_domain::Memory::new(Arc::new(store));
//! let workspace = memory.create_workspace("demo").await?;
//! # Ok(()) }
//! ```

#[macro_use]
mod transaction;
mod error;
mod graph;
mod hnsw;
mod merge;
mod nodes;
mod observations;
mod relations;
mod search;
mod split;
mod statistics;
#[cfg(feature = "testing")]
pub mod testing;
mod text_query;
mod tokens;
mod transfer;
mod upsert;
mod vectors;
mod workspaces;

use std::str::FromStr;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use engram_domain::{Error, Result};
use tokio_postgres::NoTls;

mod embedded {
    refinery::embed_migrations!("../../migrations/postgres");
}

/// Connections per store unless the URL's options say otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long opening one connection to the server may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Key of the advisory lock that serialises migrations between server processes.
const MIGRATION_LOCK: i64 = 0x656e_6772_616d; // "engram"

/// The PostgreSQL store: a pool of connections. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// What this process knows of the HNSW indexes, and when it builds them.
    hnsw: std::sync::Arc<hnsw::HnswIndexes>,
    /// The full-text statistics searches weigh words by, kept between searches.
    lexeme_shares: std::sync::Arc<text_query::SharesCache>,
    /// Rows written, for keeping the planner's statistics current ([`statistics`]).
    written: std::sync::Arc<statistics::WriteCounter>,
    /// `server HOST:PORT, database NAME`, for errors.
    place: std::sync::Arc<str>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's config holds the password: show only its size.
        f.debug_struct("PgStore")
            .field("pool_size", &self.pool.status().max_size)
            .finish()
    }
}

/// How the connection pool is used right now (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// Connections open.
    pub size: usize,
    /// Of those, idle.
    pub available: usize,
    /// The most it will open.
    pub max_size: usize,
}

impl PgStore {
    /// The pool's connections: open, idle and the most allowed.
    pub fn pool_status(&self) -> PoolStatus {
        let status = self.pool.status();
        PoolStatus {
            size: status.size,
            available: status.available,
            max_size: status.max_size,
        }
    }

    /// Opens a pool of [`DEFAULT_POOL_SIZE`] connections to `url`
    /// (`postgres://user:password@host:port/database`) and checks that one connection works.
    ///
    /// Errors: [`Error::InvalidArgument`] for a malformed URL, [`Error::Unavailable`] when
    /// the server cannot be reached.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, DEFAULT_POOL_SIZE).await
    }

    /// As [`PgStore::connect`], with `pool_size` connections at most.
    pub async fn connect_with(url: &str, pool_size: usize) -> Result<Self> {
        Self::connect_with_limits(url, pool_size, engram_domain::limits::CALL_TIMEOUT).await
    }

    /// As [`PgStore::connect`], with `pool_size` connections at most and `call_timeout` as
    /// each call's time limit: every statement runs under PostgreSQL's `statement_timeout`
    /// (unless the URL's `options` set one), and a call waits that long at most for a pooled
    /// connection. A call past it fails with [`Error::Unavailable`] and changes nothing (its
    /// transaction is rolled back). Connecting to the server is given at most 10 s.
    pub async fn connect_with_limits(
        url: &str,
        pool_size: usize,
        call_timeout: std::time::Duration,
    ) -> Result<Self> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| Error::invalid("database_url", e.to_string()))?;
        let options = config.get_options().unwrap_or_default().to_owned();
        if !options.contains("statement_timeout") {
            let limit = format!("-c statement_timeout={}", call_timeout.as_millis());
            config.options(format!("{options} {limit}").trim());
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let servers = servers(&config);
        let database = config.get_dbname().unwrap_or("default").to_owned();
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .wait_timeout(Some(call_timeout))
            .create_timeout(Some(CONNECT_TIMEOUT.min(call_timeout)))
            .recycle_timeout(Some(CONNECT_TIMEOUT.min(call_timeout)))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| Error::Internal(format!("building the connection pool: {e}")))?;

        let store = Self {
            pool,
            hnsw: std::sync::Arc::default(),
            lexeme_shares: std::sync::Arc::default(),
            written: std::sync::Arc::default(),
            place: format!("server {servers}, database {database}").into(),
        };
        store.ping().await?;
        Ok(store)
    }

    /// A pooled connection. When none can be had the error says which server and database
    /// (the driver's message names neither host nor port).
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool
            .get()
            .await
            .map_err(|error| match error::pool(error) {
                Error::Unavailable(reason) => {
                    Error::Unavailable(format!("{reason} ({})", self.place))
                }
                other => other,
            })
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<()> {
        let client = self.client().await?;
        client.simple_query("SELECT 1").await.map_err(error::db)?;
        Ok(())
    }

    /// Applies the migrations this build embeds that the database lacks, and returns their
    /// names. Safe to run from several processes at once: they take turns on an advisory lock.
    pub async fn migrate(&self) -> Result<Vec<String>> {
        // A migration (or waiting for another process's) may take longer than a call: this
        // connection runs without the limit and leaves the pool, so the setting cannot
        // outlive the migration on any path.
        let mut client = deadpool_postgres::Object::take(self.client().await?);
        client
            .batch_execute("SET statement_timeout = 0")
            .await
            .map_err(error::db)?;
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(error::db)?;
        let outcome = embedded::migrations::runner()
            .run_async(&mut *client)
            .await
            .map_err(|e| error::migration(&e));
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(error::db)?;
        let applied = outcome?
            .applied_migrations()
            .iter()
            .map(ToString::to_string)
            .collect();
        Ok(applied)
    }

    /// Applies the embedded migrations up to `version` only: upgrade tests write a database
    /// the way an older build did, then [`PgStore::migrate`] it. The store's own calls expect
    /// the current schema.
    #[doc(hidden)]
    pub async fn migrate_to(&self, version: i32) -> Result<()> {
        let mut client = deadpool_postgres::Object::take(self.client().await?);
        embedded::migrations::runner()
            .set_target(refinery::Target::Version(version))
            .run_async(&mut *client)
            .await
            .map_err(|e| error::migration(&e))?;
        Ok(())
    }

    /// Whether the observation vectors' HNSW index for `dims` dimensions exists (`None` when
    /// not) and is valid (`Some(false)` while it is being built). The indexer builds it once its
    /// queue is empty; benchmarks and tests wait for it.
    pub async fn hnsw_index_state(&self, dims: i32) -> Result<Option<bool>> {
        hnsw::index_state(&self.client().await?, dims).await
    }

    /// Whether every migration this build embeds has been applied.
    pub async fn is_migrated(&self) -> Result<bool> {
        let client = self.client().await?;
        let migrations = embedded::migrations::runner();
        let latest = (migrations.get_migrations().iter())
            .map(|m| m.version())
            .max();
        let applied: Option<i64> = match client
            .query_one(
                "SELECT max(version)::bigint FROM refinery_schema_history",
                &[],
            )
            .await
        {
            Ok(row) => row.get(0),
            // No history table: never migrated.
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => None,
            Err(e) => return Err(error::db(e)),
        };
        Ok(applied.unwrap_or(0) >= latest.map_or(0, i64::from))
    }

    /// Identifies the schema this build migrates to: every embedded migration's version and
    /// checksum. Equal fingerprints mean equal schemas (tests key their template database on it).
    pub fn schema_fingerprint() -> String {
        embedded::migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| format!("V{}:{:x}", m.version(), m.checksum()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The pool underneath, for callers that run their own queries (tests, tooling).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// `host:port` of each server `config` names, for messages; `default` when it names none.
fn servers(config: &tokio_postgres::Config) -> String {
    // libpq's rule: one port for every host, or one port per host.
    let port = |index: usize| match config.get_ports() {
        [one] => *one,
        ports => ports.get(index).copied().unwrap_or(5432),
    };
    let servers: Vec<String> = (config.get_hosts().iter().enumerate())
        .map(|(index, host)| (host, port(index)))
        .map(|(host, port)| match host {
            tokio_postgres::config::Host::Tcp(host) => format!("{host}:{port}"),
            tokio_postgres::config::Host::Unix(path) => format!("{}:{port}", path.display()),
        })
        .chain(
            config
                .get_hostaddrs()
                .iter()
                .enumerate()
                .map(|(i, a)| format!("{a}:{}", port(i))),
        )
        .collect();
    if servers.is_empty() {
        "default".to_owned()
    } else {
        servers.join(", ")
    }
}
