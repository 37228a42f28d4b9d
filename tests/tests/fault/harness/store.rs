//! The store a test runs on: a fresh PostgreSQL database on the test server, or a fresh
//! SQLite file.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A database of its own on `ENGRAM_TEST_DATABASE_URL`'s server.
    Postgres,
    /// A file of its own under the target directory's `tmp/`.
    Sqlite,
}

/// A fresh, empty store with one workspace, and a directory for the test's files (logs,
/// import files).
pub struct Store {
    /// What `--database-url` gets.
    pub url: String,
    /// The workspace every test works in.
    pub workspace: &'static str,
    /// The test's own directory (the SQLite file lives here too).
    pub dir: PathBuf,
}

/// SQLite test directories are named so (`cargo xtask test` counts them); the others get
/// [`OTHER_PREFIX`].
const SQLITE_PREFIX: &str = "engram-sqlite-";
const OTHER_PREFIX: &str = "engram-fault-";

impl Store {
    /// A fresh store on `backend` with the workspace `fault`, made by `engram workspace
    /// create` (which migrates the database first).
    pub async fn fresh(backend: Backend) -> Self {
        let dir = test_dir(match backend {
            Backend::Postgres => OTHER_PREFIX,
            Backend::Sqlite => SQLITE_PREFIX,
        });
        let url = match backend {
            Backend::Postgres => engram_pg::testing::fresh_database().await,
            Backend::Sqlite => dir.join("engram.db").display().to_string(),
        };
        Self::with_url(url, dir).await
    }

    /// A directory for a test whose database is its own business (a private cluster).
    pub fn other_dir() -> PathBuf {
        test_dir(OTHER_PREFIX)
    }

    /// The workspace `fault` on the database at `url`, files in `dir`.
    pub async fn with_url(url: String, dir: PathBuf) -> Self {
        let store = Self {
            url,
            workspace: "fault",
            dir,
        };
        super::binary::run_ok(&["workspace", "create", store.workspace], &store.url).await;
        store
    }
}

/// A new directory under the target directory's `tmp/`, named `prefix…`. It outlives the test (as the other
/// crates' SQLite test directories do); each run removes those more than an hour old.
pub fn test_dir(prefix: &str) -> PathBuf {
    static SWEPT: Once = Once::new();
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.call_once(|| remove_old(parent));
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(parent)
        .expect("a temporary directory")
        .keep()
}

fn remove_old(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let hour_ago = SystemTime::now() - Duration::from_secs(3_600);
    for entry in entries.flatten() {
        let old = (entry.metadata())
            .and_then(|m| m.modified())
            .is_ok_and(|modified| modified < hour_ago);
        let name = entry.file_name().to_string_lossy().into_owned();
        if old && (name.starts_with(SQLITE_PREFIX) || name.starts_with(OTHER_PREFIX)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
