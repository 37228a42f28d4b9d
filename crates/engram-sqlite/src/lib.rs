//! engram's [`MemoryStore`](engram_domain::MemoryStore) on SQLite: one file, nothing to
//! install. Full text through FTS5, vectors through sqlite-vec, graph walks as recursive CTEs.
//!
//! [`SqliteStore::open`] creates the file (and its directory) when missing and brings the
//! schema (in `migrations/sqlite/`) up to date. Every tool call is one transaction, run on
//! tokio's blocking threads: writes on the one writer connection (`BEGIN IMMEDIATE`), reads on
//! a small pool of reader connections, which write-ahead logging lets run beside the writer.
//!
//! ```no_run
//! # async fn demo() -> engram_domain::Result<()> {
//! use std::sync::Arc;
//! let store = engram_sqlite::SqliteStore::open("/var/lib/engram/engram.db").await?;
//! let memory = engram_domain::Memory::new(Arc::new(store));
//! let workspace = memory.create_workspace("demo").await?;
//! # Ok(()) }
//! ```

mod access;
pub mod backup;
mod connection;
mod consolidation;
mod error;
mod graph;
mod history;
mod merge;
mod nodes;
mod observations;
mod reflections;
mod relations;
mod search;
mod split;
mod sql;
mod stats;
mod suggestions;
mod tokens;
mod transfer;
mod upsert;
mod validity;
mod vector_lists;
mod vectors;
mod vocabulary;
mod workspaces;

use std::path::Path;
use std::sync::Arc;

use engram_domain::{Error, Result, Timestamp};

use crate::connection::Pool;

mod embedded {
    refinery::embed_migrations!("../../migrations/sqlite");
}

/// Reader connections per store unless [`SqliteStore::open_with`] says otherwise.
pub const DEFAULT_READERS: usize = 4;

/// The SQLite store: one writer connection and a pool of readers on one database file.
/// Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    pool: Arc<Pool>,
    /// The inverted files over large perspectives' vectors ([`vector_lists`]).
    lists: Arc<vector_lists::VectorLists>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.pool.path())
            .finish()
    }
}

