//! Embeddings from an Ollama server (`/api/embed`), through ollama-rs.

use std::num::NonZeroU32;
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use engram_domain::{Embedder, Error, Result};
use ollama_rs::Ollama;
use ollama_rs::error::OllamaError;
use ollama_rs::generation::embeddings::request::{EmbeddingsInput, GenerateEmbeddingsRequest};
use reqwest_012 as reqwest;

use crate::normalize;

/// Ollama's address when `OLLAMA_HOST` is not set.
pub const DEFAULT_HOST: &str = "http://127.0.0.1:11434";

/// Ollama's port when a host without a scheme names none.
const DEFAULT_PORT: u16 = 11434;

/// The embedding model when `ENGRAM_EMBED_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "nomic-embed-text";

/// Texts per `/api/embed` call.
const BATCH_SIZE: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const ATTEMPTS: NonZeroU32 = NonZeroU32::new(4).unwrap();
const FIRST_DELAY: Duration = Duration::from_millis(200);
/// Calls at most when Ollama answers with an error status (see [`OllamaEmbedder`]).
const ANSWERED_ERROR_ATTEMPTS: u32 = 2;

/// An embedding model served by Ollama, model id `ollama/<model>`.
///
/// Texts go in batches of at most 64 per `/api/embed` call. Connection errors are retried
/// with exponential backoff (by default 4 attempts, waiting 200, 400 and 800 ms), an error
/// answer once (after 200 ms), then reported as [`Error::Unavailable`]. The model's dimension is learnt
/// from its first answer; an answer of another dimension is an [`Error::Internal`].
/// Vectors are L2-normalised here, whatever the model does.
pub struct OllamaEmbedder {
    client: Ollama,
    model: String,
    model_id: String,
    prefixes: Option<Prefixes>,
    dimension: OnceLock<usize>,
    attempts: NonZeroU32,
    first_delay: Duration,
}

/// The text put before documents and queries, for models trained with them.
struct Prefixes {
    document: &'static str,
    query: &'static str,
}

impl OllamaEmbedder {
    /// An embedder for `model` on the Ollama server at `host`. Nothing is contacted yet.
    ///
    /// `host` is read as Ollama reads `OLLAMA_HOST`: an http(s) URL (e.g. [`DEFAULT_HOST`]),
    /// or `host[:port]` without a scheme, meaning `http://host:port` (port 11434 by default).
    ///
    /// Errors: [`Error::InvalidArgument`] for a host that is not an http(s) URL or an
    /// empty model name.
    pub fn new(host: &str, model: &str) -> Result<Self> {
        if model.is_empty() {
            return Err(Error::invalid("model", "the model name is empty"));
        }
        let client = client(host, REQUEST_TIMEOUT)?;
        let prefixes = model.starts_with("nomic-embed-text").then_some(Prefixes {
            document: "search_document: ",
            query: "search_query: ",
        });
        Ok(Self {
            client,
            model: model.to_owned(),
            model_id: format!("ollama/{model}"),
            prefixes,
            dimension: OnceLock::new(),
            attempts: ATTEMPTS,
            first_delay: FIRST_DELAY,
        })
    }

    /// Changes the retry policy: `attempts` calls at most, waiting `first_delay` after the
    /// first failure and doubling the wait after each further one.
    pub fn with_retries(mut self, attempts: NonZeroU32, first_delay: Duration) -> Self {
        self.attempts = attempts;
        self.first_delay = first_delay;
        self
    }

    /// The URL of the Ollama server, as `host` was read.
    pub fn url(&self) -> &str {
        self.client.url_str()
    }

