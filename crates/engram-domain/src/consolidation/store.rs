//! [`ConsolidationStore`]: what the consolidation report and `get_pending_consolidation` read
//! besides the graph.

use async_trait::async_trait;
use serde::Serialize;

use crate::error::Result;
use crate::model::{Timestamp, WorkspaceId};
use crate::store::CountEvents;

/// What the consolidation report and `get_pending_consolidation` read besides the graph.
#[async_trait]
pub trait ConsolidationStore: Send + Sync + 'static {
    /// `get_pending_consolidation`: nodes with observations whose summary was never set or
    /// was set before their newest observation was written; oldest summary first.
    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>>;
    /// Counts of create, update and delete events since `since` (the consolidation report's
    /// `event_summary`).
    async fn event_counts(&self, request: CountEvents) -> Result<EventCounts>;
}

/// Counts of events in a workspace since a point in time (the report's `event_summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EventCounts {
    /// The start of the window.
    pub since: Timestamp,
    /// Nodes, observations and relations created.
    pub creates: i64,
    /// Nodes and observations changed, relations renamed.
    pub updates: i64,
    /// Nodes, observations and relations deleted.
    pub deletes: i64,
}

/// One row of `get_pending_consolidation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingConsolidation {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// How many observations it holds.
    pub observation_count: i64,
    /// When its newest observation was written (added or replaced).
    pub last_observation_at: Timestamp,
    /// When its summary was last set; `null` when never.
    pub summary_updated_at: Option<Timestamp>,
}
