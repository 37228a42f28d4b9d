//! The one place where PostgreSQL and pool errors become [`engram_domain::Error`]s.

use engram_domain::Error;
use tokio_postgres::error::SqlState;

/// Maps a driver error by its SQLSTATE: a deadlock or serialization failure is
/// [`Error::Contended`] (retried by `write!`); connection and resource trouble, and a server
/// that refuses the configured role, password or database, is [`Error::Unavailable`]; everything
/// else [`Error::Internal`] with PostgreSQL's own message. An error without a SQLSTATE (the
/// connection broke or could not be made) carries its whole chain of causes.
/// Constraint violations that a caller can cause are caught by validation or mapped by the
/// query that can cause them, so reaching here means a bug.
pub(crate) fn db(error: tokio_postgres::Error) -> Error {
    let Some(db_error) = error.as_db_error() else {
        // No SQLSTATE: the connection broke or could not be made.
        return Error::Unavailable(format!("postgresql: {}", with_causes(&error)));
    };
    let code = db_error.code();
    let class = &code.code()[..2];
    let message = format!("postgresql: {} ({})", db_error.message(), code.code());
    // 08 connection, 53 resources, 57 operator intervention, 40 rollback, 28 authorization,
    // 3D no such database.
    let unavailable = matches!(class, "08" | "53" | "57" | "40" | "28" | "3D");
    let contended =
        *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE;
    if contended {
        Error::Contended(message)
    } else if *code == SqlState::QUERY_CANCELED {
        Error::Unavailable(format!(
            "{message}: the call ran past its time limit (statement_timeout) and was rolled \
             back; nothing was changed"
        ))
    } else if unavailable {
        Error::Unavailable(message)
    } else if *code == SqlState::FOREIGN_KEY_VIOLATION {
        // A workspace or node was deleted by another writer while this call ran.
        Error::Conflict(format!(
            "a workspace or node this call refers to was deleted concurrently: {message}"
        ))
    } else {
        Error::Internal(message)
    }
}

/// `error: cause: cause…`, each cause once (drivers often repeat their source in their text).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let causes = std::iter::successors(error.source(), |cause| cause.source());
    causes.fold(error.to_string(), |text, cause| {
        let cause = cause.to_string();
        match text.contains(&cause) {
            true => text,
            false => format!("{text}: {cause}"),
        }
    })
}

/// How many times a write runs at most when it meets a deadlock or a serialization failure.
pub(crate) const WRITE_ATTEMPTS: u32 = 3;

/// Whether `error` is a deadlock (40P01) or serialization failure (40001), which a retry of
/// the whole transaction resolves: [`db`] classifies them from the SQLSTATE as
/// [`Error::Contended`].
pub(crate) fn is_transient(error: &Error) -> bool {
    matches!(error, Error::Contended(_))
}

/// Maps a failure to get a pooled connection.
pub(crate) fn pool(error: deadpool_postgres::PoolError) -> Error {
    match error {
        deadpool_postgres::PoolError::Backend(error) => db(error),
        deadpool_postgres::PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
            Error::Unavailable(
                "postgresql connection pool: every connection stayed busy for this call's \
                 whole time limit; nothing was changed, try again"
                    .into(),
            )
        }
        other => Error::Unavailable(format!("postgresql connection pool: {other}")),
    }
}

/// Maps a failed migration, walking the error chain down to PostgreSQL's own message, which
/// refinery's text hides.
pub(crate) fn migration(error: &refinery::Error) -> Error {
    let causes = std::iter::successors(std::error::Error::source(error), |cause| cause.source());
    let db_error = causes
        .filter_map(|cause| cause.downcast_ref::<tokio_postgres::Error>())
        .find_map(tokio_postgres::Error::as_db_error);
    Error::Internal(match db_error {
        Some(db) => format!(
            "migration failed: {error}: {} ({})",
            db.message(),
            db.code().code()
        ),
        None => format!("migration failed: {error}"),
    })
}

/// `taken()` when the error violates the unique constraint `constraint` (the name is held
/// already), otherwise the error as [`db`] maps it.
pub(crate) fn taken_or_db(
    error: tokio_postgres::Error,
    constraint: &str,
    taken: impl FnOnce() -> Error,
) -> Error {
    let unique = error.as_db_error().is_some_and(|db_error| {
        *db_error.code() == SqlState::UNIQUE_VIOLATION && db_error.constraint() == Some(constraint)
    });
    if unique { taken() } else { db(error) }
}