impl SqliteStore {
    /// Opens the database file at `path` with [`DEFAULT_READERS`] reader connections,
    /// creating the file and its parent directories when missing, and applies the migrations
    /// it lacks.
    ///
    /// Errors: [`Error::Unavailable`] when the file cannot be created or opened (permissions,
    /// a full disk, another process holding a lock past the busy timeout of 5 s),
    /// [`Error::Internal`] when it is not an engram database or a migration fails.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, DEFAULT_READERS).await
    }

    /// As [`SqliteStore::open`], with `readers` reader connections (at least one); reads beyond
    /// that many at once wait for a free connection. Writes always go through the one writer
    /// connection, one at a time, as SQLite allows.
    pub async fn open_with(path: impl AsRef<Path>, readers: usize) -> Result<Self> {
        let store = Self::opened(path, readers).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// The database at `path` (created with its folder where missing) as it is, unmigrated.
    async fn opened(path: impl AsRef<Path>, readers: usize) -> Result<Self> {
        let path = path.as_ref().to_owned();
        let pool = tokio::task::spawn_blocking(move || {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    Error::Unavailable(format!("creating {}: {e}", parent.display()))
                })?;
            }
            Pool::open(&path, readers)
        })
        .await
        .map_err(error::join)??;
        Ok(Self {
            pool: Arc::new(pool),
            lists: Arc::default(),
        })
    }

    /// Sets each call's time limit (default [`engram_domain::limits::CALL_TIMEOUT`]): waiting for the
    /// writer or a reader connection, for another process's lock, and running the call's
    /// statements all count; a call past it fails with [`Error::Unavailable`] and changes
    /// nothing (its transaction is rolled back). Applies to every clone of this store.
    #[must_use]
    pub fn with_call_timeout(self, timeout: std::time::Duration) -> Self {
        self.pool.set_call_timeout(timeout);
        self
    }

    /// Opens (or creates) the database at `path` with the embedded migrations applied up to
    /// `version` only: upgrade tests write a database the way an older build did, then open it
    /// with [`SqliteStore::open`]. The store's own calls expect the current schema.
    #[doc(hidden)]
    pub async fn open_at_version(path: impl AsRef<Path>, version: i32) -> Result<Self> {
        let store = Self::opened(path, 1).await?;
        store
            .pool
            .with_writer(move |conn| {
                embedded::migrations::runner()
                    .set_target(refinery::Target::Version(version))
                    .run(conn)
                    .map_err(|e| error::migration(&e))?;
                Ok(())
            })
            .await?;
        Ok(store)
    }

    /// Applies the migrations this build embeds that the database lacks, and returns their
    /// names (`V1__graph`; empty when the schema was current). [`SqliteStore::open`] already
    /// does this; each migration is one transaction.
    ///
    /// Errors: [`Error::Internal`] with SQLite's message when a migration fails (the database
    /// keeps the migrations applied before it), or when the database was migrated by a newer
    /// build.
    pub async fn migrate(&self) -> Result<Vec<String>> {
        self.pool
            .with_writer(|conn| {
                let report = embedded::migrations::runner()
                    .run(conn)
                    .map_err(|e| error::migration(&e))?;
                Ok(report
                    .applied_migrations()
                    .iter()
                    .map(ToString::to_string)
                    .collect())
            })
            .await
    }

    /// Whether every migration this build embeds has been applied.
    ///
    /// Errors: [`Error::Unavailable`] when the file cannot be read.
    pub async fn is_migrated(&self) -> Result<bool> {
        let migrations = embedded::migrations::runner();
        let latest = (migrations.get_migrations().iter())
            .map(|m| m.version())
            .max();
        let applied = self
            .pool
            .read(|tx| {
                let has_history: bool = tx
                    .query_row(
                        "SELECT EXISTS (SELECT 1 FROM sqlite_master
                                        WHERE type = 'table' AND name = 'refinery_schema_history')",
                        [],
                        |row| row.get(0),
                    )
                    .map_err(error::db)?;
                if !has_history {
                    return Ok(0);
                }
                tx.query_row(
                    "SELECT coalesce(max(version), 0) FROM refinery_schema_history",
                    [],
                    |row| row.get::<_, i64>(0),
                )
                .map_err(error::db)
            })
            .await?;
        Ok(applied >= latest.map_or(0, i64::from))
    }

    /// Gives a perspective an inverted file over its vectors from `vectors` vectors of a
    /// model on, instead of 20,000 (for tests and benchmarks of the inverted file at small
    /// sizes).
    #[must_use]
    pub fn with_vector_lists_from(self, vectors: i64) -> Self {
        self.lists.set_lists_from(vectors);
        self
    }

    /// Starts no build of inverted files from searches, for a short-lived command that only
    /// reads (`engram recall`): a build it started would be abandoned when it exits, and hold
    /// up other builders until it counts as abandoned. Saving vectors still looks for due
    /// builds.
    #[must_use]
    pub fn reading_only(self) -> Self {
        self.lists.reading_only();
        self
    }

    /// Looks for due inverted files at most every `every` (30 s by default) while vectors are
    /// saved or searched (tests).
    #[must_use]
    pub fn with_vector_list_checks_every(self, every: std::time::Duration) -> Self {
        self.lists.check_every(every);
        self
    }

    /// Builds now the inverted files that are due, and waits for those another builder (a
    /// server on the same file) is at; the number this call built. They are otherwise built
    /// in the background, looked for at most every 30 seconds while vectors are saved or
    /// searched. Errors: the store's, as any call.
    pub async fn build_vector_lists(&self) -> Result<usize> {
        let mut built = 0;
        loop {
            built += self.lists.build_due(&self.pool).await?;
            if !self.lists.unsettled(&self.pool).await? {
                return Ok(built);
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    }

    /// The database file (SQLite keeps `-wal` and `-shm` files beside it).
    pub fn path(&self) -> &Path {
        self.pool.path()
    }
}

/// A stored time (microseconds since the Unix epoch, UTC) as a [`Timestamp`].
pub(crate) fn timestamp(micros: i64) -> Timestamp {
    Timestamp::from_timestamp_micros(micros).unwrap_or_default()
}

/// A [`Timestamp`] as stored.
pub(crate) fn micros(time: Timestamp) -> i64 {
    time.timestamp_micros()
}
