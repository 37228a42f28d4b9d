//! Copies of a database file taken while servers write to it, and restores of them, through
//! SQLite's online backup API: pages are copied inside one read transaction, so a copy is the
//! database as one moment saw it (with what the write-ahead log held then), and writers are
//! not held up meanwhile (WAL readers block no writer).

use std::path::Path;
use std::time::{Duration, Instant};

use engram_domain::{Error, Result};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::error::db;

/// How long a copy waits for a lock it cannot have yet (another connection checkpointing,
/// say) before it gives up.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// What a backup or restore copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Database pages copied.
    pub pages: u64,
    /// Bytes the copy holds.
    pub bytes: u64,
}

/// Copies the engram database at `database` into a new file at `to`, consistent while
/// servers write to `database`.
///
/// Errors: [`Error::InvalidArgument`] (`path`) when `to` exists (a backup never overwrites)
/// or `database` is not an engram database; [`Error::Unavailable`] when a lock could not be
/// had within 30 s; the database's errors.
pub fn backup(database: &Path, to: &Path) -> Result<Copied> {
    let source =
        Connection::open_with_flags(database, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db)?;
    engram_schema(&source, database)?;
    // Made here, never there before (no file, no link): a backup overwrites nothing.
    if let Err(error) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
    {
        let reason = match error.kind() {
            std::io::ErrorKind::AlreadyExists => "exists: a backup is written to a new file",
            _ => "cannot be created",
        };
        return Err(Error::invalid("path", format!("{} {reason}", to.display())));
    }
    let mut copy = Connection::open(to).map_err(db)?;
    let copied = copy_pages(&source, &mut copy);
    drop(copy);
    if copied.is_err() {
        let _ = std::fs::remove_file(to);
    }
    copied
}

/// Copies the backup at `backup` into the database at `database`, which must hold no
/// workspace yet (a missing file is made) and must not be served meanwhile (`engram restore`
/// checks that no server holds its `.serving` lock). Migrations of a newer engram run when
/// the store is opened next.
///
/// Errors: [`Error::InvalidArgument`] (`path`) when `backup` is not an engram database;
/// [`Error::Conflict`] when `database` already holds workspaces; the database's errors.
pub fn restore(backup: &Path, database: &Path) -> Result<Copied> {
    let source =
        Connection::open_with_flags(backup, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db)?;
    engram_schema(&source, backup)?;
    let mut target = Connection::open(database).map_err(db)?;
    let holds: bool = target
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'workspaces')",
            [],
            |row| row.get(0),
        )
        .map_err(db)?;
    if holds {
        let workspaces: i64 = target
            .query_row("SELECT count(*) FROM workspaces", [], |row| row.get(0))
            .map_err(db)?;
        if workspaces > 0 {
            return Err(Error::Conflict(format!(
                "{} holds {workspaces} workspace(s): a backup is restored into an empty store \
                 (move the file away first)",
                database.display()
            )));
        }
    }
    copy_pages(&source, &mut target)
}

/// Whether `connection` is an engram database (its migrations' table and workspaces).
fn engram_schema(connection: &Connection, path: &Path) -> Result<()> {
    let tables: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master
             WHERE type = 'table' AND name IN ('refinery_schema_history', 'workspaces')",
            [],
            |row| row.get(0),
        )
        .map_err(|_| not_engram(path))?;
    if tables != 2 {
        return Err(not_engram(path));
    }
    Ok(())
}

fn not_engram(path: &Path) -> Error {
    Error::invalid(
        "path",
        format!("{} is not an engram database", path.display()),
    )
}

/// Every page of `from` into `to`, in one step (one read transaction of `from`), trying
/// again while a lock is busy.
fn copy_pages(from: &Connection, to: &mut Connection) -> Result<Copied> {
    let started = Instant::now();
    let backup = Backup::new(from, to).map_err(db)?;
    loop {
        match backup.step(-1).map_err(db)? {
            StepResult::Done => break,
            StepResult::More => {}
            // Busy or locked: another connection holds a lock for now.
            _ => {
                if started.elapsed() > LOCK_WAIT {
                    return Err(Error::Unavailable(format!(
                        "the database stayed locked for {} s",
                        LOCK_WAIT.as_secs()
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let pages = u64::try_from(backup.progress().pagecount).unwrap_or_default();
    drop(backup);
    let page_size: i64 = to
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .map_err(db)?;
    Ok(Copied {
        pages,
        bytes: pages * u64::try_from(page_size).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_engrams_is_neither_backed_up_nor_restored() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute("CREATE TABLE t (x)", [])
            .unwrap();
        let error = backup(&other, &dir.path().join("copy.db")).unwrap_err();
        assert!(
            error.to_string().contains("not an engram database"),
            "{error}"
        );
        assert!(!dir.path().join("copy.db").exists());
        let error = restore(&other, &dir.path().join("new.db")).unwrap_err();
        assert!(
            error.to_string().contains("not an engram database"),
            "{error}"
        );
    }
}
