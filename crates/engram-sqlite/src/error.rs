//! The one place where SQLite's errors become [`engram_domain::Error`]s.

use engram_domain::Error;
use rusqlite::ErrorCode;
use rusqlite::ffi;

/// Maps a driver error by SQLite's result code: a locked or busy database, a full disk and
/// I/O trouble are [`Error::Unavailable`]; a foreign-key violation is a [`Error::Conflict`]
/// (a workspace or node was deleted while the call ran); everything else is
/// [`Error::Internal`] with SQLite's own message. Constraint violations that a caller can
/// cause are caught by validation or mapped by the query that can cause them, so reaching
/// here means a bug.
pub(crate) fn db(error: rusqlite::Error) -> Error {
    let message = format!("sqlite: {error}");
    let Some(code) = error.sqlite_error() else {
        return Error::Internal(message);
    };
    match code.code {
        ErrorCode::OperationInterrupted => Error::Unavailable(format!(
            "{message}: the call ran past its time limit and was rolled back; nothing was \
             changed"
        )),
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Error::Unavailable(format!(
            "{message}: another process held the database past this call's time limit; \
             nothing was changed, try again"
        )),
        ErrorCode::CannotOpen
        | ErrorCode::DiskFull
        | ErrorCode::SystemIoFailure
        | ErrorCode::OutOfMemory
        | ErrorCode::ReadOnly
        | ErrorCode::FileLockingProtocolFailed => Error::Unavailable(message),
        ErrorCode::ConstraintViolation
            if code.extended_code == ffi::SQLITE_CONSTRAINT_FOREIGNKEY =>
        {
            Error::Conflict(format!(
                "a workspace or node this call refers to was deleted concurrently: {message}"
            ))
        }
        _ => Error::Internal(message),
    }
}

/// Maps a failed migration, keeping SQLite's own message, which refinery's text hides.
pub(crate) fn migration(error: &refinery::Error) -> Error {
    let mut causes =
        std::iter::successors(std::error::Error::source(error), |cause| cause.source());
    Error::Internal(
        match causes.find_map(|cause| cause.downcast_ref::<rusqlite::Error>()) {
            Some(sqlite) => format!("migration failed: {error}: {sqlite}"),
            None => format!("migration failed: {error}"),
        },
    )
}

/// Maps a blocking task that panicked or was cancelled.
pub(crate) fn join(error: tokio::task::JoinError) -> Error {
    Error::Internal(format!("sqlite call did not finish: {error}"))
}

/// Whether the error is a violation of the unique constraint on `columns`, as SQLite names
/// it (`workspaces.name`, `relations.workspace_id, relations.from_node_id, …`).
pub(crate) fn is_unique_violation(error: &rusqlite::Error, columns: &str) -> bool {
    match error {
        rusqlite::Error::SqliteFailure(code, Some(message)) => {
            code.extended_code == ffi::SQLITE_CONSTRAINT_UNIQUE
                && message.strip_prefix("UNIQUE constraint failed: ") == Some(columns)
        }
        _ => false,
    }
}

/// `taken()` when the error violates the unique constraint on `columns` (the name is held
/// already), otherwise the error as [`db`] maps it.
pub(crate) fn taken_or_db(
    error: rusqlite::Error,
    columns: &str,
    taken: impl FnOnce() -> Error,
) -> Error {
    if is_unique_violation(&error, columns) {
        taken()
    } else {
        db(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: i32, message: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(message.to_owned()))
    }

    #[test]
    fn outages_conflicts_and_bugs_are_told_apart() {
        let busy = db(failure(ffi::SQLITE_BUSY, "database is locked"));
        assert!(matches!(busy, Error::Unavailable(_)), "{busy}");
        let full = db(failure(ffi::SQLITE_FULL, "database or disk is full"));
        assert!(matches!(full, Error::Unavailable(_)), "{full}");
        let gone = db(failure(
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY,
            "FOREIGN KEY constraint failed",
        ));
        assert!(matches!(gone, Error::Conflict(_)), "{gone}");
        let check = db(failure(
            ffi::SQLITE_CONSTRAINT_CHECK,
            "CHECK constraint failed",
        ));
        assert!(matches!(check, Error::Internal(_)), "{check}");
        let sql = db(rusqlite::Error::InvalidColumnName("nope".into()));
        assert!(matches!(sql, Error::Internal(_)), "{sql}");
    }

    #[test]
    fn unique_violations_are_recognised_by_their_columns() {
        let taken = failure(
            ffi::SQLITE_CONSTRAINT_UNIQUE,
            "UNIQUE constraint failed: workspaces.name",
        );
        assert!(is_unique_violation(&taken, "workspaces.name"));
        assert!(!is_unique_violation(&taken, "nodes.name"));
        let other = failure(
            ffi::SQLITE_CONSTRAINT_CHECK,
            "CHECK constraint failed: name",
        );
        assert!(!is_unique_violation(&other, "workspaces.name"));
    }
}
