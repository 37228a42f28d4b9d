//! all-MiniLM-L6-v2 run in-process with candle: the default embedder.
//!
//! Reproduces sentence-transformers' vectors: WordPiece tokens truncated at 256, BERT, mean
//! pooling over the attention mask, L2 normalisation; 384 dimensions.

mod files;
mod model;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use engram_domain::{Embedder, Error, Result};
use tokio::sync::OnceCell;

pub use files::{MODEL_DIR_ENV, MODEL_FILES, ensure_model_files};
use model::Model;

/// The model id of [`LocalEmbedder`].
pub const MODEL_ID: &str = "local/all-MiniLM-L6-v2";

/// The dimension of [`LocalEmbedder`]'s vectors.
pub const DIMENSION: usize = 384;

/// all-MiniLM-L6-v2 in-process.
///
/// Construction is instant and cannot fail: the model's files are found (or fetched, see
/// [`ensure_model_files`]) and loaded on the first embed call, once; a failed load is
/// retried by the next call. All model work runs on tokio's blocking threads.
pub struct LocalEmbedder {
    source: Source,
    model: OnceCell<Arc<Model>>,
}

/// Where the model's files are taken from.
enum Source {
    /// `ENGRAM_MODEL_DIR`, else the cache (fetched on first use).
    Default,
    /// A directory holding [`MODEL_FILES`]; nothing is fetched.
    Dir(PathBuf),
}

impl LocalEmbedder {
    /// An embedder whose files come from `ENGRAM_MODEL_DIR`, else from the cache directory,
    /// fetched on first use (see [`ensure_model_files`]).
    pub fn new() -> Self {
        Self {
            source: Source::Default,
            model: OnceCell::new(),
        }
    }

    /// An embedder whose files are in `dir` (holding [`MODEL_FILES`]); nothing is fetched.
    pub fn from_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            source: Source::Dir(dir.into()),
            model: OnceCell::new(),
        }
    }

    /// Loads the model now rather than on the first embed call (a server may warm up with
    /// it); does nothing once loaded.
    pub async fn load(&self) -> Result<()> {
        self.model().await.map(drop)
    }

    async fn model(&self) -> Result<Arc<Model>> {
        let model = self
            .model
            .get_or_try_init(|| async {
                let dir = match &self.source {
                    Source::Default => None,
                    Source::Dir(dir) => Some(dir.clone()),
                };
                blocking(move || {
                    let dir = match dir {
                        Some(dir) => dir,
                        None => ensure_model_files()?,
                    };
                    let started = Instant::now();
                    let model = Model::load(&dir)?;
                    tracing::info!(dir = %dir.display(), elapsed = ?started.elapsed(), "local embedding model loaded");
                    Ok(Arc::new(model))
                })
                .await
            })
            .await?;
        Ok(Arc::clone(model))
    }
}

impl Default for LocalEmbedder {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.model().await?;
        let texts = texts.to_vec();
        blocking(move || model.embed(&texts)).await
    }

    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed_documents(texts).await
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed_documents(&[text.to_owned()]).await?;
        vectors
            .pop()
            .ok_or_else(|| Error::Internal("the local model returned no vector".into()))
    }
}

/// Runs `work` on tokio's blocking threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Error::Internal(format!("local embedding task failed: {err}")))?
}
