//! The embedding model behind semantic search.

use async_trait::async_trait;

use crate::error::Result;

/// A text-embedding model.
///
/// Vectors from different models are never compared: every stored vector carries the
/// [`Embedder::model_id`] that made it and its dimension (the vector's length).
/// Implementations return L2-normalised vectors, so cosine similarity is a dot product.
///
/// Errors: [`crate::Error::Unavailable`] when the model cannot be reached or loaded (the
/// indexer retries later); [`crate::Error::Internal`] for an answer that makes no sense
/// (wrong count, empty or ragged vectors).
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// Identifies the model and how it is run, e.g. `local/all-MiniLM-L6-v2` or
    /// `ollama/nomic-embed-text`. At most 128 bytes; stable across restarts.
    fn model_id(&self) -> &str;

    /// Embeds documents (stored texts): one vector per text, in order, all of one dimension.
    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;

    /// Embeds a search query. Models trained with distinct query and document forms (such as
    /// `nomic-embed-text`'s `search_query:` prefix) apply the query form here.
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>>;

    /// Embeds several search queries: one vector per text, in order. The default calls
    /// [`Embedder::embed_query`] for each; models that batch override it, so a search that
    /// renders the query once per perspective costs one model call.
    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for text in texts {
            vectors.push(self.embed_query(text).await?);
        }
        Ok(vectors)
    }
}
