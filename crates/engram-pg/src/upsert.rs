//! `create_entities` with `if_exists: "merge"`: what the call gives for a node that exists is
//! added to it, in the same transaction.

use std::collections::HashMap;

use deadpool_postgres::GenericClient;
use engram_domain::*;

use crate::error::db;

/// For each of `created` that existed already (named by its own name, also when asked by an
/// alias), the entity's observations appended (texts it holds as current facts skipped and
/// reported), its tags added after the node's own, and its summary set when given.
/// [`Error::InvalidArgument`] naming `entities[i].tags` when the node would pass 64 tags.
pub(crate) async fn merge_into_existing(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    entities: &[NewNode],
    created: &mut [CreatedNode],
) -> Result<()> {
    let existing: Vec<(usize, &NewNode)> = (entities.iter().enumerate())
        .filter(|(i, _)| created[*i].already_existed)
        .collect();
    if existing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = existing
        .iter()
        .map(|(i, _)| created[*i].name.as_str())
        .collect();
    // Locked in id order with their tags, as add_observations locks, so concurrent writers
    // queue.
    let nodes: HashMap<String, (i64, Vec<String>)> = client
        .query(
            "SELECT id, name, tags FROM nodes WHERE workspace_id = $1 AND name = ANY($2)
             ORDER BY id FOR UPDATE",
            &[&workspace.0, &names],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|row| (row.get(1), (row.get(0), row.get(2))))
        .collect();
    let (mut node_names, mut contents, mut valid_from, mut expires_at) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, entity) in &existing {
        for fact in &entity.observations {
            node_names.push(created[*i].name.as_str());
            contents.push(fact.content.as_str());
            valid_from.push(fact.valid_from);
            expires_at.push(fact.expires_at);
        }
    }
    let statement = client
        .prepare_cached(include_str!("sql/add_observations.sql"))
        .await
        .map_err(db)?;
    let rows = client
        .query(
            &statement,
            &[
                &workspace.0,
                &node_names,
                &contents,
                &valid_from,
                &expires_at,
            ],
        )
        .await
        .map_err(db)?;
    let mut stored: HashMap<i64, Vec<(bool, Observation)>> = HashMap::new();
    for row in &rows {
        let observation =
            Observation::new(Ordinal(row.get("ordinal")), row.get::<_, String>("content"));
        (stored.entry(row.get("node_id")).or_default()).push((row.get("duplicate"), observation));
    }
    for (i, entity) in &existing {
        let Some((id, had)) = nodes.get(&created[*i].name) else {
            // Merged into another node or deleted after this call found it: the whole call
            // runs again (`write!`), and then finds the node its name now stands for (the
            // merge's target, by alias) or creates it anew; never an answer of facts kept
            // nowhere.
            return Err(Error::Contended(format!(
                "node {} was merged or deleted while this call ran",
                created[*i].name
            )));
        };
        let id = *id;
        let tags = limits::united_tags(&format!("entities[{i}].tags"), had, &entity.tags)?;
        if tags.len() > had.len() {
            client
                .execute("UPDATE nodes SET tags = $2 WHERE id = $1", &[&id, &tags])
                .await
                .map_err(db)?;
        }
        if let Some(summary) = &entity.summary {
            client
                .execute(
                    "UPDATE nodes SET summary = $2, summary_updated_at = now()
                     WHERE id = $1 AND summary IS DISTINCT FROM $2",
                    &[&id, summary],
                )
                .await
                .map_err(db)?;
        }
        let mut rows = stored.remove(&id).unwrap_or_default();
        rows.sort_by_key(|(_, o)| o.ordinal);
        let row = &mut created[*i];
        for (duplicate, observation) in rows {
            match duplicate {
                true => row.skipped_duplicates.push(observation),
                false => row.added.push(observation),
            }
        }
    }
    Ok(())
}
