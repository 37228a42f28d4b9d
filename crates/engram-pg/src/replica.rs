//! Reads on a streaming replica, never staler than the caller's own writes.
//!
//! A read-only call ([`read!`](crate::transaction)) asks, at the same moment, the primary how
//! far its write-ahead log goes (`pg_current_wal_lsn()`) and the replica how far it has
//! replayed (`pg_last_wal_replay_lsn()`). Every write acknowledged before the call began ends
//! at or before the first position, so when the replica has replayed that far, a transaction
//! begun on it afterwards sees every such write: whoever wrote it, through whichever engram
//! process. Otherwise the call reads on the primary. This needs no session affinity and no
//! shared state between processes; its price is one small query on each server per read.
//!
//! The replica is left alone (every read on the primary, one warning in the log) for
//! [`REST`] when it fails, and when it has been behind for longer than
//! [`PgOptions::replica_max_lag`](crate::PgOptions::replica_max_lag). A call whose transaction
//! fails on the replica (a recovery conflict, a lost connection) runs again on the primary, so
//! a replica never costs a caller an error. [`ReplicaStatus`] counts what happened.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{Object, Pool};
use engram_domain::Result;

/// How long a failing or lagging replica is left alone.
pub(crate) const REST: Duration = Duration::from_secs(5);

/// How long the replica may take to say how far it has replayed, or to begin a transaction.
/// Through a pooler, a replica that is down is not an error at once: the pooler waits for it
/// (PgBouncer's `query_wait_timeout`, 2 minutes by default).
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// How long a whole read-only call may take on the replica before it runs again on the
/// primary: bounded here, by the client, since a replica that hangs (frozen, or its network
/// gone quiet) never answers a `statement_timeout` of its own.
pub(crate) const READ_WITHIN: Duration = Duration::from_millis(1_500);

/// What the replica has done so far (for metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// Read-only calls served by the replica.
    pub reads_on_replica: u64,
    /// Read-only calls sent to the primary because the replica had not replayed far enough.
    pub reads_behind: u64,
    /// Read-only calls sent to the primary because the replica failed or was resting.
    pub reads_skipped: u64,
    /// Whether the replica is being left alone right now.
    pub resting: bool,
}

/// The replica's pool and what is known of it.
pub(crate) struct Replica {
    pool: Pool,
    max_lag: Duration,
    state: Mutex<State>,
    on_replica: AtomicU64,
    behind: AtomicU64,
    skipped: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Left alone until then.
    rest_until: Option<Instant>,
    /// Behind the primary at every check since then.
    behind_since: Option<Instant>,
    /// Checked to be a standby of the primary's database since it last rested.
    identified: bool,
}

/// Where a read-only call runs.
pub(crate) struct Reader {
    pub client: Object,
    /// On the replica: a failure runs the call again on the primary.
    pub on_replica: bool,
}

