//! The report's pass over a workspace's current graph, page by page: every node's name and
//! type (merge candidates by name), how many facts each holds (split candidates), and the
//! alike facts within each node (`duplicate_observations`, `possibly_superseded`). A page's
//! texts are dropped once compared, so the pass holds one page at a time.

use crate::error::Result;
use crate::model::{Ordinal, WorkspaceId};
use crate::store::MemoryStore;
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
    /// Facts said twice within a node.
    pub(super) duplicates: Vec<FactPair>,
    /// Facts that may be updated by a newer one of their node.
    pub(super) versions: Vec<FactPair>,
}

/// Reads every node of `workspace` with its current facts, comparing each node's facts.
pub(super) async fn scan(store: &dyn MemoryStore, workspace: WorkspaceId) -> Result<Scan> {
    let mut scan = Scan::default();
    let mut after = None;
    loop {
        let query = GraphPageQuery {
            after,
            limit: PAGE,
            entity_type: None,
            observations: true,
            totals: false,
        };
        let page = store.graph_page(workspace, &query).await?;
        let full = page.nodes.len() == PAGE as usize;
        after = page.nodes.last().map(|(node, _)| node.name.clone());
        for (node, _) in page.nodes {
            let texts: Vec<(Ordinal, String)> = (node.observations.into_iter())
                .filter_map(|o| Some((o.ordinal?, o.content)))
                .collect();
            let (duplicates, versions) = facts::pairs(&node.name, &texts);
            scan.duplicates.extend(duplicates);
            scan.versions.extend(versions);
            scan.fact_counts.push(texts.len());
            scan.nodes.push(NamedNode {
                name: node.name,
                entity_type: node.entity_type,
            });
        }
        if !full {
            return Ok(scan);
        }
    }
}
