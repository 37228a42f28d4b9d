//! The whole graph: the `read_graph` tool (paged), and the batches behind `engram export` and
//! `engram import` ([`Memory::graph_page`](crate::Memory::graph_page),
//! [`Memory::import`](crate::Memory::import)).

use derive_setters::Setters;
use serde::Deserialize;

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::limits::first_duplicate;
use crate::model::WorkspaceId;
use crate::tool::{Effect, MemoryStore, Tool, ToolContext, ToolVisitor};
use crate::transfer::*;

/// The default page size of `read_graph`.
pub const READ_GRAPH_LIMIT: u32 = 50;

/// At most this many observations in one import batch (each batch is one transaction).
pub const IMPORT_BATCH_OBSERVATIONS: usize = 10_000;

fn default_read_graph_limit() -> u32 {
    READ_GRAPH_LIMIT
}

/// `read_graph`: one page of the whole graph; every field is optional.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReadGraph {
    /// The previous page's next_cursor.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Nodes per page, 1–1,000. Default 50.
    #[serde(default = "default_read_graph_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// Only nodes of this type.
    #[serde(default)]
    pub entity_type: Option<String>,
    /// "names", "summary" (default: with summary, tags, fact count) or "full" (every fact).
    #[serde(default)]
    pub detail: GraphDetail,
    /// With ended ones.
    #[serde(default)]
    pub include_ended: bool,
}

impl ReadGraph {
    /// The first page of [`READ_GRAPH_LIMIT`] nodes, each with `detail`.
    pub fn new(detail: GraphDetail) -> Self {
        Self {
            cursor: None,
            limit: READ_GRAPH_LIMIT,
            entity_type: None,
            detail,
            include_ended: false,
        }
    }

    /// The request if `limit` is 1–1,000 and the cursor and type are valid names; else
    /// [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::within("limit", self.limit, limits::LIMIT)?;
        if let Some(cursor) = &self.cursor {
            limits::name("cursor", cursor)?;
        }
        if let Some(entity_type) = &self.entity_type {
            limits::name("entity_type", entity_type)?;
        }
        Ok(Checked::new(self))
    }
}

/// The page of nodes after `cursor` (a previous page's `next_cursor`), at most `limit`, of
/// `entity_type` when given, at `detail`, with the relations leaving them.
///
/// Errors: [`Error::InvalidArgument`] for a bad `limit`, `entity_type` or `cursor`.
impl Tool for ReadGraph {
    const NAME: &'static str = "read_graph";
    const DESCRIPTION: &'static str =
        "The whole graph a page at a time, in name order; pass `next_cursor` back for more.";
    const EFFECT: Effect = Effect::Reads;
    type Output = GraphPageResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let store = context.store;
        let request = self.check()?.into_inner();
        let query = GraphPageQuery {
            after: request.cursor,
            limit: request.limit + 1,
            entity_type: request.entity_type,
            observations: request.detail == GraphDetail::Full,
            over_time: false,
            totals: true,
        };
        let page = store.graph_page(workspace, &query).await?;
        let mut result = GraphPageResult::from_page(page, request.detail, request.limit);
        if request.include_ended {
            with_ended(store, workspace, &mut result).await?;
        }
        result.within_text_bytes(limits::ANSWER_TEXT_BYTES, request.include_ended);
        Ok(result)
    }
}

/// The page's relations and (for full detail) its facts again, ended ones included with
/// their periods: one read of the page's nodes as [`crate::ReadTime::Ever`] sees them. Only
/// the relations whose source is on the page, so the pages hold each relation once.
async fn with_ended(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    page: &mut GraphPageResult,
) -> Result<()> {
    let names: Vec<String> = page.entities.iter().map(|node| node.name.clone()).collect();
    if names.is_empty() {
        return Ok(());
    }
    let opened =
        crate::nodes::open_checked(store, workspace, &names, crate::ReadTime::Ever).await?;
    page.relations = (opened.relations.into_iter())
        .filter(|relation| names.contains(&relation.from))
        .collect();
    let mut facts: std::collections::HashMap<String, Vec<crate::Observation>> = (opened.entities)
        .into_iter()
        .map(|node| (node.name, node.observations))
        .collect();
    for node in &mut page.entities {
        if let Some(observations) = &mut node.observations
            && let Some(ever) = facts.remove(&node.name)
        {
            *observations = ever;
        }
    }
    Ok(())
}