impl Replica {
    pub(crate) fn new(pool: Pool, max_lag: Duration) -> Self {
        Self {
            pool,
            max_lag,
            state: Mutex::default(),
            on_replica: AtomicU64::new(0),
            behind: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    pub(crate) fn status(&self) -> ReplicaStatus {
        ReplicaStatus {
            reads_on_replica: self.on_replica.load(Ordering::Relaxed),
            reads_behind: self.behind.load(Ordering::Relaxed),
            reads_skipped: self.skipped.load(Ordering::Relaxed),
            resting: self.resting(Instant::now()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn resting(&self, now: Instant) -> bool {
        self.state().rest_until.is_some_and(|until| now < until)
    }

    /// A replica connection caught up with every write acknowledged so far, or `None` (the
    /// caller reads on the primary).
    pub(crate) async fn caught_up(&self, primary: &Pool) -> Option<Object> {
        let now = Instant::now();
        if self.resting(now) {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if !self.state().identified {
            match tokio::time::timeout(ANSWER_WITHIN, same_database(primary, &self.pool)).await {
                Ok(Ok(())) => self.state().identified = true,
                Ok(Err(error)) => {
                    self.rest(now, &error.to_string());
                    return None;
                }
                Err(_) => {
                    self.rest(now, &not_answering("say which database it is").to_string());
                    return None;
                }
            }
        }
        let replica = tokio::time::timeout(ANSWER_WITHIN, replica_position(&self.pool));
        let (written, replica) = tokio::join!(primary_position(primary), replica);
        let replica = replica.unwrap_or_else(|_| Err(not_answering("say how far it has replayed")));
        let (written, (client, replayed)) = match (written, replica) {
            (Ok(written), Ok(replica)) => (written, replica),
            // The primary's failure is the call's to meet; the replica is not at fault.
            (Err(_), Ok(_)) => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            (_, Err(error)) => {
                self.rest(now, &format!("it failed: {error}"));
                return None;
            }
        };
        if replayed >= written {
            self.state().behind_since = None;
            self.on_replica.fetch_add(1, Ordering::Relaxed);
            return Some(client);
        }
        self.behind.fetch_add(1, Ordering::Relaxed);
        let since = *self.state().behind_since.get_or_insert(now);
        if now.duration_since(since) > self.max_lag {
            let lag = written - replayed;
            self.rest(
                now,
                &format!(
                    "it has been behind for over {:?} ({lag} bytes now)",
                    self.max_lag
                ),
            );
        }
        None
    }

    /// A call failed on the replica: it is left alone for a while.
    pub(crate) fn failed(&self, error: &engram_domain::Error) {
        self.rest(Instant::now(), &format!("a read failed on it: {error}"));
    }

    fn rest(&self, now: Instant, why: &str) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state();
        if state.rest_until.is_some_and(|until| now < until) {
            return;
        }
        state.rest_until = Some(now + REST);
        state.behind_since = None;
        // What answers at the address after a rest may be another server: checked again.
        state.identified = false;
        tracing::warn!(rest = ?REST, "reading on the primary instead of the read replica: {why}");
    }
}

/// `begin` (a transaction's start), within [`ANSWER_WITHIN`] when on the replica.
pub(crate) async fn begin<T>(
    on_replica: bool,
    begin: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> Result<T> {
    if !on_replica {
        return begin.await.map_err(crate::error::db);
    }
    match tokio::time::timeout(ANSWER_WITHIN, begin).await {
        Ok(begun) => begun.map_err(crate::error::db),
        Err(_) => Err(not_answering("begin a transaction")),
    }
}

/// A read-only call on the replica, within [`READ_WITHIN`]; past it the replica is taken to
/// hang (the caller runs the call again on the primary).
pub(crate) async fn within_read_limit<T>(call: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(READ_WITHIN, call).await {
        Ok(outcome) => outcome,
        Err(_) => Err(engram_domain::Error::Unavailable(format!(
            "the read replica did not answer a read within {READ_WITHIN:?}"
        ))),
    }
}

fn not_answering(what: &str) -> engram_domain::Error {
    engram_domain::Error::Unavailable(format!(
        "the read replica did not {what} within {ANSWER_WITHIN:?}"
    ))
}

/// Whether a call's failure on the replica may be the replica's: it lost its connection, ran
/// out of a resource or cancelled the call for a recovery conflict (not a missing node or a bad
/// argument, which the primary would meet too).
pub(crate) fn is_replica_fault(error: &engram_domain::Error) -> bool {
    matches!(
        error,
        engram_domain::Error::Unavailable(_) | engram_domain::Error::Contended(_)
    )
}

/// Which server and database a connection reaches: the cluster's system identifier (the same
/// on a primary and each of its standbys), the database's name, and whether it is a standby.
async fn identity(pool: &Pool) -> Result<(String, String, bool)> {
    let client = pool.get().await.map_err(crate::error::pool)?;
    let asked = (client.simple_query(
        "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_database(), \
         pg_is_in_recovery()::text",
    ))
    .await;
    // A role that may not read the control data still tells its database and its role.
    let messages = match asked {
        Err(error)
            if error.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
        {
            (client.simple_query("SELECT '', current_database(), pg_is_in_recovery()::text"))
                .await
                .map_err(crate::error::db)?
        }
        asked => asked.map_err(crate::error::db)?,
    };
    let row = messages.iter().find_map(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    });
    let field = |i: usize| {
        row.and_then(|row| row.get(i))
            .unwrap_or_default()
            .to_owned()
    };
    Ok((field(0), field(1), field(2) == "true"))
}

/// `Ok` when `replica` is a standby of `primary`'s cluster serving the same database; else
/// [`engram_domain::Error::InvalidArgument`] naming `read_replica_url` and what answers there
/// (issue 60: a replica URL naming another database was read from silently).
pub(crate) async fn same_database(primary: &Pool, replica: &Pool) -> Result<()> {
    let (primary, replica) = tokio::try_join!(identity(primary), identity(replica))?;
    let (system, database, standby) = &replica;
    let known = !system.is_empty() && !primary.0.is_empty();
    let why = if known && system != &primary.0 {
        format!(
            "it is another PostgreSQL cluster (system {system}, the primary's {})",
            primary.0
        )
    } else if database != &primary.1 {
        format!(
            "it serves database {database:?}, the primary {:?}",
            primary.1
        )
    } else if !standby {
        "it is not a standby (not in recovery)".to_owned()
    } else {
        return Ok(());
    };
    Err(engram_domain::Error::invalid(
        "read_replica_url",
        format!("is not a read replica of the primary's database: {why}"),
    ))
}

/// Where the primary's write-ahead log ends now.
async fn primary_position(primary: &Pool) -> Result<u64> {
    let client = primary.get().await.map_err(crate::error::pool)?;
    position(&client, "SELECT pg_current_wal_lsn()::text").await
}

/// A replica connection and how far that replica has replayed.
async fn replica_position(replica: &Pool) -> Result<(Object, u64)> {
    let client = replica.get().await.map_err(crate::error::pool)?;
    let replayed = position(
        &client,
        "SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text",
    )
    .await?;
    Ok((client, replayed))
}

/// Runs `query` (one LSN as text) as a simple query: one message, which a transaction pooler
/// passes whole to one server connection.
async fn position(client: &Object, query: &str) -> Result<u64> {
    let messages = client.simple_query(query).await.map_err(crate::error::db)?;
    let text = messages.iter().find_map(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
        _ => None,
    });
    text.and_then(parse_lsn)
        .ok_or_else(|| engram_domain::Error::Internal(format!("{query} returned no log position")))
}

/// `16/B374D848` as a byte position.
fn parse_lsn(text: &str) -> Option<u64> {
    let (high, low) = text.split_once('/')?;
    let high = u64::from_str_radix(high, 16).ok()?;
    let low = u64::from_str_radix(low, 16).ok()?;
    Some((high << 32) | low)
}

#[cfg(test)]
mod tests {
    use super::parse_lsn;

    #[test]
    fn log_positions_compare_as_numbers() {
        assert_eq!(parse_lsn("0/0"), Some(0));
        assert_eq!(parse_lsn("16/B374D848"), Some(0x16_B374_D848));
        assert!(parse_lsn("1/FFFFFFFF") < parse_lsn("2/0"));
        assert_eq!(parse_lsn("nonsense"), None);
    }
}
