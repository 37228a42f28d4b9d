//! Walking the graph: a node's neighbourhood and the shortest path between two nodes, each
//! asked by its tool's request (the MCP input), checked, then answered by the store.

use serde::Deserialize;

use crate::checked::Checked;
use crate::error::Result;
use crate::limits;
use crate::merge::{rename, through_aliases};
use crate::model::*;
use crate::store::*;

fn default_depth() -> u32 {
    1
}

/// `get_neighborhood`: a node and every node within `depth` hops.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetNeighborhood {
    /// The node at the centre.
    pub name: String,
    /// Hops to follow, relations in either direction, 0–6. Default 1.
    #[serde(default = "default_depth")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 6)))]
    pub depth: u32,
    /// With ended ones.
    #[serde(default)]
    pub include_ended: bool,
    /// As it was then.
    #[serde(default)]
    pub as_of: Option<Timestamp>,
}

impl GetNeighborhood {
    /// The node `name` and its neighbours within `depth` hops now.
    pub fn new(name: impl Into<String>, depth: u32) -> Self {
        Self {
            name: name.into(),
            depth,
            include_ended: false,
            as_of: None,
        }
    }

    /// The same neighbourhood as `time` sees it.
    pub fn at(mut self, time: crate::ReadTime) -> Self {
        (self.include_ended, self.as_of) = time.into_request();
        self
    }

    /// Which relations the request follows.
    pub fn read_time(&self) -> crate::ReadTime {
        crate::ReadTime::from_request(self.include_ended, self.as_of).unwrap_or_default()
    }

    /// The request if `name` is a valid node name, `depth` is 0–6 and at most one of
    /// `include_ended` and `as_of` is given; else [`crate::Error::InvalidArgument`] naming
    /// the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        limits::within("depth", self.depth, limits::DEPTH)?;
        crate::ReadTime::from_request(self.include_ended, self.as_of)?;
        Ok(Checked::new(self))
    }
}

/// `get_path`: the shortest chain of relations between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetPath {
    /// Where the path starts.
    pub from_entity: String,
    /// Where it ends.
    pub to_entity: String,
}

impl GetPath {
    /// The path from `from_entity` to `to_entity`.
    pub fn new(from_entity: impl Into<String>, to_entity: impl Into<String>) -> Self {
        Self {
            from_entity: from_entity.into(),
            to_entity: to_entity.into(),
        }
    }

    /// The request if both ends are valid node names; else
    /// [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("from_entity", &self.from_entity)?;
        limits::name("to_entity", &self.to_entity)?;
        Ok(Checked::new(self))
    }
}

/// The semantics of [`Memory::get_neighborhood`](crate::Memory::get_neighborhood).
pub(crate) async fn get_neighborhood(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    request: GetNeighborhood,
) -> Result<Neighborhood> {
    let request = request.check()?;
    through_aliases(
        store,
        workspace,
        (request, 1),
        |r, alias, node| rename(&mut r.name, alias, node),
        |r| async move {
            let result = store.get_neighborhood(workspace, &r).await;
            (r, result)
        },
    )
    .await
}

/// The semantics of [`Memory::get_path`](crate::Memory::get_path).
pub(crate) async fn get_path(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    request: GetPath,
) -> Result<GraphPath> {
    let request = request.check()?;
    through_aliases(
        store,
        workspace,
        (request, 2),
        |r, alias, node| {
            rename(&mut r.from_entity, alias, node);
            rename(&mut r.to_entity, alias, node);
        },
        |r| async move {
            let result = store.get_path(workspace, &r).await;
            (r, result)
        },
    )
    .await
}
