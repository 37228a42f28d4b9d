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
mod access;
mod authorship;
mod connection;
mod consolidation;
mod error;
mod graph;
mod history;
mod hnsw;
mod merge;
mod name_locks;
mod nodes;
mod observations;
mod reflections;
mod relations;
mod replica;
mod search;
mod split;
mod statistics;
mod stats;
mod suggestions;
#[cfg(feature = "testing")]
pub mod testing;
mod text_query;
mod tokens;
mod transfer;
mod upsert;
mod validity;
mod vectors;
mod vocabulary;
mod workspaces;

use deadpool_postgres::Pool;
use engram_domain::{Error, Result};

pub use connection::PgOptions;
pub use replica::ReplicaStatus;

mod embedded {
    refinery::embed_migrations!("../../migrations/postgres");
}

/// Connections per store unless the URL's options say otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// Key of the advisory lock that serialises migrations between server processes.
const MIGRATION_LOCK: i64 = 0x656e_6772_616d; // "engram"

/// The PostgreSQL store: a pool of connections. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    /// Every call's transactions (through a transaction pooler when `pooled`).
    pool: Pool,
    /// Migrations, index builds and statistics: the direct pool, or `pool` itself.
    direct: Pool,
    /// `pool` leads to a transaction pooler ([`connection`]).
    pooled: bool,
    /// Each call's time limit, set per transaction when `pooled`.
    call_timeout: std::time::Duration,
    /// The read replica, when there is one.
    replica: Option<std::sync::Arc<replica::Replica>>,
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
        let options = PgOptions {
            pool_size,
            call_timeout,
            ..PgOptions::default()
        };
        Self::open(url, &options).await
    }

    /// Opens the store at `url` as `options` say: through a transaction pooler when
    /// [`PgOptions::direct_url`] is given, reading on [`PgOptions::read_replica_url`] when
    /// given (module docs of each in the crate's source: `connection.rs`, `replica.rs`). Checks
    /// that the main connection works; the others are made when first needed.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the malformed URL's field,
    /// [`Error::Unavailable`] when the server cannot be reached.
    pub async fn open(url: &str, options: &PgOptions) -> Result<Self> {
        let pooled = options.direct_url.is_some();
        let main = connection::pool(
            "database_url",
            url,
            options.pool_size,
            options.call_timeout,
            pooled,
        )?;
        let direct = match &options.direct_url {
            Some(direct_url) => connection::direct_pool(direct_url, options.call_timeout)?.pool,
            None => main.pool.clone(),
        };
        let replica = match &options.read_replica_url {
            Some(replica_url) => {
                let built = connection::pool(
                    "read_replica_url",
                    replica_url,
                    options.pool_size,
                    options.call_timeout,
                    pooled,
                )?;
                // Refused at once when what answers there is not a standby of this database;
                // one that cannot be reached now is checked again before its first read.
                match replica::same_database(&main.pool, &built.pool).await {
                    Err(error @ Error::InvalidArgument { .. }) => return Err(error),
                    Err(error) => tracing::warn!(%error, "the read replica cannot be checked yet"),
                    Ok(()) => {}
                }
                Some(std::sync::Arc::new(replica::Replica::new(
                    built.pool,
                    options.replica_max_lag,
                )))
            }
            None => None,
        };
        let store = Self {
            pool: main.pool,
            direct,
            pooled,
            call_timeout: options.call_timeout,
            replica,
            hnsw: std::sync::Arc::default(),
            lexeme_shares: std::sync::Arc::default(),
            written: std::sync::Arc::default(),
            place: main.place.into(),
        };
        store.ping().await?;
        Ok(store)
    }

    /// What the read replica has done, when there is one.
    pub fn replica_status(&self) -> Option<ReplicaStatus> {
        self.replica.as_ref().map(|replica| replica.status())
    }

    /// Where a read-only call runs: a replica connection caught up with every acknowledged
    /// write, or a primary one.
    pub(crate) async fn reader(&self) -> Result<replica::Reader> {
        if let Some(replica) = &self.replica
            && let Some(client) = replica.caught_up(&self.pool).await
        {
            return Ok(replica::Reader {
                client,
                on_replica: true,
            });
        }
        self.primary_reader().await
    }

    /// A read-only call on the primary.
    pub(crate) async fn primary_reader(&self) -> Result<replica::Reader> {
        Ok(replica::Reader {
            client: self.client().await?,
            on_replica: false,
        })
    }

    /// A read-only call failed on the replica (it runs again on the primary).
    pub(crate) fn replica_failed(&self, error: &Error) {
        if let Some(replica) = &self.replica {
            replica.failed(error);
        }
    }

    /// Whether the main pool leads to a transaction pooler.
    pub(crate) fn pooled(&self) -> bool {
        self.pooled
    }

    /// What a transaction needs first, in one round trip: through a pooler, its time limit;
    /// when it `writes`, its author ([`authorship::setting`]).
    pub(crate) async fn begun(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        writes: bool,
    ) -> Result<()> {
        let limit = (self.pooled).then(|| {
            let millis = self.call_timeout.as_millis();
            format!("SET LOCAL statement_timeout = {millis}")
        });
        let author = writes.then(authorship::setting).flatten();
        let settings: Vec<String> = limit.into_iter().chain(author).collect();
        if !settings.is_empty() {
            tx.batch_execute(&settings.join("; "))
                .await
                .map_err(error::db)?;
        }
        Ok(())
    }

    /// What a transaction does last before it commits: through a pooler, it closes the
    /// statements it prepared, on the server connection that holds them.
    pub(crate) fn finishing(&self, tx: &deadpool_postgres::Transaction<'_>) {
        if self.pooled {
            tx.statement_cache.clear();
        }
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

    /// A connection of the direct pool (migrations, index builds, statistics).
    pub(crate) async fn direct_client(&self) -> Result<deadpool_postgres::Object> {
        self.direct.get().await.map_err(error::pool)
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
        let mut client = deadpool_postgres::Object::take(self.direct_client().await?);
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
        // Through a pooler, connections made before pgvector existed learned no types.
        if self.pooled {
            self.pool.retain(|_, _| false);
        }
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
        let mut client = deadpool_postgres::Object::take(self.direct_client().await?);
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
        hnsw::index_state(&self.direct_client().await?, dims).await
    }

    /// Whether every migration this build embeds has been applied.
    pub async fn is_migrated(&self) -> Result<bool> {
        let client = self.client().await?;
        let migrations = embedded::migrations::runner();
        let latest = (migrations.get_migrations().iter())
            .map(|m| m.version())
            .max();
        // A simple query: one message, which a transaction pooler passes whole to one server.
        let applied: Option<i64> = match client
            .simple_query("SELECT max(version)::text FROM refinery_schema_history")
            .await
        {
            Ok(messages) => messages.iter().find_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
                _ => None,
            }),
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
