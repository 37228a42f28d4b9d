//! The embedding coverage `get_stats` reports, counted, or reused while the indexer works
//! (`CountedCoverages`, which a `Memory` keeps), and [`Memory`](crate::Memory)'s view of the
//! indexer's work for operators (`engram reindex`, the viewer, the metrics): how many texts a
//! workspace has to embed, how many are current ([`EmbeddingProgress`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::indexer::Indexer;
use crate::model::WorkspaceId;
use crate::store::ModelEmbeddings;
use crate::vectors::IndexStore;

/// How long `get_stats` reuses a counted embedding coverage while the indexer works and
/// nothing was written: counting the current vectors is a join over all of them (122–135 ms
/// at 100,000 observations on PostgreSQL), and the figure moves with every batch anyway.
pub const COVERAGE_REUSE: Duration = Duration::from_secs(5);

/// The last counted embedding coverage per workspace while the indexer works, with when it was
/// counted and the store's change marker then ([`COVERAGE_REUSE`]). Clones share it.
#[derive(Clone, Default)]
pub(crate) struct CountedCoverages(Arc<Mutex<HashMap<WorkspaceId, CountedCoverage>>>);

/// A counted embedding coverage: when, at which change marker, and the figure.
#[derive(Clone, Copy)]
struct CountedCoverage {
    at: Instant,
    marker: i64,
    coverage: f64,
}

impl CountedCoverages {
    /// The embedding coverage. Counting the current vectors is a join over all of them, so with
    /// an indexer, whose passes are all that changes the figure between writes, the store's change
    /// marker is read once and:
    /// - when the indexer's last pass found nothing pending but the texts it set aside, at
    ///   this marker ([`crate::Indexer::idle_at`]), every (observation, enabled perspective)
    ///   pair but those is current, nothing counted;
    /// - otherwise the last count is reused while under [`COVERAGE_REUSE`] old and taken at
    ///   this marker;
    /// - otherwise it is counted.
    pub(crate) async fn coverage(
        &self,
        store: &dyn IndexStore,
        indexer: Option<&Indexer>,
        workspace: WorkspaceId,
        (observations, rejected): (i64, u64),
        model: &str,
    ) -> Result<f64> {
        let Some(indexer) = indexer else {
            return (store)
                .embedding_coverage(ModelEmbeddings { workspace, model })
                .await;
        };
        let marker = store.change_marker().await?;
        if indexer.idle_at() == Some(marker) {
            let enabled = (store.perspectives(workspace).await?.iter())
                .filter(|p| p.enabled)
                .count() as i64;
            let pairs = observations.saturating_mul(enabled);
            let rejected = i64::try_from(rejected).unwrap_or(i64::MAX);
            return Ok(if pairs <= 0 {
                1.0
            } else {
                pairs.saturating_sub(rejected).max(0) as f64 / pairs as f64
            });
        }
        let reusable = |c: &CountedCoverage| c.marker == marker && c.at.elapsed() < COVERAGE_REUSE;
        let reused = self.lock().get(&workspace).copied();
        if let Some(reused) = reused.filter(reusable) {
            return Ok(reused.coverage);
        }
        let at = Instant::now();
        let coverage = (store)
            .embedding_coverage(ModelEmbeddings { workspace, model })
            .await?;
        let count = CountedCoverage {
            at,
            marker,
            coverage,
        };
        self.lock().insert(workspace, count);
        Ok(coverage)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<WorkspaceId, CountedCoverage>> {
        (self.0.lock()).unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How far the embedder is with a workspace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmbeddingProgress {
    /// The workspace's (observation, enabled perspective) pairs.
    pub pairs: u64,
    /// The share of them (0.0–1.0) whose vector for the model is current; 1.0 without pairs.
    pub coverage: f64,
}

impl EmbeddingProgress {
    /// Pairs still to embed.
    pub fn backlog(&self) -> u64 {
        self.pairs - self.embedded()
    }

    /// Pairs whose vector is current.
    pub fn embedded(&self) -> u64 {
        ((self.coverage * self.pairs as f64).round() as u64).min(self.pairs)
    }
}

/// The semantics of [`Memory::embedding_progress`](crate::Memory::embedding_progress).
pub(crate) async fn embedding_progress(
    store: &dyn IndexStore,
    workspace: WorkspaceId,
    model: &str,
) -> Result<EmbeddingProgress> {
    let coverage = store
        .embedding_coverage(ModelEmbeddings { workspace, model })
        .await?;
    let pairs = store.embedding_pairs(workspace).await?;
    Ok(EmbeddingProgress { pairs, coverage })
}

#[cfg(test)]
mod tests {
    use super::EmbeddingProgress;

    #[test]
    fn the_backlog_is_what_the_coverage_leaves() {
        let progress = EmbeddingProgress {
            pairs: 10,
            coverage: 0.26,
        };
        assert_eq!((progress.embedded(), progress.backlog()), (3, 7));
        let none = EmbeddingProgress {
            pairs: 0,
            coverage: 1.0,
        };
        assert_eq!((none.embedded(), none.backlog()), (0, 0));
    }
}
