//! Walking the graph: a node's neighbourhood and the shortest path between two nodes, each
//! asked by its tool's request (the MCP input), checked, then answered by the store.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::all_paths::{AllPathsSearch, FoundPath, Stopped};
use crate::checked::Checked;
use crate::error::Result;
use crate::limits;
use crate::model::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

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

fn default_path_hops() -> u32 {
    4
}

fn default_path_limit() -> u32 {
    10
}

/// `find_all_paths`: every simple chain of relations between two nodes, shortest first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, derive_setters::Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FindAllPaths {
    /// Where the paths start.
    pub from_entity: String,
    /// Where they end.
    pub to_entity: String,
    /// Most hops of a path, 1–6. Default 4.
    #[serde(default = "default_path_hops")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 6)))]
    pub max_depth: u32,
    /// Most paths, 1–100. Default 10.
    #[serde(default = "default_path_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 100)))]
    pub limit: u32,
}

impl FindAllPaths {
    /// At most 10 paths of at most 4 hops from `from_entity` to `to_entity`.
    pub fn new(from_entity: impl Into<String>, to_entity: impl Into<String>) -> Self {
        Self {
            from_entity: from_entity.into(),
            to_entity: to_entity.into(),
            max_depth: default_path_hops(),
            limit: default_path_limit(),
        }
    }

    /// The search this request asks for, from the node `source` to the node `target` (ids).
    pub fn search(&self, source: i64, target: i64) -> AllPathsSearch {
        let (from, to) = (
            (source, self.from_entity.as_str()),
            (target, self.to_entity.as_str()),
        );
        AllPathsSearch::new(from, to, self.max_depth as usize, self.limit as usize)
    }

    /// The request if both ends are valid node names, `max_depth` is 1–6 and `limit` 1–100;
    /// else [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("from_entity", &self.from_entity)?;
        limits::name("to_entity", &self.to_entity)?;
        limits::within("max_depth", self.max_depth, 1..=6)?;
        limits::within("limit", self.limit, 1..=100)?;
        Ok(Checked::new(self))
    }
}

/// `find_all_paths`' result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllPaths {
    /// The simple paths (no node twice), fewest hops first, then in the order of their nodes'
    /// names; empty when none is within `max_depth`.
    pub paths: Vec<FoundPath>,
    /// Why there may be more paths than listed, when there may be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl AllPaths {
    /// The answer of a finished [`AllPathsSearch`].
    pub fn of(search: AllPathsSearch) -> Self {
        let (paths, stopped) = search.finish();
        let notice = stopped.map(|why| match why {
            Stopped::Limit => {
                "there may be more paths: ask with a higher limit (at most 100)".to_owned()
            }
            Stopped::Bound => format!(
                "the search stopped at its bound ({} nodes' neighbours, {} steps): there may be \
                 more paths; ask with a lower max_depth",
                crate::all_paths::MAX_NODES_READ,
                crate::all_paths::MAX_STEPS
            ),
        });
        Self { paths, notice }
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

impl Tool for GetNeighborhood {
    const NAME: &'static str = "get_neighborhood";
    const DESCRIPTION: &'static str =
        "A node and every node within `depth` hops, with the relations among them.";
    const EFFECT: Effect = Effect::Reads;
    type Output = Neighborhood;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.get_neighborhood(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

impl Tool for GetPath {
    const NAME: &'static str = "get_path";
    const DESCRIPTION: &'static str =
        "The shortest chain of relations (followed in either direction) between two nodes.";
    const EFFECT: Effect = Effect::Reads;
    type Output = GraphPath;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.get_path(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.from_entity, &mut self.to_entity]
    }
}

impl Tool for FindAllPaths {
    const NAME: &'static str = "find_all_paths";
    const DESCRIPTION: &'static str = "Every chain of relations (either direction, no node twice) between two nodes, fewest hops first.";
    const EFFECT: Effect = Effect::Reads;
    type Output = AllPaths;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.find_all_paths(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.from_entity, &mut self.to_entity]
    }
}

/// `find_unlinked_references` takes no arguments: any is refused as unknown.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FindUnlinkedReferences {}

impl Tool for FindUnlinkedReferences {
    const NAME: &'static str = "find_unlinked_references";
    const DESCRIPTION: &'static str =
        "Nodes whose facts mention another node with no relation between the two.";
    const EFFECT: Effect = Effect::Reads;
    type Output = UnlinkedReferencesResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let references = context.store.find_unlinked_references(workspace).await?;
        Ok(UnlinkedReferencesResult { references })
    }
}

/// `find_unlinked_references`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UnlinkedReferencesResult {
    /// Mentions without a relation, by node then referenced name.
    pub references: Vec<UnlinkedReference>,
}

/// The tools that walk the graph.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<GetNeighborhood>();
    visitor.visit::<GetPath>();
    visitor.visit::<FindAllPaths>();
    visitor.visit::<FindUnlinkedReferences>();
}

/// Walking the graph: neighbourhoods, paths and mentions without relations.
#[async_trait]
pub trait GraphStore: Send + Sync + 'static {
    /// `get_neighborhood`: the node and everything within `depth` hops, relations followed in
    /// either direction. [`crate::Error::NotFound`] for an unknown node.
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNeighborhood>,
    ) -> Result<Neighborhood>;
    /// `get_path`: a shortest path (in hops, relations in either direction) of at most
    /// [`crate::limits::MAX_PATH_HOPS`]. [`crate::Error::NotFound`] for an unknown endpoint.
    async fn get_path(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetPath>,
    ) -> Result<GraphPath>;
    /// `find_all_paths`: the simple paths of at most `max_depth` hops, relations followed in
    /// either direction, shortest first ([`crate::all_paths`]). [`crate::Error::NotFound`] for
    /// an unknown endpoint.
    async fn find_all_paths(
        &self,
        workspace: WorkspaceId,
        request: &Checked<FindAllPaths>,
    ) -> Result<AllPaths>;
    /// `find_unlinked_references`: pairs where a node's observations mention another node's
    /// whole name (case-insensitive, at word boundaries) but no relation links the two.
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>>;
}

/// Result of `get_path`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphPath {
    /// Whether a path exists within [`crate::limits::MAX_PATH_HOPS`] hops.
    pub found: bool,
    /// Node names from source to target (just the source when both are the same).
    pub path: Vec<String>,
    /// The relation taken at each hop, in path order; `relations[i]` links `path[i]` and
    /// `path[i + 1]` in one direction or the other.
    pub relations: Vec<Relation>,
}

/// One row of `find_unlinked_references`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UnlinkedReference {
    /// The node whose observations mention another node.
    pub node: String,
    /// The name mentioned.
    pub referenced_name: String,
    /// In how many of `node`'s observations the name occurs.
    pub reference_count: i64,
}
