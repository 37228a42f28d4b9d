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
        ErrorCode::DatabaseBusy
        | ErrorCode::DatabaseLocked
        | ErrorCode::CannotOpen
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
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(sqlite) = cause.downcast_ref::<rusqlite::Error>() {
            return Error::Internal(format!("migration failed: {error}: {sqlite}"));
        }
        source = cause.source();
    }
    Error::Internal(format!("migration failed: {error}"))
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
