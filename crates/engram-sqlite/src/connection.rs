//! Connections: one writer and a small pool of readers on one database file, each set up the
//! same way (WAL, foreign keys, caches, sqlite-vec, and the `engram_now()` clock), and the
//! transactions every store call runs in, on tokio's blocking threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use engram_domain::{Error, Result};
use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use tokio::sync::Semaphore;

use crate::error::{db, join};

/// How long a statement waits for another process's lock before failing with
/// [`Error::Unavailable`] (or less, when the call's time limit ends sooner).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite virtual machine steps between two looks at the call's deadline.
const DEADLINE_CHECK_STEPS: i32 = 10_000;

/// Per-connection page cache, at most: 64 MiB (a negative `cache_size` is in KiB). It fills
/// only as pages are read.
const CACHE_KIB: i64 = 64 * 1024;

/// Bytes of the file each connection maps into memory: 256 MiB.
const MMAP_BYTES: i64 = 256 * 1024 * 1024;

/// What the write-ahead log is cut back to after a checkpoint: 64 MiB.
const WAL_LIMIT_BYTES: i64 = 64 * 1024 * 1024;

/// One connection and the clock its `engram_now()` reads.
pub(crate) struct Conn {
    db: Connection,
    clock: Arc<AtomicI64>,
    /// The author of the write under way, which `engram_author()` returns (migration V12).
    author: Arc<Mutex<Option<Arc<str>>>>,
}

/// The writer and the readers of one database file.
pub(crate) struct Pool {
    path: PathBuf,
    writer: Mutex<Conn>,
    /// The writer's one permit: writers queue here, not on blocking threads.
    writer_permit: Semaphore,
    readers: Mutex<Vec<Conn>>,
    /// One permit per reader connection: callers queue here, not on blocking threads.
    reader_permits: Semaphore,
    reader_count: usize,
    /// Each call's time limit in milliseconds: waiting for a connection, for another
    /// process's lock and running its statements together.
    call_timeout_ms: AtomicU64,
}

