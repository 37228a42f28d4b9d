//! Walking the graph: a node's neighbourhood, the shortest path, unlinked mentions.

use crate::error::Result;
use crate::limits::{self};
use crate::model::*;
use crate::store::*;
use crate::suggestions::explain;

/// The semantics of [`Memory::get_neighborhood`](crate::Memory::get_neighborhood).
pub(crate) async fn get_neighborhood(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    name: &str,
    depth: u32,
) -> Result<Neighborhood> {
    limits::name("name", name)?;
    limits::within("depth", depth, limits::DEPTH)?;
    let result = store
        .get_neighborhood(GetNeighborhood {
            workspace,
            name,
            depth,
        })
        .await;
    explain(store, workspace, result).await
}

/// The semantics of [`Memory::get_path`](crate::Memory::get_path).
pub(crate) async fn get_path(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    from: &str,
    to: &str,
) -> Result<GraphPath> {
    limits::name("from_entity", from)?;
    limits::name("to_entity", to)?;
    let result = store
        .get_path(GetPath {
            workspace,
            from,
            to,
        })
        .await;
    explain(store, workspace, result).await
}
