//! The graph vocabulary (tool group `graph`, after the systems in `shared/reference/003`):
//! the entity and relation types in use with their counts, a node described by its degree
//! and its neighbours, the subgraph around several nodes, and relations filtered by their
//! ends and type. Each reads the current graph only.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::Result;
use crate::limits;
use crate::model::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

fn default_vocabulary_limit() -> u32 {
    100
}

fn default_neighbour_limit() -> u32 {
    50
}

fn default_subgraph_depth() -> u32 {
    1
}

/// The statements both stores run for `get_graph_vocabulary`, alike on PostgreSQL and SQLite
/// (which takes `$1` as a named parameter bound by position): `$1` the workspace, `$2` the
/// most rows; the entity types, then the relation types, each with its count, most used
/// first, then by name.
pub const TYPE_COUNTS_SQL: [&str; 2] = [
    "SELECT entity_type, count(*) FROM nodes WHERE workspace_id = $1
     GROUP BY entity_type ORDER BY count(*) DESC, entity_type LIMIT $2",
    "SELECT relation_type, count(*) FROM relations WHERE workspace_id = $1
     GROUP BY relation_type ORDER BY count(*) DESC, relation_type LIMIT $2",
];

/// The statement both stores run for `describe_node`'s neighbours, alike: `$1` a node id, `$2`
/// the most rows.
pub const NEIGHBOURS_SQL: &str = include_str!("vocabulary_neighbours.sql");

/// Keeps the first `limit` of `rows`, read with one more than `limit` so that a cut shows; the
/// notice saying so (of `what`), when it had more.
fn cut_to<T>(rows: &mut Vec<T>, limit: u32, what: &str) -> Option<String> {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    more.then(|| format!("more than {limit} {what}: ask with a higher limit (at most 1,000)"))
}

/// `get_graph_vocabulary`: the entity types and relation types in use, with counts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct GetGraphVocabulary {
    /// Most types of each kind, 1–1,000. Default 100.
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
}

impl Default for GetGraphVocabulary {
    fn default() -> Self {
        Self {
            limit: default_vocabulary_limit(),
        }
    }
}

/// A type in use and how many nodes or current relations have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TypeCount {
    /// The type.
    pub name: String,
    /// How many have it.
    pub count: i64,
}

/// `get_graph_vocabulary`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphVocabulary {
    /// Node types, most used first, then by name.
    pub entity_types: Vec<TypeCount>,
    /// Types of current relations, most used first, then by name.
    pub relation_types: Vec<TypeCount>,
    /// That a list was cut at `limit`, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl GraphVocabulary {
    /// The answer from the types a store read: up to `limit + 1` of each kind, in order.
    pub fn cut(
        mut entity_types: Vec<TypeCount>,
        mut relation_types: Vec<TypeCount>,
        limit: u32,
    ) -> Self {
        let what = "types of a kind";
        let entities_cut = cut_to(&mut entity_types, limit, what);
        let notice = cut_to(&mut relation_types, limit, what).or(entities_cut);
        Self {
            entity_types,
            relation_types,
            notice,
        }
    }
}

impl Tool for GetGraphVocabulary {
    const NAME: &'static str = "get_graph_vocabulary";
    const DESCRIPTION: &'static str =
        "The entity types and relation types in use, each with its count.";
    const EFFECT: Effect = Effect::Reads;
    type Output = GraphVocabulary;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        limits::within("limit", self.limit, limits::LIMIT)?;
        context.store.graph_vocabulary(workspace, self.limit).await
    }
}

/// `describe_node`: a node with its degree and its neighbours.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DescribeNode {
    /// The node.
    pub name: String,
    /// Most neighbours listed, 1–1,000. Default 50.
    #[serde(default = "default_neighbour_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
}

impl DescribeNode {
    /// `name` with up to 50 neighbours.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            limit: default_neighbour_limit(),
        }
    }
}

/// How many current relations a node has, by direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Degree {
    /// Relations from the node.
    pub outgoing: i64,
    /// Relations to the node.
    pub incoming: i64,
    /// Both (a relation of the node to itself counts in each).
    pub total: i64,
}

impl Degree {
    /// `outgoing` and `incoming` relations, and their sum.
    pub fn new(outgoing: i64, incoming: i64) -> Self {
        Self {
            outgoing,
            incoming,
            total: outgoing + incoming,
        }
    }
}

/// A neighbour of a described node: the relation's other end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeNeighbour {
    /// The neighbour's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// The relation's type.
    pub relation_type: String,
    /// `"out"` for a relation from the described node, `"in"` for one to it.
    pub direction: String,
}

/// `describe_node`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeDescription {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary, when one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How many current facts it holds.
    pub observation_count: i64,
    /// Its current relations, by direction.
    pub degree: Degree,
    /// The other end of each relation, by name, then relation type.
    pub neighbours: Vec<NodeNeighbour>,
    /// That `neighbours` was cut at `limit`, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl NodeDescription {
    /// `neighbours` (up to `limit + 1` read) cut at `limit`, with the notice.
    pub fn cut_neighbours(mut self, limit: u32) -> Self {
        self.notice = cut_to(&mut self.neighbours, limit, "neighbours");
        self
    }
}

