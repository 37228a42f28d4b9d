//! The report's `split_candidates`: of the nodes with the most current facts, those whose
//! facts fall into groups that stand clearly apart (`crate::split::grouping`, over the
//! facts' vectors or, without them, their words), for `propose_split` and `split_entity`.

use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::grouping::ANALYSIS_BUDGET;
use crate::model::{PerspectiveId, WorkspaceId};
use crate::split::{DEFAULT_SPLIT_PARTS, GROUPED_FACTS, grouping_off_runtime};
use crate::store::FactVectors;
use crate::tool::MemoryStore;

use super::scan::Scan;

/// Fewest current facts of a split candidate: a node smaller than this reads in one go.
pub const SPLIT_MIN_FACTS: usize = 20;

/// Nodes a report groups, the largest first (each grouping compares every pair of the node's
/// facts a few times over).
const SPLIT_CHECKED: usize = 10;

/// Least mean silhouette of a candidate's groups: stricter than `propose_split`'s, which
/// answers a node the caller chose, so that a node about one thing in many words is not named.
const SPLIT_SILHOUETTE: f32 = 0.1;

/// A node whose facts fall into distinct groups (`get_consolidation_report`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SplitCandidate {
    /// The node.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// How many current facts it holds.
    pub observation_count: i64,
    /// The groups `propose_split` would return, largest first: each group's label and size.
    pub groups: Vec<GroupBrief>,
}

/// One group of a [`SplitCandidate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GroupBrief {
    /// Its most distinctive words.
    pub label: String,
    /// How many facts it holds.
    pub size: i64,
}

/// The split candidates among the [`SPLIT_CHECKED`] largest nodes of `scan` with at least
/// [`SPLIT_MIN_FACTS`] facts, the largest first; the facts' vectors of `model` in
/// `perspective` where stored; grouped until `deadline`. A notice says when more nodes were
/// large enough, or when the deadline left some unchecked.
pub(super) async fn find(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    (model, perspective): (Option<&str>, Option<PerspectiveId>),
    scan: &Scan,
    deadline: Instant,
    notices: &mut Vec<String>,
) -> Result<Vec<SplitCandidate>> {
    let mut large: Vec<usize> = (0..scan.nodes.len())
        .filter(|&i| scan.fact_counts[i] >= SPLIT_MIN_FACTS)
        .collect();
    large.sort_by_key(|&i| std::cmp::Reverse(scan.fact_counts[i]));
    if large.len() > SPLIT_CHECKED {
        notices.push(format!(
            "split_candidates: checked the {SPLIT_CHECKED} largest of {} nodes with \
             {SPLIT_MIN_FACTS} or more facts; propose_split checks any node",
            large.len()
        ));
        large.truncate(SPLIT_CHECKED);
    }
    let mut found = Vec::new();
    let checked = large.len();
    for (done, i) in large.into_iter().enumerate() {
        if Instant::now() >= deadline {
            notices.push(format!(
                "split_candidates: checked {done} of the {checked} largest nodes within the \
                 report's {} s; propose_split checks any node",
                ANALYSIS_BUDGET.as_secs()
            ));
            break;
        }
        let node = &scan.nodes[i];
        let request = FactVectors {
            workspace,
            name: &node.name,
            model,
            perspective,
            // Grouping compares every pair of facts: a node's newest thousand say what it is
            // about now.
            newest: Some(GROUPED_FACTS),
        };
        let facts = match store.fact_vectors(request).await {
            Ok(node) => node.facts,
            // Deleted since the scan.
            Err(Error::NotFound { .. }) => continue,
            Err(error) => return Err(error),
        };
        let observation_count = facts.len() as i64;
        let grouped = grouping_off_runtime(facts, DEFAULT_SPLIT_PARTS as usize, deadline).await?;
        let (groups, silhouette) = (grouped.groups, grouped.silhouette);
        if groups.len() < 2 || silhouette < SPLIT_SILHOUETTE {
            continue;
        }
        found.push(SplitCandidate {
            name: node.name.clone(),
            entity_type: node.entity_type.clone(),
            observation_count,
            groups: (groups.into_iter())
                .map(|g| GroupBrief {
                    label: g.label,
                    size: g.ordinals.len() as i64,
                })
                .collect(),
        });
    }
    Ok(found)
}