    /// The model's dimension, once an answer has shown it.
    pub fn dimension(&self) -> Option<usize> {
        self.dimension.get().copied()
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH_SIZE) {
            let answer = self.call(batch).await?;
            vectors.extend(self.check(batch.len(), answer)?);
        }
        Ok(vectors)
    }

    /// One `/api/embed` call, retried on connection errors and error answers.
    async fn call(&self, batch: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut delay = self.first_delay;
        let mut attempt = 1;
        loop {
            let request = GenerateEmbeddingsRequest::new(
                self.model.clone(),
                EmbeddingsInput::Multiple(batch.to_vec()),
            );
            let err = match self.client.generate_embeddings(request).await {
                Ok(answer) => return Ok(answer.embeddings),
                Err(err) => err,
            };
            let message = error_chain(&err);
            // ollama-rs reports an error status without its code. An error answer (a text
            // the model cannot take, a model not pulled, a busy server) is tried once more,
            // not `attempts` times: most are the same on every try, and a caller that
            // halves a refused batch to find the text at fault must not wait seconds per
            // half. Connection errors get every attempt.
            let attempts = match err {
                OllamaError::ReqwestError(_) => self.attempts.get(),
                OllamaError::Other(_) => self.attempts.get().min(ANSWERED_ERROR_ATTEMPTS),
                _ => return Err(Error::Internal(format!("ollama {}: {message}", self.model))),
            };
            if attempt >= attempts {
                return Err(Error::Unavailable(format!(
                    "ollama at {} ({}) failed {attempt} times: {message}; is `ollama serve` \
                     running there, and has `ollama pull {}` been run?",
                    self.client.url_str(),
                    self.model,
                    self.model
                )));
            }
            tracing::warn!(attempt, model = %self.model, error = %message, "ollama embed call failed, retrying");
            tokio::time::sleep(delay).await;
            delay = delay.saturating_mul(2);
            attempt += 1;
        }
    }

    /// Checks an answer's shape and dimension, and normalises its vectors.
    fn check(&self, expected: usize, mut vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>> {
        if vectors.len() != expected {
            return Err(Error::Internal(format!(
                "ollama {} returned {} vectors for {expected} texts",
                self.model,
                vectors.len()
            )));
        }
        let Some(first) = vectors.first() else {
            return Ok(vectors);
        };
        let dimension = *self.dimension.get_or_init(|| first.len());
        for vector in &mut vectors {
            if vector.is_empty() || vector.len() != dimension {
                return Err(Error::Internal(format!(
                    "ollama {} returned a vector of dimension {}, expected {dimension}",
                    self.model,
                    vector.len()
                )));
            }
            normalize(vector);
        }
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for OllamaEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let texts = match &self.prefixes {
            Some(prefixes) => texts
                .iter()
                .map(|text| format!("{}{text}", prefixes.document))
                .collect(),
            None => texts.to_vec(),
        };
        self.embed(texts).await
    }

    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let prefix = self.prefixes.as_ref().map_or("", |prefixes| prefixes.query);
        self.embed(texts.iter().map(|text| format!("{prefix}{text}")).collect())
            .await
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let prefix = self.prefixes.as_ref().map_or("", |prefixes| prefixes.query);
        let mut vectors = self.embed(vec![format!("{prefix}{text}")]).await?;
        vectors
            .pop()
            .ok_or_else(|| Error::Internal(format!("ollama {} returned no vector", self.model)))
    }
}

/// An ollama-rs client for the server at `host` (read as Ollama reads `OLLAMA_HOST`), whose
/// calls give up after `timeout`.
pub(crate) fn client(host: &str, timeout: Duration) -> Result<Ollama> {
    let mut url = parse_host(host)?;
    // ollama-rs appends `api/...` to the URL as it is.
    if !url.path().ends_with('/') {
        url.set_path(&format!("{}/", url.path()));
    }
    let http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(timeout)
        .build()
        .map_err(|err| Error::Internal(format!("building the http client: {err}")))?;
    Ok(Ollama::builder().url(url).reqwest_client(http).build())
}

/// Reads `host` as Ollama reads `OLLAMA_HOST`.
fn parse_host(host: &str) -> Result<reqwest::Url> {
    let host = host.trim();
    let invalid = |reason: String| Error::invalid("host", reason);
    if host.contains("://") {
        let url = reqwest::Url::parse(host)
            .map_err(|err| invalid(format!("`{host}` is not a URL: {err}")))?;
        return match url.scheme() {
            "http" | "https" => Ok(url),
            _ => Err(invalid(format!("`{host}` is not an http(s) URL"))),
        };
    }
    let mut url = reqwest::Url::parse(&format!("http://{host}"))
        .map_err(|err| invalid(format!("`{host}` is not a host: {err}")))?;
    if url.port().is_none() {
        url.set_port(Some(DEFAULT_PORT))
            .map_err(|()| invalid(format!("`{host}` cannot have a port")))?;
    }
    Ok(url)
}

/// An error and its sources, `: `-separated (reqwest hides the cause in its sources).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let causes = std::iter::successors(err.source(), |cause| cause.source());
    causes.fold(err.to_string(), |message, cause| {
        format!("{message}: {cause}")
    })
}
