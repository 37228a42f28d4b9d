//! Observations: adding, replacing and deleting a node's facts.

use std::collections::{HashMap, HashSet};

use crate::checked::Checked;
use crate::error::Result;
use crate::limits::{self, batch_total};
use crate::model::*;
use crate::store::*;
use crate::suggestions::{did_you_mean, explain};

/// The semantics of [`Memory::add_observations`](crate::Memory::add_observations): the
/// additions stored, and the names close to each node that was not found.
pub(crate) async fn add_observations(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    additions: &[ObservationAdditions],
) -> Result<Vec<AddedObservations>> {
    let mut results = store_additions(store, secrets, workspace, additions).await?;
    let missing: Vec<String> = (results.iter())
        .filter(|result| result.not_found)
        .map(|result| result.entity_name.clone())
        .collect();
    let close = did_you_mean(store, workspace, &missing).await;
    for result in results.iter_mut().filter(|result| result.not_found) {
        result.did_you_mean = close.get(&result.entity_name).cloned().unwrap_or_default();
    }
    Ok(results)
}

/// `add_observations` without the suggestions: validated, screened, each text once.
async fn store_additions(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    additions: &[ObservationAdditions],
) -> Result<Vec<AddedObservations>> {
    limits::batch("observations", additions)?;
    let mut total = 0;
    for (i, addition) in additions.iter().enumerate() {
        limits::name(
            &format!("observations[{i}].entity_name"),
            &addition.entity_name,
        )?;
        limits::batch(&format!("observations[{i}].contents"), &addition.contents)?;
        for (j, content) in addition.contents.iter().enumerate() {
            limits::content(&format!("observations[{i}].contents[{j}]"), content)?;
        }
        total += addition.contents.len();
    }
    batch_total("observations[].contents", total)?;
    let screened = secrets.screen_additions(additions)?;
    let additions = screened.as_deref().unwrap_or(additions);
    // A text given twice for one node (in one entry or two) is stored once; the store
    // skips the texts the node already holds. Repeats are rare: the call is copied
    // without them only when it has some.
    let mut given: HashMap<&str, HashSet<&str>> = HashMap::new();
    let kept: Vec<Vec<bool>> = (additions.iter())
        .map(|addition| {
            let seen = given.entry(addition.entity_name.as_str()).or_default();
            (addition.contents.iter())
                .map(|content| seen.insert(content.as_str()))
                .collect()
        })
        .collect();
    if kept.iter().flatten().all(|first| *first) {
        return store
            .add_observations(AddObservations {
                workspace,
                additions: Checked::new(additions),
            })
            .await;
    }
    let once: Vec<ObservationAdditions> = (additions.iter().zip(&kept))
        .map(|(addition, kept)| ObservationAdditions {
            entity_name: addition.entity_name.clone(),
            contents: (addition.contents.iter().zip(kept))
                .filter(|(_, kept)| **kept)
                .map(|(content, _)| content.clone())
                .collect(),
        })
        .collect();
    let mut results = store
        .add_observations(AddObservations {
            workspace,
            additions: Checked::new(&once),
        })
        .await?;
    // Every skipped text in request order, with the ordinal that holds it.
    let placed: HashMap<(String, String), Ordinal> = (results.iter())
        .flat_map(|r| {
            (r.added.iter().chain(&r.skipped_duplicates))
                .map(|o| ((r.entity_name.clone(), o.content.clone()), o.ordinal))
        })
        .collect();
    let mut stored: HashSet<(&str, &str)> = HashSet::new();
    for (result, addition) in results.iter_mut().zip(additions) {
        if result.not_found {
            continue;
        }
        let name = addition.entity_name.as_str();
        let added: HashSet<&str> = result.added.iter().map(|o| o.content.as_str()).collect();
        let mut skipped = Vec::new();
        for content in &addition.contents {
            if added.contains(content.as_str()) && stored.insert((name, content)) {
                continue;
            }
            if let Some(&ordinal) = placed.get(&(name.to_owned(), content.clone())) {
                skipped.push(Observation {
                    ordinal,
                    content: content.clone(),
                });
            }
        }
        result.skipped_duplicates = skipped;
    }
    Ok(results)
}

/// The semantics of [`Memory::replace_observation`](crate::Memory::replace_observation).
pub(crate) async fn replace_observation(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    entity_name: &str,
    ordinal: Ordinal,
    new_content: &str,
) -> Result<ReplacedObservation> {
    limits::name("entity_name", entity_name)?;
    limits::ordinal("ordinal", ordinal)?;
    limits::content("new_content", new_content)?;
    let new_content = secrets.screen("new_content", new_content)?;
    let result = store
        .replace_observation(ReplaceObservation {
            workspace,
            entity_name,
            ordinal,
            new_content: Checked::new(&new_content),
        })
        .await;
    explain(store, workspace, result).await
}

/// The semantics of [`Memory::delete_observations`](crate::Memory::delete_observations).
pub(crate) async fn delete_observations(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    deletions: &[ObservationDeletions],
) -> Result<Vec<DeletedObservations>> {
    limits::batch("deletions", deletions)?;
    let mut total = 0;
    for (i, deletion) in deletions.iter().enumerate() {
        limits::name(
            &format!("deletions[{i}].entity_name"),
            &deletion.entity_name,
        )?;
        if deletion.contents.is_empty() {
            limits::batch(&format!("deletions[{i}].ordinals"), &deletion.ordinals)?;
        }
        for (j, ordinal) in deletion.ordinals.iter().enumerate() {
            limits::ordinal(&format!("deletions[{i}].ordinals[{j}]"), *ordinal)?;
        }
        for (j, content) in deletion.contents.iter().enumerate() {
            limits::content(&format!("deletions[{i}].observations[{j}]"), content)?;
        }
        total += deletion.ordinals.len() + deletion.contents.len();
    }
    batch_total("deletions[].ordinals", total)?;
    store
        .delete_observations(DeleteObservations {
            workspace,
            deletions,
        })
        .await
}
