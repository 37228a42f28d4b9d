//! Text generation from an Ollama server (`/api/generate`), through ollama-rs: the
//! consolidation report's drafts, rationales and labels.

use std::time::Duration;

use async_trait::async_trait;
use engram_domain::{Error, Result, TextGenerator};
use ollama_rs::Ollama;
use ollama_rs::error::OllamaError;
use ollama_rs::generation::completion::request::GenerationRequest;
use ollama_rs::models::ModelOptions;

use crate::ollama::{client, error_chain};

/// How long one generation may take before it is abandoned (the report's own budget is
/// usually shorter).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Tokens generated at most per answer: enough for a two-sentence summary.
const MAX_TOKENS: i32 = 160;
/// Low, so drafts stay close to the facts they are given.
const TEMPERATURE: f32 = 0.2;

/// A text model served by Ollama, model id `ollama/<model>` (e.g. `llama3.2`).
///
/// One `/api/generate` call per text, not streamed, at most 160 tokens at temperature 0.2.
/// It does not retry: the consolidation report keeps the extractive text when a call fails.
pub struct OllamaGenerator {
    client: Ollama,
    model: String,
    model_id: String,
}

impl OllamaGenerator {
    /// A generator for `model` on the Ollama server at `host` (read as Ollama reads
    /// `OLLAMA_HOST`, see [`crate::OllamaEmbedder::new`]). Nothing is contacted yet.
    ///
    /// Errors: [`Error::InvalidArgument`] for a host that is not an http(s) URL or an empty
    /// model name.
    pub fn new(host: &str, model: &str) -> Result<Self> {
        if model.is_empty() {
            return Err(Error::invalid("model", "the model name is empty"));
        }
        Ok(Self {
            client: client(host, REQUEST_TIMEOUT)?,
            model: model.to_owned(),
            model_id: format!("ollama/{model}"),
        })
    }
}

#[async_trait]
impl TextGenerator for OllamaGenerator {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Errors: [`Error::Unavailable`] when the server cannot be reached or answers with an
    /// error (such as a model not pulled); [`Error::Internal`] for an answer that is not
    /// Ollama's.
    async fn generate(&self, prompt: &str) -> Result<String> {
        let options = ModelOptions::default()
            .temperature(TEMPERATURE)
            .num_predict(MAX_TOKENS);
        let request = GenerationRequest::new(self.model.clone(), prompt).options(options);
        match self.client.generate(request).await {
            Ok(answer) => Ok(answer.response),
            Err(err @ (OllamaError::ReqwestError(_) | OllamaError::Other(_))) => {
                Err(Error::Unavailable(format!(
                    "ollama at {} ({}): {}; is `ollama serve` running there, and has `ollama \
                     pull {}` been run?",
                    self.client.url_str(),
                    self.model,
                    error_chain(&err),
                    self.model
                )))
            }
            Err(err) => Err(Error::Internal(format!(
                "ollama {}: {}",
                self.model,
                error_chain(&err)
            ))),
        }
    }
}
