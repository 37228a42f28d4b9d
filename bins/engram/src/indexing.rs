//! The background indexer loop and the choice of embedder.

use std::sync::Arc;
use std::time::Duration;

use engram_domain::{Embedder, IndexStore, Indexer};
use tokio_util::sync::CancellationToken;

/// Pairs embedded per pass: one model batch, small enough to keep passes short.
pub const BATCH_SIZE: usize = 64;
/// How often an idle indexer checks for writes.
const IDLE_POLL: Duration = Duration::from_millis(500);
/// An idle indexer looks for work at least this often, even without new writes (for
/// perspective changes, which write no events).
const IDLE_MAX: Duration = Duration::from_secs(30);
/// The longest wait between retries while the embedder or the database is failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Which embedding model serves semantic search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderChoice {
    /// A sentence model in-process.
    Local(engram_embed::LocalModel),
    /// An Ollama server at `host` with `model`.
    Ollama {
        /// `http://host:port`.
        host: String,
        /// e.g. `nomic-embed-text`.
        model: String,
    },
    /// No semantic search; embedding-mode searches answer from full text.
    None,
}

impl EmbedderChoice {
    /// Builds the embedder (cheap: the local model loads on first use).
    pub fn build(&self) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
        Ok(match self {
            Self::Local(model) => Some(Arc::new(engram_embed::LocalEmbedder::new(*model))),
            Self::Ollama { host, model } => {
                Some(Arc::new(engram_embed::OllamaEmbedder::new(host, model)?))
            }
            Self::None => None,
        })
    }
}

/// The indexer the server runs: [`BATCH_SIZE`] pairs a pass.
pub fn indexer(store: Arc<dyn IndexStore>, embedder: Arc<dyn Embedder>) -> Indexer {
    Indexer::new(store, embedder, BATCH_SIZE)
}

/// Keeps vectors current until `shutdown`: passes back to back while work remains; when
/// idle, waits for a write (the store's change marker) or [`IDLE_MAX`]; on failure (the
/// embedder or the database down) retries with backoff, losing nothing.
/// `indexer` is made by [`indexer`]; a clone given to `Memory::with_indexer` shares the texts
/// it sets aside.
pub async fn run_indexer(
    indexer: Indexer,
    store: Arc<dyn IndexStore>,
    shutdown: CancellationToken,
) {
    let mut backoff = IDLE_POLL;
    tracing::info!("indexer started");
    let mut set_aside = Vec::new();
    // The failure last logged as a warning: the same one again (a model still downloading,
    // a database still down) is logged at debug level, so an outage is one line, not one
    // every retry.
    let mut failing: Option<String> = None;
    while !shutdown.is_cancelled() {
        let marker = store.change_marker().await.ok();
        let outcome = indexer.run_once().await;
        let rejected = indexer.rejected();
        for (observation, perspective, reason) in &rejected {
            if !set_aside
                .iter()
                .any(|(o, p, _)| o == observation && p == perspective)
            {
                tracing::warn!(observation, perspective = perspective.0, %reason, "the embedder rejected a text; set aside and tried again later");
            }
        }
        set_aside = rejected;
        match outcome {
            Ok(done) => {
                backoff = IDLE_POLL;
                if failing.take().is_some() {
                    tracing::info!(done, "indexing works again");
                }
                if done == 0 && !indexer.has_suspects() {
                    wait_for_change(&*store, marker, &shutdown).await;
                } else {
                    tracing::debug!(done, "indexed");
                    metrics::counter!("engram_indexer_embedded_total").increment(done as u64);
                }
            }
            Err(error) => {
                metrics::counter!("engram_indexer_failures_total").increment(1);
                let reason = error.to_string();
                if failing.as_ref() == Some(&reason) {
                    tracing::debug!(%error, retry_in = ?backoff, "indexing still failing");
                } else {
                    tracing::warn!(%error, retry_in = ?backoff, "indexing failed; will retry (repeats of this are logged at debug level)");
                    failing = Some(reason);
                }
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    () = tokio::time::sleep(backoff) => {
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                    // A model that finished loading: index now, not after the back-off.
                    () = indexer.embedder_ready() => backoff = IDLE_POLL,
                }
            }
        }
    }
    tracing::info!("indexer stopped");
}

async fn wait_for_change(store: &dyn IndexStore, seen: Option<i64>, shutdown: &CancellationToken) {
    let started = tokio::time::Instant::now();
    while started.elapsed() < IDLE_MAX {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(IDLE_POLL) => {}
        }
        if store.change_marker().await.ok() != seen {
            return;
        }
    }
}

/// How often the purge looks for expired facts.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// Expired facts deleted per transaction.
const PURGE_BATCH: u32 = 1_000;

/// Deletes expired facts for good, every [`PURGE_EVERY`], until `shutdown`. They left every
/// read and search when they expired (the stores' current-fact predicate); this only reclaims
/// their rows. A failure (a read-only replica, a lost connection) is logged and tried again
/// at the next round.
pub async fn purge_expired(memory: engram_domain::Memory, shutdown: CancellationToken) {
    loop {
        loop {
            match memory.purge_expired(PURGE_BATCH).await {
                Ok(purged) if purged > 0 => {
                    tracing::debug!(purged, "purged expired observations");
                    if purged < u64::from(PURGE_BATCH) {
                        break;
                    }
                }
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "purging expired observations failed");
                    break;
                }
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(PURGE_EVERY) => {}
        }
    }
}

/// How often the access log's reads are written ([`record_access`]).
pub const ACCESS_EVERY: Duration = Duration::from_secs(5);

/// Writes what `log` gathered (the nodes reads and searches returned, [`engram_domain::access`])
/// every [`ACCESS_EVERY`] in one store call, and once more at `shutdown`. A failed write keeps
/// its reads for the next (a read-only replica, a lost connection); nothing of it reaches a
/// request.
pub async fn record_access(
    memory: engram_domain::Memory,
    log: engram_domain::AccessLog,
    shutdown: CancellationToken,
) {
    loop {
        let stopping = tokio::select! {
            () = shutdown.cancelled() => true,
            () = tokio::time::sleep(ACCESS_EVERY) => false,
        };
        let batch = log.take();
        if let Err(error) = memory.record_access(&batch).await {
            tracing::warn!(%error, "writing what was read failed; kept for the next write");
            log.restore(batch);
        }
        if stopping {
            return;
        }
    }
}
