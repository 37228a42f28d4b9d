//! The text model behind the consolidation report's drafts, rationales and labels.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;

/// A text-generation model (such as `llama3.2` behind Ollama's `/api/generate`).
///
/// The consolidation report asks it for short texts and treats every failure the same way:
/// the field keeps its extractive value. So an implementation need not retry.
///
/// Errors: [`crate::Error::Unavailable`] when the model cannot be reached or loaded;
/// [`crate::Error::Internal`] for an answer that makes no sense.
#[async_trait]
pub trait TextGenerator: Send + Sync + 'static {
    /// Identifies the model and how it is run, e.g. `ollama/llama3.2`.
    fn model_id(&self) -> &str;

    /// The model's completion of `prompt` (plain text, no streaming).
    async fn generate(&self, prompt: &str) -> Result<String>;
}

/// How much generation one consolidation report may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerationBudget {
    /// Wall-clock time for all of a report's generations together; what has not finished by
    /// then stays extractive.
    pub total: Duration,
    /// Generations in flight at once.
    pub concurrency: usize,
}

impl Default for GenerationBudget {
    /// 20 seconds, 4 at a time.
    fn default() -> Self {
        Self {
            total: Duration::from_secs(20),
            concurrency: 4,
        }
    }
}
