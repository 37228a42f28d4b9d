//! Splitting an overgrown node (`split_entity`) and reading its facts with their vectors for
//! a proposal (`fact_vectors`).

use std::collections::HashMap;

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::{from_blob, query};

#[async_trait]
impl SplitStore for SqliteStore {
    #[instrument(skip_all, fields(parts = request.parts.len()))]
    async fn split_entity(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SplitEntity>,
    ) -> Result<SplitResult> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| split(tx, workspace, &request))
            .await
    }

    #[instrument(skip_all)]
    async fn fact_vectors(&self, request: FactVectors<'_>) -> Result<NodeFacts> {
        let (workspace, name) = (request.workspace, request.name.to_owned());
        let model = request.model.map(str::to_owned);
        let (perspective, newest) = (request.perspective.map(|p| p.0), request.newest);
        self.pool
            .read(move |tx| facts(tx, workspace, &name, model.as_deref(), perspective, newest))
            .await
    }
}

/// `split_entity` in the write transaction: the parts created with the facts they take (new
/// ordinals 1, 2, … in the original's order; versions, periods and vectors move with their
/// rows), each related to the original, a `split:<part>` update event recorded on it.
fn split(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &SplitEntity,
) -> Result<SplitResult> {
    let original: Option<(i64, String, String)> = tx
        .query_row(
            "SELECT id, name, entity_type FROM nodes WHERE workspace_id = ?1 AND name = ?2",
            params![workspace.0, request.name],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .map_err(db)?;
    let (id, name, entity_type) = original.ok_or_else(|| Error::node_not_found(&request.name))?;
    let mut taken = tx
        .prepare_cached(
            "SELECT 1 FROM nodes WHERE workspace_id = ?1 AND name = ?2
             UNION ALL
             SELECT 1 FROM node_aliases WHERE workspace_id = ?1 AND alias = ?2",
        )
        .map_err(db)?;
    for (i, part) in request.parts.iter().enumerate() {
        if taken.exists(params![workspace.0, part.name]).map_err(db)? {
            return Err(Error::invalid(
                format!("parts[{i}].name"),
                "is taken by a node (or an alias): a part is a new node",
            ));
        }
    }
    let current: HashMap<i64, i64> = query(
        tx,
        "SELECT ordinal, id FROM observations
         WHERE node_id = ?1 AND (valid_to IS NULL OR valid_to > engram_now())",
        params![id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?
    .into_iter()
    .collect();
    let plan = plan_split(request, (&name, &entity_type), |o| {
        current.contains_key(&o.0)
    })?;
    let mut moved = tx
        .prepare_cached("UPDATE observations SET node_id = ?1, ordinal = ?2 WHERE id = ?3")
        .map_err(db)?;
    for (created, part) in plan.parts.iter().zip(&request.parts) {
        let count = created.observations.len() as i64;
        let part_id: i64 = tx
            .query_row(
                "INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at,
                                    next_ordinal, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 IS NOT NULL THEN engram_now() END, ?5,
                         engram_now(), engram_now())
                 RETURNING id",
                params![
                    workspace.0,
                    created.name,
                    created.entity_type,
                    part.summary,
                    count + 1
                ],
                |row| row.get(0),
            )
            .map_err(db)?;
        for step in &created.observations {
            moved
                .execute(params![
                    part_id,
                    step.new_ordinal.0,
                    current[&step.old_ordinal.0]
                ])
                .map_err(db)?;
        }
        tx.execute(
            "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type,
                                    created_at, valid_from)
             VALUES (?1, ?2, ?3, ?4, engram_now(), engram_now())",
            params![workspace.0, part_id, id, request.relation_type],
        )
        .map_err(db)?;
        tx.execute(
            "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at, detail)
             VALUES (?1, ?2, ?3, 'node', 'update', engram_now(), 'split:' || ?4)",
            params![workspace.0, id, name, created.name],
        )
        .map_err(db)?;
    }
    Ok(plan)
}

/// The node's current facts in ordinal order, each with its vector of `model` in
/// `perspective` when there is one.
fn facts(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    name: &str,
    model: Option<&str>,
    perspective: Option<i64>,
    newest: Option<u32>,
) -> Result<NodeFacts> {
    let node: Option<(i64, String)> = tx
        .query_row(
            "SELECT id, name FROM nodes WHERE workspace_id = ?1 AND name = ?2",
            params![workspace.0, name],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(db)?;
    let (id, name) = node.ok_or_else(|| Error::node_not_found(name))?;
    // Without a model no vector is asked for: the embeddings are not joined.
    let vectors = match model {
        Some(_) => {
            "e.embedding FROM observations o
             LEFT JOIN embeddings e ON e.observation_id = o.id AND e.model = ?2
                                   AND e.perspective_id = ?3"
        }
        None => "NULL FROM observations o",
    };
    let facts = query(
        tx,
        &format!(
            "SELECT o.ordinal, o.content, {vectors}
         WHERE o.node_id = ?1 AND (o.valid_to IS NULL OR o.valid_to > engram_now())
         ORDER BY o.ordinal DESC
         LIMIT ?4"
        ),
        params![
            id,
            model.unwrap_or_default(),
            perspective,
            newest.map_or(-1, i64::from)
        ],
        |row| {
            Ok(FactVector {
                ordinal: Ordinal(row.get(0)?),
                content: row.get(1)?,
                vector: row.get::<_, Option<Vec<u8>>>(2)?.map(|b| from_blob(&b)),
            })
        },
    )?;
    let mut facts = facts;
    facts.reverse();
    Ok(NodeFacts { name, facts })
}