impl Tool for DescribeNode {
    const NAME: &'static str = "describe_node";
    const DESCRIPTION: &'static str =
        "A node's type, summary, fact count, degree (out, in, total) and neighbours.";
    const EFFECT: Effect = Effect::Reads;
    type Output = NodeDescription;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        limits::name("name", &self.name)?;
        limits::within("limit", self.limit, limits::LIMIT)?;
        context
            .store
            .describe_node(workspace, &Checked::new(self))
            .await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

/// `get_subgraph`: several nodes and every node within `depth` hops of any of them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetSubgraph {
    /// The nodes to start from, 1–100.
    pub names: Vec<String>,
    /// Hops to follow, relations in either direction, 0–3. Default 1.
    #[serde(default = "default_subgraph_depth")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 3)))]
    pub depth: u32,
}

impl GetSubgraph {
    /// The nodes `names` and their neighbours within `depth` hops.
    pub fn new(names: &[&str], depth: u32) -> Self {
        Self {
            names: names.iter().map(|name| (*name).to_owned()).collect(),
            depth,
        }
    }
}

impl Tool for GetSubgraph {
    const NAME: &'static str = "get_subgraph";
    const DESCRIPTION: &'static str =
        "Several nodes and every node within `depth` hops of any, with the relations among them.";
    const EFFECT: Effect = Effect::Reads;
    type Output = Neighborhood;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        if self.names.len() > 100 {
            let got = self.names.len();
            return Err(crate::Error::invalid(
                "names",
                format!("at most 100, got {got}"),
            ));
        }
        limits::names_batch("names", &self.names)?;
        limits::within("depth", self.depth, 0..=3)?;
        context
            .store
            .get_subgraph(workspace, &Checked::new(self))
            .await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        self.names.iter_mut().collect()
    }
}

/// `get_relations`: current relations filtered by their ends and type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetRelations {
    /// Only relations from this node.
    #[serde(default)]
    pub from_entity: Option<String>,
    /// Only relations to this node.
    #[serde(default)]
    pub to_entity: Option<String>,
    /// Only relations of this type.
    #[serde(default)]
    pub relation_type: Option<String>,
    /// Most relations, 1–1,000. Default 100.
    #[serde(default = "default_vocabulary_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
}

impl Default for GetRelations {
    /// Every current relation, up to 100.
    fn default() -> Self {
        Self {
            from_entity: None,
            to_entity: None,
            relation_type: None,
            limit: default_vocabulary_limit(),
        }
    }
}

/// `get_relations`' result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FilteredRelations {
    /// The relations, by source name, type, then target name.
    pub relations: Vec<Relation>,
    /// That the list was cut at `limit`, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl FilteredRelations {
    /// `relations` (up to `limit + 1` read) cut at `limit`, with the notice.
    pub fn cut(mut relations: Vec<Relation>, limit: u32) -> Self {
        let notice = cut_to(&mut relations, limit, "relations");
        Self { relations, notice }
    }
}

impl Tool for GetRelations {
    const NAME: &'static str = "get_relations";
    const DESCRIPTION: &'static str =
        "Current relations filtered by from_entity, to_entity and relation_type (each optional).";
    const EFFECT: Effect = Effect::Reads;
    type Output = FilteredRelations;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        for (field, value) in [
            ("from_entity", &self.from_entity),
            ("to_entity", &self.to_entity),
            ("relation_type", &self.relation_type),
        ] {
            if let Some(value) = value {
                limits::name(field, value)?;
            }
        }
        limits::within("limit", self.limit, limits::LIMIT)?;
        context
            .store
            .get_relations(workspace, &Checked::new(self))
            .await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        [&mut self.from_entity, &mut self.to_entity]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// The graph vocabulary's tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<GetGraphVocabulary>();
    visitor.visit::<DescribeNode>();
    visitor.visit::<GetSubgraph>();
    visitor.visit::<GetRelations>();
}

/// The graph vocabulary: counts by type, a node's degree and neighbours, subgraphs and
/// filtered relations, of the current graph. [`crate::Error::NotFound`] for a node named that
/// does not exist.
#[async_trait]
pub trait VocabularyStore: Send + Sync + 'static {
    /// `get_graph_vocabulary`: up to `limit + 1` entity types and as many relation types, most
    /// used first, then by name (the domain cuts them at `limit`).
    async fn graph_vocabulary(&self, workspace: WorkspaceId, limit: u32)
    -> Result<GraphVocabulary>;
    /// `describe_node`: the node, its degree, and up to `limit + 1` neighbours by name, then
    /// relation type.
    async fn describe_node(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DescribeNode>,
    ) -> Result<NodeDescription>;
    /// `get_subgraph`: the nodes, everything within `depth` hops of any (nearest first, then
    /// by name), and the relations among them.
    async fn get_subgraph(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetSubgraph>,
    ) -> Result<Neighborhood>;
    /// `get_relations`: up to `limit + 1` current relations matching every filter given, by
    /// source name, type, then target name.
    async fn get_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelations>,
    ) -> Result<FilteredRelations>;
}
