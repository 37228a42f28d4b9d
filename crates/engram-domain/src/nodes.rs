//! Nodes: creating, deleting, opening and browsing them, their summaries and tags.

use std::collections::HashMap;

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits::{self, batch_total, first_duplicate, names_batch};
use crate::model::*;
use crate::store::*;
use crate::suggestions::{did_you_mean, explain};

/// The semantics of [`Memory::create_entities`](crate::Memory::create_entities).
pub(crate) async fn create_entities(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    mut entities: Vec<NewNode>,
) -> Result<Vec<CreatedNode>> {
    limits::batch("entities", &entities)?;
    let mut observation_total = 0;
    for (i, entity) in entities.iter_mut().enumerate() {
        let field = format!("entities[{i}]");
        limits::name(&format!("{field}.name"), &entity.name)?;
        limits::name(&format!("{field}.entity_type"), &entity.entity_type)?;
        if let Some(summary) = &entity.summary {
            limits::content(&format!("{field}.summary"), summary)?;
        }
        entity.tags = limits::tags(&format!("{field}.tags"), &entity.tags)?;
        for (j, observation) in entity.observations.iter().enumerate() {
            limits::content(&format!("{field}.observations[{j}]"), observation)?;
        }
        observation_total += entity.observations.len();
    }
    batch_total("entities[].observations", observation_total)?;
    secrets.screen_nodes(&mut entities)?;
    if let Some((first, second)) = first_duplicate(entities.iter().map(|e| &e.name)) {
        return Err(Error::invalid(
            format!("entities[{second}].name"),
            format!("repeats entities[{first}].name within one call"),
        ));
    }
    // A text given twice for one node is stored once, at its first place.
    let repeated: Vec<Vec<Observation>> = (entities.iter_mut())
        .map(|entity| {
            let (kept, repeated) = once_each(std::mem::take(&mut entity.observations));
            entity.observations = kept;
            repeated
                .into_iter()
                .map(|(kept_at, content)| Observation {
                    ordinal: Ordinal(kept_at as i64 + 1),
                    content,
                })
                .collect()
        })
        .collect();
    let mut created = store
        .create_entities(CreateEntities {
            workspace,
            entities: Checked::new(&entities),
        })
        .await?;
    for (row, repeated) in created.iter_mut().zip(repeated) {
        if !row.already_existed {
            row.skipped_duplicates = repeated;
        }
    }
    Ok(created)
}

/// The semantics of [`Memory::delete_entities`](crate::Memory::delete_entities).
pub(crate) async fn delete_entities(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    names: &[String],
) -> Result<DeletedNodes> {
    names_batch("entity_names", names)?;
    let mut deleted = (store.delete_entities(DeleteEntities { workspace, names })).await?;
    deleted.did_you_mean = did_you_mean(store, workspace, &deleted.not_found).await;
    Ok(deleted)
}

/// The semantics of [`Memory::open_nodes`](crate::Memory::open_nodes).
pub(crate) async fn open_nodes(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    names: &[String],
) -> Result<OpenedNodes> {
    names_batch("names", names)?;
    let mut opened = store.open_nodes(OpenNodes { workspace, names }).await?;
    opened.did_you_mean = did_you_mean(store, workspace, &opened.not_found).await;
    Ok(opened)
}

/// The semantics of [`Memory::get_nodes_by_type`](crate::Memory::get_nodes_by_type).
pub(crate) async fn get_nodes_by_type(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    entity_type: &str,
) -> Result<Vec<TypedNode>> {
    limits::name("entity_type", entity_type)?;
    store
        .get_nodes_by_type(GetNodesByType {
            workspace,
            entity_type,
        })
        .await
}

/// The semantics of [`Memory::get_recently_modified`](crate::Memory::get_recently_modified).
pub(crate) async fn get_recently_modified(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    days: u32,
    limit: u32,
) -> Result<Vec<NodeBrief>> {
    limits::within("days", days, limits::DAYS)?;
    limits::within("limit", limit, limits::LIMIT)?;
    store
        .get_recently_modified(GetRecentlyModified {
            workspace,
            days,
            limit,
        })
        .await
}

/// The semantics of [`Memory::set_summary`](crate::Memory::set_summary).
pub(crate) async fn set_summary(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    name: &str,
    summary: &str,
) -> Result<SummaryUpdate> {
    limits::name("name", name)?;
    limits::content("summary", summary)?;
    let summary = secrets.screen("summary", summary)?;
    let result = store
        .set_summary(SetSummary {
            workspace,
            name,
            summary: Checked::new(&summary),
        })
        .await;
    explain(store, workspace, result).await
}

/// The semantics of [`Memory::set_tags`](crate::Memory::set_tags).
pub(crate) async fn set_tags(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    name: &str,
    tags: &[String],
) -> Result<TagsUpdate> {
    limits::name("name", name)?;
    let mut tags = limits::tags("tags", tags)?;
    secrets.screen_tags("tags", &mut tags)?;
    let result = store
        .set_tags(SetTags {
            workspace,
            name,
            tags: Checked::new(&tags),
        })
        .await;
    explain(store, workspace, result).await
}

/// `texts` with each text once, at its first place, and the repeats left out: each with the
/// index its first occurrence keeps.
fn once_each(texts: Vec<String>) -> (Vec<String>, Vec<(usize, String)>) {
    use std::collections::hash_map::Entry;
    // Per text, `None` when it is kept, else the kept index of its first occurrence.
    let mut first: HashMap<&str, usize> = HashMap::new();
    let places: Vec<Option<usize>> = (texts.iter())
        .map(|text| {
            let next = first.len();
            match first.entry(text.as_str()) {
                Entry::Occupied(at) => Some(*at.get()),
                Entry::Vacant(slot) => {
                    slot.insert(next);
                    None
                }
            }
        })
        .collect();
    let (mut kept, mut repeated) = (Vec::with_capacity(texts.len()), Vec::new());
    for (text, place) in texts.into_iter().zip(places) {
        match place {
            Some(at) => repeated.push((at, text)),
            None => kept.push(text),
        }
    }
    (kept, repeated)
}
