//! Observation tools: add, replace, delete.

use std::collections::{BTreeSet, HashMap, VecDeque};

use deadpool_postgres::GenericClient;
use engram_domain::*;

use crate::error::db;

pub(crate) async fn add_observations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    additions: &[ObservationAdditions],
) -> Result<Vec<AddedObservations>> {
    let (names, contents): (Vec<&str>, Vec<&str>) = additions
        .iter()
        .flat_map(|a| {
            a.contents
                .iter()
                .map(|c| (a.entity_name.as_str(), c.as_str()))
        })
        .unzip();
    let statement = client
        .prepare_cached(include_str!("sql/add_observations.sql"))
        .await
        .map_err(db)?;
    let rows = client
        .query(&statement, &[&workspace.0, &names, &contents])
        .await
        .map_err(db)?;
    let node_ids = node_ids(client, workspace, additions.iter().map(|a| &a.entity_name)).await?;
    // Per node, ordinals were handed out in request order: pop them in that order.
    let mut added: HashMap<i64, VecDeque<Observation>> = HashMap::new();
    let mut sorted: Vec<(i64, Observation)> = rows
        .iter()
        .map(|row| {
            let observation = Observation {
                ordinal: Ordinal(row.get("ordinal")),
                content: row.get("content"),
            };
            (row.get("node_id"), observation)
        })
        .collect();
    sorted.sort_by_key(|(node_id, observation)| (*node_id, observation.ordinal));
    for (node_id, observation) in sorted {
        added.entry(node_id).or_default().push_back(observation);
    }
    Ok(additions
        .iter()
        .map(|addition| {
            let queue = node_ids
                .get(&addition.entity_name)
                .and_then(|id| added.get_mut(id));
            match queue {
                Some(queue) => AddedObservations {
                    entity_name: addition.entity_name.clone(),
                    added: queue.drain(..addition.contents.len()).collect(),
                    not_found: false,
                },
                None => AddedObservations {
                    entity_name: addition.entity_name.clone(),
                    added: Vec::new(),
                    not_found: true,
                },
            }
        })
        .collect())
}

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

pub(crate) async fn replace_observation(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    entity_name: &str,
    ordinal: i64,
    new_content: &str,
) -> Result<ReplacedObservation> {
    let row = client
        .query_opt(
            "WITH old AS (
                 SELECT o.id, o.content FROM observations o
                 JOIN nodes n ON n.id = o.node_id
                 WHERE n.workspace_id = $1 AND n.name = $2 AND o.ordinal = $3
                 FOR UPDATE OF o
             )
             UPDATE observations SET content = $4, updated_at = now()
             FROM old WHERE observations.id = old.id
             RETURNING old.content AS old_content",
            &[&workspace.0, &entity_name, &ordinal, &new_content],
        )
        .await
        .map_err(db)?;
    let Some(row) = row else {
        let exists = client
            .query_opt(
                "SELECT 1 FROM nodes WHERE workspace_id = $1 AND name = $2",
                &[&workspace.0, &entity_name],
            )
            .await
            .map_err(db)?
            .is_some();
        return Err(if exists {
            Error::NotFound {
                kind: "observation",
                name: format!("{entity_name}#{ordinal}"),
            }
        } else {
            Error::node_not_found(entity_name)
        });
    };
    Ok(ReplacedObservation {
        entity_name: entity_name.to_owned(),
        ordinal: Ordinal(ordinal),
        old_content: row.get("old_content"),
        new_content: new_content.to_owned(),
    })
}

pub(crate) async fn delete_observations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    deletions: &[ObservationDeletions],
) -> Result<Vec<DeletedObservations>> {
    // One statement for the batch: a row per ordinal (content NULL) and per text (ordinal
    // NULL); an observation goes when it matches either.
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
    let rows = client
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
    let mut deleted: BTreeSet<(String, i64)> = rows
        .iter()
        .map(|row| (row.get("name"), row.get("ordinal")))
        .collect();
    // Ordinals deleted by their text count as asked for.
    let by_content = deleted.clone();
    Ok(deletions
        .iter()
        .map(|deletion| {
            let mut requested: BTreeSet<i64> = deletion.ordinals.iter().map(|o| o.0).collect();
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
}