impl Pool {
    /// Opens the writer (creating the file) and `readers` reader connections.
    pub(crate) fn open(path: &Path, readers: usize) -> Result<Self> {
        let writer = Conn::open(path)?;
        let reader_count = readers.max(1);
        let readers = (0..reader_count)
            .map(|_| Conn::open(path))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            path: path.to_owned(),
            writer: Mutex::new(writer),
            writer_permit: Semaphore::new(1),
            readers: Mutex::new(readers),
            reader_permits: Semaphore::new(reader_count),
            reader_count,
            call_timeout_ms: AtomicU64::new(millis(engram_domain::limits::CALL_TIMEOUT)),
        })
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Sets each call's time limit (see [`crate::SqliteStore::with_call_timeout`]).
    pub(crate) fn set_call_timeout(&self, timeout: Duration) {
        self.call_timeout_ms
            .store(millis(timeout), Ordering::Relaxed);
    }

    fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms.load(Ordering::Relaxed))
    }

    /// Waits for one of `permits` within the call's time limit; returns the deadline left.
    async fn turn<'a>(
        &self,
        permits: &'a Semaphore,
    ) -> Result<(tokio::sync::SemaphorePermit<'a>, Instant)> {
        let timeout = self.call_timeout();
        let deadline = Instant::now() + timeout;
        match tokio::time::timeout(timeout, permits.acquire()).await {
            Ok(permit) => Ok((permit.map_err(closed)?, deadline)),
            Err(_) => Err(Error::Unavailable(format!(
                "sqlite: the store stayed busy for the whole time limit of a call ({}); \
                 nothing was changed, try again",
                humanize(timeout)
            ))),
        }
    }

    /// Runs `body` on the writer connection itself, outside any transaction and without a
    /// call's time limit (migrations, which may take long or wait for another process).
    pub(crate) async fn with_writer<T, F>(self: &Arc<Self>, body: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        engram_domain::transactions::opened(std::any::type_name::<F>());
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.writer.lock().unwrap_or_else(|e| e.into_inner());
            conn.tick();
            conn.unlimited()?;
            body(&mut conn.db)
        })
        .await
        .map_err(join)?
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the writer and commits it; an
    /// error rolls everything back, so a rejected call changes nothing.
    pub(crate) async fn write<T, F>(self: &Arc<Self>, body: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
    {
        engram_domain::transactions::opened(std::any::type_name::<F>());
        let (_permit, deadline) = self.turn(&self.writer_permit).await?;
        let pool = Arc::clone(self);
        let author = engram_domain::authorship::current();
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.writer.lock().unwrap_or_else(|e| e.into_inner());
            conn.tick();
            conn.limit_to(deadline)?;
            *conn.author.lock().unwrap_or_else(|e| e.into_inner()) = author;
            let outcome = conn
                .db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)
                .and_then(|tx| {
                    let value = body(&tx)?;
                    tx.commit().map_err(db)?;
                    Ok(value)
                });
            *conn.author.lock().unwrap_or_else(|e| e.into_inner()) = None;
            outcome
        })
        .await
        .map_err(join)?
    }

    /// Runs `body` in one read transaction on a reader connection, so its statements see one
    /// snapshot.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, body: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
    {
        engram_domain::transactions::opened(std::any::type_name::<F>());
        let (_permit, deadline) = self.turn(&self.reader_permits).await?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let taken = pool.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
            // None only when a cancelled call still holds its connection: open another.
            let mut conn = match taken {
                Some(conn) => conn,
                None => Conn::open(&pool.path)?,
            };
            conn.tick();
            conn.limit_to(deadline)?;
            let outcome = conn
                .db
                .transaction_with_behavior(TransactionBehavior::Deferred)
                .map_err(db)
                .and_then(|tx| {
                    let value = body(&tx)?;
                    tx.commit().map_err(db)?;
                    Ok(value)
                });
            let mut readers = pool.readers.lock().unwrap_or_else(|e| e.into_inner());
            if readers.len() < pool.reader_count {
                readers.push(conn);
            }
            outcome
        })
        .await
        .map_err(join)?
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `1.5 s`, `30 s`: a time limit as an error message gives it.
fn humanize(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

fn closed(_: tokio::sync::AcquireError) -> Error {
    Error::Internal("sqlite connection pool closed".into())
}

impl Conn {
    fn open(path: &Path) -> Result<Self> {
        register_sqlite_vec();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        let journal: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(db)?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(Error::Internal(format!(
                "sqlite: {} cannot use write-ahead logging (journal mode {journal})",
                path.display()
            )));
        }
        conn.execute_batch(&format!(
            "PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA cache_size = -{CACHE_KIB};
             PRAGMA mmap_size = {MMAP_BYTES};
             PRAGMA temp_store = MEMORY;
             PRAGMA journal_size_limit = {WAL_LIMIT_BYTES};"
        ))
        .map_err(db)?;
        let clock = Arc::new(AtomicI64::new(now_micros()));
        let reads = Arc::clone(&clock);
        conn.create_scalar_function("engram_now", 0, FunctionFlags::SQLITE_UTF8, move |_| {
            Ok(reads.load(Ordering::Relaxed))
        })
        .map_err(db)?;
        // The words of a node name as a JSON array, for `node_name_words` (migration V9).
        let deterministic = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
        conn.create_scalar_function("engram_name_words", 1, deterministic, |context| {
            let name: String = context.get(0)?;
            let words = engram_domain::suggestions::name_words(&name);
            serde_json::to_string(&words).map_err(|e| rusqlite::Error::UserFunctionError(e.into()))
        })
        .map_err(db)?;
        // What full text indexes of an observation: its text and its Chinese, Japanese and
        // Korean character pairs (migration V11).
        conn.create_scalar_function("engram_with_cjk", 1, deterministic, |context| {
            let text: String = context.get(0)?;
            Ok(engram_domain::search::words::with_cjk_bigrams(&text).into_owned())
        })
        .map_err(db)?;
        // Who the write under way is by, for its events (migration V12).
        let author: Arc<Mutex<Option<Arc<str>>>> = Arc::default();
        let writing = Arc::clone(&author);
        conn.create_scalar_function("engram_author", 0, FunctionFlags::SQLITE_UTF8, move |_| {
            let author = writing.lock().unwrap_or_else(|e| e.into_inner());
            Ok(author.as_deref().map(str::to_owned))
        })
        .map_err(db)?;
        Ok(Self {
            db: conn,
            clock,
            author,
        })
    }

    /// Bounds the transaction about to start by `deadline`: a lock held by another process
    /// is waited for until then at most, and a statement still running then is interrupted
    /// (SQLite rolls the transaction back), so a call that runs out of time changes nothing.
    fn limit_to(&mut self, deadline: Instant) -> Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.db.busy_timeout(left.min(BUSY_TIMEOUT)).map_err(db)?;
        self.db
            .progress_handler(
                DEADLINE_CHECK_STEPS,
                Some(move || Instant::now() >= deadline),
            )
            .map_err(db)
    }

    /// Lifts the last call's limit ([`Conn::limit_to`] sets it on the connection, where it
    /// outlives the transaction): the busy timeout back to its default, no deadline.
    fn unlimited(&mut self) -> Result<()> {
        self.db.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        self.db
            .progress_handler(0, None::<fn() -> bool>)
            .map_err(db)
    }

    /// Sets this connection's `engram_now()` for the transaction about to start.
    fn tick(&mut self) {
        self.clock.store(now_micros(), Ordering::Relaxed);
    }
}

