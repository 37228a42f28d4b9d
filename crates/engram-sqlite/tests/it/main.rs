//! engram-sqlite's integration tests: the conformance suite, each test on a database file of
//! its own, plus SQLite-specific checks.

mod merge;
mod sqlite;
mod upgrade;
mod validity;
mod vector_lists;

use std::path::Path;
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime};

use engram_domain::MemoryStore;
use engram_sqlite::SqliteStore;

/// A store on a new database file, as the conformance suite wants it.
pub async fn fresh_store() -> Arc<dyn MemoryStore> {
    Arc::new(open_fresh().await)
}

/// A [`SqliteStore`] on a new, migrated database file in a directory of its own under the
/// target directory's `tmp/`. The directory outlives the test (the store holds the file open
/// until the process ends); the next run removes those more than an hour old.
pub async fn open_fresh() -> SqliteStore {
    static SWEPT: Once = Once::new();
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.call_once(|| remove_old_databases(parent));
    let dir = tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir_in(parent)
        .expect("a temporary directory")
        .keep();
    SqliteStore::open(dir.join("engram.db"))
        .await
        .expect("open a fresh database")
}

const PREFIX: &str = "engram-sqlite-";

/// Removes the test databases of earlier runs (best effort: another run may be removing them).
fn remove_old_databases(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let hour_ago = SystemTime::now() - Duration::from_secs(3_600);
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| modified < hour_ago);
        if old && entry.file_name().to_string_lossy().starts_with(PREFIX) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

engram_domain::memory_store_test_suite!(fresh_store);
