//! The report's pass over a workspace's current graph, page by page: every node's name and
//! type (merge candidates by name), how many facts each holds (split candidates), and the
//! alike facts within each node (`duplicate_observations`, `possibly_superseded`). A page's
//! texts are dropped once compared, so the pass holds one page at a time.

use std::time::Instant;

use crate::error::Result;
use crate::grouping;
use crate::model::{Ordinal, Timestamp, WorkspaceId};
use crate::tool::MemoryStore;
use crate::transfer::GraphPageQuery;

use super::duplicates::NamedNode;
use super::facts::{self, FactPair};

/// Nodes read per page.
const PAGE: u32 = 500;

/// What the pass found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Every node, in name order.
    pub(super) nodes: Vec<NamedNode>,
    /// Each node's count of current facts, in the same order.
    pub(super) fact_counts: Vec<usize>,
    /// When each node last changed, in the same order.
    pub(super) updated_at: Vec<Option<Timestamp>>,
    /// Facts said twice within a node.
    pub(super) duplicates: Vec<FactPair>,
    /// Facts that may be updated by a newer one of their node.
    pub(super) versions: Vec<FactPair>,
    /// Nodes with two or more facts whose facts the budget left (wholly or partly) uncompared.
    pub(super) uncompared: usize,
}

/// Reads every node of `workspace` with its current facts, comparing each node's facts until
/// `deadline` (the report's, shared with its other analyses); nodes past it are still read.
pub(super) async fn scan(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    deadline: Instant,
) -> Result<Scan> {
    let mut scan = Scan::default();
    let mut after = None;
    loop {
        let query = GraphPageQuery {
            after,
            limit: PAGE,
            entity_type: None,
            observations: true,
            over_time: false,
            totals: false,
        };
        let page = store.graph_page(workspace, &query).await?;
        let full = page.nodes.len() == PAGE as usize;
        after = page.nodes.last().map(|(node, _)| node.name.clone());
        // Comparing a page's facts is CPU work (every pair within each node): off the async
        // runtime, in a turn of the report's other pairwise work.
        let compared = grouping::off_runtime(deadline, move |budget| {
            let mut found = Scan::default();
            for (node, _) in page.nodes {
                let texts: Vec<(Ordinal, String)> = (node.observations.into_iter())
                    .filter_map(|o| Some((o.ordinal?, o.content)))
                    .collect();
                let pairs = facts::pairs(&node.name, &texts, budget);
                found.duplicates.extend(pairs.duplicates);
                found.versions.extend(pairs.versions);
                found.uncompared += usize::from(pairs.cut_short);
                found.fact_counts.push(texts.len());
                found.updated_at.push(node.updated_at);
                found.nodes.push(NamedNode {
                    name: node.name,
                    entity_type: node.entity_type,
                });
            }
            found
        })
        .await?;
        scan.nodes.extend(compared.nodes);
        scan.fact_counts.extend(compared.fact_counts);
        scan.updated_at.extend(compared.updated_at);
        scan.duplicates.extend(compared.duplicates);
        scan.versions.extend(compared.versions);
        scan.uncompared += compared.uncompared;
        if !full {
            return Ok(scan);
        }
    }
}
