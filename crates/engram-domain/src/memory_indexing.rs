//! [`Memory`]'s view of the indexer's work, for operators (`engram reindex`, the viewer, the
//! metrics): how many texts a workspace has to embed, how many are current, and starting over.

use crate::error::Result;
use crate::model::WorkspaceId;
use crate::store::MemoryStore;
use crate::store::ModelEmbeddings;

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
    store: &dyn MemoryStore,
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
