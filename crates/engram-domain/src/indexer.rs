//! The indexer: finds (observation, perspective) pairs whose vector is missing or stale,
//! renders them, embeds the changed ones in one batch and stores the results. Writes never
//! wait for it; its state lives in the database, so it survives restarts and an embedder
//! that is down (the pairs simply stay pending).

use std::sync::Arc;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::perspectives::render_document;
use crate::search::{EmbeddingRecord, text_hash};
use crate::store::MemoryStore;

/// Keeps a store's vectors for one embedder current. The loop that calls
/// [`Indexer::run_once`] (and sleeps when idle) belongs to the binary.
#[derive(Clone)]
pub struct Indexer {
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    batch_size: usize,
}

impl Indexer {
    /// An indexer embedding at most `batch_size` pairs per pass.
    pub fn new(
        store: Arc<dyn MemoryStore>,
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
    ) -> Self {
        Self {
            store,
            embedder,
            batch_size: batch_size.max(1),
        }
    }

    /// One pass: how many pairs it brought up to date (0 when nothing was pending).
    ///
    /// Errors: the embedder's or the store's; nothing is lost, the pairs stay pending.
    pub async fn run_once(&self) -> Result<usize> {
        let model = self.embedder.model_id();
        let tasks = self
            .store
            .pending_embeddings(model, self.batch_size)
            .await?;
        if tasks.is_empty() {
            return Ok(0);
        }
        let mut records = Vec::with_capacity(tasks.len());
        let mut texts = Vec::new();
        let mut to_embed = Vec::new();
        for (i, task) in tasks.iter().enumerate() {
            let text = render_document(&task.document_template, &task.context);
            let hash = text_hash(&text);
            if task.stored_hash.as_deref() != Some(hash.as_slice()) {
                texts.push(text);
                to_embed.push(i);
            }
            records.push(EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: hash,
                source_updated_at: task.source_updated_at,
                vector: None,
            });
        }
        if !texts.is_empty() {
            let vectors = self.embedder.embed_documents(&texts).await?;
            if vectors.len() != texts.len() {
                return Err(Error::Internal(format!(
                    "embedder {model} returned {} vectors for {} texts",
                    vectors.len(),
                    texts.len()
                )));
            }
            for (i, vector) in to_embed.into_iter().zip(vectors) {
                records[i].vector = Some(vector);
            }
        }
        self.store.save_embeddings(model, &records).await?;
        Ok(records.len())
    }

    /// Runs passes until nothing is pending; returns how many pairs were brought up to date.
    /// For tests and `engram reindex`; servers call [`Indexer::run_once`] from their loop.
    pub async fn run_until_idle(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let done = self.run_once().await?;
            if done == 0 {
                return Ok(total);
            }
            total += done;
        }
    }
}
