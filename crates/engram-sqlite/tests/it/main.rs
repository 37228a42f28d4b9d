//! engram-sqlite's integration tests: the conformance suite, each test on a database file of
//! its own, plus SQLite-specific checks.

mod sqlite;

use std::sync::Arc;

use engram_domain::MemoryStore;
use engram_sqlite::SqliteStore;

/// A store on a new database file, as the conformance suite wants it.
pub async fn fresh_store() -> Arc<dyn MemoryStore> {
    Arc::new(open_fresh().await)
}

/// A [`SqliteStore`] on a new, migrated database file in a directory of its own under the
/// target directory's `tmp/` (kept after the test, since the store holds the file open until
/// the process ends; `cargo clean` removes them).
pub async fn open_fresh() -> SqliteStore {
    let dir = tempfile::Builder::new()
        .prefix("engram-sqlite-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a temporary directory")
        .keep();
    SqliteStore::open(dir.join("engram.db"))
        .await
        .expect("open a fresh database")
}

engram_domain::memory_store_test_suite!(fresh_store);
