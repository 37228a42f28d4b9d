//! [`TransferStore`]: the lossless export's pages and the import's batches.

use async_trait::async_trait;

use crate::checked::Checked;
use crate::error::Result;
use crate::model::WorkspaceId;
use crate::transfer::*;

/// Whole-graph pages and import batches (`read_graph`, `engram export`, `engram import`).
#[async_trait]
pub trait TransferStore: Send + Sync + 'static {
    /// `read_graph` and `engram export`: one page of the workspace's graph in one snapshot,
    /// nodes in byte-wise name order after `query.after` (at most `query.limit`,
    /// of `query.entity_type` when given) with their observation counts, their observations
    /// when `query.observations`, and the relations leaving them.
    async fn graph_page(&self, workspace: WorkspaceId, query: &GraphPageQuery)
    -> Result<GraphPage>;
    /// `engram import`: one batch in one transaction. Nodes that do not exist are created as
    /// recorded (given ordinals, timestamps and ordinal counter kept); nodes that exist keep
    /// their type, summary and tags. Either way, observations whose text the node already
    /// holds are skipped and the others placed by [`crate::transfer::place_observations`].
    /// Relations whose endpoints both exist (after this batch's nodes) are created unless
    /// present; the others come back in `relations_missing`.
    async fn import(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ImportBatch>,
    ) -> Result<ImportOutcome>;
}
