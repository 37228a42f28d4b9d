//! [`Memory`]'s whole-graph operations: `read_graph` (paged) and the batches behind
//! `engram export` and `engram import`.

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::limits::first_duplicate;
use crate::model::WorkspaceId;
use crate::store::MemoryStore;
use crate::store::{ImportBatch, ReadGraph};
use crate::transfer::*;

/// The default page size of `read_graph`.
pub const READ_GRAPH_LIMIT: u32 = 50;

/// At most this many observations in one import batch (each batch is one transaction).
pub const IMPORT_BATCH_OBSERVATIONS: usize = 10_000;

/// The semantics of [`Memory::read_graph`](crate::Memory::read_graph).
pub(crate) async fn read_graph(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    cursor: Option<&str>,
    limit: u32,
    entity_type: Option<&str>,
    detail: GraphDetail,
) -> Result<GraphPageResult> {
    limits::within("limit", limit, limits::LIMIT)?;
    if let Some(cursor) = cursor {
        limits::name("cursor", cursor)?;
    }
    if let Some(entity_type) = entity_type {
        limits::name("entity_type", entity_type)?;
    }
    let query = GraphPageQuery {
        after: cursor.map(str::to_owned),
        limit: limit + 1,
        entity_type: entity_type.map(str::to_owned),
        observations: detail == GraphDetail::Full,
        totals: true,
    };
    let page = store
        .graph_page(ReadGraph {
            workspace,
            query: &query,
        })
        .await?;
    Ok(GraphPageResult::from_page(page, detail, limit))
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
    store.graph_page(ReadGraph { workspace, query }).await
}

/// The semantics of [`Memory::import`](crate::Memory::import).
pub(crate) async fn import(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    nodes: Vec<NodeRecord>,
    relations: &[RelationRecord],
) -> Result<ImportOutcome> {
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
    let nodes = (nodes.into_iter().enumerate())
        .map(|(i, node)| validate_node(node).map_err(|e| e.within(&format!("nodes[{i}]"))))
        .collect::<Result<Vec<_>>>()?;
    for (i, relation) in relations.iter().enumerate() {
        validate_relation(relation).map_err(|e| e.within(&format!("relations[{i}]")))?;
    }
    let mut nodes = nodes;
    secrets.screen_import(&mut nodes, relations)?;
    if let Some((first, second)) = first_duplicate(nodes.iter().map(|n| &n.name)) {
        return Err(Error::invalid(
            format!("nodes[{second}].name"),
            format!("repeats nodes[{first}].name within one batch"),
        ));
    }
    store
        .import(ImportBatch {
            workspace,
            nodes: Checked::new(&nodes),
            relations: Checked::new(relations),
        })
        .await
}
