//! Observation tools: add, replace, delete.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

/// The ids of the named nodes that exist.
pub(crate) async fn node_ids<'a>(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    names: impl Iterator<Item = &'a String>,
) -> Result<HashMap<String, i64>> {
    let names: Vec<&String> = names.collect();
    let rows = client
        .query(
            "SELECT name, id FROM nodes WHERE workspace_id = $1 AND name = ANY($2)",
            &[&workspace.0, &names],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| (row.get("name"), row.get("id")))
        .collect())
}

/// The ids of two named nodes; [`Error::NotFound`] naming the first that does not exist.
pub(crate) async fn node_pair(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    a: &str,
    b: &str,
) -> Result<(i64, i64)> {
    let names = [a.to_owned(), b.to_owned()];
    let ids = node_ids(client, workspace, names.iter()).await?;
    match (ids.get(a), ids.get(b)) {
        (Some(a), Some(b)) => Ok((*a, *b)),
        (None, _) => Err(Error::node_not_found(a)),
        (_, None) => Err(Error::node_not_found(b)),
    }
}

#[async_trait]
impl ObservationStore for PgStore {
    #[instrument(skip_all, fields(count = request.observations.len()))]
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddObservations>,
    ) -> Result<Vec<AddedObservations>> {
        let additions = &request.observations;
        let added = write!(self, |tx| async {
            let facts: Vec<(&str, &NewFact)> = (additions.iter())
                .flat_map(|a| a.contents.iter().map(|c| (a.entity_name.as_str(), c)))
                .collect();
            let names: Vec<&str> = facts.iter().map(|(name, _)| *name).collect();
            let contents: Vec<&str> = facts.iter().map(|(_, f)| f.content.as_str()).collect();
            let valid_from: Vec<Option<Timestamp>> =
                facts.iter().map(|(_, f)| f.valid_from).collect();
            let expires_at: Vec<Option<Timestamp>> =
                facts.iter().map(|(_, f)| f.expires_at).collect();
            // Node rows are locked in id order, whatever the request's order, so two calls
            // that touch the same nodes queue instead of deadlocking; the next statement then
            // sees every text the other call committed. The two are pipelined: one round
            // trip, run in order.
            let lock = tx
                .prepare_cached(
                    "SELECT id FROM nodes WHERE workspace_id = $1 AND name = ANY($2)
                     ORDER BY id FOR UPDATE",
                )
                .await
                .map_err(db)?;
            let statement = tx
                .prepare_cached(include_str!("sql/add_observations.sql"))
                .await
                .map_err(db)?;
            let (lock_parameters, parameters) = (
                [
                    &workspace.0 as &(dyn tokio_postgres::types::ToSql + Sync),
                    &names,
                ],
                [
                    &workspace.0 as &(dyn tokio_postgres::types::ToSql + Sync),
                    &names,
                    &contents,
                    &valid_from,
                    &expires_at,
                ],
            );
            let (_, rows) = futures::try_join!(
                tx.query(&lock, &lock_parameters),
                tx.query(&statement, &parameters),
            )
            .map_err(db)?;
            let node_ids =
                node_ids(&tx, workspace, additions.iter().map(|a| &a.entity_name)).await?;
            // Per node, what was stored and what it held already, by ordinal.
            let mut stored: HashMap<i64, Vec<(bool, Observation)>> = HashMap::new();
            for row in &rows {
                let observation =
                    Observation::new(Ordinal(row.get("ordinal")), row.get::<_, String>("content"));
                (stored.entry(row.get("node_id")).or_default())
                    .push((row.get("duplicate"), observation));
            }
            Ok(additions
                .iter()
                .map(|addition| {
                    let Some(id) = node_ids.get(&addition.entity_name) else {
                        return AddedObservations::missing(&addition.entity_name);
                    };
                    // Each given text was stored or held once (the caller sends no text twice
                    // for one node); an addition takes its own texts, in its order.
                    let rows = stored.entry(*id).or_default();
                    let mut added = Vec::new();
                    let mut skipped_duplicates = Vec::new();
                    for fact in &addition.contents {
                        let Some(at) = rows.iter().position(|(_, o)| o.content == fact.content)
                        else {
                            continue;
                        };
                        let (duplicate, observation) = rows.swap_remove(at);
                        if duplicate {
                            skipped_duplicates.push(observation);
                        } else {
                            added.push(observation);
                        }
                    }
                    added.sort_by_key(|o| o.ordinal);
                    AddedObservations::stored(&addition.entity_name, added, skipped_duplicates)
                })
                .collect())
        })?;
        let rows = request.observations.iter().map(|a| a.contents.len()).sum();
        self.written.wrote(rows, &self.direct);
        Ok(added)
    }

    #[instrument(skip_all)]
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ReplaceObservation>,
    ) -> Result<ReplacedObservation> {
        let entity_name = request.entity_name.as_str();
        let (ordinal, new_content) = (request.ordinal, request.new_content.as_str());
        write!(self, |tx| async {
            let row = tx
                .query_opt(
                    // The replaced text is kept as the ordinal's earlier version (`as_of`).
                    "WITH old AS (
                         SELECT o.id, o.content FROM observations o
                         JOIN nodes n ON n.id = o.node_id
                         WHERE n.workspace_id = $1 AND n.name = $2 AND o.ordinal = $3
                           AND (o.valid_to IS NULL OR o.valid_to > now())
                         FOR UPDATE OF o
                     ), kept AS (
                         INSERT INTO observation_versions (observation_id, content)
                         SELECT id, content FROM old
                     )
                     UPDATE observations SET content = $4, updated_at = now()
                     FROM old WHERE observations.id = old.id
                     RETURNING old.content AS old_content",
                    &[&workspace.0, &entity_name, &ordinal, &new_content],
                )
                .await
                .map_err(db)?;
            let Some(row) = row else {
                let exists = tx
                    .query_opt(
                        "SELECT 1 FROM nodes WHERE workspace_id = $1 AND name = $2",
                        &[&workspace.0, &entity_name],
                    )
                    .await
                    .map_err(db)?
                    .is_some();
                return Err(Error::observation_not_found(entity_name, ordinal, exists));
            };
            Ok(ReplacedObservation {
                entity_name: entity_name.to_owned(),
                ordinal: Ordinal(ordinal),
                old_content: row.get("old_content"),
                new_content: new_content.to_owned(),
            })
        })
    }

    #[instrument(skip_all, fields(count = request.deletions.len()))]
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteObservations>,
    ) -> Result<Vec<DeletedObservations>> {
        let deletions = &request.deletions;
        let deleted = write!(self, |tx| async {
            // One statement for the batch: a row per ordinal (content NULL) and per text
            // (ordinal NULL); an observation goes when it matches either.
            let mut names: Vec<&str> = Vec::new();
            let mut ordinals: Vec<Option<i64>> = Vec::new();
            let mut contents: Vec<Option<&str>> = Vec::new();
            for deletion in deletions {
                for ordinal in &deletion.ordinals {
                    names.push(&deletion.entity_name);
                    ordinals.push(Some(ordinal.0));
                    contents.push(None);
                }
                for content in &deletion.contents {
                    names.push(&deletion.entity_name);
                    ordinals.push(None);
                    contents.push(Some(content));
                }
            }
            let rows = tx
                .query(
                    "DELETE FROM observations o
                     USING nodes n, unnest($2::text[], $3::bigint[], $4::text[])
                                    AS d (name, ordinal, content)
                     WHERE n.workspace_id = $1 AND n.name = d.name AND o.node_id = n.id
                       AND (o.ordinal = d.ordinal OR o.content = d.content)
                     RETURNING n.name, o.ordinal",
                    &[&workspace.0, &names, &ordinals, &contents],
                )
                .await
                .map_err(db)?;
            // A node that lost its last observation keeps no aggregate vector (the indexer
            // refreshes the others' when it embeds their changed context).
            tx.execute(
                "DELETE FROM node_embeddings ne USING nodes n
                 WHERE n.workspace_id = $1 AND n.name = ANY($2) AND ne.node_id = n.id
                   AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.node_id = n.id)",
                &[&workspace.0, &names],
            )
            .await
            .map_err(db)?;
            let mut deleted: BTreeSet<(String, i64)> = rows
                .iter()
                .map(|row| (row.get("name"), row.get("ordinal")))
                .collect();
            // Ordinals deleted by their text count as asked for.
            let by_content = deleted.clone();
            Ok(deletions
                .iter()
                .map(|deletion| {
                    let mut requested: BTreeSet<i64> =
                        deletion.ordinals.iter().map(|o| o.0).collect();
                    requested.extend(
                        (by_content.iter())
                            .filter(|(name, _)| *name == deletion.entity_name)
                            .map(|(_, ordinal)| *ordinal),
                    );
                    let (gone, missing): (Vec<i64>, Vec<i64>) = requested
                        .into_iter()
                        .partition(|o| deleted.remove(&(deletion.entity_name.clone(), *o)));
                    DeletedObservations {
                        entity_name: deletion.entity_name.clone(),
                        deleted_ordinals: gone.into_iter().map(Ordinal).collect(),
                        not_found_ordinals: missing.into_iter().map(Ordinal).collect(),
                    }
                })
                .collect())
        })?;
        self.written.wrote(request.deletions.len(), &self.direct);
        Ok(deleted)
    }
}
