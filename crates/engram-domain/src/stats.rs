//! `get_stats`: the store's counts, with the embedder's model, how much of the workspace it
//! has embedded (`embedding_coverage.rs`), and the texts it rejected.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{Stats, WorkspaceId};
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
            Some(model) => (counted.coverage(store, search, workspace, &stats, model)).await?,
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
