//! [`Memory`]'s whole-graph operations: `read_graph` (paged) and the batches behind
//! `engram export` and `engram import`.

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::memory::{Memory, first_duplicate};
use crate::model::WorkspaceId;
use crate::store::{ImportBatch, ReadGraph};
use crate::transfer::*;

/// The default page size of `read_graph`.
pub const READ_GRAPH_LIMIT: u32 = 50;

/// At most this many observations in one import batch (each batch is one transaction).
pub const IMPORT_BATCH_OBSERVATIONS: usize = 10_000;

impl Memory {
    /// `read_graph`: the page of nodes after `cursor` (a previous page's `next_cursor`), at
    /// most `limit` (1–1,000), of `entity_type` when given, at `detail`, with the relations
    /// leaving them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad `limit`, `entity_type` or `cursor`.
    pub async fn read_graph(
        &self,
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
        let page = (self.store)
            .graph_page(ReadGraph {
                workspace,
                query: &query,
            })
            .await?;
        Ok(GraphPageResult::from_page(page, detail, limit))
    }

    /// One page of the lossless export: `query.limit` 1–1,000 nodes with everything they
    /// hold when `query.observations`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad `limit`, `after` or `entity_type`.
    pub async fn graph_page(
        &self,
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
        self.store.graph_page(ReadGraph { workspace, query }).await
    }

    /// Imports one batch in one transaction (see [`crate::TransferStore::import`]): at most
    /// 1,000 nodes of distinct names holding at most [`IMPORT_BATCH_OBSERVATIONS`]
    /// observations, and at most 1,000 relations, each checked as [`validate_node`] and
    /// [`validate_relation`] do; a batch with any invalid record writes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the record (`nodes[3].observations[0].content`).
    pub async fn import(
        &self,
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
        self.secrets.screen_import(&mut nodes, relations)?;
        if let Some((first, second)) = first_duplicate(nodes.iter().map(|n| &n.name)) {
            return Err(Error::invalid(
                format!("nodes[{second}].name"),
                format!("repeats nodes[{first}].name within one batch"),
            ));
        }
        self.store
            .import(ImportBatch {
                workspace,
                nodes: Checked::new(&nodes),
                relations: Checked::new(relations),
            })
            .await
    }
}
