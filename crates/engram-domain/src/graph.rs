//! Walking the graph: a node's neighbourhood, the shortest path, unlinked mentions.

use crate::error::Result;
use crate::limits::{self};
use crate::model::*;
use crate::store::*;

/// The semantics of [`Memory::get_neighborhood`](crate::Memory::get_neighborhood).
pub(crate) async fn get_neighborhood(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    name: &str,
    depth: u32,
) -> Result<Neighborhood> {
    limits::name("name", name)?;
    limits::within("depth", depth, limits::DEPTH)?;
    store
        .get_neighborhood(GetNeighborhood {
            workspace,
            name,
            depth,
        })
        .await
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
    store
        .get_path(GetPath {
            workspace,
            from,
            to,
        })
        .await
}
