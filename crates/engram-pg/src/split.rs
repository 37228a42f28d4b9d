//! Splitting an overgrown node (`split_entity`) and reading its facts with their vectors for
//! a proposal (`fact_vectors`).

use std::collections::HashMap;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use pgvector::Vector;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[async_trait]
impl SplitStore for PgStore {
    #[instrument(skip_all, fields(parts = request.parts.len()))]
    async fn split_entity(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SplitEntity>,
    ) -> Result<SplitResult> {
        let split = write!(self, |tx| async {
            let parts: Vec<&str> = request.parts.iter().map(|p| p.name.as_str()).collect();
            crate::name_locks::lock_names(&tx, workspace, &parts).await?;
            split(&tx, workspace, request).await
        })?;
        self.written.wrote(request.parts.len(), &self.direct);
        Ok(split)
    }

    #[instrument(skip_all)]
    async fn fact_vectors(&self, request: FactVectors<'_>) -> Result<NodeFacts> {
        // Not `read!`: one statement (its own snapshot), which every `add_observations` runs
        // for `similar_to`; prepared once per connection, one round trip.
        single!(self, |client| facts(&client, &request))
    }
}

/// `split_entity` in the caller's write transaction: the parts created with the facts they
/// take (new ordinals 1, 2, … in the original's order; versions, periods and vectors move with
/// their rows), each related to the original, a `split:<part>` update event recorded on it.
async fn split(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    request: &SplitEntity,
) -> Result<SplitResult> {
    let original = client
        .query_opt(
            "SELECT id, name, entity_type FROM nodes
             WHERE workspace_id = $1 AND name = $2 FOR UPDATE",
            &[&workspace.0, &request.name],
        )
        .await
        .map_err(db)?
        .ok_or_else(|| Error::node_not_found(&request.name))?;
    let (id, name, entity_type): (i64, String, String) =
        (original.get(0), original.get(1), original.get(2));
    let part_names: Vec<&str> = request.parts.iter().map(|p| p.name.as_str()).collect();
    let taken = client
        .query(
            "SELECT name FROM nodes WHERE workspace_id = $1 AND name = ANY($2)
             UNION ALL
             SELECT alias FROM node_aliases WHERE workspace_id = $1 AND alias = ANY($2)",
            &[&workspace.0, &part_names],
        )
        .await
        .map_err(db)?;
    if let Some(row) = taken.first() {
        let taken: String = row.get(0);
        let at = part_names.iter().position(|n| *n == taken).unwrap_or(0);
        return Err(Error::invalid(
            format!("parts[{at}].name"),
            "is taken by a node (or an alias): a part is a new node",
        ));
    }
    let current: HashMap<i64, i64> = client
        .query(
            "SELECT ordinal, id FROM observations
             WHERE node_id = $1 AND (valid_to IS NULL OR valid_to > now())",
            &[&id],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let plan = plan_split(request, (&name, &entity_type), |o| {
        current.contains_key(&o.0)
    })?;
    for (created, part) in plan.parts.iter().zip(&request.parts) {
        let count = created.observations.len() as i64;
        let part_id: i64 = client
            .query_one(
                "INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at,
                                    next_ordinal)
                 VALUES ($1, $2, $3, $4, CASE WHEN $4::text IS NOT NULL THEN now() END, $5)
                 RETURNING id",
                &[
                    &workspace.0,
                    &created.name,
                    &created.entity_type,
                    &part.summary,
                    &(count + 1),
                ],
            )
            .await
            .map_err(db)?
            .get(0);
        let ids: Vec<i64> = (created.observations.iter())
            .map(|m| current[&m.old_ordinal.0])
            .collect();
        let new: Vec<i64> = created
            .observations
            .iter()
            .map(|m| m.new_ordinal.0)
            .collect();
        client
            .execute(
                "UPDATE observations o SET node_id = $1, ordinal = m.ordinal
                 FROM unnest($2::bigint[], $3::bigint[]) AS m (id, ordinal) WHERE o.id = m.id",
                &[&part_id, &ids, &new],
            )
            .await
            .map_err(db)?;
        client
            .execute(
                "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type)
                 VALUES ($1, $2, $3, $4)",
                &[&workspace.0, &part_id, &id, &request.relation_type],
            )
            .await
            .map_err(db)?;
        client
            .execute(
                "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, detail)
                 VALUES ($1, $2, $3, 'node', 'update', 'split:' || $4)",
                &[&workspace.0, &id, &name, &created.name],
            )
            .await
            .map_err(db)?;
    }
    Ok(plan)
}

/// The node's current facts in ordinal order, each with its vector of `model` in
/// `perspective` when there is one.
async fn facts(client: &impl GenericClient, request: &FactVectors<'_>) -> Result<NodeFacts> {
    // The node's row always (its facts `NULL` when it has none), none when there is no node.
    let statement = client
        .prepare_cached(
            "SELECT n.name, f.ordinal, f.content, f.embedding
             FROM nodes n
             LEFT JOIN LATERAL (
                 SELECT o.ordinal, o.content, e.embedding
                 FROM observations o
                 LEFT JOIN embeddings e ON e.observation_id = o.id AND e.model = $3
                                       AND e.perspective_id = $4
                 WHERE o.node_id = n.id AND (o.valid_to IS NULL OR o.valid_to > now())
                 ORDER BY o.ordinal DESC
                 LIMIT $5
             ) f ON true
             WHERE n.workspace_id = $1 AND n.name = $2",
        )
        .await
        .map_err(db)?;
    let rows = client
        .query(
            &statement,
            &[
                &request.workspace.0,
                &request.name,
                &request.model.unwrap_or_default(),
                &request.perspective.map(|p| p.0),
                &request.newest.map(i64::from),
            ],
        )
        .await
        .map_err(db)?;
    let name: String = (rows.first())
        .ok_or_else(|| Error::node_not_found(request.name))?
        .get(0);
    Ok(NodeFacts {
        name,
        facts: (rows.iter().rev())
            .filter_map(|row| {
                Some(FactVector {
                    ordinal: Ordinal(row.get::<_, Option<i64>>(1)?),
                    content: row.get(2),
                    vector: row.get::<_, Option<Vector>>(3).map(|v| v.to_vec()),
                })
            })
            .collect(),
    })
}
