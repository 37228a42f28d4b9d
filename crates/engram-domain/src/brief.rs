//! [`crate::Memory::brief`]: a workspace at a glance, for an agent starting a session (`engram
//! brief`, a hook at session start, the MCP resource `engram://brief`).

use std::collections::HashMap;

use serde::Serialize;

use crate::checked::Checked;
use crate::error::Result;
use crate::model::{NodeBrief, WorkspaceId};
use crate::tool::MemoryStore;

/// Nodes [`crate::Memory::brief`] lists at most in each of its lists.
pub const BRIEF_NODES: usize = 32;

/// What [`crate::Memory::brief`] returns: the workspace's counts, its most connected nodes and its
/// most recently changed ones (none listed twice).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Brief {
    /// The workspace's name.
    pub workspace: String,
    /// Nodes in the workspace.
    pub node_count: i64,
    /// Observations in the workspace.
    pub observation_count: i64,
    /// Relations in the workspace.
    pub relation_count: i64,
    /// The nodes with the most related nodes, most first (ties by name); only nodes with at
    /// least one relation.
    pub connected: Vec<ConnectedNode>,
    /// The most recently written nodes not in `connected`, newest first.
    pub recent: Vec<NodeBrief>,
}

/// A node of [`Brief::connected`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnectedNode {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary, if one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How many nodes a relation links it to (either direction, each node once).
    pub related_nodes: usize,
}

/// The semantics of [`crate::Memory::brief`](crate::Memory::brief).
pub(crate) async fn brief(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    nodes: usize,
) -> Result<Brief> {
    let nodes = nodes.clamp(1, BRIEF_NODES);
    let stats = store.get_stats(workspace).await?;
    let pairs = store.related_pairs(workspace).await?;
    let linked: std::collections::HashSet<(&str, &str)> = (pairs.iter())
        .filter(|(from, to)| from != to)
        .map(|(from, to)| (from.min(to).as_str(), from.max(to).as_str()))
        .collect();
    let mut degree: HashMap<&str, usize> = HashMap::new();
    for (from, to) in linked {
        *degree.entry(from).or_default() += 1;
        *degree.entry(to).or_default() += 1;
    }
    let mut ranked: Vec<(&str, usize)> = degree.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked.truncate(nodes);
    let names: Vec<String> = ranked.iter().map(|(name, _)| (*name).to_owned()).collect();
    let opened = if names.is_empty() {
        crate::OpenedNodes::default()
    } else {
        crate::nodes::open_checked(store, workspace, &names, crate::ReadTime::Now).await?
    };
    let degree_of: HashMap<&str, usize> = ranked.iter().copied().collect();
    // By name: a node deleted since the relations were read is simply missing.
    let connected: Vec<ConnectedNode> = (opened.entities.into_iter())
        .map(|node| ConnectedNode {
            related_nodes: degree_of.get(node.name.as_str()).copied().unwrap_or(0),
            name: node.name,
            entity_type: node.entity_type,
            summary: node.summary,
        })
        .collect();
    let wanted = u32::try_from(nodes + connected.len()).unwrap_or(u32::MAX);
    let recently = crate::GetRecentlyModified::new(*crate::limits::DAYS.end(), wanted);
    let mut recent = store
        .get_recently_modified(workspace, &Checked::new(recently))
        .await?;
    recent.retain(|node| !connected.iter().any(|c| c.name == node.name));
    recent.truncate(nodes);
    Ok(Brief {
        workspace: stats.workspace,
        node_count: stats.node_count,
        observation_count: stats.observation_count,
        relation_count: stats.relation_count,
        connected,
        recent,
    })
}
