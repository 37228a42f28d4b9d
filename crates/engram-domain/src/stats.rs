//! `get_stats`: the store's counts, with the embedder's model, how much of the workspace it
//! has embedded (`embedding_coverage.rs`), and the texts it rejected.

use async_trait::async_trait;
use serde::Serialize;

use crate::error::Result;
use crate::model::WorkspaceId;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// `get_stats` takes no arguments: any is refused as unknown.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetStats {}

impl Tool for GetStats {
    const NAME: &'static str = "get_stats";
    const DESCRIPTION: &'static str = "Counts, embedding coverage, and texts the embedder refused.";
    const EFFECT: Effect = Effect::Reads;
    type Output = Stats;

    /// The store's counts, with `embedding_coverage` for the configured embedder (0.0
    /// without one) and the texts its embedder refused.
    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, search, counted) = (context.store, context.search, context.counted_coverage);
        let mut stats = store.get_stats(workspace).await?;
        stats.rejected_texts = search.rejected_texts(workspace).len() as u64;
        let model = search.embedder().map(|e| e.model_id());
        stats.embedding_model = model.map(str::to_owned);
        stats.embedding_coverage = match model {
            Some(model) => {
                let texts = (stats.observation_count, stats.rejected_texts);
                let indexer = search.indexer();
                (counted.coverage(store, indexer, workspace, texts, model)).await?
            }
            None => 0.0,
        };
        Ok(stats)
    }
}

/// The statistics tool.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<GetStats>();
}

/// The counts `get_stats` answers.
#[async_trait]
pub trait StatsStore: Send + Sync + 'static {
    /// `get_stats`: counts, and the fraction of current embeddings.
    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats>;
}

/// Result of `get_stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Stats {
    /// Nodes in the workspace.
    pub node_count: i64,
    /// Observations in the workspace, those that no longer hold (ended, or expired and not
    /// yet purged) included.
    pub observation_count: i64,
    /// Of those, the ones that no longer hold: kept for `include_ended`, `as_of` and history
    /// (an expired one until the purge deletes it, within a minute); absent when none.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub ended_observations: i64,
    /// Current observations that will expire (`expires_at`); absent when none.
    #[serde(skip_serializing_if = "crate::compact::is_zero")]
    pub expiring_observations: i64,
    /// Relations in the workspace.
    pub relation_count: i64,
    /// Fraction (0.0–1.0) of observation × perspective pairs whose embedding is current.
    /// While the indexer is working it may be up to 5 seconds old, unless something was
    /// written since.
    #[serde(serialize_with = "crate::compact::share")]
    pub embedding_coverage: f64,
    /// Observation × perspective texts of the workspace the embedder refused: set aside with
    /// their reason, tried again after a back-off, found by full text meanwhile (an
    /// extension; 0 when this process runs no indexer).
    pub rejected_texts: u64,
    /// The model the embeddings are made with (`local/multilingual-e5-small`,
    /// `ollama/nomic-embed-text`); absent without an embedder (an extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// The workspace's name.
    pub workspace: String,
}
