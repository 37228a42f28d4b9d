//! Embedding a search's query: the perspectives it is rendered for, the cache of query
//! vectors, the time a search may wait for the embedder, and the pause after it failed or
//! overran. One [`QueryEmbedding`] per
//! [`crate::Memory`] (its clones share it).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lru::LruCache;

use crate::embed::{Embedder, Embedding};
use crate::error::{Error, Result};
use crate::model::WorkspaceId;
use crate::perspectives::Perspective;
use crate::retry::Failure;
use crate::vectors::{usual_dimension, vector_defect};

/// The default query embedding budget: ample for a local model (≈ 10 ms a query) or a warm
/// Ollama, and a short wait when the embedder hangs.
pub const QUERY_EMBEDDING_BUDGET: Duration = Duration::from_secs(3);

/// How long searches answer from full text alone after the embedder failed or overran its
/// budget, before they try it again.
pub const EMBEDDER_PAUSE: Duration = Duration::from_secs(30);

/// An embedder's refusal faster than this does not pause it: the pause spares searches a
/// wait, and such a refusal makes none (a local model that is still being fetched).
pub const FAST_REFUSAL: Duration = Duration::from_millis(100);

/// Query embeddings kept: about 2 MB at 384 dimensions (1.5 kB a vector, about 0.5 kB of
/// token signs for a ten-word question).
const CACHED_QUERIES: NonZeroUsize = NonZeroUsize::new(1_024).unwrap();

/// The query-embedding state of a [`crate::Memory`].
pub(crate) struct QueryEmbedding {
    /// Query embeddings (vector and token signs) by (model id, rendered query), most recently
    /// used kept.
    cache: Mutex<LruCache<(String, String), Arc<Embedding>>>,
    /// How long a search waits for the embedder before answering from full text.
    budget: Duration,
    /// While its wait runs, searches skip the embedder (it failed or was too slow): a down or
    /// hung embedder costs one budget, not one per search.
    pause: Mutex<Option<Failure>>,
    /// Each workspace's perspectives as its last search saw them. A search renders its query
    /// for these, and its one store call reads them again in its snapshot
    /// ([`crate::search::Gathered::perspectives`]): a change made since (by any process) is
    /// seen by the search it would have changed, which then runs again.
    perspectives: Mutex<HashMap<WorkspaceId, Arc<Vec<Perspective>>>>,
}

impl QueryEmbedding {
    /// Empty, waiting at most `budget` for the embedder.
    pub(crate) fn new(budget: Duration) -> Self {
        Self {
            cache: Mutex::new(LruCache::new(CACHED_QUERIES)),
            budget,
            pause: Mutex::new(None),
            perspectives: Mutex::default(),
        }
    }

    /// The perspectives the last search of `workspace` saw, if any.
    pub(crate) fn perspectives(&self, workspace: WorkspaceId) -> Option<Arc<Vec<Perspective>>> {
        let known = self.perspectives.lock().unwrap_or_else(|e| e.into_inner());
        known.get(&workspace).cloned()
    }

    /// Keeps `perspectives` as `workspace`'s (`None` forgets them: this process changed one).
    pub(crate) fn remember(&self, workspace: WorkspaceId, perspectives: Option<Vec<Perspective>>) {
        let mut known = self.perspectives.lock().unwrap_or_else(|e| e.into_inner());
        match perspectives {
            Some(perspectives) => known.insert(workspace, Arc::new(perspectives)),
            None => known.remove(&workspace),
        };
    }

    /// The embedding of every text of `texts` by `embedder`, by text: cached ones from the
    /// cache, the rest in one [`Embedder::embed_queries_with_tokens`] call within the budget
    /// (each text once).
    ///
    /// # Errors
    /// [`Error::Unavailable`] saying why (the embedder paused, failed, overran, or answered
    /// with malformed vectors, which are never cached), so the search answers from text.
    pub(crate) async fn embed(
        &self,
        embedder: &Arc<dyn Embedder>,
        texts: &[String],
    ) -> Result<HashMap<String, Arc<Embedding>>> {
        let model = embedder.model_id();
        let mut known: HashMap<String, Arc<Embedding>> = HashMap::new();
        let mut missing: Vec<String> = Vec::new();
        {
            let mut cache = self.lock_cache();
            for text in texts {
                if known.contains_key(text) || missing.contains(text) {
                    continue;
                }
                match cache.get(&(model.to_owned(), text.clone())) {
                    Some(vector) => {
                        known.insert(text.clone(), vector.clone());
                    }
                    None => missing.push(text.clone()),
                }
            }
        }
        if missing.is_empty() {
            return Ok(known);
        }
        let vectors = self.embed_within_budget(embedder, &missing).await?;
        if vectors.len() != missing.len() {
            return Err(Error::Unavailable(format!(
                "the embedder returned {} vectors for {} queries",
                vectors.len(),
                missing.len()
            )));
        }
        let dimension = (known.values().next())
            .map(|e| e.vector.len())
            .or_else(|| usual_dimension(vectors.iter().map(|e| e.vector.as_slice())));
        if let Some(defect) = (vectors.iter()).find_map(|e| vector_defect(&e.vector, dimension)) {
            return Err(Error::Unavailable(defect));
        }
        let mut cache = self.lock_cache();
        for (text, embedding) in missing.into_iter().zip(vectors) {
            let embedding = Arc::new(embedding);
            cache.put((model.to_owned(), text.clone()), embedding.clone());
            known.insert(text, embedding);
        }
        Ok(known)
    }

    /// `embedder.embed_queries_with_tokens(texts)` within the budget, unless the embedder is
    /// paused after a failure; a failure that took [`FAST_REFUSAL`] or longer, or an overrun,
    /// pauses it for [`EMBEDDER_PAUSE`].
    async fn embed_within_budget(
        &self,
        embedder: &Arc<dyn Embedder>,
        texts: &[String],
    ) -> Result<Vec<Embedding>> {
        let pause = |reason: String| {
            let failure = Failure::after(None, reason.clone(), EMBEDDER_PAUSE, EMBEDDER_PAUSE);
            *self.lock_pause() = Some(failure);
            Error::Unavailable(reason)
        };
        if let Some(paused) = self.lock_pause().as_ref()
            && let Some(left) = paused.wait_left()
        {
            return Err(Error::Unavailable(format!(
                "{}; trying it again in {} s",
                paused.reason(),
                left.as_secs().max(1)
            )));
        }
        let asked = std::time::Instant::now();
        match tokio::time::timeout(self.budget, embedder.embed_queries_with_tokens(texts)).await {
            Ok(Ok(vectors)) => Ok(vectors),
            // An embedder that says no at once (a model still downloading) costs nothing to
            // ask again, and the next search may find it ready: no pause.
            Ok(Err(Error::Unavailable(reason))) if asked.elapsed() < FAST_REFUSAL => {
                Err(Error::Unavailable(reason))
            }
            Ok(Err(Error::Unavailable(reason))) => Err(pause(reason)),
            // Any other failure of the embedder (a malformed answer) is not the search's:
            // it answers from full text.
            Ok(Err(other)) => Err(Error::Unavailable(format!("the embedder failed: {other}"))),
            Err(_) => Err(pause(format!(
                "the embedder did not answer within {} ms",
                self.budget.as_millis()
            ))),
        }
    }

    fn lock_pause(&self) -> MutexGuard<'_, Option<Failure>> {
        self.pause
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_cache(&self) -> MutexGuard<'_, LruCache<(String, String), Arc<Embedding>>> {
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
