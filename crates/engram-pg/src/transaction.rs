//! The one transaction every store call runs in: [`write!`] for calls that change the memory,
//! [`read!`] for calls that only read (one snapshot). Each capability's `impl` (in the module
//! holding its SQL) wraps its query in one of them.

/// Notes the store operation it is written in as opening a transaction (or a lone statement)
/// for the conformance suite's count ([`engram_domain::transactions`]).
macro_rules! opened {
    () => {{
        fn here() {}
        engram_domain::transactions::opened(std::any::type_name_of_val(&here));
    }};
}

/// What every transaction does around `$body` once begun on `$tx`: its own settings first
/// ([`crate::PgStore::begun`]; the author's too when it `$writes`), its statements closed
/// before it commits ([`crate::PgStore::finishing`]), then the commit; `$body`'s error returns
/// at once (the transaction rolls back when dropped).
macro_rules! within {
    ($store:expr, $tx:ident, $writes:expr, $body:expr) => {{
        $store.begun(&$tx, $writes).await?;
        let value = $body.await?;
        $store.finishing(&$tx);
        $tx.commit().await.map_err(crate::error::db)?;
        Ok(value)
    }};
}

/// Runs `$body` (a future using the transaction `$tx`, usually `async { ... }` borrowing it and
/// the request; built anew for each attempt) in a read-write transaction and commits it; on
/// error the transaction rolls back when dropped. A deadlock or serialization failure (which
/// canonical lock order should make rare) is retried, at most [`crate::error::WRITE_ATTEMPTS`]
/// times in all, each retry logged.
macro_rules! write {
    ($store:expr, |$tx:ident| $body:expr) => {{
        opened!();
        let mut attempt = 1;
        loop {
            let outcome = async {
                let mut client = $store.client().await?;
                let $tx = client.transaction().await.map_err(crate::error::db)?;
                within!($store, $tx, true, $body)
            }
            .await;
            match outcome {
                Err(error)
                    if attempt < crate::error::WRITE_ATTEMPTS
                        && crate::error::is_transient(&error) =>
                {
                    tracing::warn!(%error, attempt, "retrying a write after a transient conflict");
                    attempt += 1;
                }
                outcome => break outcome,
            }
        }
    }};
}

/// Runs `$body` in a read-only transaction on one snapshot, so multi-statement reads agree: on
/// the read replica when it has caught up with every acknowledged write ([`crate::replica`]),
/// else on the primary. A call that fails on the replica runs again on the primary.
macro_rules! read {
    ($store:expr, |$tx:ident| $body:expr) => {{
        opened!();
        let mut reader = $store.reader().await?;
        loop {
            let outcome = async {
                let begin = reader
                    .client
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start();
                let $tx = crate::replica::begin(reader.on_replica, begin).await?;
                within!($store, $tx, false, $body)
            };
            // On the replica, bounded here: a frozen replica never answers at all.
            let outcome = match reader.on_replica {
                true => crate::replica::within_read_limit(outcome).await,
                false => outcome.await,
            };
            match outcome {
                Err(error) if reader.on_replica && crate::replica::is_replica_fault(&error) => {
                    $store.replica_failed(&error);
                    reader = $store.primary_reader().await?;
                }
                outcome => break outcome,
            }
        }
    }};
}

/// Runs `$body`, one statement using `$client`, on a pooled connection: as it is directly to
/// PostgreSQL (no transaction round trips), in a transaction of its own through a pooler (a
/// statement prepared outside a transaction may be run on another server connection).
macro_rules! single {
    ($store:expr, |$client:ident| $body:expr) => {{
        opened!();
        let mut object = $store.client().await?;
        if $store.pooled() {
            let $client = object.transaction().await.map_err(crate::error::db)?;
            within!($store, $client, false, $body)
        } else {
            let $client = object;
            $body.await
        }
    }};
}