/// The semantics of [`Memory::graph_page`](crate::Memory::graph_page).
pub(crate) async fn graph_page(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    query: &GraphPageQuery,
) -> Result<GraphPage> {
    limits::within("limit", query.limit, limits::LIMIT)?;
    if let Some(after) = &query.after {
        limits::name("after", after)?;
    }
    if let Some(entity_type) = &query.entity_type {
        limits::name("entity_type", entity_type)?;
    }
    store.graph_page(workspace, query).await
}

/// The semantics of [`Memory::import`](crate::Memory::import).
pub(crate) async fn import(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    request: ImportBatch,
) -> Result<ImportOutcome> {
    let request = request.check(secrets)?;
    let request = aliases_read_as_nodes(store, workspace, request).await?;
    store.import(workspace, &request).await
}

/// The batch with every name that is another node's alias read as that node, as
/// `create_entities` reads it: a record named "Postgres" where "Postgres" is an alias of
/// "PostgreSQL" adds to PostgreSQL, and never makes a second node under a name an alias
/// already stands for (issue 60).
async fn aliases_read_as_nodes(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    request: Checked<ImportBatch>,
) -> Result<Checked<ImportBatch>> {
    let mut names: Vec<String> = (request.nodes.iter().map(|n| n.name.clone()))
        .chain(
            request
                .relations
                .iter()
                .flat_map(|r| [r.from.clone(), r.to.clone()]),
        )
        .collect();
    names.sort_unstable();
    names.dedup();
    let aliased = crate::naming::resolve(store, workspace, &names).await?;
    if aliased.is_empty() {
        return Ok(request);
    }
    let mut batch = request.into_inner();
    let relations = batch.relations.iter_mut();
    let names = (batch.nodes.iter_mut().map(|n| &mut n.name))
        .chain(relations.flat_map(|r| [&mut r.from, &mut r.to]));
    crate::naming::aliases::rename(names, &aliased);
    Ok(Checked::new(batch))
}

impl ImportBatch {
    /// Every record checked as [`validate_node`] and [`validate_relation`] check it, the
    /// texts screened by `secrets` (a redacting policy rewrites them), the names distinct.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the record (`nodes[3].observations[0].content`).
    pub(crate) fn check(self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        let Self { nodes, relations } = self;
        if nodes.len() > limits::MAX_BATCH || relations.len() > limits::MAX_BATCH {
            return Err(Error::invalid(
                "import",
                format!(
                    "at most {} nodes and {0} relations per batch",
                    limits::MAX_BATCH
                ),
            ));
        }
        let observations: usize = nodes.iter().map(|n| n.observations.len()).sum();
        if observations > IMPORT_BATCH_OBSERVATIONS {
            return Err(Error::invalid(
                "nodes[].observations",
                format!("at most {IMPORT_BATCH_OBSERVATIONS} per batch, got {observations}"),
            ));
        }
        let mut nodes = (nodes.into_iter().enumerate())
            .map(|(i, node)| validate_node(node).map_err(|e| e.within(&format!("nodes[{i}]"))))
            .collect::<Result<Vec<_>>>()?;
        for (i, relation) in relations.iter().enumerate() {
            validate_relation(relation).map_err(|e| e.within(&format!("relations[{i}]")))?;
        }
        secrets.screen_import(&mut nodes, &relations)?;
        if let Some((first, second)) = first_duplicate(nodes.iter().map(|n| &n.name)) {
            return Err(Error::invalid(
                format!("nodes[{second}].name"),
                format!("repeats nodes[{first}].name within one batch"),
            ));
        }
        Ok(Checked::new(Self { nodes, relations }))
    }
}

/// The tool that pages through the graph.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<ReadGraph>();
}
