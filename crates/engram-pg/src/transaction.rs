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
                let value = $body.await?;
                $tx.commit().await.map_err(crate::error::db)?;
                Ok(value)
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

/// Runs `$body` in a read-only transaction on one snapshot, so multi-statement reads agree.
macro_rules! read {
    ($store:expr, |$tx:ident| $body:expr) => {{
        opened!();
        let mut client = $store.client().await?;
        let $tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(crate::error::db)?;
        let value = $body.await?;
        $tx.commit().await.map_err(crate::error::db)?;
        Ok(value)
    }};
}
