//! The embedding model behind semantic search.

use async_trait::async_trait;

use crate::error::Result;

/// A text's embedding: its vector and, from a model that exposes them, the packed signs of
/// its content tokens' vectors for late interaction ([`crate::search::late_interaction`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The pooled, L2-normalised vector.
    pub vector: Vec<f32>,
    /// [`crate::search::late_interaction::pack_signs`] of the content tokens' vectors (of the
    /// vector's dimension); `None` when the model gives no token vectors or the text has no
    /// content token.
    pub token_signs: Option<Vec<u8>>,
}

impl From<Vec<f32>> for Embedding {
    /// An embedding without token signs.
    fn from(vector: Vec<f32>) -> Self {
        Self {
            vector,
            token_signs: None,
        }
    }
}

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

    /// Embeds documents with their token signs ([`Embedding`]); one per text, in order. The
    /// default gives [`Embedder::embed_documents`]'s vectors without token signs.
    async fn embed_documents_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let vectors = self.embed_documents(texts).await?;
        Ok(vectors.into_iter().map(Embedding::from).collect())
    }

    /// Embeds search queries with their token signs ([`Embedding`]); one per text, in order.
    /// The default gives [`Embedder::embed_queries`]'s vectors without token signs.
    async fn embed_queries_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let vectors = self.embed_queries(texts).await?;
        Ok(vectors.into_iter().map(Embedding::from).collect())
    }

    /// Resolves when the embedder becomes able to answer after being unavailable (a model
    /// that finished downloading and loading), so that an indexer backing off after its
    /// failures starts at once; an embedder already able to answer never resolves it. The
    /// default never resolves: such an embedder is asked again when the back-off ends.
    async fn ready(&self) {
        std::future::pending::<()>().await;
    }

    /// How this model's similarities become calibrated scores
    /// ([`crate::search::calibration`]); `None` (the default) leaves hybrid and embedding scores
    /// uncalibrated (ranking scores, comparable within one search only) and drops nothing.
    fn calibration(&self) -> Option<crate::search::calibration::ModelCalibration> {
        None
    }

    /// The cosines above which two facts of one node say one thing twice or one may update
    /// the other, by this model's meaning ([`crate::FactPairCosines`]); `None` (the default)
    /// leaves the report's fact pairs to words alone.
    fn fact_pairs(&self) -> Option<crate::FactPairCosines> {
        None
    }
}