/// Microseconds since the Unix epoch, strictly greater on every call in this process, so two
/// transactions never share a time and `updated_at` always moves.
fn now_micros() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(wall.max(last + 1))
        })
        .unwrap_or(wall);
    wall.max(previous + 1)
}

/// Makes every connection opened from now on load sqlite-vec (`vec0`, `vec_distance_cosine`).
fn register_sqlite_vec() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: `sqlite3_vec_init` is sqlite-vec's extension entry point, a C function with
        // exactly the signature of `RawAutoExtension` (`int (sqlite3*, char**, const
        // sqlite3_api_routines*)`); the crate merely declares it without parameters.
        // SQLite calls it once for each new connection, on the thread opening it.
        let registered = unsafe {
            rusqlite::auto_extension::register_auto_extension(std::mem::transmute::<
                unsafe extern "C" fn(),
                rusqlite::auto_extension::RawAutoExtension,
            >(
                sqlite_vec::sqlite3_vec_init
            ))
        };
        if let Err(error) = registered {
            tracing::error!(%error, "registering sqlite-vec failed");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement still running at the call's deadline is interrupted and its transaction
    /// rolled back; the connection serves the next call as usual.
    #[tokio::test]
    async fn a_statement_running_past_the_time_limit_is_interrupted_and_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(Pool::open(&dir.path().join("t.db"), 1).unwrap());
        pool.write(|tx| tx.execute_batch("CREATE TABLE t (x)").map_err(db))
            .await
            .unwrap();
        pool.set_call_timeout(Duration::from_millis(200));
        let started = Instant::now();
        let error = pool
            .write(|tx| {
                tx.execute_batch("INSERT INTO t VALUES (1)").map_err(db)?;
                // Counts forever: only the deadline ends it.
                tx.query_row(
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
                     SELECT count(*) FROM c",
                    [],
                    |row| row.get::<_, i64>(0),
                )
                .map_err(db)
            })
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(matches!(error, Error::Unavailable(_)), "{error}");
        assert!(error.to_string().contains("time limit"), "{error}");
        let rows = pool
            .read(|tx| {
                tx.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0))
                    .map_err(db)
            })
            .await
            .unwrap();
        assert_eq!(
            rows, 0,
            "the interrupted transaction's insert was rolled back"
        );
        // The deadline belonged to that call: a migration afterwards runs unlimited.
        tokio::time::sleep(Duration::from_millis(250)).await;
        pool.with_writer(|conn| {
            conn.query_row(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
                 SELECT count(*) FROM c",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map_err(db)
        })
        .await
        .unwrap();
    }
}
