//! Relations: creating, deleting, renaming them, and those between two nodes.

use crate::checked::Checked;
use crate::error::Result;
use crate::limits::{self, relations_batch};
use crate::model::*;
use crate::store::*;
use crate::suggestions::{did_you_mean, explain};

/// The semantics of [`Memory::create_relations`](crate::Memory::create_relations).
pub(crate) async fn create_relations(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    relations: &[RelationSpec],
) -> Result<CreatedRelations> {
    relations_batch(relations)?;
    secrets.screen_relations(relations)?;
    let mut created = store
        .create_relations(CreateRelations {
            workspace,
            relations: Checked::new(relations),
        })
        .await?;
    created.did_you_mean = did_you_mean(store, workspace, &created.not_found).await;
    Ok(created)
}

/// The semantics of [`Memory::delete_relations`](crate::Memory::delete_relations).
pub(crate) async fn delete_relations(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    relations: &[RelationSpec],
) -> Result<DeletedRelations> {
    relations_batch(relations)?;
    store
        .delete_relations(DeleteRelations {
            workspace,
            relations,
        })
        .await
}

/// The semantics of [`Memory::rename_relation_type`](crate::Memory::rename_relation_type).
pub(crate) async fn rename_relation_type(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    relation: &RelationSpec,
    new_type: &str,
) -> Result<RelationSpec> {
    limits::name("from_entity", &relation.from_entity)?;
    limits::name("to_entity", &relation.to_entity)?;
    limits::name("old_type", &relation.relation_type)?;
    limits::name("new_type", new_type)?;
    secrets.screen_relation_type(new_type)?;
    store
        .rename_relation_type(RenameRelationType {
            workspace,
            relation,
            new_type: Checked::new(new_type),
        })
        .await
}

/// The semantics of [`Memory::get_relations_between`](crate::Memory::get_relations_between).
pub(crate) async fn get_relations_between(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    entity_a: &str,
    entity_b: &str,
) -> Result<Vec<Relation>> {
    limits::name("entity_a", entity_a)?;
    limits::name("entity_b", entity_b)?;
    let result = store
        .get_relations_between(GetRelationsBetween {
            workspace,
            entity_a,
            entity_b,
        })
        .await;
    explain(store, workspace, result).await
}
